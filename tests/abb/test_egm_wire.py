"""EGM messages: our egm.proto against the field table, the unit conversion, strict decoding,
and byte-level agreement with a protobuf binding nobody here wrote (abb-robot-client's)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from robohal import spatial
from robohal_abb import egm_pb2 as pb
from robohal_abb import wire

Q = np.radians([10.0, -20.0, 30.0, -40.0, 50.0, -60.0])
POSE = spatial.pose_from_xyz_rpy([0.9, -0.1, 1.2], [0.1, -0.2, 0.3])


def robot_bytes(**changes) -> bytes:
    values = dict(seqno=7, tm=1234, time=1_700_000_000.25, q=Q, q_planned=Q + 0.01, pose=POSE, pose_planned=POSE,
                  motor_state="on", mci_state="running", rapid_state="running", converged=True, utilization=12.5)
    values.update(changes)
    return wire.encode_robot(**values)


def robot_message(**changes) -> pb.EgmRobot:
    message = pb.EgmRobot()
    message.ParseFromString(robot_bytes(**changes))
    return message


@pytest.mark.parametrize(("message", "field", "number"), [
    ("EgmHeader", "seqno", 1), ("EgmHeader", "tm", 2), ("EgmHeader", "mtype", 3),
    ("EgmClock", "usec", 2), ("EgmTimestamp", "nsec", 2), ("EgmPose", "euler", 3),
    ("EgmFeedBack", "timeStamp", 5), ("EgmPlanned", "time", 4), ("EgmSpeedRef", "externalJoints", 3),
    ("EgmPathCorr", "age", 2), ("EgmMeasuredForce", "fcActive", 1), ("EgmMeasuredForce", "force", 2),
    ("EgmCollisionInfo", "collsionTriggered", 1), ("EgmRAPIDdata", "dnum", 2),
    ("EgmRobot", "mciConvergenceMet", 6), ("EgmRobot", "rapidExecState", 8), ("EgmRobot", "utilizationRate", 10),
    ("EgmRobot", "moveIndex", 11), ("EgmRobot", "CollisionInfo", 12), ("EgmRobot", "RAPIDfromRobot", 13),
    ("EgmRobot", "torqueRef", 14), ("EgmSensor", "speedRef", 3), ("EgmSensor", "RAPIDtoRobot", 4),
    ("EgmSensorPathCorr", "pathCorr", 2),
])
def test_field_numbers_follow_the_robotware7_table(message: str, field: str, number: int) -> None:
    descriptor = getattr(pb, message).DESCRIPTOR
    assert descriptor.fields_by_name[field].number == number
    assert descriptor.full_name == f"abb.egm.{message}"


def test_enum_values_on_the_wire() -> None:
    assert pb.EgmHeader.MSGTYPE_DATA == 2 and pb.EgmHeader.MSGTYPE_CORRECTION == 3
    assert (pb.EgmMotorState.MOTORS_ON, pb.EgmMotorState.MOTORS_OFF) == (1, 2)
    assert (pb.EgmMCIState.MCI_ERROR, pb.EgmMCIState.MCI_STOPPED, pb.EgmMCIState.MCI_RUNNING) == (1, 2, 3)
    assert (pb.EgmRapidCtrlExecState.RAPID_STOPPED, pb.EgmRapidCtrlExecState.RAPID_RUNNING) == (1, 2)


def test_units_change_at_the_wire_only() -> None:
    message = robot_message()
    assert list(message.feedBack.joints.joints) == pytest.approx(np.degrees(Q).tolist(), abs=1e-12)
    assert message.feedBack.cartesian.pos.x == pytest.approx(900.0)
    assert message.feedBack.cartesian.pos.z == pytest.approx(1200.0)
    quat = [message.feedBack.cartesian.orient.u0, message.feedBack.cartesian.orient.u1,
            message.feedBack.cartesian.orient.u2, message.feedBack.cartesian.orient.u3]
    assert np.allclose(quat, spatial.matrix_to_quat(POSE[:3, :3]))
    decoded = wire.decode_robot(robot_bytes(), 6)
    assert np.allclose(decoded.q, Q, atol=1e-15) and np.allclose(decoded.q_planned, Q + 0.01, atol=1e-15)
    assert np.allclose(decoded.pose, POSE, atol=1e-12)
    assert decoded.time == pytest.approx(1_700_000_000.25)
    assert (decoded.seqno, decoded.tm, decoded.converged, decoded.utilization) == (7, 1234, True, 12.5)
    assert decoded.active and decoded.faults() == ()


def test_sensor_targets_round_trip() -> None:
    joints = wire.decode_sensor(wire.encode_sensor_joints(3, 40, Q), 6)
    assert np.allclose(joints.q, Q, atol=1e-15) and joints.pose is None and (joints.seqno, joints.tm) == (3, 40)
    pose = wire.decode_sensor(wire.encode_sensor_pose(4, 41, POSE), 6)
    assert pose.q is None and np.allclose(pose.pose, POSE, atol=1e-12)


def test_robot_messages_carry_robotware7_timestamps() -> None:
    """RobotWare 7 peers read EgmTimestamp (sec, nsec) beside EgmClock (sec, usec): both name
    the same instant, in feedback and planned alike."""
    message = robot_message(time=1_700_000_000.123456)
    for part in (message.feedBack, message.planned):
        assert part.HasField("timeStamp") and part.HasField("time")
        assert part.timeStamp.sec == part.time.sec == 1_700_000_000
        assert abs(part.timeStamp.nsec - part.time.usec * 1000) <= 1000
        assert abs(part.timeStamp.nsec - 123_456_000) < 1000  # float seconds hold about 0.2 us here


def test_state_names_and_faults() -> None:
    off = wire.decode_robot(robot_bytes(motor_state="off", rapid_state="stopped", mci_state="stopped"), 6)
    assert not off.active
    assert off.faults() == ("motors_off", "rapid_stopped", "mci_stopped")
    error = wire.decode_robot(robot_bytes(mci_state="error"), 6)
    assert error.faults() == ("mci_error",)
    undefined_rapid = wire.decode_robot(robot_bytes(rapid_state="undefined"), 6)
    assert undefined_rapid.active, "a controller that does not report RAPID's state is still usable"


def _without(path: str):
    def change(message: pb.EgmRobot) -> None:
        *parents, leaf = path.split(".")
        target = message
        for name in parents:
            target = getattr(target, name)
        target.ClearField(leaf)
    return change


def _set(path: str, value):
    def change(message: pb.EgmRobot) -> None:
        *parents, leaf = path.split(".")
        target = message
        for name in parents:
            target = getattr(target, name)
        setattr(target, leaf, value)
    return change


def _joints(part: str, values):
    def change(message: pb.EgmRobot) -> None:
        joints = getattr(message, part).joints.joints
        del joints[:]
        joints.extend(values)
    return change


@pytest.mark.parametrize(("change", "reason"), [
    (_without("header"), "missing_field"),
    (_without("header.seqno"), "missing_field"),
    (_without("header.tm"), "missing_field"),
    (_without("header.mtype"), "missing_field"),
    (_set("header.mtype", pb.EgmHeader.MSGTYPE_CORRECTION), "mtype"),
    (_without("motorState"), "missing_field"),
    (_without("mciState"), "missing_field"),
    (_without("rapidExecState"), "missing_field"),
    (_without("mciConvergenceMet"), "missing_field"),
    (_without("feedBack"), "missing_field"),
    (_without("planned"), "missing_field"),
    (_without("feedBack.time"), "missing_field"),
    (_without("planned.cartesian"), "missing_field"),
    (_without("feedBack.cartesian.orient"), "missing_field"),
    (_joints("feedBack", [1.0] * 5), "joint_count"),
    (_joints("planned", [1.0] * 7), "joint_count"),
    (_joints("feedBack", [1.0, 2.0, math.nan, 4.0, 5.0, 6.0]), "not_finite"),
    (_joints("planned", [1.0, 2.0, 3.0, math.inf, 5.0, 6.0]), "not_finite"),
    (_set("feedBack.cartesian.pos.y", -math.inf), "not_finite"),
    (_set("feedBack.cartesian.orient.u0", 2.0), "quaternion"),
    (_set("utilizationRate", math.nan), "not_finite"),
])
def test_robot_message_rules(change, reason: str) -> None:
    message = robot_message()
    change(message)
    with pytest.raises(wire.BadMessage) as bad:
        wire.decode_robot(message.SerializePartialToString(), 6)
    assert bad.value.reason == reason


def test_size_limits() -> None:
    with pytest.raises(wire.BadMessage) as empty:
        wire.decode_robot(b"", 6)
    assert empty.value.reason == "empty"
    with pytest.raises(wire.BadMessage) as big:
        wire.decode_robot(robot_bytes() + b"\x00" * wire.MAX_DATAGRAM, 6)
    assert big.value.reason == "oversized"
    with pytest.raises(wire.BadMessage) as cut:
        wire.decode_robot(robot_bytes()[:-7], 6)
    assert cut.value.reason in ("undecodable", "missing_field")


def test_sensor_message_rules() -> None:
    message = pb.EgmSensor()
    message.ParseFromString(wire.encode_sensor_joints(1, 2, Q))
    message.header.mtype = pb.EgmHeader.MSGTYPE_DATA
    with pytest.raises(wire.BadMessage, match="mtype"):
        wire.decode_sensor(message.SerializeToString(), 6)
    with pytest.raises(wire.BadMessage) as short:
        wire.decode_sensor(wire.encode_sensor_joints(1, 2, Q[:5]), 6)
    assert short.value.reason == "joint_count"
    empty = pb.EgmSensor()
    empty.header.seqno = 1
    with pytest.raises(wire.BadMessage, match="planned"):
        wire.decode_sensor(empty.SerializeToString(), 6)


def test_bytes_agree_with_a_third_party_binding() -> None:
    """abb-robot-client ships its own generated classes; both must read each other's bytes."""
    from abb_robot_client._egm_protobuf import egm_pb2 as theirs

    robot = theirs.EgmRobot()
    robot.ParseFromString(robot_bytes())
    assert robot.header.seqno == 7 and robot.header.mtype == theirs.EgmHeader.MSGTYPE_DATA
    assert list(robot.feedBack.joints.joints) == pytest.approx(np.degrees(Q).tolist())
    assert robot.planned.cartesian.pos.y == pytest.approx(-100.0)
    assert robot.motorState.state == theirs.EgmMotorState.MOTORS_ON
    assert robot.rapidExecState.state == theirs.EgmRapidCtrlExecState.RAPID_RUNNING
    assert robot.utilizationRate == 12.5 and robot.mciConvergenceMet

    sensor = theirs.EgmSensor()
    sensor.header.mtype = theirs.EgmHeader.MSGTYPE_CORRECTION
    sensor.header.seqno = 9
    sensor.planned.joints.joints.extend(np.degrees(Q).tolist())
    decoded = wire.decode_sensor(sensor.SerializeToString(), 6)
    assert decoded.seqno == 9 and decoded.tm is None and np.allclose(decoded.q, Q, atol=1e-15)


