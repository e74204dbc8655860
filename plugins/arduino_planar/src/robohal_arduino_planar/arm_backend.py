"""What every servo-arm backend of this plugin shares: the arm file, radians to pulses, pacing
and the state a servo without feedback can report.

A backend of an arm file (``arduino-firmata://...?arm=mearm``) reads the arm named by ``arm=``
(:func:`robohal.plugins.arm_files.find_arm`: the user's folders, then the bundled ``arms/``), turns
each joint's angle into its servo's pulse through the file's calibration (:mod:`.calibration`,
the one place radians become microseconds), refuses a setpoint outside a servo's pulse limits
before anything is sent, and paces one pulse update per control cycle (50 Hz: the servo frame).
A hobby servo reports nothing: the measured ``q`` is the joints of the last widths put out.
Subclasses move the bytes (:meth:`_write_widths`; :meth:`_prepare` and :meth:`_put` where a write
can be built before the cycle's tick).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from robohal.control.backend import Backend
from robohal.control.pacing import Pacer
from robohal.errors import InvalidArgument, UriError
from robohal.kinematics import Kinematics
from robohal.plugins.arm_files import ArmFile, arm_name_of_model, find_arm
from robohal.state import Array, RobotMode, RobotState
from robohal.uri import RobotUri

from .arms import ARMS
from .calibration import Calibration

DEFAULT_RATE_HZ = 50.0  # one pulse update per 20 ms servo frame
RESET_FAULT = "MCU_RESET"


def arm_of(uri: RobotUri, model: Kinematics) -> ArmFile:
    """The arm file ``arm=`` names, checked against the model it was connected with."""
    name = uri.params.get("arm") or arm_name_of_model(uri.model or "")
    if not name:
        raise UriError(f"{uri}: which arm? add ?arm=NAME (an arm file: robohal arm new NAME writes one;"
                       " bundled: mearm, braccio)")
    arm = find_arm(name, [ARMS])
    if arm.bus is not None:
        raise InvalidArgument(f"{uri}: the arm {name} is of bus servos (ids, not pins): an Arduino drives"
                              " hobby servos by pin")
    if model.dof != len(arm.joints):
        raise InvalidArgument(f"{uri}: the arm {name} has {len(arm.joints)} joints; the model has {model.dof}")
    return arm


class ServoArmBackend(Backend):
    """An arm file's servos on an Arduino (see the module docstring)."""

    checks = ("position", "velocity")

    def __init__(self, uri: RobotUri, model: Kinematics) -> None:
        self.arm = arm_of(uri, model)
        self._pins = tuple(j.pin for j in self.arm.joints)
        rate = uri.get_float("rate", DEFAULT_RATE_HZ, minimum=1.0)
        if rate > 100:
            raise UriError(f"{uri}: rate={rate:g} Hz is more than a servo's 50 Hz frame can use (at most 100)")
        super().__init__(uri, model, 1.0 / rate)
        if uri.wants_simulator:
            self.device = ""  # built, never opened: connect() starts the simulator (a dry run's plan)
        elif not uri.path or uri.host:
            raise UriError(f"{uri}: give the serial device as the path: {uri.scheme}:///dev/ttyACM0?arm=...")
        else:
            self.device = uri.path
        self.boot = uri.get_float("boot", 2.0, minimum=0.0)
        self.timeout = uri.get_float("timeout", 0.5, minimum=0.01)
        self.calibration = Calibration.from_arm(self.arm)
        self.tool = "gripper" if self.arm.gripper is not None else "none"
        q0 = uri.get_vector("q0", model.dof)
        if q0 is None:
            q0 = model.limits.clip(np.zeros(model.dof))
        model.check_joints(q0, "q0")
        self.calibration.to_pulses(q0)  # a home the servos cannot reach is the URI's error
        self.home = np.asarray(q0, dtype=float)
        self._measured = self.home.copy()
        self._pulses: tuple[int, ...] = (0,) * model.dof
        self._pending: Any = None  # what _prepare built, written at the cycle's tick
        self.tool_pulse = 0
        self.tool_setpoint = 0
        self._previous: tuple[float, Array] | None = None
        self._pacer = Pacer(self.period)  # the link keeps no time: the host paces the cycles
        self._t0 = time.monotonic()
        self._reset_fault = False

    @property
    def pins(self) -> tuple[int, ...]:
        """The joints' pins, in the joints' order."""
        return self._pins

    def check_setpoints(self, q: Array) -> None:
        """LimitViolation for any setpoint (N, dof) that needs a pulse outside a servo's limits."""
        for row in np.atleast_2d(q):
            self.calibration.to_pulses(row)

    def pulse_widths(self) -> tuple[int, ...]:
        """The widths (us) on the joints' pins now, or those of the home position before the first."""
        return self._pulses if all(self._pulses) else self.calibration.to_pulses(self.home)

    def hold_pulses(self, widths: tuple[int, ...]) -> None:
        """Put raw widths on the joints' pins, within the servos' range only (``robohal arm
        calibrate`` jogs a servo to its marks with it; no motion may run meanwhile)."""
        low, high = self.arm.servo_range_us
        if len(widths) != len(self.arm.joints) or not all(low <= w <= high for w in widths):
            raise InvalidArgument(f"{len(self.arm.joints)} widths within the servos' {low}..{high} us, got {widths}")
        self._pulses = self._write_widths(tuple(int(w) for w in widths))

    # The board --------------------------------------------------------------------------------

    def _write_widths(self, widths: tuple[int, ...]) -> tuple[int, ...]:
        """Put these widths (us, one per joint) on the pins; return those now on the pins."""
        raise NotImplementedError

    def _prepare(self, widths: tuple[int, ...]) -> Any:
        """What the write of ``widths`` needs, built before the cycle waits for its tick, so that
        at the tick only the write is left (the Firmata backend: its bytes). Default: the widths."""
        return widths

    def _put(self, prepared: Any) -> tuple[int, ...]:
        """Write what :meth:`_prepare` built; return the widths now on the pins."""
        return self._write_widths(prepared)

    def _write_tool(self, width_us: int) -> int:
        raise NotImplementedError

    def tool_command(self, width_us: int) -> int:
        """The gripper's pulse (0: none), as the planar backend's: the width now on its pin."""
        tool = self.calibration.tool
        if width_us and not tool.min_us <= width_us <= tool.max_us:
            raise InvalidArgument(f"gripper width {width_us} us lies outside its pulse limits {tool.min_us}..{tool.max_us} us")
        width = self._write_tool(width_us)
        self.tool_pulse = width
        if width_us:
            self.tool_setpoint = width_us
        return width

    # Backend hooks ------------------------------------------------------------------------------

    def _send(self, q: Array) -> None:
        prepared = self._prepare(self.calibration.to_pulses(q))  # LimitViolation here: nothing was sent
        self._pacer.wait()
        self._pending = prepared

    def _receive(self, timeout: float | None) -> RobotState:
        prepared, self._pending = self._pending, None
        if prepared is not None:
            on_pins = self._put(prepared)
            self._pulses = on_pins
            if all(on_pins):
                self._measured = self.calibration.to_joints(on_pins)
        self._poll()
        return self._snapshot()

    def _poll(self) -> None:
        """What a cycle checks besides the write (subclasses: liveness, resets)."""

    def _read_now(self) -> RobotState | None:
        return None  # no position feedback: the last state is current

    def _snapshot(self) -> RobotState:
        now = time.monotonic() - self._t0
        q = self._measured.copy()
        dq = np.zeros_like(q)
        if self._previous is not None and now > self._previous[0]:
            dq = (q - self._previous[1]) / (now - self._previous[0])
        self._previous = (now, q)
        faults = (RESET_FAULT,) if self._reset_fault else ()
        mode = RobotMode.FAULT if faults else (RobotMode.MOVING if np.abs(dq).max() > 1e-9 else RobotMode.IDLE)
        info: dict[str, Any] = {"pulses_us": self._pulses, "pins": self.pins, "attached": tuple(bool(w) for w in self._pulses),
                                "tool_us": self.tool_pulse, "arm": self.arm.name, "recoverable": True}
        info.update(self._info())
        return RobotState.handed_over(now, q, dq, mode, faults, self.guard.last, info)  # q: only read as _previous

    def _info(self) -> dict[str, Any]:
        return {}
