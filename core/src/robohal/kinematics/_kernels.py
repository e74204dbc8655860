"""The kinematics' hot paths, written once: the differential-IK cycle's joint box and
damped steps, a DH chain's frame and Jacobian, a chain of fixed transforms each followed
by a joint about or along z (UrdfChain; the batches of DH chains and of OPW Jacobians),
and the OPW solver and forward kinematics for one pose and for many.

This file is Cython's pure-Python mode: the build (core/setup.py) compiles it where a C
compiler is present, with the C types written in the annotations and the libm functions
behind ``math`` (_kernels.pxd); elsewhere the interpreter runs this same file. Both forms
do the same operations in the same order on IEEE doubles (the build turns off
fused multiply-adds), so they give the same bits; tests/core/kinematics/test_kernels.py
runs both. ``ROBOHAL_PURE_PYTHON=1`` runs this source even where it was compiled
(see :mod:`robohal.kinematics.kernels`). Where a kernel makes or reads a numpy array
itself, the compiled form does it through numpy's C API (cimported in _kernels.pxd)
and the interpreted one through numpy: the same numbers.

Inputs are trusted in value (the callers validate them) but not in shape: a wrong length
raises ValueError or IndexError, never reads past an end. Powers are written as
products (``x ** 2`` and a product round differently in C). Divisions in the
GIL-free parts have divisors the geometry keeps away from zero.
"""

from __future__ import annotations

import math

import numpy as _np

try:
    import cython
except ModuleNotFoundError:  # Cython is not installed: run as plain Python
    from ._cython_stub import cython

#: whether this module runs compiled
COMPILED = cython.compiled
# What the interpreted form checks arrays against (compiled, numpy's C API does).
_ndarray = _np.ndarray
_float64 = _np.dtype(_np.float64)
if cython.compiled:
    cnp.import_array()  # noqa: F821 (numpy's C API, cimported in _kernels.pxd, needs this before any use)

PI = cython.declare(cython.double, 3.141592653589793)
TWO_PI = cython.declare(cython.double, 6.283185307179586)
# Constants shared with diffik.py (NEWTON_TOLERANCE there).
NEWTON_TOLERANCE = 1e-4
NEWTON_STEPS = 8
JOINT_CONSTANTS = 10
# The most joints a chain or a Jacobian may have here (the steps' work arrays are this big).
MAX_DOF = 32
# Batches this long release the GIL while they run.
NOGIL_FROM = 256


# The cycle's joint box (diffik) ------------------------------------------------------------


@cython.ccall
def travel_and_slope(base: cython.double, v: cython.double, s: cython.double, t: cython.double,
                     jerk: cython.double, braking: cython.double) -> tuple[cython.double, cython.double]:
    """The travel bound at acceleration ``s`` (see diffik) and its derivative in ``s``."""
    release: cython.double = s if s > 0.0 else 0.0
    peak: cython.double = v + t * s + release * release / (2.0 * jerk)
    if peak <= 0.0:
        return base + t * t * s, t * t
    lever: cython.double = release / jerk + braking / jerk + t
    peak_slope: cython.double = t + release / jerk
    travel: cython.double = base + t * t * s + peak * lever + peak * peak / (2.0 * braking)
    slope: cython.double = t * t + peak_slope * lever + (peak / jerk if s > 0.0 else 0.0) + peak * peak_slope / braking
    return travel, slope


@cython.ccall
def limit_side(base: cython.double, v: cython.double, a_from: cython.double, a_to: cython.double,
               bound: cython.double, t: cython.double, jerk: cython.double, braking: cython.double) -> cython.double:
    """Largest acceleration in [a_from, a_to] whose state still brakes before ``bound``
    (``a_from`` itself when even that one cannot).

    The travel bound is linear in the acceleration ``s`` until the joint would move
    toward the bound at all (the kink ``s_k``), convex and increasing after it. There
    Newton steps approach the root from the unsafe side; the last one is stepped back
    by its travel excess over the smallest slope, which lands on the safe side.
    """
    if a_to <= a_from:
        return a_to
    t2: cython.double = t * t
    # The travel at a_to: this is the usual exit (the bound is far away). It
    # holds on the linear part too, where the travel is at least base + t2 * a_to.
    release: cython.double = a_to if a_to > 0.0 else 0.0
    peak: cython.double = v + t * a_to + release * release / (2.0 * jerk)
    f1: cython.double = base + t2 * a_to
    if peak > 0.0:
        f1 = f1 + peak * (release / jerk + braking / jerk + t) + peak * peak / (2.0 * braking)
    if f1 <= bound:
        return a_to
    # The kink: where the fastest velocity reached turns positive.
    kink: cython.double = -v / t if v > 0.0 else jerk * (-t + math.sqrt(t * t - 2.0 * v / jerk))
    s: cython.double
    if a_to <= kink or base + t2 * kink >= bound:  # the linear part decides
        s = (bound - base) / t2
        s = s if s > a_from else a_from
        return s if s < a_to else a_to
    low: cython.double = kink if kink > a_from else a_from
    # Newton from the unsafe side, starting at the root of the travel without its release
    # terms: exact when that root is not positive (then this first evaluation is the last),
    # beyond the true root otherwise, as releasing only adds travel. Convexity keeps every
    # step on the unsafe side, and the root lies at most (travel - bound) / slope_low below
    # any of them.
    high: cython.double = a_to
    lever: cython.double = braking / jerk + t
    disc: cython.double = (t + lever) * (t + lever) - 2.0 * (base - t * v - bound) / braking
    if disc >= 0.0:
        s = (braking * (math.sqrt(disc) - t - lever) - v) / t
        if low < s < high:
            high = s
    f_high: cython.double
    slope: cython.double
    f_low: cython.double
    slope_low: cython.double
    f_high, slope = travel_and_slope(base, v, high, t, jerk, braking)
    if f_high <= bound:
        return high
    f_low, slope_low = travel_and_slope(base, v, low, t, jerk, braking)
    if f_low >= bound:  # even the start of the convex part cannot brake in time
        return a_from
    back: cython.double = 0.0
    converged: cython.bint = False
    step: cython.int
    for step in range(NEWTON_STEPS):  # noqa: B007 (a C loop counter when compiled)
        back = (f_high - bound) / slope_low
        if back <= NEWTON_TOLERANCE * (1.0 + abs(high)):  # close enough: step back to the safe side
            converged = True
            break
        high -= (f_high - bound) / slope
        f_high, slope = travel_and_slope(base, v, high, t, jerk, braking)
        if f_high <= bound:
            return high
    if not converged:  # (never seen): the step back from where the steps ended
        back = (f_high - bound) / slope_low
    s = high - back
    return s if s > low else low


def box(h3, h2, h1, period: cython.double, joints, goal=None, follow=None) -> tuple[list, list]:
    """The lowest and highest next goal of each joint (diffik.cycle_box), from the last
    three goals and diffik._joint_constants: two lists.

    With a ``goal`` (moving ``follow`` rad per cycle), the box is narrowed so that each
    joint, relative to the moving goal, can still stop at it: no overshoot from rushing
    at it, and no braking-distance lag behind a goal that keeps moving. Only the side
    the joint would pass the goal on is narrowed: the goal, clipped to the box, lands
    there (the other side cannot bind). Never narrower than the hardest braking.
    """
    t: cython.double = period
    t2: cython.double = t * t
    n: cython.Py_ssize_t = min(len(h3), len(h2), len(h1), len(joints))
    has_goal: cython.bint = goal is not None
    if has_goal and (len(goal) != len(joints) or len(follow) != len(joints)):
        raise ValueError("goal and follow need one value per joint")
    out_lo: list = [0.0] * n
    out_hi: list = [0.0] * n
    i: cython.Py_ssize_t
    x3: cython.double
    x2: cython.double
    x1: cython.double
    low: cython.double
    high: cython.double
    vel: cython.double
    acc: cython.double
    jrk: cython.double
    jt: cython.double
    braking: cython.double
    end_braking: cython.double
    velocity_room: cython.double
    position_room: cython.double
    v: cython.double
    a: cython.double
    lo: cython.double
    hi: cython.double
    brake_down: cython.double
    brake_up: cython.double
    cap: cython.double
    room_up: cython.double
    room_down: cython.double
    base: cython.double
    release: cython.double
    peak: cython.double
    reach: cython.double
    nbase: cython.double
    nv: cython.double
    nlo: cython.double
    middle: cython.double
    g: cython.double
    f: cython.double
    rel_v: cython.double
    s: cython.double
    w: cython.double
    gained: cython.double
    for i in range(n):
        x3 = float(h3[i])
        x2 = float(h2[i])
        x1 = float(h1[i])
        constants = joints[i]
        if len(constants) != JOINT_CONSTANTS:
            raise ValueError("each joint needs its 10 box constants")
        low, high, vel, acc, jrk, jt, braking, end_braking, velocity_room, position_room = constants
        v = (x1 - x2) / t
        a = (x1 - 2.0 * x2 + x3) / t2
        lo = a - jt if a - jt > -acc else -acc
        hi = a + jt if a + jt < acc else acc
        brake_down, brake_up = lo, hi  # hardest braking of each direction this cycle
        # Velocity: after releasing the acceleration at the jerk limit, |v| stays within the limit.
        room_up, room_down = vel - v, vel + v
        if room_up < velocity_room:
            cap = -jt + math.sqrt(jt * jt + 2.0 * jrk * (0.0 if room_up < 0.0 else room_up))
            hi = cap if cap < hi else hi
            cap = room_up / t
            hi = cap if cap < hi else hi
        if room_down < velocity_room:
            cap = jt - math.sqrt(jt * jt + 2.0 * jrk * (0.0 if room_down < 0.0 else room_down))
            lo = cap if cap > lo else lo
            cap = (-vel - v) / t
            lo = cap if cap > lo else lo
        base = x1 + t * v
        if not (high - base > position_room and base - low > position_room and -vel <= v <= vel):
            # A joint already nearer its limit than the box's own (see diffik.END_SHARE) may stay there.
            high = x1 if x1 > high else high
            low = x1 if x1 < low else low
            cap = (high - base) / t2
            hi = cap if cap < hi else hi
            cap = (low - base) / t2
            lo = cap if cap > lo else lo
            # Position: the state after this cycle can still stop before either limit. The
            # travel at the box's edge usually shows the limit is far enough without a call.
            release = hi if hi > 0.0 else 0.0
            peak = v + t * hi + release * release / (2.0 * jrk)
            reach = base + t2 * hi
            if peak > 0.0:
                reach = reach + peak * (release / jrk + end_braking / jrk + t) + peak * peak / (2.0 * end_braking)
            if reach > high:
                hi = limit_side(base, v, brake_down, hi, high, t, jrk, end_braking)
            nbase, nv, nlo = -base, -v, -lo  # the lower limit is the upper one of the mirrored joint
            release = nlo if nlo > 0.0 else 0.0
            peak = nv + t * nlo + release * release / (2.0 * jrk)
            reach = nbase + t2 * nlo
            if peak > 0.0:
                reach = reach + peak * (release / jrk + end_braking / jrk + t) + peak * peak / (2.0 * end_braking)
            if reach > -low:
                lo = -limit_side(nbase, nv, -brake_up, nlo, -low, t, jrk, end_braking)
            if lo > hi:  # cannot happen from a history this box produced; stay jerk-feasible
                middle = 0.5 * (lo + hi)
                middle = brake_down if brake_down > middle else middle
                lo = hi = brake_up if brake_up < middle else middle
        if has_goal:
            g = float(goal[i])
            f = float(follow[i])
            # In the frame moving with the goal (which is at g when this cycle ends) the joint
            # keeps its position and moves at v - f / period: it may not pass g from there.
            # A joint landing on g would pass it on the side its velocity points to, once its
            # acceleration is released: only that side needs narrowing.
            rel_v = v - f / t
            s = (g - base) / t2
            w = rel_v + t * s
            gained = s * s / (2.0 * jrk)  # the velocity still gained while the acceleration is released
            if w + (gained if s > 0.0 else 0.0) > 0.0 and g >= base + t2 * lo:
                hi = limit_side(base, rel_v, lo, hi, g, t, jrk, braking)
            if w - (gained if s < 0.0 else 0.0) < 0.0 and g <= base + t2 * hi:
                lo = -limit_side(-base, -rel_v, -hi, -lo, -g, t, jrk, braking)
        out_lo[i] = base + t2 * lo
        out_hi[i] = base + t2 * hi
    return out_lo, out_hi


# The damped least-squares steps (diffik) ----------------------------------------------------


