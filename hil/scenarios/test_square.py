"""The same program on every cell: the flange draws a square in the workspace.

The arm first moves to a ready pose of its own (every joint 30 deg from where it starts, towards
the middle of its range: away from the stretched and wrist-straight poses the simulators start
in), then draws a horizontal square through the model's IK, keeping the flange's orientation.
The square lies on the base side of the ready point, so an arm near its reach stays inside it;
where the arm's joint ranges end before that side (a small arm's shoulder), on the other side.
Where neither square's straight lines plan from there (an arm left by an earlier program where
the ready pose puts a side across a joint limit), the ready pose is taken from the middle of the
joint ranges instead, so the scenario does not depend on where the arm was left.
An arm of five joints (the SO-101) keeps an orientation only while its base stays: its square
stands upright in the plane its shoulder turns the arm in, rising from the ready point, towards
the base.
Each side goes to the report with its tracking figures; the commanded flange must stay on the
square and the measured one must end on each corner.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import robohal
from robohal import spatial
from robohal.errors import UnreachableError
from robohal.kinematics import JointLimits, Kinematics
from robohal.motion import plan_linear
from robohal.robot import Robot
from robohal.testing.target import HilTarget

READY_OFFSET = math.radians(30.0)  # rad, per joint
#: rad: a joint this close above the middle of its range counts as at it (and turns up), so a
#: servo that reads a tick or two off the middle gives the same ready pose as one on it
#: (measured: SO-101 starts within 3 ticks of the middle put a side across a limit 1 time in 10)
READY_DEADBAND = 0.01
SIDE = 0.04  # m, at most
SIDE_SHARE = 0.15  # of the flange's distance from the base axis, for small arms
SPEED = 0.05  # m/s along each side
#: m: the commanded flange may leave the square by this much (the IK's round-off and blending)
PATH_TOLERANCE = 0.5e-3
#: m: the measured flange must settle this close to the last corner
END_TOLERANCE = 2e-3


def ready_pose(limits: JointLimits, start: np.ndarray) -> np.ndarray:
    return limits.clip(start + np.where(start <= limits.centre + READY_DEADBAND, 1.0, -1.0) * READY_OFFSET)


def square_corners(point: np.ndarray, upright: np.ndarray | None = None, toward_base: bool = True) -> np.ndarray:
    """A closed square (5, 3) in the horizontal plane through ``point``: one side through it,
    centred on it, across the line to the base axis; the rest towards the base (or away from
    it). With a horizontal axis ``upright``: in the vertical plane through ``point`` across that
    axis, one side rising from ``point``, the rest towards the base (or away from it)."""
    radial = np.array([point[0], point[1], 0.0])
    distance = float(np.linalg.norm(radial))
    inward = -radial / distance if distance > 1e-6 else np.array([-1.0, 0.0, 0.0])
    if not toward_base:
        inward = -inward
    side = min(SIDE, SIDE_SHARE * distance)
    if upright is not None:
        along = np.cross(upright, [0.0, 0.0, 1.0])
        along /= np.linalg.norm(along)
        inward = along if along @ inward >= 0 else -along
        a, b = point, point + np.array([0.0, 0.0, side])
    else:
        across = np.cross([0.0, 0.0, 1.0], inward)
        a = point - across * side / 2
        b = point + across * side / 2
    return np.array([a, b, b + inward * side, a + inward * side, a])


def distance_to_path(points: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """Distance of each point (N, 3) to the nearest side of the closed path ``corners``."""
    a, b = corners[:-1], corners[1:]
    ab = b - a
    t = np.clip(((points[:, None, :] - a) * ab).sum(-1) / (ab * ab).sum(-1), 0.0, 1.0)
    return np.linalg.norm(points[:, None, :] - (a + t[..., None] * ab), axis=-1).min(axis=1)


def flange_pose(point: np.ndarray, orientation: np.ndarray) -> np.ndarray:
    pose = spatial.from_translation(point)
    pose[:3, :3] = orientation
    return pose


def plan_square(model: Kinematics, start: np.ndarray, period: float, dynamics: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The ready pose and the square's corners (5, 3) whose straight lines all plan from it.

    Tried in turn: the ready pose from ``start``, then from the middle of the joint ranges; from
    each, the square towards the base, then away from it. Each side is planned as the arm will
    run it (:func:`plan_linear` from the end of the one before), so an IK that reaches the
    corners but not a side between them picks the next candidate instead of failing mid-square.
    """
    limits = model.limits
    # fewer than six joints: no base turn keeps the orientation (a position-only arm keeps none);
    # the shoulder's axis (joint 2's, the Jacobian's angular part) is across the arm's plane
    five = model.dof < 6 and not model.position_only
    reasons = []
    for ready in (ready_pose(limits, start), ready_pose(limits, limits.centre)):
        flange = model.forward(ready)
        upright = model.jacobian(ready)[3:, 1] if five else None
        for toward_base in (True, False):
            corners = square_corners(flange[:3, 3], upright, toward_base)
            q = ready
            try:
                for corner in corners:
                    q = plan_linear(model, q, flange_pose(corner, flange[:3, :3]), period, SPEED, dynamics=dynamics)[-1]
            except UnreachableError as error:
                reasons.append(f"ready {np.round(ready, 3).tolist()} rad, square {'in' if toward_base else 'out'}ward:"
                               f" {error}")
                continue
            return ready, corners
    raise AssertionError("no square plans on this arm:\n" + "\n".join(reasons))


