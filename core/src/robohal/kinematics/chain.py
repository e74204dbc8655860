"""Serial chains of revolute joints described by Denavit-Hartenberg parameters.

Two conventions, one row per joint:

* classic (``modified=False``): link transform ``Rz(theta) Tz(d) Tx(a) Rx(alpha)``;
  joint i turns about the z axis of the frame before it.
* modified, after Craig (``modified=True``): ``Rx(alpha) Tx(a) Rz(theta) Tz(d)``;
  joint i turns about the z axis of its own frame. Franka publishes its arms
  this way.

``theta = q + offset``. A fixed ``base`` transform precedes the first link and a
fixed ``flange`` transform follows the last. The Jacobian is computed from the
joint axes (no finite differences); the inverse is numeric (see
:mod:`robohal.kinematics.numeric`).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument
from .base import Array, Kinematics
from .kernels import chains as _chains
from .limits import JointLimits


def _vector(values: ArrayLike, n: int, name: str) -> tuple[float, ...]:
    array = np.broadcast_to(np.asarray(values, dtype=np.float64), (n,))
    if not np.isfinite(array).all():
        raise InvalidArgument(f"DH {name} must be finite")
    return tuple(float(x) for x in array)


def _fixed(pose: Array) -> Array:
    pose.setflags(write=False)
    return pose


def product_constants(fixed: Sequence[Array], slides: Sequence[bool], flange: Array) -> array:
    """The constants of the batch kernels (layout: kernels.chains.PRODUCT_HEADER) for the chain
    ``fixed[0] @ J(q_0) @ fixed[1] @ J(q_1) ... @ flange``, each J a turn about z or, where
    ``slides``, a slide along it."""
    packed = array("d", [*flange[:3, :3].ravel(), *flange[:3, 3]])
    for pose, slide in zip(fixed, slides, strict=True):
        turns = not (pose[:3, :3] == np.eye(3)).all()
        packed.extend([float(slide), float(turns), *pose[:3, :3].ravel(), *pose[:3, 3]])
    return packed


def product_forward(packed: array, q: ArrayLike, joints: Callable[[ArrayLike], Array]) -> Array:
    """Tip poses of the chain ``packed`` (:func:`product_constants`) on the kernels: (4, 4) for
    joints (dof,), (..., 4, 4) for (..., dof). ``joints`` is the model's check of its joints."""
    pose = _chains.product_pose(packed, q)  # one configuration of plain floats: one call
    if pose is not None:
        return pose
    q = joints(q)
    if q.ndim == 1:
        return _chains.product_pose(packed, q)
    flat = np.ascontiguousarray(q.reshape(-1, q.shape[-1]))
    out = np.empty((len(flat), 4, 4))
    _chains.product_forward_batch(packed, flat, out.reshape(-1, 16))
    return out.reshape(*q.shape[:-1], 4, 4)


def product_jacobian(packed: array, q: ArrayLike, joints: Callable[[ArrayLike], Array]) -> Array:
    """The tip's geometric Jacobians of the chain ``packed`` on the kernels: (6, dof) for
    joints (dof,), (..., 6, dof) for (..., dof). ``joints`` is the model's check of its joints."""
    jac = _chains.product_jacobian(packed, q)  # one configuration of plain floats: one call
    if jac is not None:
        return jac
    q = joints(q)
    if q.ndim == 1:
        return _chains.product_jacobian(packed, q)
    dof = q.shape[-1]
    flat = np.ascontiguousarray(q.reshape(-1, dof))
    out = np.empty((len(flat), 6, dof))
    _chains.product_jacobian_batch(packed, flat, out.reshape(len(flat), 6 * dof))
    return out.reshape(*q.shape[:-1], 6, dof)


def shift(x: float, y: float, z: float) -> Array:
    """A pure translation (4, 4)."""
    pose = np.eye(4)
    pose[:3, 3] = x, y, z
    return pose


def turn(axis: str, cos: float, sin: float) -> Array:
    """A rotation (4, 4) about ``axis`` "x" or "z" given its cosine and sine (exact where they are)."""
    pose = np.eye(4)
    first, second = (1, 2) if axis == "x" else (0, 1)
    pose[first, first] = pose[second, second] = cos
    pose[second, first], pose[first, second] = sin, -sin
    return pose


