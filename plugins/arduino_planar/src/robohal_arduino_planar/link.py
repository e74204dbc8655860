"""The line link to the robohal firmware (PROTOCOL.md), which both of its backends share: the
planar arm's (``arduino-planar``, :mod:`.backend`) and an arm file's (``arduino-arm``, :mod:`.arm_firmware`).

One command in flight: a command is written, its reply (matched by seq) awaited for ``timeout``,
and resent (new seq) up to ``retries`` times; other lines are sorted and counted, never fatal.
The handshake sends ``HELLO`` every 200 ms while the board boots. A board silent after every
retry is waited out once more for a boot (:meth:`FirmwareLink._after_silence`); a board that
reset (its ``BOOT`` banner, counters that went back) sets ``_boot_seen`` for the backend to act on.
A keep-alive thread pings while the host is idle, so an idle but alive host does not trip the
firmware's watchdog.

The lifecycle is the link's too: open (the handshake, the configuration, what the board holds
taken as the position), recover, and a reset's handling (configure again, re-hold the last
acknowledged widths, the recoverable fault ``MCU_RESET``); each backend says what its board is
configured with (:meth:`FirmwareLink._configure`) and how it re-holds (:meth:`FirmwareLink._rehold`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

import serial
from robohal.control.backend import start_link_thread
from robohal.errors import ConnectFailed, ConnectionLost, ProtocolError, UriError
from robohal.state import RobotState
from robohal.uri import RobotUri

from . import wire as p

HELLO_INTERVAL_S = 0.2  # between handshake attempts while the board boots
READ_SLICE_S = 0.01  # pyserial read timeout: how often a waiting read looks at its deadline
GARBAGE_GRACE_S = 0.1  # after a garbled line or an ERR with no seq, how long our own reply may still come
FIRMWARE_NAME = p.FIRMWARE_NAME


class _Silent(Exception):
    """No reply to a command after every retry."""


class FirmwareLink:
    """The serial link to the robohal firmware, mixed into a :class:`~robohal.control.backend.Backend`
    (which provides ``uri``, ``counters``, ``_anomaly``, ``_pacer`` and ``_snapshot``). Subclasses
    say which firmware they take (:meth:`_check_firmware`), how they configure it
    (:meth:`_configure`), what they take from its state at connect (:meth:`_adopt`), when a board
    has forgotten their setpoints (:meth:`_forgot_setpoints`) and how they hold again after a
    reset (:meth:`_rehold`)."""

    def _init_link(self, uri: RobotUri) -> None:
        """The link's URI parameters (``baud``, ``boot``, ``timeout``, ``retries``, ``watchdog_ms``,
        ``watchdog_action``, ``keepalive``, ``poll``) and its state."""
        self.scheme = uri.scheme
        self._log = logging.getLogger(f"robohal.{uri.scheme.replace('-', '_')}")
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
        self._boot_seen = False
        self._uptime_ms = -1
        self._frames_ok = -1
        self._cycles_since_poll = 0

    def _check_firmware(self, reply: p.HelloReply) -> None:
        """ProtocolError unless the board that answered HELLO is one this backend drives."""
        raise NotImplementedError

    def _forgot_setpoints(self, state: p.State) -> bool:
        """Whether the board, answering after a silence, has lost the setpoints it held (a reset)."""
        raise NotImplementedError

    def _configure(self) -> None:
        """Send the board this backend's configuration (it forgets it on reset)."""
        raise NotImplementedError

    def _adopt(self, state: p.State) -> None:
        """Take what the board holds at connect (by default its counters only)."""
        self._note_counters(state)

    def _rehold(self) -> None:
        """After a reset: put the last acknowledged widths back on the pins (never a newer target)."""
        raise NotImplementedError

    # Lifecycle ----------------------------------------------------------------------------------

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
            self._adopt(self._query_state())
            self._reset_fault = False
        except _Silent:
            self._close_port()
            raise ConnectionLost(f"{self.scheme}: {self.device} answered HELLO, then stopped answering") from None
        except BaseException:
            self._close_port()
            raise
        self._t0 = time.monotonic()
        self._pacer.restart(self._t0)
        self._previous = None
        if self.keepalive and self.watchdog_ms:
            self._keepalive_stop.clear()
            self._keepalive_thread = start_link_thread(self, type(self)._keep_alive_step, self._keepalive_stop,
                                                       f"robohal-arduino-keepalive-{self.device}")
        return self._snapshot()

    def _close(self) -> None:
        self._stop_keepalive()
        self._close_port()

    def _recover(self) -> RobotState:
        """Handshake again (reopening the port if the link broke), configure the board and hold
        the last acknowledged widths."""
        with self._wire:
            try:
                if self._port is None:
                    raise ConnectionLost(f"{self.scheme}: {self.device} is not open")
                self._handshake(self.boot + self.timeout)
            except ConnectionLost:
                self._close_port()
                self._open_port()
                self._handshake(self.boot + self.timeout)
            reset, self._boot_seen = self._boot_seen, False
            try:
                state = self._query_state()
                self._note_counters(state)
                if reset or self._boot_seen or self._forgot_setpoints(state):
                    self._handle_reset()
                else:
                    self._configure()
            except _Silent:
                raise ConnectionLost(f"{self.scheme}: {self.device} stopped answering") from None
            self._reset_fault = False
        self._previous = None
        return self._snapshot()

    def _handle_reset(self) -> None:
        """The board reset: configure it again and re-hold the last acknowledged widths."""
        self.counters["resets"] += 1
        self._log.warning("%s: the board reset (a brownout of the servo supply?): configuring it again and"
                          " re-holding the last acknowledged position", self.uri)
        self._boot_seen = False
        self._uptime_ms = self._frames_ok = -1
        self._configure()
        self._note_counters(self._query_state())
        self._boot_seen = False
        self._rehold()
        self._reset_fault = True

    def _end_cycle(self) -> None:
        """A cycle's end (with ``_wire`` held): every ``poll`` cycles the board's counters are
        read (how a reset whose banner was lost is seen); a board that reset is configured again
        and re-holds."""
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
                raise ConnectionLost(f"{self.scheme}: {self.device} stopped answering after a reset") from None

    def _stop_keepalive(self) -> None:
        self._keepalive_stop.set()
        if self._keepalive_thread is not None:
            self._keepalive_thread.join(timeout=2.0)
            self._keepalive_thread = None

    def _open_port(self) -> None:
        try:
            # Opening asserts DTR, which resets a real Uno: the handshake waits out its bootloader.
            self._port = serial.Serial(self.device, self.baud, timeout=READ_SLICE_S,
                                       write_timeout=max(self.timeout, 0.1), exclusive=True)
            self._port.reset_input_buffer()  # whatever arrived before we opened is stale
        except (serial.SerialException, OSError) as exc:
            self._port = None
            raise ConnectionLost(f"{self.scheme}: cannot open {self.device}: {exc} (is the board plugged in, is this its"
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
                    f"{self.scheme}: no reply from the firmware on {self.device} within {budget:.1f} s"
                    f" (is {FIRMWARE_NAME} flashed, the baud rate {self.baud} right, boot={self.boot:g} s long enough?)")
        self._check_firmware(reply)
        self.firmware = reply
        return reply

    def _next_seq(self) -> int:
        self._seq = (self._seq + 1) % p.SEQ_MODULO
        return self._seq

    def _write(self, data: bytes) -> None:
        if self._port is None:
            raise ConnectionLost(f"{self.scheme}: {self.device} is not open")
        try:
            self._port.write(data)
        except (serial.SerialException, OSError) as exc:  # unplugged, or the write timed out
            raise ConnectionLost(f"{self.scheme}: writing to {self.device} failed: {exc}") from None
        self._last_io = time.monotonic()
        self.counters["bytes_sent"] += len(data)

    def _next_line(self, deadline: float) -> bytes | None:
        while not self._lines:
            if time.monotonic() >= deadline:
                return None
            if self._port is None:
                raise ConnectionLost(f"{self.scheme}: {self.device} is not open")
            try:
                data = self._port.read(max(1, self._port.in_waiting))
            except (serial.SerialException, OSError) as exc:
                raise ConnectionLost(f"{self.scheme}: reading {self.device} failed: {exc}") from None
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
            raise ProtocolError(f"{self.scheme}: GET answered with {reply!r}")
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

    def _after_silence(self) -> None:
        """No reply after the retries: the board may be rebooting. Wait out a boot; if it
        answers, find out whether it reset; else the link is lost."""
        try:
            self._handshake(self.boot + self.timeout)
            state = self._query_state()
        except _Silent:
            raise ConnectionLost(f"{self.scheme}: {self.device} stopped answering") from None
        except ConnectionLost as exc:
            raise ConnectionLost(f"{self.scheme}: {self.device} stopped answering: {exc}") from None
        self._note_counters(state)
        if self._forgot_setpoints(state):
            self._boot_seen = True  # it forgot our setpoints: it reset

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
