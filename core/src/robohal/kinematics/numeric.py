"""The numeric inverse, for models without a closed form.

Serial chains (:class:`~robohal.kinematics.DHChain`, :class:`~robohal.kinematics.UrdfChain`,
and models wrapping one) run the compiled kernel (:mod:`robohal.kinematics.kernels`'s
``numeric``: Levenberg-Marquardt racing an active-set Newton, from the seed then from random
restarts, inside a time budget). A seeded search (``inverse_continuing``) returns the first
solution found, from the seed where it can; an unseeded one (``inverse``) races from the
limits' centre and from random starts and keeps the distinct solutions. Batches run the
same kernel on every core, the GIL released.

Any other model (one with a ``forward`` only) takes damped least squares in numpy, run from
many starts at once (vectorised over the starts). Every result of either is verified by
forward kinematics and kept inside the joint limits.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from .. import spatial
from ..errors import InvalidArgument
from .kernels import numeric as _numeric
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

#: s a numeric inverse may search one pose by default: TRAC-IK's default where the kernels are
#: compiled; interpreted (no C compiler at install) the search runs about 100 times slower
#: (measured: a seeded FR3 pose about 9 ms against 0.1 ms), and its budget with it
BUDGET = 0.005 if _numeric.COMPILED else 0.5
#: the starts of an unseeded search for every solution of one pose (the centre of the limits, then random)
STARTS = 32
# The numpy solver's iterations and random starts.
MAX_ITERATIONS = 120
RESTARTS = 24
# Converge well below the verification tolerances.
CONVERGED = 1e-11
# Largest joint step per iteration (rad): keeps the linearisation honest far from the goal.
MAX_STEP = 0.4
# Distinct solutions of a redundant arm differ by at least this much (rad).
DISTINCT = 1e-3


@dataclass(frozen=True)
class Search:
    """How a numeric inverse searches one pose: for at most ``budget`` seconds of its own
    processor time (a busy machine does not cut it short), until a configuration reaches it
    within ``position`` (m) and ``rotation`` (rad)."""

    budget: float = BUDGET
    position: float = POSITION_TOLERANCE
    rotation: float = ROTATION_TOLERANCE


def search_for(budget: float | None = None, tolerance: float | tuple[float, float] | None = None) -> Search:
    """The search that ``budget`` (s) and ``tolerance`` (one number for metres and radians, or
    a (m, rad) pair) ask for, each defaulting to :class:`Search`'s; checked."""
    if budget is None and tolerance is None:
        return DEFAULT_SEARCH
    chosen = BUDGET if budget is None else spatial.as_number(budget, "budget")
    if not chosen > 0.0:
        raise InvalidArgument(f"budget must be a positive number of seconds, got {budget!r}")
    if tolerance is None:
        position, rotation = POSITION_TOLERANCE, ROTATION_TOLERANCE
    else:
        pair = spatial.as_finite(tolerance, "tolerance")
        if pair.shape not in ((), (2,)) or not (pair > 0).all():
            raise InvalidArgument(f"tolerance must be a positive number, or a (metres, radians) pair, got {tolerance!r}")
        position, rotation = (float(pair), float(pair)) if pair.shape == () else (float(pair[0]), float(pair[1]))
    return Search(chosen, position, rotation)


DEFAULT_SEARCH = Search()


# The compiled search on serial chains --------------------------------------------------------


def _ranges(model: Kinematics) -> tuple[Array, Array, Array, Array, Array]:
    """The joint limits the search keeps to, the ranges it draws restarts from (a joint
    without limits: one turn) and their centre, as contiguous arrays (kept with the model
    while its limits stay the same object)."""
    cache = model.__dict__.get("_search_ranges")
    if cache is not None and cache[0] is model.limits:
        return cache[1]
    lower = np.ascontiguousarray(model.limits.lower, dtype=np.float64)
    upper = np.ascontiguousarray(model.limits.upper, dtype=np.float64)
    low = np.where(np.isfinite(lower), lower, -math.pi)
    high = np.where(np.isfinite(upper), upper, math.pi)
    value = (lower, upper, low, high, 0.5 * (low + high))
    model.__dict__["_search_ranges"] = (model.limits, value)
    return value


def _flat(pose: Array) -> Array:
    return np.ascontiguousarray(pose, dtype=np.float64).reshape(-1, 16)


