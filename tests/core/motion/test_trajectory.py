"""Jerk-limited profiles (DoubleS), their sampling, and the braking step."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from robohal.control.guard import SetpointGuard
from robohal.kinematics import JointLimits
from robohal.motion.trajectory import DoubleS, braking_step, joint_profile, sample_times

LIMITS = JointLimits(lower=[-1.0, -2.0], upper=[1.0, 2.0], velocity=[1.0, 2.0], acceleration=[10.0, 10.0], jerk=[500.0, 500.0])


bounds = st.floats(0.05, 50.0)


@settings(max_examples=60, deadline=None)
@given(bounds, bounds, st.floats(1.0, 5000.0), st.floats(1e-3, 10.0))
def test_double_s_respects_its_bounds_and_lands_exactly(velocity, acceleration, jerk, distance):
    profile = DoubleS(velocity, acceleration, jerk, distance)
    t = np.linspace(0, profile.duration, 4001)
    s, v, a = profile.sample(t)
    assert s[0] == 0 and np.isclose(s[-1], distance, rtol=1e-9)
    assert v.max() <= velocity * (1 + 1e-9) and np.abs(a).max() <= acceleration * (1 + 1e-9)
    assert (np.diff(s) >= -1e-12).all(), "monotonic"
    # jerk from the acceleration samples never exceeds the bound
    dt = t[1] - t[0]
    assert np.abs(np.diff(a) / dt).max() <= jerk * (1 + 1e-6)
    assert v[0] == 0 and abs(v[-1]) < 1e-9


def test_sampled_profile_keeps_finite_differences_inside_the_guard():
    """What the robot checks: finite differences of the sampled setpoints."""
    period = 0.001
    delta = np.array([0.8, -1.5])
    profile = joint_profile(delta, LIMITS.velocity * 0.98, LIMITS.acceleration * 0.98, LIMITS.jerk * 0.98)
    s, _, _ = profile.sample(sample_times(profile.duration, period))
    guard = SetpointGuard(LIMITS, period, checks=("position", "velocity", "acceleration", "jerk"))
    guard.reset([0.0, 0.0])
    for q in s[:, None] * delta:
        guard.commit(guard.check(q))
    assert np.allclose(guard.last, delta)


@pytest.mark.parametrize("period", [0.001, 0.004, 0.02])
def test_braking_stops_within_acceleration_and_jerk(period: float) -> None:
    """Measured the way the guard measures: finite differences of the positions sent,
    from a moving, accelerating start to rest, with no snap of the acceleration at the end."""
    v, a = np.array([0.9, -1.8]), np.array([2.0, -1.0])
    q = np.zeros(2)
    history = [q - v * period - (v - a * period) * period, q - v * period, q]  # a past with exactly v and a
    for _ in range(20000):
        q, v, a = braking_step(q, v, a, LIMITS.acceleration, LIMITS.jerk, period)
        history.append(q.copy())
        if not v.any() and not a.any():
            break
    assert not v.any() and not a.any(), "must come to rest"
    h = np.array(history)
    velocity = np.diff(h, axis=0) / period
    acc = np.diff(velocity, axis=0) / period
    jerk = np.diff(acc, axis=0) / period
    assert (np.abs(acc).max(axis=0) <= LIMITS.acceleration * (1 + 1e-9)).all()
    assert (np.abs(jerk).max(axis=0) <= LIMITS.jerk * (1 + 1e-9)).all()
    assert (np.sign(velocity[2:]) * np.sign(velocity[2]) >= 0).all(), "no reversal on the way to rest"
    assert np.allclose(velocity[-2:], 0.0) and np.allclose(acc[-1], 0.0)
