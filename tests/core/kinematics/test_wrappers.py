"""Parallelogram, Tool and Base: each a model of its own, stackable, with the
parallelogram's previous joints, sorting and limits in the controller's joints."""

from __future__ import annotations

import math

import numpy as np
import pytest
from robohal import spatial
from robohal.errors import InvalidArgument
from robohal.kinematics import OPW, Base, JointLimits, Kinematics, Parallelogram, Tool

IRB2400 = dict(a1=0.100, a2=-0.135, b=0.0, c1=0.615, c2=0.705, c3=0.755, c4=0.085, offsets=(0, 0, -math.pi / 2, 0, 0, 0))


def arm(limits: JointLimits | None = None) -> OPW:
    return OPW(**IRB2400, limits=limits)


def test_parallelogram_forward_is_the_seed_definition():
    inner = arm()
    linkage = Parallelogram(inner, scaling=0.7, driven=1, coupled=2)
    q = np.random.default_rng(0).uniform(-1, 1, (50, 6))
    adjusted = q.copy()
    adjusted[:, 2] -= 0.7 * q[:, 1]
    np.testing.assert_allclose(linkage.forward(q), inner.forward(adjusted), atol=1e-15)
    np.testing.assert_allclose(linkage.forward(q[3]), inner.forward(adjusted[3]), atol=1e-15)


def test_parallelogram_inverse_returns_controller_joints():
    linkage = Parallelogram(arm(), scaling=1.0, driven=1, coupled=2)
    rng = np.random.default_rng(1)
    for q in rng.uniform(-0.8, 0.8, (40, 6)):
        pose = linkage.forward(q)
        found = linkage.inverse(pose)
        assert (np.abs(np.asarray(found) - q).max(axis=1) < 1e-9).any()
        np.testing.assert_allclose(linkage.forward(np.asarray(found)), np.broadcast_to(pose, (len(found), 4, 4)), atol=1e-9)


def test_parallelogram_previous_and_sorting_are_in_controller_joints():
    wide = JointLimits([-2 * np.pi] * 6, [2 * np.pi] * 6, 2.0, 10.0, 100.0)
    linkage = Parallelogram(arm(wide), scaling=1.0, driven=1, coupled=2, limits=wide)
    q = np.array([0.2, 0.6, 0.9, 0.1, 0.0, 0.3])  # J5 = 0: the wrist singularity
    pose = linkage.forward(q)
    previous = q + np.array([0.0, 0.0, 0.0, 0.25, 0.0, 0.0])
    found = linkage.inverse_continuing(pose, previous)
    # J4 held at the previous value means previous reached the inner solver correctly converted
    assert found[0][3] == pytest.approx(previous[3], abs=1e-12)
    np.testing.assert_allclose(found[0][:3], q[:3], atol=1e-9)
    np.testing.assert_allclose(linkage.forward(found[0]), pose, atol=1e-9)
    cost = np.abs(np.asarray(found) - previous).sum(axis=1)
    assert (np.diff(cost) >= 0).all()


def test_parallelogram_filters_on_controller_limits_and_on_the_inner_geometry():
    inner_limits = JointLimits.from_degrees([-180, -100, -60, -200, -120, -400], [180, 110, 65, 200, 120, 400], [100] * 6)
    controller = JointLimits.from_degrees([-180, -100, -20, -200, -120, -400], [180, 110, 40, 200, 120, 400], [100] * 6)
    linkage = Parallelogram(arm(inner_limits), 1.0, 1, 2, limits=controller)
    q = np.radians([0, 30, 35, 0, 30, 0])  # inner j3 = 5 deg: fine for both
    assert linkage.inverse(linkage.forward(q)).found
    q_out = np.radians([0, -30, 45, 0, 30, 0])  # controller j3 = 45 > 40: outside the controller's limit
    result = linkage.inverse(arm().forward(np.radians([0, -30, 75, 0, 30, 0])))
    assert all(not np.allclose(row, q_out) for row in result)
    # inner j3 = 70 deg (> 65) although the controller's j3 = 30 is within its range
    pose = arm().forward(np.radians([0, -40, 70, 0, 30, 0]))
    assert all(np.degrees(row[2] - row[1]) <= 65 + 1e-6 for row in linkage.inverse(pose))
    batch = linkage.inverse_batch(pose[None])[0]
    rows = batch[~np.isnan(batch[:, 0])]
    assert controller.within(rows).all() and inner_limits.within(linkage._inner(rows)).all()