@cython.cfunc
def _solve6(a: cython.p_double, b: cython.p_double, k: cython.int) -> cython.void:
    """Solve the 6 x 6 system a x = b (a row-major) for k right-hand sides (rows of b,
    6 apart, overwritten by x) by Gaussian elimination with partial pivoting, as LAPACK's
    dgesv does. a is overwritten."""
    col: cython.int
    row: cython.int
    pivot: cython.int
    j: cython.int
    r: cython.int
    swap: cython.double
    factor: cython.double
    value: cython.double
    for col in range(6):
        pivot = col
        for row in range(col + 1, 6):
            if abs(a[6 * row + col]) > abs(a[6 * pivot + col]):
                pivot = row
        if pivot != col:
            for j in range(6):
                swap = a[6 * col + j]
                a[6 * col + j] = a[6 * pivot + j]
                a[6 * pivot + j] = swap
            for r in range(k):
                swap = b[6 * r + col]
                b[6 * r + col] = b[6 * r + pivot]
                b[6 * r + pivot] = swap
        for row in range(col + 1, 6):
            factor = a[6 * row + col] / a[6 * col + col]
            if factor == 0.0:
                continue
            for j in range(col + 1, 6):
                a[6 * row + j] -= factor * a[6 * col + j]
            for r in range(k):
                b[6 * r + row] -= factor * b[6 * r + col]
    for r in range(k):
        for row in range(5, -1, -1):
            value = b[6 * r + row]
            for j in range(row + 1, 6):
                value -= a[6 * row + j] * b[6 * r + j]
            b[6 * r + row] = value / a[6 * row + row]


def steps(jac, weights, damping2: cython.double, null_damping2: cython.double, error, motion, offset) -> tuple:
    """The damped least-squares steps for one Jacobian (diffik.DifferentialIk._damped_steps):
    (delta, follow, null) as lists, follow and null None when ``motion`` and ``offset`` are.
    JW = weights * jac; delta = JW^T (JW JW^T + damping2 I)^-1 error (and motion); null is
    offset - JW^T (JW JW^T + null_damping2 I)^-1 JW offset."""
    if len(jac) != 6:
        raise ValueError("the Jacobian must have 6 rows")
    dof: cython.Py_ssize_t = len(jac[0])
    if dof > MAX_DOF:
        raise ValueError(f"at most {MAX_DOF} joints")
    if len(weights) != 6 or len(error) != 6 or (motion is not None and len(motion) != 6):
        raise ValueError("weights, error and motion need 6 values")
    has_motion: cython.bint = motion is not None
    has_offset: cython.bint = offset is not None
    if has_offset and len(offset) != dof:
        raise ValueError("offset needs one value per joint")
    jw = cython.declare(cython.double[192])  # 6 x MAX_DOF, row-major with dof columns
    a = cython.declare(cython.double[36])
    system = cython.declare(cython.double[36])
    rhs = cython.declare(cython.double[12])
    task = cython.declare(cython.double[6])
    r: cython.int
    c: cython.int
    i: cython.Py_ssize_t
    k: cython.int
    weight: cython.double
    total: cython.double
    for r in range(6):
        row = jac[r]
        if len(row) != dof:
            raise ValueError("every Jacobian row needs one value per joint")
        weight = float(weights[r])
        for i in range(dof):
            jw[r * dof + i] = weight * float(row[i])
    # JW JW^T, once for both dampings
    for r in range(6):
        for c in range(r + 1):
            total = 0.0
            for i in range(dof):
                total += jw[r * dof + i] * jw[c * dof + i]
            a[6 * r + c] = total
            a[6 * c + r] = total
    for r in range(6):
        rhs[r] = float(error[r])
        rhs[6 + r] = float(motion[r]) if has_motion else 0.0
    for r in range(36):
        system[r] = a[r]
    for r in range(6):
        system[7 * r] += damping2
    k = 2 if has_motion else 1
    _solve6(system, rhs, k)
    # joint steps: JW^T (JW JW^T + damping^2 I)^-1 (error, motion)
    results = [None, None, None]
    for c in range(k):
        values = [0.0] * dof
        for i in range(dof):
            total = 0.0
            for r in range(6):
                total += jw[r * dof + i] * rhs[6 * c + r]
            values[i] = total
        results[c] = values
    if has_offset:
        # the offset less its part the task sees: offset - JW^T (JW JW^T + null_damping^2 I)^-1 JW offset
        null = [0.0] * dof
        for i in range(dof):
            null[i] = float(offset[i])
        for r in range(6):
            total = 0.0
            for i in range(dof):
                total += jw[r * dof + i] * null[i]
            task[r] = total
            a[7 * r] += null_damping2
        _solve6(a, task, 1)
        for i in range(dof):
            total = 0.0
            for r in range(6):
                total += jw[r * dof + i] * task[r]
            null[i] = null[i] - total
        results[2] = null
    return results[0], results[1], results[2]


# A DH chain's frame and Jacobian (chain.DHChain) -----------------------------------------------

# Layout of DHChain._packed: modified, flange turns, base rows 0-2 (12), flange rows 0-2 (12),
# then per joint offset, kind, a, d, cos(alpha), sin(alpha).
CHAIN_HEADER = 26
CHAIN_PER_JOINT = 6


def chain(c: cython.const[cython.double][::1], q, jacobian: cython.bint) -> tuple:
    """A DH chain's flange frame as (x, y, z, p) column tuples, and its geometric Jacobian
    as 6 row lists when ``jacobian`` (else None). ``c`` is DHChain._packed; joints beyond
    ``q`` stay at zero (their Jacobian columns too)."""
    count: cython.Py_ssize_t = len(c)
    if count < CHAIN_HEADER or (count - CHAIN_HEADER) % CHAIN_PER_JOINT:
        raise ValueError("chain constants have the wrong length")
    dof: cython.Py_ssize_t = (count - CHAIN_HEADER) // CHAIN_PER_JOINT
    n: cython.Py_ssize_t = min(len(q), dof)
    modified: cython.bint = c[0] != 0.0
    flange_turns: cython.bint = c[1] != 0.0
    x0: cython.double = c[2]
    y0: cython.double = c[3]
    z0: cython.double = c[4]
    px: cython.double = c[5]
    x1: cython.double = c[6]
    y1: cython.double = c[7]
    z1: cython.double = c[8]
    py: cython.double = c[9]
    x2: cython.double = c[10]
    y2: cython.double = c[11]
    z2: cython.double = c[12]
    pz: cython.double = c[13]
    # The Jacobian rows: each joint's axis goes to rows 3-5 and, until the flange is known,
    # a point on it to rows 0-2.
    rows = [[0.0] * dof for _ in range(6)] if jacobian else None
    i: cython.Py_ssize_t
    j: cython.Py_ssize_t
    at: cython.Py_ssize_t
    theta: cython.double
    ct: cython.double
    st: cython.double
    kind: cython.double
    a: cython.double
    d: cython.double
    ca: cython.double
    sa: cython.double
    u0: cython.double
    u1: cython.double
    u2: cython.double
    n0: cython.double
    n1: cython.double
    n2: cython.double
    m0: cython.double
    m1: cython.double
    m2: cython.double
    w0: cython.double
    w1: cython.double
    w2: cython.double
    for i in range(n):
        at = CHAIN_HEADER + CHAIN_PER_JOINT * i
        theta = float(q[i]) + c[at]
        kind, a, d, ca, sa = c[at + 1], c[at + 2], c[at + 3], c[at + 4], c[at + 5]
        ct, st = math.cos(theta), math.sin(theta)
        if modified:
            # R = R Rx(alpha): u = ca y + sa z, z = ca z - sa y (alpha 0 or +-90 deg: no products).
            if kind == 0.0:
                u0, u1, u2 = y0, y1, y2
            elif kind == 1.0:
                u0, u1, u2 = z0, z1, z2
                z0, z1, z2 = -y0, -y1, -y2
            elif kind == -1.0:
                u0, u1, u2 = -z0, -z1, -z2
                z0, z1, z2 = y0, y1, y2
            else:
                u0, u1, u2 = ca * y0 + sa * z0, ca * y1 + sa * z1, ca * y2 + sa * z2
                w0, w1, w2 = ca * z0 - sa * y0, ca * z1 - sa * y1, ca * z2 - sa * y2
                z0, z1, z2 = w0, w1, w2
            # p += a x + d z (x is unchanged by Rx), then R = R Rz(theta); the joint axis is z.
            if a != 0.0:
                px += a * x0
                py += a * x1
                pz += a * x2
            if d != 0.0:
                px += d * z0
                py += d * z1
                pz += d * z2
            n0, n1, n2 = ct * x0 + st * u0, ct * x1 + st * u1, ct * x2 + st * u2
            y0, y1, y2 = ct * u0 - st * x0, ct * u1 - st * x1, ct * u2 - st * x2
            x0, x1, x2 = n0, n1, n2
            if jacobian:
                _store_axis(rows, i, z0, z1, z2, px, py, pz)
        else:
            # The joint turns about the current z; p += R (a ct, a st, d); R = R Rz(theta) Rx(alpha).
            if jacobian:
                _store_axis(rows, i, z0, z1, z2, px, py, pz)
            n0, n1, n2 = ct * x0 + st * y0, ct * x1 + st * y1, ct * x2 + st * y2
            m0, m1, m2 = ct * y0 - st * x0, ct * y1 - st * x1, ct * y2 - st * x2
            px += a * n0 + d * z0
            py += a * n1 + d * z1
            pz += a * n2 + d * z2
            x0, x1, x2 = n0, n1, n2
            y0, y1, y2 = ca * m0 + sa * z0, ca * m1 + sa * z1, ca * m2 + sa * z2
            w0, w1, w2 = ca * z0 - sa * m0, ca * z1 - sa * m1, ca * z2 - sa * m2
            z0, z1, z2 = w0, w1, w2
    fx: cython.double = c[17]
    fy: cython.double = c[21]
    fz: cython.double = c[25]
    px += fx * x0 + fy * y0 + fz * z0
    py += fx * x1 + fy * y1 + fz * z1
    pz += fx * x2 + fy * y2 + fz * z2
    if flange_turns:  # (a flange that only shifts, the usual case, leaves the axes as they are)
        columns = []
        for j in range(3):
            columns.append((c[14 + j] * x0 + c[18 + j] * y0 + c[22 + j] * z0,
                            c[14 + j] * x1 + c[18 + j] * y1 + c[22 + j] * z1,
                            c[14 + j] * x2 + c[18 + j] * y2 + c[22 + j] * z2))
        frame = (columns[0], columns[1], columns[2], (px, py, pz))
    else:
        frame = ((x0, x1, x2), (y0, y1, y2), (z0, z1, z2), (px, py, pz))
    if jacobian:
        j0, j1, j2, j3, j4, j5 = rows
        for i in range(n):
            wx: cython.double = j3[i]
            wy: cython.double = j4[i]
            wz: cython.double = j5[i]
            rx: cython.double = px - j0[i]
            ry: cython.double = py - j1[i]
            rz: cython.double = pz - j2[i]
            j0[i] = wy * rz - wz * ry
            j1[i] = wz * rx - wx * rz
            j2[i] = wx * ry - wy * rx
    return frame, rows


@cython.cfunc
@cython.inline
def _store_axis(rows: list, i: cython.Py_ssize_t, wx: cython.double, wy: cython.double, wz: cython.double,
                ox: cython.double, oy: cython.double, oz: cython.double) -> cython.int:
    rows[0][i] = ox
    rows[1][i] = oy
    rows[2][i] = oz
    rows[3][i] = wx
    rows[4][i] = wy
    rows[5][i] = wz
    return 0


# A chain of fixed transforms, each followed by a joint about or along z (urdf.UrdfChain) --------

# Layout of UrdfChain._packed: the flange's rotation rows (9) and shift (3), then per joint
# whether it slides (1.0) or turns (0.0), whether its fixed transform turns (1.0) or only
# shifts (0.0), that transform's rotation rows (9) and shift (3).
PRODUCT_HEADER = cython.declare(cython.int, 12)
PRODUCT_PER_JOINT = cython.declare(cython.int, 14)


@cython.cfunc
def _product_size(c: cython.const[cython.double][::1]) -> cython.Py_ssize_t:
    """The chain's joint count, checked against the constants' length and MAX_DOF."""
    count: cython.Py_ssize_t = len(c)
    dof: cython.Py_ssize_t = (count - PRODUCT_HEADER) // PRODUCT_PER_JOINT
    if count < PRODUCT_HEADER + PRODUCT_PER_JOINT or (count - PRODUCT_HEADER) % PRODUCT_PER_JOINT:
        raise ValueError("chain constants have the wrong length")
    if dof > MAX_DOF:
        raise ValueError(f"a chain of at most {MAX_DOF} joints, not {dof}")
    return dof


@cython.cfunc
def _product_dof(c: cython.const[cython.double][::1], joints: cython.Py_ssize_t) -> cython.Py_ssize_t:
    """The chain's joint count (:func:`_product_size`), which the ``joints`` given must match."""
    dof: cython.Py_ssize_t = _product_size(c)
    if joints != dof:
        raise ValueError(f"the chain needs {dof} joints, got {joints}")
    return dof


def product_pose(c: cython.const[cython.double][::1], q):
    """The tip pose (4, 4) of joints ``q`` as a new array, for ``q`` a float64 array (dof,) or
    a list or tuple of dof floats, all finite; None for anything else (the caller checks that
    and says what is wrong)."""
    dof: cython.Py_ssize_t = _product_size(c)
    values = cython.declare(cython.double[32])  # MAX_DOF
    frame = cython.declare(cython.double[12])
    axes = cython.declare(cython.double[192])
    if not _finite_joints(q, dof, values):
        return None
    _product_walk(c, dof, values, frame, axes, False)
    return _pose_array(frame[0], frame[1], frame[2], frame[3], frame[4], frame[5], frame[6], frame[7], frame[8],
                       frame[9], frame[10], frame[11])