class DHChain(Kinematics):
    """A serial chain of revolute joints (see the module docstring).

    The geometry (``a``, ``d``, ``alpha``, ``offsets``, ``modified``, ``base``,
    ``flange``) is fixed at construction: the scalar paths keep constants derived
    from it. ``limits`` and ``constraints`` may change.
    """

    closed_form = False
    max_solutions = 8
    fixed_attributes = frozenset({"a", "d", "alpha", "offsets", "modified", "base", "flange"})

    def __init__(
        self,
        a: Sequence[float],
        d: Sequence[float],
        alpha: Sequence[float],
        offsets: ArrayLike = 0.0,
        *,
        modified: bool = False,
        base: ArrayLike | None = None,
        flange: ArrayLike | None = None,
        limits: JointLimits | None = None,
    ) -> None:
        n = len(a)
        if n < 1 or len(d) != n or len(alpha) != n:
            raise InvalidArgument("DH parameters a, d and alpha need one value per joint")
        self.dof = n
        self.a = _vector(a, n, "a")
        self.d = _vector(d, n, "d")
        self.alpha = _vector(alpha, n, "alpha")
        self.offsets = _vector(offsets, n, "offsets")
        self.modified = bool(modified)
        self.base = _fixed(np.eye(4) if base is None else spatial.as_pose(base, "base transform").reshape(4, 4).copy())
        self.flange = _fixed(np.eye(4) if flange is None else spatial.as_pose(flange, "flange transform").reshape(4, 4).copy())
        self.limits = limits or JointLimits([-math.pi] * n, [math.pi] * n, 2.0, 10.0, 200.0)
        if self.limits.dof != n:
            raise InvalidArgument(f"limits are for {self.limits.dof} joints, the chain has {n}")
        # Constants of the scalar path.
        self._ca = [math.cos(x) for x in self.alpha]
        self._sa = [math.sin(x) for x in self.alpha]
        # alpha of 0 or +-90 deg (nearly every published table) makes Rx a permutation.
        self._kind = [0 if abs(x) < 1e-15 else 1 if abs(x - math.pi / 2) < 1e-15 else -1
                      if abs(x + math.pi / 2) < 1e-15 else 2 for x in self.alpha]
        self._flange_turns = bool((self.flange[:3, :3] != np.eye(3)).any())
        # The constants of the scalar path (layout: see kernels.chains.CHAIN_HEADER).
        self._packed = array("d", [
            float(self.modified), float(self._flange_turns), *self.base[:3].ravel(), *self.flange[:3].ravel(),
            *(x for joint in zip(self.offsets, self._kind, self.a, self.d, self._ca, self._sa, strict=True)
              for x in joint),
        ])
        self._product = self._product_constants()

    def chain_constants(self) -> array:
        """The chain for the kernels (:func:`product_constants`): the numeric inverse searches it compiled."""
        return self._product

    @property
    def reach_bound(self) -> tuple[Array, float]:
        """A sphere (centre, radius in m) the flange never leaves: consecutive frame origins
        of a revolute chain stay sqrt(a^2 + d^2) apart whatever the joints do."""
        radius = sum(math.hypot(a, d) for a, d in zip(self.a, self.d, strict=True))
        return self.base[:3, 3].copy(), radius + float(np.linalg.norm(self.flange[:3, 3]))

    def __repr__(self) -> str:
        kind = "modified" if self.modified else "classic"
        return f"DHChain({kind}, dof={self.dof}, a={list(self.a)}, d={list(self.d)}, alpha={[round(x, 6) for x in self.alpha]})"

    def _product_constants(self) -> array:
        """The chain as fixed transforms each followed by a turn about z, for the batch kernels:
        classic links are Rz(offset) J(q) then Tz(d) Tx(a) Rx(alpha), modified ones Rx(alpha)
        Tx(a) Rz(offset) J(q) then Tz(d); what follows one joint and precedes the next is one
        fixed transform. Twists of 0 and +-90 deg are exact permutations, as on the scalar path."""
        exact = {0: (1.0, 0.0), 1: (0.0, 1.0), -1: (0.0, -1.0)}
        before, after = [], []
        for i, kind in enumerate(self._kind):
            twist = turn("x", *exact.get(kind, (self._ca[i], self._sa[i])))
            offset = turn("z", math.cos(self.offsets[i]), math.sin(self.offsets[i]))
            if self.modified:
                before.append(twist @ shift(self.a[i], 0.0, 0.0) @ offset)
                after.append(shift(0.0, 0.0, self.d[i]))
            else:
                before.append(offset)
                after.append(shift(self.a[i], 0.0, self.d[i]) @ twist)
        fixed = [self.base @ before[0], *(done @ then for done, then in zip(after[:-1], before[1:], strict=True))]
        return product_constants(fixed, [False] * self.dof, after[-1] @ self.flange)

    # Batched frames -------------------------------------------------------------------

    def _link(self, i: int, theta: Array) -> Array:
        ct, st = np.cos(theta), np.sin(theta)
        ca, sa, a, d = self._ca[i], self._sa[i], self.a[i], self.d[i]
        link = np.zeros((*theta.shape, 4, 4))
        link[..., 3, 3] = 1.0
        if self.modified:  # Rx(alpha) Tx(a) Rz(theta) Tz(d)
            link[..., 0, 0] = ct
            link[..., 0, 1] = -st
            link[..., 0, 3] = a
            link[..., 1, 0] = ca * st
            link[..., 1, 1] = ca * ct
            link[..., 1, 2] = -sa
            link[..., 1, 3] = -sa * d
            link[..., 2, 0] = sa * st
            link[..., 2, 1] = sa * ct
            link[..., 2, 2] = ca
            link[..., 2, 3] = ca * d
        else:  # Rz(theta) Tz(d) Tx(a) Rx(alpha)
            link[..., 0, 0] = ct
            link[..., 0, 1] = -st * ca
            link[..., 0, 2] = st * sa
            link[..., 0, 3] = a * ct
            link[..., 1, 0] = st
            link[..., 1, 1] = ct * ca
            link[..., 1, 2] = -ct * sa
            link[..., 1, 3] = a * st
            link[..., 2, 1] = sa
            link[..., 2, 2] = ca
            link[..., 2, 3] = d
        return link

    def joint_poses(self, q: ArrayLike) -> Array:
        """Link frames 1..dof and the flange: (..., dof + 1, 4, 4)."""
        q = self._joints(q)
        frames = []
        pose = np.broadcast_to(self.base, (*q.shape[:-1], 4, 4))
        for i in range(self.dof):
            pose = pose @ self._link(i, q[..., i] + self.offsets[i])
            frames.append(pose)
        frames.append(pose @ self.flange)
        return np.stack(frames, axis=-3)

    def forward(self, q: ArrayLike) -> Array:
        """Flange pose (4, 4) for joints (dof,); (..., 4, 4) for (..., dof)."""
        return product_forward(self._product, q, self._joints)

    @staticmethod
    def _pose_array(frame: tuple) -> Array:
        x, y, z, p = frame
        # (a flat list converts faster than nested ones)
        return np.array([x[0], y[0], z[0], p[0], x[1], y[1], z[1], p[1], x[2], y[2], z[2], p[2],
                         0.0, 0.0, 0.0, 1.0]).reshape(4, 4)

    def jacobian(self, q: ArrayLike) -> Array:
        """Geometric Jacobian (..., 6, dof) of the flange from the joint axes."""
        return product_jacobian(self._product, q, self._joints)

    # The scalar path: one configuration, plain floats -------------------------------------

    def _frame(self, q: list[float], jacobian: bool) -> tuple[tuple, list | None]:
        """Flange frame as (x, y, z, p) column tuples, and the 6 Jacobian rows if asked for."""
        return _chains.chain(self._packed, q, jacobian)

    def pose_and_jacobian(self, q: ArrayLike) -> tuple[Array, Array]:
        """Flange pose (4, 4) and geometric Jacobian (6, dof) of one configuration."""
        values = self._one_joints(q).tolist()
        frame, jac = self._frame(values, True)
        return self._pose_array(frame), np.array(jac)

    def frame_and_jacobian_lists(self, q: list[float], jacobian: bool = True) -> tuple[tuple, list | None]:
        """The scalar path's raw result (no validation): ((x, y, z, p) columns, 6 Jacobian rows)."""
        return self._frame(q, jacobian)
