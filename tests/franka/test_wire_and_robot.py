"""The FCI wire records, our URDF files and the simulated robot's checks."""

from __future__ import annotations

import numpy as np
import pytest
from robohal_franka import wire
from robohal_franka.facts import FR3, READY_Q
from robohal_franka.simulated_robot import DEFAULT_MAX_MISSED, SimulatedRobot
from robohal_franka.urdf import build_urdf, urdf_text
from robohal_franka.wire import MoveController, MoveGenerator, MoveStatus, RobotMode


def test_record_sizes_and_field_offsets():
    assert wire.STATE.itemsize == 1377 and wire.COMMAND.itemsize == 371
    assert wire.MOVE_REQUEST.size + wire.HEADER.size == 125
    assert 8 + 4 * wire.STATE_FLOATS["q"][0] == 596  # q's byte offset
    assert wire.STATE.fields["robot_mode"][1] == 1372
    last, count = wire.STATE_FLOATS["dtheta"]
    assert last + count <= wire.STATE_FLOAT_COUNT


def test_error_names_are_pylibfranka_s():
    pylibfranka = pytest.importorskip("pylibfranka")
    theirs = {n for n in dir(pylibfranka.Errors) if not n.startswith("_") and isinstance(getattr(pylibfranka.Errors, n), property)}
    assert set(wire.ERROR_NAMES) == theirs and len(wire.ERROR_NAMES) == 41
    assert wire.error_names(wire.error_bits(["cartesian_reflex", "joint_reflex"])) == ("joint_reflex", "cartesian_reflex")


def test_packaged_urdf_files_match_the_facts():
    for name in ("franka.fr3", "franka.panda"):
        text = urdf_text(name)
        assert text == build_urdf(name)
        assert text.count("<position_based_velocity_limits") == 7 and 'name="link8"' in text
    assert 'upper="2.9007"' in urdf_text("franka.fr3") and 'upper="2.8973"' in urdf_text("franka.panda")


def moving_robot(**options) -> SimulatedRobot:
    robot = SimulatedRobot("franka.fr3", **options)
    assert robot.start_motion(MoveController.JOINT_IMPEDANCE, MoveGenerator.JOINT_POSITION) is MoveStatus.MOTION_STARTED
    return robot


def command(q=None, dq=None, tau=None, finished=False) -> np.ndarray:
    record = np.zeros((), dtype=wire.COMMAND)
    if q is not None:
        record["q_c"] = q
    if dq is not None:
        record["dq_c"] = dq
    if tau is not None:
        record["tau_J_d"] = tau
    record["motion_generation_finished"] = finished
    record["torque_command_finished"] = finished
    return record


def step(robot: SimulatedRobot, **kwargs) -> str | None:
    robot.receive(command(**kwargs))
    return robot.tick()


def test_smooth_stream_passes_and_the_arm_follows():
    robot = moving_robot()
    q0 = robot.q.copy()
    t = np.arange(1, 501) * 0.001
    for k, s in enumerate(np.sin(np.pi * t / 0.5) ** 4):
        q = q0.copy()
        q[1] += 0.05 * s
        assert step(robot, q=q, finished=k == 499) in (None, "finished")
    assert robot.mode is RobotMode.IDLE and robot.stats["reflexes"] == 0
    assert np.allclose(robot.q, q0, atol=1e-6)


@pytest.mark.parametrize(("change", "error"), [
    (lambda q: q + np.array([0, 0, 0, 0, 0, 0, 10.0]), "joint_motion_generator_position_limits_violation"),
    (lambda q: q + np.r_[FR3.velocity[0] * 0.0011, np.zeros(6)], "joint_motion_generator_velocity_limits_violation"),
    (lambda q: q + np.r_[0.011 * 1e-3 * 1.5, np.zeros(6)], "joint_motion_generator_velocity_discontinuity"),
    (lambda q: q + np.r_[5000 * 1.2e-9, np.zeros(6)], "joint_motion_generator_acceleration_discontinuity"),
])
def test_each_limit_raises_its_libfranka_error(change, error):
    robot = moving_robot()
    q0 = robot.q.copy()
    assert step(robot, q=q0) is None
    assert step(robot, q=change(q0)) == "reflex"
    assert robot.errors == (error,) and robot.last_motion_errors == (error,)
    assert robot.mode is RobotMode.REFLEX
    assert robot.start_motion(0, 0) is not MoveStatus.MOTION_STARTED  # no motion in Reflex
    robot.recover()
    assert robot.mode is RobotMode.IDLE and robot.errors == ()
    assert robot.start_motion(0, 0) is MoveStatus.MOTION_STARTED


