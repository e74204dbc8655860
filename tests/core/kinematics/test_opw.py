"""OPW: forward and inverse kinematics, cross-checked against py-opw-kinematics
(an independent Rust implementation) on several parameter sets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from robohal.errors import InvalidArgument
from robohal.kinematics import OPW, Constraints, JointLimits, pick_best

py_opw = pytest.importorskip("py_opw_kinematics")

HALF_PI = math.pi / 2
# name: (a1, a2, b, c1, c2, c3, c4), offsets, signs
SETS = {
    "irb2400": ((0.100, -0.135, 0.0, 0.615, 0.705, 0.755, 0.085), (0, 0, -HALF_PI, 0, 0, 0), (1,) * 6),
    "kr6_r700": ((0.025, -0.035, 0.0, 0.400, 0.315, 0.365, 0.080), (0, -HALF_PI, 0, 0, 0, 0), (-1, 1, 1, -1, 1, -1)),
    "tx40": ((0.0, 0.0, 0.035, 0.320, 0.225, 0.225, 0.065), (0, 0, -HALF_PI, 0, 0, 0), (1,) * 6),
    "fanuc_r2000": ((0.720, -0.225, 0.0, 0.600, 1.075, 1.280, 0.235), (0, 0, -HALF_PI, 0, 0, 0), (1,) * 6),
    "tx2_140": ((0.150, 0.0, 0.0, 0.550, 0.625, 0.625, 0.110), (0,) * 6, (1,) * 6),
}


def ours(name: str, limits: JointLimits | None = None) -> OPW:
    lengths, offsets, signs = SETS[name]
    return OPW(*lengths, offsets=offsets, signs=signs, limits=limits)


def peer(name: str):
    lengths, offsets, signs = SETS[name]
    model = py_opw.KinematicModel(*lengths, offsets=tuple(float(o) for o in offsets),
                                  flip_axes=tuple(s < 0 for s in signs))
    return py_opw._internal.Robot(model, False)  # radians, the raw 4x4 interface


def angle_gap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs((np.asarray(a) - np.asarray(b) + np.pi) % (2 * np.pi) - np.pi)


def contains(solutions: np.ndarray, q: np.ndarray, tol: float = 1e-7) -> bool:
    return bool(len(solutions)) and bool((angle_gap(solutions, q).max(axis=-1) < tol).any())


@pytest.mark.parametrize("name", sorted(SETS))
def test_forward_matches_py_opw(name):
    model, other = ours(name), peer(name)
    q = np.random.default_rng(1).uniform(-np.pi, np.pi, (300, 6))
    theirs = np.array([other.forward(tuple(row)) for row in q])
    np.testing.assert_allclose(model.forward(q), theirs, atol=1e-9)
    single = np.array([model.forward(row) for row in q[:20]])
    np.testing.assert_allclose(single, theirs[:20], atol=1e-9)
    batched = other.batch_forward(np.ascontiguousarray(q)).reshape(-1, 4, 4)
    np.testing.assert_allclose(model.forward(q), batched, atol=1e-9)


@pytest.mark.parametrize("name", sorted(SETS))
def test_inverse_holds_every_peer_solution_and_each_reaches_the_pose(name):
    model, other = ours(name), peer(name)
    rng = np.random.default_rng(2)
    for q in rng.uniform(-np.pi, np.pi, (150, 6)):
        pose = model.forward(q)
        found = model.inverse(pose)
        assert found.found and found.reason is None
        assert contains(found, q), "the configuration the pose came from is missing"
        np.testing.assert_allclose(model.forward(np.asarray(found)), np.broadcast_to(pose, (len(found), 4, 4)), atol=1e-9)
        for theirs in other.inverse(pose):
            assert contains(found, np.array(theirs)), f"peer solution {theirs} missing"
        assert (np.abs(found) <= np.pi + 1e-12).all()  # normalised


def test_solutions_are_sorted_by_distance_to_the_limits_centre():
    limits = JointLimits.from_degrees([-90, -60, -60, -180, -120, -200], [170, 100, 120, 180, 120, 200], [100] * 6)
    model = ours("irb2400", limits)
    q = np.radians([20, 10, 30, 40, 50, 60])
    found = model.inverse(model.forward(q))
    cost = np.abs(np.asarray(found) - limits.centre).sum(axis=1)
    assert len(found) >= 2 and (np.diff(cost) >= 0).all()
    assert limits.within(found).all()


def test_limits_filter_solutions_and_an_all_filtered_pose_gives_a_reason():
    narrow = JointLimits.from_degrees([-10] * 6, [10] * 6, [100] * 6)
    model = ours("irb2400", narrow)
    assert model.inverse(model.forward(np.radians([5, 5, 5, 5, 5, 5]))).shape == (1, 6)
    far = ours("irb2400").forward(np.radians([120, 5, 5, 5, 5, 5]))
    result = model.inverse(far)
    assert not result.found and "limits" in result.reason


def test_unreachable_poses_give_no_solutions_with_a_reason():
    for name in SETS:
        model = ours(name)
        pose = np.eye(4)
        pose[:3, 3] = (10.0, 0.0, 0.5)
        result = model.inverse(pose)
        assert result.shape == (0, 6) and "reaches" in result.reason
        assert np.isnan(model.inverse_batch(pose)).all()


def test_a_pose_inside_the_offset_cylinder_is_unreachable():
    model = ours("tx40")  # b = 0.035: the wrist centre can never be on the J1 axis
    pose = np.eye(4)
    pose[:3, 3] = (0.0, 0.0, 0.6 + 0.065)
    result = model.inverse(pose)
    assert not result.found and "offset" in result.reason


@pytest.mark.parametrize("name", ["irb2400", "kr6_r700", "tx40"])
@pytest.mark.parametrize("j5", [0.0, math.pi, -math.pi])
def test_wrist_singularity_keeps_j4_and_the_coupled_sum(name, j5):
    model = ours(name, JointLimits([-4 * np.pi] * 6, [4 * np.pi] * 6, 2.0, 10.0, 100.0))
    theta5 = j5  # with signs +-1 and no J5 offset, J5 = 0/pi is the model's singularity too
    q = np.array([0.3, 0.2, -0.4, 0.7, theta5, -0.5])
    pose = model.forward(q)
    previous = np.array([0.31, 0.21, -0.41, 1.2, theta5 + 0.01, 0.1])
    found = model.inverse_continuing(pose, previous)
    assert found.found
    best = found[0]
    np.testing.assert_allclose(model.forward(best), pose, atol=1e-9)
    assert best[3] == pytest.approx(previous[3], abs=1e-12)  # J4 stays where it was
    s = model.signs
    if j5 == 0.0:  # only s4 J4 + s6 J6 is fixed by the pose
        assert angle_gap(s[3] * best[3] + s[5] * best[5], s[3] * q[3] + s[5] * q[5]) < 1e-9
    else:
        assert angle_gap(s[3] * best[3] - s[5] * best[5], s[3] * q[3] - s[5] * q[5]) < 1e-9
    assert model.singularity(best) == "wrist"
    assert model.singularity(q + np.array([0, 0, 0, 0, 0.01, 0])) is None
    # Without previous it still answers, at the centre of J4's range.
    plain = model.inverse(pose)
    assert plain.found
    np.testing.assert_allclose(model.forward(np.asarray(plain)), np.broadcast_to(pose, (len(plain), 4, 4)), atol=1e-9)


def test_singularity_threshold_is_a_hundredth_of_a_degree():
    model = ours("irb2400")
    q = np.zeros(6)
    q[4] = math.radians(0.009)
    assert model.singularity(q) == "wrist"
    q[4] = math.radians(0.011)
    assert model.singularity(q) is None
    batch = np.zeros((3, 6))
    batch[1, 4] = 0.5
    batch[2, 4] = math.pi - 1e-5
    assert model.singularity(batch).tolist() == [True, False, True]


def test_continuing_moves_angles_next_to_previous_beyond_pi_when_limits_allow():
    limits = JointLimits.from_degrees([-180, -100, -60, -200, -120, -400], [180, 110, 65, 200, 120, 400], [100] * 6)
    model = ours("irb2400", limits)
    q = np.radians([10, 20, 10, 30, 40, 350])  # J6 past +180 deg
    found = model.inverse_continuing(model.forward(q), q + 0.01)
    np.testing.assert_allclose(found[0], q, atol=1e-9)
    # Sorted by distance to previous.
    cost = np.abs(np.asarray(found) - (q + 0.01)).sum(axis=1)
    assert (np.diff(cost) >= 0).all()
    # A previous ten turns away on J6 cannot be followed past the limit.
    far = q.copy()
    far[5] += 20 * np.pi
    moved = model.inverse_continuing(model.forward(q), far)
    assert limits.within(moved).all()


def test_inverse_5dof_keeps_position_and_tool_axis_and_sets_j6():
    model = ours("kr6_r700")
    q = np.array([0.3, -0.2, 0.4, 0.5, 0.6, 0.7])
    pose = model.forward(q)
    found = model.inverse_5dof(pose, j6=-1.0)
    assert found.found
    for row in found:
        assert row[5] == pytest.approx(-1.0)
        reached = model.forward(row)
        np.testing.assert_allclose(reached[:3, 3], pose[:3, 3], atol=1e-9)
        np.testing.assert_allclose(reached[:3, 2], pose[:3, 2], atol=1e-9)
    continuing = model.inverse_continuing_5dof(pose, q + 0.02)
    np.testing.assert_allclose(continuing[0][:5], q[:5], atol=1e-9)
    assert continuing[0][5] == pytest.approx(q[5] + 0.02)


def test_inverse_batch_matches_single_pose_inverse_in_stable_slots():
    model = ours("irb2400")
    rng = np.random.default_rng(5)
    q = rng.uniform(-np.pi, np.pi, (400, 6))
    poses = model.forward(q)
    batch = model.inverse_batch(poses)
    assert batch.shape == (400, 8, 6)
    for i in range(0, 400, 37):
        single = np.asarray(model.inverse(poses[i]))
        rows = batch[i][~np.isnan(batch[i, :, 0])]
        assert len(rows) == len(single)
        for row in single:
            assert contains(rows, row, 1e-9)
    valid = ~np.isnan(batch[..., 0])
    reached = model.forward(batch[valid])
    np.testing.assert_allclose(reached, np.broadcast_to(poses[:, None], (*batch.shape[:2], 4, 4))[valid], atol=1e-9)
    # Each slot is one branch: its label is the same for every pose.
    for slot in range(8):
        labels = {model.solution_label(row) for row in batch[:, slot][valid[:, slot]][:20]}
        assert len(labels) <= 1
    best = pick_best(batch, q)
    np.testing.assert_allclose(angle_gap(best, q), 0, atol=1e-9)


def test_inverse_batch_agrees_with_py_opw_reach():
    model, other = ours("kr6_r700"), peer("kr6_r700")
    q = np.random.default_rng(6).uniform(-np.pi, np.pi, (300, 6))
    poses = model.forward(q)
    batch = model.inverse_batch(poses)
    joints = other.reach(np.ascontiguousarray(poses.reshape(-1, 16)), None, None, 1)[0]
    for i in range(len(q)):
        mine = batch[i][~np.isnan(batch[i, :, 0])]
        for row in joints[i][~np.isnan(joints[i, :, 0])]:
            assert contains(mine, row, 1e-7)


def test_eight_distinct_labels_for_a_general_pose():
    model = ours("irb2400")
    found = model.inverse(model.forward(np.array([0.2, 0.1, 0.3, 0.4, 0.5, 0.6])))
    assert len(found) == 8
    labels = {model.solution_label(row) for row in found}
    assert len(labels) == 8
    assert model.solution_label(np.array([0.0, 0.0, 0.0, 0.0, 0.3, 0.0])) == "front, elbow up, no flip"


def test_joint_poses_end_at_the_flange_and_the_jacobian_matches_finite_differences():
    for name in SETS:
        model = ours(name)
        q = np.random.default_rng(7).uniform(-2, 2, (5, 6))
        frames = model.joint_poses(q)
        assert frames.shape == (5, 7, 4, 4)
        np.testing.assert_allclose(frames[:, -1], model.forward(q), atol=1e-12)
        analytic = model.jacobian(q)
        numeric = np.stack([super(OPW, model).jacobian(row) for row in q])
        np.testing.assert_allclose(analytic, numeric, atol=1e-6)


def test_bad_input_raises_clearly():
    model = ours("irb2400")
    pose = model.forward(np.zeros(6))
    for bad_value in (np.nan, np.inf, -np.inf):
        bad = pose.copy()
        bad[0, 3] = bad_value
        with pytest.raises(InvalidArgument, match="NaN or inf"):
            model.inverse(bad)
        with pytest.raises(InvalidArgument):
            model.inverse_continuing(pose, [0, 0, 0, 0, bad_value, 0])
        with pytest.raises(InvalidArgument):
            model.forward([0, 0, bad_value, 0, 0, 0])
        with pytest.raises(InvalidArgument):
            model.inverse_batch(np.stack([pose, bad]))
    with pytest.raises(InvalidArgument, match="orthonormal"):
        model.inverse(np.diag([2.0, 1.0, 1.0, 1.0]))
    with pytest.raises(InvalidArgument, match="shape"):
        model.inverse(np.eye(3))
    with pytest.raises(InvalidArgument):
        model.forward(np.zeros(5))
    with pytest.raises(InvalidArgument):
        OPW(0.1, 0, 0, 0.5, 0.0, 0.5, 0.1)
    with pytest.raises(InvalidArgument):
        OPW(0.1, 0, 0, 0.5, 0.5, 0.5, 0.1, signs=(1, 1, 2, 1, 1, 1))


def test_constraints_wrap_filter_sort_and_sample():
    c = Constraints.from_degrees([-90, 170, 0, -180, -180, -180], [90, -170, 90, 180, 180, 180], sorting_weight=0.0)
    inside = np.radians([0, 175, 45, 0, 0, 0])
    wrapped = np.radians([0, -175, 45, 0, 0, 0])
    outside = np.radians([0, 0, 45, 0, 0, 0])
    assert c.compliant(np.stack([inside, wrapped, outside])).tolist() == [True, True, False]
    assert np.degrees(c.centre[1]) == pytest.approx(180.0)
    kept = c.filter(np.stack([outside, inside]))
    assert len(kept) == 1
    assert not c.filter(outside[None]).found
    samples = c.random(500, rng=3)
    assert c.compliant(samples).all()
    previous = np.radians([80, 175, 80, 0, 0, 0])
    by_previous = c.sort(np.stack([inside, np.radians([80, 175, 85, 0, 0, 0])]), previous)
    assert np.degrees(by_previous[0][0]) == pytest.approx(80)
    centred = Constraints(c.from_, c.to, sorting_weight=1.0)
    by_centre = centred.sort(np.stack([np.radians([80, 175, 85, 0, 0, 0]), inside]), previous)
    assert np.degrees(by_centre[0][0]) == pytest.approx(0)
    # Attached to a model, they filter and sort its solutions.
    model = OPW(*SETS["irb2400"][0], offsets=SETS["irb2400"][1],
                constraints=Constraints.from_degrees([-30] * 6, [30] * 6, 1.0))
    found = model.inverse(model.forward(np.radians([10, 10, 10, 10, 10, 10])))
    assert len(found) == 1 and model.constraints.compliant(found).all()
