"""The setpoint guard: every kind of violation refused before the wire, its history, its one brake, and the robot's account of filled cycles."""

import numpy as np
import pytest
from robohal.control.guard import SetpointGuard
from robohal.errors import InvalidArgument, LimitViolation
from robohal.kinematics import JointLimits

LIMITS = JointLimits(lower=[-1.0, -2.0], upper=[1.0, 2.0], velocity=[1.0, 2.0], acceleration=[10.0, 10.0], jerk=[500.0, 500.0])


def test_guard_refuses_each_kind_of_violation_and_names_the_joint():
    guard = SetpointGuard(LIMITS, 0.001, checks=("position", "velocity", "acceleration", "jerk"))
    guard.reset([0.0, 0.0])
    with pytest.raises(LimitViolation) as position:
        guard.check([1.2, 0.0])
    assert (position.value.joint, position.value.quantity) == (0, "position")
    with pytest.raises(LimitViolation) as velocity:
        guard.check([0.0, 0.003])  # 3 rad/s > 2
    assert (velocity.value.joint, velocity.value.quantity) == (1, "velocity")
    with pytest.raises(LimitViolation) as acceleration:
        guard.check([0.0, 0.00002])  # 20 rad/s^2 > 10 after rest
    assert acceleration.value.quantity in ("acceleration", "jerk")
    with pytest.raises(InvalidArgument):
        guard.check([np.nan, 0.0])
    with pytest.raises(InvalidArgument):
        guard.check([0.0, 0.0, 0.0])


def test_guard_with_position_check_only_accepts_jumps():
    guard = SetpointGuard(LIMITS, 0.004, checks=("position",))
    guard.reset([0.0, 0.0])
    guard.check([0.9, -1.9])  # a jump, but within range: allowed by this configuration
    with pytest.raises(LimitViolation):
        guard.check([0.9, -2.1])


def test_guard_history_and_derivatives():
    guard = SetpointGuard(LIMITS, 0.01)
    guard.reset([0.0, 0.0])
    for k in range(1, 4):
        guard.commit(np.array([0.001 * k, 0.0]))
    velocity, acceleration = guard.derivatives()
    assert np.allclose(velocity, [0.1, 0.0]) and np.allclose(acceleration, 0.0)
    assert np.allclose(guard.last, [0.003, 0.0])


def test_after_cycles_the_robot_filled_the_guard_judges_against_the_robot_s_continuation():
    """fill(): the robot continued at constant acceleration; the guard's last setpoint and
    derivatives are that continuation's, the next setpoint is judged against it, and a setpoint
    the robot dropped (drop_newest) leaves the history as the robot keeps it."""
    checks = ("position", "velocity", "acceleration", "jerk")
    dt = 0.001

    def s(k):  # 200 rad/s^3 from rest on joint 1 (within 500)
        return np.array([200.0 * (k * dt) ** 3 / 6, 0.0])

    def run_to(k):
        guard = SetpointGuard(LIMITS, dt, checks)
        guard.reset(s(0))
        for i in range(1, k + 1):
            guard.commit(guard.check(s(i)))
        return guard

    guard = run_to(40)
    v, a = guard.derivatives()
    guard.fill(2)
    assert guard.last[0] == pytest.approx(s(40)[0] + 2 * v[0] * dt + 3 * a[0] * dt**2, abs=1e-15)
    assert guard.derivatives()[1][0] == pytest.approx(a[0])
    with pytest.raises(LimitViolation) as rejoin:
        guard.check(s(43))  # back onto the plan: ten times its jerk after two filled cycles
    assert rejoin.value.quantity == "jerk"
    guard.commit(guard.check(guard.continuation(1) + np.array([200.0 * dt**3, 0.0])))  # on from the robot's

    guard = run_to(40)
    expected = guard.continuation(1, without_newest=True)
    guard.drop_newest()
    guard.fill(1)
    assert np.array_equal(guard.last, expected)


def test_the_guard_brakes_to_rest_within_the_limits():
    """SetpointGuard.brake: every backend's one way to stop. Each step passes the guard's own
    check, the stop ends at rest, and at rest it repeats the last setpoint."""
    guard = SetpointGuard(LIMITS, 0.001, ("position", "velocity", "acceleration", "jerk"))
    guard.reset([0.0, 0.0])
    for k in range(1, 41):  # 180 rad/s^3 for 40 ms: 7.2 rad/s^2, 0.14 rad/s
        guard.commit(guard.check(np.array([30.0, -30.0]) * (k * 1e-3) ** 3))
    assert not guard.at_rest()
    steps = 0
    q, resting = guard.brake()
    while not resting and steps < 2000:
        guard.commit(guard.check(q))
        steps += 1
        q, resting = guard.brake()
    assert resting and steps > 10 and guard.at_rest()
    assert np.array_equal(guard.brake()[0], guard.last)


def test_fences_refuse_after_the_limits_and_the_brake_passes_them_by():
    guard = SetpointGuard(LIMITS, 0.01)
    guard.reset([0.0, 0.0])
    seen = []

    def no_positive_first_joint(q, guard):
        seen.append((q.copy(), guard.last))
        if q[0] > 0.005:
            raise LimitViolation("past the fence", joint=0, quantity="workspace")

    guard.fences.append(no_positive_first_joint)
    guard.commit(guard.check([0.004, 0.0]))
    assert np.allclose(seen[-1][1], [0.0, 0.0]), "a fence sees the last setpoint sent"
    with pytest.raises(LimitViolation) as refused:
        guard.check([0.008, 0.0])
    assert refused.value.quantity == "workspace"
    assert np.allclose(guard.last, [0.004, 0.0]), "a refused setpoint is not recorded"
    with pytest.raises(LimitViolation) as position:  # the limits come first
        guard.check([1.5, 0.0])
    assert position.value.quantity == "position"
    calls = len(seen)
    assert np.allclose(guard.check([0.008, 0.0], fenced=False), [0.008, 0.0])
    assert len(seen) == calls
