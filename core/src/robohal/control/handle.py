"""A motion running in the background: :class:`MotionHandle`, what ``wait=False`` returns.

The same shape as a gripper's :class:`concurrent.futures.Future` (``done()``, ``result()``,
``cancel()``), with ``wait()`` for the :class:`~robohal.motion.MotionResult`. A motion's error
is raised by whichever comes first: its handle's ``wait()``, or the robot's next command.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any, Protocol

from ..motion import MotionResult
from ..state import Array

log = logging.getLogger(__name__)

#: s: how often a waiting caller looks up (so that a Ctrl-C is seen while the arm moves)
WAIT_SLICE = 0.05


class MotionRecord(Protocol):
    """What a backend keeps of one motion it was asked for."""

    done: threading.Event
    result: MotionResult | None
    error: BaseException | None


class MotionOwner(Protocol):
    """The backend side of a handle."""

    def cancel_motion(self, record: Any) -> bool: ...

    def claim_error(self, error: BaseException) -> None: ...


class MotionHandle:
    """A motion started with ``wait=False``: ``wait()`` for its result, ``done()``, ``cancel()``."""

    def __init__(self, owner: MotionOwner, record: MotionRecord) -> None:
        self._owner = owner
        self._record = record
        #: the joint target (rad) of a ``move_joints``, given to the result as ``result.target``
        self.target: Array | None = None

    def done(self) -> bool:
        """Whether the motion is over (completed, stopped, taken over or failed)."""
        return self._record.done.is_set()

    def wait(self, timeout: float | None = None) -> MotionResult:
        """Wait until the motion is over and return its :class:`~robohal.motion.MotionResult`
        (``taken_over=True`` when a newer motion took over from it); raise the error it met
        (then the robot's next command does not raise it again). ``TimeoutError`` if it still
        runs after ``timeout`` seconds. A Ctrl-C meanwhile brakes it to rest, then is raised."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while not self._record.done.wait(WAIT_SLICE if deadline is None
                                             else max(0.0, min(WAIT_SLICE, deadline - time.monotonic()))):
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(f"the motion still runs after {timeout:g} s")
        except KeyboardInterrupt as interrupt:
            with interrupts_held():
                braked = self.cancel()
            if braked:
                interrupt.add_note("robohal: the motion was braked to rest within the limits")
            raise
        error = self._record.error
        if error is not None:
            self._owner.claim_error(error)
            raise error
        result = self._record.result
        assert result is not None
        if self.target is not None and result.target is None:
            result.target = self.target
        return result

    def result(self, timeout: float | None = None) -> MotionResult:
        """As :meth:`wait` (the name a :class:`concurrent.futures.Future` gives it)."""
        return self.wait(timeout)

    def cancel(self) -> bool:
        """Brake the motion to rest within the limits, and return once it is there. True if it
        was running (or waiting to take over) and is now stopped; False if it was over already
        or a newer motion is taking over from it."""
        if self.done():
            return False
        return self._owner.cancel_motion(self._record)

    def __repr__(self) -> str:
        if not self.done():
            return "<MotionHandle running>"
        record = self._record
        return f"<MotionHandle done: {record.error!r}>" if record.error is not None else f"<MotionHandle done: {record.result!r}>"


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """While the arm brakes after a Ctrl-C, a second Ctrl-C is told to wait instead of being
    raised (it would leave the arm moving, the brake half done). Only the main thread gets
    signals; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        previous = signal.signal(signal.SIGINT, _told_to_wait)
    except ValueError:  # not the main interpreter: no signals here either
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _told_to_wait(signum: int, frame: Any) -> None:
    log.warning("robohal: braking the arm to rest after Ctrl-C; it stops within a moment")
