"""The guard's hot path must give exactly the thorough check's verdicts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from robohal import InvalidArgument, LimitViolation
from robohal.control.guard import SetpointGuard
from robohal.kinematics import JointLimits

LIMITS = JointLimits.from_degrees(
    lower=[-170, -70, -135, -150, -115, -300], upper=[170, 70, 140, 150, 115, 300],
    velocity=[120, 120, 120, 280, 280, 280],
)
PERIOD = 0.004
CHECK_SETS = [("position", "velocity"), ("position", "velocity", "acceleration"),
              ("position", "velocity", "acceleration", "jerk"), ("velocity",)]


def verdict(check, setpoint) -> tuple:
    try:
        return ("ok", np.asarray(check(setpoint)).tolist())
    except LimitViolation as refused:
        return ("refused", refused.joint, refused.quantity, str(refused))
    except InvalidArgument as bad:
        return ("invalid", str(bad))


def walk_both_checks(guard: SetpointGuard, q, moves, scale: float, odd=None) -> None:
    """From rest at ``q``, setpoints ``scale * move`` apart (the last one spoiled by ``odd``):
    the hot path and the thorough check give the same verdict on each, until one is refused."""
    guard.reset(q)
    for k, move in enumerate(moves):
        setpoint = q + scale * np.array(move)
        if odd is not None and k == len(moves) - 1:
            setpoint[odd[0]] = odd[1]
        expected, got = verdict(guard.check_thoroughly, setpoint), verdict(guard.check, setpoint)
        assert got == expected
        if expected[0] != "ok":
            return
        q = np.array(expected[1])
        guard.commit(q)


steps = st.floats(min_value=-0.05, max_value=0.05, allow_nan=False)
odd_values = st.sampled_from([np.nan, np.inf, -np.inf, 10.0, -10.0])


@settings(max_examples=300, deadline=None)
@given(checks=st.sampled_from(CHECK_SETS),
       start=st.lists(st.floats(-0.9, 0.9), min_size=6, max_size=6),
       moves=st.lists(st.lists(steps, min_size=6, max_size=6), min_size=1, max_size=5),
       scale=st.sampled_from([1e-6, 1e-4, 1e-3, 1e-2, 1.0]),
       odd=st.none() | st.tuples(st.integers(0, 5), odd_values))
def test_hot_path_agrees_with_the_thorough_check(checks, start, moves, scale, odd) -> None:
    walk_both_checks(SetpointGuard(LIMITS, PERIOD, checks), np.array(start), moves, scale, odd)


END_LIMITS = JointLimits(LIMITS.lower, LIMITS.upper, LIMITS.velocity, LIMITS.acceleration, LIMITS.jerk,
                         end_deceleration=[6.0, 2.585, 3.5, 4.0, 17.0, 5.5], end_offset=[0.3, 0.2, 0.2, 0.3, 0.35, 0.35])


@settings(max_examples=300, deadline=None)
@given(where=st.lists(st.floats(0.0, 1.0), min_size=6, max_size=6),
       moves=st.lists(st.lists(steps, min_size=6, max_size=6), min_size=1, max_size=5),
       scale=st.sampled_from([1e-4, 1e-3, 1e-2, 0.1]))
def test_hot_path_agrees_near_an_end_of_travel_curve(where, moves, scale) -> None:
    q = END_LIMITS.lower + np.array(where) * (END_LIMITS.upper - END_LIMITS.lower)
    walk_both_checks(SetpointGuard(END_LIMITS, PERIOD, ("position", "velocity")), q, moves, scale)


def test_the_end_of_travel_curve_refuses_what_the_speed_limit_allows() -> None:
    guard = SetpointGuard(END_LIMITS, PERIOD, ("position", "velocity"))
    q = END_LIMITS.upper - 0.05  # 50 mrad short of every upper limit
    guard.reset(q)
    allowed = np.sqrt(2 * END_LIMITS.end_deceleration * 0.05) - END_LIMITS.end_offset  # at the old position
    step = q.copy()
    step[1] += 1.2 * allowed[1] * PERIOD  # far inside 2.1 rad/s, over joint 2's curve (tighter still further on)
    high = np.sqrt(2 * 2.585 * (END_LIMITS.upper[1] - step[1])) - 0.2
    assert 1.2 * allowed[1] < END_LIMITS.velocity[1]
    with pytest.raises(LimitViolation, match=r"joint 2 .*end of travel") as refused:
        guard.check(step)
    assert refused.value.quantity == "velocity" and refused.value.limit == pytest.approx(high)
    away = q.copy()
    away[1] -= 0.9 * END_LIMITS.velocity[1] * PERIOD  # away from the end: the full speed limit
    guard.commit(guard.check(away))


@pytest.mark.parametrize("bad", [[0.0] * 5, "x", [[0.0] * 6], None, np.zeros(5), np.zeros((1, 6))])
def test_malformed_setpoints_get_the_thorough_errors(bad) -> None:
    guard = SetpointGuard(LIMITS, PERIOD)
    guard.reset(np.zeros(6))
    assert verdict(guard.check, bad) == verdict(guard.check_thoroughly, bad)


def test_at_the_velocity_limit_the_thorough_check_decides() -> None:
    for factor in (1.0, 1.0 + 5e-7, 1.0 + 2e-6):
        guard = SetpointGuard(LIMITS, PERIOD)
        guard.reset(np.zeros(6))
        q = np.zeros(6)
        q[3] = LIMITS.velocity[3] * PERIOD * factor
        assert verdict(guard.check, q) == verdict(guard.check_thoroughly, q)


def test_the_hot_path_returns_a_copy() -> None:
    guard = SetpointGuard(LIMITS, PERIOD)
    guard.reset(np.zeros(6))
    setpoint = np.full(6, 1e-5)
    checked = guard.check(setpoint)
    setpoint[0] = 5.0
    assert checked[0] == 1e-5
