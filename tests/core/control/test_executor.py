"""The motion executor on its own: no thread, no wire. A test plays the owner: it asks for a
setpoint, "sends" it (commits it to the guard, as a backend does), reports a state back."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import robohal
from robohal.control.executor import SETTLE_CYCLES, MotionExecutor
from robohal.control.guard import SetpointGuard
from robohal.errors import LimitViolation
from robohal.motion import Hold, JointTrajectory, PointToPoint
from robohal.state import RobotMode, RobotState

PERIOD = 0.004
CHECKS = ("position", "velocity", "acceleration", "jerk")


@pytest.fixture
def model():
    return robohal.get_model("abb.irb2400")


def rest(model) -> np.ndarray:
    return np.zeros(model.dof)


def state_at(q: np.ndarray, k: int) -> RobotState:
    return RobotState(time=k * PERIOD, q=q, dq=np.zeros_like(q), mode=RobotMode.MOVING)


def drive(executor: MotionExecutor, guard: SetpointGuard, *, stop_after: int | None = None,
          fail_after: tuple[int, BaseException] | None = None, limit: int = 10_000) -> list[np.ndarray]:
    """Run the executor as a backend would; return every setpoint sent."""
    state = state_at(guard.last, 0)
    executor.start(state, guard.last)
    sent = []
    while (q := executor.next(state)) is not None:
        if stop_after is not None and len(sent) == stop_after:
            executor.stop()
        if fail_after is not None and len(sent) == fail_after[0]:
            executor.fail(fail_after[1])  # the wire failed: this setpoint never went out
            fail_after = None
            continue
        guard.commit(q)
        sent.append(q)
        state = state_at(q, len(sent))
        executor.sent(state, q)
        assert len(sent) < limit, "the executor never ended"
    return sent


def within_limits(sent: list[np.ndarray], start: np.ndarray, model) -> None:
    """Every sent setpoint, one after another from rest at ``start``, passes a fresh guard."""
    judge = SetpointGuard(model.limits, PERIOD, CHECKS)
    judge.reset(start)
    for q in sent:
        judge.commit(judge.check(q))


def test_a_motion_runs_to_its_end_through_the_guard_and_is_recorded(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(rest(model))
    target = np.radians([20, 10, -10, 30, 20, 45])
    executor = MotionExecutor(PointToPoint(target), guard, model)
    sent = drive(executor, guard)
    result = executor.finish()
    assert result.completed and not result.stopped
    assert np.array_equal(sent[-1], target) and result.cycles == len(sent)
    assert np.array_equal(result.commanded, np.array(sent))
    within_limits(sent, rest(model), model)


def test_finish_at_rest_brakes_the_last_micro_radians_without_recording_them(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(rest(model))
    target = np.radians([20, 10, -10, 30, 20, 45])
    planned = PointToPoint(target).plan(rest(model), model, PERIOD)
    executor = MotionExecutor(PointToPoint(target), guard, model, finish_at_rest=True)
    sent = drive(executor, guard)
    assert len(sent) > len(planned) and guard.at_rest()
    assert executor.finish().cycles == len(planned)  # the brake is not part of the motion
    assert np.abs(sent[-1] - target).max() < 1e-6
    within_limits(sent, rest(model), model)


def test_stop_brakes_to_rest_within_the_limits_and_settles(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(rest(model))
    executor = MotionExecutor(PointToPoint(np.radians([90, 0, 0, 0, 0, 0])), guard, model)
    sent = drive(executor, guard, stop_after=60)
    result = executor.finish()
    assert result.stopped and not result.completed and result.cycles == len(sent)
    assert abs(sent[-1][0]) < np.radians(89), "stopped on the way"
    assert all(np.array_equal(q, sent[-1]) for q in sent[-SETTLE_CYCLES - 1:]), "settled at rest"
    assert guard.at_rest()
    within_limits(sent, rest(model), model)


def test_a_refused_setpoint_is_never_sent_the_arm_brakes_and_the_error_is_raised(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(rest(model))
    t = np.arange(1, 101) * PERIOD  # joint 1 speeds up smoothly to 1 rad/s over 0.4 s
    speeding = np.zeros((100, 6))
    speeding[:, 0] = 0.5 * (t - 0.4 / np.pi * np.sin(np.pi * t / 0.4))
    jump = speeding[-1] + np.array([0.3, 0, 0, 0, 0, 0])
    executor = MotionExecutor(JointTrajectory(np.vstack([speeding, jump])), guard, model)
    sent = drive(executor, guard)
    assert not any(np.array_equal(q, jump) for q in sent)
    assert len(sent) > 100 and guard.at_rest() and sent[-1][0] > speeding[-1][0], "braked, not stopped dead"
    with pytest.raises(LimitViolation) as raised:
        executor.finish()
    assert any("braked to rest" in note for note in raised.value.__notes__)
    within_limits(sent, rest(model), model)


def test_an_error_from_the_wire_brakes_from_the_last_setpoint_sent(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(rest(model))
    executor = MotionExecutor(PointToPoint(np.radians([90, 0, 0, 0, 0, 0])), guard, model)
    sent = drive(executor, guard, fail_after=(50, KeyboardInterrupt()))
    assert len(sent) > 50 and guard.at_rest()
    with pytest.raises(KeyboardInterrupt):
        executor.finish()
    within_limits(sent, rest(model), model)


def test_an_error_while_braking_ends_the_brake_and_is_noted(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(rest(model))
    executor = MotionExecutor(PointToPoint(np.radians([90, 0, 0, 0, 0, 0])), guard, model)
    executor.start(state_at(guard.last, 0), guard.last)
    for _ in range(50):
        q = executor.next(state_at(guard.last, 0))
        guard.commit(q)
    executor.fail(RuntimeError("first"))
    guard.commit(executor.next(state_at(guard.last, 0)))  # braking
    executor.fail(KeyboardInterrupt())  # Ctrl-C again, while it brakes
    assert executor.next(state_at(guard.last, 0)) is None
    with pytest.raises(RuntimeError, match="first") as raised:
        executor.finish()
    assert any("braking after this error failed too" in note for note in raised.value.__notes__)


def test_without_a_motion_it_only_brakes_a_moving_stream_to_rest(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(rest(model))
    for k in range(1, 80):  # a stream accelerating joint 1
        guard.commit(np.array([0.5 * 4.0 * (k * PERIOD) ** 2, 0, 0, 0, 0, 0]))
    start = guard.last
    executor = MotionExecutor(None, guard, model, finish_at_rest=True)
    sent = drive(executor, guard)
    assert sent and guard.at_rest() and sent[-1][0] > start[0]
    assert executor.finish().cycles == len(sent)


def test_skipped_cycles_move_the_motion_on_with_the_robot_s_clock(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(rest(model))
    points = np.zeros((10, 6))
    points[:, 0] = 100.0 / 6 * (np.arange(1, 11) * PERIOD) ** 3  # at a constant jerk of 100 rad/s^3
    executor = MotionExecutor(JointTrajectory(points), guard, model)
    state = state_at(guard.last, 0)
    executor.start(state, guard.last)
    guard.commit(executor.next(state))
    executor.skip(state, 3)  # the robot ran three cycles without us: those setpoints are past
    for q in points[1:4]:  # (where the robot's own continuation took it, here the plan exactly)
        guard.commit(q)
    assert np.array_equal(executor.next(state), points[4])


def test_a_prepared_setpoint_that_no_longer_passes_starts_the_brake(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(rest(model))
    executor = MotionExecutor(Hold(1.0), guard, model)
    executor.start(state_at(guard.last, 0), guard.last)
    far = guard.last + 0.5
    assert executor.recheck(far) is None and executor.braking
    assert isinstance(executor.error, LimitViolation)


def test_a_motion_s_own_figures_reach_its_result(model):
    class Reporting(Hold):
        def summary(self):
            return {"held": True}

    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(rest(model))
    executor = MotionExecutor(Reporting(0.02), guard, model)
    drive(executor, guard)
    assert executor.finish().info == {"held": True}


def test_the_executor_is_plain_picklable_data(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(rest(model))
    executor = MotionExecutor(PointToPoint(np.radians([5, 0, 0, 0, 0, 0])), guard, model)
    executor.start(state_at(guard.last, 0), guard.last)
    for _ in range(10):
        guard.commit(executor.next(state_at(guard.last, 0)))
    copy = pickle.loads(pickle.dumps(executor))
    # (the copy's generator plans anew from the same state: equal to round-off)
    assert np.allclose(copy.next(state_at(guard.last, 0)), executor.next(state_at(guard.last, 0)), rtol=0, atol=1e-12)


def take_over_run(first: MotionExecutor, second: MotionExecutor, guard, after: int) -> list[np.ndarray]:
    """Run ``first``; after ``after`` setpoints ``second`` takes over (as a backend's loop does)."""
    state = state_at(guard.last, 0)
    first.start(state, guard.last)
    sent, executor = [], first
    while True:
        if len(sent) == after:
            first.take_over(second)
        q = executor.next(state)
        if q is None:
            if executor.successor is None:
                return sent
            executor.successor.start_after(executor, state)
            executor = executor.successor
            continue
        guard.commit(q)
        sent.append(q)
        state = state_at(q, len(sent))
        executor.sent(state, q)
        assert len(sent) < 10_000


def test_a_motion_that_can_start_moving_takes_over_without_a_stop(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(rest(model))
    first = MotionExecutor(PointToPoint(np.radians([60, 20, 0, 0, 0, 0])), guard, model)
    second = MotionExecutor(PointToPoint(np.radians([-30, 0, 10, 0, 0, 0])), guard, model)
    sent = take_over_run(first, second, guard, after=80)
    speeds = np.abs(np.diff(np.array(sent), axis=0)).max(axis=1) / PERIOD
    assert speeds[70:100].min() > 0.05, "no stop at the take-over"
    assert np.allclose(sent[-1], np.radians([-30, 0, 10, 0, 0, 0]), atol=1e-9)
    assert first.finish().taken_over and first.result().cycles == 80
    assert second.finish().completed
    within_limits(sent, rest(model), model)


def test_a_motion_that_starts_only_from_rest_waits_for_the_brake(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(rest(model))
    first = MotionExecutor(PointToPoint(np.radians([60, 0, 0, 0, 0, 0])), guard, model)
    second = MotionExecutor(Hold(0.1), guard, model)  # starts where the brake came to rest
    sent = take_over_run(first, second, guard, after=80)
    # its result holds the brake it waited for, then the hold itself
    assert second.finish().completed and second.result().cycles > round(0.1 / PERIOD)
    held = np.array(sent[-round(0.1 / PERIOD):])
    assert (held == held[0]).all() and held[0][0] > sent[79][0], "braked on, then held"
    within_limits(sent, rest(model), model)


def test_a_take_over_during_an_error_brake_waits_for_the_rest_and_the_error_stays_the_first_motion_s(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(rest(model))
    first = MotionExecutor(PointToPoint(np.radians([60, 0, 0, 0, 0, 0])), guard, model)
    second = MotionExecutor(PointToPoint(np.zeros(6)), guard, model)
    state = state_at(guard.last, 0)
    first.start(state, guard.last)
    for _ in range(80):
        q = first.next(state)
        guard.commit(q)
    first.fail(RuntimeError("the first motion's error"))
    first.take_over(second)
    sent = []
    while (q := first.next(state)) is not None:  # it brakes to rest first
        guard.commit(q)
        sent.append(q)
    assert guard.at_rest() and len(sent) > 3
    with pytest.raises(RuntimeError, match="first motion's error"):
        first.finish()
    second.start_after(first, state)
    while (q := second.next(state)) is not None:
        guard.commit(q)
    assert second.finish().completed and np.allclose(guard.last, 0.0, atol=1e-9)
