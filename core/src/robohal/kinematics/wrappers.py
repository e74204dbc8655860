"""Wrappers that are themselves models and stack: a parallelogram linkage between
two joints, a tool on the flange, a base frame under the robot.

Each keeps the public joints its own: a :class:`Parallelogram`'s joints are the
controller's (motor) joints, and its ``previous``, sorting and limits are in
those joints, converted to the inner (geometric) model only to call it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument, LimitViolation
from .base import Array, Kinematics, Solutions, pose_rows
from .limits import JointLimits
from .numeric import DEFAULT_SEARCH, Search, search_for
from .opw import fit_limits_batch


class _Wrapper(Kinematics):
    """Shared plumbing: a wrapped model, joints passed through unless overridden."""

    def __init__(self, robot: Kinematics) -> None:
        if not isinstance(robot, Kinematics):
            raise InvalidArgument(f"expected a Kinematics model to wrap, got {type(robot).__name__}")
        self.robot = robot
        self.dof = robot.dof
        self.max_solutions = robot.max_solutions
        self.position_only = robot.position_only
        self.closed_form = robot.closed_form

    @property
    def limits(self) -> JointLimits:  # type: ignore[override]
        return self.robot.limits

    @property
    def constraints(self):  # type: ignore[override]
        return self.robot.constraints

    @property
    def coupled_limits(self) -> bool:  # type: ignore[override]
        return self.robot.coupled_limits

    @property
    def linkage_limits(self) -> tuple[tuple[tuple[float, ...], float, float], ...]:
        # Joints map linearly (q_inner = M q): a weighted sum of inner joints is one of ours.
        matrix = self._inner(np.eye(self.dof))
        return tuple((tuple((np.asarray(weights) @ matrix.T).tolist()), lower, upper)
                     for weights, lower, upper in self.robot.linkage_limits)

    def check_joints(self, q: ArrayLike, what: str = "joints") -> None:
        self.robot.check_joints(self._inner(self._joints(q, what)), what)

    @property
    def periodic(self) -> tuple[bool, ...]:
        return self.robot.periodic

    # Joints: outer (this model's) <-> inner (the wrapped model's).
    def _inner(self, q: Array) -> Array:
        return q

    def _outer(self, q: Array) -> Array:
        return q

    # Poses: this model's targets <-> the wrapped model's.
    def _inner_pose(self, pose: Array) -> Array:
        return pose

    def _outer_pose(self, pose: Array) -> Array:
        return pose

    def forward(self, q: ArrayLike) -> Array:
        return self._outer_pose(self.robot.forward(self._inner(self._joints(q))))

    def joint_poses(self, q: ArrayLike) -> Array:
        return self.robot.joint_poses(self._inner(self._joints(q)))

    def jacobian(self, q: ArrayLike) -> Array:
        return self.robot.jacobian(self._inner(self._joints(q)))

    def singularity(self, q: ArrayLike, *args, **kwargs):
        return self.robot.singularity(self._inner(self._joints(q)), *args, **kwargs)

    def frame_and_jacobian_lists(self, q: list[float], jacobian: bool = True) -> tuple[tuple, list | None]:
        return self.robot.frame_and_jacobian_lists(q, jacobian)

    def solution_label(self, q: ArrayLike) -> str:
        return self.robot.solution_label(self._inner(self._one_joints(q)))

    def _candidates(self, pose: Array, previous: Array | None, search: Search = DEFAULT_SEARCH) -> tuple[list, str | None]:
        inner_previous = None if previous is None else self._inner(np.asarray(previous, dtype=np.float64))
        rows, reason = self.robot._candidates(self._inner_pose(pose), inner_previous, search)
        if len(rows) == 0:
            return [], reason
        return self._outer(np.asarray(rows, dtype=np.float64)).tolist(), None

    def inverse(self, pose: ArrayLike, *, budget: float | None = None,
                tolerance: float | tuple[float, float] | None = None) -> Solutions:
        search = search_for(budget, tolerance)
        rows, reason = self._candidates(np.array(pose_rows(pose)), None, search)
        return self._finish(rows, None, reason)

    def inverse_continuing(self, pose: ArrayLike, previous: ArrayLike, *, budget: float | None = None,
                           tolerance: float | tuple[float, float] | None = None) -> Solutions:
        search = search_for(budget, tolerance)
        previous = self._one_joints(previous, "previous joints")
        rows, reason = self._candidates(np.array(pose_rows(pose)), previous, search)
        return self._finish(rows, previous.tolist(), reason)

    def _candidates_5dof(self, pose: Array, j6: float | None, previous: Array | None) -> tuple[list, str | None]:
        robot = self.robot
        inner_previous = None if previous is None else self._inner(previous)
        if isinstance(robot, _Wrapper):
            rows, reason = robot._candidates_5dof(self._inner_pose(pose), j6, inner_previous)
        elif hasattr(robot, "_solve"):
            s, o = robot.signs[5], robot.offsets[5]
            j6_inner = j6 if j6 is not None else float(inner_previous[5])
            rows, reason, _ = robot._solve(self._inner_pose(pose).tolist(), None if inner_previous is None
                                           else inner_previous.tolist(), j6=s * j6_inner - o)
        else:
            raise InvalidArgument(f"{type(robot).__name__} has no 5-DOF inverse")
        if len(rows) == 0:
            return [], reason
        return self._outer(np.asarray(rows, dtype=np.float64)).tolist(), None

    def inverse_5dof(self, pose: ArrayLike, j6: float) -> Solutions:
        """Position exact, rotation about the tool axis ignored, J6 = ``j6`` (see :class:`OPW`)."""
        if not math.isfinite(j6):
            raise InvalidArgument("j6 must be finite")
        rows, reason = self._candidates_5dof(np.array(pose_rows(pose)), j6, None)
        return self._finish(rows, None, reason)

    def inverse_continuing_5dof(self, pose: ArrayLike, previous: ArrayLike) -> Solutions:
        previous = self._one_joints(previous, "previous joints")
        rows, reason = self._candidates_5dof(np.array(pose_rows(pose)), None, previous)
        return self._finish(rows, previous.tolist(), reason)

    def _candidates_batch(self, poses: Array) -> Array:
        inner = self.robot._candidates_batch(self._inner_pose(poses))
        return self._outer(inner)

    def inverse_batch(self, poses: ArrayLike, seeds: ArrayLike | None = None, *, path: bool = False,
                      budget: float | None = None, tolerance: float | tuple[float, float] | None = None) -> Array:
        search = search_for(budget, tolerance)
        if seeds is not None or path:
            return self._nearest_batch(poses, seeds, path, search)
        poses = spatial.as_pose(poses, "poses").reshape(-1, 4, 4)
        if not hasattr(self.robot, "_candidates_batch"):
            return super().inverse_batch(poses, budget=budget, tolerance=tolerance)
        out = fit_limits_batch(self._candidates_batch(poses), self.limits, self.periodic)
        out[~self._admissible_batch(out)] = np.nan
        return out

    def _nearest_batch(self, poses: ArrayLike, seeds: ArrayLike | None, path: bool, search: Search) -> Array:
        """The wrapped model's one solution per pose, of the poses and seeds as it sees them,
        in this model's joints; NaN rows where that leaves this model's limits."""
        poses = spatial.as_pose(poses, "poses")
        inner_seeds = None if seeds is None else self._inner(self._joints(seeds, "seeds"))
        out = self._outer(self.robot._nearest_batch(self._inner_pose(poses), inner_seeds, path, search))
        with np.errstate(invalid="ignore"):
            out[~(self.limits.within(out) & self._admissible_batch(out))] = np.nan
        return out

    def _admissible_batch(self, q: Array) -> np.ndarray:
        """:meth:`_admissible` for (..., dof) rows at once (NaN rows may answer anything)."""
        inner = getattr(self.robot, "_admissible_batch", None)
        return inner(self._inner(q)) if inner is not None else np.ones(q.shape[:-1], dtype=bool)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.robot!r})"


class Parallelogram(_Wrapper):
    """A parallelogram linkage: the controller's joint ``coupled`` is measured
    from a fixed direction instead of from the previous link.

    Forward: the inner model sees ``q[coupled] - scaling * q[driven]``; inverse:
    ``q[coupled] = q_inner[coupled] + scaling * q_inner[driven]``. ``limits`` are
    in the controller's joints (default: the inner model's numbers); solutions
    must also satisfy the inner model's own limits (its geometric joints).
    """

    def __init__(self, robot: Kinematics, scaling: float = 1.0, driven: int = 1, coupled: int = 2,
                 limits: JointLimits | None = None) -> None:
        super().__init__(robot)
        if isinstance(scaling, bool) or not isinstance(scaling, (int, float, np.integer, np.floating)) \
                or not math.isfinite(scaling):
            raise InvalidArgument(f"parallelogram scaling must be a finite number, got {scaling!r}")
        indices = (driven, coupled)
        if not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in indices) \
                or not (0 <= driven < robot.dof and 0 <= coupled < robot.dof and driven != coupled):
            raise InvalidArgument(f"driven and coupled must be two different joint indices of 0..{robot.dof - 1},"
                                  f" got {driven!r} and {coupled!r}")
        self.scaling = float(scaling)
        self.driven = int(driven)
        self.coupled = int(coupled)
        if limits is not None and (not isinstance(limits, JointLimits) or limits.dof != robot.dof):
            raise InvalidArgument(f"parallelogram limits must be JointLimits for {robot.dof} joints")
        self._limits = limits or robot.limits

    @property
    def limits(self) -> JointLimits:  # type: ignore[override]
        return self._limits

    @property
    def coupled_limits(self) -> bool:  # type: ignore[override]
        return True  # the wrapped model's range of the coupled joint applies to a difference of ours

    @property
    def linkage_limits(self) -> tuple[tuple[tuple[float, ...], float, float], ...]:
        weights = [0.0] * self.dof
        weights[self.coupled] = 1.0
        weights[self.driven] = -self.scaling
        inner = self.robot.limits
        own = ((tuple(weights), float(inner.lower[self.coupled]), float(inner.upper[self.coupled])),)
        return own + super().linkage_limits

    def check_joints(self, q: ArrayLike, what: str = "joints") -> None:
        """The controller joints' own ranges, then the linkage's: the inner
        (geometric) coupled joint, ``q[coupled] - scaling * q[driven]``, within
        the wrapped model's range."""
        if type(q) is np.ndarray and q.shape == (self.dof,) and q.dtype == np.float64 and not self.robot.coupled_limits:
            values = q.tolist()
            if self._limits.contains_values(values):
                values[self.coupled] -= self.scaling * values[self.driven]
                if self.robot.limits.contains_values(values):
                    return  # the usual case, answered in plain floats on every control cycle
        self._limits.check_position(q, what)
        try:
            self.robot.check_joints(self._inner(np.asarray(q, dtype=np.float64)), what)
        except LimitViolation as exc:
            if exc.joint != self.coupled:
                raise
            c, d = self.coupled + 1, self.driven + 1
            raise LimitViolation(
                f"{what}: the linkage's angle, joint {c} - {self.scaling:g} x joint {d} ="
                f" {np.degrees(exc.value):.6g} deg, is outside"
                f" [{np.degrees(self.robot.limits.lower[self.coupled]):.3f},"
                f" {np.degrees(self.robot.limits.upper[self.coupled]):.3f}] deg",
                joint=self.coupled, quantity="position", value=exc.value, limit=exc.limit,
            ) from None

    @property
    def periodic(self) -> tuple[bool, ...]:
        # A whole turn of the driven joint moves the coupled one by scaling turns:
        # the same pose only when scaling is a whole number.
        flags = list(self.robot.periodic)
        if self.scaling != round(self.scaling):
            flags[self.driven] = False
        return tuple(flags)

    def _inner(self, q: Array) -> Array:
        q = np.array(q, dtype=np.float64)
        q[..., self.coupled] -= self.scaling * q[..., self.driven]
        return q

    def _outer(self, q: Array) -> Array:
        q = np.array(q, dtype=np.float64)
        q[..., self.coupled] += self.scaling * q[..., self.driven]
        return q

    def _admissible(self, q: list[float]) -> bool:
        inner = list(q)
        inner[self.coupled] -= self.scaling * inner[self.driven]
        lower, upper = self.robot._bounds()[:2]
        return all(lo - 1e-9 <= x <= hi + 1e-9 for x, lo, hi in zip(inner, lower, upper, strict=False)) and self.robot._admissible(inner)

    def frame_and_jacobian_lists(self, q: list[float], jacobian: bool = True) -> tuple[tuple, list | None]:
        inner = list(q)
        inner[self.coupled] -= self.scaling * inner[self.driven]
        frame, jac = self.robot.frame_and_jacobian_lists(inner, jacobian)
        if jac is not None:
            for row in jac:
                row[self.driven] -= self.scaling * row[self.coupled]
        return frame, jac

    def _admissible_batch(self, q: Array) -> np.ndarray:
        inner = self._inner(q)
        limits = self.robot.limits
        with np.errstate(invalid="ignore"):
            ok = ((inner >= limits.lower - 1e-9) & (inner <= limits.upper + 1e-9)).all(axis=-1)
        nested = getattr(self.robot, "_admissible_batch", None)
        return ok & nested(inner) if nested is not None else ok

    def jacobian(self, q: ArrayLike) -> Array:
        # d(inner)/d(outer): the driven joint also turns the coupled one by -scaling.
        jac = np.array(self.robot.jacobian(self._inner(self._joints(q))))
        jac[..., :, self.driven] -= self.scaling * jac[..., :, self.coupled]
        return jac

    def __repr__(self) -> str:
        return f"Parallelogram({self.robot!r}, scaling={self.scaling}, driven={self.driven}, coupled={self.coupled})"


