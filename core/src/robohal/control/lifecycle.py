"""A backend's lifecycle: its named states, the transitions allowed between them, and the
refusals that follow from them, in one place (as ros2_control's hardware components have).

::

                 connect()                     run()
    DISCONNECTED ---------> READY  <------------------> MOVING
         ^                  |  ^     the motion ends       |
         |        a fault   |  | recover()                 | a fault
         |                  v  |                           v
         +---- close() ---- FAULT <------------------------+
                                           the link is gone for good (from any connected state)
                                           ---> LOST ---- close() ---> DISCONNECTED

- ``DISCONNECTED``: no link, before ``connect()`` and after ``close()`` (which may be followed by
  ``connect()`` again).
- ``READY``: linked and holding the last setpoint; takes a motion or a stream of setpoints.
- ``MOVING``: a motion runs (the executor owns the setpoints); another motion or a stream waits
  until it ends or is stopped.
- ``FAULT``: the robot stopped (a reflex, an emergency stop) or the control loop braked it; every
  command raises the fault until ``recover()``. The state can still be read.
- ``LOST``: the link is gone and cannot come back by itself (the control process died); only
  ``close()`` (and a new ``connect()``) helps. A link that may come back by itself (EGM's UDP
  after a silence) stays where it is and raises :class:`~robohal.errors.ConnectionLost` per call.

An error met in the background (by a motion run with ``wait=False``) is held here and raised
once, by the caller's next command.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from enum import Enum

from ..errors import ConnectionLost, RobohalError


class LifecycleState(str, Enum):
    DISCONNECTED = "disconnected"
    READY = "ready"
    MOVING = "moving"
    FAULT = "fault"
    LOST = "lost"


_D, _R, _M, _F, _L = LifecycleState
#: every transition a backend may make; anything else is a bug in the backend
TRANSITIONS: dict[LifecycleState, frozenset[LifecycleState]] = {
    _D: frozenset({_R, _F}),  # connect() (to FAULT when the robot reports one right away)
    _R: frozenset({_M, _F, _L, _D}),
    _M: frozenset({_R, _F, _L, _D}),  # the motion ended; a fault; the link went; close()
    _F: frozenset({_R, _F, _L, _D}),  # recover(); another fault; the link went; close()
    _L: frozenset({_D}),  # close()
}


class Lifecycle:
    """The lifecycle of one backend (see the module docstring). Thread-safe: a motion's thread,
    a link thread and the caller's thread all move it."""

    def __init__(self, name: str) -> None:
        self.name = name  # for messages: the URI scheme
        self._state = LifecycleState.DISCONNECTED
        self._changed = threading.Condition(threading.RLock())
        self._fault: RobohalError | None = None
        self._lost: ConnectionLost | None = None
        self._pending: BaseException | None = None

    @property
    def state(self) -> LifecycleState:
        return self._state

    @property
    def fault(self) -> RobohalError | None:
        """Why the backend is in FAULT (None in any other state)."""
        return self._fault if self._state is LifecycleState.FAULT else None

    @property
    def lost(self) -> ConnectionLost | None:
        """Why the backend is LOST (None in any other state)."""
        return self._lost if self._state is LifecycleState.LOST else None

    # Transitions ------------------------------------------------------------------------

    def to(self, new: LifecycleState) -> None:
        """Move to ``new``; a transition the table does not allow is a bug and raises."""
        with self._changed:
            if new is not self._state and new not in TRANSITIONS[self._state]:
                raise RobohalError(f"{self.name}: no transition from {self._state.value} to {new.value}")
            self._state = new
            if new is not LifecycleState.FAULT:
                self._fault = None
            if new is LifecycleState.DISCONNECTED:
                self._lost = None
                self._pending = None
            self._changed.notify_all()

    def enter_fault(self, fault: RobohalError, announce: Callable[[], None] | None = None) -> None:
        """The robot (or the control loop) stopped: commands raise ``fault`` until recover().
        ``announce`` runs first when this is news (the state was not FAULT), so that whoever
        waits for the change sees it announced. A lost link stays lost."""
        with self._changed:
            if self._state in (LifecycleState.LOST, LifecycleState.DISCONNECTED):
                return
            if self._state is not LifecycleState.FAULT and announce is not None:
                announce()
            self._fault = fault
            self.to(LifecycleState.FAULT)

    def enter_lost(self, lost: ConnectionLost, announce: Callable[[], None] | None = None) -> None:
        """The link is gone for good; ``announce`` runs first when this is news."""
        with self._changed:
            if self._state in (LifecycleState.LOST, LifecycleState.DISCONNECTED):
                return
            if announce is not None:
                announce()
            self._lost = lost
            self.to(LifecycleState.LOST)

    def begin_motion(self, what: str = "a new motion", *, take_over: bool = False) -> None:
        """MOVING, if a command may start now (:meth:`check_command`, atomically); with
        ``take_over`` also while a motion runs (the new one takes over from it)."""
        with self._changed:
            self.check_command(what, moving=take_over)
            if self._state is not LifecycleState.MOVING:
                self.to(LifecycleState.MOVING)

    def motion_started(self) -> None:
        """A motion runs that the hardware side started itself (a stream's next servo motion in
        Franka's control process): MOVING, if READY."""
        with self._changed:
            if self._state is LifecycleState.READY:
                self.to(LifecycleState.MOVING)

    def motion_ended(self) -> None:
        """The running motion is over: READY again, unless it ended in a fault or a lost link."""
        with self._changed:
            if self._state is LifecycleState.MOVING:
                self.to(LifecycleState.READY)

    def hand_over(self, error: BaseException) -> None:
        """Keep an error met in the background for the caller's next command."""
        with self._changed:
            self._pending = error

    def forget_pending(self) -> None:
        self._pending = None

    def claim(self, error: BaseException) -> None:
        """``error`` was raised to its caller another way (a motion handle): not again."""
        with self._changed:
            if self._pending is error:
                self._pending = None

    def raise_pending(self) -> None:
        """Raise the error a background motion met, if any (once)."""
        if self._pending is None:  # the usual case, on every control cycle: no lock needed to see it
            return
        with self._changed:
            pending, self._pending = self._pending, None
        if pending is not None:
            raise pending

    # Refusals ---------------------------------------------------------------------------

    def check_readable(self) -> None:
        """Raise unless the state can be read (a link is up: READY, MOVING or FAULT)."""
        state = self._state
        if state is LifecycleState.DISCONNECTED:
            raise ConnectionLost(f"{self.name}: not connected (call connect())")
        if state is LifecycleState.LOST:
            assert self._lost is not None
            raise self._lost

    def check_command(self, what: str = "a new command", *, moving: bool = False) -> None:
        """Raise what stands in the way of a command: the error a background motion met (once),
        no link, a lost link, a fault, a running motion (unless the command may take over from
        it: ``moving``). ``what`` names the command for that last refusal ("streaming")."""
        self.raise_pending()
        self.check_readable()
        state = self._state
        if state is LifecycleState.FAULT:
            assert self._fault is not None
            raise self._fault
        if state is LifecycleState.MOVING and not moving:
            raise RobohalError(f"{self.name}: a motion is running; wait() for it or stop() it before {what}")

    def wait_while_moving(self, timeout: float | None) -> bool:
        """Wait until no motion runs; False if one still does after ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: self._state is not LifecycleState.MOVING, timeout)