def product_jacobian(c: cython.const[cython.double][::1], q):
    """The tip's geometric Jacobian (6, dof) of joints ``q`` as a new array, for ``q`` as
    :func:`product_pose` takes it; None for anything else."""
    dof: cython.Py_ssize_t = _product_size(c)
    values = cython.declare(cython.double[32])  # MAX_DOF
    frame = cython.declare(cython.double[12])
    axes = cython.declare(cython.double[192])
    if not _finite_joints(q, dof, values):
        return None
    _product_walk(c, dof, values, frame, axes, True)
    jacobian = _new_array(6, dof)
    out: cython.p_double = _data(jacobian)
    j: cython.Py_ssize_t
    column: tuple[cython.double, cython.double, cython.double, cython.double, cython.double, cython.double]
    for j in range(dof):
        column = _product_column(c, j, frame, axes)
        out[j], out[dof + j], out[2 * dof + j] = column[0], column[1], column[2]
        out[3 * dof + j], out[4 * dof + j], out[5 * dof + j] = column[3], column[4], column[5]
    return jacobian


def product_forward_batch(c: cython.const[cython.double][::1], q: cython.const[cython.double][:, ::1],
                          out: cython.double[:, ::1]) -> None:
    """The tip poses of joints ``q`` (n, dof) into ``out`` (n, 16: 4 x 4 row-major), the GIL
    released on long batches."""
    _product_dof(c, q.shape[1])
    if out.shape[0] != q.shape[0] or out.shape[1] != 16:
        raise ValueError("product_forward_batch needs room for (n, 16)")
    if q.shape[0] >= NOGIL_FROM:
        with cython.nogil:
            _product_rows(c, q, out, out, False)
    else:
        _product_rows(c, q, out, out, False)


def product_jacobian_batch(c: cython.const[cython.double][::1], q: cython.const[cython.double][:, ::1],
                           out: cython.double[:, ::1]) -> None:
    """The tip's geometric Jacobians of joints ``q`` (n, dof) into ``out`` (n, 6 * dof: 6 x dof
    row-major; linear rows first, in the base frame), the GIL released on long batches."""
    dof: cython.Py_ssize_t = _product_dof(c, q.shape[1])
    if out.shape[0] != q.shape[0] or out.shape[1] != 6 * dof:
        raise ValueError("product_jacobian_batch needs room for (n, 6 * dof)")
    if q.shape[0] >= NOGIL_FROM:
        with cython.nogil:
            _product_rows(c, q, out, out, True)
    else:
        _product_rows(c, q, out, out, True)


@cython.cfunc
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _product_rows(c: cython.const[cython.double][::1], q: cython.const[cython.double][:, ::1],
                  poses: cython.double[:, ::1], jacobians: cython.double[:, ::1], jacobian: cython.bint) -> cython.int:
    """Each row's tip pose into ``poses`` (n, 16), or its Jacobian into ``jacobians`` (n, 6 dof)."""
    dof: cython.Py_ssize_t = q.shape[1]
    values = cython.declare(cython.double[32])  # MAX_DOF: the row's joints
    frame = cython.declare(cython.double[12])  # the tip: rotation rows, then p
    axes = cython.declare(cython.double[192])  # 6 x MAX_DOF: each joint's axis, then a point on it
    i: cython.Py_ssize_t
    j: cython.Py_ssize_t
    column: tuple[cython.double, cython.double, cython.double, cython.double, cython.double, cython.double]
    for i in range(q.shape[0]):
        for j in range(dof):
            values[j] = q[i, j]
        _product_walk(c, dof, values, frame, axes, jacobian)
        if not jacobian:
            for j in range(12):
                poses[i, j] = frame[j]
            poses[i, 12] = 0.0
            poses[i, 13] = 0.0
            poses[i, 14] = 0.0
            poses[i, 15] = 1.0
            continue
        for j in range(dof):
            column = _product_column(c, j, frame, axes)
            jacobians[i, j] = column[0]
            jacobians[i, dof + j] = column[1]
            jacobians[i, 2 * dof + j] = column[2]
            jacobians[i, 3 * dof + j] = column[3]
            jacobians[i, 4 * dof + j] = column[4]
            jacobians[i, 5 * dof + j] = column[5]
    return 0


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _product_column(c: cython.const[cython.double][::1], j: cython.Py_ssize_t, frame: cython.p_double,
                    axes: cython.p_double) -> tuple[cython.double, cython.double, cython.double, cython.double,
                                                    cython.double, cython.double]:
    """Joint ``j``'s Jacobian column from the tip and the axes of :func:`_product_walk`."""
    wx: cython.double = axes[6 * j]
    wy: cython.double = axes[6 * j + 1]
    wz: cython.double = axes[6 * j + 2]
    if c[PRODUCT_HEADER + PRODUCT_PER_JOINT * j] != 0.0:  # a slide moves the tip along its axis
        return wx, wy, wz, 0.0, 0.0, 0.0
    rx: cython.double = frame[3] - axes[6 * j + 3]
    ry: cython.double = frame[7] - axes[6 * j + 4]
    rz: cython.double = frame[11] - axes[6 * j + 5]
    return wy * rz - wz * ry, wz * rx - wx * rz, wx * ry - wy * rx, wx, wy, wz


def product_chain(c: cython.const[cython.double][::1], q, jacobian: cython.bint) -> tuple:
    """One configuration ``q`` (dof numbers), as :func:`chain` gives it: the tip frame as
    (x, y, z, p) column tuples, and its geometric Jacobian as 6 row lists when ``jacobian``
    (else None)."""
    dof: cython.Py_ssize_t = _product_dof(c, len(q))
    values = cython.declare(cython.double[32])  # MAX_DOF
    frame = cython.declare(cython.double[12])
    axes = cython.declare(cython.double[192])
    j: cython.Py_ssize_t
    for j in range(dof):
        values[j] = float(q[j])
    _product_walk(c, dof, values, frame, axes, jacobian)
    tip = ((frame[0], frame[4], frame[8]), (frame[1], frame[5], frame[9]), (frame[2], frame[6], frame[10]),
           (frame[3], frame[7], frame[11]))
    if not jacobian:
        return tip, None
    rows = [[0.0] * dof for _ in range(6)]
    column: tuple[cython.double, cython.double, cython.double, cython.double, cython.double, cython.double]
    for j in range(dof):
        column = _product_column(c, j, frame, axes)
        rows[0][j], rows[1][j], rows[2][j] = column[0], column[1], column[2]
        rows[3][j], rows[4][j], rows[5][j] = column[3], column[4], column[5]
    return tip, rows


@cython.cfunc
@cython.inline
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _product_walk(c: cython.const[cython.double][::1], dof: cython.Py_ssize_t, q: cython.p_double,
                  frame: cython.p_double, axes: cython.p_double, with_axes: cython.bint) -> cython.int:
    """The tip of joints ``q`` (dof values) into ``frame`` (rotation rows, p at 3, 7, 11) and, ``with_axes``, each
    joint's axis and origin into ``axes``: pose = pose @ fixed_j @ Rz(q_j) (or Tz(q_j)), then
    the flange. The rotation is kept as its columns x, y, z."""
    x0: cython.double = 1.0
    x1: cython.double = 0.0
    x2: cython.double = 0.0
    y0: cython.double = 0.0
    y1: cython.double = 1.0
    y2: cython.double = 0.0
    z0: cython.double = 0.0
    z1: cython.double = 0.0
    z2: cython.double = 1.0
    px: cython.double = 0.0
    py: cython.double = 0.0
    pz: cython.double = 0.0
    j: cython.Py_ssize_t
    at: cython.Py_ssize_t
    t0: cython.double
    t1: cython.double
    t2: cython.double
    n0: cython.double
    n1: cython.double
    n2: cython.double
    m0: cython.double
    m1: cython.double
    m2: cython.double
    value: cython.double
    ct: cython.double
    st: cython.double
    for j in range(dof):
        at = PRODUCT_HEADER + PRODUCT_PER_JOINT * j
        t0, t1, t2 = c[at + 11], c[at + 12], c[at + 13]
        px += x0 * t0 + y0 * t1 + z0 * t2
        py += x1 * t0 + y1 * t1 + z1 * t2
        pz += x2 * t0 + y2 * t1 + z2 * t2
        if c[at + 1] != 0.0:  # R = R A: column k is x A[0][k] + y A[1][k] + z A[2][k]
            n0 = x0 * c[at + 2] + y0 * c[at + 5] + z0 * c[at + 8]
            n1 = x1 * c[at + 2] + y1 * c[at + 5] + z1 * c[at + 8]
            n2 = x2 * c[at + 2] + y2 * c[at + 5] + z2 * c[at + 8]
            m0 = x0 * c[at + 3] + y0 * c[at + 6] + z0 * c[at + 9]
            m1 = x1 * c[at + 3] + y1 * c[at + 6] + z1 * c[at + 9]
            m2 = x2 * c[at + 3] + y2 * c[at + 6] + z2 * c[at + 9]
            z0, z1, z2 = (x0 * c[at + 4] + y0 * c[at + 7] + z0 * c[at + 10],
                          x1 * c[at + 4] + y1 * c[at + 7] + z1 * c[at + 10],
                          x2 * c[at + 4] + y2 * c[at + 7] + z2 * c[at + 10])
            x0, x1, x2 = n0, n1, n2
            y0, y1, y2 = m0, m1, m2
        value = q[j]
        if c[at] != 0.0:
            px += value * z0
            py += value * z1
            pz += value * z2
        else:
            ct, st = math.cos(value), math.sin(value)
            n0, n1, n2 = ct * x0 + st * y0, ct * x1 + st * y1, ct * x2 + st * y2
            y0, y1, y2 = ct * y0 - st * x0, ct * y1 - st * x1, ct * y2 - st * x2
            x0, x1, x2 = n0, n1, n2
        if with_axes:
            axes[6 * j], axes[6 * j + 1], axes[6 * j + 2] = z0, z1, z2
            axes[6 * j + 3], axes[6 * j + 4], axes[6 * j + 5] = px, py, pz
    # The flange: p += R shift, R = R F.
    t0, t1, t2 = c[9], c[10], c[11]
    frame[3] = px + x0 * t0 + y0 * t1 + z0 * t2
    frame[7] = py + x1 * t0 + y1 * t1 + z1 * t2
    frame[11] = pz + x2 * t0 + y2 * t1 + z2 * t2
    for j in range(3):  # column j of R F
        frame[j] = x0 * c[j] + y0 * c[3 + j] + z0 * c[6 + j]
        frame[4 + j] = x1 * c[j] + y1 * c[3 + j] + z1 * c[6 + j]
        frame[8 + j] = x2 * c[j] + y2 * c[3 + j] + z2 * c[6 + j]
    return 0


# OPW (opw.OPW) --------------------------------------------------------------------------------

# Layout of OPW._packed: a1, a2, b, c1, c2, c3, c4, k, psi, signs (6), offsets (6), then the
# thresholds NEAR_DEGENERATE, RIM_SLACK, VERIFY_POSITION, VERIFY_ROTATION, WRIST_DEGENERATE.
OPW_CONSTANTS = 26


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _wrap(x: cython.double) -> cython.double:
    """An angle into (-pi, pi]. Within a turn of that range by one subtraction (exact for
    |x| <= 4 pi, Sterbenz), else pi - (pi - x) % 2 pi with Python's remainder (fmod moved
    to the divisor's sign), which needs no GIL."""
    if x > PI:
        if x - TWO_PI <= PI:
            return x - TWO_PI
    elif x > -PI:
        return x
    elif x + TWO_PI > -PI:
        return x + TWO_PI
    rest: cython.double = math.fmod(PI - x, TWO_PI)
    if rest < 0.0:
        rest += TWO_PI
    return PI - rest


@cython.cfunc
@cython.inline
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _flange(c: cython.const[cython.double][::1], q0: cython.double, q1: cython.double, q2: cython.double, q3: cython.double,
            q4: cython.double, q5: cython.double) -> tuple[cython.double, cython.double, cython.double, cython.double,
                                                           cython.double, cython.double, cython.double, cython.double,
                                                           cython.double, cython.double, cython.double, cython.double]:
    """The flange pose of joints q: R row-major, then p (12 values).
    Frames: Rz(t1) Trans(a1, b, c1) Ry(t2) Trans(0, 0, c2) Ry(t3) Trans(a2, 0, c3) Rz(t4) Ry(t5) Rz(t6) Trans(0, 0, c4)."""
    t1: cython.double = c[9] * q0 - c[15]
    t2: cython.double = c[10] * q1 - c[16]
    t23: cython.double = t2 + c[11] * q2 - c[17]
    t4: cython.double = c[12] * q3 - c[18]
    t5: cython.double = c[13] * q4 - c[19]
    t6: cython.double = c[14] * q5 - c[20]
    return _pose(c, math.sin(t1), math.cos(t1), math.sin(t2), math.cos(t2), math.sin(t23), math.cos(t23),
                 math.sin(t4), math.cos(t4), math.sin(t5), math.cos(t5), math.sin(t6), math.cos(t6))


