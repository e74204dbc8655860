"""A cell locked as a labgrid place, for as long as a HIL run moves it.

labgrid's coordinator keeps the lab's places and who holds each; ``labgrid-client acquire``
takes one or says who holds it. We drive labgrid through its command-line client (its stable
interface; its Python client is internal and asynchronous) and add what it lacks for CI: a
second run on a held place waits, up to a timeout, saying who holds it.

Every run gets a labgrid user name of its own (``USER-hil-PID``), so two runs by one person on
one machine are two holders, and the message names the run that holds the cell.
"""

from __future__ import annotations

import getpass
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import RobohalError

#: s between two attempts on a held place (each is a short labgrid-client process)
POLL_INTERVAL = 1.0
#: s a single labgrid-client call may take before the coordinator is deemed unreachable
CLIENT_TIMEOUT = 60.0
HOLDER = re.compile(r"already acquired by (\S+?)\.? ")


class LockError(RobohalError):
    """A cell's place could not be acquired (held past the timeout, unknown, no coordinator)."""


def labgrid_client() -> str:
    """The ``labgrid-client`` next to this Python, else on PATH."""
    beside = Path(sys.executable).parent / "labgrid-client"
    found = str(beside) if beside.exists() else shutil.which("labgrid-client")
    if not found:
        raise LockError("labgrid is not installed (pip install 'robohal[lab]'): no labgrid-client to lock cells with")
    return found


def run_identity() -> str:
    """This run's labgrid user name."""
    return f"{getpass.getuser()}-hil-{os.getpid()}"


class PlaceLock:
    """``with PlaceLock(coordinator, place, timeout=...)``: holds the place inside the block and
    releases it on leaving, also on an exception or Ctrl-C."""

    def __init__(self, coordinator: str, place: str, *, timeout: float, say: Callable[[str], None] | None = None,
                 user: str | None = None) -> None:
        self.coordinator = coordinator
        self.place = place
        self.timeout = timeout
        self.say = say or (lambda text: print(text, file=sys.stderr, flush=True))
        self.user = user or run_identity()
        self.holder_seen: str | None = None  # who held the place while this run waited, if anyone
        self.held = False

    @property
    def holder_name(self) -> str:
        return f"{socket.gethostname()}/{self.user}"

    def _client(self, *args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "LG_USERNAME": self.user}
        try:
            return subprocess.run([labgrid_client(), "-x", self.coordinator, "-p", self.place, *args], env=env,
                                  capture_output=True, text=True, timeout=CLIENT_TIMEOUT, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise LockError(f"labgrid coordinator {self.coordinator} did not answer within {CLIENT_TIMEOUT:g} s") \
                from None

    def acquire(self, stop: threading.Event | None = None) -> None:
        """Take the place, waiting while another run holds it (up to the timeout, or until
        ``stop`` is set: then :class:`LockError` too)."""
        stop = stop or threading.Event()
        deadline = time.monotonic() + self.timeout
        while True:
            done = self._client("acquire")
            if done.returncode == 0:
                self.held = True
                return
            said = f"{done.stderr}\n{done.stdout}"
            holder = HOLDER.search(said + " ")
            if holder is None:
                last = [line for line in said.splitlines() if line.strip()]
                raise LockError(f"labgrid: cannot acquire place {self.place!r} at {self.coordinator}: "
                                f"{last[-1].strip() if last else 'labgrid-client failed'}")
            name = holder.group(1)
            if time.monotonic() >= deadline:
                raise LockError(f"place {self.place!r} is held by {name}; gave up after waiting {self.timeout:g} s")
            if name != self.holder_seen:
                self.say(f"robohal hil: place {self.place!r} is held by {name}; waiting (up to {self.timeout:g} s)")
                self.holder_seen = name
            if stop.wait(min(POLL_INTERVAL, max(0.0, deadline - time.monotonic()))):
                raise LockError(f"stopped while waiting for place {self.place!r} (held by {name})")

    def release(self) -> None:
        if not self.held:
            return
        done = self._client("release")
        self.held = False
        if done.returncode != 0:
            self.say(f"robohal hil: could not release place {self.place!r}: {(done.stderr or done.stdout).strip()}"
                     f" (labgrid-client -x {self.coordinator} -p {self.place} release --kick frees it)")

    def __enter__(self) -> PlaceLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
