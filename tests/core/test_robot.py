"""The robot API on the in-process sim backend: take-over, the robot-wide speed factor,
relative Cartesian moves."""

from __future__ import annotations

import numpy as np
import pytest
import robohal
from robohal import spatial
from robohal.control.backend import wait_until
from robohal.control.guard import SetpointGuard
from robohal.errors import InvalidArgument

IRB = "sim://?model=abb.irb2400&realtime=0&rate=250"
CHECKS = ("position", "velocity", "acceleration", "jerk")


def record_sent(backend) -> list[np.ndarray]:
    """Every setpoint the backend puts on its (simulated) wire, in order."""
    sent: list[np.ndarray] = []
    send = backend._send

    def recording(q):
        sent.append(np.array(q))
        send(q)

    backend._send = recording
    return sent


def passes_a_fresh_guard(sent, start, model, period) -> None:
    judge = SetpointGuard(model.limits, period, CHECKS)
    judge.reset(start)
    for q in sent:
        judge.commit(judge.check(q))


def test_a_new_move_takes_over_the_running_one_without_a_stop():
    with robohal.connect(IRB) as robot:
        start = robot.backend.commanded
        sent = record_sent(robot.backend)
        first_target = np.radians([60, 20, 0, 0, 0, 0])
        robot.move_joints(first_target, speed=1.0, wait=False)
        first = robot.backend._last_job
        assert wait_until(lambda: len(sent) >= 60, timeout=30.0)
        second = robot.move_joints(np.radians([-20, 0, 10, 0, 0, 0]), speed=1.0)
        assert second.completed and np.allclose(second.commanded[-1], np.radians([-20, 0, 10, 0, 0, 0]))
        assert first.result.taken_over and not first.result.completed
        switch = first.result.cycles
        speeds = np.abs(np.diff(np.array(sent), axis=0)).max(axis=1) / robot.backend.period
        assert speeds[switch - 5:switch + 5].min() > 0.05, "no stop at the take-over"
        passes_a_fresh_guard(sent, start, robot.model, robot.backend.period)


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
