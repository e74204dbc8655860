"""VerticalPlaneArm: a base yaw and a chain in one vertical plane (hobby servo arms), in closed
form: every configuration is found again from its pose, a sideways tool is refused with the reason."""

from __future__ import annotations

import math

import numpy as np
import pytest
from robohal.errors import InvalidArgument
from robohal.kinematics.vertical_plane import VerticalPlaneArm

ARMS = {
    "mearm": VerticalPlaneArm(3, (0.08, 0.08), elbow_from_horizontal=True, zero=(0, math.pi / 2, 0), tool=(0.068, 0)),
    "wrist": VerticalPlaneArm(4, (0.10, 0.10), base_height=0.05, tool_length=0.05),
    "braccio": VerticalPlaneArm(5, (0.125, 0.125), base_height=0.0715, zero=(0, math.pi / 2, 0, 0, 0), tool_length=0.192),
}


@pytest.mark.parametrize("name", list(ARMS))
def test_every_configuration_is_found_from_its_pose(name):
    model = ARMS[name]
    rng = np.random.default_rng(7)
    for q in rng.uniform(-1.3, 1.3, (200, model.dof)):
        pose = model.forward(q)
        found = model.inverse(pose)
        assert any(np.allclose(s, q, atol=1e-7) for s in found), (q, found)
        for solution in found:
            reached = model.forward(solution)
            assert np.allclose(reached[:3, 3], pose[:3, 3], atol=1e-9)
            if not model.position_only:
                assert np.allclose(reached[:3, :3], pose[:3, :3], atol=1e-9)
        assert np.allclose(model.inverse_continuing(pose, q)[0], q, atol=1e-7)


def test_joint_poses_end_at_the_flange_and_the_jacobian_matches_finite_differences():
    model = ARMS["braccio"]
    q = np.array([0.3, -0.4, 0.8, -0.5, 0.2])
    frames = model.joint_poses(q)
    assert frames.shape == (6, 4, 4) and np.allclose(frames[-1], model.forward(q))
    step = 1e-6
    for j in range(5):
        dq = np.zeros(5)
        dq[j] = step
        numeric = (model.forward(q + dq)[:3, 3] - model.forward(q - dq)[:3, 3]) / (2 * step)
        assert np.allclose(model.jacobian(q)[:3, j], numeric, atol=1e-6)


def test_a_tool_pointing_down_is_reached_anywhere_in_reach():
    model = ARMS["braccio"]
    down = np.diag([1.0, -1.0, -1.0])  # z down
    for x, y in ((0.2, 0.0), (0.1, 0.15), (-0.05, 0.2)):
        for yaw in (0.0, 0.7):
            pose = np.eye(4)
            pose[:3, :3] = np.array([[math.cos(yaw), -math.sin(yaw), 0], [math.sin(yaw), math.cos(yaw), 0], [0, 0, 1]]) @ down
            pose[:3, 3] = (x, y, 0.0)  # the table the base stands on
            assert len(model.inverse(pose)) >= 1, (x, y, yaw)


def test_a_tool_turned_sideways_is_refused_with_the_reason():
    model = ARMS["braccio"]
    pose = model.forward(np.array([0.0, -0.3, 0.6, 0.2, 0.0]))
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    pose[:3, :3] = turn @ pose[:3, :3]  # the tool's axis swings out of the base's plane
    found = model.inverse(pose)
    assert len(found) == 0 and "vertical plane" in found.reason


def test_out_of_reach_says_how_far():
    model = ARMS["mearm"]
    pose = np.eye(4)
    pose[:3, 3] = (0.5, 0.0, 0.0)
    found = model.inverse(pose)
    assert len(found) == 0 and "beyond the arm's reach" in found.reason


@pytest.mark.parametrize("kwargs", [dict(dof=6, links=(0.1, 0.1)), dict(dof=3, links=(0.1,)),
                                    dict(dof=3, links=(0.1, 0.1), zero=(0, 0))])
def test_bad_geometry_is_refused(kwargs):
    with pytest.raises(InvalidArgument):
        VerticalPlaneArm(**kwargs)
