"""The jaw's servo as ``robot.gripper``: widths in metres, forces in newtons.

The SO-101's gripper is one jaw on a servo against a fixed one. Its width is the chord its tip
swings through: ``width = 2 L sin(angle / 2)`` from closed (angle 0), ``L`` the arm file's
``jaw_length``; the angle comes from the calibration (the range's closed end is the published
jaw range's closed limit, :data:`~.models.JAW_RANGE`). The goals go out with the arm's own
exchange (each control cycle, or the backend's poll while no motion runs), so the arm moves
meanwhile. What each command means on a position servo:

- ``move(width, speed)``: the jaw's goal to ``width`` at ``speed`` (the servo's Goal_Velocity);
  True once there, False when it stalled on the way (something is in the way).
- ``grasp(width, speed, force, ...)``: the jaw closes fully with a torque limit of ``force``
  (at most the arm file's ``torque_limit``); on a part it stalls, and the stall protection holds
  it there at ``hold_torque`` (never full torque: no burnt servo). True when it came to rest
  within ``width - epsilon_inner .. width + epsilon_outer``.
- ``homing()``: opens fully; ``max_width`` is the width at the range's open end.
- ``stop()``: the goal where the jaw is.
"""

from __future__ import annotations

import math
import threading
import time

from robohal.control.tools import Gripper, GripperLimits, GripperState
from robohal.errors import ConnectionLost
from robohal.uri import RobotUri

from .backend import FeetechBackend
from .calibration import GRIPPER, RAD_PER_TICK

STALL_TORQUE = 19.5 * 9.81 / 100  # N m: the STS3215's stall torque at 7.4 V (19.5 kg cm)
JAW_SPEED = 3.0  # rad/s the jaw turns at most (the arm's speed)
ARRIVED = 4 * RAD_PER_TICK  # rad: within this of its goal the jaw has arrived
COMMAND_TIMEOUT = 10.0  # s a gripper command may take at most


class JawGripper(Gripper):
    """The SO-101's jaw (see the module docstring)."""

    def __init__(self, backend: FeetechBackend) -> None:
        servo = backend.arm.gripper
        assert servo is not None
        self.backend = backend
        self.servo = servo
        full_force = STALL_TORQUE * servo.torque_limit / servo.jaw_length
        super().__init__(GripperLimits(max_speed=JAW_SPEED * servo.jaw_length, max_force=full_force,
                                       default_speed=0.5 * JAW_SPEED * servo.jaw_length,
                                       default_force=0.5 * full_force), name="SO-101 jaw")
        self._grasped = False
        self._halt = threading.Event()
        self._t0 = time.monotonic()

    # geometry -------------------------------------------------------------------------

    def _calibration(self):
        calibration = self.backend.calibration
        if calibration is None:
            raise ConnectionLost("SO-101 jaw: the arm is not connected")
        return calibration[GRIPPER]

    def angle(self, ticks: float) -> float:
        joint = self._calibration()
        return float(joint.to_radians(ticks)) * self.servo.direction

    def ticks(self, angle: float) -> int:
        joint = self._calibration()
        value = round(joint.to_ticks(self.servo.direction * angle))
        return min(max(value, joint.range_min), joint.range_max)

    def width_of(self, angle: float) -> float:
        return 2.0 * self.servo.jaw_length * math.sin(max(angle, 0.0) / 2.0)

    def angle_of(self, width: float) -> float:
        return 2.0 * math.asin(min(1.0, max(0.0, width / (2.0 * self.servo.jaw_length))))

    def _open_angle(self) -> float:
        joint = self._calibration()
        return max(self.angle(joint.range_min), self.angle(joint.range_max))

    def _closed_angle(self) -> float:
        joint = self._calibration()
        return min(self.angle(joint.range_min), self.angle(joint.range_max))

    # the driver ------------------------------------------------------------------------

    def _connect(self) -> None:
        self._t0 = time.monotonic()

    def _read(self) -> GripperState:
        backend = self.backend
        if not backend.connected or backend.jaw_id is None or backend.jaw_id not in backend.readings:
            raise ConnectionLost("SO-101 jaw: the arm's bus is not connected")
        width = self.width_of(self.angle(backend.readings[backend.jaw_id].position))
        return GripperState(width=width, max_width=self.width_of(self._open_angle()), is_grasped=self._grasped,
                            time=time.monotonic() - self._t0)

    def _homing(self) -> bool:
        self._grasped = False
        return self._go(self._open_angle(), JAW_SPEED, None)

    def _move(self, width: float, speed: float) -> bool:
        self._grasped = False
        return self._go(self.angle_of(width), speed / self.servo.jaw_length, None)

    def _grasp(self, width: float, speed: float, force: float, epsilon_inner: float, epsilon_outer: float) -> bool:
        self._grasped = False
        torque = force / self.limits.max_force * self.servo.torque_limit if self.limits.max_force else 0.0
        arrived = self._go(self._closed_angle(), speed / self.servo.jaw_length, max(torque, 0.05))
        if not arrived and not self.backend.jaw_stalled:
            return False  # stopped, or out of time
        width_now = self.state.width
        self._grasped = width - epsilon_inner <= width_now <= width + epsilon_outer
        return self._grasped

    def _stop(self) -> bool:
        self._halt.set()
        backend = self.backend
        if backend.jaw_id is not None and backend.jaw_id in backend.readings:
            backend.jaw_goal = backend.readings[backend.jaw_id].position
        return True

    def _go(self, angle: float, speed: float, torque: float | None) -> bool:
        """The jaw's goal to ``angle`` at ``speed`` rad/s; True when it arrived, False when it
        stalled or was stopped. Waits on the backend's exchanges (its cycles or its poll)."""
        self._halt.clear()
        backend = self.backend
        target = self.ticks(angle)
        backend.command_jaw(target, max(1, min(velocity_limit(), round(speed / RAD_PER_TICK))), torque)
        deadline = time.monotonic() + COMMAND_TIMEOUT
        still_since = None
        while time.monotonic() < deadline:
            if self._halt.wait(backend.poll or 0.01):
                return False
            if backend.lifecycle.value == "disconnected":
                raise ConnectionLost("SO-101 jaw: the arm was closed")
            if not backend.poll:
                backend.exchange_now()
            found = backend.readings[self.servo.id]
            if backend.jaw_stalled:
                return False
            if abs(found.position - target) * RAD_PER_TICK <= ARRIVED and not found.moving:
                if still_since is None:
                    still_since = time.monotonic()
                elif time.monotonic() - still_since > 0.05:
                    return True
            else:
                still_since = None
        return False


def velocity_limit() -> int:
    """The fastest Goal_Velocity the jaw is given (ticks/s): the arm's speed."""
    return round(JAW_SPEED / RAD_PER_TICK)


def gripper_for(uri: RobotUri, backend: FeetechBackend) -> JawGripper | None:
    """``ToolSpec`` factory: the jaw, where the arm file has a ``[gripper]``."""
    return JawGripper(backend) if backend.arm.gripper is not None else None

