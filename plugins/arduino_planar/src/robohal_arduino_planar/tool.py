"""The third servo (D6) as the robot's tool: a servo gripper (``tool=gripper``, ``robot.gripper``)
or a pen lift (``tool=pen``, ``robot.io["pen_down"]``).

Both command the servo through the backend's serial link (``TOOL``, acknowledged with the width
on the pin, as ``SET`` is with the arm's) between the arm's own commands: a tool command waits
for its own reply only, so the arm keeps its cycle meanwhile. A hobby servo reports nothing back:
what these know is what the firmware acknowledged, and how long the servo needs to get there
(its speed, :class:`~.calibration.ToolCalibration`).
"""

from __future__ import annotations

import threading
import time

from robohal.control.tools import Gripper, GripperLimits, GripperState, IoPorts, Signal
from robohal.errors import ConnectionLost
from robohal.uri import RobotUri

from .backend import ArduinoPlanarBackend

FRAME_S = 0.020  # the firmware's pulse frame: a new width reaches the servo within one
PEN_SIGNAL = "pen_down"


class ServoGripper(Gripper):
    """A claw on a hobby servo: widths in metres, mapped to pulse widths by the calibration.

    What each command means on a servo with no force or position sensing:

    - ``move(width, speed)``: turns the claw to ``width`` in steps of one pulse frame at ``speed``
      m/s (at most the servo's own speed, ``limits.max_speed``); True once it had the time to get
      there. An object in the way stops the fingers, unseen: the servo pushes on it with its stall
      torque.
    - ``grasp(width, ...)``: as ``move`` to ``width - epsilon_inner`` (so an object of about
      ``width`` is squeezed by the servo's own holding torque). ``force`` cannot be set: a servo
      has no force control, so only 0 N (the default) is accepted. True once the claw had the
      time to close; ``state.is_grasped`` is then True: it says that a grasp was commanded and not
      released since, not that an object is held, which the servo cannot tell.
    - ``homing()``: there is nothing to find: it opens fully (``max_width`` is the calibration's
      ``width``) and waits the time a full turn takes from wherever the claw was.
    - ``stop()``: ends a running move where the claw is (it keeps holding that width).

    ``state.width`` is the width of the pulse the firmware acknowledged last (the claw follows it
    within the servo's travel time); before any command it is the firmware's last width, or
    ``max_width`` when it has none since its reset (home it first: the claw is where it was left).

    Each step is one ``TOOL`` frame on the arm's serial link, waiting for its own reply only; a
    link that stops answering ends the command with :class:`~robohal.errors.ConnectionLost`
    within the backend's reply timeout and retries.
    """

    def __init__(self, backend: ArduinoPlanarBackend) -> None:
        tool = backend.calibration.tool
        super().__init__(GripperLimits(max_speed=tool.max_speed, max_force=0.0, default_speed=tool.max_speed,
                                       default_force=0.0), name="servo gripper")
        self.backend = backend
        self.calibration = tool
        self._grasped = False
        self._stop_asked = threading.Event()
        self._t0 = time.monotonic()

    def _connect(self) -> None:
        self._t0 = time.monotonic()

    def _read(self) -> GripperState:
        backend = self.backend
        if not backend.connected:
            raise ConnectionLost(f"{self.name}: the arm's serial link {backend.device} is not open")
        width_us = backend.tool_pulse or backend.tool_setpoint or self.calibration.open_us
        width = min(max(self.calibration.to_width(width_us), 0.0), self.calibration.width)
        return GripperState(width=width, max_width=self.calibration.width, is_grasped=self._grasped,
                            time=time.monotonic() - self._t0)

    def _homing(self) -> bool:
        self._grasped = False
        tool = self.calibration
        self.backend.tool_command(tool.open_us)
        return self._pause(tool.travel_time(tool.closed_us, tool.open_us) + FRAME_S)

    def _move(self, width: float, speed: float) -> bool:
        self._grasped = False
        return self._turn(width, speed)

    def _grasp(self, width: float, speed: float, force: float, epsilon_inner: float, epsilon_outer: float) -> bool:
        target = max(width - epsilon_inner, 0.0)
        self._grasped = target < self.calibration.width
        done = self._turn(target, speed)
        self._grasped = self._grasped and done
        return done

    def _stop(self) -> bool:
        self._stop_asked.set()
        return True

    def _turn(self, width: float, speed: float) -> bool:
        """One TOOL per pulse frame along a ramp at ``speed`` m/s, then the servo's lag; False
        when stopped meanwhile."""
        self._stop_asked.clear()
        tool = self.calibration
        start = self.state.width
        target_us = tool.to_us(width)
        steps = max(1, round(abs(width - start) / (speed * FRAME_S)))
        began = time.monotonic()
        for k in range(1, steps + 1):
            self.backend.tool_command(tool.to_us(start + (width - start) * k / steps) if k < steps else target_us)
            if self._stop_asked.wait(max(0.0, began + k * FRAME_S - time.monotonic())):
                return False
        # the horn lags the ramp by at most a frame when speed <= max_speed
        return self._pause(2 * FRAME_S)

    def _pause(self, seconds: float) -> bool:
        return not self._stop_asked.wait(seconds)


class PenLift:
    """The pen lift as ``robot.io["pen_down"]``: True puts the pen on the paper (the tool's
    ``closed_us``), False lifts it (``open_us``); a write returns once the servo had the time to
    get there, so a stroke that follows starts with the pen where it should be."""

    def __init__(self, backend: ArduinoPlanarBackend) -> None:
        self.backend = backend

    def read(self, name: str) -> bool:
        return self.backend.tool_pulse == self.backend.calibration.tool.closed_us

    def write(self, name: str, down: bool) -> None:
        tool = self.backend.calibration.tool
        before = self.backend.tool_pulse or self.backend.tool_setpoint
        target = tool.closed_us if down else tool.open_us
        self.backend.tool_command(target)
        # unknown start (no pulses since reset): allow a full turn
        travel = tool.travel_time(before, target) if before else tool.travel_time(tool.closed_us, tool.open_us)
        time.sleep(travel + FRAME_S)


def gripper_for(uri: RobotUri, backend: ArduinoPlanarBackend) -> ServoGripper | None:
    """``ToolSpec`` factory: the servo gripper when the URI says ``tool=gripper``."""
    return ServoGripper(backend) if backend.tool == "gripper" else None


def io_for(uri: RobotUri, backend: ArduinoPlanarBackend) -> IoPorts | None:
    """``ToolSpec`` factory: the pen lift's signal when the URI says ``tool=pen``."""
    if backend.tool != "pen":
        return None
    pen = PenLift(backend)
    return IoPorts({PEN_SIGNAL: Signal(PEN_SIGNAL, "digital", "output")}, read=pen.read, write=pen.write,
                   owner=str(uri))
