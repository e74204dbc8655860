"""The EGM backend's quicker guard must give exactly the core guard's verdicts."""

from __future__ import annotations

import numpy as np
import pytest
import robohal
from hypothesis import given, settings
from hypothesis import strategies as st
from robohal import InvalidArgument, LimitViolation
from robohal.guard import SetpointGuard
from robohal_abb.fastguard import FastSetpointGuard

MODEL = robohal.get_model("abb.irb1410")
PERIOD = 0.004
CHECK_SETS = [("position", "velocity"), ("position", "velocity", "acceleration"),
              ("position", "velocity", "acceleration", "jerk"), ("velocity",)]


def verdict(guard: SetpointGuard, setpoint) -> tuple:
    try:
        return ("ok", np.asarray(guard.check(setpoint)).tolist())
    except LimitViolation as refused:
        return ("refused", refused.joint, refused.quantity, str(refused))
    except InvalidArgument as bad:
        return ("invalid", str(bad))


steps = st.floats(min_value=-0.05, max_value=0.05, allow_nan=False)
odd_values = st.sampled_from([np.nan, np.inf, -np.inf, 10.0, -10.0])


@settings(max_examples=300, deadline=None)
@given(checks=st.sampled_from(CHECK_SETS),
       start=st.lists(st.floats(-0.9, 0.9), min_size=6, max_size=6),
       moves=st.lists(st.lists(steps, min_size=6, max_size=6), min_size=1, max_size=5),
       scale=st.sampled_from([1e-6, 1e-4, 1e-3, 1e-2, 1.0]),
       odd=st.none() | st.tuples(st.integers(0, 5), odd_values))
def test_same_verdicts_as_the_core_guard(checks, start, moves, scale, odd) -> None:
    core = SetpointGuard(MODEL.limits, PERIOD, checks)
    fast = FastSetpointGuard(MODEL.limits, PERIOD, checks)
    q = np.array(start)
    core.reset(q)
    fast.reset(q)
    for k, move in enumerate(moves):
        setpoint = q + scale * np.array(move)
        if odd is not None and k == len(moves) - 1:
            setpoint[odd[0]] = odd[1]
        expected, got = verdict(core, setpoint), verdict(fast, setpoint)
        assert got == expected
        if expected[0] != "ok":
            return
        q = np.array(expected[1])
        core.commit(q)
        fast.commit(q)


@pytest.mark.parametrize("bad", [[0.0] * 5, "x", [[0.0] * 6], None])
def test_malformed_setpoints_get_the_core_errors(bad) -> None:
    core, fast = SetpointGuard(MODEL.limits, PERIOD), FastSetpointGuard(MODEL.limits, PERIOD)
    core.reset(np.zeros(6))
    fast.reset(np.zeros(6))
    assert verdict(fast, bad) == verdict(core, bad)


def test_a_setpoint_exactly_at_the_velocity_limit() -> None:
    """The fast path is a hair stricter; the core decides the borderline and the answer matches."""
    for factor in (1.0, 1.0 + 5e-7, 1.0 + 2e-6):
        core, fast = SetpointGuard(MODEL.limits, PERIOD), FastSetpointGuard(MODEL.limits, PERIOD)
        core.reset(np.zeros(6))
        fast.reset(np.zeros(6))
        q = np.zeros(6)
        q[3] = MODEL.limits.velocity[3] * PERIOD * factor
        assert verdict(fast, q) == verdict(core, q)