def _check_transform(transform: ArrayLike, name: str) -> Array:
    array = spatial.as_pose(transform, name)
    if array.shape != (4, 4):
        raise InvalidArgument(f"{name} must be one (4, 4) transform, got shape {array.shape}")
    return array.copy()


class Tool(_Wrapper):
    """A tool fixed to the flange: poses are of the tool centre point, ``T`` is
    the flange-to-TCP transform."""

    def __init__(self, robot: Kinematics, tool: ArrayLike) -> None:
        super().__init__(robot)
        self.tool = _check_transform(tool, "tool transform")
        self._tool_inverse = spatial.invert(self.tool)
        self._tool_rows = self.tool.tolist()

    def _inner_pose(self, pose: Array) -> Array:
        return pose @ self._tool_inverse

    def _outer_pose(self, pose: Array) -> Array:
        return pose @ self.tool

    def joint_poses(self, q: ArrayLike) -> Array:
        frames = np.array(self.robot.joint_poses(self._inner(self._joints(q))))
        frames[..., -1, :, :] = frames[..., -1, :, :] @ self.tool
        return frames

    def jacobian(self, q: ArrayLike) -> Array:
        q = self._joints(q)
        jac = np.array(self.robot.jacobian(q))
        flange = self.robot.forward(q)
        lever = np.einsum("...ij,j->...i", flange[..., :3, :3], self.tool[:3, 3])
        # v_tcp = v_flange + w x lever
        jac[..., :3, :] += np.cross(jac[..., 3:, :], lever[..., None, :], axisa=-2, axisb=-1, axisc=-2)
        return jac

    def frame_and_jacobian_lists(self, q: list[float], jacobian: bool = True) -> tuple[tuple, list | None]:
        (x, y, z, p), jac = self.robot.frame_and_jacobian_lists(q, jacobian)
        t = self._tool_rows
        lever = tuple(t[0][3] * x[i] + t[1][3] * y[i] + t[2][3] * z[i] for i in range(3))
        columns = [tuple(t[0][j] * x[i] + t[1][j] * y[i] + t[2][j] * z[i] for i in range(3)) for j in range(3)]
        tip = (p[0] + lever[0], p[1] + lever[1], p[2] + lever[2])
        if jac is not None:  # v_tcp = v_flange + w x lever
            lx, ly, lz = lever
            for i in range(len(jac[0])):
                wx, wy, wz = jac[3][i], jac[4][i], jac[5][i]
                jac[0][i] += wy * lz - wz * ly
                jac[1][i] += wz * lx - wx * lz
                jac[2][i] += wx * ly - wy * lx
        return (columns[0], columns[1], columns[2], tip), jac

    def _candidates_5dof(self, pose, j6, previous):
        if not np.allclose(self.tool[:3, 2], (0, 0, 1), atol=1e-12) or not np.allclose(self.tool[:2, 3], 0, atol=1e-12):
            raise InvalidArgument("a 5-DOF inverse through a tool needs the tool's z axis on the flange's z axis")
        return super()._candidates_5dof(pose, j6, previous)

    def __repr__(self) -> str:
        return f"Tool({self.robot!r}, {self.tool.round(6).tolist()})"


