"""The process around a simulated Arduino board: its serial port (a pty a host opens as it opens
the board's USB port), the reset that opening causes, the control lines on stdin, and the loop
that serves all of them. What the board does is a subclass's: the emulated robohal firmware
(:mod:`.emulator`) and StandardFirmata (:mod:`.firmata_board`).

The reset: opening an Uno's port raises DTR, which pulses the MCU's reset; the bootloader hears
nothing until the sketch starts (research notes; PROTOCOL.md, Link).

stdout carries ``RESET <sim_us> <open|stdin>`` each time the sketch starts again.
"""

from __future__ import annotations

import ctypes
import math
import os
import select
import struct
import sys
import termios
import time

from robohal.sim.process import ControlLines
from robohal.sim.serial_pty import open_serial_pty

# Our choice, not a board's rule: how long one select() may sleep when nothing is due (bounds the
# reaction to stdin and to a host's open).
IDLE_WAIT_S = 0.1
# Our choice, as the simavr harness's out_buf: output a host holds the port open for but never
# reads is dropped beyond this many bytes.
MAX_UNREAD_OUT = 65536

# Linux <sys/inotify.h>: IN_OPEN, IN_CLOSE_WRITE, IN_CLOSE_NOWRITE.
_IN_OPEN, _IN_CLOSE_WRITE, _IN_CLOSE_NOWRITE = 0x20, 0x08, 0x10


class OpenWatch:
    """inotify on the pty slave: counts host opens, so a quick close+reopen is never missed."""

    def __init__(self, path: str) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or libc.inotify_add_watch(
                self.fd, path.encode(), _IN_OPEN | _IN_CLOSE_WRITE | _IN_CLOSE_NOWRITE) < 0:
            raise OSError(ctypes.get_errno(), "inotify on the pty failed")
        self.opens = 0

    def read(self) -> int:
        """Consumes events; returns how many times the open count went from 0 to 1."""
        first_opens = 0
        try:
            data = os.read(self.fd, 4096)
        except BlockingIOError:
            return 0
        pos = 0
        while pos + 16 <= len(data):
            _wd, mask, _cookie, length = struct.unpack_from("iIII", data, pos)
            if mask & _IN_OPEN:
                if self.opens == 0:
                    first_opens += 1
                self.opens += 1
            if mask & (_IN_CLOSE_WRITE | _IN_CLOSE_NOWRITE) and self.opens > 0:
                self.opens -= 1
            pos += 16 + length
        return first_opens


