"""The online generator: time-optimal jerk-limited motion to a target that changes while the
joints move, inside every limit the guard checks, position limits included (ruckig's community
edition has none: robohal keeps them)."""

from __future__ import annotations

import numpy as np
import pytest
import robohal
from robohal.control.guard import SetpointGuard
from robohal.errors import InvalidArgument, LimitViolation
from robohal.motion.online import OnlineGenerator, stopping_distance, stopping_speed
from ruckig import InputParameter, Ruckig, Trajectory

PERIOD = 0.001
CHECKS = ("position", "velocity", "acceleration", "jerk")
READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


@pytest.fixture(scope="module")
def fr3():
    return robohal.get_model("franka.fr3")


def follow(generator: OnlineGenerator, guard: SetpointGuard, cycles: int, on_cycle=None) -> list[np.ndarray]:
    """Step the generator, every setpoint through the guard; ``on_cycle(k)`` may re-target."""
    sent = []
    for k in range(cycles):
        if on_cycle is not None:
            on_cycle(k)
        if generator.finished:
            break
        q = guard.check(generator.step())
        guard.commit(q)
        sent.append(q)
    return sent


def fresh_guard(model, q) -> SetpointGuard:
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(q)
    return guard


def test_a_target_changed_mid_motion_is_reached_without_stopping_and_within_the_limits(fr3):
    generator = OnlineGenerator(fr3.limits, PERIOD)
    generator.reset(READY)
    generator.target(READY + 0.5)
    guard = fresh_guard(fr3, READY)
    second = READY - 0.3

    def retarget(k):
        if k == 300:
            assert np.abs(generator.velocity).max() > 0.5, "moving fast when the target changes"
            generator.target(second)

    sent = follow(generator, guard, 5000, retarget)
    assert generator.finished and np.allclose(sent[-1], second, atol=1e-9)
    speeds = np.abs(np.diff(np.array(sent), axis=0)).max(axis=1) / PERIOD
    assert speeds[295:305].min() > 0.1, "no stop at the change"


def test_from_rest_it_takes_ruckig_s_own_time_optimal_duration(fr3):
    generator = OnlineGenerator(fr3.limits, PERIOD)
    generator.reset(READY)
    target = READY + np.array([0.4, -0.2, 0.3, 0.5, -0.4, 0.2, 0.6])
    generator.target(target)
    sent = follow(generator, fresh_guard(fr3, READY), 5000)
    # ruckig alone, with the same (headroom-scaled) limits and nothing narrowing them
    inp = InputParameter(7)
    inp.current_position, inp.target_position = READY.tolist(), target.tolist()
    inp.max_velocity = (fr3.limits.velocity * 0.98).tolist()
    inp.max_acceleration = (fr3.limits.acceleration * 0.98).tolist()
    inp.max_jerk = (fr3.limits.jerk * 0.98).tolist()
    trajectory = Trajectory(7)
    Ruckig(7, PERIOD).calculate(inp, trajectory)
    assert len(sent) * PERIOD == pytest.approx(trajectory.duration, abs=2 * PERIOD) or \
        len(sent) * PERIOD > trajectory.duration, "never faster than the time-optimal answer"
    assert len(sent) * PERIOD < trajectory.duration * 1.10, "FR3's end-of-travel curves cost a little near the ends"


@pytest.mark.parametrize("joint", range(7))
def test_a_velocity_target_toward_an_end_stops_before_it(fr3, joint):
    generator = OnlineGenerator(fr3.limits, PERIOD)
    start = fr3.limits.clip(READY)
    generator.reset(start)
    speed = np.zeros(7)
    speed[joint] = fr3.limits.velocity[joint]
    generator.velocity_target(speed)
    guard = fresh_guard(fr3, start)
    follow(generator, guard, 6000)  # the guard checks the end-of-travel curve and the range on every setpoint
    assert abs(generator.velocity[joint]) < 1e-6, "it stopped"
    assert fr3.limits.upper[joint] - guard.last[joint] < 0.1, "close to the end, not short of it"


def test_a_velocity_target_on_a_model_without_end_curves_stops_before_its_range_ends():
    model = robohal.get_model("abb.irb2400")
    generator = OnlineGenerator(model.limits, 0.004)
    generator.reset(np.zeros(6))
    generator.velocity_target(-model.limits.velocity * np.array([1, 0, 0, 0, 0, 1]))
    guard = SetpointGuard(model.limits, 0.004, CHECKS)
    guard.reset(np.zeros(6))
    for _ in range(4000):
        guard.commit(guard.check(generator.step()))
    assert np.abs(generator.velocity).max() < 1e-6
    assert (guard.last >= model.limits.lower).all() and guard.last[0] - model.limits.lower[0] < 0.1


def test_hold_brakes_to_rest_and_finishes(fr3):
    step = np.full(7, 0.8 * PERIOD)  # every joint at 0.8 rad/s
    guard = fresh_guard(fr3, READY - 3 * step)
    for k in (2, 1, 0):
        guard.commit(READY - k * step)
    generator = OnlineGenerator(fr3.limits, PERIOD)
    generator.reset(READY, v=np.full(7, 0.8))
    generator.hold()
    sent = follow(generator, guard, 3000)
    assert generator.finished and np.abs(generator.velocity).max() < 1e-9
    assert 10 < len(sent) < 3000
    assert (sent[-1] > READY).all(), "it kept going while it braked"


