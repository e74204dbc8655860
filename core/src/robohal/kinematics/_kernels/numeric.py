"""The numeric inverse of a serial chain (the chains kernels' form: fixed transforms, each
followed by a turn about or a slide along z; DH chains, URDF chains, OPW arms): one pose
from a seed, every distinct solution of one pose, and batches of either, the GIL released.

Two strategies race from the seed and then from random restarts, one iteration each in
turn, until one reaches the pose within the tolerances, the time budget runs out or (for
every solution) the starts run out. The race is TRAC-IK's idea (Beeson and Ames,
Humanoids 2015: KDL's Newton with random restarts against an SQP, first one wins), run in
one thread and deterministically (same pose, same answer, unless the budget cuts it):

* Levenberg-Marquardt with Sugihara's damping (Sugihara, "Solvability-unconcerned inverse
  kinematics by the Levenberg-Marquardt method", IEEE T-RO 2011): the damping is the
  error's own size plus a small bias, E + w, so the step is a careful gradient step far
  from the pose and a Gauss-Newton step near it; it converges from far and through
  singularities, where plain Newton does not. Joints are clamped into their ranges.
* Newton with an active set: Gauss-Newton steps (barely damped, at most MAX_STEP rad per
  joint) in which a joint held at a limit by the step is taken out of the Jacobian and the
  step solved again for the others, so the other joints keep moving where clamping would
  stall the whole step; the bounds handled as an SQP handles them (TRAC-IK's second
  strategy), not by clipping.

An attempt restarts from a new random configuration when its error has not shrunk by
PROGRESS within STALL iterations, or after ATTEMPT_ITERATIONS. Restarts are uniform in the
joint ranges (continuous joints in one turn), drawn from a splitmix64 stream with a fixed
seed, so the compiled and the interpreted form draw the same numbers.

Both steps are J^T (J J^T + lambda I)^-1 e, a 6 x 6 solve for any number of joints. The
error e is the position difference and the rotation vector of R_goal R^T (the
differential-IK cycle's error), and a solution is accepted only when its own forward
kinematics is within the tolerances: nothing unverified leaves this module.

This module is Cython's pure-Python mode, as every module of this package: the build
(core/setup.py) compiles it where a C compiler is present, with the C types in the
annotations and the declarations in its .pxd; elsewhere the interpreter runs this same
file, and both forms give the same bits (robohal.kinematics.kernels says which runs).
Only the time budget differs: the interpreted form reaches it after fewer iterations.
"""

from __future__ import annotations

import math
import time

try:
    import cython
except ModuleNotFoundError:  # Cython is not installed: run as plain Python
    from robohal.kinematics._cython_stub import cython

if not cython.compiled:  # compiled, numeric.pxd cimports them
    from .chains import product_column, product_size, product_walk
    from .common import rotation_error, solve6

#: whether this module runs compiled
COMPILED = cython.compiled

# Sugihara's bias w in the damping E + w (E = |e|^2 / 2, m and rad): small enough that near
# the pose the step is Gauss-Newton's (quadratic convergence), large enough to keep J J^T + w I
# well conditioned at a singularity.
LM_BIAS = cython.declare(cython.double, 1e-6)
# The Newton strategy's damping: only what keeps the solve defined at a singularity.
NEWTON_DAMPING = cython.declare(cython.double, 1e-9)
# The largest joint step of a Newton iteration (rad or m): keeps the linearisation honest.
MAX_STEP = cython.declare(cython.double, 0.5)
# An attempt restarts when its E has not fallen below PROGRESS times its best within STALL
# iterations, and after ATTEMPT_ITERATIONS whatever it does.
PROGRESS = cython.declare(cython.double, 0.9)
STALL = cython.declare(cython.int, 6)
ATTEMPT_ITERATIONS = cython.declare(cython.int, 60)
# The random stream's seed: same pose, same answer.
SEED = cython.declare(cython.ulonglong, 0x5EED)
# splitmix64's constants, and the mask that makes Python's integers wrap as C's do
MASK = cython.declare(cython.ulonglong, 0xFFFFFFFFFFFFFFFF)
GOLDEN = cython.declare(cython.ulonglong, 0x9E3779B97F4A7C15)
MIX_1 = cython.declare(cython.ulonglong, 0xBF58476D1CE4E5B9)
MIX_2 = cython.declare(cython.ulonglong, 0x94D049BB133111EB)
# Both strategies: the race.
BOTH = cython.declare(cython.int, 3)
#: what a solve reports per pose: solved (1.0) or not, attempts, and the position (m) and
#: rotation (rad) errors of the closest configuration met
REPORT = 4


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _now() -> cython.double:
    """Seconds on a monotonic clock."""
    if cython.compiled:
        moment = cython.declare(timespec)  # noqa: F821 (posix.time, cimported in numeric.pxd)
        clock_gettime(CLOCK_MONOTONIC, cython.address(moment))  # noqa: F821
        return moment.tv_sec + moment.tv_nsec * 1e-9
    return time.monotonic()


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _random(state: cython.p_ulonglong) -> cython.double:
    """The next number in [0, 1) of a splitmix64 stream (``state[0]`` advanced in place)."""
    state[0] = (state[0] + GOLDEN) & MASK
    z: cython.ulonglong = state[0]
    z = ((z ^ (z >> 30)) * MIX_1) & MASK
    z = ((z ^ (z >> 27)) * MIX_2) & MASK
    z = z ^ (z >> 31)
    return (z >> 11) * 1.1102230246251565e-16  # 2^-53


