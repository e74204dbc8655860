"""The :class:`Kinematics` protocol every robot model implements.

Models are stateless: all they know is geometry and limits. Joint arrays are
radians, poses are (4, 4) homogeneous transforms in metres (see
:mod:`robohal.spatial`). Every method accepts one configuration or pose, or a
batch with a leading dimension.

A subclass must provide :meth:`forward`; it should provide :meth:`jacobian`
analytically and :meth:`inverse` in closed form where one exists. The defaults
here are correct but slower: a finite-difference Jacobian and a numeric
damped-least-squares inverse.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from itertools import compress
from operator import le, sub
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument
from .limits import JointLimits
from .numeric import DEFAULT_SEARCH, Search, chain_nearest_batch, numeric_batch, numeric_candidates, search_for
from .solutions import DUPLICATE_TOLERANCE, LIMIT_TOLERANCE, TWO_PI, Array, Solutions, no_solution


# Solutions, tolerances and the array type live in .solutions, which the numeric solver shares.
class Kinematics(ABC):
    """A robot model: forward and inverse kinematics, Jacobian, limits.

    Solvers implement :meth:`_candidates` (every verified solution, angles
    normalised, limits not yet applied); the public :meth:`inverse` and
    :meth:`inverse_continuing` then move angles by whole turns, filter on the
    limits (and :attr:`constraints`), drop duplicates and sort, all in this
    model's own joints.
    """

    #: number of joints
    dof: int
    #: per-joint position, velocity, acceleration and jerk limits
    limits: JointLimits
    #: most solutions :meth:`inverse` can return (the width of :meth:`inverse_batch`)
    max_solutions: int = 8
    #: True when the model only positions a point (planar arms); orientation is ignored
    position_only: bool = False
    #: True when :meth:`inverse` is closed-form (fast, all solutions)
    closed_form: bool = False
    #: optional extra joint constraints (:class:`~robohal.kinematics.Constraints`) for filtering and sorting
    constraints: Any = None
    #: attributes fixed once set in ``__init__`` (a model's geometry, when it keeps constants derived from it)
    fixed_attributes: frozenset[str] = frozenset()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.fixed_attributes and name in self.__dict__:
            kind = type(self).__name__
            raise AttributeError(f"{kind}.{name} is fixed at construction; make a new {kind}")
        super().__setattr__(name, value)

    # Input validation shared by every model ----------------------------------

    def _joints(self, q: ArrayLike, name: str = "joints") -> Array:
        q = spatial.as_finite(q, name)
        if q.ndim == 0 or q.shape[-1] != self.dof:
            raise InvalidArgument(f"{name} must have {self.dof} values per configuration, got shape {q.shape}")
        return q

    def _pose(self, pose: ArrayLike, name: str = "pose") -> Array:
        return spatial.as_pose(pose, name)

    def _one_pose(self, pose: ArrayLike, name: str = "pose") -> Array:
        pose = self._pose(pose, name)
        if pose.shape != (4, 4):
            raise InvalidArgument(f"{name} must be one (4, 4) pose here, got shape {pose.shape}; use inverse_batch")
        return pose

    def _one_joints(self, q: ArrayLike, name: str = "joints") -> Array:
        q = self._joints(q, name)
        if q.shape != (self.dof,):
            raise InvalidArgument(f"{name} must have shape ({self.dof},), got {q.shape}")
        return q

    # The protocol -----------------------------------------------------------------

    @abstractmethod
    def forward(self, q: ArrayLike) -> Array:
        """Flange pose (4, 4) for joints (dof,); (N, 4, 4) for (N, dof)."""

    def joint_poses(self, q: ArrayLike) -> Array:
        """Pose of every link frame, base to flange: (..., dof + 1, 4, 4);
        entry ``i`` is the frame moved by joint ``i`` (the last is the flange)."""
        raise NotImplementedError(f"{type(self).__name__} does not report link poses")

    def jacobian(self, q: ArrayLike) -> Array:
        """Geometric Jacobian (..., 6, dof) of the flange in the base frame:
        rows vx, vy, vz, wx, wy, wz. This default uses central differences."""
        q = self._joints(q)
        step = 1e-7
        base = self.forward(q)
        columns = []
        for j in range(self.dof):
            dq = np.zeros(self.dof)
            dq[j] = step
            plus, minus = self.forward(q + dq), self.forward(q - dq)
            linear = (plus[..., :3, 3] - minus[..., :3, 3]) / (2 * step)
            dr = (plus[..., :3, :3] - minus[..., :3, :3]) / (2 * step)
            omega = dr @ np.swapaxes(base[..., :3, :3], -1, -2)
            angular = np.stack([omega[..., 2, 1], omega[..., 0, 2], omega[..., 1, 0]], -1)
            columns.append(np.concatenate([linear, angular], -1))
        return np.stack(columns, -1)

    def chain_constants(self) -> Any:
        """The model as the chains kernels take it (fixed transforms, each followed by a turn
        about or a slide along z), which the compiled numeric inverse searches; None for a
        model that is no such chain (it searches in numpy) or has a closed form."""
        return None

    def _candidates(self, pose: Array, previous: Array | None,
                    search: Search = DEFAULT_SEARCH) -> tuple[list, str | None]:
        """Every solution found for one validated pose, verified by forward
        kinematics, angles normalised to (-pi, pi]; limits NOT applied.
        ``previous`` (this model's joints, or None) only guides choices the pose
        leaves open (singular wrists, redundancy). Returns the rows and, when
        there are none, the reason. This default searches numerically, as ``search``
        says (a closed form has no use for it)."""
        return numeric_candidates(self, pose, previous, search)

    def inverse(self, pose: ArrayLike, *, budget: float | None = None,
                tolerance: float | tuple[float, float] | None = None) -> Solutions:
        """Every joint solution (k, dof) that reaches ``pose`` within the limits,
        sorted by distance to the centre of the limits. Empty, with a
        ``reason``, when there is none. A numeric model searches for at most
        ``budget`` s (default 5 ms) and keeps what reaches the pose within
        ``tolerance`` (m and rad, one number or a pair; default 1e-6); a closed form
        is exact and takes neither into account."""
        search = search_for(budget, tolerance)
        rows, reason = self._candidates(np.array(pose_rows(pose)), None, search)
        return self._finish(rows, None, reason)

    def inverse_continuing(self, pose: ArrayLike, previous: ArrayLike, *, budget: float | None = None,
                           tolerance: float | tuple[float, float] | None = None) -> Solutions:
        """Solutions sorted by closeness to ``previous`` (the current joints), each
        angle moved by whole turns next to ``previous`` where the limits allow. A
        numeric model returns the first solution its search finds, from ``previous``
        where it can (``budget`` and ``tolerance`` as for :meth:`inverse`)."""
        search = search_for(budget, tolerance)
        previous = self._one_joints(previous, "previous joints")
        rows, reason = self._candidates(np.array(pose_rows(pose)), previous, search)
        return self._finish(rows, previous.tolist(), reason)

    def inverse_batch(self, poses: ArrayLike, seeds: ArrayLike | None = None, *, path: bool = False,
                      budget: float | None = None, tolerance: float | tuple[float, float] | None = None) -> Array:
        """All solutions for N poses: (N, max_solutions, dof), NaN-padded, limit-filtered.
        Use :func:`pick_best` to choose one per pose. With ``seeds`` ((..., dof), one per
        pose, or one for all) one solution per pose, the one found from (or nearest) its
        seed: (..., dof), NaN rows where there is none; with ``path``, each pose of a
        path (the poses' last leading axis) starts from its neighbour's solution, the
        first from the seed (default: the limits' centre). ``budget`` and ``tolerance``
        as for :meth:`inverse`, per pose. This default searches numerically; a serial
        chain on every core."""
        search = search_for(budget, tolerance)
        if seeds is not None or path:
            return self._nearest_batch(poses, seeds, path, search)
        poses = spatial.as_pose(poses, "poses")
        if poses.ndim == 2:
            poses = poses[None]
        return numeric_batch(self, poses.reshape(-1, 4, 4), search=search)

    def _nearest_batch(self, poses: ArrayLike, seeds: ArrayLike | None, path: bool, search: Search) -> Array:
        """One solution per pose (see :meth:`inverse_batch`'s ``seeds`` and ``path``)."""
        poses = spatial.as_pose(poses, "poses")
        shape = poses.shape[:-2]
        seeds = np.array(self._bounds()[2]) if seeds is None else self._joints(seeds, "seeds")
        if seeds.ndim > 1 and (path or seeds.shape[:-1] != shape):
            if not path:
                raise InvalidArgument(f"seeds must be one configuration ({self.dof},) or one per pose"
                                      f" {(*shape, self.dof)}, got shape {seeds.shape}")
            if seeds.shape[:-1] != shape[:-1]:
                raise InvalidArgument(f"a path's seeds must be one configuration ({self.dof},) or one per path"
                                      f" {(*shape[:-1], self.dof)}, got shape {seeds.shape}")
        constants = self.chain_constants()
        if constants is not None:
            found = chain_nearest_batch(self, constants, poses, seeds, path, search)
            return self._checked_rows(poses, found, search)
        # Any other model: every solution, each joint turned next to the seed where its limits
        # allow, then the one nearest its seed (or its neighbour's).
        every = self.inverse_batch(poses.reshape(-1, 4, 4), budget=search.budget,
                                   tolerance=(search.position, search.rotation)).reshape(*shape, -1, self.dof)
        if not path:
            reference = np.broadcast_to(seeds, (*shape, self.dof)).reshape(-1, self.dof)
            flat = every.reshape(-1, *every.shape[-2:])
            return pick_best(self._turned_next_to(flat, reference[:, None]), reference).reshape(*shape, self.dof)
        paths = every.reshape(-1, *every.shape[-3:]) if len(shape) > 1 else every.reshape(1, *every.shape[-3:])
        starts = np.broadcast_to(seeds, (*shape[:-1], self.dof)).reshape(-1, self.dof) if len(shape) > 1 else seeds.reshape(1, -1)
        out = np.full((*paths.shape[:2], self.dof), np.nan)
        for k, (solutions, start) in enumerate(zip(paths, starts, strict=True)):
            reference = start
            for i, row in enumerate(solutions):
                best = pick_best(self._turned_next_to(row[None], reference), reference)[0]
                out[k, i] = best
                if not np.isnan(best[0]):
                    reference = best
        return out.reshape(*shape, self.dof)

    def _turned_next_to(self, rows: Array, reference: Array) -> Array:
        """``rows`` (..., dof) with each turning joint moved by whole turns next to ``reference``
        where it stays within its limits (NaN rows stay NaN)."""
        lower, upper, _, periodic, _ = self._bounds()
        with np.errstate(invalid="ignore"):
            moved = rows + TWO_PI * np.round((reference - rows) / TWO_PI)
            keep = np.array(periodic) & (moved >= np.array(lower)) & (moved <= np.array(upper))
        return np.where(keep, moved, rows)

    def _checked_rows(self, poses: Array, rows: Array, search: Search) -> Array:
        """``rows`` (..., dof), with NaN for each that does not reach its pose within the
        search's tolerances or leaves the limits (never seen: the kernel verifies)."""
        flat, targets = rows.reshape(-1, self.dof), poses.reshape(-1, 4, 4)
        found = np.flatnonzero(~np.isnan(flat[:, 0]))
        if len(found):
            reached = spatial.pose_error(targets[found], self.forward(flat[found]))
            ok = ((np.linalg.norm(reached[:, :3], axis=1) <= search.position)
                  & (np.linalg.norm(reached[:, 3:], axis=1) <= search.rotation) & self.limits.within(flat[found]))
            flat[found[~ok]] = np.nan
        return flat.reshape(rows.shape)

    #: True when joints are also coupled by limits beyond their own ranges (a parallelogram linkage)
    coupled_limits: bool = False

    @property
    def linkage_limits(self) -> tuple[tuple[tuple[float, ...], float, float], ...]:
        """The coupled limits as linear ranges: ``(weights, lower, upper)`` each, with
        ``lower <= sum(weights * q) <= upper`` (rad) in this model's joints."""
        return ()

    def check_joints(self, q: ArrayLike, what: str = "joints") -> None:
        """Raise :class:`~robohal.errors.LimitViolation` unless ``q`` (..., dof) lies in
        the model's admissible joint set: each joint's range and any coupled limits."""
        self.limits.check_position(q, what)

    def singularity(self, q: ArrayLike, threshold: float = 1e-4) -> Any:
        """Whether ``q`` is (near) singular: the smallest singular value of the
        Jacobian under ``threshold``. Models with a closed form say which kind."""
        sigma = np.linalg.svd(self.jacobian(q), compute_uv=False)
        return sigma[..., -1] < threshold

    def frame_and_jacobian_lists(self, q: list[float], jacobian: bool = True) -> tuple[tuple, list | None]:
        """The per-cycle fast path for one configuration (no validation): the flange
        frame as column tuples ``(x, y, z, p)`` and, if asked, the Jacobian as 6
        row lists. Solvers with a scalar path override this; the default goes
        through :meth:`forward` and :meth:`jacobian`."""
        array = np.array(q, dtype=np.float64)
        pose = self.forward(array).tolist()
        frame = tuple((pose[0][c], pose[1][c], pose[2][c]) for c in range(4))
        return frame, (self.jacobian(array).tolist() if jacobian else None)

    def solution_label(self, q: ArrayLike) -> str:
        """A short name of the configuration branch of ``q`` (e.g. "front, elbow up,
        no flip"); empty when the model has no named branches."""
        self._one_joints(q)  # still a check: a wrong argument is no unnamed branch
        return ""

    # Finishing solutions (shared by every solver) ---------------------------------

    @property
    def periodic(self) -> tuple[bool, ...]:
        """Per joint: True when adding a whole turn gives the same pose (revolute)."""
        return (True,) * self.dof

    def _admissible(self, q: list[float]) -> bool:
        """Extra feasibility test beyond the joint limits (wrappers override)."""
        return True

    def _bounds(self) -> tuple:
        cache = self.__dict__.get("_bounds_cache")
        if cache is not None and cache[0] is self.limits:
            return cache[1]
        big = 1e9
        lower = tuple(max(float(x), -big) for x in self.limits.lower)
        upper = tuple(min(float(x), big) for x in self.limits.upper)
        centre = tuple(0.5 * (lo + hi) if abs(lo) < big and abs(hi) < big else 0.0 for lo, hi in zip(lower, upper, strict=False))
        # Joints whose limits hold all of [-pi, pi]: a normalised angle needs no check there.
        narrow = tuple(i for i, (lo, hi) in enumerate(zip(lower, upper, strict=True)) if lo > -math.pi or hi < math.pi)
        value = (lower, upper, centre, self.periodic, narrow)
        self.__dict__["_bounds_cache"] = (self.limits, value)
        return value

    def _finish(self, rows: Any, previous: list[float] | None, reason: str | None = None,
                may_repeat: bool = True, normalised: bool = False) -> Solutions:
        """Move angles by whole turns (next to ``previous``, else into the limits),
        keep those inside the limits, drop duplicates (unless the solver knows there
        are none: ``may_repeat=False``), sort. ``normalised``: every angle is
        already within [-pi, pi] (then only joints with narrower limits are checked)."""
        lower, upper, centre, periodic, narrow = self._bounds()
        if isinstance(rows, np.ndarray):
            rows = rows.tolist()
        admissible = None if type(self)._admissible is Kinematics._admissible else self._admissible
        if (normalised and previous is None and not may_repeat and admissible is None and rows
                and _columns_inside(rows, narrow, lower, upper)):
            # Fast path: nothing to move, nothing outside, no repeats.
            return self._sorted(list(rows), centre)
        kept: list[list[float]] = []
        inside = normalised and not narrow  # every normalised row is inside the limits
        for row in rows:
            # Fast path (C-level loops): nothing to move and inside the limits.
            if ((previous is None or max(map(abs, map(sub, previous, row))) <= math.pi)
                    and (inside or (all(map(le, lower, row)) and all(map(le, row, upper))))):
                out = row if type(row) is list else list(row)
            else:
                out = self._fit_row(row, previous, lower, upper, periodic, inside)
                if out is None:
                    continue
            if admissible is not None and not admissible(out):
                continue
            if may_repeat and kept and _repeats(out, kept):
                continue
            kept.append(out)
        if not kept:
            if rows:
                reason = "every solution lies outside the joint limits"
            return no_solution(self.dof, reason or "no solution")
        return self._sorted(kept, centre if previous is None else previous, previous)

    def _sorted(self, kept: list[list[float]], ref: Any, previous: list[float] | None = None) -> Solutions:
        """Kept rows (constraint-filtered, if any) sorted by summed distance to ``ref``."""
        if self.constraints is not None:
            if getattr(self.constraints, "dof", None) != self.dof:  # set after construction
                raise InvalidArgument(f"the model's constraints are not Constraints for its {self.dof} joints")
            return self.constraints.sort(self.constraints.filter(np.array(kept)), previous)
        if len(kept) > 1:
            kept.sort(key=lambda r: sum(map(abs, map(sub, r, ref))))
        return Solutions(kept)

    @staticmethod
    def _fit_row(row: list[float], previous: list[float] | None, lower: tuple, upper: tuple,
                 periodic: tuple, inside: bool = False) -> list[float] | None:
        """One solution moved by whole turns next to ``previous`` (or into the limits); None if it cannot fit.
        ``inside``: the row is known to lie within the limits (moves next to ``previous`` keep it there)."""
        out = list(row)
        if previous is not None:
            # Next to ``previous`` where a whole turn keeps the joint inside its limits; only
            # the joints more than half a turn away are visited (picked at C speed).
            gaps = list(map(sub, previous, row))
            for i in compress(range(len(gaps)), map(math.pi.__lt__, map(abs, gaps))):
                if periodic[i]:
                    moved = row[i] + TWO_PI * round(gaps[i] / TWO_PI)
                    if lower[i] <= moved <= upper[i]:
                        out[i] = moved
        if inside or (all(map(le, lower, out)) and all(map(le, out, upper))):
            return out  # the common case: every joint inside its limits
        for i, (x, lo, hi, turns) in enumerate(zip(out, lower, upper, periodic, strict=False)):
            if turns:
                if not lo <= x <= hi:
                    x = _turn_into(x, lo, hi, x if previous is None else previous[i])
                    if x is None:
                        return None
                    out[i] = x
            elif not (lo - LIMIT_TOLERANCE <= x <= hi + LIMIT_TOLERANCE):
                return None
        return out

    def __repr__(self) -> str:
        return f"<{type(self).__name__} dof={self.dof}>"


def _columns_inside(rows: list[list[float]], joints: tuple, lower: tuple, upper: tuple) -> bool:
    """Whether every row lies within the limits on ``joints`` (one min and max per joint)."""
    if not joints:
        return True
    columns = list(zip(*rows, strict=True))
    for i in joints:
        column = columns[i]
        if min(column) < lower[i] or max(column) > upper[i]:
            return False
    return True


def _repeats(row: list[float], kept: list[list[float]]) -> bool:
    """Whether ``row`` equals (within DUPLICATE_TOLERANCE per joint) a kept row."""
    for other in kept:
        for a, b in zip(row, other, strict=False):
            if abs(a - b) >= DUPLICATE_TOLERANCE:
                break
        else:
            return True
    return False


def _turn_into(x: float, lo: float, hi: float, ref: float) -> float | None:
    """``x`` moved by the whole turns that put it inside [lo, hi], nearest ``ref``; None if none does."""
    kmin = math.ceil((lo - LIMIT_TOLERANCE - x) / TWO_PI)
    kmax = math.floor((hi + LIMIT_TOLERANCE - x) / TWO_PI)
    if kmin > kmax:
        return None
    k = min(max(round((ref - x) / TWO_PI), kmin), kmax)
    return min(max(x + k * TWO_PI, lo), hi)


def pose_rows(pose: ArrayLike, name: str = "pose") -> list[list[float]]:
    """One pose as four Python lists, validated cheaply (the single-pose fast
    paths): shape (4, 4), finite, last row 0 0 0 1, orthonormal rotation."""
    if type(pose) is not np.ndarray or pose.dtype != np.float64:
        try:
            pose = np.asarray(pose, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidArgument(f"{name} must be numeric, got {pose!r:.80}") from None
    if pose.shape != (4, 4):
        raise InvalidArgument(f"{name} must be one (4, 4) pose, got shape {pose.shape}")
    m = pose.tolist()
    r0, r1, r2, r3 = m
    if not all(map(math.isfinite, r0 + r1 + r2)):
        raise InvalidArgument(f"{name} contains NaN or inf")
    if r3 != [0.0, 0.0, 0.0, 1.0] and max(abs(r3[0]), abs(r3[1]), abs(r3[2]), abs(r3[3] - 1.0)) > 1e-9:
        raise InvalidArgument(f"{name} is not a homogeneous transform: last row must be 0 0 0 1")
    x0, x1, x2 = r0[0], r1[0], r2[0]
    y0, y1, y2 = r0[1], r1[1], r2[1]
    z0, z1, z2 = r0[2], r1[2], r2[2]
    if (abs(x0 * x0 + x1 * x1 + x2 * x2 - 1.0) > 1e-6 or abs(z0 * z0 + z1 * z1 + z2 * z2 - 1.0) > 1e-6
            or abs(x0 * z0 + x1 * z1 + x2 * z2) > 1e-6 or abs(z1 * x2 - z2 * x1 - y0) > 1e-6
            or abs(z2 * x0 - z0 * x2 - y1) > 1e-6 or abs(z0 * x1 - z1 * x0 - y2) > 1e-6):
        raise InvalidArgument(f"{name} has a rotation part that is not orthonormal with det +1")
    return m


def pick_best(solutions: ArrayLike, reference: ArrayLike) -> Array:
    """One solution per pose from an :meth:`Kinematics.inverse_batch` result
    (N, k, dof): the one nearest ``reference`` (dof,) or (N, dof) in summed
    absolute joint distance; a NaN row where a pose has none."""
    solutions = spatial.as_real(solutions, "solutions")  # NaN rows pad the missing solutions
    reference = spatial.as_finite(reference, "reference")
    if solutions.ndim != 3 or solutions.shape[1] == 0 or reference.ndim not in (1, 2) \
            or reference.shape[-1] != solutions.shape[-1] or (reference.ndim == 2 and len(reference) != len(solutions)):
        raise InvalidArgument("pick_best needs solutions (N, k, dof) with k >= 1 and a reference (dof,) or (N, dof)")
    ref = reference[:, None, :] if reference.ndim == 2 else reference
    cost = np.abs(solutions - ref).sum(axis=-1)
    cost = np.where(np.isnan(cost), np.inf, cost)
    best = np.argmin(cost, axis=1)
    out = np.take_along_axis(solutions, best[:, None, None], axis=1)[:, 0, :]
    return out


