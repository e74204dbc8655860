"""What the other kinematics kernels share: joints read from Python (finite_joints), new
pose and Jacobian arrays (new_array, array_data, pose_array), the rotation error between two
frames, a 6 x 6 linear solve, and the check of a batch of poses (first_odd_pose).

This module is Cython's pure-Python mode, as every module of this package: the build
(core/setup.py) compiles it where a C compiler is present, with the C types in the
annotations and the declarations in its .pxd; elsewhere the interpreter runs this same
file, and both forms give the same bits (robohal.kinematics.kernels says which runs).
Where a kernel makes or reads a numpy array itself, the compiled
form does it through numpy's C API (cimported in common.pxd) and the interpreted one
through numpy: the same numbers.
"""

from __future__ import annotations

import math

try:
    import cython
except ModuleNotFoundError:  # Cython is not installed: run as plain Python
    from robohal.kinematics._cython_stub import cython

import numpy as _np

#: whether this module runs compiled
COMPILED = cython.compiled

# What the interpreted form checks arrays against (compiled, numpy's C API does).
_ndarray = _np.ndarray
_float64 = _np.dtype(_np.float64)
if cython.compiled:
    cnp.import_array()  # noqa: F821 (numpy's C API, cimported in common.pxd, needs this before any use)

#: the most joints a chain or a Jacobian may have here (the work arrays are this big)
MAX_DOF = 32
#: batches this long release the GIL while they run
NOGIL_FROM = 256


@cython.cfunc
def finite_joints(q, n: cython.Py_ssize_t, v: cython.p_double) -> cython.bint:
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
        if not cnp.PyArray_CheckExact(q):  # noqa: F821 (numpy's C API, cimported in common.pxd)
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
def pose_array(r00: cython.double, r01: cython.double, r02: cython.double, px: cython.double,
               r10: cython.double, r11: cython.double, r12: cython.double, py: cython.double,
               r20: cython.double, r21: cython.double, r22: cython.double, pz: cython.double):
    """A new pose array (4, 4) of these rows, the last one 0 0 0 1."""
    pose = new_array(4, 4)
    out: cython.p_double = array_data(pose)
    out[0], out[1], out[2], out[3] = r00, r01, r02, px
    out[4], out[5], out[6], out[7] = r10, r11, r12, py
    out[8], out[9], out[10], out[11] = r20, r21, r22, pz
    out[12], out[13], out[14], out[15] = 0.0, 0.0, 0.0, 1.0
    return pose


@cython.cfunc
def new_array(rows: cython.Py_ssize_t, columns: cython.Py_ssize_t):
    """A new float64 array (rows, columns), not yet filled."""
    if cython.compiled:  # numpy's C API: the allocation without a call through Python
        shape = cython.declare(cnp.npy_intp[2])  # noqa: F821 (numpy's C API, cimported in common.pxd)
        shape[0] = rows
        shape[1] = columns
        return cnp.PyArray_EMPTY(2, shape, cnp.NPY_DOUBLE, 0)  # noqa: F821
    return _np.empty((rows, columns))


@cython.cfunc
def array_data(array) -> cython.p_double:
    """The numbers of a new array of :func:`new_array`, in a row."""
    if cython.compiled:
        return cython.cast(cython.p_double, cnp.PyArray_DATA(array))  # noqa: F821
    return array.reshape(-1)  # (a view: writing to it fills the array)

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


@cython.cfunc
def target_rows(goal, t: cython.p_double, p: cython.p_double) -> cython.int:
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


@cython.cfunc
def frame_error(goal, frame, target: cython.p_double, rotation: cython.p_double) -> object:
    """From ``frame`` ((x, y, z, p) columns) to the pose ``goal`` (rows): the goal's position into
    ``target`` (3) and the rotation vector of R_goal R^T into ``rotation`` (3); returns the
    frame's position (its column p), for the caller's position difference."""
    t = cython.declare(cython.double[9])
    cols = cython.declare(cython.double[9])
    i: cython.int
    j: cython.int
    target_rows(goal, t, target)
    for j in range(3):
        column = frame[j]
        if len(column) != 3:
            raise ValueError("a frame's columns need 3 values")
        for i in range(3):
            cols[3 * j + i] = float(column[i])
    position = frame[3]
    if len(position) != 3:
        raise ValueError("a frame's position needs 3 values")
    rotation_error(t, cols, rotation)
    return position


@cython.cfunc
@cython.nogil
@cython.cdivision(True)
@cython.exceptval(check=False)
def rotation_error(t: cython.p_double, cols: cython.p_double, out: cython.p_double) -> cython.int:
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
@cython.nogil
@cython.cdivision(True)
@cython.exceptval(check=False)
def solve6(a: cython.p_double, b: cython.p_double, k: cython.int) -> cython.void:
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
