"""The planar two-link arm, in closed form.

Joints ``q1`` (shoulder, from the base x axis) and ``q2`` (elbow, relative to
link 1), both counter-clockwise positive about z; links ``l1`` and ``l2``.
Only the xy position of a pose is a task for a two-joint arm: orientation and z
of a target are ignored, and :meth:`forward` reports the tool rotated by q1 + q2.

The arm reaches the annulus ``|l1 - l2| <= r <= l1 + l2``. On the outer rim
(q2 = 0) and the inner rim (q2 = +-pi) the two elbow solutions merge and the
Jacobian loses rank.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument
from .base import Array, Kinematics, Solutions
from .limits import JointLimits
from .numeric import DEFAULT_SEARCH, Search, search_for

# On the rims |D| = 1 within this; there the two elbow solutions are one.
RIM_TOLERANCE = 1e-12
# |D| this close to 1 is on a rim (round-off would leave q2 ~ 1e-8 instead of 0).
RIM_SNAP = 1e-12


class PlanarTwoLink(Kinematics):
    """Two revolute joints in the xy plane."""

    max_solutions = 2
    position_only = True
    closed_form = True

    def __init__(self, l1: float, l2: float, limits: JointLimits | None = None) -> None:
        l1, l2 = spatial.as_number(l1, "l1"), spatial.as_number(l2, "l2")
        # within a sane range (m): squares of lengths near 1e154 overflow in the inverse
        if not (1e-9 <= l1 <= 1e9 and 1e-9 <= l2 <= 1e9):
            raise InvalidArgument(f"link lengths must be within [1e-9, 1e9] m, got l1={l1:g}, l2={l2:g}")
        if limits is not None and not isinstance(limits, JointLimits):
            raise InvalidArgument(f"limits must be JointLimits, got {type(limits).__name__}")
        self.l1 = l1
        self.l2 = l2
        self.dof = 2
        self.limits = limits or JointLimits(
            lower=[-np.pi, -np.pi], upper=[np.pi, np.pi], velocity=3.0, acceleration=30.0, jerk=600.0
        )
        if self.limits.dof != 2:
            raise InvalidArgument("a planar two-link arm needs limits for 2 joints")

    @property
    def reach(self) -> tuple[float, float]:
        """Inner and outer radius of the workspace annulus (m)."""
        return abs(self.l1 - self.l2), self.l1 + self.l2

    def elbow_xy(self, q: ArrayLike) -> Array:
        q = self._joints(q)
        return self.l1 * np.stack([np.cos(q[..., 0]), np.sin(q[..., 0])], -1)

    def position(self, q: ArrayLike) -> Array:
        """End-point (x, y) in metres, (..., 2)."""
        q = self._joints(q)
        q12 = q[..., 0] + q[..., 1]
        return np.stack(
            [self.l1 * np.cos(q[..., 0]) + self.l2 * np.cos(q12), self.l1 * np.sin(q[..., 0]) + self.l2 * np.sin(q12)],
            -1,
        )

    def forward(self, q: ArrayLike) -> Array:
        q = self._joints(q)
        pose = spatial.rotation_z(q[..., 0] + q[..., 1])
        pose[..., :2, 3] = self.position(q)
        return pose

    def joint_poses(self, q: ArrayLike) -> Array:
        q = self._joints(q)
        shoulder = spatial.rotation_z(q[..., 0])
        elbow = spatial.rotation_z(q[..., 0] + q[..., 1])
        elbow[..., :2, 3] = self.elbow_xy(q)
        return np.stack([shoulder, elbow, self.forward(q)], axis=-3)

    def jacobian(self, q: ArrayLike) -> Array:
        q = self._joints(q)
        q1, q12 = q[..., 0], q[..., 0] + q[..., 1]
        jac = np.zeros((*q.shape[:-1], 6, 2))
        jac[..., 0, 0] = -self.l1 * np.sin(q1) - self.l2 * np.sin(q12)
        jac[..., 0, 1] = -self.l2 * np.sin(q12)
        jac[..., 1, 0] = self.l1 * np.cos(q1) + self.l2 * np.cos(q12)
        jac[..., 1, 1] = self.l2 * np.cos(q12)
        jac[..., 5, :] = 1.0
        return jac

    def singularity(self, q: ArrayLike, threshold: float = 1e-6):
        """'outer rim' (arm stretched, q2 = 0), 'inner rim' (folded, q2 = +-pi) or None."""
        q = self._joints(q)
        s2 = np.sin(q[..., 1])
        if q.ndim > 1:
            return np.abs(s2) < threshold
        if abs(s2) >= threshold:
            return None
        return "outer rim" if np.cos(q[1]) > 0 else "inner rim"

    # Inverse kinematics ----------------------------------------------------------------

    def _solve_xy(self, x: Array, y: Array) -> tuple[Array, Array]:
        """Both elbow solutions for arrays of targets: (..., 2, 2), NaN where unreachable."""
        l1, l2 = self.l1, self.l2
        d = (x * x + y * y - l1 * l1 - l2 * l2) / (2 * l1 * l2)
        reachable = np.abs(d) <= 1 + RIM_TOLERANCE
        d = np.clip(d, -1.0, 1.0)
        s = np.sqrt(1 - d * d)
        s = np.where(1 - np.abs(d) < RIM_SNAP, 0.0, s)  # on a rim: exactly stretched or folded
        s[1 - np.abs(d) < RIM_SNAP] = 0.0  # on the rims: exactly stretched or folded
        solutions = []
        for sign in (1.0, -1.0):  # +: elbow on the clockwise side of the base-to-target line
            q2 = np.arctan2(sign * s, d)
            q1 = np.arctan2(y, x) - np.arctan2(l2 * np.sin(q2), l1 + l2 * np.cos(q2))
            q1 = (q1 + np.pi) % (2 * np.pi) - np.pi
            solutions.append(np.stack([q1, q2], -1))
        out = np.stack(solutions, -2)
        out[~reachable] = np.nan
        return out, reachable

    def unreachable_reason(self, x: float, y: float) -> str | None:
        inner, outer = self.reach
        r = float(np.hypot(x, y))
        if r > outer * (1 + 1e-12):
            return f"target is {r:.6g} m from the base; the arm reaches at most {outer:.6g} m"
        if r < inner * (1 - 1e-12):
            return f"target is {r:.6g} m from the base; the arm cannot fold closer than {inner:.6g} m"
        return None

    def _candidates_xy(self, x: float, y: float, previous: list[float] | None) -> tuple[list, str | None]:
        reason = self.unreachable_reason(x, y)
        if reason:
            return [], reason
        if np.hypot(x, y) < 1e-12 and abs(self.l1 - self.l2) < 1e-12:
            # Folded onto the base with equal links: the shoulder angle is free.
            shoulder = previous[0] if previous is not None else float(self.limits.centre[0])
            return [[shoulder, np.pi]], None
        both, _ = self._solve_xy(np.asarray(x), np.asarray(y))
        rows = both.tolist()
        if abs(np.sin(both[0, 1])) < 1e-9:  # on a rim the two solutions are one
            rows = rows[:1]
        return rows, None

    def _candidates(self, pose: Array, previous: Array | None, search: Search = DEFAULT_SEARCH) -> tuple[list, str | None]:
        return self._candidates_xy(float(pose[0, 3]), float(pose[1, 3]), None if previous is None else list(previous))

    def inverse_xy(self, xy: ArrayLike) -> Solutions:
        """Both elbow solutions for an (x, y) target, limit-filtered, sorted by
        distance to the limits' centre; empty with a reason when unreachable."""
        x, y = self._xy(xy)
        rows, reason = self._candidates_xy(x, y, None)
        return self._finish(rows, None, reason)

    def inverse_xy_continuing(self, xy: ArrayLike, previous: ArrayLike) -> Solutions:
        """:meth:`inverse_xy` sorted by distance to ``previous`` (angles moved next to it)."""
        x, y = self._xy(xy)
        prev = self._one_joints(previous, "previous joints").tolist()
        rows, reason = self._candidates_xy(x, y, prev)
        return self._finish(rows, prev, reason)

    @staticmethod
    def _xy(xy: ArrayLike) -> tuple[float, float]:
        target = spatial.as_finite(xy, "xy", last=(2,))
        if target.shape != (2,):
            raise InvalidArgument(f"xy must be one (x, y) target, got shape {target.shape}")
        return float(target[0]), float(target[1])

    def solution_label(self, q: ArrayLike) -> str:
        """'elbow up' (q2 < 0: with y up, the elbow above the base-to-target line),
        'elbow down' (q2 > 0), or 'stretched' / 'folded' on the rims."""
        q = self._one_joints(q)
        s2, c2 = np.sin(q[1]), np.cos(q[1])
        if abs(s2) < 1e-9:
            return "stretched" if c2 > 0 else "folded"
        return "elbow down" if s2 > 0 else "elbow up"

    def inverse_batch(self, poses: ArrayLike, seeds: ArrayLike | None = None, *, path: bool = False,
                      budget: float | None = None, tolerance: float | tuple[float, float] | None = None) -> Array:
        """Both elbow solutions for N poses' xy: (N, 2, 2), NaN where unreachable or
        outside the limits (slot 0: q2 >= 0, slot 1: q2 <= 0). With ``seeds`` or ``path``,
        the one nearest each seed (or the solution before it), as
        :meth:`Kinematics.inverse_batch` says."""
        search = search_for(budget, tolerance)
        if seeds is not None or path:
            return self._nearest_batch(poses, seeds, path, search)
        poses = spatial.as_pose(poses, "poses")
        if poses.ndim == 2:
            poses = poses[None]
        poses = poses.reshape(-1, 4, 4)
        both, _ = self._solve_xy(poses[:, 0, 3], poses[:, 1, 3])
        both[~self.limits.within(both)] = np.nan
        return both
