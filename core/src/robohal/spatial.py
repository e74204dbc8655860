"""Poses as numpy arrays of shape (..., 4, 4), float64; every helper broadcasts
over leading batch dimensions and validates its input.

Quaternions are ``(w, x, y, z)`` (scalar first, as ABB's EGM and most robot
controllers send them); rotation vectors are axis * angle in radians; RPY is
roll about x, pitch about y, yaw about z, applied as ``Rz(yaw) Ry(pitch) Rx(roll)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import InvalidArgument

Array = NDArray[np.float64]


def as_real(value: ArrayLike, name: str) -> Array:
    """``value`` as a float64 array of real numbers (NaN allowed): strings of digits,
    booleans and complex values are not taken as numbers."""
    try:
        array = np.asarray(value)
        if array.dtype.kind not in "iuf":
            raise TypeError
        return array.astype(np.float64, copy=False)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{name} must be an array of real numbers, got {value!r:.80}") from None


def as_finite(value: ArrayLike, name: str, *, last: tuple[int, ...] | None = None) -> Array:
    """``value`` as a float64 array, refusing NaN/inf and (optionally) a wrong trailing shape."""
    array = as_real(value, name)
    if (last is not None and array.shape[array.ndim - len(last):] != last) or (
        last is not None and array.ndim < len(last)
    ):
        want = "(..., " + ", ".join(map(str, last)) + ")"
        raise InvalidArgument(f"{name} must have shape {want}, got {array.shape}")
    if not np.isfinite(array).all():
        raise InvalidArgument(f"{name} contains NaN or inf")
    return array


def as_number(value: object, name: str) -> float:
    """One finite real number (not a bool, a string or an array) as a float."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value):
        raise InvalidArgument(f"{name} must be a finite number, got {value!r:.80}")
    return float(value)


def as_pose(pose: ArrayLike, name: str = "pose") -> Array:
    """Validate a homogeneous transform (or a batch): shape, finiteness, last row
    0 0 0 1, and a rotation part orthonormal with det +1 (each entry of R^T R within
    1e-6 of the identity's, as the single-pose paths check). A bad pose in a batch is
    named by its index."""
    array = as_finite(pose, name, last=(4, 4))
    bottom_off = np.abs(array[..., 3, :] - (0.0, 0.0, 0.0, 1.0)).max(axis=-1) > 1e-9
    rotation = array[..., :3, :3]
    gram = np.einsum("...ji,...jk->...ik", rotation, rotation)
    skewed = np.abs(gram - np.eye(3)).max(axis=(-2, -1)) > 1e-6
    # det > 0 as (x cross y) . z: no LAPACK call per pose
    mirrored = np.einsum("...i,...i->...", np.cross(rotation[..., 0], rotation[..., 1]), rotation[..., 2]) <= 0
    for bad, problem in ((bottom_off, "is not a homogeneous transform: last row must be 0 0 0 1"),
                         (skewed | mirrored, "has a rotation part that is not orthonormal with det +1")):
        if bad.any():
            where = f" (at index {tuple(int(i) for i in np.argwhere(bad)[0])})" if array.ndim > 2 else ""
            raise InvalidArgument(f"{name}{where} {problem}")
    return array


def identity(batch: tuple[int, ...] = ()) -> Array:
    return np.broadcast_to(np.eye(4), (*batch, 4, 4)).copy()


def from_translation(xyz: ArrayLike) -> Array:
    xyz = as_finite(xyz, "xyz", last=(3,))
    pose = identity(xyz.shape[:-1])
    pose[..., :3, 3] = xyz
    return pose


def rotation_x(angle: ArrayLike) -> Array:
    return _axis_rotation(angle, 0)


def rotation_y(angle: ArrayLike) -> Array:
    return _axis_rotation(angle, 1)


def rotation_z(angle: ArrayLike) -> Array:
    return _axis_rotation(angle, 2)


def _axis_rotation(angle: ArrayLike, axis: int) -> Array:
    a = as_finite(angle, "angle")
    c, s = np.cos(a), np.sin(a)
    pose = identity(a.shape)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    pose[..., i, i] = c
    pose[..., j, j] = c
    pose[..., i, j] = -s
    pose[..., j, i] = s
    return pose


