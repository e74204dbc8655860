"""The measured external wrench's force, drawn as an arrow pushing on the flange.

Where a robot measures the wrench on its flange (``RobotState.wrench``: a Franka's estimate, EGM's
force sensor), the page shows its force while it is felt: an arrow whose head touches the flange
and which points the way the force pushes it, its length proportional to the force
(:data:`METRES_PER_NEWTON`, up to :data:`LONGEST`). Below :data:`FELT_FROM` (an estimate's noise,
an arm at rest in free space) there is no arrow: it appears when the arm meets something, pressing
on a surface or pushed by a hand, and goes when it lets go.
"""

from __future__ import annotations

import math

import numpy as np

from ..state import Array
from .scene import cylinder_mesh, segments

#: m per N: how long the arrow is for a force (a display choice: 10 N draws 10 cm)
METRES_PER_NEWTON = 0.01
#: m: the longest arrow (a display choice: a collision's hundreds of newtons still fit the scene)
LONGEST = 0.4
#: N: the smallest force drawn (our choice: above a Franka's estimate at rest in free space)
FELT_FROM = 1.0
#: the head's share of the arrow, and its radius against the shaft's
HEAD_SHARE = 0.25
HEAD_WIDTH = 2.5
COLOUR = (230, 60, 200)


def arrow(flange: Array, force: Array) -> tuple[Array, Array] | None:
    """Where the arrow for ``force`` (N, base frame) on a flange at ``flange`` (m) runs: its tail
    and its head (the flange), or None when the force is too small to draw."""
    size = float(np.linalg.norm(force))
    if not math.isfinite(size) or size < FELT_FROM:
        return None
    length = min(size * METRES_PER_NEWTON, LONGEST)
    return flange - np.asarray(force, dtype=np.float64) / size * length, np.asarray(flange, dtype=np.float64)


def cone_mesh(sides: int = 16) -> tuple[Array, Array]:
    """A cone of radius 1 at z = 0 narrowing to a point at z = 1 (closed), as vertices and faces."""
    angle = np.linspace(0, 2 * np.pi, sides, endpoint=False)
    vertices = np.concatenate([np.c_[np.cos(angle), np.sin(angle), np.zeros(sides)], [[0, 0, 0], [0, 0, 1]]])
    k = np.arange(sides)
    n = (k + 1) % sides
    faces = np.concatenate([np.stack([np.full(sides, sides), n, k], -1), np.stack([k, n, np.full(sides, sides + 1)], -1)])
    return vertices.astype(np.float32), faces.astype(np.uint32)


class WrenchArrow:
    """The arrow of one robot's measured force in a viser scene, under ``name``; ``radius`` (m) is
    the shaft's. Call :meth:`show` with the flange's position and the wrench at every frame."""

    def __init__(self, scene, name: str, radius: float) -> None:
        self.radius = float(radius)
        rest = dict(batched_wxyzs=np.array([[1.0, 0.0, 0.0, 0.0]]), batched_positions=np.zeros((1, 3)),
                    batched_colors=COLOUR, lod="off", cast_shadow=False)
        self.shaft = scene.add_batched_meshes_simple(f"{name}/shaft", *cylinder_mesh(), **rest)
        self.head = scene.add_batched_meshes_simple(f"{name}/head", *cone_mesh(), **rest)
        self.visible = False
        self.shaft.visible = self.head.visible = False

    def show(self, flange: Array, wrench: Array | None) -> None:
        """Draw the force of ``wrench`` (N, Nm, base frame: its first three) pushing on the flange
        at ``flange`` (m), or hide the arrow when there is none to draw."""
        ends = None if wrench is None else arrow(np.asarray(flange, dtype=np.float64), np.asarray(wrench)[:3])
        self.visible = ends is not None
        self.shaft.visible = self.head.visible = self.visible
        if ends is None:
            return
        tail, tip = ends
        start, wxyz, length = segments(np.stack([tail, tip]))
        head = min(float(length[0]) * HEAD_SHARE, 6.0 * self.radius)
        shaft = float(length[0]) - head
        width = self.radius * HEAD_WIDTH
        self.shaft.batched_positions, self.shaft.batched_wxyzs = start, wxyz
        self.shaft.batched_scales = np.array([[self.radius, self.radius, shaft]])
        self.head.batched_positions = tail[None] + (tip - tail)[None] * (shaft / float(length[0]))
        self.head.batched_wxyzs = wxyz
        self.head.batched_scales = np.array([[width, width, head]])

    def remove(self) -> None:
        self.shaft.remove()
        self.head.remove()
