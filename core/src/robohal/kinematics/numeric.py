"""A numeric inverse for models without a closed form: damped least squares,
run from many starts at once (vectorised over the starts), every result
verified by forward kinematics and kept inside the joint limits.

With a ``previous`` configuration the search starts there alone and stops as
soon as that converges (the solution a controller wants next); only if it fails
do the restarts run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import spatial
from .solutions import (
    DUPLICATE_TOLERANCE,
    POSITION_TOLERANCE,
    ROTATION_TOLERANCE,
    Array,
    Solutions,
    no_solution,
    sort_by_distance,
)

if TYPE_CHECKING:
    from .base import Kinematics

MAX_ITERATIONS = 120
RESTARTS = 24
# Converge well below the verification tolerances.
CONVERGED = 1e-11
# Largest joint step per iteration (rad): keeps the linearisation honest far from the goal.
MAX_STEP = 0.4
# Distinct solutions of a redundant arm differ by at least this much (rad).
DISTINCT = 1e-3


def _task_weights(model: Kinematics) -> Array:
    return np.array([1, 1, 1, 0, 0, 0], float) if model.position_only else np.ones(6)


def _errors(model: Kinematics, target: Array, q: Array) -> Array:
    error = spatial.pose_error(target, model.forward(q)) * _task_weights(model)
    return error


def _solve_batch(model: Kinematics, target: Array, starts: Array, iterations: int = MAX_ITERATIONS) -> Array:
    """Damped least squares from every row of ``starts`` (K, dof); returns the final joints."""
    limits = model.limits
    lower, upper = limits.lower, limits.upper
    q = np.clip(starts, lower, upper)
    weights = _task_weights(model)
    eye = np.eye(6)
    active = np.ones(len(q), dtype=bool)
    per_row = target.ndim == 3  # one target per start
    for _ in range(iterations):
        index = np.flatnonzero(active)
        if index.size == 0:
            break
        qa = q[index]
        error = spatial.pose_error(target[index] if per_row else target, model.forward(qa)) * weights
        size = np.abs(error).max(axis=1)
        done = size < CONVERGED
        active[index[done]] = False
        if done.all():
            break
        keep = ~done
        index, qa, error = index[keep], qa[keep], error[keep]
        jac = model.jacobian(qa) * weights[:, None]
        # Levenberg-Marquardt-style damping: small near the goal, larger far from it.
        damping = 1e-8 + 1e-2 * (error * error).sum(axis=1)
        system = jac @ np.swapaxes(jac, -1, -2) + damping[:, None, None] * eye
        step = np.einsum("kij,ki->kj", jac, np.linalg.solve(system, error[..., None])[..., 0])
        largest = np.abs(step).max(axis=1, keepdims=True)
        step *= np.minimum(1.0, MAX_STEP / np.maximum(largest, 1e-300))
        q[index] = np.clip(qa + step, lower, upper)
    return q


def _verified(model: Kinematics, target: Array, q: Array) -> Array:
    error = _errors(model, target, q)
    ok = (np.linalg.norm(error[:, :3], axis=1) < POSITION_TOLERANCE) & (np.linalg.norm(error[:, 3:], axis=1) < ROTATION_TOLERANCE)
    ok &= model.limits.within(q)
    return q[ok]


def _distinct(rows: Array, limit: int) -> list[list[float]]:
    kept: list[Array] = []
    for row in rows:
        if all(np.abs(row - other).max() > DISTINCT for other in kept):
            kept.append(row)
            if len(kept) >= limit:
                break
    return [row.tolist() for row in kept]


def starts_for(model: Kinematics, restarts: int = RESTARTS) -> Array:
    """Deterministic starts: the limits' centre, then seeded random joints within the limits."""
    rng = np.random.default_rng(0)  # same pose, same answer
    limits = model.limits
    lower = np.where(np.isfinite(limits.lower), limits.lower, -np.pi)
    upper = np.where(np.isfinite(limits.upper), limits.upper, np.pi)
    centre = 0.5 * (lower + upper)
    return np.vstack([centre, rng.uniform(lower, upper, (restarts, model.dof))])


def _solve_seeded(model: Kinematics, target: Array, seed: Array) -> Array:
    """Damped least squares from one start on plain floats, for chains with a
    scalar forward-kinematics path (a few iterations from a nearby seed)."""
    goal = target.tolist()
    lower, upper = model.limits.lower.tolist(), model.limits.upper.tolist()
    q = [min(max(x, lo), hi) for x, lo, hi in zip(seed.tolist(), lower, upper, strict=True)]
    eye = np.eye(6)
    for _ in range(MAX_ITERATIONS):
        (x, y, z, p), jac = model.frame_and_jacobian_lists(q)
        error = [goal[0][3] - p[0], goal[1][3] - p[1], goal[2][3] - p[2], *spatial.rotation_error_rows(goal, x, y, z)]
        size = max(map(abs, error))
        if size < CONVERGED:
            break
        jw = np.array(jac)
        step = jw.T @ np.linalg.solve(jw @ jw.T + (1e-8 + 1e-2 * sum(e * e for e in error)) * eye, error)
        largest = float(np.abs(step).max())
        if largest > MAX_STEP:
            step *= MAX_STEP / largest
        q = [min(max(a + b, lo), hi) for a, b, lo, hi in zip(q, step.tolist(), lower, upper, strict=True)]
    return np.array([q])