def test_the_dynamics_factor_slows_everything_alike(fr3):
    durations = []
    for factor in (1.0, 0.5):
        generator = OnlineGenerator(fr3.limits, PERIOD, factor=factor)
        generator.reset(READY)
        generator.target(READY + 0.6)
        durations.append(len(follow(generator, fresh_guard(fr3, READY), 10000)))
    assert durations[1] > 1.3 * durations[0]


def test_bad_targets_are_refused(fr3):
    generator = OnlineGenerator(fr3.limits, PERIOD)
    generator.reset(READY)
    with pytest.raises(LimitViolation):
        generator.target(fr3.limits.upper + 0.1)
    with pytest.raises(LimitViolation):
        generator.velocity_target(fr3.limits.velocity * 1.5)
    with pytest.raises(InvalidArgument, match="NaN"):
        generator.target(np.full(7, np.nan))
    with pytest.raises(InvalidArgument, match="7 values"):
        generator.target(np.zeros(6))
    with pytest.raises(InvalidArgument):
        generator.set_factor(0.0)


@pytest.mark.parametrize("distance", [1e-6, 1e-3, 0.05, 0.5, 3.0])
def test_stopping_speed_and_distance_are_inverse(distance):
    speed = stopping_speed(distance, 5.0, 500.0)
    assert stopping_distance(speed, 5.0, 500.0) == pytest.approx(distance, rel=1e-9)


@pytest.mark.parametrize("name, period", [("abb.irb120", 0.004), ("arduino.planar2", 0.02)])
def test_a_target_at_the_end_given_while_racing_toward_it_is_reached_without_passing_it(name, period):
    model = robohal.get_model(name)
    limits = model.limits
    generator = OnlineGenerator(limits, period)
    start = limits.clip(np.zeros(model.dof))
    generator.reset(start)
    speed = np.zeros(model.dof)
    speed[0] = limits.velocity[0]
    generator.velocity_target(speed)
    guard = SetpointGuard(limits, period, CHECKS)
    guard.reset(start)
    while limits.upper[0] - guard.last[0] > 0.3 * (limits.upper[0] - start[0]):
        guard.commit(guard.check(generator.step()))
    target = guard.last.copy()
    target[0] = limits.upper[0]  # too fast to stop there directly: it must not pass the end
    generator.target(target)
    for _ in range(round(20 / period)):
        if generator.finished:
            break
        guard.commit(guard.check(generator.step()))
    assert generator.finished and guard.last[0] == pytest.approx(limits.upper[0], abs=1e-9)


def test_a_target_where_the_arm_allows_no_speed_toward_it_is_refused(fr3):
    generator = OnlineGenerator(fr3.limits, PERIOD)
    generator.reset(READY)
    target = READY.copy()
    target[3] = fr3.limits.upper[3] - 1e-4  # inside FR3's end-of-travel dead zone of joint 4
    with pytest.raises(LimitViolation, match="too close to"):
        generator.target(target)


def test_a_target_with_a_duration_is_reached_no_sooner(fr3):
    generator = OnlineGenerator(fr3.limits, PERIOD)
    generator.reset(READY)
    target = READY + 0.01
    generator.target(target, duration=0.5)  # far longer than the limits need
    guard = fresh_guard(fr3, READY)
    sent = follow(generator, guard, 2000)
    assert len(sent) == 500 and np.allclose(sent[-1], target) and not np.allclose(sent[-2], target)


def arduino_square_state():
    """The 41st and 42nd samples of a 30 mm square on the servo arm, as a drawing streams them
    (position, velocity, acceleration): the arm slowing toward a corner."""
    from robohal.cli import drawing

    model = robohal.get_model("arduino.planar2")
    plan = drawing.plan_drawing(model, drawing.square(drawing.workspace_middle(model)[0], 0.03), period=0.02)
    rows = [(q, v, a) for q, v, a in zip(plan.joints, drawing.path_velocities(plan.joints, 0.02),
                                          drawing.path_accelerations(plan.joints, 0.02), strict=True)]
    return model, rows[41], rows[42]


def test_a_duration_ruckig_can_only_exceed_many_times_over_is_met_as_early_as_the_limits_allow():
    model, now, then = arduino_square_state()
    # ruckig alone: 19 ms at the earliest, but none from 20 ms (a blocked interval) to 145 ms
    otg, inp, trajectory = Ruckig(2, 0.02), InputParameter(2), Trajectory(2)
    inp.current_position, inp.current_velocity, inp.current_acceleration = (x.tolist() for x in now)
    inp.target_position, inp.target_velocity, inp.target_acceleration = (x.tolist() for x in then)
    inp.max_velocity, inp.max_acceleration, inp.max_jerk = (x.tolist() for x in (
        model.limits.velocity * 0.98, model.limits.acceleration * 0.98, model.limits.jerk * 0.98))
    inp.minimum_duration = 0.02
    otg.calculate(inp, trajectory)
    assert trajectory.duration > 0.1
    generator = OnlineGenerator(model.limits, 0.02)
    generator.reset(*now)
    generator.target(*then, duration=0.02)
    generator.step()
    assert generator.finished, "at the sample within the period (by 19 ms), not 0.1 s late"


def test_bad_durations_and_accelerations_are_refused(fr3):
    generator = OnlineGenerator(fr3.limits, PERIOD)
    generator.reset(READY)
    for duration in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(InvalidArgument, match="duration"):
            generator.target(READY, duration=duration)
    with pytest.raises(InvalidArgument, match="velocity"):
        generator.target(READY, a=np.ones(7))
    with pytest.raises(InvalidArgument, match="NaN"):
        generator.target(READY, np.zeros(7), np.full(7, np.nan))
