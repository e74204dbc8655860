"""The robot message's fast path (robohal_abb._egm_decode) against protobuf's reading of the
same bytes: on every datagram, generated or mangled, it gives the wire decoder's values bit
for bit or declines (None). Both forms of the module run: the compiled one where it is built,
and its source run by the interpreter."""

from __future__ import annotations

import importlib.util
import math
import os
import struct
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from robohal_abb import _egm_decode, wire
from robohal_abb import egm_pb2 as pb


def _source_form():
    spec = importlib.util.spec_from_file_location("robohal_abb._egm_decode_source", _egm_decode.__file__.split(".")[0] + ".py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert not module.COMPILED
    return module


FORMS = {"source": _source_form()}
if _egm_decode.COMPILED:
    FORMS["compiled"] = _egm_decode


def test_the_fast_path_is_compiled_where_robohal_abb_is_built() -> None:
    """The build compiles it (a C compiler is there wherever the kinematics kernels build);
    left interpreted it would be skipped, every message read the slow way, unnoticed."""
    from robohal.kinematics import kernels

    if not kernels.COMPILED or os.environ.get("ROBOHAL_PURE_PYTHON"):
        pytest.skip("no compiled build here")
    assert _egm_decode.COMPILED
    assert wire._fast_decode is _egm_decode.decode


def reference(datagram: bytes, dof: int = 6):
    """protobuf's reading (the wire decoder with the fast path out of the way)."""
    saved, wire._fast_decode = wire._fast_decode, None
    try:
        return wire.RobotDecoder(dof).decode(datagram)
    except wire.BadMessage:
        return None
    finally:
        wire._fast_decode = saved


def _bits(value):
    if isinstance(value, float):
        return struct.pack("<d", value)
    if isinstance(value, list):
        return [_bits(v) for v in value]
    return value


def assert_agrees(datagram: bytes, dof: int = 6, must_read: bool = False) -> None:
    expected = reference(datagram, dof)
    for name, form in FORMS.items():
        values = form.decode(datagram, dof)
        if values is None:
            assert not must_read, f"{name} declined a well-formed message"
            continue
        assert expected is not None, f"{name} read a datagram protobuf's decoder refuses"
        (seqno, tm, t, q, q_planned, position, quaternion, motor, mci, rapid_state, converged, utilization, force,
         rapid) = values
        got = wire.RobotMessage(seqno, tm, t, q, q_planned, position, quaternion, wire.MOTOR_STATES[motor],
                                wire.MCI_STATES[mci], wire.RAPID_STATES[rapid_state], converged, utilization, force, rapid)
        for field in vars(expected):
            assert _bits(getattr(got, field)) == _bits(getattr(expected, field)), f"{name}: {field}"


def robot_datagram(**overrides) -> bytes:
    q = np.radians([10, 20, -10, 5, 30, 40.0])
    pose = np.eye(4)
    pose[:3, 3] = [0.5, 0.1, 0.8]
    values = dict(seqno=5, tm=20, time=time.time(), q=q, q_planned=q, pose=pose, pose_planned=pose)
    values.update(overrides)
    return wire.encode_robot(**values)


@pytest.mark.parametrize("extra", [{}, {"force": [1.0, 2, 3, 4, 5, 6]}, {"rapid": [0.0, 1.0, 2.5]},
                                   {"motor_state": "off", "rapid_state": "stopped", "mci_state": "error"},
                                   {"converged": True, "utilization": 37.5}])
def test_the_simulators_messages_take_the_fast_path(extra) -> None:
    assert_agrees(robot_datagram(**extra), must_read=True)


def test_a_robotware_6_message_takes_the_fast_path() -> None:
    """RobotWare 6 sends no timeStamp, and C++ protobuf writes each joint as a field of its own."""
    message = pb.EgmRobot()
    message.ParseFromString(robot_datagram())
    message.feedBack.ClearField("timeStamp")
    message.planned.ClearField("timeStamp")
    message.testSignals.signals.extend([0.0] * 6)
    message.moveIndex = 3
    assert_agrees(message.SerializeToString(), must_read=True)


def _packed_class():
    """EgmRobot whose repeated doubles are written packed (a sender may do either)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    schema = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(schema)
    for message in schema.message_type:
        for field in message.field:
            if field.label == descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED:
                field.options.packed = True
    pool = descriptor_pool.DescriptorPool()
    pool.Add(schema)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{schema.package}.EgmRobot"))


PackedRobot = _packed_class()


def test_packed_joints_read_the_same() -> None:
    packed = PackedRobot()
    packed.ParseFromString(robot_datagram(force=[1.0, 2, 3, 4, 5, 6], rapid=[1.0]))
    datagram = packed.SerializeToString()
    assert datagram != robot_datagram(force=[1.0, 2, 3, 4, 5, 6], rapid=[1.0])
    assert_agrees(datagram, must_read=True)


def _fields(datagram: bytes) -> list[bytes]:
    """The top-level fields of a message, each as its bytes (tag, length, body)."""
    out, pos = [], 0
    while pos < len(datagram):
        start = pos
        tag, pos = _varint(datagram, pos)
        wire_type = tag & 7
        if wire_type == 0:
            _, pos = _varint(datagram, pos)
        elif wire_type == 1:
            pos += 8
        elif wire_type == 2:
            n, pos = _varint(datagram, pos)
            pos += n
        else:
            pos += 4
        out.append(datagram[start:pos])
    return out


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def test_fields_in_any_order_read_the_same() -> None:
    fields = _fields(robot_datagram(force=[1.0, 2, 3, 4, 5, 6]))
    assert_agrees(b"".join(reversed(fields)), must_read=True)


def test_a_field_twice_is_left_to_protobuf() -> None:
    """protobuf merges a repeated message field (the joints of both copies); the fast path declines."""
    fields = _fields(robot_datagram())
    feedback = next(f for f in fields if f[0] == (2 << 3 | 2))
    for form in FORMS.values():
        assert form.decode(b"".join(fields) + feedback, 6) is None
    assert reference(b"".join(fields) + feedback) is None  # 12 joints


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
anything = st.floats(width=64)


@st.composite
def robot_messages(draw) -> bytes:
    message = pb.EgmRobot()
    m = message
    weird = draw(st.integers(0, 3)) == 3  # one in four with values anywhere, NaN and inf too
    real = (lambda low, high: anything) if weird else (lambda low, high: st.floats(low, high))
    if draw(st.integers(0, 9)) < 9:
        m.header.seqno = draw(st.integers(0, 2**32 - 1))
    if draw(st.integers(0, 9)) < 9:
        m.header.tm = draw(st.integers(0, 2**32 - 1))
    if draw(st.integers(0, 9)) < 9:
        m.header.mtype = draw(st.sampled_from([2, 0, 1, 3]))
    for part in (m.feedBack, m.planned):
        if draw(st.integers(0, 9)) == 9:
            continue
        count = draw(st.sampled_from([6, 5, 7, 0]))
        part.joints.joints.extend(draw(st.lists(real(-400, 400), min_size=count, max_size=count)))
        if draw(st.integers(0, 9)) < 9:
            pos = part.cartesian.pos
            pos.x, pos.y, pos.z = (draw(real(-3000, 3000)) for _ in range(3))
            w, x, y, z = (draw(st.floats(-1, 1)) for _ in range(4))
            norm = math.sqrt(w * w + x * x + y * y + z * z) or 1.0
            if draw(st.integers(0, 9)) < 9:
                w, x, y, z = w / norm, x / norm, y / norm, z / norm
            if norm == 1.0 and (w, x, y, z) == (0.0, 0.0, 0.0, 0.0):
                w = 1.0
            orient = part.cartesian.orient
            orient.u0, orient.u1, orient.u2, orient.u3 = w, x, y, z
            if draw(st.integers(0, 5)) == 5:
                part.cartesian.euler.x = draw(finite)
                part.cartesian.euler.y = draw(finite)
                part.cartesian.euler.z = draw(finite)
        if draw(st.integers(0, 9)) < 9:
            part.time.sec = draw(st.integers(0, 2**64 - 1) if weird else st.integers(0, 2**34))
            part.time.usec = draw(st.integers(0, 999_999))
        if draw(st.booleans()):
            part.timeStamp.sec = draw(st.integers(0, 2**40))
        if draw(st.integers(0, 5)) == 5:
            part.externalJoints.joints.extend(draw(st.lists(finite, max_size=3)))
    for state, codes in ((m.motorState, 3), (m.mciState, 4), (m.rapidExecState, 3)):
        if draw(st.integers(0, 9)) < 9:
            state.state = draw(st.integers(0, codes - 1))
    if draw(st.integers(0, 9)) < 9:
        m.mciConvergenceMet = draw(st.booleans())
    if draw(st.booleans()):
        m.utilizationRate = draw(real(0, 100))
    if draw(st.booleans()):
        m.measuredForce.fcActive = draw(st.booleans())
        count = draw(st.sampled_from([6, 0, 3, 7]))
        m.measuredForce.force.extend(draw(st.lists(real(-500, 500), min_size=count, max_size=count)))
    if draw(st.booleans()):
        m.RAPIDfromRobot.dnum.extend(draw(st.lists(real(-1e6, 1e6), max_size=5)))
    if draw(st.integers(0, 4)) == 4:
        m.testSignals.signals.extend(draw(st.lists(finite, max_size=3)))
    if draw(st.integers(0, 4)) == 4:
        m.CollisionInfo.collsionTriggered = draw(st.booleans())
    if draw(st.integers(0, 4)) == 4:
        m.moveIndex = draw(st.integers(0, 2**32 - 1))
    datagram = message.SerializePartialToString()
    if draw(st.integers(0, 3)) == 3:
        fields = _fields(datagram)
        datagram = b"".join(draw(st.permutations(fields)))
    return datagram


@st.composite
def valid_messages(draw) -> bytes:
    """Messages as a controller sends them, values and optional fields drawn: all well-formed."""
    joints = st.lists(st.floats(-3.0, 3.0), min_size=6, max_size=6).map(np.array)
    quaternion = st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(lambda v: sum(x * x for x in v) > 0.01)

    def pose():
        w, x, y, z = draw(quaternion)
        norm = math.sqrt(w * w + x * x + y * y + z * z)
        matrix = np.eye(4)
        w, x, y, z = w / norm, x / norm, y / norm, z / norm
        matrix[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                          [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                          [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
        matrix[:3, 3] = draw(st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=3))
        return matrix

    datagram = wire.encode_robot(
        seqno=draw(st.integers(0, 2**32 - 1)), tm=draw(st.integers(0, 2**32 - 1)),
        time=draw(st.floats(0, 4e9)), q=draw(joints), q_planned=draw(joints), pose=pose(), pose_planned=pose(),
        motor_state=draw(st.sampled_from(["on", "off", "undefined"])),
        mci_state=draw(st.sampled_from(["running", "stopped", "error", "undefined"])),
        rapid_state=draw(st.sampled_from(["running", "stopped", "undefined"])), converged=draw(st.booleans()),
        utilization=draw(st.floats(0, 100)),
        force=draw(st.none() | st.lists(st.floats(-500, 500), min_size=6, max_size=6)),
        rapid=draw(st.none() | st.lists(st.floats(-1e6, 1e6), max_size=8)),
    )
    if draw(st.booleans()):
        packed = PackedRobot()
        packed.ParseFromString(datagram)
        datagram = packed.SerializeToString()
    if draw(st.booleans()):
        datagram = b"".join(draw(st.permutations(_fields(datagram))))
    return datagram


FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(robot_messages())
def test_generated_messages_read_the_same(datagram: bytes) -> None:
    assert_agrees(datagram)


@FUZZ
@given(valid_messages() | robot_messages(), st.data())
def test_mangled_messages_read_the_same_or_are_declined(datagram: bytes, data) -> None:
    """Bytes flipped, cut, inserted: never a reading protobuf's decoder would not give."""
    mangled = bytearray(datagram)
    for _ in range(data.draw(st.integers(1, 4))):
        if not mangled:
            break
        at = data.draw(st.integers(0, len(mangled) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "insert", "truncate"]))
        if action == "flip":
            mangled[at] ^= 1 << data.draw(st.integers(0, 7))
        elif action == "cut":
            del mangled[at]
        elif action == "insert":
            mangled.insert(at, data.draw(st.integers(0, 255)))
        else:
            del mangled[at:]
    assert_agrees(bytes(mangled))


@given(st.binary(max_size=300))
@FUZZ
def test_arbitrary_bytes_are_never_read_wrong(datagram: bytes) -> None:
    assert_agrees(datagram)


@FUZZ
@given(valid_messages())
def test_well_formed_messages_take_the_fast_path_and_read_the_same(datagram: bytes) -> None:
    assert_agrees(datagram, must_read=True)