def test_near_the_end_of_travel_the_fr3_speed_curve_raises_the_velocity_reflex():
    # Joint 2 30 mrad from its upper limit, already moving at 0.8 rad/s: far inside its
    # 2.62 rad/s limit, but over sqrt(2 * 2.585 * 0.03) - 0.2 = 0.19 rad/s toward that
    # end. The same speed away from the end passes.
    from robohal_franka.simulated_robot import CommandChecker

    for direction, expected in ((1.0, "joint_motion_generator_velocity_limits_violation"), (-1.0, None)):
        checker = CommandChecker(FR3)
        q = np.array(READY_Q)
        q[1] = FR3.upper[1] - 0.03 - (direction > 0) * 0.0024
        step_ = np.r_[0.0, direction * 0.8e-3, np.zeros(5)]
        checker.reset(q)
        checker.history = [q - 2 * step_, q - step_, q]  # moving steadily
        assert checker.check_position(q + step_) == expected


def test_start_pose_and_finish_at_speed():
    robot = moving_robot()
    assert step(robot, q=robot.q + 0.01) == "reflex"
    assert robot.errors == ("joint_position_motion_generator_start_pose_invalid",)
    robot.recover()
    robot.start_motion(0, 0)
    q = robot.q.copy()
    velocity = 0.0
    for _ in range(200):  # accelerate gently, then stop dead with motion_finished
        velocity = min(velocity + 0.005, 0.5)
        q = q + np.r_[velocity * 1e-3, np.zeros(6)]
        assert step(robot, q=q) is None
    assert step(robot, q=q, finished=True) == "reflex"
    assert robot.errors == ("joint_motion_generator_velocity_discontinuity",)


def test_missed_commands_are_tolerated_up_to_the_limit():
    robot = moving_robot()
    q = robot.q.copy()
    for _ in range(DEFAULT_MAX_MISSED):
        assert robot.tick() is None  # no command this cycle: tolerated
    assert step(robot, q=q) is None
    assert 0 < robot.success_rate < 0.1
    for _ in range(DEFAULT_MAX_MISSED):
        robot.tick()
    assert robot.tick() == "reflex"
    assert robot.errors == ("communication_constraints_violation",)


def test_velocity_and_torque_interfaces():
    robot = SimulatedRobot()
    robot.start_motion(MoveController.JOINT_IMPEDANCE, MoveGenerator.JOINT_VELOCITY)
    assert step(robot, dq=np.r_[1.0, np.zeros(6)]) == "reflex"  # from rest to 1 rad/s in 1 ms
    assert robot.errors == ("joint_motion_generator_velocity_discontinuity",)
    robot.recover()
    robot.start_motion(MoveController.EXTERNAL, MoveGenerator.NONE)
    q0 = robot.q.copy()
    for _ in range(100):
        assert step(robot, tau=np.r_[0.5, np.zeros(6)]) is None
    assert robot.q[0] > q0[0]
    assert step(robot, tau=np.r_[20.0, np.zeros(6)]) == "reflex"
    assert robot.errors == ("tau_j_range_violation",) or robot.errors == ("controller_torque_discontinuity",)
    assert robot.start_motion(MoveController.CARTESIAN_IMPEDANCE, MoveGenerator.CARTESIAN_POSITION) is not MoveStatus.MOTION_STARTED


def test_state_record_is_consistent():
    robot = SimulatedRobot(q0=READY_Q)
    record = robot.fill(wire.new_state())
    assert np.allclose(wire.get_floats(record, "q"), READY_Q, atol=1e-6)
    pose = wire.get_floats(record, "O_T_EE").reshape(4, 4, order="F")
    assert np.allclose(pose[:3, 3], [0.3069, 0.0, 0.5903], atol=1e-3)
    assert np.allclose(wire.get_floats(record, "O_ddP_O"), [0, 0, -9.81], atol=1e-5)
    assert int(record["robot_mode"]) == RobotMode.IDLE
    robot.inject_reflex("cartesian_reflex")
    assert robot.tick() == "reflex"
    record = robot.fill(record)
    assert wire.error_names(record["errors"]) == ("cartesian_reflex",)
    with pytest.raises(ValueError):
        robot.inject_reflex("no_such_error")
