"""Waypoints passed without stopping: through the online generator at a velocity each point's
neighbours allow, inside every limit, faster than stopping at each point."""

from __future__ import annotations

import numpy as np
import pytest
import robohal
from robohal.control.guard import SetpointGuard
from robohal.errors import InvalidArgument
from robohal.motion import PointToPoint
from robohal.motion.waypoints import Waypoints, pass_velocities

CHECKS = ("position", "velocity", "acceleration", "jerk")
FR3_READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


def run(motion, start, model, period) -> list[np.ndarray]:
    """Step ``motion`` from rest at ``start``, every setpoint through a fresh guard."""
    guard = SetpointGuard(model.limits, period, CHECKS)
    guard.reset(start)
    motion.start(None, start, model, period)
    sent = []
    while (q := motion.step(None)) is not None:
        guard.commit(guard.check(q))
        sent.append(q)
        assert len(sent) < 100_000
    return sent


@pytest.mark.parametrize(("name", "period", "start", "step"), [
    ("franka.fr3", 0.001, FR3_READY, np.full(7, 0.3)),
    ("franka.fr3", 0.001, FR3_READY, np.array([0.3, 0.2, 0.3, -0.2, 0.1, 0.25, 0.3])),  # joint 4 nears its end
    ("franka.fr3", 0.001, FR3_READY, np.array([-0.2, 0.1, 0.2, 0.3, -0.4, 0.3, -0.5])),
    ("abb.irb2400", 0.004, np.radians([0, 10, 10, 0, 30, 0]), np.radians([15, 5, -5, 20, 10, 30])),
])
def test_points_in_a_row_are_passed_faster_than_stopping_at_each(name, period, start, step):
    model = robohal.get_model(name)
    points = np.array([start + step, start + 2 * step, start + 3 * step])
    sent = run(Waypoints(points), start, model, period)
    assert np.array_equal(sent[-1], points[-1])
    stopping = 0
    for a, b in zip([start, *points[:-1]], points, strict=True):
        stopping += len(PointToPoint(b).plan(a, model, period))
    assert len(sent) * 1.3 < stopping
    for point in points[:-1]:  # each point is passed close by, and moving
        k = int(np.argmin(np.abs(np.array(sent) - point).max(axis=1)))
        assert np.abs(sent[k] - point).max() < 0.02
        assert np.abs(sent[k + 1] - sent[k]).max() > 1e-4


def test_a_joint_that_turns_back_at_a_point_stops_there_the_others_pass():
    limits = robohal.get_model("abb.irb2400").limits
    points = np.radians([[20, 10, 0, 0, 0, 0], [40, 0, 0, 0, 0, 0], [60, 10, 0, 0, 0, 0]])
    velocities = pass_velocities(points, limits, np.zeros(6))
    assert velocities[0][0] > 0 and velocities[0][1] == 0.0, "joint 2 turns back at the first point"
    assert velocities[1][0] > 0 and velocities[1][1] == 0.0
    assert not velocities[-1].any(), "at rest on the last"


def test_the_robot_follows_points_without_times_on_the_sim_backend():
    with robohal.connect("sim://?model=abb.irb2400&realtime=0&rate=250") as robot:
        points = np.radians([[10, 5, 0, 0, 20, 0], [20, 10, 0, 0, 20, 0], [30, 15, 0, 0, 20, 0]])
        result = robot.follow(points, speed=1.0)
        assert result.completed and np.array_equal(robot.backend.commanded, points[-1])
        with pytest.raises(InvalidArgument):
            robot.follow(np.zeros((0, 6)))
        with pytest.raises(InvalidArgument):
            robot.follow(np.radians([[10, 5, 0, 0, 20]]))
