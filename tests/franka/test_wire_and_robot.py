"""The FCI wire records, our URDF files and the simulated robot's checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from robohal_franka import wire
from robohal_franka.facts import FR3, READY_Q
from robohal_franka.simulated_robot import DEFAULT_MAX_MISSED, START_POSE_TOLERANCE, SimulatedRobot
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
    assert 'upper="2.7437"' in urdf_text("franka.fr3") and 'upper="2.8973"' in urdf_text("franka.panda")


def moving_robot(**options) -> SimulatedRobot:
    robot = SimulatedRobot("franka.fr3", **options)
    assert robot.start_motion(MoveController.JOINT_IMPEDANCE, MoveGenerator.JOINT_POSITION) is MoveStatus.MOTION_STARTED
    return robot


def command(q=None, dq=None, tau=None, pose=None, twist=None, elbow=None, finished=False) -> np.ndarray:
    record = np.zeros((), dtype=wire.COMMAND)
    if q is not None:
        record["q_c"] = q
    if dq is not None:
        record["dq_c"] = dq
    if tau is not None:
        record["tau_J_d"] = tau
    if pose is not None:
        record["O_T_EE_c"] = np.asarray(pose).ravel(order="F")
    if twist is not None:
        record["O_dP_EE_c"] = twist
    if elbow is not None:
        record["elbow_c"] = elbow
        record["valid_elbow"] = True
    record["motion_generation_finished"] = finished
    record["torque_command_finished"] = finished
    return record


def step(robot: SimulatedRobot, **kwargs) -> str | None:
    robot.answer(command(**kwargs))
    return robot.tick()


def test_smooth_stream_passes_and_the_arm_follows():
    robot = moving_robot()
    q0 = robot.q_d.copy()
    t = np.arange(1, 501) * 0.001
    for k, s in enumerate(np.sin(np.pi * t / 0.5) ** 4):
        q = q0.copy()
        q[1] += 0.05 * s
        assert step(robot, q=q, finished=k == 499) in (None, "finished")
    assert robot.mode is RobotMode.IDLE and robot.stats["reflexes"] == 0
    assert np.allclose(robot.q_d, q0, atol=1e-6)  # the desired motion returned to its start
    assert np.abs(robot.q - q0).max() < 1e-3  # and the arm follows it there


def steady(velocity: float, acceleration: float = 0.0) -> list[np.ndarray]:
    """A joint-1 history (three samples 1 ms apart) moving at ``velocity`` with ``acceleration``."""
    v0, v1 = velocity - acceleration * 1e-3, velocity
    return [np.array(READY_Q) + np.r_[x, np.zeros(6)] for x in (0.0, v0 * 1e-3, (v0 + v1) * 1e-3)]


@pytest.mark.parametrize(("history", "next_velocity", "error"), [
    # at 2.6196 rad/s, accelerating at 4.4 rad/s^2 (jerk 0): over the 2.62 rad/s limit, nothing else
    (steady(2.6196, 4.4), 2.6240, "joint_motion_generator_velocity_limits_violation"),
    # accelerating at 9.9 rad/s^2, then 10.5 (jerk 600 rad/s^3): over the 10 rad/s^2 limit alone
    (steady(0.5, 9.9), 0.5 + 10.5e-3, "joint_motion_generator_velocity_discontinuity"),
    # a steady 1 rad/s, then 6 rad/s^2 at once: the jerk (6000 > 5000 rad/s^3) alone
    (steady(1.0), 1.0 + 6e-3, "joint_motion_generator_acceleration_discontinuity"),
])
def test_each_limit_alone_raises_its_libfranka_error(history, next_velocity, error):
    from robohal_franka.simulated_robot import CommandChecker

    checker = CommandChecker(FR3)
    for q in history:
        checker.history.record(q)
    assert checker.check_position(history[-1] + np.r_[next_velocity * 1e-3, np.zeros(6)]) == (error,)


@pytest.mark.parametrize(("change", "errors"), [
    (lambda q: q + np.array([0, 0, 0, 0, 0, 0, 10.0]), {"joint_motion_generator_position_limits_violation",
                                                       "joint_motion_generator_velocity_limits_violation",
                                                       "joint_motion_generator_velocity_discontinuity",
                                                       "joint_motion_generator_acceleration_discontinuity"}),
    (lambda q: q + np.r_[0.011 * 1e-3 * 1.5, np.zeros(6)], {"joint_motion_generator_velocity_discontinuity",
                                                           "joint_motion_generator_acceleration_discontinuity"}),
    (lambda q: q + np.r_[5000 * 1.2e-9, np.zeros(6)], {"joint_motion_generator_acceleration_discontinuity"}),
])
def test_a_bad_command_reports_every_error_it_violates(change, errors):
    robot = moving_robot()
    q0 = robot.q_d.copy()
    assert step(robot, q=q0) is None
    assert step(robot, q=change(q0)) == "reflex"
    assert set(robot.errors) == errors and robot.last_motion_errors == robot.errors
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
        for value in (q - 2 * step_, q - step_, q):  # moving steadily
            checker.history.record(value)
        assert checker.check_position(q + step_) == (() if expected is None else (expected,))


@pytest.mark.parametrize(("offset", "outcome"), [
    (0.01, ("joint_position_motion_generator_start_pose_invalid",)),
    (START_POSE_TOLERANCE * 1.2, ("joint_position_motion_generator_start_pose_invalid",)),
    # more than ddq_max dt^2 = 1e-5 rad, within the tolerance: the motion starts there, from rest
    (1.2e-5, ()),
    (3e-6, ()),  # within one cycle's acceleration (3 rad/s^2, jerk 3000 rad/s^3) from rest: a first step
    (7e-6, ("joint_motion_generator_acceleration_discontinuity",)),  # a first step, but the jerk is 7000
])
def test_the_first_command_starts_on_q_d_or_within_the_rest_tolerance(offset, outcome):
    robot = moving_robot()
    assert np.abs(robot.q - robot.q_d).max() > 1e-6  # the measured arm is not where it is held
    event = step(robot, q=robot.q_d + np.r_[offset, np.zeros(6)])
    assert robot.errors == outcome and event == ("reflex" if outcome else None)


def test_a_motion_may_start_on_the_measured_position():
    """As libfranka's Python examples do (example_common.MotionGenerator starts from q): the arm's
    rest error is within the start tolerance, and the motion goes on smoothly from there."""
    robot = moving_robot(seed=3)
    start = robot.q.copy()
    assert np.abs(start - robot.q_d).max() > 1e-5  # a step no single cycle from rest could make
    for k in range(200):
        q = start + np.r_[0.05 * math.sin(math.pi * k / 400) ** 2, np.zeros(6)]
        assert step(robot, q=q) is None, robot.errors
    assert robot.errors == ()


def ramp_then_finish(velocities) -> SimulatedRobot:
    robot = moving_robot()
    q = robot.q_d.copy()
    for k, velocity in enumerate(velocities):
        q = q + np.r_[velocity * 1e-3, np.zeros(6)]
        event = step(robot, q=q, finished=k == len(velocities) - 1)
        assert event in (None, "finished", "reflex")
    return robot


def test_a_finished_motion_is_checked_by_the_step_to_rest():
    # the robot holds the last command: the two cycles to rest must keep to the acceleration
    # (10 rad/s^2) and jerk (5000 rad/s^3) limits, so the last velocity must be under 5 mrad/s
    slow = ramp_then_finish([0.001, 0.002, 0.003, 0.004, 0.004, 0.004])
    assert slow.mode is RobotMode.IDLE and slow.errors == ()
    fast = ramp_then_finish([0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.006, 0.006])
    assert fast.errors == ("joint_motion_generator_acceleration_discontinuity",)
    # accelerate gently to 0.5 rad/s, then stop dead with motion_finished
    dead = ramp_then_finish([min(0.005 * (k + 1), 0.5) for k in range(200)])
    assert dead.errors == ("joint_motion_generator_velocity_discontinuity",
                           "joint_motion_generator_acceleration_discontinuity")


def test_missed_commands_are_tolerated_up_to_the_limit():
    robot = moving_robot()
    q = robot.q_d.copy()
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
    assert robot.errors == ("joint_motion_generator_velocity_discontinuity",
                            "joint_motion_generator_acceleration_discontinuity")
    robot.recover()
    robot.start_motion(MoveController.EXTERNAL, MoveGenerator.NONE)
    q0 = robot.tracking.position.copy()
    for _ in range(100):
        assert step(robot, tau=np.r_[0.5, np.zeros(6)]) is None
    assert np.array_equal(robot.tracking.position, q0)  # joint 1's static friction (1.137 Nm) holds
    for k in range(1, 100):
        assert step(robot, tau=np.r_[0.5 + min(k, 15) * 0.1, np.zeros(6)]) is None  # up to 2 Nm at 100 Nm/s
    assert robot.tracking.position[0] > q0[0] + 1e-4
    assert step(robot, tau=np.r_[21.5, np.zeros(6)]) == "reflex"
    assert robot.errors == ("controller_torque_discontinuity",)  # 19.5 Nm in 1 ms; 21.5 Nm is in range
    robot.recover()
    robot.start_motion(MoveController.EXTERNAL, MoveGenerator.NONE)
    assert step(robot, tau=np.r_[0.9, np.zeros(5), 13.0]) == "reflex"  # joint 7 over 12 Nm, and a jump
    assert robot.errors == ("tau_j_range_violation", "controller_torque_discontinuity")
    robot.recover()
    assert robot.start_motion(MoveController.JOINT_IMPEDANCE, MoveGenerator.NONE) is MoveStatus.COMMAND_NOT_POSSIBLE_REJECTED
    assert robot.start_motion(0, 9) is MoveStatus.INVALID_ARGUMENT_REJECTED


def test_state_record_is_consistent():
    robot = SimulatedRobot(q0=READY_Q)
    record = robot.fill(wire.new_state())
    assert np.allclose(wire.get_floats(record, "q_d"), READY_Q, atol=1e-6)
    assert np.allclose(wire.get_floats(record, "q"), READY_Q, atol=1e-3)
    assert wire.get_floats(record, "elbow_d").tolist() == pytest.approx([0.0, -1.0])  # joint 4 bent past the flip
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


def _s_curve(t: float) -> float:
    """A jerk-heavy start on joint 1, rad: 1500 rad/s^3 from rest (the FR3 allows 5000), which
    reaches 9 rad/s^2 of the 10 allowed after 6 ms."""
    return 1500.0 * t**3 / 6


def _answer_for(robot: SimulatedRobot, q: np.ndarray, answered: int) -> str | None:
    record = command(q=q)
    record["message_id"] = answered
    robot.receive(record)
    return robot.tick()


def test_after_a_filled_cycle_commands_are_judged_against_the_motion_the_robot_executes():
    """A cycle without a command: the robot continues at constant acceleration. A client that
    builds on that (libfranka's rate limiter, franky) goes on smoothly; one that jumps back onto
    its own jerk-heavy plan meets four times the plan's jerk and more than its acceleration."""
    def robot_after_a_lost_cycle() -> tuple[SimulatedRobot, np.ndarray]:
        robot = moving_robot(ideal=True)
        q0 = robot.q_d.copy()
        for k in range(1, 5):
            assert step(robot, q=q0 + np.r_[_s_curve(k * 1e-3), np.zeros(6)]) is None
        assert robot.tick() is None  # no command for this cycle: filled
        return robot, q0

    robot, q0 = robot_after_a_lost_cycle()
    executed = [q0[0] + _s_curve(k * 1e-3) for k in (2, 3, 4)] + [robot.q_d[0]]
    on_the_executed = 3 * executed[-1] - 3 * executed[-2] + executed[-3] + 1500.0 * 1e-9  # the plan's jerk
    assert _answer_for(robot, q0 + np.r_[on_the_executed - q0[0], np.zeros(6)], robot.message_id) is None
    assert robot.stats["filled"] == 1 and robot.stats["reflexes"] == 0

    robot, q0 = robot_after_a_lost_cycle()
    assert _answer_for(robot, q0 + np.r_[_s_curve(6e-3), np.zeros(6)], robot.message_id) == "reflex"
    # the acceleration too: 9 rad/s^2 on the plan, plus twice its jerk times the cycle over it
    assert robot.errors == ("joint_motion_generator_velocity_discontinuity",
                            "joint_motion_generator_acceleration_discontinuity")


def test_a_command_that_comes_after_its_cycle_is_dropped_for_the_filled_one():
    """Late: the robot has filled the cycle the command was for; it drops the command and
    reports the filled q_d in the state (what a client's next command builds on)."""
    robot = moving_robot(ideal=True)
    q0 = robot.q_d.copy()
    for k in range(1, 5):
        assert step(robot, q=q0 + np.r_[_s_curve(k * 1e-3), np.zeros(6)]) is None
    answered = robot.message_id
    assert robot.tick() is None  # the cycle passes without the command
    filled = robot.q_d.copy()
    expected = q0[0] + 3 * _s_curve(4e-3) - 3 * _s_curve(3e-3) + _s_curve(2e-3)  # at constant acceleration
    assert filled[0] == pytest.approx(expected, abs=1e-12)
    assert wire.get_floats(robot.fill(wire.new_state()), "q_d")[0] == pytest.approx(filled[0], abs=1e-7)
    assert _answer_for(robot, q0 + np.r_[_s_curve(5e-3), np.zeros(6)], answered) is None  # arrives now: too late
    assert robot.stats["stale"] == 1 and robot.stats["filled"] == 2
    s2, s3, s4 = (q0[0] + _s_curve(k * 1e-3) for k in (2, 3, 4))
    assert robot.q_d[0] == pytest.approx(2 * filled[0] - s4 + (s4 - 2 * s3 + s2), abs=1e-12)  # filled again


def test_a_client_that_counts_its_own_cycles_through_a_lost_state_is_refused():
    """The same skipped state, but the client sends its next setpoint as if no cycle had
    passed: against its own commands at their cycles, the velocity halves for one cycle."""
    robot = moving_robot(ideal=True)
    q0 = robot.q_d.copy()
    velocity = 0.5  # rad/s on joint 1, reached smoothly
    t = np.arange(1, 400) * 1e-3
    ramp = velocity * np.minimum(t, 0.2) ** 2 / 0.4 + velocity * np.maximum(t - 0.2, 0)  # 2.5 rad/s^2 then 0.5 rad/s
    for k, x in enumerate(ramp[:300]):
        assert step(robot, q=q0 + np.r_[x, np.zeros(6)]) is None, (k, robot.errors)
    robot.tick()  # the client never answers the state of this cycle
    assert _answer_for(robot, q0 + np.r_[ramp[300], np.zeros(6)], robot.message_id) == "reflex"
    assert "joint_motion_generator_velocity_discontinuity" in robot.errors


def ramp_and_finish(robot: SimulatedRobot, distance: float = 0.05, cycles: int = 300) -> np.ndarray:
    """A smooth joint-2 move of ``distance`` rad, finished at rest; returns its last command."""
    q0, q = robot.q_d.copy(), robot.q_d.copy()
    for k in range(1, cycles + 1):
        q = q0.copy()
        q[1] += distance * (0.5 - 0.5 * math.cos(math.pi * k / cycles)) ** 2
        assert step(robot, q=q, finished=k == cycles) in (None, "finished")
    return q


def test_a_finished_motion_holds_the_last_command_by_default():
    robot = moving_robot(seed=3)
    last = ramp_and_finish(robot)
    assert robot.mode is RobotMode.IDLE
    assert np.array_equal(robot.q_d, last.astype(np.float32).astype(np.float64))


def test_hold_measured_reports_where_the_arm_is_and_keeps_it_there():
    robot = moving_robot(seed=3, hold="measured")
    last = ramp_and_finish(robot)
    measured = robot.q.copy()  # the state the finishing tick reported
    assert robot.mode is RobotMode.IDLE
    held = robot.q_d.copy()
    off = np.abs(held - last).max()
    assert 1e-5 < off < 3e-3, f"held {off:.2e} rad off the last command: the arm's lag and static error"
    assert np.abs(held - measured).max() < 1e-4  # the measured q of the finishing cycle, as float32
    for _ in range(400):  # held in place: the arm settles there and does not creep on
        robot.tick()
    assert np.array_equal(robot.q_d, held)
    assert np.abs(robot.q - held).max() < 5e-5
    # the next motion starts on that hold as on any other
    assert robot.start_motion(MoveController.JOINT_IMPEDANCE, MoveGenerator.JOINT_POSITION) is MoveStatus.MOTION_STARTED
    assert step(robot, q=held) is None and robot.mode is RobotMode.MOVE


def test_hold_measured_also_at_rest_after_start():
    robot = SimulatedRobot("franka.fr3", seed=3, hold="measured")
    assert np.abs(robot.q_d - robot.q).max() < 1e-6  # float32 of the measured q
    with pytest.raises(ValueError, match="hold"):
        SimulatedRobot("franka.fr3", hold="nearby")