@cython.cfunc
@cython.inline
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _pose(c: cython.const[cython.double][::1], sn1: cython.double, cs1: cython.double, sn2: cython.double,
          cs2: cython.double, s23: cython.double, c23: cython.double, sn4: cython.double, cs4: cython.double,
          sn5: cython.double, cs5: cython.double, sn6: cython.double, cs6: cython.double) -> tuple[cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double]:
    """The flange pose (R row-major, then p) from the sines and cosines of the model angles
    t1, t2, t2 + t3, t4, t5 and t6."""
    # R3_6 = Rz(t4) Ry(t5) Rz(t6)
    c4c5: cython.double = cs4 * cs5
    s4c5: cython.double = sn4 * cs5
    e00: cython.double = c4c5 * cs6 - sn4 * sn6
    e01: cython.double = -c4c5 * sn6 - sn4 * cs6
    e02: cython.double = cs4 * sn5
    e10: cython.double = s4c5 * cs6 + cs4 * sn6
    e11: cython.double = -s4c5 * sn6 + cs4 * cs6
    e12: cython.double = sn4 * sn5
    e20: cython.double = -sn5 * cs6
    e21: cython.double = sn5 * sn6
    e22: cython.double = cs5
    # R0_3 = Rz(t1) Ry(t23); rows 0/1 share u = c23 e0j + s23 e2j.
    u0: cython.double = c23 * e00 + s23 * e20
    u1: cython.double = c23 * e01 + s23 * e21
    u2: cython.double = c23 * e02 + s23 * e22
    r02: cython.double = cs1 * u2 - sn1 * e12
    r12: cython.double = sn1 * u2 + cs1 * e12
    r22: cython.double = c23 * e22 - s23 * e02
    xw: cython.double = c[0] + c[4] * sn2 + c[1] * c23 + c[5] * s23
    zw: cython.double = c[3] + c[4] * cs2 - c[1] * s23 + c[5] * c23
    return (cs1 * u0 - sn1 * e10, cs1 * u1 - sn1 * e11, r02,
            sn1 * u0 + cs1 * e10, sn1 * u1 + cs1 * e11, r12,
            c23 * e20 - s23 * e00, c23 * e21 - s23 * e01, r22,
            cs1 * xw - sn1 * c[2] + c[6] * r02, sn1 * xw + cs1 * c[2] + c[6] * r12, zw + c[6] * r22)


@cython.cfunc
def _check_opw_constants(c: cython.const[cython.double][::1]) -> cython.int:
    if len(c) != OPW_CONSTANTS:
        raise ValueError("OPW constants have the wrong length")
    return 0


def opw_flange(c: cython.const[cython.double][::1], q) -> tuple:
    """The flange pose of joints ``q`` (6 numbers): 12 floats, R row-major, then p."""
    _check_opw_constants(c)
    if len(q) != 6:
        raise ValueError("opw_flange needs 6 joints")
    return _flange(c, float(q[0]), float(q[1]), float(q[2]), float(q[3]), float(q[4]), float(q[5]))


def opw_pose(c: cython.const[cython.double][::1], q):
    """The flange pose (4, 4) of joints ``q`` as a new array, for ``q`` a float64 array (6,)
    or a list or tuple of 6 floats, all finite; None for anything else (the caller checks
    that and says what is wrong). One call from the joints to the pose: a controller's path."""
    _check_opw_constants(c)
    v = cython.declare(cython.double[6])
    if not _finite_joints(q, 6, v):
        return None
    m: tuple[cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double]
    m = _flange(c, v[0], v[1], v[2], v[3], v[4], v[5])
    return _pose_array(m[0], m[1], m[2], m[9], m[3], m[4], m[5], m[10], m[6], m[7], m[8], m[11])


@cython.cfunc
def _finite_joints(q, n: cython.Py_ssize_t, v: cython.p_double) -> cython.bint:
    """Whether ``q`` is ``n`` finite floats (a float64 array (n,), or a list or tuple of floats), copied to ``v``."""
    i: cython.Py_ssize_t
    if type(q) is list or type(q) is tuple:
        if len(q) != n:
            return False
        for i in range(n):
            item = q[i]
            if type(item) is not float:
                return False
            v[i] = item
    elif cython.compiled:  # the array's memory read in place
        if not cnp.PyArray_CheckExact(q):  # noqa: F821 (numpy's C API, cimported in _kernels.pxd)
            return False
        array: cnp.ndarray = q  # noqa: F821
        if cnp.PyArray_TYPE(array) != cnp.NPY_DOUBLE or cnp.PyArray_NDIM(array) != 1 or cnp.PyArray_DIM(array, 0) != n:  # noqa: F821
            return False
        data: cython.p_char = cnp.PyArray_BYTES(array)  # noqa: F821
        stride: cython.Py_ssize_t = cnp.PyArray_STRIDE(array, 0)  # noqa: F821
        for i in range(n):
            v[i] = cython.cast(cython.p_double, data + i * stride)[0]
    elif type(q) is _ndarray and q.dtype == _float64 and q.shape == (n,):
        values = q.tolist()
        for i in range(n):
            v[i] = values[i]
    else:
        return False
    for i in range(n):
        if not math.isfinite(v[i]):
            return False
    return True


@cython.cfunc
def _pose_array(r00: cython.double, r01: cython.double, r02: cython.double, px: cython.double,
                r10: cython.double, r11: cython.double, r12: cython.double, py: cython.double,
                r20: cython.double, r21: cython.double, r22: cython.double, pz: cython.double):
    """A new pose array (4, 4) of these rows, the last one 0 0 0 1."""
    pose = _new_array(4, 4)
    out: cython.p_double = _data(pose)
    out[0], out[1], out[2], out[3] = r00, r01, r02, px
    out[4], out[5], out[6], out[7] = r10, r11, r12, py
    out[8], out[9], out[10], out[11] = r20, r21, r22, pz
    out[12], out[13], out[14], out[15] = 0.0, 0.0, 0.0, 1.0
    return pose


@cython.cfunc
def _new_array(rows: cython.Py_ssize_t, columns: cython.Py_ssize_t):
    """A new float64 array (rows, columns), not yet filled."""
    if cython.compiled:  # numpy's C API: the allocation without a call through Python
        shape = cython.declare(cnp.npy_intp[2])  # noqa: F821 (numpy's C API, cimported in _kernels.pxd)
        shape[0] = rows
        shape[1] = columns
        return cnp.PyArray_EMPTY(2, shape, cnp.NPY_DOUBLE, 0)  # noqa: F821
    return _np.empty((rows, columns))


@cython.cfunc
def _data(array) -> cython.p_double:
    """The numbers of a new array of :func:`_new_array`, in a row."""
    if cython.compiled:
        return cython.cast(cython.p_double, cnp.PyArray_DATA(array))  # noqa: F821
    return array.reshape(-1)  # (a view: writing to it fills the array)


def opw_forward_batch(c: cython.const[cython.double][::1], q: cython.const[cython.double][:, ::1], out: cython.double[:, ::1]) -> None:
    """The flange poses of joints ``q`` (n, 6) into ``out`` (n, 16), the GIL released."""
    _check_opw_constants(c)
    n: cython.Py_ssize_t = q.shape[0]
    if q.shape[1] != 6 or out.shape[0] != n or out.shape[1] != 16:
        raise ValueError("opw_forward_batch needs joints (n, 6) and room for (n, 16)")
    if n >= NOGIL_FROM:
        with cython.nogil:
            _forward_rows(c, q, out)
    else:
        _forward_rows(c, q, out)


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _forward_rows(c: cython.const[cython.double][::1], q: cython.const[cython.double][:, ::1], out: cython.double[:, ::1]) -> cython.int:
    i: cython.Py_ssize_t
    for i in range(q.shape[0]):
        _forward_row(c, q, out, i)
    return 0


@cython.cfunc
@cython.inline
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _forward_row(c: cython.const[cython.double][::1], q: cython.const[cython.double][:, ::1], out: cython.double[:, ::1],
                 i: cython.Py_ssize_t) -> cython.int:
    m: tuple[cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double]
    m = _flange(c, q[i, 0], q[i, 1], q[i, 2], q[i, 3], q[i, 4], q[i, 5])
    out[i, 0] = m[0]
    out[i, 1] = m[1]
    out[i, 2] = m[2]
    out[i, 3] = m[9]
    out[i, 4] = m[3]
    out[i, 5] = m[4]
    out[i, 6] = m[5]
    out[i, 7] = m[10]
    out[i, 8] = m[6]
    out[i, 9] = m[7]
    out[i, 10] = m[8]
    out[i, 11] = m[11]
    out[i, 12] = 0.0
    out[i, 13] = 0.0
    out[i, 14] = 0.0
    out[i, 15] = 1.0
    return 0


def opw(c: cython.const[cython.double][::1], m, reference, j6) -> tuple:
    """The verified solutions of one pose (3 rows of 4) as joint lists in (-pi, pi]:
    (rows, failure, near_degenerate). ``failure`` is None, or why there is none:
    ("offset", cx, cy), ("reach", u, v) or ("degenerate",). ``reference`` (6 joints) fixes
    what a singular pose leaves open; ``j6`` (a model angle, or None) makes it 5-DOF."""
    _check_opw_constants(c)
    if len(m) < 3 or len(reference) != 6:
        raise ValueError("the pose needs 3 rows of 4 and the reference 6 joints")
    row0, row1, row2 = m[0], m[1], m[2]
    if len(row0) != 4 or len(row1) != 4 or len(row2) != 4:
        raise ValueError("the pose needs 3 rows of 4")
    r00: cython.double = float(row0[0])
    r01: cython.double = float(row0[1])
    r02: cython.double = float(row0[2])
    px: cython.double = float(row0[3])
    r10: cython.double = float(row1[0])
    r11: cython.double = float(row1[1])
    r12: cython.double = float(row1[2])
    py: cython.double = float(row1[3])
    r20: cython.double = float(row2[0])
    r21: cython.double = float(row2[1])
    r22: cython.double = float(row2[2])
    pz: cython.double = float(row2[3])
    reference0: cython.double = float(reference[0])
    reference3: cython.double = float(reference[3])
    has_j6: cython.bint = j6 is not None
    t6_given: cython.double = float(j6) if has_j6 else 0.0
    rows = cython.declare(cython.double[48])
    info = cython.declare(cython.double[4])
    info[0], info[1], info[2], info[3] = 0.0, 0.0, 0.0, 0.0
    count: cython.int = _solve_pose(c, r00, r01, r02, px, r10, r11, r12, py, r20, r21, r22, pz, reference0, reference3,
                                    has_j6, t6_given, rows, info)
    if count:
        return [[rows[6 * i + j] for j in range(6)] for i in range(count)], None, info[0] != 0.0
    if info[1] == 1.0:
        return [], ("offset", info[2], info[3]), False
    if info[1] == 2.0:
        return [], ("reach", info[2], info[3]), False
    return [], ("degenerate",), False


# The OPW maths both solvers share: the wrist centre, a shoulder branch, an elbow branch.

@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _opw_centre(c: cython.const[cython.double][::1], px: cython.double, py: cython.double, pz: cython.double, r02: cython.double, r12: cython.double, r22: cython.double,
                ref1: cython.double) -> tuple[cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double]:
    """The wrist centre (cx, cy, cz); rho2, its squared distance from the J1 axis less b^2; r, the
    root of rho2 (0 where rho2 is negative); phi, its azimuth (the model angle ``ref1`` on the
    axis, where J1 is free); and v, its height above J2."""
    c4: cython.double = c[6]
    cx: cython.double = px - c4 * r02
    cy: cython.double = py - c4 * r12
    cz: cython.double = pz - c4 * r22
    rho2: cython.double = cx * cx + cy * cy - c[2] * c[2]
    r: cython.double = math.sqrt(rho2 if rho2 > 0.0 else 0.0)
    phi: cython.double = math.atan2(cy, cx) if cx * cx + cy * cy > 1e-24 else ref1
    return cx, cy, cz, rho2, r, phi, cz - c[3]


