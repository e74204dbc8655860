"""A numeric inverse for models without a closed form: damped least squares,
run from many starts at once (vectorised over the starts), every result
verified by forward kinematics and kept inside the joint limits.

With a ``previous`` configuration the search starts there alone and stops as
soon as that converges (the solution a controller wants next); only if it fails
do the restarts run.
"""

from __future__ import annotations

import numpy as np

from .. import spatial
from .base import (
    DUPLICATE_TOLERANCE,
    POSITION_TOLERANCE,
    ROTATION_TOLERANCE,
    Array,
    Kinematics,
    Solutions,
    no_solution,
    sort_by_distance,
)

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
    for _ in range(iterations):
        index = np.flatnonzero(active)
        if index.size == 0:
            break
        qa = q[index]
        error = spatial.pose_error(target, model.forward(qa)) * weights
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


def numeric_candidates(model: Kinematics, pose: Array, previous: Array | None) -> tuple[list, str | None]:
    """Verified solutions (within the limits) for one pose; see the module docstring."""
    if previous is not None:
        seed = np.asarray(previous, dtype=np.float64)[None]
        found = _verified(model, pose, _solve_batch(model, pose, seed))
        if len(found):
            return found.tolist(), None
    solved = _solve_batch(model, pose, starts_for(model))
    found = _verified(model, pose, solved)
    if len(found) == 0:
        return [], "no joint configuration within the limits reaches the pose (numeric search from many starts)"
    return _distinct(found, model.max_solutions), None


def numeric_inverse(model: Kinematics, pose: Array, seed: Array | None = None) -> Solutions:
    """Solutions sorted by distance to ``seed`` (or to the limits' centre)."""
    rows, reason = numeric_candidates(model, pose, seed)
    if not rows:
        return no_solution(model.dof, reason or "no solution")
    reference = model.limits.centre if seed is None else np.asarray(seed, dtype=np.float64)
    return sort_by_distance(np.array(rows), np.nan_to_num(reference))


__all__ = ["DUPLICATE_TOLERANCE", "numeric_candidates", "numeric_inverse", "starts_for"]