@cython.cfunc
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _restart(dof: cython.Py_ssize_t, low: cython.const[cython.double][::1], high: cython.const[cython.double][::1],
             state: cython.p_ulonglong, q: cython.p_double) -> cython.int:
    """A random configuration, uniform in [low, high] per joint, into ``q``."""
    j: cython.Py_ssize_t
    for j in range(dof):
        q[j] = low[j] + (high[j] - low[j]) * _random(state)
    return 0


@cython.cfunc
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _error(c: cython.const[cython.double][::1], dof: cython.Py_ssize_t, goal: cython.p_double, q: cython.p_double,
           frame: cython.p_double, axes: cython.p_double, jac: cython.p_double, e: cython.p_double,
           jacobian: cython.bint) -> cython.int:
    """The error of joints ``q`` from ``goal`` (rotation rows 0-8, position 9-11) into ``e``: the
    position difference, then the rotation vector of R_goal R^T; the tip into ``frame`` and, when
    ``jacobian``, the Jacobian into ``jac`` (6 rows of dof)."""
    cols = cython.declare(cython.double[9])
    rotation = cython.declare(cython.double[3])
    j: cython.Py_ssize_t
    column: tuple[cython.double, cython.double, cython.double, cython.double, cython.double, cython.double]
    product_walk(c, dof, q, frame, axes, jacobian)
    for j in range(3):  # the tip's rotation by columns
        cols[3 * j] = frame[j]
        cols[3 * j + 1] = frame[4 + j]
        cols[3 * j + 2] = frame[8 + j]
    rotation_error(goal, cols, rotation)
    e[0] = goal[9] - frame[3]
    e[1] = goal[10] - frame[7]
    e[2] = goal[11] - frame[11]
    e[3] = rotation[0]
    e[4] = rotation[1]
    e[5] = rotation[2]
    if jacobian:
        for j in range(dof):
            column = product_column(c, j, frame, axes)
            jac[j] = column[0]
            jac[dof + j] = column[1]
            jac[2 * dof + j] = column[2]
            jac[3 * dof + j] = column[3]
            jac[4 * dof + j] = column[4]
            jac[5 * dof + j] = column[5]
    return 0


@cython.cfunc
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _dls(dof: cython.Py_ssize_t, jac: cython.p_double, e: cython.p_double, damping: cython.double,
         free: cython.p_double, system: cython.p_double, rhs: cython.p_double, step: cython.p_double) -> cython.int:
    """The damped least-squares step J^T (J J^T + damping I)^-1 e into ``step``, the Jacobian's
    columns weighted by ``free`` (1.0 or 0.0: a joint taken out moves by 0)."""
    r: cython.int
    k: cython.int
    j: cython.Py_ssize_t
    total: cython.double
    for r in range(6):
        for k in range(r + 1):
            total = 0.0
            for j in range(dof):
                total += jac[r * dof + j] * free[j] * jac[k * dof + j]
            system[6 * r + k] = total
            system[6 * k + r] = total
        system[7 * r] += damping
        rhs[r] = e[r]
    solve6(system, rhs, 1)
    for j in range(dof):
        total = 0.0
        for r in range(6):
            total += jac[r * dof + j] * rhs[r]
        step[j] = free[j] * total
    return 0


