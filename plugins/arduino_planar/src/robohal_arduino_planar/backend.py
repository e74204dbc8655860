"""The ``arduino-planar`` backend: the robohal_planar firmware over a serial port (pyserial).

``arduino-planar:///dev/ttyACM0?baud=115200&model=arduino.planar2&boot=2.0&timeout=0.5``

URI parameters (all optional):

=================  ========  =====================================================================
``baud``           115200    serial speed (the firmware's)
``rate``           50        control rate in Hz: one SET per cycle; 50 Hz matches the 20 ms servo frame
``boot``           2.0       s to wait for the firmware after opening the port (an Uno resets on open
                             and its bootloader runs 1-2 s)
``timeout``        0.5       s to wait for a reply before retrying; silence past retries -> ConnectionLost
``retries``        2         resends of a command whose reply did not come (line noise, lost bytes)
``watchdog_ms``    1000      the firmware's host-silence watchdog (0 = off, else 50..60000)
``watchdog_action`` detach   what it does on a trip: ``detach`` (servos go limp) or ``hold``
``keepalive``      1         ping from a background thread while the host is idle, so an idle but
                             alive host does not trip the watchdog
``poll``           25        read the firmware's counters (GET) every N cycles (0 = never); also how
                             a reset is seen when its banner is lost
``q0``             0,0       joints (rad) reported before the first SET: a servo has no position
                             feedback, and after power-up it is where it was left
``calibration``              a TOML calibration file; ``s1_offset_us``, ``s1_dir``, ... override it
``tool``           none      what the third servo (D6) is: ``gripper`` (``robot.gripper``), ``pen``
                             (a pen lift: ``robot.io["pen_down"]``) or ``none``; the bundled
                             simulators default to ``gripper``. ``tool_*`` calibrate it
=================  ========  =====================================================================

How it talks (see PROTOCOL.md): after opening the port (exclusively) it drains stale input and
sends ``HELLO`` every 200 ms until the versioned reply arrives, then sends the calibration's pulse
limits (``LIMITS``, and the tool's ``TLIMITS``) and the watchdog (``WDOG``). Each cycle sends one ``SET`` (whole microseconds,
converted by :mod:`.calibration`) and waits for its ``ACK``: one command in flight, so the firmware's
64-byte receive buffer can never overflow. The measured joints are the acknowledged pulse widths.

A reset of the board in mid-stream (its ``BOOT`` banner, replies that stop and come back with the
counters at zero) is detected: the backend handshakes again, sends the limits and watchdog again,
re-holds the last *acknowledged* widths, the tool's too (never the newer target that was in flight) and reports a
recoverable :class:`~robohal.HardwareFault` named ``MCU_RESET``; ``recover()`` then holds there.
Lines that are not valid frames are counted (``counters["garbage_lines"]``), never fatal.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from robohal.control.backend import Backend
from robohal.control.pacing import Pacer
from robohal.errors import ConnectionLost, InvalidArgument, ProtocolError, UriError
from robohal.kinematics import Kinematics
from robohal.state import Array, RobotMode, RobotState
from robohal.uri import RobotUri

from . import wire as p
from .calibration import Calibration
from .link import FIRMWARE_NAME, FirmwareLink, _Silent

log = logging.getLogger("robohal.arduino_planar")

DEFAULT_RATE_HZ = 50.0  # one SET per 20 ms servo frame
TOOL_KINDS = ("none", "gripper", "pen")
RESET_FAULT = "MCU_RESET"


class ArduinoPlanarBackend(FirmwareLink, Backend):
    """A two-servo arm driven by the robohal_planar firmware (see the module docstring)."""

    checks = ("position", "velocity")

    @property
    def identity(self) -> str:
        hello = self.firmware
        if hello is None:
            return ""
        return f"{hello.firmware} {hello.version} (protocol {hello.protocol}, {hello.servos} servos) on {self.device}"

    def __init__(self, uri: RobotUri, model: Kinematics) -> None:
        if model.dof != p.ARM_SERVOS:
            raise InvalidArgument(f"{uri}: the planar arm has {p.ARM_SERVOS} servos;"
                                  f" model has {model.dof} joints")
        rate = uri.get_float("rate", DEFAULT_RATE_HZ, minimum=1.0)
        if rate > 200:
            raise UriError(f"{uri}: rate={rate:g} Hz is more than the serial line carries (at most 200)")
        super().__init__(uri, model, 1.0 / rate)
        if uri.wants_simulator:
            # built, never opened: connect() starts the simulator and opens its pty with a backend
            # of its own; this one serves what is read from the URI alone (a dry run's plan)
            self.device = ""
        elif not uri.path or uri.host:
            raise UriError(f"{uri}: give the serial device as the path: arduino-planar:///dev/ttyACM0")
        else:
            self.device = uri.path
        self._init_link(uri)
        self.calibration = Calibration.from_uri(uri)
        self.tool = uri.params.get("tool", "none")
        if self.tool not in TOOL_KINDS:
            raise UriError(f"{uri}: tool={self.tool!r}; the third servo is one of {', '.join(TOOL_KINDS)}")
        gaps = self.calibration.uncovered(model.limits.lower, model.limits.upper)
        if gaps:  # allowed (a servo may travel less than the model), but worth knowing
            warnings.warn(f"{uri}: the servos' pulse limits do not cover the model's joint range; "
                          + "; ".join(gaps), RuntimeWarning, stacklevel=2)
        self.home = self._home(uri, model)
        self._pacer = Pacer(self.period)  # the link keeps no time: the host paces the cycles
        self._t0 = 0.0
        self._pending_widths: tuple[int, int] | None = None
        self._pulses: tuple[int, int] = (0, 0)  # widths on the pins (0 = no pulses)
        self.tool_pulse = 0  # the acknowledged width on the tool's pin (0 = no pulses)
        self.tool_setpoint = 0  # the firmware's last tool width (0 = none since its reset)
        self._measured = self.home.copy()  # joints of the last acknowledged widths
        self._previous: tuple[float, Array] | None = None
        self._reset_fault = False

    @staticmethod
    def _home(uri: RobotUri, model: Kinematics) -> Array:
        q0 = uri.get_vector("q0", model.dof)  # rad
        if q0 is None:
            return model.limits.clip(np.zeros(model.dof))
        model.check_joints(q0, "q0")
        return q0

    def check_setpoints(self, q: Array) -> None:
        """Raise :class:`~robohal.errors.LimitViolation` if any of the joint setpoints ``q``
        ((N, 2) or (2,), rad) needs a pulse outside a servo's limits: lets a planner refuse a
        whole path before it starts (``robohal draw`` and ``jog`` call it)."""
        for row in np.atleast_2d(q):
            self.calibration.to_pulses(row)

    # The firmware ------------------------------------------------------------------------------

    def _check_firmware(self, reply: p.HelloReply) -> None:
        if reply.protocol not in p.PLANAR_PROTOCOLS or reply.firmware != FIRMWARE_NAME or reply.servos != p.SERVO_COUNT:
            raise ProtocolError(f"arduino-planar: {self.device} runs {reply.firmware} {reply.version} (protocol"
                                f" {reply.protocol}, {reply.servos} servos); this backend needs {FIRMWARE_NAME}"
                                f" protocol {p.PLANAR_PROTOCOLS[0]} with {p.SERVO_COUNT} servos or later")

    def _forgot_setpoints(self, state: p.State) -> bool:
        return any(self._pulses) and not any(state.setpoints_us)




    def _configure(self) -> None:
        """Pulse limits from the calibration (the arm's and the tool's) and the watchdog: the
        firmware forgets them on reset."""
        self._send_limits(p.Limits, p.LimitsReply, self.calibration.limits_us, "the arm's")
        tool = self.calibration.tool
        self._send_limits(p.ToolLimits, p.ToolLimitsReply, (tool.min_us, tool.max_us), "the tool's")
        reply = self._transact(lambda seq: p.Watchdog(seq, self.watchdog_ms, self.watchdog_action))
        if not isinstance(reply, p.WatchdogReply):
            raise ProtocolError(f"arduino-planar: WDOG answered with {reply!r}")

    def _send_limits(self, command: Callable[[int, Any], p.Command], answer: type, limits: Any, whose: str) -> None:
        reply = self._transact(lambda seq: command(seq, limits))
        if isinstance(reply, p.ErrorReply):
            raise InvalidArgument(f"arduino-planar: the firmware refused the calibration's pulse limits for {whose}"
                                  f" servos, {limits} ({reply.name}): limits lie within {p.ENVELOPE_US[0]}.."
                                  f"{p.ENVELOPE_US[1]} us and must include the widths the servos hold now")
        if not isinstance(reply, answer) or reply.limits != limits:
            raise ProtocolError(f"arduino-planar: {command.__name__} limits {limits} were answered with {reply!r}")

    def _adopt(self, state: p.State) -> None:
        """Take the firmware's setpoints as the measured position (home when it has none)."""
        self._pulses = tuple(w if a else 0 for w, a in zip(state.setpoints_us, state.attached, strict=True))
        self.tool_pulse = state.tool_setpoint_us if state.tool_attached else 0
        self.tool_setpoint = state.tool_setpoint_us
        if all(state.setpoints_us):
            self._measured = self.calibration.to_joints(state.setpoints_us)
        self._note_counters(state)

    def _rehold(self) -> None:
        if any(self._pulses):
            widths = self.calibration.to_pulses(self._measured)
            reply = self._transact(lambda seq: p.Set(seq, *widths))
            if not isinstance(reply, p.Ack):
                raise ProtocolError(f"arduino-planar: re-holding after a reset was answered with {reply!r}")
            self._pulses = reply.widths_us
        if self.tool_pulse:
            self.tool_pulse = self._tool_transact(self.tool_pulse)

    # The tool servo ------------------------------------------------------------------------

    def tool_command(self, width_us: int) -> int:
        """Put ``width_us`` on the tool's pin (0: no pulses) and return the acknowledged width.
        Waits only for its own reply (the arm's cycle keeps running); a lost link is a
        :class:`~robohal.errors.ConnectionLost`, a width outside the tool's limits an
        :class:`~robohal.errors.InvalidArgument` before anything is sent."""
        tool = self.calibration.tool
        if width_us and not tool.min_us <= width_us <= tool.max_us:
            raise InvalidArgument(f"tool width {width_us} us lies outside its pulse limits {tool.min_us}..{tool.max_us} us")
        with self._wire:
            if self._port is None:
                raise ConnectionLost(f"arduino-planar: {self.device} is not open")
            try:
                return self._tool_transact(width_us)
            except _Silent:
                raise ConnectionLost(f"arduino-planar: {self.device} did not answer the tool command") from None

    def _tool_transact(self, width_us: int) -> int:
        reply = self._transact(lambda seq: p.Tool(seq, width_us))
        if reply is None:  # the board reset meanwhile: the next arm cycle configures it again
            raise ConnectionLost(f"arduino-planar: {self.device} reset during a tool command")
        if isinstance(reply, p.ErrorReply):
            raise ProtocolError(f"arduino-planar: the firmware refused TOOL {width_us}: {reply.name}")
        if not isinstance(reply, p.ToolReply) or reply.width_us != width_us:
            raise ProtocolError(f"arduino-planar: TOOL {width_us} was answered with {reply!r}")
        self.tool_pulse = reply.width_us
        if width_us:
            self.tool_setpoint = width_us
        return reply.width_us

    # Backend hooks ------------------------------------------------------------------------------

    def _send(self, q: Array) -> None:
        widths = self.calibration.to_pulses(q)  # LimitViolation here: nothing was sent
        self._pacer.wait()
        self._pending_widths = widths

    def _receive(self, timeout: float | None) -> RobotState:
        widths, self._pending_widths = self._pending_widths, None
        with self._wire:
            if widths is not None and not self._boot_seen:
                try:
                    reply = self._transact(lambda seq: p.Set(seq, *widths))
                except _Silent:
                    self._after_silence()
                    reply = None
                if isinstance(reply, p.Ack) and tuple(reply.widths_us) != tuple(widths):
                    # the firmware applies a SET exactly or refuses it: any other echo is not to be trusted
                    self._anomaly("ack_mismatches", f"SET {widths} was acknowledged with widths {reply.widths_us}")
                    raise ProtocolError(f"arduino-planar: SET {widths} was acknowledged with widths {reply.widths_us}")
                if isinstance(reply, p.Ack):
                    self._pulses = reply.widths_us
                    self._measured = self.calibration.to_joints(reply.widths_us)
                elif isinstance(reply, p.ErrorReply) and reply.code == p.ErrorCode.OUT_OF_LIMITS:
                    # These widths are within the limits we sent: the board has forgotten them.
                    self._anomaly("limits_forgotten", "the board refused widths inside the limits it was given:"
                                  " it forgot them (a reset)")
                    self._boot_seen = True
                elif isinstance(reply, p.ErrorReply):
                    raise ProtocolError(f"arduino-planar: the firmware refused SET {widths}: {reply.name}")
                elif reply is not None:
                    raise ProtocolError(f"arduino-planar: SET answered with {reply!r}")
            self._end_cycle()
        return self._snapshot()

    def _read_now(self) -> RobotState | None:
        return None  # no position feedback beyond the acknowledged widths: the last state is current

    # State ----------------------------------------------------------------------------------------

    def _snapshot(self) -> RobotState:
        now = time.monotonic() - self._t0
        q = self._measured.copy()
        dq = np.zeros_like(q)
        if self._previous is not None and now > self._previous[0]:
            dq = (q - self._previous[1]) / (now - self._previous[0])
        self._previous = (now, q)
        faults = (RESET_FAULT,) if self._reset_fault else ()
        if faults:
            mode = RobotMode.FAULT
        else:
            mode = RobotMode.MOVING if np.abs(dq).max() > 1e-9 else RobotMode.IDLE
        info: dict[str, Any] = {
            "pulses_us": self._pulses,
            "attached": tuple(bool(w) for w in self._pulses),
            "tool_us": self.tool_pulse,
            "firmware_counters": dict(self.firmware_counters),
            "resets": self.counters["resets"],
            "garbage_lines": self.counters["garbage_lines"],
            "recoverable": True,
        }
        return RobotState(time=now, q=q, dq=dq, mode=mode, faults=faults,
                          q_commanded=self.guard.last, info=info)
