"""Serial chains read from URDF files: :class:`UrdfChain`.

yourdfpy parses the file; :meth:`UrdfChain.from_urdf` keeps the joints on the
path from a base link to a tip link (other branches, a gripper's fingers, are
ignored) and reduces them to what kinematics needs. Every moving joint
(revolute, continuous, prismatic) becomes a fixed transform followed by a turn
about, or a slide along, its axis; fixed joints fold into the next transform,
and those after the last moving joint into the flange transform.

Internally each joint's frame is turned so that its axis is z, which makes the
chain the DH chain's recipe with general fixed transforms:
``pose = pose @ fixed_i @ Rz(q_i)`` (or ``Tz(q_i)`` for a slide), which the
kinematics kernels compute for a batch and for one configuration (compiled where
the build had a C compiler). The Jacobian comes from the joint axes; the inverse
is numeric and the differential IK runs through the one-configuration path
(:meth:`UrdfChain.frame_and_jacobian_lists`).

A chain of turning joints only is also a modified-DH chain (consecutive joint axes
are two lines: their common normal gives a, alpha, d and the angle offset), so one
configuration at a time it runs on :class:`~robohal.kinematics.DHChain`'s scalar
path, compiled where the kernels were built. The conversion is checked against
the chain's own frames when it is made and used only where it agrees.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument
from .base import Array, Kinematics
from .chain import DHChain, product_constants, product_forward, product_jacobian
from .kernels import chains as _chains
from .limits import JointLimits

#: the joint types a chain moves with; ``continuous`` is a revolute joint without a range
MOVING = ("revolute", "continuous", "prismatic")
# Without published rates (URDF has none): full speed in 0.2 s, full acceleration in
# 0.05 s, as JointLimits.from_degrees derives them from a datasheet's speeds.
ACCELERATION_TIME = 0.2
JERK_TIME = 0.05
# How closely (m, rad) the DH form must reproduce the chain's own frames to stand in for it.
DH_AGREEMENT = 1e-12


def _frozen(array: Array) -> Array:
    array.setflags(write=False)
    return array


def _turn_to_axis(axis: Array) -> Array:
    """A rotation (3, 3) whose z column is the unit ``axis``; the identity for z itself
    (the usual case: no round-off is added there)."""
    if axis[0] == 0.0 and axis[1] == 0.0:
        return np.eye(3) if axis[2] > 0 else np.diag([1.0, -1.0, -1.0])
    # x: perpendicular to the axis, in the plane of the axis and the z axis where possible.
    helper = np.array([0.0, 0.0, 1.0]) if abs(axis[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    x = np.cross(helper, axis)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(axis, x), axis])


def _transform(rotation: Array, translation: Array | None = None) -> Array:
    pose = np.eye(4)
    pose[:3, :3] = rotation
    if translation is not None:
        pose[:3, 3] = translation
    return pose


class UrdfChain(Kinematics):
    """A serial chain of revolute and prismatic joints with general joint frames.

    ``origins`` (n, 4, 4): each moving joint's frame in the frame of the link before it
    (fixed joints already folded in), as a URDF joint's ``<origin>``; ``axes`` (n, 3):
    each joint's axis in its own frame; ``kinds``: ``"revolute"``, ``"continuous"`` or
    ``"prismatic"`` per joint; ``tip``: the tip frame in the last joint's child link.
    Joint values are radians for turning joints and metres for prismatic ones.
    :meth:`from_urdf` builds one from a file.
    """

    closed_form = False
    max_solutions = 8
    fixed_attributes = frozenset({"origins", "axes", "kinds", "tip"})

    def __init__(
        self,
        origins: ArrayLike,
        axes: ArrayLike,
        kinds: Sequence[str],
        tip: ArrayLike | None = None,
        limits: JointLimits | None = None,
        *,
        joint_names: Sequence[str] | None = None,
        link_names: Sequence[str] | None = None,
        source: str | None = None,
    ) -> None:
        origins = spatial.as_pose(origins, "joint origins")
        if origins.ndim != 3 or len(origins) < 1:
            raise InvalidArgument(f"a chain needs at least one moving joint origin (n, 4, 4), got shape {origins.shape}")
        n = len(origins)
        axes = spatial.as_finite(axes, "joint axes", last=(3,))
        lengths = np.linalg.norm(axes.reshape(-1, 3), axis=1)
        if axes.shape != (n, 3) or (lengths < 1e-9).any():
            raise InvalidArgument(f"joint axes must be {n} non-zero vectors (n, 3), got shape {axes.shape}")
        kinds = tuple(kinds)
        if len(kinds) != n or any(kind not in MOVING for kind in kinds):
            raise InvalidArgument(f"joint kinds must be {n} of {', '.join(MOVING)}, got {kinds!r:.120}")
        self.dof = n
        self.origins = _frozen(origins.copy())
        self.axes = _frozen(axes / lengths[:, None])
        self.kinds = kinds
        self.tip = _frozen(np.eye(4) if tip is None else spatial.as_pose(tip, "tip transform").reshape(4, 4).copy())
        self.limits = limits or JointLimits(
            [-math.pi] * n, [math.pi] * n, 2.0, 2.0 / ACCELERATION_TIME, 2.0 / ACCELERATION_TIME / JERK_TIME)
        if not isinstance(self.limits, JointLimits) or self.limits.dof != n:
            raise InvalidArgument(f"limits must be JointLimits for the chain's {n} joints")
        self.joint_names = tuple(joint_names) if joint_names is not None else tuple(f"joint{i + 1}" for i in range(n))
        self.link_names = tuple(link_names) if link_names is not None else (
            *(f"link{i + 1}" for i in range(n)), "tip")
        if len(self.joint_names) != n or len(self.link_names) != n + 1:
            raise InvalidArgument(f"a chain of {n} joints needs {n} joint names and {n + 1} link names")
        #: the file the chain was read from, if any
        self.source = source
        # Turn every joint frame so that its axis is z: fixed_i = turn_{i-1}^T origin_i turn_i.
        turns = [_turn_to_axis(axis) for axis in self.axes]
        fixed, before = [], np.eye(3)
        for origin, turn in zip(self.origins, turns, strict=True):
            fixed.append(_transform(before.T) @ origin @ _transform(turn))
            before = turn
        self._fixed = _frozen(np.array(fixed))
        self._flange = _frozen(_transform(before.T) @ self.tip)
        # Back from a turned joint frame to its child link's frame (joint_poses reports links).
        self._to_link = _frozen(np.array([_transform(turn.T) for turn in turns]))
        self._slides = tuple(kind == "prismatic" for kind in kinds)
        # The constants of the kernels (layout: see kernels.chains.PRODUCT_HEADER).
        self._packed = product_constants(self._fixed, self._slides, self._flange)
        self._dh = _as_dh(self) if not any(self._slides) else None

    @classmethod
    def from_urdf(cls, path: str | os.PathLike, base_link: str, tip_link: str,
                  acceleration: ArrayLike | None = None, jerk: ArrayLike | None = None) -> UrdfChain:
        """The chain from ``base_link`` to ``tip_link`` of the URDF file at ``path``.

        Position ranges and velocities come from each joint's ``<limit>`` (a continuous
        joint has no range, only a velocity). URDF carries no acceleration or jerk:
        give them per joint (rad/s^2, rad/s^3; m for prismatic joints) or a scalar for
        all; by default full speed is reached in 0.2 s and full acceleration in 0.05 s.
        Refused, with the file and the problem in one line: a missing or malformed file,
        a link not in it, a tip that does not hang below the base, a mimic, floating or
        planar joint on the path, a moving joint without limits.
        """
        path = Path(path)
        if not path.is_file():
            raise InvalidArgument(f"{path}: no such URDF file")
        try:  # yourdfpy logs and "recovers" from broken XML: refuse it first, with the line
            ElementTree.parse(path)
        except ElementTree.ParseError as exc:
            raise InvalidArgument(f"{path}: not well-formed XML: {exc}") from None
        import yourdfpy  # imported here: it loads trimesh, about a second, which listing models must not pay

        try:
            robot = yourdfpy.URDF.load(str(path), build_scene_graph=False, load_meshes=False,
                                       build_collision_scene_graph=False, load_collision_meshes=False)
        except Exception as exc:  # whatever the parser raises on a file it cannot read
            raise InvalidArgument(f"{path}: not a readable URDF: {type(exc).__name__}: {exc}") from None
        for role, link in (("base", base_link), ("tip", tip_link)):
            if link not in robot.link_map:
                raise InvalidArgument(f"{path}: {role} link {link!r} is not in the file"
                                      f" (links: {', '.join(sorted(robot.link_map))})")
        path_joints = _path(robot, base_link, tip_link, path)
        origins, axes, kinds, names, links = [], [], [], [], []
        lower, upper, velocity = [], [], []
        pending = np.eye(4)  # fixed joints since the last moving one
        for joint in path_joints:
            origin = np.eye(4) if joint.origin is None else np.asarray(joint.origin, dtype=np.float64)
            if joint.type == "fixed":
                pending = pending @ origin
                continue
            if joint.type not in MOVING:
                raise InvalidArgument(f"{path}: joint {joint.name!r} is a {joint.type} joint; a chain takes"
                                      f" revolute, continuous, prismatic and fixed joints")
            if joint.mimic is not None:
                raise InvalidArgument(f"{path}: joint {joint.name!r} mimics {joint.mimic.joint!r}; a chain needs"
                                      " independent joints between its base and tip")
            low, high, speed = _joint_limits(joint, path)
            origins.append(pending @ origin)
            pending = np.eye(4)
            axes.append(np.array([1.0, 0.0, 0.0]) if joint.axis is None else np.asarray(joint.axis, dtype=np.float64))
            kinds.append(joint.type)
            names.append(joint.name)
            links.append(joint.child)
            lower.append(low)
            upper.append(high)
            velocity.append(speed)
        if not origins:
            raise InvalidArgument(f"{path}: no moving joint between {base_link!r} and {tip_link!r}")
        velocity_array = np.array(velocity)
        try:
            acc = velocity_array / ACCELERATION_TIME if acceleration is None else acceleration
            if jerk is None:
                jerk = spatial.as_real(acc, "acceleration") / JERK_TIME
            limits = JointLimits(np.array(lower), np.array(upper), velocity_array, acc, jerk)
            return cls(np.array(origins), np.array(axes), kinds, pending, limits, joint_names=names,
                       link_names=[*links, tip_link], source=str(path))
        except InvalidArgument as exc:
            raise InvalidArgument(f"{path}: {exc}") from None

    def __repr__(self) -> str:
        where = f", source={self.source!r}" if self.source else ""
        return f"UrdfChain(dof={self.dof}, joints={list(self.joint_names)}{where})"

    @property
    def periodic(self) -> tuple[bool, ...]:
        return tuple(not slide for slide in self._slides)

    def chain_constants(self):
        """The chain for the kernels (kernels.chains.PRODUCT_HEADER): the numeric inverse searches it compiled."""
        return self._packed

    @property
    def reach_bound(self) -> tuple[Array, float] | None:
        """A sphere (centre, radius in m) the flange never leaves; None with a slide
        of unbounded travel. The first joint's frame never moves; each later one stays
        as far from the one before as its fixed shift (plus a slide's travel)."""
        radius = 0.0
        for i, slide in enumerate(self._slides):
            if i > 0:
                radius += float(np.linalg.norm(self._fixed[i, :3, 3]))
            if slide:
                travel = max(abs(float(self.limits.lower[i])), abs(float(self.limits.upper[i])))
                if not math.isfinite(travel):
                    return None
                radius += travel
        return self._fixed[0, :3, 3].copy(), radius + float(np.linalg.norm(self._flange[:3, 3]))

    # Batched frames -------------------------------------------------------------------

    def _walk(self, q: Array, every: bool) -> tuple[Array, Array, list]:
        """For joints (m, dof): the last joint frame's rotation (3, 3, m), column by
        column, and position (3, m); with ``every``, each joint frame (rotation, position)
        after its motion, for the Jacobian and the link frames. With the batch on the
        last axis, a product with a fixed rotation is one matrix product and every
        element-wise step runs over contiguous memory."""
        m = len(q)
        rotation = np.broadcast_to(np.eye(3)[:, :, None], (3, 3, m))
        position = np.zeros((3, m))
        frames = []
        for i, slide in enumerate(self._slides):
            fixed = self._fixed[i]
            columns = rotation.reshape(3, 3 * m)  # rows: the columns' x, y, z components
            position = position + (fixed[:3, 3] @ columns).reshape(3, m)
            turned = (fixed[:3, :3].T @ columns).reshape(3, 3, m)  # column j = sum_k column_k A[k, j]
            value = q[:, i]
            if slide:
                position = position + turned[2] * value
                rotation = turned
            else:
                c, s = np.cos(value), np.sin(value)
                x, y = turned[0], turned[1]
                rotation = np.empty((3, 3, m))
                np.multiply(c, x, out=rotation[0])
                rotation[0] += s * y
                np.multiply(c, y, out=rotation[1])
                rotation[1] -= s * x
                rotation[2] = turned[2]
            if every:
                frames.append((rotation, position))
        return rotation, position, frames

    def _tip(self, rotation: Array, position: Array, shape: tuple[int, ...]) -> Array:
        """The tip poses (..., 4, 4) from the last joint frames of :meth:`_walk`."""
        return self._poses(rotation, position, self._flange, shape)

    @staticmethod
    def _poses(rotation: Array, position: Array, after: Array, shape: tuple[int, ...]) -> Array:
        """Poses (..., 4, 4) of frames (3, 3, m) and (3, m), each followed by the fixed ``after``."""
        m = position.shape[1]
        columns = rotation.reshape(3, 3 * m)
        pose = np.zeros((m, 4, 4))
        pose[:, :3, :3] = (after[:3, :3].T @ columns).reshape(3, 3, m).transpose(2, 1, 0)
        pose[:, :3, 3] = (position + (after[:3, 3] @ columns).reshape(3, m)).T
        pose[:, 3, 3] = 1.0
        return pose.reshape(*shape, 4, 4)

    def _batch(self, q: Array) -> tuple[Array, tuple[int, ...]]:
        """Joints (..., dof) as (m, dof), and the leading shape to give results back."""
        return q.reshape(-1, self.dof), q.shape[:-1]

    def forward(self, q: ArrayLike) -> Array:
        """Tip pose (4, 4) for joints (dof,); (..., 4, 4) for (..., dof)."""
        return product_forward(self._packed, q, self._joints)

    def joint_poses(self, q: ArrayLike) -> Array:
        """Each moving joint's child link frame, then the tip: (..., dof + 1, 4, 4)."""
        flat, shape = self._batch(self._joints(q))
        rotation, position, frames = self._walk(flat, True)
        links = [self._poses(r, p, to_link, shape) for (r, p), to_link in zip(frames, self._to_link, strict=True)]
        links.append(self._tip(rotation, position, shape))
        return np.stack(links, axis=-3)

    def jacobian(self, q: ArrayLike) -> Array:
        """Geometric Jacobian (..., 6, dof) of the tip from the joint axes."""
        return product_jacobian(self._packed, q, self._joints)

    def pose_and_jacobian(self, q: ArrayLike) -> tuple[Array, Array]:
        """Tip pose (4, 4) and geometric Jacobian (6, dof) of one configuration."""
        values = self._one_joints(q).tolist()
        frame, jac = self.frame_and_jacobian_lists(values, True)
        return _pose_array(frame), np.array(jac)

    def frame_and_jacobian_lists(self, q: list[float], jacobian: bool = True) -> tuple[tuple, list | None]:
        """The scalar path's raw result (no validation): ((x, y, z, p) columns, 6 Jacobian rows)."""
        if self._dh is not None:
            return self._dh.frame_and_jacobian_lists(q, jacobian)
        return _chains.product_chain(self._packed, q, jacobian)

    @property
    def uses_dh_path(self) -> bool:
        """Whether one configuration runs on the DH chain's scalar path (see the module docstring)."""
        return self._dh is not None


def _as_dh(chain: UrdfChain) -> DHChain | None:
    """The chain of turning joints as a modified-DH chain (Craig), or None where the two
    disagree beyond DH_AGREEMENT. Frame i sits on joint i's axis with x along the common
    normal toward axis i + 1; the base is frame 1 at q = 0, the flange what is left."""
    n = chain.dof
    frames = chain.joint_poses(np.zeros((1, n)))[0]  # child links at q = 0
    turned = frames[:n] @ np.linalg.inv(chain._to_link)  # joint frames, z along the axes
    origins, axes = turned[:, :3, 3], turned[:, :3, 2]
    dh = []
    for i in range(n):
        z, o = axes[i], origins[i]
        if i + 1 < n:
            normal = np.cross(z, axes[i + 1])
            if np.linalg.norm(normal) > 1e-9:  # skew or meeting axes: the common normal is unique
                x = normal / np.linalg.norm(normal)
                # the point of axis i nearest axis i + 1
                gap = origins[i + 1] - o
                w = axes[i + 1]
                s = (gap @ z - (gap @ w) * (z @ w)) / (1.0 - (z @ w) ** 2)
                o = o + s * z
            else:  # parallel axes: toward axis i + 1 from this joint's origin
                gap = origins[i + 1] - o
                x = gap - (gap @ z) * z
                x = x / np.linalg.norm(x) if np.linalg.norm(x) > 1e-9 else turned[i, :3, 0]
        else:
            x = turned[i, :3, 0]
        frame = np.eye(4)
        frame[:3, :3] = np.column_stack([x, np.cross(z, x), z])
        frame[:3, 3] = o
        dh.append(frame)
    a, d, alpha, offsets = [0.0], [0.0], [0.0], [0.0]
    for before, after in pairwise(dh):
        t = np.linalg.solve(before, after)  # Rx(alpha) Tx(a) Rz(theta) Tz(d)
        angle = math.atan2(-t[1, 2], t[2, 2])
        ca, sa = math.cos(angle), math.sin(angle)
        alpha.append(angle)
        a.append(float(t[0, 3]))
        d.append(float(-t[1, 3] * sa + t[2, 3] * ca))
        offsets.append(math.atan2(t[1, 0] * ca + t[2, 0] * sa, t[0, 0]))
    tip = chain.forward(np.zeros((1, n)))[0]
    try:
        converted = DHChain(a, d, alpha, offsets, modified=True, base=dh[0], flange=np.linalg.solve(dh[-1], tip),
                            limits=chain.limits)
    except InvalidArgument:  # a round-off too far from a rigid transform
        return None
    q = np.random.default_rng(0).uniform(-np.pi, np.pi, (8, n))
    for row in q:
        frame, jac = converted.frame_and_jacobian_lists(row.tolist())
        if not (np.abs(_pose_array(frame) - chain.forward(row[None])[0]).max() < DH_AGREEMENT
                and np.abs(np.array(jac) - chain.jacobian(row[None])[0]).max() < DH_AGREEMENT):
            return None
    return converted


def _pose_array(frame: tuple) -> Array:
    x, y, z, p = frame
    return np.array([x[0], y[0], z[0], p[0], x[1], y[1], z[1], p[1], x[2], y[2], z[2], p[2],
                     0.0, 0.0, 0.0, 1.0]).reshape(4, 4)


def _path(robot, base_link: str, tip_link: str, path: Path) -> list:
    """The joints from ``base_link`` down to ``tip_link``, in order."""
    parent_joint = {joint.child: joint for joint in robot.joint_map.values()}
    joints, link = [], tip_link
    while link != base_link:
        joint = parent_joint.get(link)
        if joint is None:
            raise InvalidArgument(f"{path}: tip link {tip_link!r} does not hang below base link {base_link!r}")
        joints.append(joint)
        link = joint.parent
        if len(joints) > len(parent_joint):  # a loop of links: no URDF tree
            raise InvalidArgument(f"{path}: the links above {tip_link!r} form a loop")
    return joints[::-1]


def _joint_limits(joint, path: Path) -> tuple[float, float, float]:
    """(lower, upper, velocity) of a moving joint; a continuous joint has an open range."""
    limit = joint.limit
    velocity = None if limit is None else limit.velocity
    if velocity is None or not (math.isfinite(velocity) and velocity > 0):
        raise InvalidArgument(f"{path}: joint {joint.name!r} has no positive velocity in its <limit>")
    if joint.type == "continuous":
        return -math.inf, math.inf, float(velocity)
    if limit.lower is None or limit.upper is None:
        raise InvalidArgument(f"{path}: {joint.type} joint {joint.name!r} has no lower and upper <limit>")
    lower, upper = float(limit.lower), float(limit.upper)
    if not (math.isfinite(lower) and math.isfinite(upper) and lower <= upper):
        raise InvalidArgument(f"{path}: joint {joint.name!r} has limits [{lower}, {upper}], not a range")
    return lower, upper, float(velocity)