@cython.cfunc
@cython.nogil
@cython.cdivision(True)
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _iterate(c: cython.const[cython.double][::1], dof: cython.Py_ssize_t, goal: cython.p_double, q: cython.p_double,
             lower: cython.const[cython.double][::1], upper: cython.const[cython.double][::1], newton: cython.bint,
             tolerance_position: cython.double, tolerance_rotation: cython.double, frame: cython.p_double,
             axes: cython.p_double, jac: cython.p_double, e: cython.p_double, system: cython.p_double,
             rhs: cython.p_double, free: cython.p_double, step: cython.p_double, errors: cython.p_double) -> cython.bint:
    """One iteration of a strategy (``newton``, else Levenberg-Marquardt) at ``q``: True, ``q``
    unchanged, when ``q`` reaches the goal within the tolerances; else False with ``q`` moved one
    step. ``errors`` gets the position and rotation errors at ``q``, then E = |e|^2 / 2."""
    j: cython.Py_ssize_t
    largest: cython.double
    scale: cython.double
    moved: cython.double
    position: cython.double
    rotation: cython.double
    held: cython.bint
    _error(c, dof, goal, q, frame, axes, jac, e, True)
    errors[0] = math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
    errors[1] = math.sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5])
    errors[2] = 0.5 * (errors[0] * errors[0] + errors[1] * errors[1])
    for j in range(dof):
        free[j] = 1.0
    if errors[0] <= tolerance_position and errors[1] <= tolerance_rotation:
        # Reached: one Gauss-Newton step more takes the error from the tolerance to round-off
        # (quadratic convergence) at the cost of one forward kinematics; kept only if better.
        _dls(dof, jac, e, NEWTON_DAMPING, free, system, rhs, step)
        for j in range(dof):
            moved = q[j] + step[j]
            free[j] = lower[j] if moved < lower[j] else upper[j] if moved > upper[j] else moved
        _error(c, dof, goal, free, frame, axes, jac, e, False)
        position = math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
        rotation = math.sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5])
        if position * position + rotation * rotation < errors[0] * errors[0] + errors[1] * errors[1]:
            for j in range(dof):
                q[j] = free[j]
            errors[0] = position
            errors[1] = rotation
        return True
    if not newton:  # Sugihara's damping, E + w
        _dls(dof, jac, e, errors[2] + LM_BIAS, free, system, rhs, step)
    else:
        _dls(dof, jac, e, NEWTON_DAMPING, free, system, rhs, step)
        held = False
        for j in range(dof):  # a joint the step pushes against its limit leaves the set
            if (q[j] <= lower[j] and step[j] < 0.0) or (q[j] >= upper[j] and step[j] > 0.0):
                free[j] = 0.0
                held = True
        if held:
            _dls(dof, jac, e, NEWTON_DAMPING, free, system, rhs, step)
        largest = 0.0
        for j in range(dof):
            largest = abs(step[j]) if abs(step[j]) > largest else largest
        scale = MAX_STEP / largest if largest > MAX_STEP else 1.0
        for j in range(dof):
            step[j] = scale * step[j]
    for j in range(dof):
        moved = q[j] + step[j]
        q[j] = lower[j] if moved < lower[j] else upper[j] if moved > upper[j] else moved
    return False


