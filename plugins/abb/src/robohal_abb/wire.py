"""EGM datagrams <-> Python values: the one place where units change.

On the wire EGM uses degrees (joints), millimetres (positions) and unit
quaternions u0..u3 with u0 the scalar part. In Python everything is radians,
metres and quaternions (w, x, y, z), as in :mod:`robohal.spatial`.

Decoding is strict, following what a careful EGM peer (abb_libegm, ABB's C++
library, as in the research notes) demands of a robot message before acting on it: header with seqno, tm and mtype DATA; motor, MCI
and RAPID states and the convergence flag; feedback and planned values with
exactly ``dof`` joints, a Cartesian pose and a time; every number finite. A
datagram that fails raises :class:`BadMessage` whose ``reason`` is a short
counter key, and nothing of it is used.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from numpy.typing import ArrayLike
from robohal import InvalidArgument, ProtocolError, spatial
from robohal.state import Array

from . import _egm_decode
from . import egm_pb2 as pb

DEFAULT_PORT = 6510  # the port in ABB's examples (manual)
#: bytes; our choice: a robot message measured 327 B here, a sensor message 64 B; ten times
#: that leaves room for the optional fields (forces, RAPID data) and refuses junk
MAX_DATAGRAM = 4096
#: how far from unit length a wire quaternion may be; our choice: a controller's doubles are unit
#: to about 1e-15, a peer that rounds to a few decimals stays far inside, garbage does not
QUATERNION_TOLERANCE = 1e-3
DEGREE = math.pi / 180.0
_DEGREES_PER_RADIAN = 180.0 / math.pi  # math.degrees' own factor: the same bits, without a call per joint
#: deg: no axis turns this far (even ABB's endless axes count a few hundred turns): beyond it
#: a joint value is a bad datagram, not a position to hold
MAX_JOINT_DEG = 1e5

MOTOR_STATES = {pb.EgmMotorState.MOTORS_ON: "on", pb.EgmMotorState.MOTORS_OFF: "off",
                pb.EgmMotorState.MOTORS_UNDEFINED: "undefined"}
MCI_STATES = {pb.EgmMCIState.MCI_RUNNING: "running", pb.EgmMCIState.MCI_STOPPED: "stopped",
              pb.EgmMCIState.MCI_ERROR: "error", pb.EgmMCIState.MCI_UNDEFINED: "undefined"}
RAPID_STATES = {pb.EgmRapidCtrlExecState.RAPID_RUNNING: "running", pb.EgmRapidCtrlExecState.RAPID_STOPPED: "stopped",
                pb.EgmRapidCtrlExecState.RAPID_UNDEFINED: "undefined"}
_MOTOR_CODES = {name: code for code, name in MOTOR_STATES.items()}
_MCI_CODES = {name: code for code, name in MCI_STATES.items()}
_RAPID_CODES = {name: code for code, name in RAPID_STATES.items()}


class BadMessage(ProtocolError):
    """A datagram that is not a usable EGM message; ``reason`` names why."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"bad EGM datagram: {reason}{': ' + detail if detail else ''}")
        self.reason = reason


# Units ------------------------------------------------------------------------------


def joints_to_wire(q: ArrayLike) -> list[float]:
    """Joint angles, radians -> degrees."""
    return [v * _DEGREES_PER_RADIAN for v in np.asarray(q, dtype=np.float64).tolist()]


def joints_from_wire(values: Any) -> Array:
    """Joint angles, degrees -> radians."""
    return np.array(values, dtype=np.float64) * DEGREE


def pose_to_wire(pose: ArrayLike) -> tuple[list[float], list[float]]:
    """A (4, 4) pose in metres -> (position in mm, quaternion u0..u3)."""
    xyz, quat = spatial.pose_to_xyz_quat(np.asarray(pose, dtype=np.float64))
    return (np.asarray(xyz) * 1000.0).tolist(), np.asarray(quat).tolist()