def quat_to_matrix(quat_wxyz: ArrayLike) -> Array:
    """Rotation matrices (..., 3, 3) from unit quaternions (w, x, y, z); normalises."""
    q = as_finite(quat_wxyz, "quaternion", last=(4,))
    # scaled by the largest component first: the norm of a huge (or tiny) quaternion
    # would overflow (or underflow) while its direction is well defined
    largest = np.abs(q).max(axis=-1, keepdims=True)
    if (largest < 1e-12).any():
        raise InvalidArgument("quaternion has zero length")
    q = q / largest
    norm = np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q / norm, -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def matrix_to_quat(rotation: ArrayLike) -> Array:
    """Unit quaternions (w, x, y, z) with w >= 0 from rotation matrices (..., 3, 3)
    or the rotation part of poses (..., 4, 4)."""
    r = as_finite(rotation, "rotation")
    if r.shape[-2:] == (4, 4):
        r = r[..., :3, :3]
    r = as_finite(r, "rotation", last=(3, 3))
    # Shepperd's method, all four branches computed and the best-conditioned kept.
    trace = r[..., 0, 0] + r[..., 1, 1] + r[..., 2, 2]
    candidates = np.stack(
        [
            np.stack([1 + trace, r[..., 2, 1] - r[..., 1, 2], r[..., 0, 2] - r[..., 2, 0], r[..., 1, 0] - r[..., 0, 1]], -1),
            np.stack([r[..., 2, 1] - r[..., 1, 2], 1 + 2 * r[..., 0, 0] - trace, r[..., 0, 1] + r[..., 1, 0], r[..., 0, 2] + r[..., 2, 0]], -1),
            np.stack([r[..., 0, 2] - r[..., 2, 0], r[..., 0, 1] + r[..., 1, 0], 1 + 2 * r[..., 1, 1] - trace, r[..., 1, 2] + r[..., 2, 1]], -1),
            np.stack([r[..., 1, 0] - r[..., 0, 1], r[..., 0, 2] + r[..., 2, 0], r[..., 1, 2] + r[..., 2, 1], 1 + 2 * r[..., 2, 2] - trace], -1),
        ],
        -2,
    )
    diag = np.stack([trace, r[..., 0, 0], r[..., 1, 1], r[..., 2, 2]], -1)
    best = np.argmax(diag, axis=-1)
    q = np.take_along_axis(candidates, best[..., None, None], axis=-2)[..., 0, :]
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., :1] < 0, -q, q)


def pose_from_xyz_quat(xyz: ArrayLike, quat_wxyz: ArrayLike) -> Array:
    """Poses from positions (m) and quaternions (w, x, y, z), broadcasting."""
    xyz = as_finite(xyz, "xyz", last=(3,))
    rotation = quat_to_matrix(quat_wxyz)
    batch = np.broadcast_shapes(xyz.shape[:-1], rotation.shape[:-2])
    pose = identity(batch)
    pose[..., :3, :3] = rotation
    pose[..., :3, 3] = xyz
    return pose


def pose_to_xyz_quat(pose: ArrayLike) -> tuple[Array, Array]:
    pose = as_finite(pose, "pose", last=(4, 4))
    return pose[..., :3, 3].copy(), matrix_to_quat(pose[..., :3, :3])


def rotvec_to_matrix(rotvec: ArrayLike) -> Array:
    """Rodrigues' formula, stable near zero angle."""
    v = as_finite(rotvec, "rotation vector", last=(3,))
    angle = np.linalg.norm(v, axis=-1)
    small = angle < 1e-8
    safe = np.where(small, 1.0, angle)
    # sin(a)/a and (1-cos a)/a^2 with their Taylor series near 0
    k1 = np.where(small, 1 - angle**2 / 6, np.sin(safe) / safe)
    k2 = np.where(small, 0.5 - angle**2 / 24, (1 - np.cos(safe)) / safe**2)
    x, y, z = np.moveaxis(v, -1, 0)
    zero = np.zeros_like(x)
    skew = np.stack([np.stack([zero, -z, y], -1), np.stack([z, zero, -x], -1), np.stack([-y, x, zero], -1)], -2)
    eye = np.broadcast_to(np.eye(3), skew.shape)
    return eye + k1[..., None, None] * skew + k2[..., None, None] * (skew @ skew)


def matrix_to_rotvec(rotation: ArrayLike) -> Array:
    """Rotation vectors (axis * angle, angle in [0, pi]) from rotation matrices."""
    q = matrix_to_quat(rotation)
    w = np.clip(q[..., 0], -1.0, 1.0)
    xyz = q[..., 1:]
    sin_half = np.linalg.norm(xyz, axis=-1)
    angle = 2 * np.arctan2(sin_half, w)
    scale = np.where(sin_half < 1e-12, 2.0, angle / np.where(sin_half < 1e-12, 1.0, sin_half))
    return xyz * scale[..., None]


def rpy_to_matrix(rpy: ArrayLike) -> Array:
    """Rotation matrices from roll, pitch, yaw (radians): Rz(yaw) Ry(pitch) Rx(roll)."""
    rpy = as_finite(rpy, "rpy", last=(3,))
    roll, pitch, yaw = np.moveaxis(rpy, -1, 0)
    return (rotation_z(yaw) @ rotation_y(pitch) @ rotation_x(roll))[..., :3, :3]


def matrix_to_rpy(rotation: ArrayLike) -> Array:
    r = as_finite(rotation, "rotation", last=(3, 3))
    pitch = np.arcsin(np.clip(-r[..., 2, 0], -1.0, 1.0))
    roll = np.arctan2(r[..., 2, 1], r[..., 2, 2])
    yaw = np.arctan2(r[..., 1, 0], r[..., 0, 0])
    return np.stack([roll, pitch, yaw], -1)