@cython.cfunc
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _race(c: cython.const[cython.double][::1], dof: cython.Py_ssize_t, goal: cython.p_double, seed: cython.p_double,
          lower: cython.const[cython.double][::1], upper: cython.const[cython.double][::1],
          low: cython.const[cython.double][::1], high: cython.const[cython.double][::1],
          tolerance_position: cython.double, tolerance_rotation: cython.double, deadline: cython.double,
          restarts: cython.bint, strategies: cython.int, state: cython.p_ulonglong, out: cython.p_double,
          report: cython.p_double) -> cython.bint:
    """The two strategies in turn (those of the ``strategies`` mask: 1 Levenberg-Marquardt, 2
    Newton; 3 both, the race), an iteration each, both from ``seed`` (clamped into the limits)
    and, with ``restarts``, then from random configurations, until one reaches the goal (its
    joints into ``out``: True), the clock passes ``deadline`` or, without restarts, both attempts
    have ended (False). ``report`` (REPORT values) adds this race's attempts and keeps the
    closest errors met."""
    newton_q = cython.declare(cython.double[32])  # MAX_DOF: each strategy's joints
    lm_q = cython.declare(cython.double[32])
    frame = cython.declare(cython.double[12])
    axes = cython.declare(cython.double[192])  # 6 x MAX_DOF
    jac = cython.declare(cython.double[192])
    system = cython.declare(cython.double[36])
    e = cython.declare(cython.double[6])
    rhs = cython.declare(cython.double[6])
    free = cython.declare(cython.double[32])
    step = cython.declare(cython.double[32])
    errors = cython.declare(cython.double[3])
    best = cython.declare(cython.double[2])  # each strategy's best E in its attempt
    since = cython.declare(cython.int[2])  # its iterations since that best fell by PROGRESS
    iterations = cython.declare(cython.int[2])
    running = cython.declare(cython.bint[2])
    s: cython.int
    j: cython.Py_ssize_t
    q: cython.p_double
    for s in range(2):
        if s == 0:
            q = lm_q
        else:
            q = newton_q
        for j in range(dof):
            q[j] = lower[j] if seed[j] < lower[j] else upper[j] if seed[j] > upper[j] else seed[j]
        best[s] = 1e300
        since[s] = 0
        iterations[s] = 0
        running[s] = (strategies >> s) & 1 != 0
    report[1] += running[0] + running[1]
    while running[0] or running[1]:
        for s in range(2):
            if not running[s]:
                continue
            if s == 0:
                q = lm_q
            else:
                q = newton_q
            if _iterate(c, dof, goal, q, lower, upper, s == 1, tolerance_position, tolerance_rotation, frame, axes,
                        jac, e, system, rhs, free, step, errors):
                for j in range(dof):
                    out[j] = q[j]
                report[0] = 1.0
                report[2] = errors[0]
                report[3] = errors[1]
                return True
            if errors[0] * errors[0] + errors[1] * errors[1] < report[2] * report[2] + report[3] * report[3]:
                report[2] = errors[0]
                report[3] = errors[1]
            iterations[s] += 1
            if errors[2] < PROGRESS * best[s]:
                best[s] = errors[2]
                since[s] = 0
            else:
                since[s] += 1
            if since[s] >= STALL or iterations[s] >= ATTEMPT_ITERATIONS:  # this attempt is over
                if not restarts:
                    running[s] = False
                    continue
                report[1] += 1.0
                _restart(dof, low, high, state, q)
                best[s] = 1e300
                since[s] = 0
                iterations[s] = 0
        if _now() > deadline:
            return False
    return False


@cython.cfunc
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _distinct(dof: cython.Py_ssize_t, q: cython.p_double, found: cython.p_double, count: cython.int,
              apart: cython.double) -> cython.bint:
    """Whether ``q`` differs by more than ``apart`` in some joint from each of the ``count`` rows of ``found``."""
    i: cython.int
    j: cython.Py_ssize_t
    same: cython.bint
    for i in range(count):
        same = True
        for j in range(dof):
            if abs(q[j] - found[i * dof + j]) > apart:
                same = False
                break
        if same:
            return False
    return True


