"""The single-pose fast paths (normalised rows, joints picked for a whole-turn
move, one rotation check for both wrists) give what the definitions say, on an
arm whose limits are narrower than a turn on some joints and wider on others."""

from __future__ import annotations

import math

import numpy as np
import pytest
from robohal.kinematics import OPW, JointLimits

IRB2400 = dict(a1=0.100, a2=-0.135, b=0.0, c1=0.615, c2=0.705, c3=0.755, c4=0.085)
# J2, J3 and J5 narrower than [-pi, pi]; J4 and J6 wider than a turn.
LOWER = [-math.pi, -1.7, -1.0, -3.5, -2.0, -7.0]
UPPER = [math.pi, 1.9, 1.1, 3.5, 2.0, 7.0]


@pytest.fixture(scope="module")
def arm() -> OPW:
    limits = JointLimits(lower=LOWER, upper=UPPER, velocity=[2.0] * 6, acceleration=10.0, jerk=200.0)
    return OPW(**IRB2400, offsets=(0, 0, -math.pi / 2, 0, 0, 0), limits=limits)


def _joints(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(LOWER, UPPER, (count, 6))


def _wrapped(a: np.ndarray) -> np.ndarray:
    return (a + math.pi) % (2 * math.pi) - math.pi


def test_inverse_keeps_the_limits_reaches_the_pose_and_sorts_by_the_centre(arm):
    centre = (np.array(LOWER) + np.array(UPPER)) / 2
    for q in _joints(200, 1):
        pose = arm.forward(q)
        solutions = arm.inverse(pose)
        assert solutions.found
        assert ((solutions >= np.array(LOWER)) & (solutions <= np.array(UPPER))).all()
        assert np.allclose(arm.forward(solutions), pose, atol=1e-6)
        distances = np.abs(solutions - centre).sum(axis=1)
        assert (np.diff(distances) >= 0).all()
        # The configuration the pose came from is among them (up to whole turns).
        assert (np.abs(_wrapped(solutions - q)) < 1e-7).all(axis=1).any()


def test_continuing_returns_previous_first_and_moves_wide_joints_next_to_it(arm):
    moved = 0
    for q in _joints(200, 2):
        solutions = arm.inverse_continuing(arm.forward(q), q)
        # q itself is a solution inside the limits: it comes first, whole turns included.
        assert np.allclose(solutions[0], q, atol=1e-7)
        moved += abs(q[5]) > math.pi
        assert ((solutions >= np.array(LOWER)) & (solutions <= np.array(UPPER))).all()
        distances = np.abs(solutions - q).sum(axis=1)
        assert (np.diff(distances) >= 0).all()
    assert moved > 0  # some J6 needed a whole turn to land next to previous


def test_every_arm_branch_gives_both_wrists_and_each_reaches_the_pose():
    # Limits of a whole turn keep every branch; away from the wrist singularity each
    # arm branch (J1-J3) has a flipped and an unflipped wrist.
    arm = OPW(**IRB2400, offsets=(0, 0, -math.pi / 2, 0, 0, 0))
    for q in np.random.default_rng(3).uniform(-math.pi, math.pi, (100, 6)):
        if abs(math.sin(q[4])) < 0.05:
            continue
        pose = arm.forward(q)
        solutions = arm.inverse(pose)
        assert len(solutions) in (2, 4, 6, 8)
        assert np.allclose(arm.forward(solutions), pose, atol=1e-6)
        branches: dict[tuple, list[bool]] = {}
        for s in solutions:
            branches.setdefault(tuple(np.round(s[:3], 9)), []).append(arm.solution_label(s).endswith("wrist flip"))
        assert all(sorted(flips) == [False, True] for flips in branches.values())