@cython.cfunc
@cython.inline
@cython.nogil
@cython.cdivision(True)
@cython.exceptval(check=False)
def _opw_shoulder(c: cython.const[cython.double][::1], xp: cython.double, phi: cython.double, v: cython.double, r00: cython.double, r01: cython.double, r02: cython.double, r10: cython.double, r11: cython.double,
                  r12: cython.double) -> tuple[cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double]:
    """One shoulder branch (the wrist centre at ``xp`` = +-r ahead of J1): (u, the cosine of the
    elbow angle before it is clamped to [-1, 1] (beyond it: out of reach), t1, sin t1, cos t1,
    the rows h = Rz(t1)^T R of the target's x, y, z columns' first entries, R0_1^T R's (1, 2)
    entry, the direction of the wrist from J2, the elbow's sine and its angle and share of J2
    for the positive sine (the negative one negates both: atan2 is odd in y))."""
    a1: cython.double = c[0]
    c2: cython.double = c[4]
    k: cython.double = c[7]
    u: cython.double = xp - a1
    reach: cython.double = (u * u + v * v - (c2 * c2 + k * k)) / (2.0 * c2 * k)
    d: cython.double = reach if reach > -1.0 else -1.0
    d = d if d < 1.0 else 1.0
    t1: cython.double = phi - math.atan2(c[2], xp)
    sn1: cython.double = math.sin(t1)
    cs1: cython.double = math.cos(t1)
    root: cython.double = math.sqrt(1.0 - d * d)
    return (u, reach, t1, sn1, cs1, cs1 * r00 + sn1 * r10, cs1 * r01 + sn1 * r11, cs1 * r02 + sn1 * r12,
            cs1 * r12 - sn1 * r02, math.atan2(u, v), root, math.atan2(root, d), math.atan2(k * root, c2 + k * d))


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _opw_elbow(c: cython.const[cython.double][::1], down: cython.bint, elbow_angle: cython.double, elbow_share: cython.double, along: cython.double,
               sn1: cython.double, cs1: cython.double, h_x: cython.double, h_y: cython.double, h_z: cython.double, m12: cython.double, r00: cython.double, r10: cython.double, r20: cython.double, r21: cython.double, r22: cython.double, ref4: cython.double,
               has_j6: cython.bint, t6_given: cython.double) -> tuple[cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double]:
    """One elbow branch of a shoulder branch (``down``: the negative elbow sine): (t2, t3,
    sin(t2 + t3), cos(t2 + t3), t4, t5, t6, sin t5) for the unflipped wrist. Below the wrist's
    degenerate sine J4 is the model angle ``ref4`` and J6 keeps t4 + t6 (J5 = 0) or t4 - t6
    (J5 = pi); 5-DOF (``has_j6``), t6 is ``t6_given``."""
    t3: cython.double = (-elbow_angle if down else elbow_angle) - c[8]
    t2: cython.double = along - (-elbow_share if down else elbow_share)
    t23: cython.double = t2 + t3
    s23: cython.double = math.sin(t23)
    c23: cython.double = math.cos(t23)
    # M = R0_3^T R: its third column and third row give the wrist angles.
    m02: cython.double = c23 * h_z - s23 * r22
    m22: cython.double = s23 * h_z + c23 * r22
    sin5: cython.double = math.sqrt(m02 * m02 + m12 * m12)
    t4: cython.double
    t6: cython.double
    m00: cython.double
    m10: cython.double
    if sin5 >= c[25]:
        t4 = math.atan2(m12, m02)
        t6 = t6_given if has_j6 else math.atan2(s23 * h_y + c23 * r21, -(s23 * h_x + c23 * r20))
    else:
        t4 = ref4
        if has_j6:
            t6 = t6_given
        else:
            m00 = c23 * h_x - s23 * r20
            m10 = cs1 * r10 - sn1 * r00
            if m22 > 0.0:  # J5 = 0: only t4 + t6 is fixed
                t6 = math.atan2(m10, m00) - t4
            else:  # J5 = pi: only t4 - t6 is fixed
                t6 = t4 - math.atan2(-m10, -m00)
    return t2, t3, s23, c23, t4, math.atan2(sin5, m22), t6, sin5


@cython.cfunc
@cython.cdivision(True)
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _solve_pose(c: cython.const[cython.double][::1], r00: cython.double, r01: cython.double, r02: cython.double,
                px: cython.double, r10: cython.double, r11: cython.double, r12: cython.double, py: cython.double,
                r20: cython.double, r21: cython.double, r22: cython.double, pz: cython.double,
                reference0: cython.double, reference3: cython.double, has_j6: cython.bint, t6_given: cython.double,
                rows: cython.p_double, info: cython.p_double) -> cython.int:
    """The verified solutions of one pose into ``rows`` (up to 8 of 6), their count returned.
    ``info``: whether two may coincide (1.0) or not, then why there is none: 1.0 with the
    wrist centre (x, y) inside the offset b, 2.0 with the shoulder-to-wrist (u, v) out of
    reach, 3.0 for a degenerate pose."""
    a1: cython.double = c[0]
    a2: cython.double = c[1]
    b: cython.double = c[2]
    c1: cython.double = c[3]
    c2: cython.double = c[4]
    c3: cython.double = c[5]
    near_limit: cython.double = c[21]
    rim_slack: cython.double = c[22]
    verify_position: cython.double = c[23]
    verify_rotation: cython.double = c[24]
    cx: cython.double
    cy: cython.double
    cz: cython.double
    rho2: cython.double
    r: cython.double
    phi: cython.double
    v: cython.double
    cx, cy, cz, rho2, r, phi, v = _opw_centre(c, px, py, pz, r02, r12, r22, c[9] * reference0 - c[15])
    info[0] = 0.0
    if rho2 < -1e-12:
        info[1], info[2], info[3] = 1.0, cx, cy
        return 0
    near_degenerate: cython.bint = r < near_limit
    ref4: cython.double = c[12] * reference3 - c[18]
    count: cython.int = 0
    out_of_reach: cython.bint = False  # (u, v) of the first shoulder branch out of reach: the reason if none is found
    side: cython.int
    elbow: cython.int
    flip: cython.bint
    u: cython.double
    reach: cython.double
    t1: cython.double
    sn1: cython.double
    cs1: cython.double
    h_x: cython.double
    h_y: cython.double
    h_z: cython.double
    m12: cython.double
    along: cython.double
    root: cython.double
    elbow_angle: cython.double
    elbow_share: cython.double
    q1: cython.double
    q2: cython.double
    q3: cython.double
    t2: cython.double
    t3: cython.double
    s23: cython.double
    c23: cython.double
    xw: cython.double
    zw: cython.double
    sin5: cython.double
    t4: cython.double
    t5: cython.double
    t6: cython.double
    sn4: cython.double
    cs4: cython.double
    sn5: cython.double
    cs5: cython.double
    sn6: cython.double
    cs6: cython.double
    e02: cython.double
    e12: cython.double
    e00: cython.double
    e10: cython.double
    e20: cython.double
    u0: cython.double
    u2: cython.double
    at: cython.int
    for side in range(2):
        u, reach, t1, sn1, cs1, h_x, h_y, h_z, m12, along, root, elbow_angle, elbow_share = _opw_shoulder(
            c, r if side == 0 else -r, phi, v, r00, r01, r02, r10, r11, r12)
        if abs(reach) > 1.0 + rim_slack:
            if not out_of_reach:
                out_of_reach = True
                info[2], info[3] = u, v
            continue
        if root < near_limit:
            near_degenerate = True
        q1 = _wrap(c[9] * (t1 + c[15]))
        for elbow in range(2 if root > 0.0 else 1):  # a straight elbow is one branch
            t2, t3, s23, c23, t4, t5, t6, sin5 = _opw_elbow(c, elbow == 1, elbow_angle, elbow_share, along, sn1, cs1,
                                                            h_x, h_y, h_z, m12, r00, r10, r20, r21, r22, ref4, has_j6,
                                                            t6_given)
            # Wrist centre check (the arm part of the forward kinematics).
            xw = a1 + c2 * math.sin(t2) + a2 * c23 + c3 * s23
            zw = c1 + c2 * math.cos(t2) - a2 * s23 + c3 * c23
            if (abs(cs1 * xw - sn1 * b - cx) > verify_position or abs(sn1 * xw + cs1 * b - cy) > verify_position
                    or abs(zw - cz) > verify_position):
                continue
            if sin5 < near_limit:
                near_degenerate = True
            flip = sin5 >= c[25]
            # Verify the rotation: R0_3 R3_6 against the target's z (and, unless 5-DOF, x) axis.
            # The flipped wrist (t4 + pi, -t5, t6 + pi) is the same rotation with the signs of
            # sin/cos t4, sin t5 and sin/cos t6 negated: every product below is the same
            # number, so this one check verifies both wrists.
            sn4, cs4 = math.sin(t4), math.cos(t4)
            sn5, cs5 = math.sin(t5), math.cos(t5)
            e02, e12 = cs4 * sn5, sn4 * sn5
            u2 = c23 * e02 + s23 * cs5
            if (abs(cs1 * u2 - sn1 * e12 - r02) > verify_rotation or abs(sn1 * u2 + cs1 * e12 - r12) > verify_rotation
                    or abs(c23 * cs5 - s23 * e02 - r22) > verify_rotation):
                continue
            if not has_j6:
                sn6, cs6 = math.sin(t6), math.cos(t6)
                e00 = cs4 * cs5 * cs6 - sn4 * sn6
                e10 = sn4 * cs5 * cs6 + cs4 * sn6
                e20 = -sn5 * cs6
                u0 = c23 * e00 + s23 * e20
                if (abs(cs1 * u0 - sn1 * e10 - r00) > verify_rotation or abs(sn1 * u0 + cs1 * e10 - r10) > verify_rotation
                        or abs(c23 * e20 - s23 * e00 - r20) > verify_rotation):
                    continue
            # Joints from model angles, each into (-pi, pi].
            q2 = _wrap(c[10] * (t2 + c[16]))
            q3 = _wrap(c[11] * (t3 + c[17]))
            at = 6 * count
            rows[at], rows[at + 1], rows[at + 2] = q1, q2, q3
            rows[at + 3], rows[at + 4] = _wrap(c[12] * (t4 + c[18])), _wrap(c[13] * (t5 + c[19]))
            rows[at + 5] = _wrap(c[14] * (t6 + c[20]))
            count += 1
            if flip:
                at = 6 * count
                rows[at], rows[at + 1], rows[at + 2] = q1, q2, q3
                rows[at + 3], rows[at + 4] = _wrap(c[12] * (t4 + PI + c[18])), _wrap(c[13] * (c[19] - t5))
                rows[at + 5] = _wrap(c[14] * ((t6 if has_j6 else t6 + PI) + c[20]))
                count += 1
    info[0] = 1.0 if near_degenerate else 0.0
    if count == 0:
        info[1] = 2.0 if out_of_reach else 3.0
    return count


def opw_sorted(c: cython.const[cython.double][::1], pose: cython.const[cython.double][:, ::1],
               lower: cython.const[cython.double][::1], upper: cython.const[cython.double][::1],
               centre: cython.const[cython.double][::1], out: cython.double[:, ::1]) -> cython.int:
    """The usual single-pose inverse in one call: the solutions of a (4, 4) ``pose``, all
    inside [lower, upper], none near a singularity, sorted (stably) by summed distance to
    ``centre``, into ``out`` (8, 6); their count. 0 when the pose needs the general path:
    it fails base.pose_rows's checks, has no solution, lies near a singularity (solutions
    may coincide) or has one outside the limits."""
    _check_opw_constants(c)
    if (pose.shape[0] != 4 or pose.shape[1] != 4 or len(lower) != 6 or len(upper) != 6 or len(centre) != 6
            or out.shape[0] != 8 or out.shape[1] != 6):
        raise ValueError("opw_sorted needs a (4, 4) pose, 6 limits and a centre, and room for (8, 6)")
    i: cython.int
    j: cython.int
    at: cython.int
    x0: cython.double = pose[0, 0]
    x1: cython.double = pose[1, 0]
    x2: cython.double = pose[2, 0]
    z0: cython.double = pose[0, 2]
    z1: cython.double = pose[1, 2]
    z2: cython.double = pose[2, 2]
    for i in range(3):  # the checks of base.pose_rows, in the same arithmetic (NaN fails every one)
        for j in range(4):
            if not (abs(pose[i, j]) < math.inf):
                return 0
    if not (abs(pose[3, 0]) <= 1e-9 and abs(pose[3, 1]) <= 1e-9 and abs(pose[3, 2]) <= 1e-9
            and abs(pose[3, 3] - 1.0) <= 1e-9):
        return 0
    if (abs(x0 * x0 + x1 * x1 + x2 * x2 - 1.0) > 1e-6 or abs(z0 * z0 + z1 * z1 + z2 * z2 - 1.0) > 1e-6
            or abs(x0 * z0 + x1 * z1 + x2 * z2) > 1e-6 or abs(z1 * x2 - z2 * x1 - pose[0, 1]) > 1e-6
            or abs(z2 * x0 - z0 * x2 - pose[1, 1]) > 1e-6 or abs(z0 * x1 - z1 * x0 - pose[2, 1]) > 1e-6):
        return 0
    rows = cython.declare(cython.double[48])
    info = cython.declare(cython.double[4])
    keys = cython.declare(cython.double[8])
    order = cython.declare(cython.int[8])
    count: cython.int = _solve_pose(c, pose[0, 0], pose[0, 1], pose[0, 2], pose[0, 3], pose[1, 0], pose[1, 1],
                                    pose[1, 2], pose[1, 3], pose[2, 0], pose[2, 1], pose[2, 2], pose[2, 3],
                                    centre[0], centre[3], False, 0.0, rows, info)
    if count == 0 or info[0] != 0.0:
        return 0
    key: cython.double
    value: cython.double
    for i in range(count):
        key = 0.0
        for j in range(6):
            value = rows[6 * i + j]
            if value < lower[j] or value > upper[j]:
                return 0
            key += abs(value - centre[j])
        # insertion sort, stable: a row goes after every row with an equal key
        at = i
        while at > 0 and keys[at - 1] > key:
            keys[at] = keys[at - 1]
            order[at] = order[at - 1]
            at -= 1
        keys[at] = key
        order[at] = i
    for i in range(count):
        for j in range(6):
            out[i, j] = rows[6 * order[i] + j]
    return count