def test_parallelogram_jacobian_is_the_chain_rule():
    linkage = Parallelogram(arm(), 0.5, 1, 2)
    q = np.random.default_rng(2).uniform(-1, 1, 6)
    np.testing.assert_allclose(linkage.jacobian(q), Kinematics.jacobian(linkage, q), atol=1e-6)


def test_tool_and_base_stack_and_invert():
    tool = spatial.pose_from_xyz_rpy([0.01, 0.02, 0.15], [0.1, -0.2, 0.3])
    base = spatial.pose_from_xyz_rpy([1.0, -0.5, 0.3], [0.0, 0.0, 1.2])
    stacked = Base(Tool(Parallelogram(arm(), 1.0, 1, 2), tool), base)
    q = np.array([0.3, 0.2, 0.5, 0.4, 0.6, -0.3])
    expected = base @ Parallelogram(arm(), 1.0, 1, 2).forward(q) @ tool
    np.testing.assert_allclose(stacked.forward(q), expected, atol=1e-14)
    found = stacked.inverse(expected)
    assert (np.abs(np.asarray(found) - q).max(axis=1) < 1e-9).any()
    cont = stacked.inverse_continuing(expected, q + 0.01)
    np.testing.assert_allclose(cont[0], q, atol=1e-9)
    np.testing.assert_allclose(stacked.jacobian(q), Kinematics.jacobian(stacked, q), atol=1e-6)
    frames = stacked.joint_poses(q)
    np.testing.assert_allclose(frames[-1], expected, atol=1e-12)
    batch = stacked.inverse_batch(np.stack([expected, expected]))
    assert batch.shape == (2, 8, 6) and (np.abs(batch[0] - q).max(axis=1) < 1e-9).any()
    assert stacked.solution_label(q) == arm().solution_label(np.array([0.3, 0.2, 0.3, 0.4, 0.6, -0.3]))


def test_5dof_through_wrappers():
    along_z = spatial.from_translation([0, 0, 0.2])
    model = Base(Tool(arm(), along_z), spatial.from_translation([0.5, 0, 0]))
    q = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    pose = model.forward(q)
    found = model.inverse_5dof(pose, 0.0)
    assert found.found
    np.testing.assert_allclose(model.forward(found[0])[:3, 3], pose[:3, 3], atol=1e-9)
    assert found[0][5] == 0.0
    tilted = Tool(arm(), spatial.pose_from_xyz_rpy([0, 0, 0.2], [0.3, 0, 0]))
    with pytest.raises(InvalidArgument, match="5-DOF"):
        tilted.inverse_5dof(tilted.forward(q), 0.0)


def test_wrappers_reject_bad_arguments():
    with pytest.raises(InvalidArgument):
        Parallelogram(arm(), 1.0, 1, 1)
    with pytest.raises(InvalidArgument):
        Tool(arm(), np.diag([1.0, 2.0, 1.0, 1.0]))
    with pytest.raises(InvalidArgument):
        Base(object(), np.eye(4))


def test_scalar_frame_and_jacobian_paths_agree_with_forward_and_jacobian():
    tool = spatial.pose_from_xyz_rpy([0.01, 0.02, 0.15], [0.1, -0.2, 0.3])
    base = spatial.pose_from_xyz_rpy([1.0, -0.5, 0.3], [0.2, 0.1, 1.2])
    kr6 = OPW(0.025, -0.035, 0.0, 0.400, 0.315, 0.365, 0.080, offsets=(0, -math.pi / 2, 0, 0, 0, 0),
              signs=(-1, 1, 1, -1, 1, -1))
    models = [arm(), kr6, Parallelogram(arm(), 0.7, 1, 2), Base(Tool(Parallelogram(kr6, 1.0, 1, 2), tool), base)]
    for model in models:
        for q in np.random.default_rng(3).uniform(-2, 2, (5, 6)):
            (x, y, z, p), jac = model.frame_and_jacobian_lists(q.tolist())
            pose = model.forward(q)
            np.testing.assert_allclose(np.array([x, y, z, p]).T, pose[:3], atol=1e-12)
            np.testing.assert_allclose(np.array(jac), model.jacobian(q), atol=1e-12)
            np.testing.assert_allclose(np.array(jac), Kinematics.jacobian(model, q), atol=1e-6)
            frame_only, none = model.frame_and_jacobian_lists(q.tolist(), False)
            assert none is None and np.allclose(np.array(frame_only).T, pose[:3])