def _beyond_reach(model: Kinematics, positions: Array) -> tuple[Array, Array, float] | None:
    """Which target positions (N, 3) lie outside the model's reach sphere, their distances
    from its centre and its radius; None for a model that gives no bound."""
    bound = getattr(model, "reach_bound", None)
    if bound is None:
        return None
    centre, radius = bound
    offset = positions - centre
    distance = np.hypot(np.hypot(offset[..., 0], offset[..., 1]), offset[..., 2])  # no overflow 1e160 m away
    return distance > radius * (1.0 + 1e-9) + 1e-9, distance, radius


def numeric_candidates(model: Kinematics, pose: Array, previous: Array | None) -> tuple[list, str | None]:
    """Verified solutions (within the limits) for one pose; see the module docstring."""
    beyond = _beyond_reach(model, pose[None, :3, 3])
    if beyond is not None and beyond[0][0]:
        return [], f"target is {beyond[1][0]:.6g} m from the base; the arm reaches at most {beyond[2]:.6g} m"
    if previous is not None:
        seed = np.asarray(previous, dtype=np.float64)
        if not model.position_only:
            solved = _solve_seeded(model, pose, seed)
        else:
            solved = _solve_batch(model, pose, seed[None])
        found = _verified(model, pose, solved)
        if len(found):
            return found.tolist(), None
    solved = _solve_batch(model, pose, starts_for(model))
    found = _verified(model, pose, solved)
    if len(found) == 0:
        return [], "no joint configuration within the limits reaches the pose (numeric search from many starts)"
    return _distinct(found, model.max_solutions), None


def numeric_batch(model: Kinematics, poses: Array, restarts: int = 7) -> Array:
    """Solutions for N poses at once: (N, max_solutions, dof), NaN-padded, each
    verified and within the limits; the search runs from the limits' centre and
    ``restarts`` random starts for every pose, all in one vectorised loop."""
    n, dof = len(poses), model.dof
    beyond = _beyond_reach(model, poses[:, :3, 3])
    if beyond is not None and beyond[0].any():  # no search for what no configuration reaches
        out = np.full((n, model.max_solutions, dof), np.nan)
        inside = ~beyond[0]
        if inside.any():
            out[inside] = numeric_batch(model, poses[inside], restarts)
        return out
    starts = starts_for(model, restarts)  # (S, dof)
    count = len(starts)
    targets = np.repeat(poses, count, axis=0)
    solved = _solve_batch(model, targets, np.tile(starts, (n, 1)))
    error = _errors(model, targets, solved)
    ok = (np.linalg.norm(error[:, :3], axis=1) < POSITION_TOLERANCE) & (np.linalg.norm(error[:, 3:], axis=1) < ROTATION_TOLERANCE)
    ok &= model.limits.within(solved)
    solved[~ok] = np.nan
    solved = solved.reshape(n, count, dof)
    # Keep the first of near-equal solutions, then pack each pose's solutions to the front.
    close = (np.abs(solved[:, :, None, :] - solved[:, None, :, :]) <= DISTINCT).all(axis=-1)
    repeated = np.tril(close, k=-1).any(axis=2)
    solved[repeated] = np.nan
    order = np.argsort(np.isnan(solved[..., 0]), axis=1, kind="stable")
    packed = np.take_along_axis(solved, order[..., None], axis=1)
    width = model.max_solutions
    if packed.shape[1] < width:
        packed = np.concatenate([packed, np.full((n, width - packed.shape[1], dof), np.nan)], axis=1)
    return packed[:, :width]


def numeric_inverse(model: Kinematics, pose: Array, seed: Array | None = None) -> Solutions:
    """Solutions sorted by distance to ``seed`` (or to the limits' centre)."""
    rows, reason = numeric_candidates(model, pose, seed)
    if not rows:
        return no_solution(model.dof, reason or "no solution")
    reference = model.limits.centre if seed is None else np.asarray(seed, dtype=np.float64)
    return sort_by_distance(np.array(rows), np.nan_to_num(reference))


__all__ = ["DUPLICATE_TOLERANCE", "numeric_batch", "numeric_candidates", "numeric_inverse", "starts_for"]