def pose_from_wire(position_mm: ArrayLike, quaternion: ArrayLike) -> Array:
    """(position in mm, quaternion u0..u3) -> a (4, 4) pose in metres."""
    return spatial.pose_from_xyz_quat(np.asarray(position_mm, dtype=np.float64) / 1000.0,
                                      np.asarray(quaternion, dtype=np.float64))


# Robot -> sensor ----------------------------------------------------------------------


@dataclass(eq=False)
class RobotMessage:
    """A validated ``EgmRobot`` in SI units (treat as read-only)."""

    seqno: int
    tm: int  # ms, the robot's clock
    time: float  # s, feedback time (EgmClock)
    q: list[float]  # measured joints, rad
    q_planned: list[float]  # the reference the controller follows, rad
    position: list[float]  # measured flange position, m
    quaternion: list[float]  # measured flange orientation (w, x, y, z)
    motor_state: str  # "on" | "off" | "undefined"
    mci_state: str  # "running" | "stopped" | "error" | "undefined"
    rapid_state: str  # "running" | "stopped" | "undefined"
    converged: bool
    utilization: float | None  # percent
    #: measuredForce: force and torque on the flange (N, Nm; 6 values) where the cell has a force
    #: sensor and reports it, else None
    force: list[float] | None = None
    #: RAPIDfromRobot.dnum: the values the RAPID program reports (robohal's template: its
    #: I/O signals, see :mod:`robohal_abb.signals`), or None when the message carries none
    rapid: list[float] | None = None

    @property
    def pose(self) -> Array:
        """The measured flange pose (4, 4), m."""
        return spatial.pose_from_xyz_quat(np.array(self.position), np.array(self.quaternion))

    @property
    def active(self) -> bool:
        """Motors on, RAPID running (or not reported) and MCI running: EGM follows targets
        (abb_libegm's "states ok")."""
        return self.motor_state == "on" and self.rapid_state != "stopped" and self.mci_state == "running"

    def faults(self) -> tuple[str, ...]:
        """Why the robot does not follow targets, as ABB-flavoured names (empty when active)."""
        names = []
        if self.motor_state != "on":
            names.append(f"motors_{self.motor_state}")
        if self.rapid_state == "stopped":
            names.append("rapid_stopped")
        if self.mci_state != "running":
            names.append(f"mci_{self.mci_state}")
        return tuple(names)


def _require(message: Any, field: str, where: str) -> Any:
    if not message.HasField(field):
        raise BadMessage("missing_field", f"{where}.{field}")
    return getattr(message, field)


def _finite(values: list[float], what: str) -> list[float]:
    # one sum instead of a test per value: NaN or inf anywhere makes it non-finite
    # (so do absurd magnitudes near 1e308, which are no better)
    if not math.isfinite(sum(values)):
        raise BadMessage("not_finite", what)
    return values


def _joints(part: Any, where: str, dof: int) -> list[float]:
    if not part.HasField("joints"):
        raise BadMessage("missing_field", f"{where}.joints")
    joints = list(part.joints.joints)
    if len(joints) != dof:
        raise BadMessage("joint_count", f"{where}.joints has {len(joints)} values, expected {dof}")
    return _finite(joints, f"{where}.joints")


def _cartesian(part: Any, where: str) -> tuple[list[float], list[float]]:
    """Position (mm) and unit quaternion of a pose that must be complete and finite."""
    if not part.HasField("cartesian"):
        raise BadMessage("missing_field", f"{where}.cartesian")
    pose = part.cartesian
    if not (pose.HasField("pos") and pose.HasField("orient")):
        raise BadMessage("missing_field", f"{where}.cartesian.pos/orient")
    pos, orient = pose.pos, pose.orient
    xyz = _finite([pos.x, pos.y, pos.z], f"{where}.cartesian.pos")
    quat = _finite([orient.u0, orient.u1, orient.u2, orient.u3], f"{where}.cartesian.orient")
    return xyz, _unit(quat, f"{where}.cartesian.orient")


