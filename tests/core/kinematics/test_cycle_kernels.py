"""The control cycle's kernels (robohal.kinematics.kernels: bounds.within_bounds, cycle.pose_error,
cycle.target_motion, cycle.first_goal, cycle.next_goal): compiled and interpreted they agree to the last bit,
and each gives what the plain-Python maths it replaced gives."""

import math

import numpy as np
import pytest
import robohal
from robohal import spatial
from robohal.control.guard import SetpointGuard
from robohal.kinematics import diffik, kernels
from robohal.kinematics.diffik import DifferentialIk

compiled = kernels.load_compiled()
source = kernels.load_source()
compiled_only = pytest.mark.skipif(not compiled.COMPILED, reason="robohal was installed without a C compiler")
BOTH = pytest.mark.parametrize("kernels", [compiled, source], ids=["compiled", "interpreted"])
CHECKS = ("position", "velocity", "acceleration", "jerk")
WEIGHTS = [1.0, 1.0, 1.0, 0.1, 0.1, 0.1]


def _rows(pose):
    return np.asarray(pose).tolist()


def _random_pose(rng, half_turn=False):
    if half_turn:  # exactly or nearly a half turn about a random axis
        axis = rng.normal(size=3)
        angle = math.pi - rng.choice([0.0, 1e-9, 1e-7, 1e-3])
        rotation = spatial.rotvec_to_matrix(axis / np.linalg.norm(axis) * angle)
    else:
        rotation = spatial.rotvec_to_matrix(rng.normal(0, 1.2, 3))
    pose = np.eye(4)
    pose[:3, :3] = rotation
    pose[:3, 3] = rng.normal(0, 0.5, 3)
    return pose


def _frame(pose):
    """A pose as a frame: its (x, y, z, p) columns, as the models' scalar path gives them."""
    return tuple(tuple(pose[:3, j].tolist()) for j in range(4))


def _reference_error(goal, frame, weights):
    """The error and residual as the IK cycle computed them before they were kernels."""
    x, y, z, p = frame
    rx, ry, rz = spatial.rotation_error_rows(goal, x, y, z)
    error = [weights[0] * (goal[0][3] - p[0]), weights[1] * (goal[1][3] - p[1]), weights[2] * (goal[2][3] - p[2]),
             weights[3] * rx, weights[4] * ry, weights[5] * rz]
    total = 0.0
    for e in error:
        total += e * e
    return error, math.sqrt(total)


@compiled_only
def test_the_guards_pass_agrees_compiled_or_not():
    model = robohal.get_model("franka.fr3")  # with end-of-travel curves
    rng = np.random.default_rng(11)
    passed = refused = 0
    for checks in (CHECKS, ("position", "velocity")):
        guard = SetpointGuard(model.limits, 0.001, checks)
        limits = model.limits
        for _ in range(3000):
            q = rng.uniform(limits.lower - 0.01, limits.upper + 0.01)
            step = limits.velocity * 0.001 * rng.choice([0.0, 0.3, 1.0, 1.2])
            a, b, c = (q - k * step * rng.uniform(0.9, 1.1, 7) for k in (3, 2, 1))
            x = q.copy()
            if rng.random() < 0.05:
                x[rng.integers(7)] = rng.choice([np.nan, np.inf, -np.inf])
            arguments = (x.tolist(), a.tolist(), b.tolist(), c.tolist(), guard._packed, *guard._scales)
            verdict = compiled.bounds.within_bounds(*arguments)
            assert verdict == source.bounds.within_bounds(*arguments)
            passed += verdict
            refused += not verdict
    assert passed > 500 and refused > 500  # both verdicts were met often


@BOTH
def test_the_guards_pass_refuses_malformed_lengths(kernels):
    guard = SetpointGuard(robohal.get_model("franka.fr3").limits, 0.001, CHECKS)
    q = [0.0] * 7
    with pytest.raises(ValueError):
        kernels.bounds.within_bounds(q[:6], q, q, q, guard._packed, *guard._scales)
    with pytest.raises(ValueError):
        kernels.bounds.within_bounds(q, q, q, q, guard._packed[:-1], *guard._scales)


