"""An arm drawn in a viser scene from its model: links, joints, the flange frame, and the
commanded pose as a translucent ghost.

Every model can be drawn, because every model reports its link frames
(:meth:`~robohal.kinematics.Kinematics.joint_poses`): a link is a cylinder from one frame's
origin to the next, a joint a sphere coloured by how close it is to a limit. Each of the arm
and the ghost is two batched meshes (all links, all joints), so a frame costs a handful of
messages, not one per part. Where a URDF draws the model (:mod:`.body`), its meshes take the
measured arm's place and the stick figure stays for the ghost.
"""

from __future__ import annotations

import numpy as np

from .. import spatial
from ..kinematics import JointLimits, Kinematics
from ..state import Array

LINK_COLOUR = (176, 184, 196)
GHOST_COLOUR = (90, 160, 255)
GHOST_OPACITY = 0.3
# a joint is coloured green while more than this share of its half-range is left on both sides,
# then through amber to red at the limit (a display choice, not a limit)
MARGIN_WARN = 0.25
GREEN, AMBER, RED = np.array([60, 180, 90]), np.array([240, 170, 40]), np.array([220, 50, 40])


def frame_origins(model: Kinematics, q: Array) -> Array:
    """The base origin, then every link frame's origin, base to flange: (..., dof + 2, 3)."""
    poses = model.joint_poses(q)
    base = np.zeros((*poses.shape[:-3], 1, 3))
    return np.concatenate([base, poses[..., :3, 3]], axis=-2)


def margins(q: Array, limits: JointLimits) -> Array:
    """How far each joint is from its nearer limit, as a share of half its range: 1 in the
    middle, 0 at a limit; 1 for a joint without finite limits."""
    lower, upper = limits.lower, limits.upper
    finite = np.isfinite(lower) & np.isfinite(upper)
    half = np.where(finite, (upper - lower) / 2, 1.0)
    room = np.minimum(q - lower, upper - q)
    return np.where(finite, np.clip(room / half, 0.0, 1.0), 1.0)


def margin_colours(margin: Array) -> Array:
    """Green with room to spare, amber at MARGIN_WARN, red at the limit: (dof, 3) uint8."""
    s = np.clip(np.asarray(margin, dtype=np.float64) / MARGIN_WARN, 0.0, 1.0)[..., None]
    colour = np.where(s < 0.5, RED + (AMBER - RED) * (2 * s), AMBER + (GREEN - AMBER) * (2 * s - 1))
    colour = np.where(s >= 1.0, GREEN, colour)
    return np.round(colour).astype(np.uint8)


def segments(points: Array) -> tuple[Array, Array, Array]:
    """Cylinders from each point to the next: positions (n, 3), orientations (n, 4, wxyz) that
    turn +z onto the segment, and lengths (n,). A zero-length segment keeps +z."""
    start, end = points[:-1], points[1:]
    axis = end - start
    length = np.linalg.norm(axis, axis=-1)
    z = np.divide(axis, length[:, None], out=np.tile([0.0, 0.0, 1.0], (len(axis), 1)), where=length[:, None] > 1e-12)
    # the shortest rotation from +z to z: half-way quaternion (1 + z.e_z, e_z x z), normalised
    w = 1.0 + z[:, 2]
    xyz = np.stack([-z[:, 1], z[:, 0], np.zeros(len(z))], -1)
    flipped = w < 1e-9  # pointing down -z: a half turn about x
    quat = np.concatenate([w[:, None], xyz], -1)
    quat[flipped] = (0.0, 1.0, 0.0, 0.0)
    quat /= np.linalg.norm(quat, axis=-1, keepdims=True)
    return start, quat, length


def cylinder_mesh(sides: int = 16) -> tuple[Array, Array]:
    """A cylinder of radius 1 from z = 0 to z = 1 (closed), as vertices and faces."""
    angle = np.linspace(0, 2 * np.pi, sides, endpoint=False)
    ring = np.stack([np.cos(angle), np.sin(angle)], -1)
    vertices = np.concatenate([np.c_[ring, np.zeros(sides)], np.c_[ring, np.ones(sides)], [[0, 0, 0], [0, 0, 1]]])
    k = np.arange(sides)
    n = (k + 1) % sides
    bottom, top = 2 * sides, 2 * sides + 1
    faces = np.concatenate([
        np.stack([k, n, sides + n], -1), np.stack([k, sides + n, sides + k], -1),
        np.stack([np.full(sides, bottom), n, k], -1), np.stack([np.full(sides, top), sides + k, sides + n], -1),
    ])
    return vertices.astype(np.float32), faces.astype(np.uint32)