def _unit(quat: list[float], where: str) -> list[float]:
    norm = _unit_norm(*quat, where)
    return [v / norm for v in quat]


def _parse(kind: type, datagram: bytes) -> Any:
    if len(datagram) > MAX_DATAGRAM:
        raise BadMessage("oversized", f"{len(datagram)} bytes")
    if not datagram:
        raise BadMessage("empty")
    message = kind()
    try:
        message.ParseFromString(datagram)
    except Exception as exc:  # protobuf raises DecodeError and, for some inputs, others
        raise BadMessage("undecodable", type(exc).__name__) from None
    if not message.IsInitialized():
        raise BadMessage("missing_field", "required fields: " + ", ".join(message.FindInitializationErrors()))
    return message


#: The fields a strict peer demands of a robot message, beyond those egm.proto itself requires.
ROBOT_REQUIRES = {
    "EgmRobot": ("header", "feedBack", "planned", "motorState", "mciState", "rapidExecState", "mciConvergenceMet"),
    "EgmHeader": ("seqno", "tm", "mtype"),
    "EgmFeedBack": ("joints", "cartesian", "time"),
    "EgmPlanned": ("joints", "cartesian", "time"),
    "EgmPose": ("pos", "orient"),
}


def _strict_class(name: str, requires: dict[str, tuple[str, ...]]) -> type:
    """The class of message ``name`` read with the same schema but ``requires`` made required:
    its ``IsInitialized()`` then checks every demanded field in one call into the protobuf
    runtime, instead of a ``HasField`` per field in Python (the robot waits for our answer)."""
    schema = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(schema)
    for message in schema.message_type:
        for field in message.field:
            if field.name in requires.get(message.name, ()):
                field.label = descriptor_pb2.FieldDescriptorProto.LABEL_REQUIRED
    pool = descriptor_pool.DescriptorPool()  # its own pool: the same names as egm_pb2's, no clash
    pool.Add(schema)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{schema.package}.{name}"))


_StrictRobot = _strict_class("EgmRobot", ROBOT_REQUIRES)


def _pose_values(pose: Any) -> list[float]:
    """x, y, z (mm) and u0..u3 of an EgmPose."""
    pos, orient = pose.pos, pose.orient
    return [pos.x, pos.y, pos.z, orient.u0, orient.u1, orient.u2, orient.u3]


def _not_finite(message: Any) -> BadMessage:
    """Which part of a message with a NaN or inf somewhere holds it (the slow path)."""
    for where in ("feedBack", "planned"):
        part = getattr(message, where)
        pose = _pose_values(part.cartesian)
        for values, what in ((part.joints.joints[:], "joints"), (pose[:3], "cartesian.pos"),
                             (pose[3:], "cartesian.orient")):
            if not math.isfinite(sum(values)):
                return BadMessage("not_finite", f"{where}.{what}")
    return BadMessage("not_finite", "utilizationRate")


_DATA = pb.EgmHeader.MSGTYPE_DATA
_isfinite = math.isfinite


def _unit_norm(w: float, x: float, y: float, z: float, where: str) -> float:
    """The norm of a quaternion that must be unit (to :data:`QUATERNION_TOLERANCE`)."""
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise BadMessage("quaternion", f"{where} has norm {norm:.6g}")
    return norm


#: the compiled reading of a robot message (see :mod:`._egm_decode`), None where it is not built
#: or ``ROBOHAL_PURE_PYTHON=1`` asks for the interpreted code
_fast_decode = _egm_decode.decode if _egm_decode.COMPILED and not os.environ.get("ROBOHAL_PURE_PYTHON") else None