def _missed(search: Search, attempts: int, position: float, rotation: float, seeded: bool) -> str:
    how = f"{attempts} attempts" + (" from the seed and random restarts" if seeded else " from the limits' centre and random starts")
    closest = f"; the closest came within {position:.3g} m and {rotation:.3g} rad" if position < 1e299 else ""
    return (f"no joint configuration within the limits reaches the pose to {search.position:g} m and"
            f" {search.rotation:g} rad ({how} in {search.budget * 1e3:g} ms{closest})")


def chain_candidates(model: Kinematics, constants, pose: Array, previous: Array | None,
                     search: Search) -> tuple[list, str | None]:
    """The compiled search on a serial chain: from ``previous`` the first solution found, else
    the distinct solutions from the limits' centre and random starts (see the module docstring)."""
    lower, upper, low, high, centre = _ranges(model)
    flat = _flat(pose)[0]
    if previous is not None:
        out = np.empty(model.dof)
        solved, attempts, position, rotation = _numeric.solve(
            constants, flat, np.ascontiguousarray(previous, dtype=np.float64), lower, upper, low, high,
            search.position, search.rotation, search.budget, out)
        rows = [out.tolist()] if solved else []
    else:
        out = np.empty((model.max_solutions, model.dof))
        count, attempts, position, rotation = _numeric.solve_all(
            constants, flat, centre, lower, upper, low, high, search.position, search.rotation,
            search.budget, STARTS, DISTINCT, out)
        rows = out[:count].tolist()
    # The kernel accepts a configuration only on its own forward kinematics (the chain's, the same
    # kernel as model.forward) within the tolerances, and keeps every joint inside its limits.
    if not rows:
        return [], _missed(search, attempts, position, rotation, previous is not None)
    return rows, None