@cython.cfunc
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _collect(c: cython.const[cython.double][::1], dof: cython.Py_ssize_t, goal: cython.p_double,
             centre: cython.const[cython.double][::1], lower: cython.const[cython.double][::1],
             upper: cython.const[cython.double][::1], low: cython.const[cython.double][::1],
             high: cython.const[cython.double][::1], tolerance_position: cython.double,
             tolerance_rotation: cython.double, deadline: cython.double, starts: cython.int, width: cython.int,
             apart: cython.double, found: cython.p_double, report: cython.p_double) -> cython.int:
    """Distinct solutions of one pose (up to ``width``, rows of ``found``): a race without restarts
    from ``centre``, then from ``starts`` - 1 random configurations, until the clock passes
    ``deadline``; their count."""
    seed = cython.declare(cython.double[32])  # MAX_DOF
    q = cython.declare(cython.double[32])
    state = cython.declare(cython.ulonglong[1])
    count: cython.int = 0
    start: cython.int
    j: cython.Py_ssize_t
    state[0] = SEED
    report[0] = 0.0
    report[1] = 0.0
    report[2] = 1e300
    report[3] = 1e300
    for j in range(dof):
        seed[j] = centre[j]
    for start in range(starts):
        if start > 0:
            _restart(dof, low, high, state, seed)
        if _race(c, dof, goal, seed, lower, upper, low, high, tolerance_position, tolerance_rotation, deadline, False,
                 BOTH, state, q, report) and _distinct(dof, q, found, count, apart):
            for j in range(dof):
                found[count * dof + j] = q[j]
            count += 1
            if count >= width:
                break
        if _now() > deadline:
            break
    report[0] = 1.0 if count > 0 else 0.0
    return count


@cython.cfunc
@cython.boundscheck(False)
@cython.wraparound(False)
def _goal(pose: cython.const[cython.double][::1], goal: cython.p_double) -> cython.int:
    """A pose (16: 4 x 4 row-major) as the rotation rows and the position ``goal`` holds."""
    goal[0], goal[1], goal[2], goal[9] = pose[0], pose[1], pose[2], pose[3]
    goal[3], goal[4], goal[5], goal[10] = pose[4], pose[5], pose[6], pose[7]
    goal[6], goal[7], goal[8], goal[11] = pose[8], pose[9], pose[10], pose[11]
    return 0


@cython.cfunc
def _check(c: cython.const[cython.double][::1], dof: cython.Py_ssize_t, lower: cython.const[cython.double][::1],
           upper: cython.const[cython.double][::1], low: cython.const[cython.double][::1],
           high: cython.const[cython.double][::1]) -> cython.int:
    if product_size(c) != dof or len(lower) != dof or len(upper) != dof or len(low) != dof or len(high) != dof:
        raise ValueError(f"the chain, its limits and its sampling ranges need {dof} joints")
    return 0


def solve(c: cython.const[cython.double][::1], pose: cython.const[cython.double][::1],
          seed: cython.const[cython.double][::1], lower: cython.const[cython.double][::1],
          upper: cython.const[cython.double][::1], low: cython.const[cython.double][::1],
          high: cython.const[cython.double][::1], tolerance_position: cython.double,
          tolerance_rotation: cython.double, budget: cython.double, out: cython.double[::1],
          strategies: cython.int = 3) -> tuple:
    """One pose (16: 4 x 4 row-major) from ``seed``: the race with restarts (see the module
    docstring) inside ``budget`` seconds, the joints into ``out``. ``lower`` and ``upper`` bound
    the joints, restarts are drawn in [``low``, ``high``]. Returns the REPORT values: (solved,
    attempts, position error, rotation error), the errors of the solution or of the closest
    configuration met. ``strategies`` runs one of them alone (1 or 2), to compare it with the race."""
    dof: cython.Py_ssize_t = len(seed)
    if strategies < 1 or strategies > BOTH:
        raise ValueError("strategies is 1 (Levenberg-Marquardt), 2 (Newton) or 3 (both, racing)")
    _check(c, dof, lower, upper, low, high)
    if pose.shape[0] != 16 or out.shape[0] != dof:
        raise ValueError("solve needs a pose of 16 values and room for the joints")
    goal = cython.declare(cython.double[12])
    start = cython.declare(cython.double[32])  # MAX_DOF
    q = cython.declare(cython.double[32])
    report = cython.declare(cython.double[4])  # REPORT
    state = cython.declare(cython.ulonglong[1])
    j: cython.Py_ssize_t
    _goal(pose, goal)
    for j in range(dof):
        start[j] = seed[j]
    state[0] = SEED
    report[0], report[1], report[2], report[3] = 0.0, 0.0, 1e300, 1e300
    with cython.nogil:
        _race(c, dof, goal, start, lower, upper, low, high, tolerance_position, tolerance_rotation, _now() + budget, True,
              strategies, state, q, report)
    if report[0] != 0.0:
        for j in range(dof):
            out[j] = q[j]
    return report[0] != 0.0, int(report[1]), report[2], report[3]


