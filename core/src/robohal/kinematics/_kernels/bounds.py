"""The bounds a control cycle keeps: the setpoint guard's pass (guard.SetpointGuard) and
the online generator's velocity bounds (motion.online.OnlineGenerator).

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

#: whether this module runs compiled
COMPILED = cython.compiled


# The setpoint guard's pass (guard.SetpointGuard.check_limits) ------------------------------

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
