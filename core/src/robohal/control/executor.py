"""The motion executor: the one component that runs a :class:`~robohal.motion.Motion`.

Each control cycle its owner asks :meth:`MotionExecutor.next` for the setpoint to send, sends it,
and tells :meth:`MotionExecutor.sent` what came back. The executor steps the motion, passes every
setpoint through the :class:`~robohal.control.guard.SetpointGuard`, records it, and brakes the
arm to rest within the limits (the guard's one brake) when the motion is stopped, refused, fails
or is interrupted (Ctrl-C). When it is over, :meth:`MotionExecutor.finish` returns the
:class:`~robohal.motion.MotionResult` or raises the error met, noting that the arm was braked.

It has no thread and no wire of its own, and it is plain picklable data: in-process backends run
it on the caller's thread or a motion thread (:class:`~robohal.control.backend.Backend`); the
Franka backend runs it inside its 1 kHz control process.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from ..kinematics import Kinematics
from ..motion import Motion, MotionRecorder, MotionResult
from ..state import Array, RobotState
from .guard import SetpointGuard

log = logging.getLogger(__name__)

#: s: the longest a brake may take before the executor gives up on it (a bound, never reached
#: within the limits: the guard's brake stops any joint from full speed in well under a second)
MAX_BRAKE_TIME = 10.0
#: cycles the last setpoint is sent again after a brake, so the whole setpoint history (four
#: cycles, down to the jerk) rests before the next motion or stream starts from it
SETTLE_CYCLES = 3


class MotionExecutor:
    """Runs one motion (see the module docstring). ``motion=None`` only brakes to rest: how a
    stream of setpoints is ended while it still moves.

    ``finish_at_rest``: when the motion has given its last setpoint, keep braking (the guard's
    brake) until the setpoints are at rest before :meth:`next` says it is over. For hardware that
    wants a motion's last command at rest (libfranka: the last command "should have zero velocity
    and acceleration"); the brake takes a few cycles of micro-radians after a planned motion,
    which are not part of its result.
    """

    def __init__(self, motion: Motion | None, guard: SetpointGuard, model: Kinematics, *,
                 finish_at_rest: bool = False, name: str = "") -> None:
        self.motion = motion
        self.name = name  # who runs it, for the log (the backend's URI)
        self.guard = guard
        self.model = model
        self.period = guard.period
        self.finish_at_rest = finish_at_rest
        self.recorder = MotionRecorder(self.period, model.dof)
        self.error: BaseException | None = None
        self.stopped = False
        self.completed = False
        self._stop_requested = False
        self._braking = motion is None
        self._brake_left = math.ceil(MAX_BRAKE_TIME / self.period)
        self._settle_left = SETTLE_CYCLES if motion is not None else 0
        self._over = False

    # The owner's calls, in order ------------------------------------------------------

    def start(self, state: RobotState, commanded: Array) -> None:
        """Plan the motion from the measured ``state`` and the last setpoint sent. An error here
        is raised as it is: nothing has moved."""
        if self.motion is not None:
            self.motion.start(state, np.array(commanded, dtype=np.float64), self.model, self.period)

    def next(self, state: RobotState) -> Array | None:
        """The checked setpoint for the coming cycle, or None when the motion is over and the
        setpoints rest (then :meth:`finish`). ``state`` is the newest measured state."""
        if self._over:
            return None
        if self._stop_requested and not self._braking:
            self.stopped = True
            self._braking = True
        if not self._braking:
            try:
                q = self.motion.step(state)  # type: ignore[union-attr]
                if q is not None:
                    return self.check(q)
            except BaseException as error:  # a refused setpoint, a failed IK, Ctrl-C: brake, then report
                self.fail(error)
            else:
                if self._motion_ended():
                    return None
        return self._brake()

    def skip(self, state: RobotState, cycles: int) -> None:
        """The robot's clock moved on by ``cycles`` cycles that no setpoint of ours reached (a
        late control loop; the robot filled them): the motion's setpoints for them are past."""
        for _ in range(cycles):
            if self._braking or self._over:
                return
            try:
                if self.motion.step(state) is None:  # type: ignore[union-attr]
                    self._motion_ended()
            except BaseException as error:
                self.fail(error)

    def recheck(self, q: Array) -> Array | None:
        """Check a setpoint prepared ahead again, against a history that changed since (the robot
        filled a cycle). None if it no longer passes: then the executor brakes from here."""
        try:
            return self.check(q)
        except BaseException as error:
            self.fail(error)
            return None

    def sent(self, state: RobotState, q: Array) -> bool:
        """``q`` went out and ``state`` is what the robot reported for that cycle: record it.
        Braking after a completed motion is not part of the motion and is not recorded; returns
        whether ``q`` was."""
        if self.completed and self._braking:
            return False
        self.recorder.add(state, q)
        return True

    def finish(self) -> MotionResult:
        """The motion's result; raises the error it met (after braking) instead, if any."""
        if self.error is not None:
            raise self.error
        return self.result()

    # Anyone's calls ----------------------------------------------------------------------

    def stop(self) -> None:
        """Brake to rest from the next cycle on (safe from any thread: it only sets a flag)."""
        self._stop_requested = True

    def fail(self, error: BaseException) -> None:
        """An error met while running: brake to rest from the last setpoint sent, then
        :meth:`finish` raises ``error``. An error while braking ends the brake (the first
        error stays the one raised, with a note)."""
        if self._over:
            return
        if self._braking:
            self._braking_failed(error)
            return
        self.error = error
        self._braking = True

    @property
    def braking(self) -> bool:
        return self._braking and not self._over

    @property
    def over(self) -> bool:
        return self._over

    def check(self, q: Array) -> Array:
        """``q`` through the guard and the model's coupled limits (raises, never sends)."""
        checked = self.guard.check(q)
        if self.model.coupled_limits:
            self.model.check_joints(checked, "setpoint")
        return checked

    def result(self) -> MotionResult:
        """What the motion did so far; a motion with figures of its own (a ``summary()`` method,
        as :class:`~robohal.motion.cartesian.CartesianPath` has) adds them to ``info``."""
        result = self.recorder.result(completed=self.completed and self.error is None and not self.stopped,
                                      stopped=self.stopped)
        summary = getattr(self.motion, "summary", None)
        if callable(summary):
            try:
                result.info.update(summary())
            except Exception as exc:  # figures are a courtesy: never let them hide the motion's outcome
                log.debug("%s: the motion's summary() failed: %r", self.name, exc)
        return result

    # Braking --------------------------------------------------------------------------------

    def _motion_ended(self) -> bool:
        """The motion gave its last setpoint. Returns whether the executor is over now (else it
        brakes the setpoints to rest first, ``finish_at_rest``)."""
        self.completed = True
        if not self.finish_at_rest:
            self._over = True
            return True
        self._braking = True
        self._settle_left = 0
        return False

    def _brake(self) -> Array | None:
        """The next braking setpoint (the guard's brake), the settling ones after it, or None."""
        try:
            q, resting = self.guard.brake()
            if resting:
                if self._settle_left <= 0:
                    self._end_brake()
                    return None
                self._settle_left -= 1
                return q
            self._brake_left -= 1
            if self._brake_left < 0:
                raise RuntimeError(f"the brake did not come to rest within {MAX_BRAKE_TIME:g} s")
            return self.check(q)
        except BaseException as error:
            self._braking_failed(error)
            return None

    def _end_brake(self) -> None:
        self._over = True
        if self.error is not None:
            self.error.add_note("robohal: the motion was braked to rest within the limits")
            log.warning("%s: motion failed (%r); braked to rest within the limits", self.name, self.error)

    def _braking_failed(self, failure: BaseException) -> None:
        self._over = True
        if self.error is None:
            self.error = failure
            return
        if failure is not self.error:
            self.error.add_note(f"robohal: braking after this error failed too: {failure!r}")
            log.error("%s: motion failed (%r) and braking failed too (%r)", self.name, self.error, failure)
