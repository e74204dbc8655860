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

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import spatial
from ..errors import InvalidArgument
from .limits import JointLimits

Array = NDArray[np.float64]

# Solutions closer than this (rad, per joint) are one solution.
DUPLICATE_TOLERANCE = 1e-6
# A solution counts as reaching the pose within these.
POSITION_TOLERANCE = 1e-6  # m
ROTATION_TOLERANCE = 1e-6  # rad


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


class Kinematics(ABC):
    """A robot model: forward and inverse kinematics, Jacobian, limits."""

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

    # Input validation shared by every model ----------------------------------

    def _joints(self, q: ArrayLike, name: str = "joints") -> Array:
        q = spatial.as_finite(q, name)
        if q.ndim == 0 or q.shape[-1] != self.dof:
            raise InvalidArgument(f"{name} must have {self.dof} values per configuration, got shape {q.shape}")
        return q

    def _pose(self, pose: ArrayLike, name: str = "pose") -> Array:
        return spatial.as_pose(pose, name)

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

    def inverse(self, pose: ArrayLike) -> Solutions:
        """Every joint solution (k, dof) that reaches ``pose`` within the limits,
        sorted by distance to the centre of the limits. Empty, with a
        ``reason``, when there is none."""
        from .numeric import numeric_inverse

        return numeric_inverse(self, self._pose(pose))

    def inverse_continuing(self, pose: ArrayLike, previous: ArrayLike) -> Solutions:
        """Solutions sorted by closeness to ``previous`` (the current joints), each
        angle moved by whole turns next to ``previous`` where the limits allow."""
        previous = self._joints(previous, "previous joints")
        from .numeric import numeric_inverse

        found = numeric_inverse(self, self._pose(pose), seed=previous)
        return sort_by_distance(near_previous(found, previous, self.limits), previous)

    def inverse_batch(self, poses: ArrayLike) -> Array:
        """All solutions for N poses: (N, max_solutions, dof), NaN-padded."""
        poses = spatial.as_finite(poses, "poses", last=(4, 4))
        if poses.ndim == 2:
            poses = poses[None]
        out = np.full((poses.shape[0], self.max_solutions, self.dof), np.nan)
        for i, pose in enumerate(poses):
            found = self.inverse(pose)[: self.max_solutions]
            out[i, : len(found)] = found
        return out

    def singularity(self, q: ArrayLike, threshold: float = 1e-4) -> Any:
        """Whether ``q`` is (near) singular: the smallest singular value of the
        Jacobian under ``threshold``. Models with a closed form say which kind."""
        sigma = np.linalg.svd(self.jacobian(q), compute_uv=False)
        return sigma[..., -1] < threshold

    def __repr__(self) -> str:
        return f"<{type(self).__name__} dof={self.dof}>"


# Helpers shared by the solvers -----------------------------------------------------


def near_previous(solutions: Array, previous: Array, limits: JointLimits) -> Array:
    """Move every angle by whole turns to the value nearest ``previous`` that the
    limits still allow (a joint with +-400 deg range can take either)."""
    if len(solutions) == 0:
        return solutions
    two_pi = 2 * np.pi
    turns = np.round((previous - solutions) / two_pi)
    candidate = solutions + turns * two_pi
    inside = (candidate >= limits.lower - 1e-9) & (candidate <= limits.upper + 1e-9)
    moved = np.where(inside, candidate, solutions)
    return Solutions(moved, getattr(solutions, "reason", None))


def sort_by_distance(solutions: Array, reference: Array) -> Solutions:
    reason = getattr(solutions, "reason", None)
    if len(solutions) == 0:
        return Solutions(np.empty((0, reference.shape[-1])), reason)
    order = np.argsort(np.abs(np.asarray(solutions) - reference).sum(axis=-1), kind="stable")
    return Solutions(np.asarray(solutions)[order], reason)


def unique_rows(solutions: Array, tolerance: float = DUPLICATE_TOLERANCE) -> Array:
    """Drop rows equal (within tolerance) to an earlier row, keeping order."""
    keep: list[int] = []
    for i in range(len(solutions)):
        if all(np.abs(solutions[i] - solutions[k]).max() > tolerance for k in keep):
            keep.append(i)
    return solutions[keep]