def pose_from_xyz_rpy(xyz: ArrayLike, rpy: ArrayLike) -> Array:
    xyz = as_finite(xyz, "xyz", last=(3,))
    rotation = rpy_to_matrix(rpy)
    pose = identity(np.broadcast_shapes(xyz.shape[:-1], rotation.shape[:-2]))
    pose[..., :3, :3] = rotation
    pose[..., :3, 3] = xyz
    return pose


def invert(pose: ArrayLike) -> Array:
    """Inverse of rigid transforms, without a general matrix inverse."""
    pose = as_finite(pose, "pose", last=(4, 4))
    out = np.empty_like(pose)
    rt = np.swapaxes(pose[..., :3, :3], -1, -2)
    out[..., :3, :3] = rt
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", rt, pose[..., :3, 3])
    out[..., 3, :] = (0.0, 0.0, 0.0, 1.0)
    return out


def pose_error(target: ArrayLike, actual: ArrayLike) -> Array:
    """Twist-like error (..., 6): position difference (m) then rotation vector (rad)
    taking ``actual`` to ``target``, both in the base frame."""
    target = np.asarray(target, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    dp = target[..., :3, 3] - actual[..., :3, 3]
    dr = matrix_to_rotvec(target[..., :3, :3] @ np.swapaxes(actual[..., :3, :3], -1, -2))
    return np.concatenate([dp, dr], axis=-1)


def distance(a: ArrayLike, b: ArrayLike) -> tuple[Array, Array]:
    """Translation distance (m) and rotation angle (rad) between poses."""
    error = pose_error(a, b)
    return np.linalg.norm(error[..., :3], axis=-1), np.linalg.norm(error[..., 3:], axis=-1)


def interpolate(a: ArrayLike, b: ArrayLike, s: Any) -> Array:
    """Poses along the straight line from ``a`` to ``b`` (position linear,
    orientation along the shortest rotation) at path parameters ``s`` in [0, 1].
    ``a``, ``b`` (..., 4, 4) and ``s`` (...) broadcast: one call serves a whole
    piecewise path."""
    a = as_pose(a, "start pose")
    b = as_pose(b, "end pose")
    s = np.asarray(s, dtype=np.float64)
    ra, pa = a[..., :3, :3], a[..., :3, 3]
    delta = matrix_to_rotvec(np.swapaxes(ra, -1, -2) @ b[..., :3, :3])
    out = identity(np.broadcast_shapes(a.shape[:-2], b.shape[:-2], s.shape))
    out[..., :3, :3] = ra @ rotvec_to_matrix(s[..., None] * delta)
    out[..., :3, 3] = pa + s[..., None] * (b[..., :3, 3] - pa)
    return out


def rotation_error_rows(t: list[list[float]], x: tuple, y: tuple, z: tuple) -> tuple[float, float, float]:
    """Rotation vector of R_target R_actual^T on plain floats, for per-cycle solvers: the
    target pose as rows (its rotation in the first three columns), the actual rotation
    as its three columns ``x``, ``y``, ``z``."""
    t0, t1, t2 = t[0], t[1], t[2]
    m00 = t0[0] * x[0] + t0[1] * y[0] + t0[2] * z[0]
    m11 = t1[0] * x[1] + t1[1] * y[1] + t1[2] * z[1]
    m22 = t2[0] * x[2] + t2[1] * y[2] + t2[2] * z[2]
    sx = (t2[0] * x[1] + t2[1] * y[1] + t2[2] * z[1]) - (t1[0] * x[2] + t1[1] * y[2] + t1[2] * z[2])
    sy = (t0[0] * x[2] + t0[1] * y[2] + t0[2] * z[2]) - (t2[0] * x[0] + t2[1] * y[0] + t2[2] * z[0])
    sz = (t1[0] * x[0] + t1[1] * y[0] + t1[2] * z[0]) - (t0[0] * x[1] + t0[1] * y[1] + t0[2] * z[1])
    cos_angle = 0.5 * (m00 + m11 + m22 - 1.0)
    sin_angle = 0.5 * math.sqrt(sx * sx + sy * sy + sz * sz)
    angle = math.atan2(sin_angle, cos_angle)
    if sin_angle > 1e-6 or cos_angle > 0.0:
        scale = 0.5 if sin_angle < 1e-12 else 0.5 * angle / sin_angle
        return scale * sx, scale * sy, scale * sz
    # Near a half turn: the axis from the symmetric part.
    m = [[t[i][0] * x[j] + t[i][1] * y[j] + t[i][2] * z[j] for j in range(3)] for i in range(3)]
    diag = [max(m[i][i] - cos_angle, 0.0) / (1.0 - cos_angle) for i in range(3)]
    k = max(range(3), key=lambda i: diag[i])
    axis = [0.0, 0.0, 0.0]
    axis[k] = math.sqrt(diag[k])
    for i in range(3):
        if i != k:
            axis[i] = (m[k][i] + m[i][k]) / (2.0 * (1.0 - cos_angle) * axis[k])
    sign = 1.0 if axis[0] * sx + axis[1] * sy + axis[2] * sz >= 0.0 else -1.0
    norm = math.sqrt(sum(c * c for c in axis))
    return tuple(sign * angle * c / norm for c in axis)  # type: ignore[return-value]