class RobotDecoder:
    """Validates and converts robot datagrams (see :func:`decode_robot`). The robot waits for
    the answer to each, so the common case is kept short: where it is built, the compiled
    reader takes a well-formed message straight from its bytes; anything it declines is read
    through protobuf into one reused message object (presence checked in one call,
    finiteness in one sum, each field read once), and only a bad message pays for finding out
    what exactly is wrong with it. One per receiver (not thread-safe)."""

    def __init__(self, dof: int) -> None:
        self.dof = dof
        self._message = _StrictRobot()

    def decode(self, datagram: bytes) -> RobotMessage:
        """One robot datagram as a :class:`RobotMessage`; raise :class:`BadMessage`."""
        if _fast_decode is not None:
            values = _fast_decode(datagram, self.dof)
            if values is not None:
                (seqno, tm, time, q, q_planned, position, quaternion, motor, mci, rapid_state, converged, utilization,
                 force, rapid) = values
                return RobotMessage(seqno, tm, time, q, q_planned, position, quaternion, MOTOR_STATES[motor],
                                    MCI_STATES[mci], RAPID_STATES[rapid_state], converged, utilization, force, rapid)
        if not 0 < len(datagram) <= MAX_DATAGRAM:
            raise BadMessage("oversized", f"{len(datagram)} bytes") if datagram else BadMessage("empty")
        message = self._message
        try:
            message.ParseFromString(datagram)  # clears what the last datagram left
        except Exception as exc:  # protobuf raises DecodeError and, for some inputs, others
            raise BadMessage("undecodable", type(exc).__name__) from None
        if not message.IsInitialized():
            raise BadMessage("missing_field", "required fields: " + ", ".join(message.FindInitializationErrors()))
        header = message.header
        if header.mtype != _DATA:
            raise BadMessage("mtype", f"{pb.EgmHeader.MessageType.Name(header.mtype)}, expected MSGTYPE_DATA")
        feedback, planned = message.feedBack, message.planned
        joints, planned_joints = feedback.joints.joints[:], planned.joints.joints[:]  # slices are plain lists
        dof = self.dof
        if len(joints) != dof or len(planned_joints) != dof:
            where, count = ("feedBack", len(joints)) if len(joints) != dof else ("planned", len(planned_joints))
            raise BadMessage("joint_count", f"{where}.joints has {count} values, expected {dof}")
        pose = feedback.cartesian
        pos, orient = pose.pos, pose.orient
        x, y, z, w, i, j, k = pos.x, pos.y, pos.z, orient.u0, orient.u1, orient.u2, orient.u3
        pose = planned.cartesian
        pos, orient = pose.pos, pose.orient
        pw, pi, pj, pk = orient.u0, orient.u1, orient.u2, orient.u3
        utilization = message.utilizationRate if message.HasField("utilizationRate") else None
        if not _isfinite(sum(joints) + sum(planned_joints) + x + y + z + w + i + j + k + pos.x + pos.y + pos.z
                         + pw + pi + pj + pk + (utilization or 0.0)):
            raise _not_finite(message)
        if max(map(abs, joints + planned_joints)) > MAX_JOINT_DEG:
            raise BadMessage("joint_range", f"joints beyond +-{MAX_JOINT_DEG:g} deg: {joints}, planned {planned_joints}")
        _unit_norm(pw, pi, pj, pk, "planned.cartesian.orient")
        norm = _unit_norm(w, i, j, k, "feedBack.cartesian.orient")
        force = None
        if message.HasField("measuredForce") and len(message.measuredForce.force) == 6:
            force = message.measuredForce.force[:]
            if not _isfinite(sum(force)):
                raise BadMessage("not_finite", f"measuredForce.force is not finite: {force}")
        rapid = _rapid_data(message, "RAPIDfromRobot")
        clock = feedback.time
        return RobotMessage(
            header.seqno, header.tm, clock.sec + clock.usec * 1e-6, [v * DEGREE for v in joints],
            [v * DEGREE for v in planned_joints], [x * 0.001, y * 0.001, z * 0.001],
            [w / norm, i / norm, j / norm, k / norm], MOTOR_STATES[message.motorState.state],
            MCI_STATES[message.mciState.state], RAPID_STATES[message.rapidExecState.state], message.mciConvergenceMet,
            utilization, force, rapid,
        )


