"""Running bundled simulators in their own processes.

A plugin's :class:`~robohal.plugins.records.SimulatorSpec` ``start(uri)`` returns a
:class:`RunningSimulator`. :class:`SimulatorProcess` is the usual way to build
one: it starts ``python -m <module> ...``, waits for the first line the program
prints (its address, a pty path, ...), and always stops the process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..errors import RobohalError
from ..uri import RobotUri

log = logging.getLogger(__name__)

START_TIMEOUT = 20.0  # s: a simulator that has not announced itself by then is broken


@runtime_checkable
class RunningSimulator(Protocol):
    """A started simulator: ``uri`` is the concrete address to connect to."""

    uri: RobotUri

    def stop(self) -> None: ...


class SimulatorError(RobohalError):
    """A bundled simulator failed to start or died."""


class SimulatorProcess:
    """A simulator program in its own process.

    ``argv`` is the command; the program must print one line on stdout when it
    is ready (``ready_line`` receives it and returns the concrete URI). The
    process's remaining stdout is available from :meth:`lines` (non-blocking);
    stderr goes to a log file whose tail is shown if the program fails.
    """

    def __init__(self, argv: Sequence[str], ready_line, *, env: dict[str, str] | None = None,
                 timeout: float = START_TIMEOUT, stdin: bool = True) -> None:
        self.argv = list(argv)
        self._log = tempfile.NamedTemporaryFile(prefix="robohal-sim-", suffix=".log", delete=False)
        self.log_path = self._log.name
        self.process = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env={**os.environ, **(env or {})},
            start_new_session=True,  # a Ctrl-C in the terminal reaches us, not the simulator
        )
        self._buffer = b""
        self._failure_told = False
        self._selector = selectors.DefaultSelector()
        assert self.process.stdout is not None
        os.set_blocking(self.process.stdout.fileno(), False)
        self._selector.register(self.process.stdout, selectors.EVENT_READ)
        try:
            first = self.readline(timeout)
            if first is None:
                code = self.process.poll()
                what = f"exited with code {code}" if code is not None else f"did not start within {timeout:.0f} s"
                raise SimulatorError(f"simulator {what}: {' '.join(self.argv)}\n{self.log_tail()}")
            self.first_line = first
            self.uri: RobotUri = ready_line(first)
            log.info("simulator %d started: %s", self.process.pid, self.uri)
        except BaseException:
            self._failure_told = True  # by the error, with the log's tail
            self.stop()
            self._discard_log()
            raise

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def _fill(self, timeout: float) -> bool:
        if not self._selector.select(timeout):
            return False
        assert self.process.stdout is not None
        try:
            chunk = os.read(self.process.stdout.fileno(), 65536)
        except BlockingIOError:
            return False
        if not chunk:
            return False
        self._buffer += chunk
        return True

    def readline(self, timeout: float) -> str | None:
        """The next stdout line, or None after ``timeout`` seconds (or at exit)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if not self._fill(min(left, 0.2)) and not self.alive() and not self._fill(0):
                return None  # exited and drained
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode("utf-8", "replace").rstrip("\r")

    def lines(self) -> list[str]:
        """Every complete stdout line available now."""
        while self._fill(0):
            pass
        *complete, self._buffer = self._buffer.split(b"\n")
        return [line.decode("utf-8", "replace").rstrip("\r") for line in complete]

    def send(self, line: str) -> None:
        """Write a control line to the simulator's stdin."""
        if self.process.stdin is None or not self.alive():
            raise SimulatorError("simulator is not running")
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def stats(self, timeout: float = 5.0) -> dict:
        """The simulator's counters, for simulators that answer the control line ``STATS``
        with ``STATS {json}`` (the bundled ones do). Lines printed before the answer are dropped."""
        self.lines()
        self.send("STATS")
        deadline = time.monotonic() + timeout
        while (line := self.readline(max(deadline - time.monotonic(), 0.0))) is not None:
            if line.startswith("STATS "):
                return json.loads(line[len("STATS "):])
        raise SimulatorError(f"the simulator did not answer STATS within {timeout:g} s")

    def log_tail(self, lines: int = 20) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as handle:
                return "".join(handle.readlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 5.0) -> int | None:
        """Stop the process (stdin closed, then SIGTERM, then SIGKILL); idempotent.

        The stderr log is removed, unless the program had failed by itself (then it stays
        at :attr:`log_path` to read)."""
        failed_by_itself = self.process.poll() not in (None, 0)
        if self.process.poll() is None:
            log.info("simulator %d stopping", self.process.pid)
            try:
                if self.process.stdin is not None:
                    self.process.stdin.close()
            except OSError:
                pass
            try:
                self.process.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(timeout=timeout)
        for stream in (self.process.stdout, self.process.stdin):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self._selector.close()
        self._log.close()
        if not failed_by_itself or self._log_is_empty():
            self._discard_log()
        elif not self._failure_told:
            self._failure_told = True
            log.warning("simulator %d had exited by itself (code %s); its log: %s", self.process.pid,
                        self.process.returncode, self.log_path)
        return self.process.returncode

    def _log_is_empty(self) -> bool:
        try:
            return os.path.getsize(self.log_path) == 0
        except OSError:
            return True

    def _discard_log(self) -> None:
        with contextlib.suppress(OSError):  # (already gone: stop() is idempotent)
            os.unlink(self.log_path)

    def __enter__(self) -> SimulatorProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def python_module(module: str, *args: str) -> list[str]:
    """argv that runs ``python -m module args`` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def free_port(kind: int = socket.SOCK_DGRAM, host: str = "127.0.0.1") -> int:
    """A port the OS says is free on ``host`` now (loopback only)."""
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def free_loopback_host(tcp_port: int, attempts: int = 50) -> str:
    """A random 127.x.y.z address whose ``tcp_port`` is free, for simulators with
    a fixed port (Franka's 1337) running side by side."""
    rng = random.Random()
    for _ in range(attempts):
        host = f"127.{rng.randint(1, 254)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, tcp_port))
            except OSError:
                continue
            return host
    raise SimulatorError(f"no free loopback address for port {tcp_port}")
