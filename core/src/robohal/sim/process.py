"""Running bundled simulators in their own processes: the one launch protocol.

A simulator program is a module run as ``python -m <module> [options]``:

- **Its first stdout line is the ready line** ``READY <uri>``, the concrete robot URI
  to connect to (``READY franka://127.43.7.9?model=franka.fr3``,
  ``READY arduino-planar:///dev/pts/7``); the program prints it with
  :func:`announce_ready`, and :func:`parse_ready_line` reads it. Later lines are the
  program's own (``STATS {json}``, events).
- **Options come from the URI**: each ``sim_<name>=<value>`` parameter of the
  ``sim`` URI is the option ``--<name-with-dashes> <value>`` (:func:`simulator_options`);
  boolean options take a value too (``--ideal 1``; :func:`boolean` parses it).
- **Its stdin carries control lines** (``STATS``, ``QUIT``, ...; :func:`control_lines`); at
  the end of a pipe the program exits, so it never outlives the launcher that holds the pipe.
  Started with ``/dev/null``, a file, a terminal or no stdin at all, it runs until SIGTERM or
  Ctrl-C.

A plugin's :class:`~robohal.plugins.records.SimulatorSpec` ``start(uri)`` checks the
URI and calls :func:`launch` with its module and fixed arguments; that returns a
:class:`SimulatorProcess`, which always stops the process. ``robohal sim`` runs a
program in the foreground with :func:`run_foreground`.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import random
import selectors
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TextIO, runtime_checkable

from ..errors import RobohalError, UriError
from ..uri import RobotUri, parse_uri

log = logging.getLogger(__name__)

START_TIMEOUT = 20.0  # s: a simulator that has not announced itself by then is broken
READY = "READY"  # the first word of the ready line
SIM_PREFIX = "sim_"  # URI parameters with this prefix are the simulator program's options
STOP_GRACE = 0.2  # s a stopping simulator gets to quit by itself (its stdin ended) before SIGTERM
MAX_CONTROL_LINE = 4096  # bytes: an unfinished control line longer than this is junk (our bound)
# prctl(2): PR_SET_TIMERSLACK, and the slack a simulator asks for (ns; 0 would mean the default again)
_PR_SET_TIMERSLACK = 29
_TIMER_SLACK_NS = 1000


@runtime_checkable
class RunningSimulator(Protocol):
    """A started simulator: ``uri`` is the concrete address to connect to."""

    uri: RobotUri

    def stop(self) -> None: ...


class SimulatorError(RobohalError):
    """A bundled simulator failed to start or died."""


# The program's side --------------------------------------------------------------------------


def announce_ready(uri: RobotUri | str, out: TextIO | None = None) -> None:
    """Print the ready line ``READY <uri>`` (flushed): a simulator program's first stdout line,
    once it serves ``uri``."""
    stream = out if out is not None else sys.stdout
    stream.write(f"{READY} {uri}\n")
    stream.flush()


def wake_on_time() -> None:
    """Let this process's select() and sleeps wake when their timeout ends, not up to 50 us
    after: Linux lets a normal thread's timers run late by its timer slack (prctl(2), 50 us by
    default), and a simulator's answers, due at a microsecond, would leave that much later than
    the protocol's timing says (measured on the simulated servo bus: a six-servo cycle 50 us
    longer than with 1 us of slack). Call it in the simulator's main thread before it serves.
    Linux only; elsewhere, or where prctl is refused, the default stays."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_TIMERSLACK, _TIMER_SLACK_NS, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def boolean(text: str) -> bool:
    """A boolean option's value: 1/0, true/false, yes/no, on/off (``argparse`` ``type=boolean``)."""
    lowered = str(text).strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{text!r} is not a boolean: use 1/0, true/false, yes/no")


class ControlLines:
    """The control lines (``STATS``, ``QUIT``, fault injection) of a simulator program's stdin.

    Register it with the program's selector (it has ``fileno()``); when it is readable,
    :meth:`read` gives the lines that have arrived. ``None`` from :meth:`read` is its end: stop
    watching it, and quit where :attr:`ends_run` says so. The descriptor stays blocking: a
    terminal's is shared with the shell, which must not find it non-blocking afterwards.
    """

    def __init__(self, fd: int, *, ends_run: bool) -> None:
        self.fd = fd
        self.ends_run = ends_run  # its end means the process that started this one is done or gone
        self._terminal = os.isatty(fd)
        self._partial = b""

    def fileno(self) -> int:
        return self.fd

    def read(self) -> list[str] | None:
        """The complete lines that have arrived (one read: it does not block once the descriptor
        is readable), or None at the end."""
        if self._terminal and _in_background(self.fd):
            return None  # a background job that reads its terminal is stopped (SIGTTIN): not ours to read
        try:
            chunk = os.read(self.fd, 4096)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:  # e.g. EIO from a terminal that hung up: no more lines either way
            chunk = b""
        if not chunk:
            return None
        *lines, partial = (self._partial + chunk).split(b"\n")
        self._partial = partial[-MAX_CONTROL_LINE:]
        return [line.decode("utf-8", "replace").rstrip("\r") for line in lines]


def _in_background(fd: int) -> bool:
    """Whether this process is a background job of the terminal ``fd``."""
    try:
        return os.tcgetpgrp(fd) != os.getpgrp()
    except OSError:  # not our controlling terminal: reading it stops nobody
        return False