def decode_robot(datagram: bytes, dof: int) -> RobotMessage:
    """Validate and convert one robot datagram; raise :class:`BadMessage` (a receiver
    that decodes many keeps a :class:`RobotDecoder`)."""
    return RobotDecoder(dof).decode(datagram)


def _rapid_data(message: Any, field: str) -> list[float] | None:
    """The ``dnum`` values of an ``EgmRAPIDdata`` field, or None when the message has none."""
    if not message.HasField(field):
        return None
    values = getattr(message, field).dnum[:]
    if not math.isfinite(sum(values)):
        raise BadMessage("not_finite", f"{field}.dnum is not finite: {values}")
    return values


def _set_rapid_data(message: Any, field: str, values: ArrayLike | None) -> None:
    """Fill ``EgmRAPIDdata`` ``field`` with ``values`` (absent when None)."""
    if values is None:
        return
    data = [float(v) for v in np.asarray(values, dtype=np.float64).ravel()]
    if not math.isfinite(sum(data)):  # never on the wire: the controller would set a signal from it
        raise InvalidArgument(f"{field} values must be finite, got {data}")
    getattr(message, field).dnum.extend(data)


def _set_clock(clock: Any, seconds: float) -> None:
    whole = math.floor(seconds)
    clock.sec = int(whole)
    clock.usec = min(round((seconds - whole) * 1e6), 999_999)


def _set_timestamp(stamp: Any, seconds: float) -> None:
    """RobotWare 7's EgmTimestamp (sec, nsec), which RobotWare 7 peers read beside EgmClock."""
    whole = math.floor(seconds)
    stamp.sec = int(whole)
    stamp.nsec = min(round((seconds - whole) * 1e9), 999_999_999)


def _set_pose(target: Any, pose: ArrayLike) -> None:
    xyz, quat = pose_to_wire(pose)
    target.pos.x, target.pos.y, target.pos.z = xyz
    target.orient.u0, target.orient.u1, target.orient.u2, target.orient.u3 = quat


def encode_robot(
    *,
    seqno: int,
    tm: int,
    time: float,
    q: ArrayLike,
    q_planned: ArrayLike,
    pose: ArrayLike,
    pose_planned: ArrayLike,
    motor_state: str = "on",
    mci_state: str = "running",
    rapid_state: str = "running",
    converged: bool = False,
    utilization: float = 0.0,
    force: ArrayLike | None = None,
    rapid: ArrayLike | None = None,
) -> bytes:
    """A complete ``EgmRobot`` datagram (the simulated controller's message), RobotWare 7
    layout: feedback and planned carry both ``time`` (EgmClock) and ``timeStamp`` (EgmTimestamp)."""
    message = pb.EgmRobot()
    message.header.seqno = seqno & 0xFFFFFFFF
    message.header.tm = tm & 0xFFFFFFFF
    message.header.mtype = pb.EgmHeader.MSGTYPE_DATA
    for part, joints, part_pose in ((message.feedBack, q, pose), (message.planned, q_planned, pose_planned)):
        part.joints.joints.extend(joints_to_wire(joints))
        _set_pose(part.cartesian, part_pose)
        _set_clock(part.time, time)
        # the same instant as EgmClock (our choice: the simulated controller has one clock)
        _set_timestamp(part.timeStamp, time)
    message.motorState.state = _MOTOR_CODES[motor_state]
    message.mciState.state = _MCI_CODES[mci_state]
    message.rapidExecState.state = _RAPID_CODES[rapid_state]
    message.mciConvergenceMet = bool(converged)
    message.utilizationRate = float(utilization)
    if force is not None:
        message.measuredForce.fcActive = False  # measured, not force-controlled
        message.measuredForce.force.extend(float(v) for v in force)
    _set_rapid_data(message, "RAPIDfromRobot", rapid)
    return message.SerializeToString()