def opw_inverse_batch(c: cython.const[cython.double][::1], poses: cython.const[cython.double][:, ::1], lower: cython.const[cython.double][::1],
                      upper: cython.const[cython.double][::1], reference: cython.const[cython.double][::1], out: cython.double[:, :, ::1]) -> None:
    """All 8 branches of each pose (n, 16: 4 x 4 row-major) into ``out`` (n, 8, 6): slot
    4 * back + 2 * elbow + flip, joints in (-pi, pi] moved by a turn into [lower, upper]
    where that helps, NaN where the branch does not exist, leaves the limits or does not
    reproduce the pose (every branch is checked by the forward kinematics of its final
    joints). ``reference`` (6 joints) fixes what a singular pose leaves open. The GIL is
    released on long batches."""
    _check_opw_constants(c)
    n: cython.Py_ssize_t = poses.shape[0]
    if (poses.shape[1] != 16 or len(lower) != 6 or len(upper) != 6 or len(reference) != 6
            or out.shape[0] != n or out.shape[1] != 8 or out.shape[2] != 6):
        raise ValueError("opw_inverse_batch needs poses (n, 16), 6 limits and a reference, and room for (n, 8, 6)")
    missing: cython.double = float("nan")
    if n >= NOGIL_FROM:
        with cython.nogil:
            _inverse_rows(c, poses, lower, upper, reference, out, missing)
    else:
        _inverse_rows(c, poses, lower, upper, reference, out, missing)


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _inverse_rows(c: cython.const[cython.double][::1], poses: cython.const[cython.double][:, ::1], lower: cython.const[cython.double][::1],
                  upper: cython.const[cython.double][::1], reference: cython.const[cython.double][::1], out: cython.double[:, :, ::1],
                  missing: cython.double) -> cython.int:
    i: cython.Py_ssize_t
    for i in range(poses.shape[0]):
        _inverse_row(c, poses, lower, upper, reference, out, i, missing)
    return 0


@cython.cfunc
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.cdivision(True)
@cython.exceptval(check=False)
def _inverse_row(c: cython.const[cython.double][::1], poses: cython.const[cython.double][:, ::1], lower: cython.const[cython.double][::1],
                 upper: cython.const[cython.double][::1], reference: cython.const[cython.double][::1], out: cython.double[:, :, ::1],
                 i: cython.Py_ssize_t, missing: cython.double) -> cython.int:
    rim_slack: cython.double = c[22]
    verify: cython.double = c[23]
    r00: cython.double = poses[i, 0]
    r01: cython.double = poses[i, 1]
    r02: cython.double = poses[i, 2]
    px: cython.double = poses[i, 3]
    r10: cython.double = poses[i, 4]
    r11: cython.double = poses[i, 5]
    r12: cython.double = poses[i, 6]
    py: cython.double = poses[i, 7]
    r20: cython.double = poses[i, 8]
    r21: cython.double = poses[i, 9]
    r22: cython.double = poses[i, 10]
    pz: cython.double = poses[i, 11]
    ref4: cython.double = c[12] * reference[3] - c[18]
    _skip: cython.double  # what the batch does not need of the shared maths
    rho2: cython.double
    r: cython.double
    phi: cython.double
    v: cython.double
    _skip, _skip, _skip, rho2, r, phi, v = _opw_centre(c, px, py, pz, r02, r12, r22, c[9] * reference[0] - c[15])
    bad_base: cython.bint = rho2 < -1e-12
    side: cython.int
    elbow: cython.int
    wrist: cython.int
    j: cython.int
    slot: cython.int
    bad: cython.bint
    reach: cython.double
    t1: cython.double
    sn1: cython.double
    cs1: cython.double
    h_x: cython.double
    h_y: cython.double
    h_z: cython.double
    m12: cython.double
    along: cython.double
    elbow_angle: cython.double
    elbow_share: cython.double
    t2: cython.double
    t3: cython.double
    sin5: cython.double
    t4: cython.double
    t5: cython.double
    t6: cython.double
    value: cython.double
    error: cython.double
    degenerate: cython.bint
    shoulder_ready: cython.bint
    arm_ready: cython.bint
    arm1: cython.double
    arm2: cython.double
    arm23: cython.double
    fs1: cython.double = 0.0
    fc1: cython.double = 0.0
    fs2: cython.double = 0.0
    fc2: cython.double = 0.0
    fs23: cython.double = 0.0
    fc23: cython.double = 0.0
    w4: cython.double
    w5: cython.double
    w6: cython.double
    q = cython.declare(cython.double[6])
    theta = cython.declare(cython.double[6])
    for side in range(2):
        _skip, reach, t1, sn1, cs1, h_x, h_y, h_z, m12, along, _skip, elbow_angle, elbow_share = _opw_shoulder(
            c, r if side == 0 else -r, phi, v, r00, r01, r02, r10, r11, r12)
        if abs(reach) > 1.0 + rim_slack or bad_base:  # out of reach: no branch of this shoulder
            for slot in range(4 * side, 4 * side + 4):
                for j in range(6):
                    out[i, slot, j] = missing
            continue
        shoulder_ready = False
        for elbow in range(2):
            t2, t3, _skip, _skip, t4, t5, t6, sin5 = _opw_elbow(c, elbow == 1, elbow_angle, elbow_share, along, sn1, cs1,
                                                            h_x, h_y, h_z, m12, r00, r10, r20, r21, r22, ref4, False, 0.0)
            degenerate = not (sin5 >= c[25])  # J5 = 0 (pi): J4 stays at the reference, J6 keeps t4 + t6 (t4 - t6)
            arm_ready = False
            for wrist in range(2):
                slot = 4 * side + 2 * elbow + wrist
                theta[0] = t1
                theta[1] = t2
                theta[2] = t3
                theta[3] = t4 if wrist == 0 else t4 + PI
                theta[4] = t5 if wrist == 0 else -t5
                theta[5] = t6 if wrist == 0 else t6 + PI
                bad = degenerate and wrist == 1  # at J5 = 0 the flipped wrist repeats the other
                for j in range(6):
                    value = _wrap((theta[j] + c[15 + j]) * c[9 + j])
                    # into the limits by a turn where that helps, then inside or out
                    if value < lower[j] and lower[j] > -PI:
                        value += TWO_PI
                    elif value > upper[j] and upper[j] < PI:
                        value -= TWO_PI
                    if value < lower[j] - 1e-9 or value > upper[j] + 1e-9:
                        bad = True
                    q[j] = value
                if not bad:
                    # The forward kinematics of the final joints must give the pose back (a
                    # shoulder's branches share the final J1, an elbow's both wrists J2 and J3,
                    # so their sines and cosines are taken once).
                    if not shoulder_ready:
                        arm1 = c[9] * q[0] - c[15]
                        fs1, fc1 = math.sin(arm1), math.cos(arm1)
                        shoulder_ready = True
                    if not arm_ready:
                        arm2 = c[10] * q[1] - c[16]
                        arm23 = arm2 + c[11] * q[2] - c[17]
                        fs2, fc2 = math.sin(arm2), math.cos(arm2)
                        fs23, fc23 = math.sin(arm23), math.cos(arm23)
                        arm_ready = True
                    w4 = c[12] * q[3] - c[18]
                    w5 = c[13] * q[4] - c[19]
                    w6 = c[14] * q[5] - c[20]
                    m: tuple[cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double]
                    m = _pose(c, fs1, fc1, fs2, fc2, fs23, fc23, math.sin(w4), math.cos(w4), math.sin(w5), math.cos(w5),
                              math.sin(w6), math.cos(w6))
                    error = 0.0
                    error = _larger_error(error, m[0], r00)
                    error = _larger_error(error, m[1], r01)
                    error = _larger_error(error, m[2], r02)
                    error = _larger_error(error, m[3], r10)
                    error = _larger_error(error, m[4], r11)
                    error = _larger_error(error, m[5], r12)
                    error = _larger_error(error, m[6], r20)
                    error = _larger_error(error, m[7], r21)
                    error = _larger_error(error, m[8], r22)
                    error = _larger_error(error, m[9], px)
                    error = _larger_error(error, m[10], py)
                    error = _larger_error(error, m[11], pz)
                    bad = not (error <= verify)  # (NaN fails too)
                for j in range(6):
                    out[i, slot, j] = missing if bad else q[j]
    return 0


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _larger_error(error: cython.double, value: cython.double, wanted: cython.double) -> cython.double:
    """max(error, |value - wanted|), NaN kept (a NaN difference fails the check)."""
    difference: cython.double = abs(value - wanted)
    return difference if not (difference <= error) else error


# Checks of many poses ------------------------------------------------------------------------


def first_odd_pose(poses: cython.const[cython.double][:, ::1]) -> cython.Py_ssize_t:
    """The index of the first pose (n, 16: 4 x 4 row-major) that is not plainly a rigid
    transform, else -1: a NaN or inf, a last row off 0 0 0 1 by 0.5e-9, an entry of R^T R
    off the identity's by 0.5e-6, or a mirror. Half the tolerances of spatial.as_pose, so
    every pose it refuses is odd here (the caller lets it decide on those)."""
    if poses.shape[1] != 16:
        raise ValueError("first_odd_pose needs poses (n, 16)")
    found: cython.Py_ssize_t = -1
    if poses.shape[0] >= NOGIL_FROM:
        with cython.nogil:
            found = _first_odd_pose(poses)
    else:
        found = _first_odd_pose(poses)
    return found


@cython.cfunc
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _first_odd_pose(poses: cython.const[cython.double][:, ::1]) -> cython.Py_ssize_t:
    i: cython.Py_ssize_t
    a: cython.int
    b: cython.int
    gram: cython.double
    for i in range(poses.shape[0]):
        if not (abs(poses[i, 12]) <= 0.5e-9 and abs(poses[i, 13]) <= 0.5e-9 and abs(poses[i, 14]) <= 0.5e-9
                and abs(poses[i, 15] - 1.0) <= 0.5e-9):
            return i
        if not (abs(poses[i, 3]) < 1e300 and abs(poses[i, 7]) < 1e300 and abs(poses[i, 11]) < 1e300):
            return i
        for a in range(3):  # columns a and b of R: their dot product is R^T R's entry (a, b)
            for b in range(a, 3):
                gram = poses[i, a] * poses[i, b] + poses[i, 4 + a] * poses[i, 4 + b] + poses[i, 8 + a] * poses[i, 8 + b]
                if not (abs(gram - (1.0 if a == b else 0.0)) <= 0.5e-6):  # (NaN and inf fail too)
                    return i
        # det R as (x cross y) . z: near +1 for a rotation, near -1 for a mirror
        if not ((poses[i, 4] * poses[i, 9] - poses[i, 8] * poses[i, 5]) * poses[i, 2]
                + (poses[i, 8] * poses[i, 1] - poses[i, 0] * poses[i, 9]) * poses[i, 6]
                + (poses[i, 0] * poses[i, 5] - poses[i, 4] * poses[i, 1]) * poses[i, 10] > 0.5):
            return i
    return -1


# The control cycle: the setpoint guard's pass and the differential-IK cycle's own arithmetic ----
#
# These run once per control cycle, beside the box and the damped steps: each replaces a few
# dozen tiny Python operations on 6 or 7 floats (guard.SetpointGuard.check_limits,
# diffik.DifferentialIk.step), with the same operations in the same order.

# Layout of SetpointGuard._packed, per joint: lower, upper, |velocity|, |acceleration|, |jerk|
# (the hot path's bounds), then the end-of-travel curve: 1.0 where the joint has one (else 0.0),
# 2 d, offset, end lower, end upper.
GUARD_PER_JOINT = 10


def within_bounds(x, a, b, c, bounds: cython.const[cython.double][::1], inv_dt: cython.double,
                  inv_dt2: cython.double, inv_dt3: cython.double) -> cython.bint:
    """Whether setpoint ``x`` (after the setpoints ``a``, ``b``, ``c``: three, two and one
    cycles back) is finite and inside every bound of ``bounds`` (SetpointGuard._packed):
    position, the finite-difference velocity, acceleration and jerk, and each end-of-travel
    curve, (speed + offset)^2 <= 2 d (room left). False sends the setpoint to the guard's
    thorough check, which decides and words a refusal."""
    n: cython.Py_ssize_t = len(bounds) // GUARD_PER_JOINT
    if len(bounds) != n * GUARD_PER_JOINT or len(x) != n or len(a) != n or len(b) != n or len(c) != n:
        raise ValueError("the setpoint, the last three and the bounds need one entry per joint")
    i: cython.Py_ssize_t
    at: cython.Py_ssize_t
    xi: cython.double
    ai: cython.double
    bi: cython.double
    ci: cython.double
    speed: cython.double
    lead: cython.double
    room: cython.double
    for i in range(n):
        at = GUARD_PER_JOINT * i
        xi = float(x[i])
        ai = float(a[i])
        bi = float(b[i])
        ci = float(c[i])
        # xi - xi is NaN for NaN and inf; a NaN fails every comparison below
        if (xi - xi != 0.0 or not bounds[at] <= xi <= bounds[at + 1]
                or abs(xi - ci) * inv_dt > bounds[at + 2]
                or abs(xi - 2.0 * ci + bi) * inv_dt2 > bounds[at + 3]
                or abs(xi - 3.0 * ci + 3.0 * bi - ai) * inv_dt3 > bounds[at + 4]):
            return False
        if bounds[at + 5] != 0.0:  # the end curve without a sqrt: toward the end the joint moves to
            speed = (xi - ci) * inv_dt
            if speed > 0.0:
                lead = speed + bounds[at + 7]
                room = bounds[at + 9] - xi
            else:
                lead = bounds[at + 7] - speed
                room = xi - bounds[at + 8]
            if lead * lead > bounds[at + 6] * room:
                return False
    return True


