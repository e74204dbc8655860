"""The robot message's fast path: an ``EgmRobot`` datagram read straight from its bytes.

The EGM sensor reads one robot message every 4 ms and the robot waits for its answer. Read
through protobuf's Python API, a message costs about 40 field accesses, each making a Python
object, and as much again to check and convert the values: measured, the largest share of the
sensor's time in a cycle. This module reads the wire format itself, compiled (Cython's
pure-Python mode; plugins/abb/setup.py builds it where a C compiler is present), and checks
and converts the values as :class:`robohal_abb.wire.RobotDecoder` does.

It answers only for what it fully understands: the fields of ``egm.proto``'s ``EgmRobot``
(in any order; repeated doubles packed or not), each non-repeated field at most once, every
enum value a known one, varints of at most 8 bytes, every value in range. For anything else
(an unknown field, a field twice, which protobuf would merge, a message bad in any way) it
returns None, and the caller reads the datagram with protobuf, which then says exactly what
is wrong. So both read a datagram to the same values, bit for bit, or this one declines;
``tests/abb/test_egm_decode.py`` holds the two against each other on generated and mutated
datagrams, in both forms of this module.
"""

from __future__ import annotations

import math
import struct

try:
    import cython
except ModuleNotFoundError:  # Cython is not installed: run as plain Python
    from robohal.kinematics._cython_stub import cython

#: whether this module runs compiled (the wire module takes this path only then)
COMPILED = cython.compiled

DEGREE = math.pi / 180.0
MAX_DATAGRAM = 4096
MAX_JOINT_DEG = 1e5
QUATERNION_TOLERANCE = 1e-3

_VARINT, _FIXED64, _LEN = 0, 1, 2  # protobuf's wire types
_NO = 0xFFFFFFFFFFFFFFFF  # a varint declined (longer than 8 bytes, or cut off)
_LONGEST = 56  # bits in 8 varint bytes
_U32 = 0xFFFFFFFF
_EXACT = 1 << 53  # the integers a double holds exactly
#: beyond this a value declines: no sum of a message's values can then overflow, so "finite"
#: means the same to both readers whatever order protobuf's side adds them in
_BOUND = 1e15
_MOTOR_CODES, _MCI_CODES, _RAPID_CODES = 3, 4, 3  # each state enum's values: 0 .. n - 1
_DROP = -1  # where a checked value is not kept

_unpack_double = struct.Struct("<d").unpack_from