@compiled_only
@pytest.mark.parametrize("half_turn", [False, True], ids=["any", "half-turn"])
def test_the_pose_error_is_the_plain_maths_compiled_or_not(half_turn):
    rng = np.random.default_rng(12)
    for _ in range(2000):
        actual = _random_pose(rng)
        goal = actual @ _random_pose(rng, half_turn) if half_turn else _random_pose(rng)
        goal_rows, frame = _rows(goal), _frame(actual)
        expected = _reference_error(goal_rows, frame, WEIGHTS)
        assert compiled.cycle.pose_error(goal_rows, frame, WEIGHTS) == expected
        assert source.cycle.pose_error(goal_rows, frame, WEIGHTS) == expected


@compiled_only
def test_the_target_motion_is_the_plain_maths_compiled_or_not():
    rng = np.random.default_rng(13)
    limit_move, limit_turn = 0.005, 0.02
    jumps = 0
    for _ in range(2000):
        last = _random_pose(rng)
        nudge = _random_pose(rng)
        nudge[:3, :3] = spatial.rotvec_to_matrix(rng.normal(0, rng.choice([1e-3, 0.05]), 3))
        nudge[:3, 3] = rng.normal(0, rng.choice([1e-3, 0.05]), 3)
        goal = nudge @ last
        goal_rows, last_rows = _rows(goal), _rows(last)
        columns = tuple(tuple(last[:3, j].tolist()) for j in range(3))
        rx, ry, rz = spatial.rotation_error_rows(goal_rows, *columns)
        dx, dy, dz = (goal_rows[i][3] - last_rows[i][3] for i in range(3))
        if math.sqrt(dx * dx + dy * dy + dz * dz) > limit_move or math.sqrt(rx * rx + ry * ry + rz * rz) > limit_turn:
            expected = [0.0] * 6
            jumps += 1
        else:
            expected = [w * d for w, d in zip(WEIGHTS, (dx, dy, dz, rx, ry, rz), strict=True)]
        assert compiled.cycle.target_motion(goal_rows, last_rows, WEIGHTS, limit_move, limit_turn) == expected
        assert source.cycle.target_motion(goal_rows, last_rows, WEIGHTS, limit_move, limit_turn) == expected
    assert 200 < jumps < 1800  # jumps and motions both met


@compiled_only
@pytest.mark.parametrize("name", ["franka.fr3", "abb.irb2400"])
def test_the_goal_in_the_box_agrees_compiled_or_not(name):
    model = robohal.get_model(name)
    ik = DifferentialIk(model)
    joints, caps, period = ik._joints, ik._step_caps, ik.period
    rng = np.random.default_rng(14)
    limits = model.limits
    free = held = 0
    for _ in range(1500):
        q = rng.uniform(limits.lower, limits.upper)
        v = rng.uniform(-1, 1, model.dof) * limits.velocity * rng.choice([0.0, 0.1, 0.9])
        h2 = q - v * period
        history = ((2 * h2 - q).tolist(), h2.tolist(), q.tolist())
        scale = rng.choice([0.0, 1e-9, 1e-7, 1e-4, 1e-2])  # steps on along the joints' motion, and off it
        delta, motion = v * period + rng.normal(0, scale, model.dof), v * period + rng.normal(0, scale, model.dof)
        if rng.random() < 0.03:
            delta[rng.integers(model.dof)] = np.nan  # a Jacobian that broke down
        null = None if rng.random() < 0.3 else rng.normal(0, rng.choice([0.0, 1e-3, 1.0]), model.dof).tolist()
        arguments = (q.tolist(), delta.tolist(), motion.tolist(), null, caps, period, 0.5 * period, *history, period,
                     joints)
        goal, inside, lo, hi = compiled.cycle.first_goal(*arguments)
        assert (goal, inside, lo, hi) == source.cycle.first_goal(*arguments)
        assert all(low <= x <= high for x, low, high in zip(goal, lo, hi, strict=True))
        later = compiled.cycle.next_goal(goal, delta.tolist(), lo, hi)
        assert later == source.cycle.next_goal(goal, delta.tolist(), lo, hi)
        free += inside
        held += not inside
    assert free > 100 and held > 100