class BoardProcess:
    """A board behind a pty, held in reset for ``boot_ms`` after each open (and each ``RESET``
    control line). Subclasses say what happens at the reset (:meth:`_held`) and at the start
    (:meth:`_started`), what the board does with the host's bytes (:meth:`_heard`) and up to
    a time (:meth:`_step`, its bytes for the host into :attr:`out`), when it next needs the loop
    (:meth:`_due`), and which control lines it takes beyond ``RESET`` and ``QUIT``
    (:meth:`_control`)."""

    name = "board"  # in the messages on stderr

    def __init__(self, baud: int, boot_ms: int) -> None:
        self.boot_ms = boot_ms
        port = open_serial_pty(baud)
        self.master, self.spare, self.slave_path = port.master, port.slave, port.path
        self.watch = OpenWatch(self.slave_path)    # before the path is announced
        self.t0 = time.monotonic()
        self.boot_deadline: float | None = None    # while held in reset: when the sketch starts
        self.boot_reason = "open"
        self.out = bytearray()                     # bytes ready for the pty
        self.stop = False

    def close(self) -> None:
        """Close the pty and the watch on it (the path is gone for hosts)."""
        os.close(self.watch.fd)
        os.close(self.master)
        os.close(self.spare)

    def sim_us(self, t: float | None = None) -> int:
        return int(((time.monotonic() if t is None else t) - self.t0) * 1e6)

    # ------------------------------------------------------------------ reset

    def hold(self, reason: str) -> None:
        """The MCU in reset (``reason``: ``open`` or ``stdin``): what it had not sent yet is lost
        (and what it hears while held: :meth:`_heard` drops it). What it sent before stays in the
        host's queue (a USB bridge is not reset with the MCU), unless the host's open is the reset:
        nobody had the port open to receive it then. (Flushing that queue under a reading host made
        its read find nothing after select() said there was something.)"""
        self._held(time.monotonic())
        self.out.clear()
        if reason == "open":
            termios.tcflush(self.spare, termios.TCIFLUSH)
        self.boot_deadline = time.monotonic() + self.boot_ms / 1000
        self.boot_reason = reason

    def release(self) -> None:
        """The sketch starts (the boot hold is over)."""
        now = time.monotonic()
        self.boot_deadline = None
        print(f"RESET {self.sim_us(now)} {self.boot_reason}", flush=True)
        self._started(now)

    def control(self, line: str) -> None:
        """One control line: ``QUIT``, ``RESET``, or one the board takes (:meth:`_control`)."""
        word, _, arg = line.strip().partition(" ")
        if word == "QUIT":
            self.stop = True
        elif word == "RESET":
            self.hold("stdin")
        elif word:
            try:
                known = self._control(word, arg)
            except ValueError:
                print(f"{self.name}: bad control line: {line.strip()}", file=sys.stderr)
                return
            if not known:
                print(f"{self.name}: unknown control line: {line.strip()}", file=sys.stderr)

    # ------------------------------------------------------------------ the board's part

    def _held(self, now: float) -> None:
        raise NotImplementedError

    def _started(self, now: float) -> None:
        raise NotImplementedError

    def _heard(self, data: bytes, now: float) -> None:
        """The host's bytes, read at ``now`` (a held MCU, its bootloader, hears nothing)."""
        raise NotImplementedError

    def _step(self, now: float) -> None:
        raise NotImplementedError

    def _due(self, now: float) -> float:
        """Seconds until the board next needs the loop (inf: nothing is due)."""
        return math.inf

    def _control(self, word: str, arg: str) -> bool:
        """Take a control line of the board's own; False: it knows no such line (ValueError: a
        bad argument)."""
        return False

    # ------------------------------------------------------------------ the loop

    def run(self, control: ControlLines | None = None) -> None:
        """Serve the pty until QUIT, the end of a launcher's pipe (``control``: the control lines)
        or ``stop`` (the caller has announced :attr:`slave_path`)."""
        watched = [self.watch.fd, self.master] if control is None else [control, self.watch.fd, self.master]
        while not self.stop:
            now = time.monotonic()
            timeout = IDLE_WAIT_S
            if self.boot_deadline is not None:
                timeout = min(timeout, self.boot_deadline - now)
            timeout = min(timeout, self._due(now))
            try:
                readable, _, _ = select.select(watched, [self.master] if self.out else [], [], max(0.0, timeout))
            except InterruptedError:
                continue
            if control in readable:
                lines = control.read()
                if lines is None:
                    if control.ends_run:
                        break                  # the launcher's pipe ended: our owner is gone
                    watched.remove(control)
                for line in lines or ():
                    self.control(line)
            if self.watch.fd in readable and self.watch.read():
                self.hold("open")
            if self.boot_deadline is not None and time.monotonic() >= self.boot_deadline:
                self.release()
            if self.master in readable:
                try:
                    data = os.read(self.master, 4096)
                except OSError:
                    data = b""
                self._heard(data, time.monotonic())
            self._step(time.monotonic())
            if self.out:
                try:
                    n = os.write(self.master, self.out)
                    del self.out[:n]
                except BlockingIOError:
                    if self.watch.opens == 0 or len(self.out) > MAX_UNREAD_OUT:
                        self.out.clear()       # nobody listening: the bytes fall off the wire
        sys.stdout.flush()
