"""Bad input on the decode path: counted and dropped, never a crash, never a reply built
from a bad message. First the codec under hypothesis, then a connected backend under fire."""

from __future__ import annotations

import math
import random
import socket
import time

import numpy as np
import pytest
import robohal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from robohal import spatial
from robohal_abb import egm_pb2 as pb
from robohal_abb import wire

Q = np.radians([5.0, 10.0, 15.0, 0.0, 30.0, 45.0])
POSE = spatial.pose_from_xyz_rpy([0.9, 0.0, 1.1], [0.0, 0.5, 0.0])
VALID = wire.encode_robot(seqno=3, tm=12, time=1.7e9, q=Q, q_planned=Q, pose=POSE, pose_planned=POSE)


def check_decoded(message: wire.RobotMessage) -> None:
    """What a decoded message promises, whatever the input was."""
    assert len(message.q) == 6 and len(message.q_planned) == 6
    assert all(math.isfinite(v) for v in [*message.q, *message.q_planned, *message.position, message.time])
    assert abs(math.hypot(*message.quaternion) - 1.0) < 1e-9
    assert message.motor_state in ("on", "off", "undefined")


def decode_or_reason(datagram: bytes) -> str | None:
    try:
        check_decoded(wire.decode_robot(datagram, 6))
    except wire.BadMessage as bad:
        return bad.reason
    return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2 * wire.MAX_DATAGRAM))
def test_random_bytes_are_refused_or_fully_valid(datagram: bytes) -> None:
    decode_or_reason(datagram)  # raises anything but BadMessage -> the test fails


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_mutated_messages_are_refused_or_fully_valid(data: st.DataObject) -> None:
    datagram = bytearray(VALID)
    for _ in range(data.draw(st.integers(1, 6))):
        kind = data.draw(st.sampled_from(["flip", "cut", "insert", "append"]))
        at = data.draw(st.integers(0, max(len(datagram) - 1, 0)))
        if kind == "flip" and datagram:
            datagram[at] ^= data.draw(st.integers(1, 255))
        elif kind == "cut":
            del datagram[at:]
        elif kind == "insert":
            datagram[at:at] = data.draw(st.binary(min_size=1, max_size=16))
        else:
            datagram += data.draw(st.binary(min_size=1, max_size=64))
    decode_or_reason(bytes(datagram))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=0, max_size=9),
       st.sampled_from(["feedBack", "planned"]))
def test_joint_values_must_be_six_and_finite(values: list[float], part: str) -> None:
    message = pb.EgmRobot()
    message.ParseFromString(VALID)
    joints = getattr(message, part).joints.joints
    del joints[:]
    joints.extend(values)
    reason = decode_or_reason(message.SerializeToString())
    if len(values) != 6:
        assert reason == "joint_count"
    elif not math.isfinite(sum(values)):  # a NaN or inf, or finite values too huge to add up
        assert reason == "not_finite"
    elif max(map(abs, values)) > wire.MAX_JOINT_DEG:  # finite, but no joint turns that far
        assert reason == "joint_range"
    else:
        assert reason is None


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([0, 1, 3, 4, 7]))
def test_only_data_messages_come_from_a_robot(mtype: int) -> None:
    message = pb.EgmRobot()
    message.ParseFromString(VALID)
    message.header.mtype = mtype if mtype in (0, 1, 3, 4) else 2
    reason = decode_or_reason(message.SerializeToString())
    assert reason == ("mtype" if mtype in (0, 1, 3, 4) else None)


def garbage(rng: random.Random) -> bytes:
    """One bad datagram: random bytes, a truncated or oversized message, NaN joints,
    a wrong joint count or the wrong message type."""
    kind = rng.randrange(6)
    if kind == 0:
        return rng.randbytes(rng.randrange(1, 400))
    if kind == 1:
        return VALID[: rng.randrange(1, len(VALID) - 5)]
    if kind == 2:
        return VALID + rng.randbytes(wire.MAX_DATAGRAM)
    message = pb.EgmRobot()
    message.ParseFromString(VALID)
    message.header.seqno = 10**6  # were it accepted, it would become the newest message
    if kind == 3:
        message.feedBack.joints.joints[2] = rng.choice([math.nan, math.inf, -math.inf])
    elif kind == 4:
        message.feedBack.joints.joints.append(1.0)
    else:
        message.header.mtype = pb.EgmHeader.MSGTYPE_CORRECTION
    return message.SerializeToString()


def test_backend_drops_garbage_and_never_answers_it(egm_sim) -> None:
    """A second sender on the robot's address fires bad datagrams at the connected backend:
    every one is counted, none is answered, the robot keeps being served."""
    sim = egm_sim("--comm-timeout", "0")
    rng = random.Random(4)
    with robohal.connect(sim.connect_uri()) as robot:
        before = robot.backend.statistics
        attacker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            attacker.bind(("127.0.0.1", 0))
            attacker.setblocking(False)
            sent = 300
            for i in range(sent):
                attacker.sendto(garbage(rng), ("127.0.0.1", sim.sensor_port))
                if i % 10 == 0:
                    robot.backend.cycle()  # the control loop reads the socket meanwhile
            target = robot.backend.commanded + np.radians([2.0, 0, 0, 0, 0, 0])
            assert robot.move_joints(target, speed=0.5).completed
            time.sleep(0.1)
            with pytest.raises(BlockingIOError):
                attacker.recv(65536)  # no reply ever went to the sender of bad datagrams
        finally:
            attacker.close()
        after = robot.backend.statistics
        bad = sum(v - before.get(k, 0) for k, v in after.items() if k.startswith("bad_"))
        assert bad == sent
        assert {"bad_undecodable", "bad_oversized", "bad_not_finite", "bad_joint_count", "bad_mtype"} <= set(after)
        state = robot.backend.cycle()
        assert np.abs(state.q - target).max() < np.radians(1.0)
        assert state.info["seqno"] < 10**6


def test_datagrams_from_another_address_are_counted_and_dropped(egm_sim) -> None:
    """With robot=IP only that address is listened to; a valid message from elsewhere is ignored."""
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri()) as robot:
        other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            other.bind(("127.0.0.2", 0))
            forged = wire.encode_robot(seqno=10**6, tm=1, time=time.time(), q=Q, q_planned=Q, pose=POSE,
                                       pose_planned=POSE, motor_state="off")
            for _ in range(20):
                other.sendto(forged, ("127.0.0.1", sim.sensor_port))
                robot.backend.cycle()
            other.setblocking(False)
            with pytest.raises(BlockingIOError):
                other.recv(65536)
        finally:
            other.close()
        assert robot.backend.counters["foreign_datagrams"] == 20
        state = robot.backend.cycle()
        assert state.info["motor_state"] == "on" and state.info["seqno"] < 10**6