def sphere_mesh(rings: int = 8, sides: int = 16) -> tuple[Array, Array]:
    """A sphere of radius 1 (latitude-longitude), as vertices and faces."""
    polar = np.linspace(0, np.pi, rings + 1)[1:-1]
    angle = np.linspace(0, 2 * np.pi, sides, endpoint=False)
    ring = np.stack([np.outer(np.sin(polar), np.cos(angle)), np.outer(np.sin(polar), np.sin(angle)),
                     np.repeat(np.cos(polar)[:, None], sides, 1)], -1).reshape(-1, 3)
    vertices = np.concatenate([[[0, 0, 1]], ring, [[0, 0, -1]]])
    k = np.arange(sides)
    n = (k + 1) % sides
    faces = [np.stack([np.zeros(sides), 1 + k, 1 + n], -1)]
    for r in range(rings - 2):
        a, b = 1 + r * sides, 1 + (r + 1) * sides
        faces += [np.stack([a + k, b + k, b + n], -1), np.stack([a + k, b + n, a + n], -1)]
    last, bottom = 1 + (rings - 2) * sides, len(vertices) - 1
    faces.append(np.stack([last + n, last + k, np.full(sides, bottom)], -1))
    return vertices.astype(np.float32), np.concatenate(faces).astype(np.uint32)


def arm_size(model: Kinematics, q: Array) -> float:
    """The arm's length from base to flange through its links at ``q`` (m): sets the part sizes."""
    points = frame_origins(model, q)
    return float(np.linalg.norm(np.diff(points, axis=0), axis=-1).sum()) or 1.0


class ArmScene:
    """One arm in a scene (``scene`` is a viser SceneApi), under ``name``, at ``offset`` (m):
    call :meth:`show` with the measured and commanded joints at every frame. A ``body``
    (:class:`~.body.UrdfBody`) draws the measured arm instead of the links and joints."""

    def __init__(self, scene, name: str, model: Kinematics, q: Array, *, offset: Array = (0.0, 0.0, 0.0),
                 body=None) -> None:
        self.model = model
        self.body = body
        self.name = name
        self.offset = np.asarray(offset, dtype=np.float64)
        size = arm_size(model, q)
        self.radius = 0.025 * size
        links, joints = model.dof + 1, model.dof
        cylinder, sphere = cylinder_mesh(), sphere_mesh()
        self.links = scene.add_batched_meshes_simple(
            f"{name}/links", *cylinder, *_at_rest(links), batched_colors=LINK_COLOUR, lod="off")
        self.joints = scene.add_batched_meshes_simple(
            f"{name}/joints", *sphere, *_at_rest(joints), batched_colors=GREEN.astype(np.uint8), lod="off")
        self.ghost_links = scene.add_batched_meshes_simple(
            f"{name}/ghost/links", *cylinder, *_at_rest(links), batched_colors=GHOST_COLOUR,
            opacity=GHOST_OPACITY, lod="off", cast_shadow=False)
        self.ghost_joints = scene.add_batched_meshes_simple(
            f"{name}/ghost/joints", *sphere, *_at_rest(joints), batched_colors=GHOST_COLOUR,
            opacity=GHOST_OPACITY, lod="off", cast_shadow=False)
        self.flange = scene.add_frame(f"{name}/flange", axes_length=0.3 * size / 2, axes_radius=self.radius / 4)
        self.links.visible = self.joints.visible = body is None
        self.show(q, q)

    def remove(self) -> None:
        for part in (self.links, self.joints, self.ghost_links, self.ghost_joints, self.flange, self.body):
            if part is not None:
                part.remove()

    def show(self, q: Array, q_commanded: Array | None) -> None:
        """Draw the arm at the measured ``q``, its ghost at ``q_commanded`` (hidden when None)."""
        both = np.stack([q, q if q_commanded is None else q_commanded])
        poses = self.model.joint_poses(both)
        points = np.concatenate([np.zeros((2, 1, 3)), poses[..., :3, 3]], axis=-2) + self.offset
        if self.body is not None:
            self.body.show(q)
        else:
            self._place(self.links, self.joints, points[0], self.radius, margin_colours(margins(q, self.model.limits)))
        self.ghost_links.visible = self.ghost_joints.visible = q_commanded is not None
        if q_commanded is not None:
            self._place(self.ghost_links, self.ghost_joints, points[1], self.radius * 1.15, None)
        flange = poses[0, -1]
        self.flange.position = flange[:3, 3] + self.offset
        self.flange.wxyz = spatial.matrix_to_quat(flange)

    def _place(self, links, joints, points: Array, radius: float, colours: Array | None) -> None:
        start, quat, length = segments(points)
        scales = np.stack([np.full(len(length), radius), np.full(len(length), radius), length], -1)
        links.batched_positions, links.batched_wxyzs, links.batched_scales = start, quat, scales
        # joint i sits at the origin of the frame it moves (point i + 1)
        joints.batched_positions = points[1:-1]
        joints.batched_scales = np.full(len(points) - 2, radius * 1.6)
        if colours is not None:
            joints.batched_colors = colours


def _at_rest(count: int) -> tuple[Array, Array]:
    """Orientations (identity) and positions (origin) for ``count`` parts, placed by the first show()."""
    return np.tile([1.0, 0.0, 0.0, 0.0], (count, 1)), np.zeros((count, 3))
