"""Serial chains' frames and Jacobians: a DH chain's for one configuration
(chain.DHChain), and a chain of fixed transforms each followed by a joint about or along
z (urdf.UrdfChain; DH chains and OPW arms in this form too) for one configuration and for
batches, the GIL released on long ones.

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

from .common import MAX_DOF, NOGIL_FROM

if not cython.compiled:  # compiled, chains.pxd cimports them
    from .common import array_data, finite_joints, new_array, pose_array

#: whether this module runs compiled
COMPILED = cython.compiled


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
def product_size(c: cython.const[cython.double][::1]) -> cython.Py_ssize_t:
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
    """The chain's joint count (:func:`product_size`), which the ``joints`` given must match."""
    dof: cython.Py_ssize_t = product_size(c)
    if joints != dof:
        raise ValueError(f"the chain needs {dof} joints, got {joints}")
    return dof


def product_pose(c: cython.const[cython.double][::1], q):
    """The tip pose (4, 4) of joints ``q`` as a new array, for ``q`` a float64 array (dof,) or
    a list or tuple of dof floats, all finite; None for anything else (the caller checks that
    and says what is wrong)."""
    dof: cython.Py_ssize_t = product_size(c)
    values = cython.declare(cython.double[32])  # MAX_DOF
    frame = cython.declare(cython.double[12])
    axes = cython.declare(cython.double[192])
    if not finite_joints(q, dof, values):
        return None
    product_walk(c, dof, values, frame, axes, False)
    return pose_array(frame[0], frame[1], frame[2], frame[3], frame[4], frame[5], frame[6], frame[7], frame[8],
                       frame[9], frame[10], frame[11])


def product_jacobian(c: cython.const[cython.double][::1], q):
    """The tip's geometric Jacobian (6, dof) of joints ``q`` as a new array, for ``q`` as
    :func:`product_pose` takes it; None for anything else."""
    dof: cython.Py_ssize_t = product_size(c)
    values = cython.declare(cython.double[32])  # MAX_DOF
    frame = cython.declare(cython.double[12])
    axes = cython.declare(cython.double[192])
    if not finite_joints(q, dof, values):
        return None
    product_walk(c, dof, values, frame, axes, True)
    jacobian = new_array(6, dof)
    out: cython.p_double = array_data(jacobian)
    j: cython.Py_ssize_t
    column: tuple[cython.double, cython.double, cython.double, cython.double, cython.double, cython.double]
    for j in range(dof):
        column = product_column(c, j, frame, axes)
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
        product_walk(c, dof, values, frame, axes, jacobian)
        if not jacobian:
            for j in range(12):
                poses[i, j] = frame[j]
            poses[i, 12] = 0.0
            poses[i, 13] = 0.0
            poses[i, 14] = 0.0
            poses[i, 15] = 1.0
            continue
        for j in range(dof):
            column = product_column(c, j, frame, axes)
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
def product_column(c: cython.const[cython.double][::1], j: cython.Py_ssize_t, frame: cython.p_double,
                    axes: cython.p_double) -> tuple[cython.double, cython.double, cython.double, cython.double,
                                                    cython.double, cython.double]:
    """Joint ``j``'s Jacobian column from the tip and the axes of :func:`product_walk`."""
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
    product_walk(c, dof, values, frame, axes, jacobian)
    tip = ((frame[0], frame[4], frame[8]), (frame[1], frame[5], frame[9]), (frame[2], frame[6], frame[10]),
           (frame[3], frame[7], frame[11]))
    if not jacobian:
        return tip, None
    rows = [[0.0] * dof for _ in range(6)]
    column: tuple[cython.double, cython.double, cython.double, cython.double, cython.double, cython.double]
    for j in range(dof):
        column = product_column(c, j, frame, axes)
        rows[0][j], rows[1][j], rows[2][j] = column[0], column[1], column[2]
        rows[3][j], rows[4][j], rows[5][j] = column[3], column[4], column[5]
    return tip, rows


@cython.cfunc
@cython.inline
@cython.nogil
@cython.boundscheck(False)
@cython.wraparound(False)
@cython.exceptval(check=False)
def product_walk(c: cython.const[cython.double][::1], dof: cython.Py_ssize_t, q: cython.p_double,
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
