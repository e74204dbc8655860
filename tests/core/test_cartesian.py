"""robohal.cartesian on a core model: a 6-DOF OPW arm (the ABB IRB 2400) on the in-process
sim backend at EGM's 4 ms period. The Franka suite drives the same code on a 7-DOF arm."""

from __future__ import annotations

import numpy as np
import pytest
import robohal
from robohal.cartesian import CartesianBackend

PERIOD = 0.004
Q0 = (0.0, -0.3, 0.4, 0.0, 0.6, 0.0)  # rad: elbow and wrist bent, away from singularities
SIM = f"sim://?model=abb.irb2400&rate={1 / PERIOD:g}&realtime=0&lag=0&q0=" + ",".join(f"{v:g}" for v in Q0)


def within_limits(setpoints: np.ndarray, model, start: np.ndarray) -> None:
    """Finite differences of the whole stream (from rest at ``start``) inside every limit."""
    limits = model.limits
    chain = np.vstack([start, start, start, setpoints])
    assert limits.within(chain).all()
    for order, bound in ((1, limits.velocity), (2, limits.acceleration), (3, limits.jerk)):
        worst = (np.abs(np.diff(chain, order, axis=0)) / PERIOD**order / bound).max()
        assert worst <= 1.0 + 1e-6, f"derivative {order} at {worst:.3f} of its limit"


@pytest.fixture
def arm():
    robot = robohal.connect(SIM)
    try:
        yield CartesianBackend(robot.backend)
    finally:
        robot.close()


def test_a_straight_line_is_tracked_within_the_limits(arm):
    start_q = arm.backend.commanded
    target = arm.pose.copy()
    target[:3, 3] += [0.05, 0.04, -0.03]
    result = arm.move_linear(target, duration=1.0)
    assert result.completed
    within_limits(result.commanded, arm.model, start_q)
    assert result.info["final_position_error"] < 1e-4 and result.info["final_rotation_error"] < 1e-3
    assert np.allclose(arm.pose[:3, 3], target[:3, 3], atol=1e-4)


def test_an_unreachable_target_never_breaks_a_limit(arm):
    """A target 3 m away, streamed: the joints go as far as the box lets them, no error."""
    start_q = arm.backend.commanded
    far = arm.pose.copy()
    far[:3, 3] += [3.0, 0.0, 0.0]
    sent = []
    for _ in range(300):
        arm.cycle(far)
        sent.append(arm.backend.commanded)
    within_limits(np.array(sent), arm.model, start_q)
    assert np.abs(sent[-1] - start_q).max() > 0.05  # it did move toward the target