@BOTH
def test_the_cycle_kernels_refuse_malformed_lengths(kernels):
    q = [0.0] * 7
    frame = _frame(np.eye(4))
    with pytest.raises(ValueError):
        kernels.cycle.pose_error(_rows(np.eye(4))[:2], frame, WEIGHTS)
    with pytest.raises(ValueError):
        kernels.cycle.pose_error(_rows(np.eye(4)), frame[:3], WEIGHTS)
    with pytest.raises(ValueError):
        kernels.cycle.target_motion(_rows(np.eye(4)), [[1.0, 0.0, 0.0]] * 3, WEIGHTS, 1.0, 1.0)
    with pytest.raises(ValueError):
        kernels.cycle.next_goal(q, q[:6], q, q)
    with pytest.raises(ValueError):
        kernels.cycle.next_goal(q, q, q[:6], q)
    with pytest.raises(ValueError):
        kernels.cycle.first_goal(q, q, q[:6], None, q, 0.001, 0.001, q, q, q, 0.001, ())


def test_the_ik_cycle_steers_a_servo_to_the_same_goals_by_rows():
    model = robohal.get_model("franka.fr3")
    start = model.limits.centre
    by_pose, by_rows = DifferentialIk(model), DifferentialIk(model)
    by_pose.reset(start)
    by_rows.reset(start)
    centre = model.forward(start)
    for i in range(300):
        target = centre.copy()
        target[:3, 3] += [0.03 * math.sin(i / 50), 0.0, 0.01]
        np.testing.assert_array_equal(by_pose.step(target), by_rows.step_rows(target.tolist()))
    assert diffik.COMPILED == kernels.COMPILED


@compiled_only
@pytest.mark.parametrize("name", ["franka.fr3", "abb.irb2400"])  # with and without end-of-travel curves
def test_the_online_velocity_bounds_agree_compiled_or_not(name):
    from robohal.motion.online import END_MARGIN, HEADROOM, LEAD_CYCLES, OnlineGenerator

    limits = robohal.get_model(name).limits
    generator = OnlineGenerator(limits, 0.001, factor=0.7)
    rows, v_max = generator._bounds_packed, limits.velocity * HEADROOM * 0.7
    rng = np.random.default_rng(15)
    narrowed = 0
    for _ in range(3000):
        span = limits.upper - limits.lower
        near = rng.choice([0.0, 1e-4, 1e-2, 0.1, 0.5])  # how near an end (share of the range)
        q = np.where(rng.random(limits.dof) < 0.5, limits.lower + near * span * rng.random(limits.dof),
                     limits.upper - near * span * rng.random(limits.dof))
        v = rng.uniform(-1, 1, limits.dof) * v_max * rng.choice([0.0, 0.1, 1.0])
        heading = (rng.normal(0, 1, limits.dof) * rng.choice([0.0, 1.0])).tolist()
        stop = bool(rng.random() < 0.5)
        arguments = (q.tolist(), v.tolist(), heading, rows, stop, 0.001, END_MARGIN, float(LEAD_CYCLES), HEADROOM, 0.7)
        low, high = compiled.bounds.velocity_bounds(*arguments)
        assert (low, high) == source.bounds.velocity_bounds(*arguments)
        assert all(-m <= lo <= 0.0 <= hi <= m for lo, hi, m in zip(low, high, v_max.tolist(), strict=True))
        narrowed += high != v_max.tolist() or low != (-v_max).tolist()
    assert narrowed > 1000
    for distance in (-1.0, 0.0, 1e-9, 1e-4, 0.01, 1.0):
        assert compiled.bounds.stopping_speed(distance, 5.0, 500.0) == source.bounds.stopping_speed(distance, 5.0, 500.0)
