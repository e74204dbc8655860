"""The differential-IK cycle's kernels (diffik.DifferentialIk): the joint box a cycle's
goal must stay in, the damped least-squares steps, the pose error and the target's motion,
and the goal clipped into the box.

This module is Cython's pure-Python mode, as every module of this package: the build
(core/setup.py) compiles it where a C compiler is present, with the C types in the
annotations and the declarations in its .pxd; elsewhere the interpreter runs this same
file, and both forms give the same bits (robohal.kinematics.kernels says which runs).
Each replaces a few dozen tiny Python operations on 6 or 7 floats
per control cycle, with the same operations in the same order.
"""

from __future__ import annotations

import math

try:
    import cython
except ModuleNotFoundError:  # Cython is not installed: run as plain Python
    from robohal.kinematics._cython_stub import cython

from .common import MAX_DOF

if not cython.compiled:  # compiled, cycle.pxd cimports them
    from .common import frame_error, rotation_error, solve6, target_rows

#: whether this module runs compiled
COMPILED = cython.compiled

# Constants shared with diffik.py (NEWTON_TOLERANCE there).
NEWTON_TOLERANCE = 1e-4
NEWTON_STEPS = 8
JOINT_CONSTANTS = 10


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
    solve6(system, rhs, k)
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
        solve6(a, task, 1)
        for i in range(dof):
            total = 0.0
            for r in range(6):
                total += jw[r * dof + i] * task[r]
            null[i] = null[i] - total
        results[2] = null
    return results[0], results[1], results[2]


def pose_error(goal, frame, weights) -> tuple:
    """The weighted error from ``frame`` ((x, y, z, p) columns) to the pose ``goal`` (rows), as
    diffik.DifferentialIk steers by it: position difference, then the rotation vector of
    R_goal R^T, each times its weight (6); and its length (the residual)."""
    if len(goal) < 3 or len(frame) != 4 or len(weights) != 6:
        raise ValueError("pose_error needs a pose's rows, a frame's 4 columns and 6 weights")
    target = cython.declare(cython.double[3])
    rotation = cython.declare(cython.double[3])
    i: cython.int
    position = frame_error(goal, frame, target, rotation)
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
    target_rows(goal, t, target)
    target_rows(last, before, start)
    for j in range(3):  # the last pose's rotation, by columns
        for i in range(3):
            cols[3 * j + i] = before[3 * i + j]
    rotation_error(t, cols, rotation)
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
