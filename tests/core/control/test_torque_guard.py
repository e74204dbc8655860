"""The torque guard: what it refuses before the wire, how it follows the torque the robot applies,
and its brake (damping to rest within every limit, or releasing the torque without a model)."""

from __future__ import annotations

import numpy as np
import pytest
from robohal.control.torque_guard import BRAKE_TIME, REST_CYCLES, REST_SPEED, TorqueGuard
from robohal.errors import InvalidArgument, LimitViolation
from robohal.kinematics import TorqueLimits
from robohal.motion.torque import KnownTerms
from robohal.state import RobotMode, RobotState

PERIOD = 0.001
LIMITS = TorqueLimits([87.0] * 4 + [12.0] * 3, 999.999)
STEP = 999.999 * PERIOD  # Nm per cycle


@pytest.fixture
def guard():
    guard = TorqueGuard(LIMITS, PERIOD)
    guard.reset()
    return guard


def test_a_torque_within_every_limit_passes(guard):
    tau = np.array([STEP, -STEP, 0.5, 0.0, 0.1, -0.2, STEP])
    np.testing.assert_array_equal(guard.check(tau), tau)
    guard.commit(tau)
    np.testing.assert_array_equal(guard.check(tau + STEP * 0.99), tau + STEP * 0.99)


@pytest.mark.parametrize("bad, refusal", [
    ([np.nan, 0, 0, 0, 0, 0, 0], InvalidArgument),
    ([0, 0, np.inf, 0, 0, 0, 0], InvalidArgument),
    ([0, 0, 0, 0, 0, 0], InvalidArgument),  # six joints
    (["a"] * 7, InvalidArgument),
    ([0, 0, 0, 0, 0, 0, 1.01 * STEP], LimitViolation),  # faster than kMaxTorqueRate
])
def test_what_the_robot_would_refuse_is_refused(guard, bad, refusal):
    with pytest.raises(refusal):
        guard.check(bad)


def test_the_torque_limits_are_franka_s_published_ones(guard):
    guard.reset([86.5] * 4 + [11.5] * 3)
    guard.check([87.0] * 4 + [12.0] * 3)  # at the limits: passes
    with pytest.raises(LimitViolation, match=r"joint 5 would be commanded 12\.01 Nm, limit 12 Nm") as refused:
        guard.check([87.0] * 4 + [12.01, 12.0, 12.0])
    assert refused.value.quantity == "torque" and refused.value.joint == 4
    with pytest.raises(LimitViolation, match=r"joint 4's torque would change at") as refused:
        guard.check([87.0, 87.0, 87.0, 85.0, 12.0, 12.0, 12.0])
    assert refused.value.quantity == "torque_rate" and refused.value.joint == 3


def test_a_command_the_robot_dropped_is_not_the_one_judged_from(guard):
    first, second = np.full(7, 0.5), np.full(7, 1.2)
    guard.commit(first)
    guard.commit(second)
    assert not guard.follow_robot(second.astype(np.float32))  # applied: nothing to follow
    assert guard.follow_robot(first.astype(np.float32))  # the robot held the one before (ours came late)
    np.testing.assert_array_equal(guard.last, first)
    with pytest.raises(LimitViolation):
        guard.check(second + STEP * 0.9)  # fine from the dropped one, a jump from the applied one
    assert not guard.follow_robot(np.full(7, 30.0))  # a report matching none of ours changes nothing
    np.testing.assert_array_equal(guard.last, first)


def state(dq) -> RobotState:
    return RobotState(time=0.0, q=np.zeros(7), dq=dq, mode=RobotMode.MOVING)


def test_the_brake_damps_a_moving_arm_to_rest_inside_the_limits():
    mass = np.diag([2.0, 2.5, 1.5, 1.2, 0.3, 0.2, 0.1])
    guard = TorqueGuard(LIMITS, PERIOD)
    guard.reset(np.array([40.0, -20.0, 5.0, 0.0, 3.0, -2.0, 1.0]))  # a motion's last torque
    judge = TorqueGuard(LIMITS, PERIOD)
    judge.reset(guard.last)
    dq = np.array([2.0, -1.5, 1.0, 2.5, 3.0, -2.0, 2.5])
    for cycle in range(5000):  # noqa: B007 (the count is checked after)
        tau, resting = guard.brake(state(dq), KnownTerms(np.zeros(7), mass))
        if resting:
            break
        judge.commit(judge.check(tau))
        guard.commit(tau)
        dq = dq + np.linalg.solve(mass, tau) * PERIOD  # a gravity-compensated arm without friction
    else:
        pytest.fail("the brake never came to rest")
    assert np.abs(dq).max() < REST_SPEED and cycle < 1000
    # the torque handed over is what damps the speed left below REST_SPEED, no more
    assert (np.abs(guard.last) <= np.abs(mass) @ np.full(7, REST_SPEED) / BRAKE_TIME).all()


def test_without_a_model_the_torque_is_released_to_zero_within_the_rate():
    guard = TorqueGuard(LIMITS, PERIOD)
    guard.reset(np.array([30.0, 0, 0, 0, 0, 0, 0]))
    for cycle in range(100):  # noqa: B007 (the count is checked after)
        tau, resting = guard.release(state(np.zeros(7)))
        if resting:
            break
        assert np.abs(tau - guard.last).max() <= STEP
        guard.commit(tau)
    assert resting and guard.last[0] == 0.0 and cycle == 31 + REST_CYCLES - 1
