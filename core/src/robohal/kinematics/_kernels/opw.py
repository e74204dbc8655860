"""OPW arms in closed form (opw.OPW): the forward kinematics and the inverse of one pose
and of batches, the GIL released on long ones.

This module is Cython's pure-Python mode, as every module of this package: the build
(core/setup.py) compiles it where a C compiler is present, with the C types in the
annotations and the declarations in its .pxd; elsewhere the interpreter runs this same
file, and both forms give the same bits (robohal.kinematics.kernels says which runs).
"""

from __future__ import annotations

import math

try:
    import cython
except ModuleNotFoundError:  # Cython is not installed: run as plain Python
    from robohal.kinematics._cython_stub import cython

from .common import NOGIL_FROM

if not cython.compiled:  # compiled, opw.pxd cimports them
    from .common import finite_joints, pose_array

#: whether this module runs compiled
COMPILED = cython.compiled

PI = cython.declare(cython.double, 3.141592653589793)
TWO_PI = cython.declare(cython.double, 6.283185307179586)


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
    if not finite_joints(q, 6, v):
        return None
    m: tuple[cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double, cython.double]
    m = _flange(c, v[0], v[1], v[2], v[3], v[4], v[5])
    return pose_array(m[0], m[1], m[2], m[9], m[3], m[4], m[5], m[10], m[6], m[7], m[8], m[11])



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


# Layout of a shoulder branch as _opw_side writes it: u, the elbow's cosine before clamping (beyond
# [-1, 1]: out of reach), t1, sin t1, cos t1, the elbow's sine, then per elbow branch (up, down) at
# SIDE_HEAD + SIDE_ELBOW * elbow: t2, t3, sin(t2 + t3), cos(t2 + t3), t4, t5, t6, sin t5.
SIDE_HEAD = cython.declare(cython.int, 6)
SIDE_ELBOW = cython.declare(cython.int, 8)


@cython.cfunc
@cython.inline
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def _opw_side(c: cython.const[cython.double][::1], side: cython.int, r: cython.double, phi: cython.double,
              v: cython.double, r00: cython.double, r01: cython.double, r02: cython.double, r10: cython.double,
              r11: cython.double, r12: cython.double, r20: cython.double, r21: cython.double, r22: cython.double,
              ref4: cython.double, has_j6: cython.bint, t6_given: cython.double, arm: cython.p_double) -> cython.int:
    """One shoulder branch (``side`` 0: the wrist centre ahead of J1, 1: behind it) and, unless it is
    out of reach, both its elbow branches, in model angles, into ``arm`` (SIDE_HEAD's layout):
    the maths both solvers (the one pose and the batch) share."""
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
    elbow: cython.int
    at: cython.int
    u, reach, t1, sn1, cs1, h_x, h_y, h_z, m12, along, root, elbow_angle, elbow_share = _opw_shoulder(
        c, r if side == 0 else -r, phi, v, r00, r01, r02, r10, r11, r12)
    arm[0], arm[1], arm[2], arm[3], arm[4], arm[5] = u, reach, t1, sn1, cs1, root
    if abs(reach) > 1.0 + c[22]:  # out of reach (RIM_SLACK): no elbow branch
        return 0
    for elbow in range(2):
        at = SIDE_HEAD + SIDE_ELBOW * elbow
        (arm[at], arm[at + 1], arm[at + 2], arm[at + 3], arm[at + 4], arm[at + 5], arm[at + 6],
         arm[at + 7]) = _opw_elbow(c, elbow == 1, elbow_angle, elbow_share, along, sn1, cs1, h_x, h_y, h_z, m12, r00,
                                   r10, r20, r21, r22, ref4, has_j6, t6_given)
    return 0


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
    t1: cython.double
    sn1: cython.double
    cs1: cython.double
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
    arm = cython.declare(cython.double[22])  # SIDE_HEAD + 2 * SIDE_ELBOW
    for side in range(2):
        _opw_side(c, side, r, phi, v, r00, r01, r02, r10, r11, r12, r20, r21, r22, ref4, has_j6, t6_given, arm)
        if abs(arm[1]) > 1.0 + rim_slack:
            if not out_of_reach:
                out_of_reach = True
                info[2], info[3] = arm[0], v
            continue
        t1, sn1, cs1 = arm[2], arm[3], arm[4]
        if arm[5] < near_limit:
            near_degenerate = True
        q1 = _wrap(c[9] * (t1 + c[15]))
        for elbow in range(2 if arm[5] > 0.0 else 1):  # a straight elbow is one branch
            at = SIDE_HEAD + SIDE_ELBOW * elbow
            t2, t3, s23, c23 = arm[at], arm[at + 1], arm[at + 2], arm[at + 3]
            t4, t5, t6, sin5 = arm[at + 4], arm[at + 5], arm[at + 6], arm[at + 7]
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
    t1: cython.double
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
    at: cython.int
    arm = cython.declare(cython.double[22])  # SIDE_HEAD + 2 * SIDE_ELBOW
    for side in range(2):
        _opw_side(c, side, r, phi, v, r00, r01, r02, r10, r11, r12, r20, r21, r22, ref4, False, 0.0, arm)
        if abs(arm[1]) > 1.0 + rim_slack or bad_base:  # out of reach: no branch of this shoulder
            for slot in range(4 * side, 4 * side + 4):
                for j in range(6):
                    out[i, slot, j] = missing
            continue
        t1 = arm[2]
        shoulder_ready = False
        for elbow in range(2):
            at = SIDE_HEAD + SIDE_ELBOW * elbow
            t2, t3, t4, t5, t6, sin5 = arm[at], arm[at + 1], arm[at + 4], arm[at + 5], arm[at + 6], arm[at + 7]
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