def solve_all(c: cython.const[cython.double][::1], pose: cython.const[cython.double][::1],
              centre: cython.const[cython.double][::1], lower: cython.const[cython.double][::1],
              upper: cython.const[cython.double][::1], low: cython.const[cython.double][::1],
              high: cython.const[cython.double][::1], tolerance_position: cython.double,
              tolerance_rotation: cython.double, budget: cython.double, starts: cython.int, apart: cython.double,
              out: cython.double[:, ::1]) -> tuple:
    """Distinct solutions of one pose (16 values) into the rows of ``out`` (width, dof): races
    without restarts from ``centre`` and ``starts`` - 1 random configurations, inside ``budget``
    seconds, kept when they differ from each one found by more than ``apart`` in some joint.
    Returns (count, attempts, position error, rotation error) as :func:`solve` does."""
    dof: cython.Py_ssize_t = len(centre)
    _check(c, dof, lower, upper, low, high)
    width: cython.int = out.shape[0]
    if pose.shape[0] != 16 or out.shape[1] != dof or width > 16:
        raise ValueError("solve_all needs a pose of 16 values and room for at most 16 rows of the joints")
    goal = cython.declare(cython.double[12])
    found = cython.declare(cython.double[512])  # 16 x MAX_DOF
    report = cython.declare(cython.double[4])
    count: cython.int
    i: cython.int
    j: cython.Py_ssize_t
    _goal(pose, goal)
    with cython.nogil:
        count = _collect(c, dof, goal, centre, lower, upper, low, high, tolerance_position, tolerance_rotation,
                         _now() + budget, starts, width, apart, found, report)
    for i in range(count):
        for j in range(dof):
            out[i, j] = found[i * dof + j]
    return count, int(report[1]), report[2], report[3]


def solve_batch(c: cython.const[cython.double][::1], poses: cython.const[cython.double][:, ::1],
                seeds: cython.const[cython.double][:, ::1], path: cython.bint, lower: cython.const[cython.double][::1],
                upper: cython.const[cython.double][::1], low: cython.const[cython.double][::1],
                high: cython.const[cython.double][::1], tolerance_position: cython.double,
                tolerance_rotation: cython.double, budget: cython.double, out: cython.double[:, ::1],
                report: cython.double[:, ::1]) -> None:
    """:func:`solve` for each pose (n, 16) into ``out`` (n, dof; untouched where a pose has no
    solution) and ``report`` (n, REPORT), the GIL released. Each pose starts from its row of
    ``seeds`` (n, dof), or from the one row there is; with ``path``, from the solution of the pose
    before it where that one was solved (the first pose, and one after a failure, from the seed row)."""
    n: cython.Py_ssize_t = poses.shape[0]
    dof: cython.Py_ssize_t = seeds.shape[1]
    _check(c, dof, lower, upper, low, high)
    if (poses.shape[1] != 16 or (seeds.shape[0] != n and seeds.shape[0] != 1) or out.shape[0] != n
            or out.shape[1] != dof or report.shape[0] != n or report.shape[1] != 4):
        raise ValueError("solve_batch needs poses (n, 16), seeds (n or 1, dof) and room for (n, dof) and (n, 4)")
    with cython.nogil:
        _solve_rows(c, dof, poses, seeds, path, lower, upper, low, high, tolerance_position, tolerance_rotation, budget,
                    out, report)


