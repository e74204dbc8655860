"""Six-axis arms with a parallel base and a spherical wrist, in closed form (OPW).

Seven lengths describe the arm (metres): ``a1`` (J2 axis ahead of J1), ``a2``
(wrist offset from the forearm, negative when the wrist sits above it), ``b``
(lateral offset), ``c1`` (J2 height), ``c2`` (upper arm), ``c3`` (J3 to the
wrist centre), ``c4`` (wrist centre to flange). At model angles theta = 0 every
link points straight up; the model angle of joint i is
``theta_i = signs[i] * q_i - offsets[i]``.

Frames (the forward kinematics, written as a product of elementary motions)::

    Rz(t1) Trans(a1, b, c1) Ry(t2) Trans(0, 0, c2) Ry(t3) Trans(a2, 0, c3) Rz(t4) Ry(t5) Rz(t6) Trans(0, 0, c4)

The flange frame has z along the approach direction. The inverse gives up to
eight solutions: shoulder (front/back) x elbow (up/down) x wrist (flip/no flip).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument
from .base import Array, Kinematics, Solutions, pose_rows
from .chain import product_constants, product_jacobian, shift, turn
from .constraints import Constraints
from .kernels import common as _common_kernels
from .kernels import opw as _opw
from .limits import JointLimits
from .numeric import DEFAULT_SEARCH, Search, search_for

PI = math.pi
TWO_PI = 2.0 * math.pi
#: J5 this close (rad) to 0 or +-pi counts as the wrist singularity (0.01 deg)
WRIST_SINGULARITY = math.radians(0.01)
# Below this |sin J5| the pose fixes only J4 + J6 (or J4 - J6): J4 is taken from
# ``previous`` (or the centre of its limits) and J6 follows.
WRIST_DEGENERATE = 1e-7
# Closer than this to a singularity two solutions may coincide (then the finisher drops repeats).
NEAR_DEGENERATE = 1e-5
# |cos| of the elbow angle may exceed 1 by this much (round-off on the workspace rim).
RIM_SLACK = 1e-10
# Every solution must reproduce the pose within these (m, and rotation-matrix entries).
VERIFY_POSITION = 1e-6
VERIFY_ROTATION = 1e-6


def _wrap(x: float) -> float:
    """Angle into (-pi, pi]."""
    return PI - (PI - x) % TWO_PI


class OPW(Kinematics):
    """An OPW arm; see the module docstring for the parameters.

    ``offsets`` (rad) and ``signs`` (+1/-1) map the controller's joints to the
    model's angles. ``limits`` default to +-pi on every joint. The geometry
    (lengths, offsets, signs) is fixed at construction: the solvers keep
    constants derived from it. ``limits`` and ``constraints`` may change.
    """

    closed_form = True
    max_solutions = 8
    fixed_attributes = frozenset({"a1", "a2", "b", "c1", "c2", "c3", "c4", "offsets", "signs"})

    def __init__(
        self,
        a1: float,
        a2: float,
        b: float,
        c1: float,
        c2: float,
        c3: float,
        c4: float,
        offsets: Sequence[float] = (0.0,) * 6,
        signs: Sequence[float] = (1,) * 6,
        limits: JointLimits | None = None,
        constraints=None,
    ) -> None:
        lengths = [a1, a2, b, c1, c2, c3, c4]
        if not all(isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool)
                   and math.isfinite(x) for x in lengths):
            raise InvalidArgument(f"OPW lengths must be finite numbers (m), got {lengths}")
        offsets = spatial.as_finite(offsets, "OPW offsets").tolist()
        signs = spatial.as_finite(signs, "OPW signs").tolist()
        if not isinstance(offsets, list) or len(offsets) != 6:
            raise InvalidArgument("OPW offsets must be 6 finite angles (rad)")
        if not isinstance(signs, list) or len(signs) != 6 or any(s not in (1.0, -1.0) for s in signs):
            raise InvalidArgument("OPW signs must be 6 values, each +1 or -1")
        if limits is not None and not isinstance(limits, JointLimits):
            raise InvalidArgument(f"OPW limits must be JointLimits, got {type(limits).__name__}")
        if constraints is not None and not (isinstance(constraints, Constraints) and constraints.dof == 6):
            what = f"{constraints.dof} joints" if isinstance(constraints, Constraints) else type(constraints).__name__
            raise InvalidArgument(f"OPW constraints must be Constraints for 6 joints, got {what}")
        if c2 <= 0 or math.hypot(a2, c3) <= 0:
            raise InvalidArgument("OPW needs c2 > 0 and a non-zero forearm (a2, c3)")
        self.a1, self.a2, self.b, self.c1, self.c2, self.c3, self.c4 = (float(x) for x in lengths)
        self.offsets = tuple(offsets)
        self.signs = tuple(signs)
        self.dof = 6
        self.limits = limits or JointLimits(lower=-PI, upper=PI, velocity=[2.0] * 6, acceleration=10.0, jerk=200.0)
        if self.limits.dof != 6:
            raise InvalidArgument("an OPW arm needs limits for 6 joints")
        self.constraints = constraints
        # Forearm as one link: length k at angle psi from the forearm axis.
        self._k = math.hypot(self.a2, self.c3)
        self._psi = math.atan2(self.a2, self.c3)
        self._offsets = np.array(self.offsets)
        self._constants = (self.a1, self.a2, self.b, self.c1, self.c2, self.c3, self.c4, self._k, self._psi)
        self._signs = np.array(self.signs)
        # The same constants for the kernels (layout: see kernels.opw.OPW_CONSTANTS).
        self._packed = array("d", [*self._constants, *self.signs, *self.offsets, NEAR_DEGENERATE, RIM_SLACK,
                                   VERIFY_POSITION, VERIFY_ROTATION, WRIST_DEGENERATE])
        self._product = self._product_constants()

    def _product_constants(self) -> array:
        """The arm as fixed transforms each followed by a turn about z, for the batched
        Jacobian's kernel: a turn about y is one about z seen through Rx(-90 deg), a joint of
        sign -1 one seen through Rx(180 deg), and each offset a fixed turn about the axis."""
        to_y, from_y = turn("x", 0.0, -1.0), turn("x", 0.0, 1.0)
        about_y = (False, True, True, False, True, False)
        shifts = (shift(0.0, 0.0, 0.0), shift(self.a1, self.b, self.c1), shift(0.0, 0.0, self.c2),
                  shift(self.a2, 0.0, self.c3), shift(0.0, 0.0, 0.0), shift(0.0, 0.0, 0.0))
        fixed, after = [], np.eye(4)
        for move, sideways, sign, offset in zip(shifts, about_y, self.signs, self.offsets, strict=True):
            flip = turn("x", sign, 0.0)  # the identity or Rx(180 deg)
            into = to_y if sideways else np.eye(4)
            fixed.append(after @ move @ into @ turn("z", math.cos(offset), -math.sin(offset)) @ flip)
            after = flip @ (from_y if sideways else np.eye(4))
        return product_constants(fixed, [False] * 6, after @ shift(0.0, 0.0, self.c4))

    def __repr__(self) -> str:
        return (f"OPW(a1={self.a1}, a2={self.a2}, b={self.b}, c1={self.c1}, c2={self.c2}, c3={self.c3},"
                f" c4={self.c4}, offsets={list(self.offsets)}, signs={list(self.signs)})")

    # Joint <-> model angles -----------------------------------------------------------

    def _theta(self, q: Array) -> Array:
        return q * self._signs - self._offsets

    # Forward kinematics -----------------------------------------------------------------

    def _fk_scalar(self, q: list[float]) -> tuple:
        """Flange pose for one configuration: R row-major then p, 12 floats."""
        return _opw.opw_flange(self._packed, q)

    def frame_and_jacobian_lists(self, q: list[float], jacobian: bool = True) -> tuple[tuple, list | None]:
        """Flange frame ``(x, y, z, p)`` columns and the 6 x 6 Jacobian rows (no validation)."""
        m = self._fk_scalar(q)
        x, y, z = (m[0], m[3], m[6]), (m[1], m[4], m[7]), (m[2], m[5], m[8])
        p = (m[9], m[10], m[11])
        if not jacobian:
            return (x, y, z, p), None
        s, o = self.signs, self.offsets
        t1 = s[0] * q[0] - o[0]
        t2 = s[1] * q[1] - o[1]
        t23 = t2 + s[2] * q[2] - o[2]
        t4 = s[3] * q[3] - o[3]
        sn1, cs1 = math.sin(t1), math.cos(t1)
        s23, c23 = math.sin(t23), math.cos(t23)
        sn4, cs4 = math.sin(t4), math.cos(t4)
        # Joint axes and a point on each (see joint_poses).
        across = (-sn1, cs1, 0.0)  # J2 and J3 turn about the upper arm's normal
        o2 = (cs1 * self.a1 - sn1 * self.b, sn1 * self.a1 + cs1 * self.b, self.c1)
        lift = self.c2 * math.sin(t2)
        o3 = (o2[0] + cs1 * lift, o2[1] + sn1 * lift, o2[2] + self.c2 * math.cos(t2))
        wrist = (p[0] - self.c4 * z[0], p[1] - self.c4 * z[1], p[2] - self.c4 * z[2])
        forearm = (cs1 * s23, sn1 * s23, c23)
        bend = (-sn4 * cs1 * c23 - cs4 * sn1, -sn4 * sn1 * c23 + cs4 * cs1, sn4 * s23)
        joints = (((0.0, 0.0, 1.0), (0.0, 0.0, 0.0)), (across, o2), (across, o3), (forearm, wrist), (bend, wrist),
                  (z, wrist))
        jac = [[0.0] * 6 for _ in range(6)]
        for i, ((wx, wy, wz), (ox, oy, oz)) in enumerate(joints):
            sign = s[i]
            rx, ry, rz = p[0] - ox, p[1] - oy, p[2] - oz
            jac[0][i] = sign * (wy * rz - wz * ry)
            jac[1][i] = sign * (wz * rx - wx * rz)
            jac[2][i] = sign * (wx * ry - wy * rx)
            jac[3][i] = sign * wx
            jac[4][i] = sign * wy
            jac[5][i] = sign * wz
        return (x, y, z, p), jac

    def forward(self, q: ArrayLike) -> Array:
        """Flange pose (4, 4) for joints (6,); (..., 4, 4) for (..., 6)."""
        pose = _opw.opw_pose(self._packed, q)  # one configuration of plain floats: one call
        if pose is not None:
            return pose
        q = self._joints(q)
        if q.ndim == 1:
            return _opw.opw_pose(self._packed, q)
        flat = np.ascontiguousarray(q.reshape(-1, 6))
        out = np.empty((flat.shape[0], 4, 4))
        _opw.opw_forward_batch(self._packed, flat, out.reshape(-1, 16))
        return out.reshape(*q.shape[:-1], 4, 4)

    def joint_poses(self, q: ArrayLike) -> Array:
        """Frames moved by J1..J6 and the flange: (..., 7, 4, 4). J1's frame is at
        the base origin, J2's and J3's on their axes, J4-J6's at the wrist centre."""
        from .. import spatial

        q = self._joints(q)
        t = np.moveaxis(self._theta(q), -1, 0)
        shape = q.shape[:-1]

        def trans(x: float, y: float, z: float) -> Array:
            return spatial.from_translation(np.broadcast_to([x, y, z], (*shape, 3)))

        f1 = spatial.rotation_z(t[0])
        f2 = f1 @ trans(self.a1, self.b, self.c1) @ spatial.rotation_y(t[1])
        f3 = f2 @ trans(0, 0, self.c2) @ spatial.rotation_y(t[2])
        f4 = f3 @ trans(self.a2, 0, self.c3) @ spatial.rotation_z(t[3])
        f5 = f4 @ spatial.rotation_y(t[4])
        f6 = f5 @ spatial.rotation_z(t[5])
        flange = f6 @ trans(0, 0, self.c4)
        return np.stack([f1, f2, f3, f4, f5, f6, flange], axis=-3)

    def jacobian(self, q: ArrayLike) -> Array:
        """Geometric Jacobian (..., 6, 6) from the joint axes (analytic)."""
        return product_jacobian(self._product, q, self._joints)

    def singularity(self, q: ArrayLike, threshold: float = WRIST_SINGULARITY):
        """'wrist' when J5 is within ``threshold`` (0.01 deg) of 0 or +-pi, else None;
        for a batch (N, 6), a boolean array."""
        q = self._joints(q)
        t5 = np.remainder(self._theta(q)[..., 4], PI)
        near = np.minimum(t5, PI - t5) < threshold
        if q.ndim == 1:
            return "wrist" if bool(near) else None
        return near

    def solution_label(self, q: ArrayLike) -> str:
        """"front|back, elbow up|down, wrist flip|no flip" of joints ``q`` (6,)."""
        q = self._one_joints(q)
        t = self._theta(q)
        reach = self.a1 + self.c2 * math.sin(t[1]) + self._k * math.sin(t[1] + t[2] + self._psi)
        front = reach >= 0
        up = (math.sin(t[2] + self._psi) > 0) == front
        flip = _wrap(float(t[4])) < 0
        return f"{'front' if front else 'back'}, elbow {'up' if up else 'down'}, {'wrist flip' if flip else 'no flip'}"

    # Inverse kinematics: one pose ------------------------------------------------------------

    def _solve(self, m: list[list[float]], previous: list[float] | None,
               j6: float | None = None) -> tuple[list, str | None, bool]:
        """All verified solutions (joint lists, normalised) for one pose given as
        rows, the reason when there is none, and whether two may coincide (near a
        singularity; the finisher looks for repeats only then)."""
        rows, failure, may_repeat = _opw.opw(self._packed, m, self._bounds()[2] if previous is None else previous, j6)
        return (rows, None, may_repeat) if failure is None else ([], self._failure(*failure), False)

    def _bound_arrays(self) -> tuple[Array, Array, Array]:
        """Lower and upper limits and their centre as arrays (as :meth:`_bounds` has them)."""
        bounds = self._bounds()
        cache = self.__dict__.get("_bound_arrays_cache")
        if cache is None or cache[0] is not bounds:
            cache = bounds, tuple(np.array(values, dtype=float) for values in bounds[:3])
            self.__dict__["_bound_arrays_cache"] = cache
        return cache[1]

    def _failure(self, kind: str, *values: float) -> str:
        """Why a pose has no solution: the wrist centre (x, y) inside the offset b, the
        shoulder-to-wrist vector (u, v) out of reach, or a degenerate target."""
        if kind == "offset":
            return (f"the wrist centre is {math.hypot(*values):.6g} m from the joint-1 axis, closer than the"
                    f" offset b = {self.b:.4f} m")
        if kind == "reach":
            return (f"the wrist centre is {math.hypot(*values):.6g} m from joint 2; the arm reaches"
                    f" {abs(self.c2 - self._k):.4f} to {self.c2 + self._k:.4f} m")
        return "no configuration reproduces the pose (numerically degenerate target)"

    def _reference(self, previous: list[float] | None, i: int) -> float:
        """Model angle ``i`` of ``previous`` (else of the limits' centre): the choice a singular pose leaves open."""
        joint = previous[i] if previous is not None else self._bounds()[2][i]
        return self.signs[i] * joint - self.offsets[i]

    def _candidates(self, pose: Array, previous: Array | None, search: Search = DEFAULT_SEARCH) -> tuple[list, str | None]:
        return self._solve(pose.tolist(), None if previous is None else list(previous))[:2]

    def inverse(self, pose: ArrayLike, *, budget: float | None = None,
                tolerance: float | tuple[float, float] | None = None) -> Solutions:
        """Every solution (k, 6) within the limits, sorted by distance to their centre; in
        closed form, so ``budget`` and ``tolerance`` (for a numeric model's search) do not apply."""
        if budget is not None or tolerance is not None:
            search_for(budget, tolerance)  # checked all the same: a wrong one is an error on every model
        if (type(pose) is np.ndarray and pose.dtype == np.float64 and pose.shape == (4, 4)
                and self.constraints is None and type(self)._admissible is Kinematics._admissible):
            # The usual case in one kernel call; anything unusual takes the general path below.
            lower, upper, centre = self._bound_arrays()
            out = np.empty((8, 6))
            count = _opw.opw_sorted(self._packed, np.ascontiguousarray(pose), lower, upper, centre, out)
            if count:
                return Solutions(out[:count])
        rows, reason, may_repeat = self._solve(pose_rows(pose), None)
        return self._finish(rows, None, reason, may_repeat, normalised=True)

    def inverse_continuing(self, pose: ArrayLike, previous: ArrayLike, *, budget: float | None = None,
                           tolerance: float | tuple[float, float] | None = None) -> Solutions:
        """Solutions nearest ``previous``; at the J5 = 0 (pi) singularity J4 stays at
        ``previous`` and J6 keeps J4 + J6 (J4 - J6) as the pose demands. ``budget`` and
        ``tolerance`` do not apply (closed form)."""
        if budget is not None or tolerance is not None:
            search_for(budget, tolerance)
        prev = self._previous_list(previous)
        rows, reason, may_repeat = self._solve(pose_rows(pose), prev)
        return self._finish(rows, prev, reason, may_repeat, normalised=True)

    def _previous_list(self, previous: ArrayLike) -> list[float]:
        if type(previous) is np.ndarray and previous.dtype == np.float64 and previous.ndim == 1:
            values = previous.tolist()  # already Python floats
        else:
            values = previous.tolist() if type(previous) is np.ndarray else previous
            try:
                values = [float(x) for x in values]
            except (TypeError, ValueError):
                raise InvalidArgument(f"previous joints must be {self.dof} numbers, got {previous!r:.80}") from None
        if len(values) != self.dof:
            raise InvalidArgument(f"previous joints must have {self.dof} values, got {len(values)}")
        if not all(map(math.isfinite, values)):
            raise InvalidArgument("previous joints contain NaN or inf")
        return values

    def inverse_5dof(self, pose: ArrayLike, j6: float) -> Solutions:
        """Solutions that place the flange at the pose's position with its z axis
        along the pose's z axis; rotation about that axis is ignored and J6 = ``j6``."""
        j6 = spatial.as_number(j6, "j6")
        rows, reason, may_repeat = self._solve(pose_rows(pose), None, j6=self.signs[5] * j6 - self.offsets[5])
        return self._finish(rows, None, reason, may_repeat, normalised=True)

    def inverse_continuing_5dof(self, pose: ArrayLike, previous: ArrayLike) -> Solutions:
        """:meth:`inverse_5dof` with J6 taken from ``previous``, sorted by distance to it."""
        prev = self._previous_list(previous)
        rows, reason, may_repeat = self._solve(pose_rows(pose), prev, j6=self.signs[5] * prev[5] - self.offsets[5])
        return self._finish(rows, prev, reason, may_repeat, normalised=True)

    # Inverse kinematics: many poses ------------------------------------------------------------

    def _candidates_batch(self, poses: Array, limits: JointLimits | None = None) -> Array:
        """(n, 8, 6) solutions in fixed slots (4 * back + 2 * elbow branch + flip),
        FK-verified, normalised to (-pi, pi] (moved by a turn into ``limits`` and
        filtered by them when given); NaN where a branch does not exist."""
        poses = np.ascontiguousarray(poses.reshape(-1, 16))
        lower, upper = (limits.lower, limits.upper) if limits is not None else (np.full(6, -np.inf), np.full(6, np.inf))
        out = np.empty((poses.shape[0], 8, 6))
        _opw.opw_inverse_batch(self._packed, poses, np.ascontiguousarray(lower, dtype=float),
                                   np.ascontiguousarray(upper, dtype=float), np.asarray(self._bounds()[2], dtype=float), out)
        return out

    def inverse_batch(self, poses: ArrayLike, seeds: ArrayLike | None = None, *, path: bool = False,
                      budget: float | None = None, tolerance: float | tuple[float, float] | None = None) -> Array:
        """All 8 branches for N poses: (N, 8, 6), NaN where a branch does not exist
        or leaves the limits. Slot ``4 * back + 2 * elbow + flip`` is stable, so a
        column follows one branch; :func:`~robohal.kinematics.pick_best` picks one per pose.
        With ``seeds`` or ``path``, the branch nearest each seed (or the solution before it):
        (..., 6), as :meth:`Kinematics.inverse_batch` says."""
        search = search_for(budget, tolerance)
        if seeds is not None or path:
            return self._nearest_batch(poses, seeds, path, search)
        flat = None
        if type(poses) is np.ndarray and poses.dtype == np.float64 and poses.ndim in (2, 3) and poses.shape[-2:] == (4, 4):
            flat = np.ascontiguousarray(poses.reshape(-1, 16))
            if _common_kernels.first_odd_pose(flat) >= 0:  # spatial.as_pose names the problem (or lets it pass)
                flat = None
        if flat is None:
            flat = np.ascontiguousarray(spatial.as_pose(poses, "poses").reshape(-1, 16))
        return self._candidates_batch(flat, self.limits)


def fit_limits_batch(q: Array, limits: JointLimits, periodic: Sequence[bool]) -> Array:
    """Move angles by one turn into the limits where that helps; NaN rows outside."""
    lower, upper = limits.lower, limits.upper
    for j in range(q.shape[-1]):
        if not periodic[j]:
            continue
        column = q[..., j]
        low = column < lower[j]
        if low.any():
            column[low] += TWO_PI
        high = column > upper[j]
        if high.any():
            column[high] -= TWO_PI
    inside = ((q >= lower - 1e-9) & (q <= upper + 1e-9)).all(axis=-1)
    q[~inside] = np.nan
    return q
