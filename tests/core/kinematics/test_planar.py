"""The planar two-link arm: both elbows, the workspace annulus, the rims, reasons."""

from __future__ import annotations

import math

import numpy as np
import pytest
from robohal.errors import InvalidArgument
from robohal.kinematics import JointLimits, Kinematics, PlanarTwoLink


def arm(l1=0.10, l2=0.08, limits=None) -> PlanarTwoLink:
    return PlanarTwoLink(l1, l2, limits)


def test_both_elbow_solutions_reach_the_target_in_radians():
    model = arm()
    rng = np.random.default_rng(0)
    for _ in range(200):
        r = rng.uniform(0.021, 0.179)
        phi = rng.uniform(-np.pi, np.pi)
        target = np.array([r * math.cos(phi), r * math.sin(phi)])
        found = model.inverse_xy(target)
        assert len(found) == 2
        for q in found:
            np.testing.assert_allclose(model.position(q), target, atol=1e-12)  # radians throughout
        assert {model.solution_label(q) for q in found} == {"elbow up", "elbow down"}


def test_the_seed_geometry_in_degrees_matches_a_hand_computation():
    # l1 = 100, l2 = 80 (the sketch's units, here mm -> m), target (15, 30) mm: cos q2 from the law of cosines
    model = arm(0.100, 0.080)
    x, y = 0.015, 0.030
    d = (x * x + y * y - 0.1**2 - 0.08**2) / (2 * 0.1 * 0.08)
    expected_q2 = math.acos(d)
    found = model.inverse_xy([x, y])
    assert sorted(abs(q[1]) for q in found) == pytest.approx([expected_q2, expected_q2])
    assert all(abs(q[0]) < 2 * math.pi for q in found)


def test_annulus_and_reasons():
    model = arm()
    assert model.reach == pytest.approx((0.02, 0.18))
    far = model.inverse_xy([0.2, 0.0])
    assert not far.found and "0.2 m from the base; the arm reaches at most 0.18 m" in far.reason
    near = model.inverse_xy([0.01, 0.0])
    assert not near.found and "0.01 m from the base; the arm cannot fold closer than 0.02 m" in near.reason
    pose = np.eye(4)
    pose[:2, 3] = (0.0, 0.3)
    assert not model.inverse(pose).found
    assert np.isnan(model.inverse_batch(pose)).all()


def test_rims_give_one_solution_and_are_singular():
    model = arm()
    outer = model.inverse_xy([0.18, 0.0])
    assert len(outer) == 1 and model.singularity(outer[0]) == "outer rim"
    inner = model.inverse_xy([0.0, 0.02])
    assert len(inner) == 1 and model.singularity(inner[0]) == "inner rim"
    assert model.solution_label(outer[0]) == "stretched" and model.solution_label(inner[0]) == "folded"
    assert abs(np.linalg.det(model.jacobian(outer[0])[:2])) < 1e-12
    assert model.singularity([0.3, 0.5]) is None
    assert model.singularity(np.array([[0.0, 0.0], [0.0, 1.0]])).tolist() == [True, False]


def test_equal_links_at_the_base_keep_the_previous_shoulder():
    model = arm(0.1, 0.1, JointLimits([-3.2, -3.2], [3.2, 3.2], 1.0, 5.0, 50.0))
    found = model.inverse_xy_continuing([0.0, 0.0], [0.7, 3.0])
    assert len(found) == 1
    assert found[0][0] == pytest.approx(0.7) and found[0][1] == pytest.approx(math.pi)
    np.testing.assert_allclose(model.position(found[0]), [0, 0], atol=1e-15)


def test_limits_continuing_batch_and_jacobian():
    limits = JointLimits.from_degrees([-90, -90], [90, 90], [180, 180])
    model = arm(limits=limits)
    q = np.array([0.3, 0.9])
    pose = model.forward(q)
    cont = model.inverse_continuing(pose, q + 0.01)
    np.testing.assert_allclose(cont[0], q, atol=1e-12)
    assert limits.within(model.inverse(pose)).all()
    qs = np.random.default_rng(1).uniform(-1.5, 1.5, (100, 2))
    batch = model.inverse_batch(model.forward(qs))
    assert batch.shape == (100, 2, 2)
    hit = np.nanmin(np.abs(batch - qs[:, None]).max(axis=-1), axis=1)
    assert (hit < 1e-9).all()
    np.testing.assert_allclose(model.jacobian(q), Kinematics.jacobian(model, q), atol=1e-6)
    np.testing.assert_allclose(model.joint_poses(q)[-1], pose)


def test_bad_input():
    with pytest.raises(InvalidArgument):
        arm(0.0, 0.1)
    with pytest.raises(InvalidArgument):
        arm(math.inf, 0.1)
    model = arm()
    with pytest.raises(InvalidArgument):
        model.inverse_xy([np.nan, 0.1])
    with pytest.raises(InvalidArgument):
        model.inverse_xy([[0.1, 0.0], [0.1, 0.0]])
    with pytest.raises(InvalidArgument):
        model.forward([0.0])
