"""The page's controls for one robot, built for one browser client: joint sliders, a flange
gizmo (or, for a position-only planar arm, a pad in its plane that moves the pen through
inverse kinematics), and Stop and Recover.

Every command goes through ``command(action, value)``, the view's one gate (it refuses when
the page may only watch), and from there through the robot's stream calls
(:meth:`~robohal.Robot.servo`, :meth:`~robohal.Robot.servo_pose`): the arm follows the newest
value within its limits, and stops by itself when the page goes quiet.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from .. import spatial
from ..state import Array

# after the user last touched a control, the page leaves it where it is for this long before
# it follows the measured arm again (s): a display choice, long enough to let go of a slider
HANDS_OFF = 1.0
# a slider for a joint without finite limits spans one turn each way
OPEN_RANGE = math.pi


class RobotControls:
    """One client's controls of one robot (``index`` in the view)."""

    def __init__(self, client, station, command: Callable[[str, object], None]) -> None:
        self.station = station
        self.command = command
        self.touched = -math.inf  # monotonic time the user last commanded from these controls
        self.dragging = False
        model = station.robot.model
        q = station.robot.state.q
        gui = client.gui
        self.folder = gui.add_folder(f"Move {station.name}")
        with self.folder:
            limits = model.limits
            self.sliders = []
            for j in range(model.dof):
                low = float(limits.lower[j]) if math.isfinite(limits.lower[j]) else -OPEN_RANGE
                high = float(limits.upper[j]) if math.isfinite(limits.upper[j]) else OPEN_RANGE
                slider = gui.add_slider(f"joint {j + 1} (rad)", min=low, max=high, step=1e-3,
                                        initial_value=float(np.clip(q[j], low, high)))
                slider.on_update(self._slid)
                self.sliders.append(slider)
            stop = gui.add_button("Stop", color="red")
            stop.on_click(lambda event: self._act(event, "stop", None))
            recover = gui.add_button("Recover")
            recover.on_click(lambda event: self._act(event, "recover", None))
        self.planar = bool(getattr(model, "position_only", False))
        pose = model.forward(q)
        name = f"{station.name}/target"
        if self.planar:  # a pad in the arm's plane: the pen goes where it is dragged
            self.gizmo = client.scene.add_transform_controls(
                name, scale=0.5 * station.scene.radius * 20, active_axes=(True, True, False),
                disable_rotations=True, depth_test=False)
        else:
            self.gizmo = client.scene.add_transform_controls(name, scale=station.scene.radius * 8, depth_test=False)
        self._place_gizmo(pose)
        self.gizmo.on_update(self._dragged)

    def follow(self, q: Array) -> None:
        """Show the measured arm in the controls, unless the user is using them."""
        if self.dragging or time.monotonic() - self.touched < HANDS_OFF:
            return
        for slider, value in zip(self.sliders, q, strict=True):
            value = float(np.clip(value, slider.min, slider.max))
            if abs(value - slider.value) > slider.step / 2:  # a change the slider can show: send no other
                slider.value = value
        self._place_gizmo(self.station.robot.model.forward(q))

    def remove(self) -> None:
        self.folder.remove()
        self.gizmo.remove()

    # What the user did ------------------------------------------------------------------------

    def _slid(self, event) -> None:
        if event.client is None:  # set from here by follow(), not by the user
            return
        self.touched = time.monotonic()
        self.command("joints", np.array([slider.value for slider in self.sliders], dtype=np.float64))

    def _dragged(self, event) -> None:
        if event.client is None:
            return
        self.dragging = event.phase != "end"
        self.touched = time.monotonic()
        position = np.asarray(self.gizmo.position, dtype=np.float64) - self.station.offset
        if self.planar:
            self.command("pen", position[:2])
        else:
            self.command("pose", spatial.pose_from_xyz_quat(position, self.gizmo.wxyz))

    def _act(self, event, action: str, value: object) -> None:
        if event.client is not None:
            self.touched = time.monotonic()
            self.command(action, value)

    def _place_gizmo(self, pose: Array) -> None:
        self.gizmo.position = pose[:3, 3] + self.station.offset
        if not self.planar:
            self.gizmo.wxyz = spatial.matrix_to_quat(pose)