# Sensor -> robot -------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SensorMessage:
    """A validated ``EgmSensor``: a joint target or a pose target (SI units)."""

    seqno: int | None
    tm: int | None
    q: Array | None  # rad
    pose: Array | None  # (4, 4), m
    rapid: list[float] | None = None  # RAPIDtoRobot.dnum, None when absent


def encode_sensor_joints(seqno: int, tm: int, q: ArrayLike, rapid: ArrayLike | None = None) -> bytes:
    """An ``EgmSensor`` joint target (EGMRunJoint); ``rapid``: the RAPIDtoRobot values, if any."""
    message = pb.EgmSensor()
    message.header.seqno = seqno & 0xFFFFFFFF
    message.header.tm = tm & 0xFFFFFFFF
    message.header.mtype = pb.EgmHeader.MSGTYPE_CORRECTION
    message.planned.joints.joints.extend(joints_to_wire(q))
    _set_rapid_data(message, "RAPIDtoRobot", rapid)
    return message.SerializeToString()


class SensorEncoder:
    """Builds ``EgmSensor`` joint targets reusing one message object: the same bytes as
    :func:`encode_sensor_joints`, with less work on the robot's critical path. One per
    sender (not thread-safe)."""

    def __init__(self) -> None:
        self._message = pb.EgmSensor()
        self._message.header.mtype = pb.EgmHeader.MSGTYPE_CORRECTION
        self._joints = self._message.planned.joints.joints

    def joints(self, seqno: int, tm: int, q: ArrayLike, rapid: ArrayLike | None = None) -> bytes:
        message = self._message
        header = message.header
        header.seqno = seqno & 0xFFFFFFFF
        header.tm = tm & 0xFFFFFFFF
        del self._joints[:]
        self._joints.extend(joints_to_wire(q))
        message.ClearField("RAPIDtoRobot")  # this answer's values only, never the last one's
        _set_rapid_data(message, "RAPIDtoRobot", rapid)
        return message.SerializeToString()


def encode_sensor_pose(seqno: int, tm: int, pose: ArrayLike, rapid: ArrayLike | None = None) -> bytes:
    """An ``EgmSensor`` pose target (EGMRunPose), flange in the base frame; ``rapid`` as for joints."""
    message = pb.EgmSensor()
    message.header.seqno = seqno & 0xFFFFFFFF
    message.header.tm = tm & 0xFFFFFFFF
    message.header.mtype = pb.EgmHeader.MSGTYPE_CORRECTION
    _set_pose(message.planned.cartesian, pose)
    _set_rapid_data(message, "RAPIDtoRobot", rapid)
    return message.SerializeToString()


def decode_sensor(datagram: bytes, dof: int) -> SensorMessage:
    """Validate one sensor datagram (the simulated controller's side)."""
    message = _parse(pb.EgmSensor, datagram)
    header = message.header if message.HasField("header") else None
    # manual: the sensor's EgmSensor is MSGTYPE_CORRECTION (path corrections come as EgmSensorPathCorr)
    if header is not None and header.HasField("mtype") and header.mtype != pb.EgmHeader.MSGTYPE_CORRECTION:
        raise BadMessage("mtype", f"{pb.EgmHeader.MessageType.Name(header.mtype)}, expected MSGTYPE_CORRECTION")
    planned = _require(message, "planned", "sensor")
    q = joints_from_wire(_joints(planned, "planned", dof)) if planned.HasField("joints") else None
    pose = pose_from_wire(*_cartesian(planned, "planned")) if planned.HasField("cartesian") else None
    if q is None and pose is None:
        raise BadMessage("missing_field", "planned has neither joints nor cartesian")
    seqno = header.seqno if header is not None and header.HasField("seqno") else None
    tm = header.tm if header is not None and header.HasField("tm") else None
    return SensorMessage(seqno=seqno, tm=tm, q=q, pose=pose, rapid=_rapid_data(message, "RAPIDtoRobot"))