@cython.cfunc
def _rotation_error(t: cython.p_double, cols: cython.p_double, out: cython.p_double) -> cython.int:
    """The rotation vector of R_target R^T into ``out`` (3): ``t`` the target's rotation rows
    (9, row-major), ``cols`` the actual rotation's columns x, y, z (9). spatial.rotation_error_rows's
    maths, operation for operation (a half turn takes its axis from the symmetric part)."""
    m = cython.declare(cython.double[9])  # m[3 i + j] = target row i . actual row j
    diag = cython.declare(cython.double[3])
    axis = cython.declare(cython.double[3])
    i: cython.int
    j: cython.int
    k: cython.int
    for i in range(3):
        for j in range(3):
            m[3 * i + j] = t[3 * i] * cols[j] + t[3 * i + 1] * cols[3 + j] + t[3 * i + 2] * cols[6 + j]
    sx: cython.double = m[7] - m[5]
    sy: cython.double = m[2] - m[6]
    sz: cython.double = m[3] - m[1]
    cos_angle: cython.double = 0.5 * (m[0] + m[4] + m[8] - 1.0)
    sin_angle: cython.double = 0.5 * math.sqrt(sx * sx + sy * sy + sz * sz)
    angle: cython.double = math.atan2(sin_angle, cos_angle)
    scale: cython.double
    if sin_angle > 1e-6 or cos_angle > 0.0:
        scale = 0.5 if sin_angle < 1e-12 else 0.5 * angle / sin_angle
        out[0] = scale * sx
        out[1] = scale * sy
        out[2] = scale * sz
        return 0
    # Near a half turn: the axis from the symmetric part (Python's max: the first largest, NaN kept).
    for i in range(3):
        scale = m[4 * i] - cos_angle
        diag[i] = (0.0 if 0.0 > scale else scale) / (1.0 - cos_angle)
    k = 0
    for i in range(1, 3):
        if diag[i] > diag[k]:
            k = i
    axis[k] = math.sqrt(diag[k])
    for i in range(3):
        if i != k:
            axis[i] = (m[3 * k + i] + m[3 * i + k]) / (2.0 * (1.0 - cos_angle) * axis[k])
    sign: cython.double = 1.0 if axis[0] * sx + axis[1] * sy + axis[2] * sz >= 0.0 else -1.0
    norm: cython.double = math.sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2])
    for i in range(3):
        out[i] = sign * angle * axis[i] / norm
    return 0


@cython.cfunc
def _target_rows(goal, t: cython.p_double, p: cython.p_double) -> cython.int:
    """A pose's rotation rows into ``t`` (9) and its position into ``p`` (3)."""
    i: cython.int
    j: cython.int
    for i in range(3):
        row = goal[i]
        if len(row) < 4:
            raise ValueError("a pose's rows need 4 values")
        for j in range(3):
            t[3 * i + j] = float(row[j])
        p[i] = float(row[3])
    return 0


def pose_error(goal, frame, weights) -> tuple:
    """The weighted error from ``frame`` ((x, y, z, p) columns) to the pose ``goal`` (rows), as
    diffik.DifferentialIk steers by it: position difference, then the rotation vector of
    R_goal R^T, each times its weight (6); and its length (the residual)."""
    if len(goal) < 3 or len(frame) != 4 or len(weights) != 6:
        raise ValueError("pose_error needs a pose's rows, a frame's 4 columns and 6 weights")
    t = cython.declare(cython.double[9])
    target = cython.declare(cython.double[3])
    cols = cython.declare(cython.double[9])
    rotation = cython.declare(cython.double[3])
    i: cython.int
    j: cython.int
    _target_rows(goal, t, target)
    for j in range(3):
        column = frame[j]
        if len(column) != 3:
            raise ValueError("a frame's columns need 3 values")
        for i in range(3):
            cols[3 * j + i] = float(column[i])
    position = frame[3]
    if len(position) != 3:
        raise ValueError("a frame's position needs 3 values")
    _rotation_error(t, cols, rotation)
    error = [0.0] * 6
    value: cython.double
    total: cython.double = 0.0
    for i in range(6):
        if i < 3:
            value = float(weights[i]) * (target[i] - float(position[i]))
        else:
            value = float(weights[i]) * rotation[i - 3]
        error[i] = value
        total += value * value
    return error, math.sqrt(total)


def target_motion(goal, last, weights, max_move: cython.double, max_turn: cython.double) -> list:
    """The target's motion from pose ``last`` to pose ``goal`` (rows), weighted as pose_error's
    error: zero for a jump of more than ``max_move`` (m) or ``max_turn`` (rad)."""
    if len(goal) < 3 or len(last) < 3 or len(weights) != 6:
        raise ValueError("target_motion needs two poses' rows and 6 weights")
    t = cython.declare(cython.double[9])
    target = cython.declare(cython.double[3])
    before = cython.declare(cython.double[9])
    cols = cython.declare(cython.double[9])
    start = cython.declare(cython.double[3])
    rotation = cython.declare(cython.double[3])
    i: cython.int
    j: cython.int
    _target_rows(goal, t, target)
    _target_rows(last, before, start)
    for j in range(3):  # the last pose's rotation, by columns
        for i in range(3):
            cols[3 * j + i] = before[3 * i + j]
    _rotation_error(t, cols, rotation)
    dx: cython.double = target[0] - start[0]
    dy: cython.double = target[1] - start[1]
    dz: cython.double = target[2] - start[2]
    rx: cython.double = rotation[0]
    ry: cython.double = rotation[1]
    rz: cython.double = rotation[2]
    if math.sqrt(dx * dx + dy * dy + dz * dz) > max_move or math.sqrt(rx * rx + ry * ry + rz * rz) > max_turn:
        return [0.0] * 6
    return [float(weights[0]) * dx, float(weights[1]) * dy, float(weights[2]) * dz,
            float(weights[3]) * rx, float(weights[4]) * ry, float(weights[5]) * rz]


def first_goal(q, delta, motion, null, caps, gain_step: cython.double, rate_step: cython.double, h3, h2, h1,
               period: cython.double, joints) -> tuple:
    """The cycle's first goal (diffik.DifferentialIk.step, its first iteration), from the joints
    ``q``, the damped steps ``delta``, ``motion`` (the target's, in joints) and ``null`` (the
    posture offset's nullspace part, or None): the motion capped per joint at ``caps``; the
    nullspace part scaled to min(``gain_step``, ``rate_step`` / its largest entry) and added to
    both; q + delta (q itself if that is not finite, following nothing) clipped into the box
    toward it (see :func:`box`). Returns (goal, whether any joint reached its own goal inside
    the box, box lower, box upper)."""
    n: cython.Py_ssize_t = len(q)
    if len(delta) != n or len(motion) != n or len(caps) != n or (null is not None and len(null) != n):
        raise ValueError("q, delta, motion, null and caps need one value per joint")
    moved = [0.0] * n
    follow = [0.0] * n
    i: cython.Py_ssize_t
    f: cython.double
    cap: cython.double
    scale: cython.double = 0.0
    largest: cython.double
    part: cython.double
    total: cython.double = 0.0
    has_null: cython.bint = null is not None
    if has_null:  # Python's max and min, NaN kept as they keep it
        largest = abs(float(null[0])) if n else 0.0
        for i in range(1, n):
            part = abs(float(null[i]))
            if part > largest:
                largest = part
        part = 1e-300 if 1e-300 > largest else largest
        scale = rate_step / part
        scale = scale if scale < gain_step else gain_step
    for i in range(n):
        f = float(motion[i])
        cap = float(caps[i])
        f = -cap if f < -cap else cap if f > cap else f
        part = float(delta[i])
        if has_null:
            part = part + scale * float(null[i])
            f = f + scale * float(null[i])
        follow[i] = f
        moved[i] = float(q[i]) + part
        total += moved[i]
    if not math.isfinite(total):  # a model whose Jacobian broke down: hold, braking in the box
        moved = [float(x) for x in q]
        follow = [0.0] * n
    lo, hi = box(h3, h2, h1, period, joints, moved, follow)
    free: cython.bint = _clip(moved, lo, hi)
    return moved, free, lo, hi


def next_goal(q, delta, lo, hi) -> tuple:
    """A later iteration's goal: q + delta (q itself if that is not finite) clipped into the
    box [lo, hi]; and whether any joint reached its own goal inside it."""
    n: cython.Py_ssize_t = len(q)
    if len(delta) != n:
        raise ValueError("q and delta need one value per joint")
    moved = [0.0] * n
    i: cython.Py_ssize_t
    total: cython.double = 0.0
    for i in range(n):
        moved[i] = float(q[i]) + float(delta[i])
        total += moved[i]
    if not math.isfinite(total):
        moved = [float(x) for x in q]
    free: cython.bint = _clip(moved, lo, hi)
    return moved, free


@cython.cfunc
def _clip(moved: list, lo, hi) -> cython.bint:
    """``moved`` clipped into [lo, hi] in place, as comparisons (a NaN lands on lo); whether
    any entry was inside already."""
    n: cython.Py_ssize_t = len(moved)
    if len(lo) != n or len(hi) != n:
        raise ValueError("the box needs one bound per joint")
    free: cython.bint = False
    i: cython.Py_ssize_t
    x: cython.double
    for i in range(n):
        x = moved[i]
        if x > float(hi[i]):
            moved[i] = float(hi[i])
        elif x >= float(lo[i]):
            free = True
        else:
            moved[i] = float(lo[i])
    return free


# The online generator's velocity bounds (motion.online.OnlineGenerator) -----------------------

# Layout of OnlineGenerator._bounds_packed, per joint: lower, upper, v_max, braking acceleration,
# jerk, the distance from an end beyond which nothing narrows the speed, then the end-of-travel
# curve: 1.0 where the joint has one (else 0.0), 2 d, offset.
BOUNDS_PER_JOINT = 9


@cython.ccall
def stopping_speed(distance: cython.double, acceleration: cython.double, jerk: cython.double) -> cython.double:
    """The highest speed (rad/s) from which a joint with no acceleration stops within ``distance``
    (rad) braking jerk-limited at ``acceleration`` and ``jerk``; 0 where there is no room."""
    if distance <= 0.0:
        return 0.0
    a: cython.double = acceleration
    j: cython.double = jerk
    # (libm's pow both ways: Cython takes ** on doubles as complex where the base may be negative)
    short: cython.double = math.pow(distance * distance * j, 1.0 / 3.0)  # never reaches full deceleration: d = v^1.5 / sqrt(j)
    if short < a * a / j:
        return short
    # ramps to full deceleration, holds it and ramps back: d = v^2 / (2a) + v a / (2j)
    return 0.5 * a * (math.sqrt((a / j) * (a / j) + 8.0 * distance / a) - a / j)


def velocity_bounds(position, velocity, heading, rows: cython.const[cython.double][::1], stop_bounds: cython.bint,
                    period: cython.double, end_margin: cython.double, lead_cycles: cython.double,
                    scale: cython.double, factor: cython.double) -> tuple:
    """Per joint the lowest and highest velocity allowed at ``position`` moving at ``velocity``
    toward ``heading`` (OnlineGenerator._velocity_bounds, which says why): two lists. ``rows``
    is OnlineGenerator._bounds_packed; ``scale`` and ``factor`` scale the end-of-travel curve
    (the generator's headroom and dynamics factor). Python's min and max, written out."""
    n: cython.Py_ssize_t = len(rows) // BOUNDS_PER_JOINT
    if len(rows) != n * BOUNDS_PER_JOINT or len(position) != n or len(velocity) != n or len(heading) != n:
        raise ValueError("the position, velocity, heading and bounds need one entry per joint")
    low = [0.0] * n
    high = [0.0] * n
    i: cython.Py_ssize_t
    at: cython.Py_ssize_t
    q: cython.double
    v: cython.double
    go: cython.double
    v_max: cython.double
    a_stop: cython.double
    j_max: cython.double
    up: cython.double
    down: cython.double
    hi: cython.double
    lo: cython.double
    lead: cython.double
    bound: cython.double
    toward_up: cython.bint
    toward_down: cython.bint
    for i in range(n):
        at = BOUNDS_PER_JOINT * i
        q = float(position[i])
        v = float(velocity[i])
        go = float(heading[i])
        v_max, a_stop, j_max = rows[at + 2], rows[at + 3], rows[at + 4]
        up = rows[at + 1] - q
        down = q - rows[at]
        if up > rows[at + 5] and down > rows[at + 5]:  # the common case: nothing narrows this joint's speed
            high[i] = v_max
            low[i] = -v_max
            continue
        toward_up = go > 0.0 or v > 0.0 or (go == 0.0 and v == 0.0)
        toward_down = go < 0.0 or v < 0.0 or (go == 0.0 and v == 0.0)
        hi = v_max
        lo = -v_max
        if stop_bounds:
            up = up - end_margin
            down = down - end_margin
            bound = (up if not (0.0 > up) else 0.0) / (2.0 * period)
            hi = bound if bound < hi else hi
            bound = -(down if not (0.0 > down) else 0.0) / (2.0 * period)
            lo = bound if bound > lo else lo
        lead = abs(v) * (a_stop / j_max + lead_cycles * period)
        up = up - lead
        down = down - lead
        if stop_bounds:
            bound = stopping_speed(up, a_stop, j_max)
            hi = bound if bound < hi else hi
            bound = -stopping_speed(down, a_stop, j_max)
            lo = bound if bound > lo else lo
        if rows[at + 6] != 0.0:  # the arm's own end-of-travel curve (JointLimits.velocity_bounds)
            bound = rows[at + 7] * up
            bound = math.sqrt(bound if not (0.0 > bound) else 0.0) - rows[at + 8]
            bound = (bound if not (0.0 > bound) else 0.0) * scale * factor
            hi = bound if bound < hi else hi
            bound = rows[at + 7] * down
            bound = math.sqrt(bound if not (0.0 > bound) else 0.0) - rows[at + 8]
            bound = -(bound if not (0.0 > bound) else 0.0) * scale * factor
            lo = bound if bound > lo else lo
        high[i] = (hi if not (0.0 > hi) else 0.0) if toward_up else v_max
        low[i] = (lo if not (0.0 < lo) else 0.0) if toward_down else -v_max
    return low, high


