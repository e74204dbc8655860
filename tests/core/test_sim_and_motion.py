"""The built-in sim backend and the robot API on top of it."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest
import robohal
from robohal import RobotMode, spatial
from robohal.control.guard import SetpointGuard
from robohal.errors import (
    ConnectionLost,
    HardwareFault,
    InvalidArgument,
    LimitViolation,
    RobohalError,
    UnreachableError,
    UriError,
)

FAST = "sim://?model=generic.planar2&realtime=0&rate=250"


@pytest.fixture
def robot():
    with robohal.connect(FAST) as connected:
        yield connected


def finite_differences_within_limits(setpoints, start, limits, period):
    """Replay setpoints through a fresh guard that checks all four limits."""
    guard = SetpointGuard(limits, period, checks=("position", "velocity", "acceleration", "jerk"))
    guard.reset(start)
    for q in setpoints:
        guard.commit(guard.check(q))


def test_connect_holds_the_measured_position(robot):
    state = robot.state
    assert state.q.shape == (2,) and np.allclose(robot.backend.commanded, state.q)
    assert state.mode.value in ("idle", "moving")


def test_move_joints_is_jerk_limited_and_reaches_the_target(robot):
    start = robot.backend.commanded
    target = np.radians([40.0, -70.0])
    result = robot.move_joints(target, speed=0.8)
    assert result.completed and np.allclose(result.commanded[-1], target)
    finite_differences_within_limits(result.commanded, start, robot.model.limits, robot.backend.period)
    # all joints arrive together: a straight line in joint space
    progress = (result.commanded - start) / (target - start)
    assert np.allclose(progress[:, 0], progress[:, 1])
    robot.run(robohal.motion.Hold(0.3))
    assert np.abs(robot.state.q - target).max() < 1e-3


def test_speed_scales_the_duration(robot):
    fast = robot.move_joints(np.radians([20.0, 20.0]), speed=1.0)
    slow = robot.move_joints(np.radians([0.0, 0.0]), speed=0.25)
    assert slow.cycles > 2.5 * fast.cycles


def test_move_linear_keeps_the_end_point_on_the_line(robot):
    robot.move_joints(np.radians([20.0, 70.0]))
    start = robot.model.position(robot.backend.commanded)
    goal = start + np.array([0.05, -0.04])
    result = robot.move_linear(spatial.from_translation([*goal, 0.0]), speed=0.1)
    path = robot.model.position(result.commanded)
    direction = (goal - start) / np.linalg.norm(goal - start)
    offset = path - start
    off_line = offset - np.outer(offset @ direction, direction)
    assert np.abs(off_line).max() < 1e-9
    assert np.allclose(path[-1], goal, atol=1e-9)
    finite_differences_within_limits(result.commanded, result.commanded[0], robot.model.limits, robot.backend.period)


def test_unreachable_line_is_refused_before_moving(robot):
    sent = robot.backend.counters["commands_sent"]
    with pytest.raises(UnreachableError, match="reach"):
        robot.move_linear(spatial.from_translation([2.0, 0.0, 0.0]))
    assert robot.backend.counters["commands_sent"] == sent


def test_bad_targets_are_refused_clearly(robot):
    with pytest.raises(InvalidArgument, match="NaN or inf"):
        robot.move_joints([np.nan, 0.0])
    with pytest.raises(InvalidArgument, match="2 joints"):
        robot.move_joints([0.0, 0.0, 0.0])
    with pytest.raises(LimitViolation, match="joint 2"):
        robot.move_joints([0.0, np.radians(160.0)])
    with pytest.raises(InvalidArgument, match="speed"):
        robot.move_joints([0.1, 0.1], speed=1.5)


def test_follow_passes_waypoints_on_time(robot):
    points = np.radians([[10.0, 10.0], [20.0, -10.0], [0.0, 0.0]])
    times = np.array([0.6, 1.2, 2.0])
    result = robot.follow(points, times)
    period = robot.backend.period
    for point, t in zip(points, times, strict=True):
        index = round(t / period) - 1
        assert np.allclose(result.commanded[index], point, atol=1e-9)
    with pytest.raises(InvalidArgument, match="cannot be reached"):
        robot.follow(np.radians([[150.0, 100.0]]), [0.05])


def test_a_fault_raises_hardware_fault_then_recover_holds_where_it_is(robot):
    robot.move_joints(np.radians([10.0, 10.0]))
    robot.backend.inject_fault("simulated_overcurrent")
    with pytest.raises(HardwareFault) as fault:
        robot.backend.cycle()
    assert fault.value.names == ("simulated_overcurrent",)
    assert robot.state.faults == ("simulated_overcurrent",)  # the state can still be read
    assert pickle.loads(pickle.dumps(robot.state)).faults == ("simulated_overcurrent",)
    with pytest.raises(HardwareFault):
        robot.move_joints([0.0, 0.0])  # refused until recovered
    state = robot.recover()
    assert np.allclose(robot.backend.commanded, state.q), "after recovery hold the measured position"
    assert robot.move_joints([0.0, 0.0]).completed


def test_unrecoverable_fault_stays(robot):
    robot.backend.inject_fault("estop", recoverable=False)
    with pytest.raises(HardwareFault):
        robot.backend.cycle()
    with pytest.raises(HardwareFault):
        robot.recover()


def test_background_motion_and_stop():
    with robohal.connect("sim://?model=generic.planar2&rate=250") as robot:  # real time
        robot.move_joints(np.radians([90.0, 90.0]), speed=0.1, wait=False)
        with pytest.raises(RobohalError, match="running"):  # (a new motion would take over instead)
            robot.backend.cycle([0.0, 0.0])
        threading.Event().wait(0.2)
        robot.stop()
        commanded = robot.backend.commanded
        assert 0 < np.abs(commanded).max() < np.radians(80.0)
        velocity, acceleration = robot.backend.guard.derivatives()
        assert np.abs(velocity).max() < 1e-6 and np.abs(acceleration).max() < 1e-3


def test_closed_robot_refuses_calls():
    robot = robohal.connect(FAST)
    robot.close()
    with pytest.raises(ConnectionLost):
        robot.state
    robot.close()  # idempotent


def test_uri_parameters_are_validated():
    with pytest.raises(UriError, match="q0"):
        robohal.connect("sim://?model=generic.planar2&q0=1,2,3")
    with pytest.raises(UriError, match="rate"):
        robohal.connect("sim://?model=generic.planar2&rate=0")
    with pytest.raises(UriError, match="model"):
        robohal.connect("sim://")
    with robohal.connect("sim://?model=generic.planar2&realtime=0&q0=0.1,0.2") as robot:
        assert np.allclose(robot.state.q, [0.1, 0.2])


def test_state_time_rises_by_one_period(robot):
    times = [robot.backend.cycle().time for _ in range(10)]
    assert np.allclose(np.diff(times), robot.backend.period)


def test_a_real_time_sim_keeps_settling_between_cycles():
    """After a motion the lagging arm still moves; reads show it settle, as a real arm would,
    instead of a state frozen at the last cycle."""
    import time

    with robohal.connect("sim://?model=generic.planar2&realtime=1&lag=0.05") as robot:
        target = np.array([0.3, -0.4])
        robot.move_joints(target, speed=1.0)
        after_motion = robot.state
        assert after_motion.mode is RobotMode.MOVING, "the 50 ms lag leaves the arm short of the target"
        time.sleep(1.0)  # 20 time constants
        settled = robot.state
        assert settled.time > after_motion.time + 0.9
        assert settled.mode is RobotMode.IDLE
        assert np.allclose(settled.q, target, atol=1e-6)