def workers() -> int:
    """The cores this process may run on (the batches use them all)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity on this platform
        return max(1, os.cpu_count() or 1)


def _in_parallel(jobs: list, run) -> None:
    """``run(job)`` for every job, on every core (each kernel call releases the GIL)."""
    count = min(workers(), len(jobs))
    if count <= 1:
        for job in jobs:
            run(job)
        return
    with ThreadPoolExecutor(count, thread_name_prefix="robohal-ik") as pool:
        for done in pool.map(run, jobs):
            del done


def _chunks(n: int, pieces: int) -> list[slice]:
    """``pieces`` slices (fewer for a short batch) that cover range(n) in order."""
    bounds = np.linspace(0, n, min(pieces, n) + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in pairwise(bounds) if b > a]


def chain_batch(model: Kinematics, constants, poses: Array, search: Search) -> Array:
    """Distinct solutions of each pose (N, max_solutions, dof), NaN-padded, on every core."""
    lower, upper, low, high, centre = _ranges(model)
    flat = _flat(poses)
    out = np.full((len(flat), model.max_solutions, model.dof), np.nan)
    counts = np.zeros(len(flat), dtype=np.intc)

    def run(part: slice) -> None:
        _numeric.solve_all_batch(constants, flat[part], centre, lower, upper, low, high, search.position,
                                 search.rotation, search.budget, STARTS, DISTINCT, out[part], counts[part])

    _in_parallel(_chunks(len(flat), 4 * workers()), run)
    return out


def chain_nearest_batch(model: Kinematics, constants, poses: Array, seeds: Array, path: bool,
                        search: Search) -> Array:
    """One solution per pose (..., N, dof) from its seed (``seeds`` (..., N, dof) or one (dof,)),
    or with ``path`` from its neighbour's solution along the last axis of the poses; NaN rows
    where none is found. Paths (or slices of seeded poses) run on every core."""
    lower, upper, low, high, _ = _ranges(model)
    dof = model.dof
    shape = poses.shape[:-2]
    flat = _flat(poses)
    out = np.full((len(flat), dof), np.nan)
    report = np.empty((len(flat), _numeric.REPORT))
    if path:  # each path (the last axis of the poses) in order, from its seed row
        length = shape[-1] if shape else 1
        starts = np.broadcast_to(seeds, (*shape[:-1], dof)).reshape(-1, dof) if shape else seeds.reshape(1, dof)
        jobs = [(slice(i * length, (i + 1) * length), starts[i:i + 1]) for i in range(len(flat) // max(length, 1))]
    else:
        rows = np.broadcast_to(seeds, (*shape, dof)).reshape(-1, dof)
        jobs = [(part, rows[part]) for part in _chunks(len(flat), 4 * workers())]

    def run(job: tuple[slice, Array]) -> None:
        part, start = job
        _numeric.solve_batch(constants, flat[part], np.ascontiguousarray(start), path, lower, upper, low, high,
                             search.position, search.rotation, search.budget, out[part], report[part])

    _in_parallel(jobs, run)
    return out.reshape(*shape, dof)


# The numpy search, for any other model ---------------------------------------------------------


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


def _verified(model: Kinematics, target: Array, q: Array, search: Search = DEFAULT_SEARCH) -> Array:
    """The rows of ``q`` whose forward kinematics reach ``target`` within the search's
    tolerances and that lie within the limits."""
    if len(q) == 0:
        return q
    error = _errors(model, target, q)
    ok = (np.linalg.norm(error[:, :3], axis=1) <= search.position) & (np.linalg.norm(error[:, 3:], axis=1) <= search.rotation)
    ok &= model.limits.within(q)
    return q[ok]


def _verified_mask(model: Kinematics, targets: Array, q: Array, search: Search) -> Array:
    """Per row whether ``q`` reaches its target within the tolerances and lies within the limits."""
    if len(q) == 0:
        return np.zeros(0, dtype=bool)
    error = _errors(model, targets, q)
    ok = (np.linalg.norm(error[:, :3], axis=1) <= search.position) & (np.linalg.norm(error[:, 3:], axis=1) <= search.rotation)
    return ok & model.limits.within(q)


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
    cache = model.__dict__.get("_reach_cache")
    if cache is not None and cache[0] is model.limits:  # (a slide's travel counts: keyed on the limits)
        bound = cache[1]
    else:
        bound = getattr(model, "reach_bound", None)
        model.__dict__["_reach_cache"] = (model.limits, bound)
    if bound is None:
        return None
    centre, radius = bound
    offset = positions - centre
    distance = np.hypot(np.hypot(offset[..., 0], offset[..., 1]), offset[..., 2])  # no overflow 1e160 m away
    return distance > radius * (1.0 + 1e-9) + 1e-9, distance, radius


def numeric_candidates(model: Kinematics, pose: Array, previous: Array | None,
                       search: Search = DEFAULT_SEARCH) -> tuple[list, str | None]:
    """Verified solutions (within the limits) for one pose; see the module docstring."""
    beyond = _beyond_reach(model, pose[None, :3, 3])
    if beyond is not None and beyond[0][0]:
        return [], f"target is {beyond[1][0]:.6g} m from the base; the arm reaches at most {beyond[2]:.6g} m"
    constants = model.chain_constants()
    if constants is not None:
        return chain_candidates(model, constants, pose, previous, search)
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


def numeric_batch(model: Kinematics, poses: Array, restarts: int = 7, search: Search = DEFAULT_SEARCH) -> Array:
    """Solutions for N poses at once: (N, max_solutions, dof), NaN-padded, each
    verified and within the limits. A serial chain runs the compiled search on every
    core; any other model runs from the limits' centre and ``restarts`` random starts
    for every pose, all in one vectorised loop."""
    n, dof = len(poses), model.dof
    beyond = _beyond_reach(model, poses[:, :3, 3])
    if beyond is not None and beyond[0].any():  # no search for what no configuration reaches
        out = np.full((n, model.max_solutions, dof), np.nan)
        inside = ~beyond[0]
        if inside.any():
            out[inside] = numeric_batch(model, poses[inside], restarts, search)
        return out
    constants = model.chain_constants()
    if constants is not None:
        out = chain_batch(model, constants, poses, search)
        solved = out.reshape(-1, dof)
        rows = np.flatnonzero(~np.isnan(solved[:, 0]))
        bad = rows[~_verified_mask(model, np.repeat(poses, model.max_solutions, axis=0)[rows], solved[rows], search)]
        solved[bad] = np.nan  # (never seen: the kernel verifies each one itself)
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


__all__ = ["DUPLICATE_TOLERANCE", "Search", "chain_nearest_batch", "numeric_batch", "numeric_candidates", "numeric_inverse",
           "search_for", "starts_for", "workers"]