@cython.cclass
class _Reader:
    """One datagram, read from ``pos`` on. Each reading method reads one message that ends at
    ``end`` and returns False (or -1) to decline."""

    def __init__(self, datagram: bytes) -> None:
        self.datagram = datagram
        self.buf = datagram  # compiled: the bytes' own memory (the .pxd types it)
        self.pos = 0
        self.q = [[], []]  # feedBack's joints, planned's
        self.force = None
        self.rapid = None
        if not cython.compiled:  # compiled, C arrays (zeroed)
            self.pose = [0.0] * 14  # feedBack's x y z u0 u1 u2 u3, then planned's
            self.clock = [0, 0]  # feedBack's sec, usec
        self.value = 0.0
        self.seqno = self.tm = self.mtype = -1
        self.motor = self.mci = self.rapid_state = self.converged = -1
        self.utilization = 0.0
        self.has_utilization = False

    @cython.cfunc
    def varint(self, end: cython.Py_ssize_t) -> cython.ulonglong:
        """The varint at pos (pos moves past it), or _NO."""
        value: cython.ulonglong = 0
        shift: cython.int = 0
        byte: cython.ulonglong
        pos: cython.Py_ssize_t = self.pos
        while pos < end and shift < _LONGEST:
            byte = self.buf[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                self.pos = pos
                return value
            shift += 7
        return _NO

    @cython.cfunc
    def double(self, end: cython.Py_ssize_t) -> cython.bint:
        """The fixed64 double at pos into ``value``."""
        pos: cython.Py_ssize_t = self.pos
        if pos + 8 > end:
            return False
        self.pos = pos + 8
        if cython.compiled:
            bits: cython.ulonglong = 0
            k: cython.int
            for k in range(7, -1, -1):
                bits = (bits << 8) | self.buf[pos + k]
            memcpy(cython.address(self.value), cython.address(bits), 8)  # noqa: F821 (libc, cimported in the .pxd)
        else:
            self.value = _unpack_double(self.buf, pos)[0]
        return True

    @cython.cfunc
    def length(self, end: cython.Py_ssize_t) -> cython.Py_ssize_t:
        """A length-delimited field's end (pos moves to its start), or -1."""
        n: cython.ulonglong = self.varint(end)
        if n == _NO or n > end - self.pos:
            return -1
        return self.pos + n

    @cython.cfunc
    def tag(self, end: cython.Py_ssize_t) -> cython.int:
        """The next field's tag (number << 3 | wire type) for field numbers 1..15, or -1."""
        tag: cython.ulonglong = self.varint(end)
        if tag == _NO or tag >= 128 or tag < 8:
            return -1
        return tag

    @cython.cfunc
    def field(self, end: cython.Py_ssize_t, wire: cython.int, highest: cython.int, seen: cython.int) -> cython.int:
        """The next field's tag if its wire type is ``wire`` (-1: any), its number at most
        ``highest`` and not yet among ``seen`` (a bit per field number), else -1."""
        tag: cython.int = self.tag(end)
        if tag < 0 or (wire >= 0 and tag & 7 != wire) or tag >> 3 > highest or seen & (1 << (tag >> 3)):
            return -1
        return tag

    @cython.cfunc
    def doubles(self, end: cython.Py_ssize_t, wire: cython.int, out: list) -> cython.bint:
        """One occurrence of a repeated double (one value, or packed) appended to ``out``."""
        stop: cython.Py_ssize_t
        if wire == _FIXED64:
            if not self.double(end):
                return False
            out.append(self.value)
            return True
        if wire != _LEN:
            return False
        stop = self.length(end)
        if stop < 0 or (stop - self.pos) % 8:
            return False
        while self.pos < stop:
            self.double(stop)
            out.append(self.value)
        return True

    @cython.cfunc
    def doubles_only(self, end: cython.Py_ssize_t, out: list) -> cython.bint:
        """A message whose one field (1) is a repeated double (EgmJoints, EgmTestSignals)."""
        tag: cython.int
        while self.pos < end:
            tag = self.tag(end)
            if tag >> 3 != 1 or not self.doubles(end, tag & 7, out):
                return False
        return self.pos == end

    @cython.cfunc
    def flag_and_doubles(self, end: cython.Py_ssize_t, out: list) -> cython.bint:
        """A message of an optional bool (field 1) and a repeated double (field 2)."""
        tag: cython.int
        seen: cython.bint = False
        while self.pos < end:
            tag = self.tag(end)
            if tag == (1 << 3 | _VARINT):
                if seen or self.varint(end) == _NO:
                    return False
                seen = True
            elif tag >> 3 != 2 or not self.doubles(end, tag & 7, out):
                return False
        return self.pos == end

    @cython.cfunc
    def fixed_doubles(self, end: cython.Py_ssize_t, count: cython.int, at: cython.int) -> cython.bint:
        """A message of ``count`` required doubles, fields 1..count (EgmCartesian,
        EgmQuaternion, EgmEuler), into pose[at:at + count] (at _DROP: checked only)."""
        seen: cython.int = 0
        tag: cython.int
        while self.pos < end:
            tag = self.field(end, _FIXED64, count, seen)
            if tag < 0 or not self.double(end):
                return False
            seen |= 1 << (tag >> 3)
            if at != _DROP:
                self.pose[at + (tag >> 3) - 1] = self.value
        return self.pos == end and seen == (1 << (count + 1)) - 2

    @cython.cfunc
    def clock_of(self, end: cython.Py_ssize_t, required: cython.bint, keep: cython.bint) -> cython.bint:
        """An EgmClock (sec, usec: required) or EgmTimestamp (sec, nsec): two varints, kept in
        ``clock`` if ``keep``."""
        seen: cython.int = 0
        tag: cython.int
        value: cython.ulonglong
        while self.pos < end:
            tag = self.field(end, _VARINT, 2, seen)
            if tag < 0:
                return False
            seen |= 1 << (tag >> 3)
            value = self.varint(end)
            if value == _NO:
                return False
            if keep:
                self.clock[(tag >> 3) - 1] = value
        return self.pos == end and (not required or seen == 0b110)

    @cython.cfunc
    def state(self, end: cython.Py_ssize_t, codes: cython.int) -> cython.int:
        """A state message (one required enum, field 1): its code, or -1."""
        value: cython.ulonglong = _NO
        while self.pos < end:
            if value != _NO or self.tag(end) != (1 << 3 | _VARINT):
                return -1
            value = self.varint(end)
        if self.pos != end or value >= codes:
            return -1  # absent, cut off, or a value the enum does not know (protobuf: unset)
        return value

    @cython.cfunc
    def pose_of(self, end: cython.Py_ssize_t, at: cython.int) -> cython.bint:
        """An EgmPose: pos and orient (both required here) into pose[at:at + 7]."""
        seen: cython.int = 0
        tag: cython.int
        stop: cython.Py_ssize_t
        ok: cython.bint
        while self.pos < end:
            tag = self.field(end, _LEN, 3, seen)
            if tag < 0:
                return False
            seen |= 1 << (tag >> 3)
            stop = self.length(end)
            if stop < 0:
                return False
            if tag >> 3 == 1:
                ok = self.fixed_doubles(stop, 3, at)
            elif tag >> 3 == 2:
                ok = self.fixed_doubles(stop, 4, at + 3)
            else:  # euler (3): checked, unused
                ok = self.fixed_doubles(stop, 3, _DROP)
            if not ok:
                return False
        return self.pos == end and seen & 0b110 == 0b110

    @cython.cfunc
    def part(self, end: cython.Py_ssize_t, planned: cython.int) -> cython.bint:
        """An EgmFeedBack (planned 0) or EgmPlanned (1): joints, cartesian and time required."""
        seen: cython.int = 0
        tag: cython.int
        number: cython.int
        stop: cython.Py_ssize_t
        ok: cython.bint
        while self.pos < end:
            tag = self.field(end, _LEN, 5, seen)
            if tag < 0:
                return False
            number = tag >> 3
            seen |= 1 << number
            stop = self.length(end)
            if stop < 0:
                return False
            if number == 1:
                ok = self.doubles_only(stop, self.q[planned])
            elif number == 2:
                ok = self.pose_of(stop, 7 * planned)
            elif number == 3:  # externalJoints: checked, unused
                ok = self.doubles_only(stop, [])
            elif number == 4:
                ok = self.clock_of(stop, True, planned == 0)
            else:  # timeStamp (5): checked, unused
                ok = self.clock_of(stop, False, False)
            if not ok:
                return False
        return self.pos == end and seen & 0b10110 == 0b10110

    @cython.cfunc
    def header(self, end: cython.Py_ssize_t) -> cython.bint:
        seen: cython.int = 0
        tag: cython.int
        value: cython.ulonglong
        while self.pos < end:
            tag = self.field(end, _VARINT, 3, seen)
            if tag < 0:
                return False
            seen |= 1 << (tag >> 3)
            value = self.varint(end)
            if value > _U32:  # also _NO; protobuf would cut a larger uint32 to 32 bits
                return False
            if tag >> 3 == 1:
                self.seqno = value
            elif tag >> 3 == 2:
                self.tm = value
            else:
                self.mtype = value
        return self.pos == end and seen == 0b1110

    @cython.cfunc
    def robot(self, end: cython.Py_ssize_t) -> cython.bint:
        """The EgmRobot: every field of egm.proto, those the decoder requires all there."""
        seen: cython.int = 0
        tag: cython.int
        number: cython.int
        stop: cython.Py_ssize_t
        value: cython.ulonglong
        ok: cython.bint
        while self.pos < end:
            tag = self.field(end, -1, 14, seen)
            if tag < 0:
                return False
            number = tag >> 3
            seen |= 1 << number
            if number == 6 or number == 11:  # mciConvergenceMet (bool), moveIndex (uint32)
                value = self.varint(end) if tag & 7 == _VARINT else _NO
                if value == _NO or (number == 11 and value > _U32):
                    return False
                if number == 6:
                    self.converged = 1 if value else 0
                continue
            if number == 10:  # utilizationRate
                if tag & 7 != _FIXED64 or not self.double(end):
                    return False
                self.utilization = self.value
                self.has_utilization = True
                continue
            stop = self.length(end) if tag & 7 == _LEN else -1
            if stop < 0:
                return False
            if number == 1:
                ok = self.header(stop)
            elif number == 2 or number == 3:
                ok = self.part(stop, number - 2)
            elif number == 4:
                self.motor = self.state(stop, _MOTOR_CODES)
                ok = self.motor >= 0
            elif number == 5:
                self.mci = self.state(stop, _MCI_CODES)
                ok = self.mci >= 0
            elif number == 8:
                self.rapid_state = self.state(stop, _RAPID_CODES)
                ok = self.rapid_state >= 0
            elif number == 7 or number == 14:  # testSignals, torqueRef: checked, unused
                ok = self.doubles_only(stop, [])
            elif number == 9:
                self.force = []
                ok = self.flag_and_doubles(stop, self.force)
            elif number == 12:  # CollisionInfo: checked, unused
                ok = self.flag_and_doubles(stop, [])
            else:  # 13
                self.rapid = []
                ok = self.flag_and_doubles(stop, self.rapid)
            if not ok:
                return False
        # what the decoder requires: header, feedBack, planned, motorState, mciState,
        # mciConvergenceMet, rapidExecState
        return self.pos == end and seen & 0b101111110 == 0b101111110

    @cython.cfunc
    def values(self, dof: cython.Py_ssize_t):
        """The message's values checked and converted as the wire module's decoder does, or None."""
        k: cython.int
        value: cython.double
        norm: cython.double
        joints: list = self.q[0]
        planned: list = self.q[1]
        if self.mtype != 2 or len(joints) != dof or len(planned) != dof:  # MSGTYPE_DATA
            return None
        for value in joints:
            if not abs(value) <= MAX_JOINT_DEG:  # also NaN
                return None
        for value in planned:
            if not abs(value) <= MAX_JOINT_DEG:
                return None
        for k in range(14):
            if not abs(self.pose[k]) < _BOUND:
                return None
        if self.has_utilization and not abs(self.utilization) < _BOUND:
            return None
        norm = math.sqrt(self.pose[10] * self.pose[10] + self.pose[11] * self.pose[11]
                         + self.pose[12] * self.pose[12] + self.pose[13] * self.pose[13])
        if abs(norm - 1.0) > QUATERNION_TOLERANCE:
            return None
        norm = math.sqrt(self.pose[3] * self.pose[3] + self.pose[4] * self.pose[4]
                         + self.pose[5] * self.pose[5] + self.pose[6] * self.pose[6])
        if abs(norm - 1.0) > QUATERNION_TOLERANCE:
            return None
        force = self.force
        if force is not None:
            if len(force) != 6:
                force = None
            elif not _bounded(force):
                return None
        if self.rapid is not None and not _bounded(self.rapid):
            return None
        if self.clock[0] >= _EXACT or self.clock[1] >= _EXACT:
            return None
        sec: cython.double = self.clock[0]
        usec: cython.double = self.clock[1]
        return (
            self.seqno, self.tm, sec + usec * 1e-6, [v * DEGREE for v in joints], [v * DEGREE for v in planned],
            [self.pose[0] * 0.001, self.pose[1] * 0.001, self.pose[2] * 0.001],
            [self.pose[3] / norm, self.pose[4] / norm, self.pose[5] / norm, self.pose[6] / norm],
            self.motor, self.mci, self.rapid_state, self.converged == 1,
            self.utilization if self.has_utilization else None, force, self.rapid,
        )


@cython.cfunc
def _bounded(values: list) -> cython.bint:
    value: cython.double
    for value in values:
        if not abs(value) < _BOUND:
            return False
    return True


def decode(datagram, dof: cython.Py_ssize_t):
    """The values a :class:`~robohal_abb.wire.RobotMessage` is made of, read from ``datagram``
    and checked as the wire module's decoder checks them, or None to decline (see the module
    docstring): (seqno, tm, time, q, q_planned, position, quaternion, motor code, MCI code,
    RAPID code, converged, utilization, force, RAPID data)."""
    if type(datagram) is not bytes or not 0 < len(datagram) <= MAX_DATAGRAM:
        return None
    reader: _Reader = _Reader(datagram)
    if not reader.robot(len(datagram)):
        return None
    return reader.values(dof)