class Base(_Wrapper):
    """The robot mounted at ``T`` (world-to-robot-base): poses are in the world frame."""

    def __init__(self, robot: Kinematics, base: ArrayLike) -> None:
        super().__init__(robot)
        self.base = _check_transform(base, "base transform")
        self._base_inverse = spatial.invert(self.base)
        self._base_rows = self.base.tolist()

    def _inner_pose(self, pose: Array) -> Array:
        return self._base_inverse @ pose

    def _outer_pose(self, pose: Array) -> Array:
        return self.base @ pose

    def joint_poses(self, q: ArrayLike) -> Array:
        return self.base @ self.robot.joint_poses(self._inner(self._joints(q)))

    def frame_and_jacobian_lists(self, q: list[float], jacobian: bool = True) -> tuple[tuple, list | None]:
        frame, jac = self.robot.frame_and_jacobian_lists(q, jacobian)
        b = self._base_rows

        def rotate(v):
            return tuple(b[i][0] * v[0] + b[i][1] * v[1] + b[i][2] * v[2] for i in range(3))

        x, y, z, p = (rotate(v) for v in frame)
        p = (p[0] + b[0][3], p[1] + b[1][3], p[2] + b[2][3])
        if jac is not None:
            for top in (0, 3):
                rows = jac[top:top + 3]
                jac[top:top + 3] = [[b[i][0] * a + b[i][1] * c + b[i][2] * d for a, c, d in zip(*rows, strict=True)]
                                    for i in range(3)]
        return (x, y, z, p), jac

    def jacobian(self, q: ArrayLike) -> Array:
        jac = np.array(self.robot.jacobian(self._joints(q)))
        rotation = self.base[:3, :3]
        jac[..., :3, :] = rotation @ jac[..., :3, :]
        jac[..., 3:, :] = rotation @ jac[..., 3:, :]
        return jac

    def __repr__(self) -> str:
        return f"Base({self.robot!r}, {self.base.round(6).tolist()})"
