"""Joint constraints for choosing among inverse-kinematics solutions.

Unlike :class:`~robohal.kinematics.JointLimits` (absolute travel, checked
before anything moves), a :class:`Constraints` range is on the circle: joint
``j`` is allowed from ``from_[j]`` counter-clockwise to ``to[j]``, so
``from_ > to`` wraps through +-pi. They filter solutions, sort them by a blend of
distance to the previous joints and distance to the range centres, and draw
random joints within the ranges.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidArgument
from ..spatial import as_number, as_real
from .base import Array, Solutions

TWO_PI = 2.0 * np.pi


class Constraints:
    """Per-joint angular ranges (rad) and a sorting preference.

    ``sorting_weight`` 0 sorts purely by distance to ``previous``, 1 purely by
    distance to the centre of the ranges; values between blend the two.
    """

    def __init__(self, from_: ArrayLike, to: ArrayLike, sorting_weight: float = 0.0) -> None:
        start = as_real(from_, "constraints from_").reshape(-1)
        end = as_real(to, "constraints to").reshape(-1)
        if start.shape != end.shape or start.size == 0:
            raise InvalidArgument("constraints need one from and one to angle per joint")
        if not (np.isfinite(start).all() and np.isfinite(end).all()):
            raise InvalidArgument("constraint angles must be finite")
        if not 0.0 <= as_number(sorting_weight, "sorting_weight") <= 1.0:
            raise InvalidArgument("sorting_weight must be within [0, 1]")
        self.from_ = start
        self.to = end
        self.sorting_weight = float(sorting_weight)
        # Span counter-clockwise from `from_` to `to`; a span of 2 pi or more allows every angle.
        raw = end - start
        self.full = raw >= TWO_PI
        self.span = np.where(self.full, TWO_PI, np.remainder(raw, TWO_PI))
        self.centre = self._wrap(start + 0.5 * self.span)

    @classmethod
    def from_degrees(cls, from_: ArrayLike, to: ArrayLike, sorting_weight: float = 0.0) -> Constraints:
        return cls(np.radians(from_), np.radians(to), sorting_weight)

    @property
    def dof(self) -> int:
        return int(self.from_.size)

    @staticmethod
    def _wrap(x: Array) -> Array:
        return np.pi - np.remainder(np.pi - x, TWO_PI)

    def _check(self, q: ArrayLike) -> Array:
        q = as_real(q, "joints")
        if q.ndim == 0 or q.shape[-1] != self.dof:
            raise InvalidArgument(f"joints must have {self.dof} values, got shape {q.shape}")
        return q

    def compliant(self, q: ArrayLike) -> np.ndarray:
        """Whether each configuration (..., dof) lies in every joint's range."""
        q = self._check(q)
        offset = np.remainder(q - self.from_, TWO_PI)
        return (self.full | (offset <= self.span + 1e-12) | (offset >= TWO_PI - 1e-12)).all(axis=-1)

    def filter(self, solutions: ArrayLike) -> Solutions:
        """The rows of (k, dof) ``solutions`` inside the ranges (the reason kept or set)."""
        rows = self._check(as_real(solutions, "solutions").reshape(-1, self.dof))
        kept = rows[self.compliant(rows)]
        reason = getattr(solutions, "reason", None)
        if len(kept) == 0 and len(rows):
            reason = "every solution lies outside the joint constraints"
        return Solutions(kept, reason)

    def distance_to_centre(self, q: ArrayLike) -> Array:
        """Summed angular distance of each configuration to the range centres."""
        q = self._check(q)
        return np.abs(self._wrap(q - self.centre)).sum(axis=-1)

    def sort(self, solutions: ArrayLike, previous: ArrayLike | None = None) -> Solutions:
        """``solutions`` ordered by ``w * distance_to_centre + (1 - w) * distance_to_previous``
        (distance to the centres alone without ``previous``)."""
        rows = np.asarray(solutions, dtype=np.float64).reshape(-1, self.dof)
        reason = getattr(solutions, "reason", None)
        if len(rows) == 0:
            return Solutions(rows, reason or "no solution")
        cost = self.distance_to_centre(rows)
        if previous is not None:
            prev = self._check(previous)
            weight = self.sorting_weight
            cost = weight * cost + (1.0 - weight) * np.abs(rows - prev).sum(axis=-1)
        return Solutions(rows[np.argsort(cost, kind="stable")], reason)

    def random(self, n: int | None = None, rng: np.random.Generator | int | None = None) -> Array:
        """Uniform random joints within the ranges: (dof,), or (n, dof)."""
        rng = np.random.default_rng(rng)
        if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0):
            raise InvalidArgument(f"n must be a count of configurations, got {n!r}")
        shape = (self.dof,) if n is None else (int(n), self.dof)
        return self._wrap(self.from_ + rng.uniform(0.0, 1.0, shape) * self.span)

    def __repr__(self) -> str:
        return (f"Constraints(from_={np.round(self.from_, 4).tolist()}, to={np.round(self.to, 4).tolist()},"
                f" sorting_weight={self.sorting_weight})")
