"""What an inverse returns: :class:`Solutions` (joint rows that say why they may be empty),
the tolerances a solution is verified to, and the helpers every solver sorts with."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

Array = NDArray[np.float64]

# Solutions closer than this (rad, per joint) are one solution.
DUPLICATE_TOLERANCE = 1e-6
# A solution counts as reaching the pose within these.
POSITION_TOLERANCE = 1e-6  # m
ROTATION_TOLERANCE = 1e-6  # rad
# Round-off allowed when checking a joint against its limit.
LIMIT_TOLERANCE = 1e-9
TWO_PI = 2.0 * math.pi


class Solutions(np.ndarray):
    """An (k, dof) array of joint solutions that also says why it may be empty.

    It *is* an ndarray (index it, iterate it, ``len()`` it); ``reason`` is None
    when solutions were found, else a sentence such as
    ``"target is 1.73 m away; the arm reaches 1.50 m"``.
    """

    reason: str | None

    def __new__(cls, array: ArrayLike, reason: str | None = None) -> Solutions:
        obj = np.asarray(array, dtype=np.float64).view(cls)
        obj.reason = reason
        return obj

    def __array_finalize__(self, obj: Any) -> None:
        self.reason = getattr(obj, "reason", None)

    def __reduce__(self):  # keep ``reason`` across pickling (processes, multiprocessing)
        constructor, args, state = super().__reduce__()
        return constructor, args, (state, self.reason)

    def __setstate__(self, state):
        array_state, self.reason = state
        super().__setstate__(array_state)

    @property
    def found(self) -> bool:
        return self.shape[0] > 0


def no_solution(dof: int, reason: str) -> Solutions:
    return Solutions(np.empty((0, dof)), reason)


def sort_by_distance(solutions: Array, reference: Array) -> Solutions:
    reason = getattr(solutions, "reason", None)
    if len(solutions) == 0:
        return Solutions(np.empty((0, reference.shape[-1])), reason)
    order = np.argsort(np.abs(np.asarray(solutions) - reference).sum(axis=-1), kind="stable")
    return Solutions(np.asarray(solutions)[order], reason)
