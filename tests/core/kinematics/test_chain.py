"""DH and modified-DH chains: batched forward kinematics, link frames, the analytic
Jacobian, and the numeric inverse; cross-checked against the OPW IRB 1410."""

from __future__ import annotations

import math

import numpy as np
import pytest
import robohal
from robohal.errors import InvalidArgument
from robohal.kinematics import JointLimits, Kinematics, Parallelogram
from robohal.kinematics.chain import DHChain

HALF_PI = math.pi / 2


def seed_irb1410() -> DHChain:
    """The seed's IRB 1410 table (modified DH, millimetres -> metres), geometric joints."""
    return DHChain(a=[0, 0.150, 0.600, 0.120, 0, 0], d=[0.475, 0, 0, 0.720, 0, 0.085],
                   alpha=np.radians([0, -90, 0, -90, 90, 90]), offsets=np.radians([0, -90, 0, 0, -180, 0]),
                   modified=True)


def puma_like() -> DHChain:
    """A classic-DH six-axis arm with non-trivial alphas (not just +-90 deg)."""
    return DHChain(a=[0.0, 0.4318, 0.0203, 0.0, 0.0, 0.0], d=[0.6, 0.0, 0.15, 0.4318, 0.0, 0.05],
                   alpha=[HALF_PI, 0.0, -HALF_PI, HALF_PI, -HALF_PI, 0.0])


def odd_angles() -> DHChain:
    return DHChain(a=[0.1, 0.2, 0.05, 0.1], d=[0.05, 0.1, 0.0, 0.07], alpha=[0.3, -1.1, 2.0, 0.0],
                   offsets=[0.1, -0.2, 0.3, 0.0], modified=True,
                   base=robohal.spatial.pose_from_xyz_rpy([0.1, 0.2, 0.3], [0.1, 0.2, 0.3]),
                   flange=robohal.spatial.pose_from_xyz_rpy([0.0, 0.01, 0.1], [0.0, 0.5, 0.0]))


def test_modified_dh_chain_matches_the_opw_irb1410():
    opw = robohal.get_model("abb.irb1410")
    chain = Parallelogram(seed_irb1410(), 1.0, 1, 2)
    q = np.random.default_rng(0).uniform(-2, 2, (200, 6))
    np.testing.assert_allclose(chain.forward(q), opw.forward(q), atol=1e-12)
    np.testing.assert_allclose(chain.jacobian(q[:5]), opw.jacobian(q[:5]), atol=1e-12)


@pytest.mark.parametrize("make", [seed_irb1410, puma_like, odd_angles])
def test_scalar_and_batched_paths_agree_and_jacobian_is_exact(make):
    chain = make()
    q = np.random.default_rng(1).uniform(-2, 2, (30, chain.dof))
    batch = chain.forward(q)
    for i in range(0, 30, 7):
        np.testing.assert_allclose(chain.forward(q[i]), batch[i], atol=1e-14)
        pose, jac = chain.pose_and_jacobian(q[i])
        np.testing.assert_allclose(pose, batch[i], atol=1e-14)
        np.testing.assert_allclose(jac, Kinematics.jacobian(chain, q[i]), atol=1e-6)
    np.testing.assert_allclose(chain.jacobian(q)[3], chain.jacobian(q[3]), atol=1e-13)
    frames = chain.joint_poses(q)
    assert frames.shape == (30, chain.dof + 1, 4, 4)
    np.testing.assert_allclose(frames[:, -1], batch, atol=1e-14)
    assert chain.forward(q.reshape(5, 6, chain.dof)).shape == (5, 6, 4, 4)


@pytest.mark.parametrize("make", [puma_like, seed_irb1410])
def test_numeric_inverse_finds_verified_solutions_within_limits(make):
    chain = make()
    chain.limits = JointLimits([-2.5] * 6, [2.5] * 6, 2.0, 10.0, 100.0)
    rng = np.random.default_rng(2)
    for q in rng.uniform(-2, 2, (4, 6)):
        pose = chain.forward(q)
        found = chain.inverse(pose)
        assert found.found, found.reason
        assert chain.limits.within(found).all()
        np.testing.assert_allclose(chain.forward(np.asarray(found)), np.broadcast_to(pose, (len(found), 4, 4)), atol=1e-6)
        near = chain.inverse_continuing(pose, q + 0.02)
        np.testing.assert_allclose(near[0], q, atol=1e-6)


def test_numeric_inverse_of_an_unreachable_pose_has_a_reason():
    chain = puma_like()
    pose = np.eye(4)
    pose[:3, 3] = (5.0, 0, 0)
    result = chain.inverse(pose)
    assert not result.found and "target is 5 m from the base; the arm reaches at most" in result.reason
    centre, radius = chain.reach_bound
    pose[:3, 3] = centre + np.array([0.999 * radius, 0.0, 0.0])  # inside the bound, but not with this orientation
    result = chain.inverse(pose)
    assert not result.found and "no joint configuration" in result.reason


def test_bad_tables_and_inputs():
    with pytest.raises(InvalidArgument):
        DHChain([0.1], [0.1, 0.2], [0.0])
    with pytest.raises(InvalidArgument):
        DHChain([np.nan], [0.1], [0.0])
    chain = puma_like()
    with pytest.raises(InvalidArgument):
        chain.forward([0, 0, np.inf, 0, 0, 0])
    with pytest.raises(InvalidArgument):
        chain.forward(np.zeros(5))
    with pytest.raises(InvalidArgument):
        chain.pose_and_jacobian([0, 0, np.nan, 0, 0, 0])


def test_numeric_inverse_batch_is_verified_and_padded():
    chain = puma_like()
    chain.limits = JointLimits([-2.5] * 6, [2.5] * 6, 2.0, 10.0, 100.0)
    q = np.random.default_rng(5).uniform(-2, 2, (12, 6))
    poses = chain.forward(q)
    batch = chain.inverse_batch(poses)
    assert batch.shape == (12, chain.max_solutions, 6)
    found = ~np.isnan(batch[..., 0])
    assert found[:, 0].sum() >= 10  # nearly every pose is solved
    assert not (found[:, 1:] & ~found[:, :-1]).any()  # packed to the front
    reached = chain.forward(batch[found])
    np.testing.assert_allclose(reached, np.repeat(poses, found.sum(axis=1), axis=0), atol=1e-6)
    assert chain.limits.within(batch[found]).all()