@cython.cfunc
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _solve_rows(c: cython.const[cython.double][::1], dof: cython.Py_ssize_t, poses: cython.const[cython.double][:, ::1],
                seeds: cython.const[cython.double][:, ::1], path: cython.bint, lower: cython.const[cython.double][::1],
                upper: cython.const[cython.double][::1], low: cython.const[cython.double][::1],
                high: cython.const[cython.double][::1], tolerance_position: cython.double,
                tolerance_rotation: cython.double, budget: cython.double, out: cython.double[:, ::1],
                report: cython.double[:, ::1]) -> cython.int:
    goal = cython.declare(cython.double[12])
    start = cython.declare(cython.double[32])  # MAX_DOF
    q = cython.declare(cython.double[32])
    values = cython.declare(cython.double[4])  # REPORT
    state = cython.declare(cython.ulonglong[1])
    i: cython.Py_ssize_t
    j: cython.Py_ssize_t
    row: cython.Py_ssize_t
    previous_solved: cython.bint = False
    for i in range(poses.shape[0]):
        goal[0], goal[1], goal[2], goal[9] = poses[i, 0], poses[i, 1], poses[i, 2], poses[i, 3]
        goal[3], goal[4], goal[5], goal[10] = poses[i, 4], poses[i, 5], poses[i, 6], poses[i, 7]
        goal[6], goal[7], goal[8], goal[11] = poses[i, 8], poses[i, 9], poses[i, 10], poses[i, 11]
        row = i if seeds.shape[0] > 1 else 0
        for j in range(dof):
            start[j] = out[i - 1, j] if path and previous_solved else seeds[row, j]
        state[0] = SEED
        values[0], values[1], values[2], values[3] = 0.0, 0.0, 1e300, 1e300
        previous_solved = _race(c, dof, goal, start, lower, upper, low, high, tolerance_position, tolerance_rotation,
                                _now() + budget, True, BOTH, state, q, values)
        if previous_solved:
            for j in range(dof):
                out[i, j] = q[j]
        for j in range(4):
            report[i, j] = values[j]
    return 0


def solve_all_batch(c: cython.const[cython.double][::1], poses: cython.const[cython.double][:, ::1],
                    centre: cython.const[cython.double][::1], lower: cython.const[cython.double][::1],
                    upper: cython.const[cython.double][::1], low: cython.const[cython.double][::1],
                    high: cython.const[cython.double][::1], tolerance_position: cython.double,
                    tolerance_rotation: cython.double, budget: cython.double, starts: cython.int,
                    apart: cython.double, out: cython.double[:, :, ::1], counts: cython.int[::1]) -> None:
    """:func:`solve_all` for each pose (n, 16) into ``out`` (n, width, dof; rows past a pose's
    count untouched) and ``counts`` (n), the GIL released."""
    n: cython.Py_ssize_t = poses.shape[0]
    dof: cython.Py_ssize_t = len(centre)
    _check(c, dof, lower, upper, low, high)
    if (poses.shape[1] != 16 or out.shape[0] != n or out.shape[2] != dof or out.shape[1] > 16
            or counts.shape[0] != n):
        raise ValueError("solve_all_batch needs poses (n, 16) and room for (n, at most 16, dof) and (n,)")
    with cython.nogil:
        _collect_rows(c, dof, poses, centre, lower, upper, low, high, tolerance_position, tolerance_rotation, budget,
                      starts, apart, out, counts)


@cython.cfunc
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _collect_rows(c: cython.const[cython.double][::1], dof: cython.Py_ssize_t,
                  poses: cython.const[cython.double][:, ::1], centre: cython.const[cython.double][::1],
                  lower: cython.const[cython.double][::1], upper: cython.const[cython.double][::1],
                  low: cython.const[cython.double][::1], high: cython.const[cython.double][::1],
                  tolerance_position: cython.double, tolerance_rotation: cython.double, budget: cython.double,
                  starts: cython.int, apart: cython.double, out: cython.double[:, :, ::1],
                  counts: cython.int[::1]) -> cython.int:
    goal = cython.declare(cython.double[12])
    found = cython.declare(cython.double[512])  # 16 x MAX_DOF
    values = cython.declare(cython.double[4])  # REPORT
    i: cython.Py_ssize_t
    k: cython.int
    j: cython.Py_ssize_t
    count: cython.int
    for i in range(poses.shape[0]):
        goal[0], goal[1], goal[2], goal[9] = poses[i, 0], poses[i, 1], poses[i, 2], poses[i, 3]
        goal[3], goal[4], goal[5], goal[10] = poses[i, 4], poses[i, 5], poses[i, 6], poses[i, 7]
        goal[6], goal[7], goal[8], goal[11] = poses[i, 8], poses[i, 9], poses[i, 10], poses[i, 11]
        count = _collect(c, dof, goal, centre, lower, upper, low, high, tolerance_position, tolerance_rotation,
                         _now() + budget, starts, out.shape[1], apart, found, values)
        for k in range(count):
            for j in range(dof):
                out[i, k, j] = found[k * dof + j]
        counts[i] = count
    return 0
