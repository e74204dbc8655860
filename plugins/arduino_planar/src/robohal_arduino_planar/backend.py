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
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np
import serial
from robohal.control.backend import Backend, start_link_thread
from robohal.errors import ConnectFailed, ConnectionLost, InvalidArgument, ProtocolError, UriError
from robohal.kinematics import Kinematics
from robohal.state import Array, RobotMode, RobotState
from robohal.uri import RobotUri

from . import wire as p
from .calibration import Calibration

log = logging.getLogger("robohal.arduino_planar")

DEFAULT_RATE_HZ = 50.0  # one SET per 20 ms servo frame
HELLO_INTERVAL_S = 0.2  # between handshake attempts while the board boots
READ_SLICE_S = 0.01  # pyserial read timeout: how often a waiting read looks at its deadline
GARBAGE_GRACE_S = 0.1  # after a garbled line or an ERR with no seq, how long our own reply may still come
FIRMWARE_NAME = p.FIRMWARE_NAME
TOOL_KINDS = ("none", "gripper", "pen")
RESET_FAULT = "MCU_RESET"


class _Silent(Exception):
    """No reply to a command after every retry."""


class ArduinoPlanarBackend(Backend):
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
        self.baud = uri.get_int("baud", p.BAUDRATE, minimum=300)
        self.boot = uri.get_float("boot", 2.0, minimum=0.0)
        self.timeout = uri.get_float("timeout", 0.5, minimum=0.01)
        self.retries = uri.get_int("retries", 2, minimum=0)
        self.watchdog_ms = uri.get_int("watchdog_ms", p.DEFAULT_WATCHDOG_MS, minimum=0)
        low, high = p.WATCHDOG_RANGE_MS
        if self.watchdog_ms and not low <= self.watchdog_ms <= high:
            raise UriError(f"{uri}: watchdog_ms must be 0 (off) or {low}..{high}")
        self.watchdog_action = uri.params.get("watchdog_action", p.DEFAULT_WATCHDOG_ACTION)
        if self.watchdog_action not in p.WATCHDOG_ACTIONS:
            raise UriError(f"{uri}: watchdog_action must be one of {', '.join(p.WATCHDOG_ACTIONS)}")
        self.keepalive = uri.get_bool("keepalive", True)
        self.poll_every = uri.get_int("poll", 25, minimum=0)
        self.calibration = Calibration.from_uri(uri)
        self.tool = uri.params.get("tool", "none")
        if self.tool not in TOOL_KINDS:
            raise UriError(f"{uri}: tool={self.tool!r}; the third servo is one of {', '.join(TOOL_KINDS)}")
        gaps = self.calibration.uncovered(model.limits.lower, model.limits.upper)
        if gaps:  # allowed (a servo may travel less than the model), but worth knowing
            warnings.warn(f"{uri}: the servos' pulse limits do not cover the model's joint range; "
                          + "; ".join(gaps), RuntimeWarning, stacklevel=2)
        self.home = self._home(uri, model)
        self.firmware: p.HelloReply | None = None
        self.firmware_counters: dict[str, int] = {}
        self._port: serial.Serial | None = None
        self._splitter = p.LineSplitter()
        self._lines: deque[bytes] = deque()
        self._seq = 0
        self._wire = threading.Lock()  # held from a command's write to its reply: one in flight
        self._keepalive_stop = threading.Event()
        self._keepalive_thread: threading.Thread | None = None
        self._last_io = 0.0
        self._next_tick = 0.0
        self._t0 = 0.0
        self._pending_widths: tuple[int, int] | None = None
        self._pulses: tuple[int, int] = (0, 0)  # widths on the pins (0 = no pulses)
        self.tool_pulse = 0  # the acknowledged width on the tool's pin (0 = no pulses)
        self.tool_setpoint = 0  # the firmware's last tool width (0 = none since its reset)
        self._measured = self.home.copy()  # joints of the last acknowledged widths
        self._previous: tuple[float, Array] | None = None
        self._boot_seen = False
        self._reset_fault = False
        self._uptime_ms = -1
        self._frames_ok = -1
        self._cycles_since_poll = 0

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

    # Lifecycle -----------------------------------------------------------------------------

    def _open(self) -> RobotState:
        if not self.device:
            raise ConnectFailed(f"{self.uri}: the host 'sim' names the bundled simulator, which robohal.connect starts;"
                                " this backend has no serial device to open")
        try:
            self._open_port()
        except ConnectionLost as missing:  # no port: never reached (a reconnect loop must not spin on it)
            raise ConnectFailed(str(missing), address=self.device) from None
        try:
            try:
                self._handshake(self.boot + self.timeout)
            except ConnectionLost as silent:  # no firmware hello: never reached either
                raise ConnectFailed(str(silent), address=self.device) from None
            self._boot_seen = False  # the banner of the reset-on-open is no news
            self._configure()
            state = self._query_state()
            self._reset_fault = False
            self._adopt(state)
        except _Silent:
            self._close_port()
            raise ConnectionLost(f"arduino-planar: {self.device} answered HELLO, then stopped answering") from None
        except BaseException:
            self._close_port()
            raise
        self._t0 = time.monotonic()
        self._next_tick = self._t0
        self._previous = None
        if self.keepalive and self.watchdog_ms:
            self._keepalive_stop.clear()
            self._keepalive_thread = start_link_thread(self, type(self)._keep_alive_step, self._keepalive_stop,
                                                       f"robohal-arduino-keepalive-{self.device}")
        return self._snapshot()

    def _close(self) -> None:
        self._keepalive_stop.set()
        if self._keepalive_thread is not None:
            self._keepalive_thread.join(timeout=2.0)
            self._keepalive_thread = None
        self._close_port()

    def _open_port(self) -> None:
        try:
            # Opening asserts DTR, which resets a real Uno: the handshake waits out its bootloader.
            self._port = serial.Serial(self.device, self.baud, timeout=READ_SLICE_S,
                                       write_timeout=max(self.timeout, 0.1), exclusive=True)
            self._port.reset_input_buffer()  # whatever arrived before we opened is stale
        except (serial.SerialException, OSError) as exc:
            self._port = None
            raise ConnectionLost(f"arduino-planar: cannot open {self.device}: {exc} (is the board plugged in, is this its"
                                 " port (ls /dev/ttyACM* /dev/ttyUSB*), may you use it (the dialout group), and is no"
                                 " other program holding it?)") from None
        self._splitter = p.LineSplitter()
        self._lines.clear()

    def _close_port(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            try:
                port.close()
            except (serial.SerialException, OSError):
                pass

    def _handshake(self, budget: float) -> p.HelloReply:
        """HELLO every 200 ms until the firmware answers (it may be booting), then check who it is."""
        deadline = time.monotonic() + budget
        self._write(b"\n")  # ends any half line the firmware holds
        while True:
            seq = self._next_seq()
            self._write(p.Hello(seq).encode())
            wait = min(HELLO_INTERVAL_S, max(deadline - time.monotonic(), 0.0))
            reply = self._await(seq, wait)
            if isinstance(reply, p.HelloReply):
                break
            if time.monotonic() >= deadline:
                raise ConnectionLost(
                    f"arduino-planar: no reply from the firmware on {self.device} within {budget:.1f} s"
                    f" (is {FIRMWARE_NAME} flashed, the baud rate {self.baud} right, boot={self.boot:g} s long enough?)")
        if reply.protocol != p.PROTOCOL_VERSION or reply.firmware != FIRMWARE_NAME or reply.servos != p.SERVO_COUNT:
            raise ProtocolError(f"arduino-planar: {self.device} runs {reply.firmware} {reply.version} (protocol"
                                f" {reply.protocol}, {reply.servos} servos); this backend needs {FIRMWARE_NAME}"
                                f" protocol {p.PROTOCOL_VERSION} with {p.SERVO_COUNT} servos")
        self.firmware = reply
        return reply

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

    # The wire: lines ---------------------------------------------------------------------------

    def _next_seq(self) -> int:
        self._seq = (self._seq + 1) % p.SEQ_MODULO
        return self._seq

    def _write(self, data: bytes) -> None:
        if self._port is None:
            raise ConnectionLost(f"arduino-planar: {self.device} is not open")
        try:
            self._port.write(data)
        except (serial.SerialException, OSError) as exc:  # unplugged, or the write timed out
            raise ConnectionLost(f"arduino-planar: writing to {self.device} failed: {exc}") from None
        self._last_io = time.monotonic()
        self.counters["bytes_sent"] += len(data)

    def _next_line(self, deadline: float) -> bytes | None:
        while not self._lines:
            if time.monotonic() >= deadline:
                return None
            if self._port is None:
                raise ConnectionLost(f"arduino-planar: {self.device} is not open")
            try:
                data = self._port.read(max(1, self._port.in_waiting))
            except (serial.SerialException, OSError) as exc:
                raise ConnectionLost(f"arduino-planar: reading {self.device} failed: {exc}") from None
            if data:
                self.counters["bytes_received"] += len(data)
                self._lines.extend(self._splitter.feed(data))
        return self._lines.popleft()

    def _await(self, seq: int, timeout: float) -> p.Reply | None:
        """The reply carrying ``seq`` (None after ``timeout``); other lines are sorted and counted."""
        deadline = time.monotonic() + timeout
        while True:
            line = self._next_line(deadline)
            if line is None:
                return None
            try:
                reply = p.decode_reply(line)
            except p.FrameError:
                # line noise, a half line from before a reset
                self._anomaly("garbage_lines", f"ignored a line that is not a frame: {line[:40]!r}")
                # maybe our reply, garbled: wait a little for it, not the full timeout (the servo
                # holds its last width meanwhile), then resend
                deadline = min(deadline, time.monotonic() + GARBAGE_GRACE_S)
                continue
            if isinstance(reply, p.Boot):
                # The board reset: whatever was in flight is lost, stop waiting for it.
                self._boot_seen = True
                self.counters["boot_banners"] += 1
                return None
            elif isinstance(reply, p.Event):
                self._anomaly("watchdog_events", f"the firmware reports {reply!r}")
            elif reply.seq == seq:
                return reply
            elif isinstance(reply, p.ErrorReply) and reply.seq is None:
                # The firmware refused a corrupted frame: maybe ours, maybe noise. Ours may
                # still be answered; if not, the caller resends.
                self._anomaly("firmware_rejects", f"the firmware refused a corrupted frame ({reply!r})")
                deadline = min(deadline, time.monotonic() + GARBAGE_GRACE_S)
            else:
                self._anomaly("stale_replies", f"ignored a late reply to an earlier command ({reply!r})")

    def _transact(self, build: Callable[[int], p.Command]) -> p.Reply | None:
        """Send a command and return its reply, resending (new seq) when none comes; None when
        the board's boot banner shows it reset meanwhile."""
        for attempt in range(self.retries + 1):
            if attempt:
                self._anomaly("resends", "no valid reply to a command: resending it")
                self._write(b"\n")
            seq = self._next_seq()
            self._write(build(seq).encode())
            reply = self._await(seq, self.timeout)
            if reply is not None:
                return reply
            if self._boot_seen:
                return None  # the board reset: the caller re-holds rather than resending
        raise _Silent

    def _query_state(self) -> p.State:
        reply = self._transact(p.Get)
        if not isinstance(reply, p.State):
            raise ProtocolError(f"arduino-planar: GET answered with {reply!r}")
        return reply

    def _note_counters(self, state: p.State) -> None:
        """Keep the firmware's counters; a drop in uptime or frame count means it reset."""
        if 0 <= state.uptime_ms < self._uptime_ms or 0 <= state.frames_ok < self._frames_ok:
            self._boot_seen = True
        self._uptime_ms, self._frames_ok = state.uptime_ms, state.frames_ok
        self.firmware_counters = {
            "frames_ok": state.frames_ok, "bad_checksum": state.bad_checksum, "overflow": state.overflow,
            "garbage": state.garbage, "rejected": state.rejected, "watchdog_trips": state.watchdog_trips,
            "uptime_ms": state.uptime_ms,
        }

    # Resets and silence ------------------------------------------------------------------------

    def _after_silence(self) -> None:
        """No reply after the retries: the board may be rebooting. Wait out a boot; if it
        answers, find out whether it reset; else the link is lost."""
        try:
            self._handshake(self.boot + self.timeout)
            state = self._query_state()
        except _Silent:
            raise ConnectionLost(f"arduino-planar: {self.device} stopped answering") from None
        except ConnectionLost as exc:
            raise ConnectionLost(f"arduino-planar: {self.device} stopped answering: {exc}") from None
        attached_before = any(self._pulses)
        self._note_counters(state)
        if attached_before and not any(state.setpoints_us):
            self._boot_seen = True  # it forgot our setpoints: it reset

    def _handle_reset(self) -> None:
        """The board reset: configure it again and re-hold the last acknowledged widths."""
        self.counters["resets"] += 1
        log.warning("%s: the board reset (a brownout of the servo supply?): configuring it again and"
                    " re-holding the last acknowledged position", self.uri)
        self._boot_seen = False
        self._uptime_ms = self._frames_ok = -1
        self._configure()
        state = self._query_state()
        self._note_counters(state)
        self._boot_seen = False
        if any(self._pulses):
            widths = self.calibration.to_pulses(self._measured)
            reply = self._transact(lambda seq: p.Set(seq, *widths))
            if not isinstance(reply, p.Ack):
                raise ProtocolError(f"arduino-planar: re-holding after a reset was answered with {reply!r}")
            self._pulses = reply.widths_us
        if self.tool_pulse:
            self.tool_pulse = self._tool_transact(self.tool_pulse)
        self._reset_fault = True

    def _keep_alive_step(self) -> float:
        """PING while the host is idle (not cycling), at a quarter of the watchdog timeout
        (one step of the keep-alive thread; returns the pause before the next)."""
        interval = self.watchdog_ms / 4000.0
        if time.monotonic() - self._last_io < interval or not self._wire.acquire(timeout=0):
            return interval / 2
        try:
            if self._port is not None:
                self._transact(p.Ping)
                self.counters["keepalive_pings"] += 1
        except (_Silent, ConnectionLost, ProtocolError):
            self.counters["keepalive_failures"] += 1  # the next cycle meets the problem itself
        finally:
            self._wire.release()
        return interval / 2

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
        now = time.monotonic()
        if self._next_tick > now:
            time.sleep(self._next_tick - now)
        elif now - self._next_tick > self.period:  # late: do not burst to catch up
            self._next_tick = now
        self._next_tick += self.period
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
            self._cycles_since_poll += 1
            if self.poll_every and self._cycles_since_poll >= self.poll_every and not self._boot_seen:
                self._cycles_since_poll = 0
                try:
                    polled = self._transact(p.Get)
                except _Silent:
                    self._after_silence()
                    polled = None
                if isinstance(polled, p.State):
                    self._note_counters(polled)
            if self._boot_seen:
                try:
                    self._handle_reset()
                except _Silent:
                    raise ConnectionLost(f"arduino-planar: {self.device} stopped answering after a reset") from None
        return self._snapshot()

    def _recover(self) -> RobotState:
        """Handshake again (reopening the port if the link broke), configure the firmware and
        hold the last acknowledged widths."""
        with self._wire:
            try:
                if self._port is None:
                    raise ConnectionLost(f"arduino-planar: {self.device} is not open")
                self._handshake(self.boot + self.timeout)
            except ConnectionLost:
                self._close_port()
                self._open_port()
                self._handshake(self.boot + self.timeout)
            reset, self._boot_seen = self._boot_seen, False
            try:
                self._configure()
                state = self._query_state()
                self._note_counters(state)
                if reset or self._boot_seen or (any(self._pulses) and not any(state.setpoints_us)):
                    self._handle_reset()
            except _Silent:
                raise ConnectionLost(f"arduino-planar: {self.device} stopped answering") from None
            self._reset_fault = False
        self._previous = None
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