# The torque laws' cycle: the impedances' arithmetic, their output's shaping and the torque guard's
# pass (motion.torque, control.torque_guard) ---------------------------------------------------
#
# Each runs once per cycle of a torque session, in the time between the robot's state and the
# command that answers it: each replaces a few dozen tiny numpy operations on 6 or 7 floats.


def joint_impedance(stiffness: cython.const[cython.double][::1], damping: cython.const[cython.double][::1],
                    equilibrium: list, goal, share: cython.double, period: cython.double, q, dq, extra) -> list:
    """A spring and damper per joint (motion.torque.JointImpedance), a list of torques:
    ``stiffness (equilibrium - q) + damping (velocity - dq) + extra``. First the equilibrium (a
    list, changed in place) closes ``share`` of its gap to ``goal``, at the velocity that takes
    (none for a share of 1: a jump)."""
    n: cython.Py_ssize_t = len(stiffness)
    if len(damping) != n or len(equilibrium) != n or len(goal) != n or len(q) != n or len(dq) != n or len(extra) != n:
        raise ValueError("the gains, the equilibrium, its goal, q, dq and extra need one entry per joint")
    tau = [0.0] * n
    i: cython.Py_ssize_t
    moved: cython.double
    at: cython.double
    speed: cython.double = 1.0 / period if share < 1.0 else 0.0
    for i in range(n):
        at = float(equilibrium[i])
        moved = share * (float(goal[i]) - at)
        at = at + moved
        equilibrium[i] = at
        tau[i] = stiffness[i] * (at - float(q[i])) + damping[i] * (moved * speed - float(dq[i])) + float(extra[i])
    return tau


def pose_filter(goal, pose, share: cython.double, period: cython.double) -> tuple:
    """One cycle of a first-order filter taking the pose ``pose`` (rows) toward ``goal`` (rows): it
    closes ``share`` of the gap, its position along the line and its rotation about the axis of
    R_goal R^T (motion.torque.CartesianImpedance's equilibrium). Returns the new pose's rows, the
    twist it moved at (6: linear, angular, base frame; none for a share of 1: a jump) and whether
    it has arrived (then the pose is ``goal``'s)."""
    if len(goal) < 3 or len(pose) < 3:
        raise ValueError("pose_filter needs two poses' rows")
    t = cython.declare(cython.double[9])
    target = cython.declare(cython.double[3])
    r = cython.declare(cython.double[9])
    position = cython.declare(cython.double[3])
    cols = cython.declare(cython.double[9])
    rotation = cython.declare(cython.double[3])
    gap = cython.declare(cython.double[6])
    turn = cython.declare(cython.double[9])
    i: cython.int
    j: cython.int
    _target_rows(goal, t, target)
    _target_rows(pose, r, position)
    for j in range(3):
        for i in range(3):
            cols[3 * j + i] = r[3 * i + j]
    _rotation_error(t, cols, rotation)
    largest: cython.double = 0.0
    for i in range(3):
        gap[i] = target[i] - position[i]
        gap[3 + i] = rotation[i]
    for i in range(6):
        if abs(gap[i]) > largest:
            largest = abs(gap[i])
    if largest < 1e-12:  # there: the filter rests until the next goal
        return [[t[0], t[1], t[2], target[0]], [t[3], t[4], t[5], target[1]], [t[6], t[7], t[8], target[2]],
                [0.0, 0.0, 0.0, 1.0]], [0.0] * 6, True
    for i in range(6):
        gap[i] = share * gap[i]
    # the turn by the rotation vector gap[3:6] (Rodrigues), applied before the pose's rotation
    angle: cython.double = math.sqrt(gap[3] * gap[3] + gap[4] * gap[4] + gap[5] * gap[5])
    kx: cython.double = 0.0
    ky: cython.double = 0.0
    kz: cython.double = 0.0
    if angle > 0.0:
        kx = gap[3] / angle
        ky = gap[4] / angle
        kz = gap[5] / angle
    sine: cython.double = math.sin(angle)
    versine: cython.double = 1.0 - math.cos(angle)
    turn[0] = 1.0 - versine * (ky * ky + kz * kz)
    turn[1] = versine * kx * ky - sine * kz
    turn[2] = versine * kx * kz + sine * ky
    turn[3] = versine * kx * ky + sine * kz
    turn[4] = 1.0 - versine * (kx * kx + kz * kz)
    turn[5] = versine * ky * kz - sine * kx
    turn[6] = versine * kx * kz - sine * ky
    turn[7] = versine * ky * kz + sine * kx
    turn[8] = 1.0 - versine * (kx * kx + ky * ky)
    rows = [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
    for i in range(3):
        row = rows[i]
        for j in range(3):
            row[j] = turn[3 * i] * r[j] + turn[3 * i + 1] * r[3 + j] + turn[3 * i + 2] * r[6 + j]
        row[3] = position[i] + gap[i]
    speed: cython.double = 1.0 / period if share < 1.0 else 0.0
    twist = [0.0] * 6
    for i in range(6):
        twist[i] = gap[i] * speed
    return rows, twist, False


def cartesian_impedance(frame, jac, q, dq, goal, twist, gains: cython.const[cython.double][::1],
                        max_move: cython.double, max_turn: cython.double, extra, posture,
                        null_stiffness: cython.double, null_damping: cython.const[cython.double][::1]) -> list:
    """A spring and damper at the flange, through the Jacobian, with a posture held in its
    nullspace (motion.torque.CartesianImpedance, which says why): the joint torques, a list.

    ``frame`` ((x, y, z, p) columns) and ``jac`` (6 rows) are the flange's at ``q``; ``goal``
    the equilibrium pose's rows and ``twist`` (6) its twist; ``gains`` the stiffness (6), the
    damping (6) and a wrench applied on top (6), per base axis. The pose error's translation and
    rotation are shortened to ``max_move`` (m) and ``max_turn`` (rad). With ``null_stiffness``
    above zero the torque ``null_stiffness (posture - q) - null_damping dq`` less its part that
    acts on the flange (J^T (J J^T + 1e-6 I)^-1 J of it) is added, and ``extra`` (the Coriolis
    torques) as it is."""
    dof: cython.Py_ssize_t = len(q)
    if dof > MAX_DOF:
        raise ValueError(f"at most {MAX_DOF} joints")
    if (len(jac) != 6 or len(frame) != 4 or len(goal) < 3 or len(twist) != 6 or len(gains) != 18
            or len(dq) != dof or len(extra) != dof or len(posture) != dof or len(null_damping) != dof):
        raise ValueError("cartesian_impedance: a frame, 6 Jacobian rows, a pose, 6 twist values, 18 gains and one"
                         " q, dq, extra, posture and null damping value per joint")
    jw = cython.declare(cython.double[192])  # 6 x MAX_DOF, row-major with dof columns
    a = cython.declare(cython.double[36])
    task = cython.declare(cython.double[6])
    force = cython.declare(cython.double[6])
    t = cython.declare(cython.double[9])
    target = cython.declare(cython.double[3])
    cols = cython.declare(cython.double[9])
    rotation = cython.declare(cython.double[3])
    velocities = cython.declare(cython.double[32])  # MAX_DOF
    null = cython.declare(cython.double[32])
    r: cython.int
    c: cython.int
    i: cython.Py_ssize_t
    j: cython.int
    total: cython.double
    size: cython.double
    for r in range(6):
        row = jac[r]
        if len(row) != dof:
            raise ValueError("every Jacobian row needs one value per joint")
        for i in range(dof):
            jw[r * dof + i] = float(row[i])
    for i in range(dof):
        velocities[i] = float(dq[i])
    _target_rows(goal, t, target)
    for j in range(3):
        column = frame[j]
        if len(column) != 3:
            raise ValueError("a frame's columns need 3 values")
        for i in range(3):
            cols[3 * j + i] = float(column[i])
    position = frame[3]
    if len(position) != 3:
        raise ValueError("a frame's position needs 3 values")
    _rotation_error(t, cols, rotation)
    for r in range(3):
        task[r] = target[r] - float(position[r])  # the pose error, first
        task[3 + r] = rotation[r]
    size = math.sqrt(task[0] * task[0] + task[1] * task[1] + task[2] * task[2])
    if size > max_move:
        for r in range(3):
            task[r] = task[r] * (max_move / size)
    size = math.sqrt(task[3] * task[3] + task[4] * task[4] + task[5] * task[5])
    if size > max_turn:
        for r in range(3, 6):
            task[r] = task[r] * (max_turn / size)
    for r in range(6):  # the wrench: K e + D (twist - J dq) + the one applied on top
        total = 0.0
        for i in range(dof):
            total += jw[r * dof + i] * velocities[i]
        force[r] = gains[r] * task[r] + gains[6 + r] * (float(twist[r]) - total) + gains[12 + r]
    tau = [0.0] * dof
    for i in range(dof):
        total = float(extra[i])
        for r in range(6):
            total += jw[r * dof + i] * force[r]
        tau[i] = total
    if null_stiffness > 0.0:
        for i in range(dof):
            null[i] = null_stiffness * (float(posture[i]) - float(q[i])) - null_damping[i] * velocities[i]
        for r in range(6):
            total = 0.0
            for i in range(dof):
                total += jw[r * dof + i] * null[i]
            task[r] = total
            for c in range(r + 1):
                total = 0.0
                for i in range(dof):
                    total += jw[r * dof + i] * jw[c * dof + i]
                a[6 * r + c] = total
                a[6 * c + r] = total
            a[7 * r] += 1e-6
        _solve6(a, task, 1)
        for i in range(dof):
            total = null[i]
            for r in range(6):
                total -= jw[r * dof + i] * task[r]
            tau[i] = tau[i] + total
    return tau


def shaped_torque(tau, last, caps: cython.const[cython.double][::1], steps: cython.const[cython.double][::1],
                  scale: cython.bint) -> list:
    """``tau`` as a torque law sends it (motion.torque.TorqueMotion): with ``scale``, scaled back
    as a whole (its direction kept) so that no joint passes its cap; then each joint at most its
    step from ``last``. A list."""
    n: cython.Py_ssize_t = len(caps)
    if len(tau) != n or len(last) != n or len(steps) != n:
        raise ValueError("tau, last, the caps and the steps need one entry per joint")
    out = [0.0] * n
    i: cython.Py_ssize_t
    worst: cython.double = 1.0
    ratio: cython.double
    value: cython.double
    before: cython.double
    if scale:
        for i in range(n):
            ratio = abs(float(tau[i])) / caps[i]
            if ratio > worst:
                worst = ratio
    for i in range(n):
        value = float(tau[i]) / worst
        before = float(last[i])
        if value > before + steps[i]:
            value = before + steps[i]
        elif value < before - steps[i]:
            value = before - steps[i]
        out[i] = value
    return out


def torque_within(tau, last, limits: cython.const[cython.double][::1], steps: cython.const[cython.double][::1]) -> cython.bint:
    """Whether torque command ``tau`` is finite, each joint within its limit and at most its step
    from ``last`` (control.torque_guard.TorqueGuard.check's clear yes; False sends the command to
    the thorough check, which decides and words a refusal)."""
    n: cython.Py_ssize_t = len(limits)
    if len(tau) != n or len(last) != n or len(steps) != n:
        raise ValueError("tau, last, the limits and the steps need one entry per joint")
    i: cython.Py_ssize_t
    value: cython.double
    for i in range(n):
        value = float(tau[i])
        # a NaN fails both comparisons; an infinity the first
        if not (abs(value) <= limits[i] and abs(value - float(last[i])) <= steps[i]):
            return False
    return True
