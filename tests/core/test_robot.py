"""The robot API on the in-process sim backend: joint moves, straight lines, waypoints,
take-over, the robot-wide speed factor and relative moves, background motions and stop."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import robohal
from robohal import spatial
from robohal.control.backend import wait_until
from robohal.control.guard import SetpointGuard
from robohal.errors import (
    ConnectionLost,
    InvalidArgument,
    LimitViolation,
    RobohalError,
    UnreachableError,
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


IRB = "sim://?model=abb.irb2400&realtime=0&rate=250"


def record_sent(backend) -> list[np.ndarray]:
    """Every setpoint the backend puts on its (simulated) wire, in order."""
    sent: list[np.ndarray] = []
    send = backend._send

    def recording(q):
        sent.append(np.array(q))
        send(q)

    backend._send = recording
    return sent


def test_a_new_move_takes_over_the_running_one_without_a_stop():
    # Paced by the clock (realtime), and the first move long and slow: the take-over lands while
    # it cruises, whatever the machine's load, never as it comes to rest by itself. The second
    # target lies further on, so no joint has to turn back (a turn back passes through rest).
    with robohal.connect("sim://?model=abb.irb2400&rate=250") as robot:
        start = robot.backend.commanded
        sent = record_sent(robot.backend)
        robot.move_joints(np.radians([60, 20, 0, 0, 0, 0]), speed=0.2, wait=False)
        first = robot.backend._last_job
        assert wait_until(lambda: len(sent) >= 150, timeout=30.0)  # 0.6 s in: cruising
        second_target = np.radians([80, 30, 10, 0, 0, 0])
        second = robot.move_joints(second_target, speed=0.2)
        assert second.completed and np.allclose(second.commanded[-1], second_target)
        assert first.result.taken_over and not first.result.completed
        switch = first.result.cycles
        speeds = np.abs(np.diff(np.array(sent), axis=0)).max(axis=1) / robot.backend.period
        assert speeds[switch - 5:switch + 5].min() > 0.05, "no stop at the take-over"
        finite_differences_within_limits(sent, start, robot.model.limits, robot.backend.period)


def test_the_robot_wide_speed_slows_every_move():
    with robohal.connect(IRB) as robot:
        away, back = np.radians([40, 20, 10, 0, 30, 0]), np.radians([10, 10, 10, 0, 30, 0])  # no wrist singularity
        robot.move_joints(back, speed=1.0)
        full = robot.move_joints(away, speed=1.0)
        robot.speed = 0.4
        slow = robot.move_joints(back, speed=1.0)
        assert slow.cycles > 1.5 * full.cycles and np.allclose(slow.commanded[-1], back)
        line = robot.model.forward(robot.backend.commanded)
        line[:3, 3] += [0.0, 0.1, 0.0]
        slow_line = robot.move_linear(line, speed=0.2)
        robot.speed = 1.0
        line[:3, 3] -= [0.0, 0.1, 0.0]
        fast_line = robot.move_linear(line, speed=0.2)
        assert slow_line.cycles > 1.6 * fast_line.cycles
        for bad in (0.0, 1.5, -1, True, "fast"):
            with pytest.raises(InvalidArgument):
                robot.speed = bad


@pytest.mark.parametrize("frame", ["base", "tool"])
def test_a_relative_line_moves_from_where_the_flange_is_commanded(frame):
    with robohal.connect(IRB) as robot:
        robot.move_joints(np.radians([10, 10, 10, 0, 30, 0]), speed=1.0)
        before = robot.model.forward(robot.backend.commanded)
        delta = spatial.from_translation([0.05, -0.03, 0.02]) @ spatial.rotation_z(0.2)
        robot.move_linear(delta, relative=True, frame=frame)
        after = robot.model.forward(robot.backend.commanded)
        if frame == "tool":
            expected = before @ delta
        else:
            expected = before.copy()
            expected[:3, 3] += [0.05, -0.03, 0.02]
            expected[:3, :3] = delta[:3, :3] @ before[:3, :3]
        assert np.allclose(after, expected, atol=1e-6)
        with pytest.raises(InvalidArgument, match="frame"):
            robot.move_linear(delta, relative=True, frame="world")


def test_a_line_takes_over_a_running_move_without_a_stop():
    with robohal.connect(IRB) as robot:
        robot.move_joints(np.radians([0, 10, 10, 0, 30, 0]), speed=1.0)
        start = robot.backend.commanded
        sent = record_sent(robot.backend)
        robot.move_joints(np.radians([30, 10, 10, 0, 30, 0]), speed=0.5, wait=False)
        assert wait_until(lambda: len(sent) >= 40, timeout=30.0)
        target = robot.model.forward(robot.backend.commanded)
        target[:3, 3] += [0.0, 0.0, 0.08]
        result = robot.move_linear(target, speed=0.2)
        assert result.completed
        reached = robot.model.forward(robot.backend.commanded)
        assert np.abs(reached[:3, 3] - target[:3, 3]).max() < 1e-3
        speeds = np.abs(np.diff(np.array(sent), axis=0)).max(axis=1) / robot.backend.period
        assert speeds[35:60].min() > 0.01, "no stop at the take-over"
        finite_differences_within_limits(sent, start, robot.model.limits, robot.backend.period)


def test_timed_waypoints_wait_for_a_running_motion_and_untimed_ones_take_over():
    with robohal.connect(IRB) as robot:
        home = np.radians([0, 10, 10, 0, 30, 0])
        robot.move_joints(home, speed=1.0)
        robot.move_joints(home + np.radians([40, 0, 0, 0, 0, 0]), speed=0.1, wait=False)
        with pytest.raises(RobohalError, match="starts from rest"):
            robot.follow([home + np.radians([5, 0, 0, 0, 0, 0])], [1.0])
        points = home + np.radians([[10, 5, 0, 0, 0, 0], [20, 10, 0, 0, 0, 0]])
        assert robot.follow(points).completed  # took over
        assert np.array_equal(robot.backend.commanded, points[-1])
