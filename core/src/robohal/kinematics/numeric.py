"""A numeric inverse for models without a closed form: damped least squares
from several starts, every result verified by forward kinematics and kept only
inside the joint limits."""

from __future__ import annotations

import numpy as np

from .. import spatial
from .base import (
    POSITION_TOLERANCE,
    ROTATION_TOLERANCE,
    Array,
    Kinematics,
    Solutions,
    no_solution,
    sort_by_distance,
    unique_rows,
)

DAMPING = 1e-3
MAX_ITERATIONS = 200
RESTARTS = 12


def _solve_from(model: Kinematics, target: Array, q: Array) -> Array | None:
    weights = np.ones(6) if not model.position_only else np.array([1, 1, 1, 0, 0, 0], float)
    if model.position_only:
        weights[2] = 0.0 if np.allclose(model.jacobian(q)[2], 0) else 1.0
    for _ in range(MAX_ITERATIONS):
        error = spatial.pose_error(target, model.forward(q)) * weights
        if np.linalg.norm(error[:3]) < POSITION_TOLERANCE * 0.1 and np.linalg.norm(error[3:]) < ROTATION_TOLERANCE * 0.1:
            return q
        jac = model.jacobian(q) * weights[:, None]
        step = jac.T @ np.linalg.solve(jac @ jac.T + DAMPING**2 * np.eye(6), error)
        q = np.clip(q + step, model.limits.lower, model.limits.upper)
    error = spatial.pose_error(target, model.forward(q)) * weights
    if np.linalg.norm(error[:3]) < POSITION_TOLERANCE and np.linalg.norm(error[3:]) < ROTATION_TOLERANCE:
        return q
    return None


def numeric_inverse(model: Kinematics, pose: Array, seed: Array | None = None, restarts: int = RESTARTS) -> Solutions:
    """Solutions found from ``seed`` (if given), the limits' centre and seeded
    random starts; sorted by distance to the centre (or to ``seed``)."""
    rng = np.random.default_rng(0)  # deterministic: same pose, same answer
    limits = model.limits
    lower = np.where(np.isfinite(limits.lower), limits.lower, -np.pi)
    upper = np.where(np.isfinite(limits.upper), limits.upper, np.pi)
    starts = [limits.centre] + [rng.uniform(lower, upper) for _ in range(restarts)]
    if seed is not None:
        starts.insert(0, np.asarray(seed, dtype=float))
    found = [q for q in (_solve_from(model, pose, start.copy()) for start in starts) if q is not None]
    if not found:
        return no_solution(model.dof, "no joint configuration within the limits reaches the pose (numeric search)")
    solutions = unique_rows(np.array(found), tolerance=1e-4)
    return sort_by_distance(solutions, limits.centre if seed is None else np.asarray(seed, float))


def numeric_candidates(model: Kinematics, pose: Array, previous: Array | None) -> tuple[list, str | None]:
    found = numeric_inverse(model, pose, seed=previous)
    return np.asarray(found).tolist(), found.reason