def test_the_generated_module_does_not_claim_the_default_pool() -> None:
    """Our classes live in a private descriptor pool, so another EGM binding can be imported too."""
    from abb_robot_client._egm_protobuf import egm_pb2 as theirs
    from google.protobuf import descriptor_pool

    assert pb.EgmRobot.DESCRIPTOR.file.pool is not descriptor_pool.Default()
    assert theirs.EgmRobot.DESCRIPTOR.full_name == pb.EgmRobot.DESCRIPTOR.full_name == "abb.egm.EgmRobot"


def test_the_reusing_encoder_writes_the_same_bytes() -> None:
    encoder = wire.SensorEncoder()
    for seqno, q in enumerate([Q, -Q, Q * 0.5, np.zeros(6)]):
        assert encoder.joints(seqno, 10 * seqno, q) == wire.encode_sensor_joints(seqno, 10 * seqno, q)


def test_committed_classes_match_egm_proto(tmp_path) -> None:
    """egm_pb2.py is generated from egm.proto (make -C plugins/abb proto); they must not drift apart."""
    protoc = pytest.importorskip("grpc_tools.protoc", reason="pip install -e './plugins/abb[dev]'")
    from pathlib import Path

    from google.protobuf import descriptor_pb2

    source = Path(pb.__file__).resolve().parent
    out = tmp_path / "set.pb"
    status = protoc.main(["protoc", f"-I{source.parent}", f"--descriptor_set_out={out}",
                          str(source / "egm.proto")])
    assert status == 0
    fresh = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file[0]

    def drop_json_names(messages) -> None:  # generated code leaves the derived json_name out
        for message in messages:
            for field in message.field:
                field.ClearField("json_name")
            drop_json_names(message.nested_type)

    drop_json_names(fresh.message_type)
    committed = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(committed)
    assert fresh.name == committed.name == "robohal_abb/egm.proto"
    assert fresh.SerializeToString(deterministic=True) == committed.SerializeToString(deterministic=True)