def control_lines(stdin: Any) -> ControlLines | None:
    """A simulator program's control lines from ``stdin`` (``sys.stdin``), or None where none can come.

    - A pipe or a socket: the process at its other end started this one (robohal's launcher,
      a test, a shell pipeline). Its end means that process is done or gone, and the program
      quits (:attr:`ControlLines.ends_run`): no simulator outlives its launcher.
    - A terminal: the lines typed; Ctrl-D ends the lines, not the program.
    - ``/dev/null``, a file, or no stdin at all (``nohup``, ``&`` in a script, a service):
      None. Such a program runs until SIGTERM or Ctrl-C.
    """
    # The kind of stdin is read from the descriptor itself rather than from a flag the launcher
    # passes: what ends the run is the end of this very descriptor, and the kernel says what it
    # is. Any parent holding a pipe gets the same no-orphan promise without knowing a flag, and
    # no flag can disagree with the descriptor (one inherited by a program whose stdin is a
    # terminal, or one a launcher forgot).
    if stdin is None:  # Python found no stdin at start: whatever holds descriptor 0 now is not one
        return None
    try:
        fd = stdin.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError, AttributeError):  # closed, or not a real stream (a test's StringIO)
        return None
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return ControlLines(fd, ends_run=True)
    if os.isatty(fd):
        return ControlLines(fd, ends_run=False)
    return None


# The launcher's side -------------------------------------------------------------------------


def parse_ready_line(line: str) -> RobotUri:
    """The robot URI a ready line announces; :class:`SimulatorError` naming the line for
    anything that is not ``READY <robot URI>``."""
    word, _, rest = line.strip().partition(" ")
    if word != READY or not rest.strip():
        raise SimulatorError(f"the simulator printed {line!r} where its ready line 'READY <robot URI>' belongs")
    try:
        return parse_uri(rest.strip())
    except UriError as exc:
        raise SimulatorError(f"the simulator's ready line {line!r} names no robot URI: {exc}") from None


def simulator_options(uri: RobotUri) -> list[str]:
    """The program options of a URI's ``sim_<name>=<value>`` parameters, in the URI's order:
    ``sim_stall_after=2&sim_ideal=1`` -> ``--stall-after 2 --ideal 1``."""
    options: list[str] = []
    for key, value in uri.params.items():
        if key.startswith(SIM_PREFIX):
            name = key[len(SIM_PREFIX):]
            if not name:
                raise UriError(f"{uri}: parameter {key!r} names no simulator option")
            options += [f"--{name.replace('_', '-')}", value]
    return options


def launch(program: str, uri: RobotUri, args: Sequence[str] = (), *, leave_out: Iterable[str] = (),
           process: Callable[..., SimulatorProcess] | None = None, **kwargs: Any) -> SimulatorProcess:
    """Start the simulator program ``python -m program ARGS OPTIONS`` for a ``sim`` URI.

    ``args`` are the launcher's fixed arguments (addresses, ports, model); the URI's
    ``sim_*`` parameters follow as options (:func:`simulator_options`). The started
    simulator's ``uri`` is the one it announced, plus the ``sim`` URI's other
    parameters except those in ``leave_out`` (parameters that only pick the
    simulator); where both name a parameter, the announced value is kept.
    ``process`` is the :class:`SimulatorProcess` subclass to build (``kwargs`` go to it).
    """
    skip = set(leave_out)
    params = {key: value for key, value in uri.params.items() if not key.startswith(SIM_PREFIX) and key not in skip}
    argv = python_module(program, *args, *simulator_options(uri))
    return (process or SimulatorProcess)(argv, params=params, **kwargs)


class SimulatorProcess:
    """A simulator program in its own process.

    ``argv`` is the command; its first stdout line must be the ready line, and
    :attr:`uri` is the URI it announces with ``params`` added (the announced ones
    win). The process's remaining stdout is available from :meth:`lines`
    (non-blocking); stderr goes to a log file whose tail is shown if the program fails.
    """

    def __init__(self, argv: Sequence[str], *, params: Mapping[str, str] | None = None,
                 env: dict[str, str] | None = None, timeout: float = START_TIMEOUT, stdin: bool = True) -> None:
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
            try:
                announced = parse_ready_line(first)
            except SimulatorError as exc:
                raise SimulatorError(f"{exc}: {' '.join(self.argv)}\n{self.log_tail()}") from None
            self.uri: RobotUri = announced.with_params(**{**(params or {}), **announced.params})
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
            stop_process(self.process, timeout)
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


def stop_process(process: subprocess.Popen, timeout: float = 5.0, grace: float = STOP_GRACE) -> int | None:
    """Stop a simulator process: close its stdin where it is a pipe (the simulators quit at its
    end) and give it ``grace`` s, then SIGTERM and ``timeout`` s, then SIGKILL and ``timeout`` s.
    Returns its exit code (None if even SIGKILL did not end it in time)."""
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    steps = ((None, grace), (signal.SIGTERM, timeout), (signal.SIGKILL, timeout))
    for signum, wait in steps:
        if process.poll() is not None:
            break
        if signum is not None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signum)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=wait)
    return process.poll()


def run_foreground(argv: Sequence[str], timeout: float = 5.0) -> int:
    """Run a simulator program on this terminal (stdin, stdout and stderr inherited) until it
    exits, or until Ctrl-C (or SIGTERM) stops it with :func:`stop_process`.

    Returns the program's exit code (128 + N when a signal N ended it), 0 when it was stopped."""

    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous_int = signal.getsignal(signal.SIGINT)
    previous_term = signal.signal(signal.SIGTERM, interrupted)
    try:
        child = subprocess.Popen(list(argv))
        try:
            code = child.wait()
        except KeyboardInterrupt:
            # A second Ctrl-C must not cut the stop short: every wait in it is bounded anyway.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            stop_process(child, timeout)
            return 0
    finally:
        for signum, handler in ((signal.SIGINT, previous_int), (signal.SIGTERM, previous_term)):
            if handler is not None:  # None: a handler not set from Python, which cannot be put back
                signal.signal(signum, handler)
    return code if code >= 0 else 128 - code


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
