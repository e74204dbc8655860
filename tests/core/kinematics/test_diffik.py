"""Differential IK: IkOptions as the seed specifies, the cycle's joint box (never
empty, never breaking a limit the setpoint guard checks) and whole cycles on FR3."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import robohal
from robohal.control.guard import SetpointGuard
from robohal.errors import InvalidArgument
from robohal.kinematics import JointLimits
from robohal.kinematics.diffik import MAX_POSTURE_RATE, DifferentialIk, IkOptions, cycle_box

READY = np.array([0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2, math.pi / 4])
ALL_CHECKS = ("position", "velocity", "acceleration", "jerk")


def test_ik_options_defaults_and_validation():
    options = IkOptions()
    assert (options.damping, options.nullspace_gain, options.iterations, options.tolerance, options.rotation_weight) == (
        0.05, 1.0, 3, 1e-6, 0.1)
    options.validate()
    IkOptions(nullspace_gain=0.0, tolerance=0.0, rotation_weight=1.0, iterations=1).validate()
    bad = [
        dict(damping=0.0), dict(damping=-1.0), dict(damping=math.inf), dict(damping=math.nan),
        dict(nullspace_gain=-0.1), dict(nullspace_gain=math.inf), dict(nullspace_gain=math.nan),
        dict(tolerance=-1e-9), dict(tolerance=math.inf), dict(tolerance=math.nan),
        dict(rotation_weight=0.0), dict(rotation_weight=1.5), dict(rotation_weight=-0.1), dict(rotation_weight=math.nan),
        dict(iterations=0), dict(iterations=-2),
    ]
    for fields in bad:
        with pytest.raises(InvalidArgument):
            IkOptions(**fields).validate()
    with pytest.raises(AttributeError):
        options.damping = 1.0  # frozen
    assert IkOptions() == IkOptions() and IkOptions(damping=0.1) != IkOptions()


LIMIT_SETS = {
    "fr3_1khz": (JointLimits([-2.9, -0.1, 0.4], [2.9, 0.1, 4.6], [2.62, 2.62, 4.18], [10.0] * 3, [5000.0] * 3), 0.001),
    "abb_egm_250hz": (JointLimits.from_degrees([-180, -10, -60], [180, 10, 65], [150, 150, 450]), 0.004),
    "slow_jerk": (JointLimits([-1.0, -0.02, 0.0], [1.0, 0.02, 0.3], [3.0, 1.0, 2.0], [20.0, 5.0, 8.0], [50.0, 40.0, 30.0]), 0.01),
    "tiny_range": (JointLimits([-0.001, -0.001], [0.001, 0.001], [1.0, 0.01], [100.0, 1.0], [1e4, 10.0]), 0.001),
    "panda_1khz": (JointLimits([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973],
                               [2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973],
                               [2.175] * 4 + [2.61] * 3, [15, 7.5, 10, 12.5, 15, 20, 20],
                               [7500, 3750, 5000, 6250, 7500, 10000, 10000]), 0.001),
}


@pytest.mark.parametrize("name", sorted(LIMIT_SETS))
def test_cycle_box_is_never_empty_and_every_goal_passes_the_guard(name):
    limits, period = LIMIT_SETS[name]
    rng = np.random.default_rng(abs(hash(name)) % 1000)
    for _episode in range(4):
        start = rng.uniform(limits.lower, limits.upper)
        history = np.array([start, start, start])
        guard = SetpointGuard(limits, period, ALL_CHECKS)
        guard.reset(start)
        mode = rng.integers(0, 3, limits.dof)
        for cycle in range(2000):
            lower, upper = cycle_box(limits, period, history)
            assert (lower <= upper + 1e-12).all(), f"empty box at cycle {cycle}"
            if cycle % 150 == 0:
                mode = rng.integers(0, 3, limits.dof)  # push up, push down, or wander
            pick = np.where(mode == 0, upper, np.where(mode == 1, lower, rng.uniform(lower, np.maximum(lower, upper))))
            goal = guard.check(pick)  # raises LimitViolation if any limit breaks
            guard.commit(goal)
            history = np.vstack([history[1:], goal])
        # the pushes reached the position limits: the box is not over-cautious
    assert True


def test_cycle_box_lets_a_joint_reach_full_speed_and_its_position_limit():
    limits, period = LIMIT_SETS["fr3_1khz"]
    history = np.tile([0.0, 0.0, 1.0], (3, 1))
    speeds, positions = [], []
    for _ in range(4000):
        _lower, upper = cycle_box(limits, period, history)
        goal = upper.copy()
        history = np.vstack([history[1:], goal])
        speeds.append((history[2] - history[1]) / period)
        positions.append(goal)
    speeds, positions = np.array(speeds), np.array(positions)
    assert speeds[:, 0].max() > 0.9 * limits.velocity[0]
    assert positions[-1, 0] > limits.upper[0] - 1e-3 and positions[-1, 1] > limits.upper[1] - 1e-3
    assert (positions <= limits.upper + 1e-12).all()


def test_cycle_box_rejects_bad_history():
    limits, period = LIMIT_SETS["fr3_1khz"]
    with pytest.raises(InvalidArgument):
        cycle_box(limits, period, np.zeros((2, 3)))
    with pytest.raises(InvalidArgument):
        cycle_box(limits, period, np.full((3, 3), np.nan))
    with pytest.raises(InvalidArgument):
        cycle_box(limits, 0.0, np.zeros((3, 3)))


def fr3():
    return robohal.get_model("franka.fr3")


def test_cycles_reach_a_pose_within_the_guard():
    model = fr3()
    ik = DifferentialIk(model)
    ik.reset(READY)
    guard = SetpointGuard(model.limits, 0.001, ALL_CHECKS)
    guard.reset(READY)
    target = model.forward(READY)
    target[:3, 3] += [0.05, -0.04, 0.03]
    target[:3, :3] = target[:3, :3] @ robohal.spatial.rotation_x(0.2)[:3, :3]
    for _ in range(2500):
        q = ik.step(target)
        guard.commit(guard.check(q))
        assert ik.history.shape == (3, 7) and np.array_equal(ik.history[-1], q)
    reached = model.forward(q)
    assert np.linalg.norm(reached[:3, 3] - target[:3, 3]) < 1e-4
    assert ik.last_residual < 1e-3


@pytest.mark.parametrize("turns_per_second", [0.2, 1.0])
def test_a_moving_target_is_tracked_without_a_cycle_of_lag_or_lead(turns_per_second):
    # A 5 cm circle: once settled, the flange must sit on the current target, well inside
    # the distance the target moves in one cycle (a box that misjudges the goal's motion
    # leaves the arm a whole cycle behind or ahead of it).
    model = fr3()
    ik = DifferentialIk(model)
    ik.reset(READY)
    centre = model.forward(READY)
    errors = []
    for i in range(2000):
        target = centre.copy()
        angle = 2 * math.pi * turns_per_second * i * ik.period
        target[:3, 3] += 0.05 * np.array([math.cos(angle) - 1, math.sin(angle), 0.0])
        q = ik.step(target)
        errors.append(np.linalg.norm(model.forward(q)[:3, 3] - target[:3, 3]))
    per_cycle = 2 * math.pi * turns_per_second * 0.05 * ik.period
    assert np.median(errors[500:]) < 0.5 * per_cycle


@pytest.mark.parametrize("options", [IkOptions(nullspace_gain=0.0), IkOptions()])
def test_a_target_reached_while_moving_brakes_inside_the_box(options):
    # A target the moving arm already sits on (residual under the tolerance) must not
    # freeze the joints in one cycle: the goal stays in the box and the guard accepts it.
    model = fr3()
    ik = DifferentialIk(model, options)
    ik.reset(READY)
    guard = SetpointGuard(model.limits, ik.period, ALL_CHECKS)
    guard.reset(READY)
    target = model.forward(READY)
    target[:3, 3] += [0.1, 0.0, 0.0]
    for _ in range(300):
        guard.commit(guard.check(ik.step(target)))
    assert np.abs(ik.history[2] - ik.history[1]).max() > 1e-4  # moving fast
    for _ in range(200):
        guard.commit(guard.check(ik.step(model.forward(ik.history[2]))))
    # braked to rest (with the posture pull, only its slow self-motion goes on)
    assert np.abs(ik.history[2] - ik.history[1]).max() < (1e-9 if options.nullspace_gain == 0 else 1e-6)


@pytest.mark.parametrize("direction", [1.0, -1.0])
def test_a_joint_brakes_onto_a_goal_it_can_reach_without_overshooting(direction):
    # A joint running at a static goal it has room to stop at ends on it and never
    # passes it, whatever its speed (the box narrowed toward the goal decides).
    from robohal.kinematics import kernels
    from robohal.kinematics.diffik import BRAKING, SAFETY, _joint_constants, _limit_lists

    limits = fr3().limits
    joint = _joint_constants(_limit_lists(limits), 0.001)[:1]
    braking = BRAKING * SAFETY * limits.acceleration[0]
    t = 0.001
    for speed in np.linspace(0.05, 2.0, 14):
        v0 = -direction * speed
        goal = -direction * (speed**2 / (2 * braking) + 0.01)
        h = [[-2 * v0 * t], [-v0 * t], [0.0]]
        passed = 0.0
        for _ in range(2000):
            lo, hi = kernels.cycle.box(*h, t, joint, [goal], [0.0])
            x = min(max(goal, lo[0]), hi[0])
            h = [h[1], h[2], [x]]
            passed = max(passed, direction * (goal - x))
        assert passed <= 1e-12 and h[2][0] == pytest.approx(goal, abs=1e-9)


def test_every_goal_lies_in_the_cycle_box_of_its_history():
    # The cycle narrows the box toward its goal; it must never widen it, near the limits included.
    model = fr3()
    ik = DifferentialIk(model)
    start = READY.copy()
    start[3] = model.limits.upper[3] - 0.05  # the elbow close to its upper limit
    ik.reset(start)
    rng = np.random.default_rng(5)
    targets = [model.forward(start + rng.normal(0.0, 0.5, 7)) for _ in range(8)]
    clipped = 0
    for i in range(1600):
        lower, upper = cycle_box(model.limits, ik.period, ik.history)
        q = ik.step(targets[i // 200])
        assert np.all(q >= lower - 1e-12) and np.all(q <= upper + 1e-12)
        clipped += int(np.any(np.isclose(q, lower, rtol=0, atol=1e-12) | np.isclose(q, upper, rtol=0, atol=1e-12)))
    assert clipped > 100  # the box decided many of these cycles


def test_posture_pull_is_rate_limited_and_stays_in_the_nullspace():
    model = fr3()
    null = np.linalg.svd(model.jacobian(READY))[2][-1]  # the arm's self-motion direction
    posture = READY + 0.5 * null / np.abs(null).max()
    ik = DifferentialIk(model, IkOptions(nullspace_gain=100.0), posture=posture)
    ik.reset(READY)
    target = model.forward(READY)
    previous = READY.copy()
    for _ in range(600):
        q = ik.step(target)
        # the fastest any joint moves is the posture rate (plus the task's tiny corrections)
        assert np.abs(q - previous).max() <= MAX_POSTURE_RATE * 0.001 * 2.0
        previous = q
    assert np.linalg.norm(q - posture) < np.linalg.norm(READY - posture) - 0.02  # it moved toward the posture ...
    np.testing.assert_allclose(model.forward(q)[:3, 3], target[:3, 3], atol=1e-4)  # ... without losing the pose


def test_stops_early_under_the_tolerance_and_is_picklable():
    model = fr3()
    ik = DifferentialIk(model, IkOptions(nullspace_gain=0.0))
    ik.reset(READY)
    q = ik.step(model.forward(READY))
    np.testing.assert_array_equal(q, READY)
    assert ik.last_residual < 1e-12
    clone = pickle.loads(pickle.dumps(ik))
    target = model.forward(READY)
    target[0, 3] += 0.01
    np.testing.assert_array_equal(clone.step(target), ik.step(target))


def test_unreachable_target_gives_up_orientation_before_position():
    model = fr3()
    ik = DifferentialIk(model)
    ik.reset(READY)
    target = model.forward(READY)
    target[:3, 3] = [0.0, 0.0, 2.0]  # far above: out of reach
    for _ in range(1500):
        q = ik.step(target)
    assert model.limits.within(q)
    assert np.isfinite(ik.last_residual)


def test_bad_arguments():
    model = fr3()
    with pytest.raises(InvalidArgument):
        DifferentialIk(model, IkOptions(damping=0.0))
    with pytest.raises(InvalidArgument):
        DifferentialIk(model, period=0.0)
    ik = DifferentialIk(model)
    with pytest.raises(InvalidArgument):
        ik.step(np.eye(4))  # before reset
    ik.reset(READY)
    with pytest.raises(InvalidArgument):
        ik.step(np.full((4, 4), np.nan))
    with pytest.raises(InvalidArgument):
        ik.reset(np.zeros(6))


def test_converges_at_250_hz_on_a_parallelogram_arm_within_the_guard():
    # EGM rate, jerk limits derived from the speeds: the approach must not stall short of the goal
    model = robohal.get_model("abb.irb1410")
    start = np.radians([0, 10, 20, 0, 30, 0])
    ik = DifferentialIk(model, period=0.004)
    ik.reset(start)
    guard = SetpointGuard(model.limits, 0.004, ALL_CHECKS)
    guard.reset(start)
    target = model.forward(start)
    target[:3, 3] += [0.1, 0.05, -0.05]
    for _ in range(900):
        q = ik.step(target)
        guard.commit(guard.check(q))
    assert ik.last_residual < 1e-6
    np.testing.assert_allclose(model.forward(q), target, atol=1e-6)


def test_a_planar_arm_is_steered_by_x_and_y():
    model = robohal.get_model("arduino.planar2")
    start = np.array([0.3, 0.8])
    ik = DifferentialIk(model, period=0.02)
    ik.reset(start)
    guard = SetpointGuard(model.limits, 0.02, ALL_CHECKS)
    guard.reset(start)
    target = model.forward(start)
    target[:2, 3] += [0.01, -0.02]  # 0.163 m from the base: inside the 0.18 m reach
    target[:3, :3] = robohal.spatial.rotation_z(2.0)[:3, :3]  # an orientation the arm cannot take: ignored
    for _ in range(300):
        q = ik.step(target)
        guard.commit(guard.check(q))
    np.testing.assert_allclose(model.position(q), target[:2, 3], atol=1e-6)