def test_a_square_in_the_workspace(robot: Robot, hil_target: HilTarget, hil_motion_log) -> None:
    model = robot.model
    ready, corners = plan_square(model, robot.backend.commanded, robot.backend.period, robot.speed)
    ready_flange = model.forward(ready)
    box = hil_target.safety.workspace
    if box is not None:  # said plainly here; the guard's fence would refuse it anyway
        points = np.vstack([model.forward(robot.backend.commanded)[:3, 3], ready_flange[:3, 3], corners])
        outside = points[~box.contains(points)]
        assert not len(outside), (f"the square scenario would take the flange to ({', '.join(f'{v:.3f}' for v in outside[0])})"
                                  f" m, outside the cell's workspace box {box}")
    assert robot.move_joints(ready, speed=0.3).completed

    def pose_at(point: np.ndarray) -> np.ndarray:
        return flange_pose(point, ready_flange[:3, :3])

    robot.move_linear(pose_at(corners[0]), speed=SPEED)
    commanded, tolerance = [], hil_target.spec.position_tolerance
    for n, corner in enumerate(corners[1:], start=1):
        result = robot.move_linear(pose_at(corner), speed=SPEED)
        hil_motion_log.add(f"square side {n}", result)
        assert result.completed, f"side {n} did not complete"
        commanded.append(model.forward(result.commanded)[:, :3, 3])
    off_path = distance_to_path(np.vstack(commanded), corners).max()
    assert off_path <= PATH_TOLERANCE, f"the commanded flange left the square by {1000 * off_path:.2f} mm"
    # the measured arm ends on the last corner once it settles
    deadline = time.monotonic() + hil_target.spec.settle_time + 2.0
    while np.abs(robot.backend.cycle().q - robot.backend.commanded).max() > tolerance and time.monotonic() < deadline:
        pass
    miss = np.linalg.norm(model.forward(robot.state.q)[:3, 3] - corners[-1])
    assert miss <= END_TOLERANCE, f"the measured flange ended {1000 * miss:.2f} mm from the square's last corner"


@pytest.mark.parametrize("point", [[0.5, 0.0, 0.3], [0.0, -0.2, 0.0], [0.0, 0.0, 0.4]])
def test_the_square_lies_on_the_base_side_of_its_point(point) -> None:
    point = np.array(point)
    corners = square_corners(point)
    assert np.allclose(corners[0], corners[-1]) and np.allclose(corners[:, 2], point[2])
    sides = np.linalg.norm(np.diff(corners, axis=0), axis=1)
    assert np.allclose(sides, sides[0])
    assert np.linalg.norm(corners[:, :2], axis=1).max() <= math.hypot(np.linalg.norm(point[:2]), sides[0] / 2) + 1e-12


def test_an_upright_square_stands_across_the_axis_it_is_given() -> None:
    point, axis = np.array([0.2, 0.1, 0.05]), np.array([-0.1, 1.0, 0.0])
    corners = square_corners(point, axis)
    sides = np.diff(corners, axis=0)
    assert np.allclose(corners[0], point) and np.allclose(sides @ axis, 0.0)
    assert np.allclose(sides[:, 2] != 0, [True, False, True, False])  # two sides upright
    assert np.allclose(np.linalg.norm(sides, axis=1), np.linalg.norm(sides[0]))
    assert sides[1] @ point < 0  # towards the base


def test_a_joint_a_few_ticks_off_the_middle_turns_as_one_on_it() -> None:
    limits = robohal.get_model("arm.so101").limits
    ticks = 3 * 2 * math.pi / 4096  # an STS3215's resolution
    for off in (ticks, -ticks):
        np.testing.assert_allclose(ready_pose(limits, limits.centre + off), ready_pose(limits, limits.centre) + off)


def test_an_arm_left_where_no_square_plans_takes_its_ready_pose_from_the_middle() -> None:
    model = robohal.get_model("arm.so101")
    # from here the ready pose puts a side of both squares across a joint limit
    left = np.array([-0.86, 0.18, 0.19, 0.0, -0.42])
    ready = plan_square(model, left, 0.004)[0]
    np.testing.assert_allclose(ready, ready_pose(model.limits, model.limits.centre))
    # from where the arm starts, its own ready pose still holds
    start = model.limits.centre - 0.2
    assert np.array_equal(plan_square(model, start, 0.004)[0], ready_pose(model.limits, start))
