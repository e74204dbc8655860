"""The motion executor: the one component that runs a :class:`~robohal.motion.Motion`.

Each control cycle its owner asks :meth:`MotionExecutor.next` for the setpoint to send, sends it,
and tells :meth:`MotionExecutor.sent` what came back. The executor steps the motion, passes every
setpoint through the :class:`~robohal.control.guard.SetpointGuard`, records it, and brakes the
arm to rest within the limits (the guard's one brake) when the motion is stopped, refused, fails
or is interrupted (Ctrl-C). When it is over, :meth:`MotionExecutor.finish` returns the
:class:`~robohal.motion.MotionResult` or raises the error met, noting that the arm was braked.

A new motion may take over a running one (:meth:`MotionExecutor.take_over`): at the next cycle
the running motion ends (its result says ``taken_over``) and its successor starts from where the
setpoints are, moving or not: a motion that can start while moving (``start_moving``, see
:class:`~robohal.motion.motions.TakesOver`) goes on without a stop; any other first brakes the
setpoints to rest and starts there.

It has no thread and no wire of its own, and it is plain picklable data: in-process backends run
it on the caller's thread or a motion thread (:class:`~robohal.control.backend.Backend`); the
Franka backend runs it inside its 1 kHz control process.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from ..kinematics import Kinematics
from ..motion import Motion, MotionRecorder, MotionResult
from ..motion.motions import JOINT_POSITION, interface_of
from ..motion.reactions import ReactionWatch
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

    command_interface = JOINT_POSITION

    def __init__(self, motion: Motion | None, guard: SetpointGuard, model: Kinematics, *,
                 finish_at_rest: bool = False, name: str = "", tag: Any = None) -> None:
        self.motion = motion
        self.name = name  # who runs it, for the log (the backend's URI)
        self.tag = tag  # whatever its owner tells its motions apart by
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
        self.taken_over = False
        self.successor: MotionExecutor | None = None  # the executor that takes over from this one
        self._start_when_resting = False  # a successor that starts only from rest: brake first
        self._watch = ReactionWatch()  # the running motion's reactions
        self.reaction: str | None = None  # the condition that ended the motion or handed it over
        #: a motion of another interface (joint torques) a reaction handed over to: a position
        #: session cannot run it, so this one brakes to rest and its owner starts that one after
        self.handover: Motion | None = None
        self._last_from_motion = False  # the last setpoint given was the motion's own (not a brake's)

    # The owner's calls, in order ------------------------------------------------------

    def start(self, state: RobotState, commanded: Array) -> None:
        """Plan the motion from the measured ``state`` and the last setpoint sent. An error here
        is raised as it is: nothing has moved."""
        if self.motion is not None:
            self._arm_reactions(state)
            self.motion.start(state, np.array(commanded, dtype=np.float64), self.model, self.period)

    def next(self, state: RobotState) -> Array | None:
        """The checked setpoint for the coming cycle, or None when the motion is over and the
        setpoints rest (then :meth:`finish`). ``state`` is the newest measured state."""
        if self._over:
            return None
        if self.successor is not None and self.error is None:  # taken over: the successor goes on from here
            self.taken_over = True
            self._over = True
            return None
        if self._stop_requested and not self._braking:
            self.stopped = True
            self._braking = True
            self._start_when_resting = False
        if self._watch.reactions and not self._braking:
            self._react(state)
        if not self._braking:
            try:
                q = self.motion.step(state)  # type: ignore[union-attr]
                if q is not None:
                    q = self.check(q)
                    self._last_from_motion = True
                    return q
            except BaseException as error:  # a refused setpoint, a failed IK, Ctrl-C: brake, then report
                self.fail(error)
            else:
                if self._motion_ended():
                    return None
        self._last_from_motion = False
        return self._brake(state)

    def start_after(self, previous: MotionExecutor, state: RobotState) -> None:
        """Take over from ``previous`` (over now): start from where its setpoints are, without a
        stop where the motion can (``start_moving``), else after braking to rest. An error here
        brakes the setpoints to rest and is reported as this motion's."""
        self._begin(state, previous.motion if previous._last_from_motion else None)

    def _begin(self, state: RobotState, before: Motion | None) -> None:
        """Start :attr:`motion` from where the setpoints are; ``before`` is the motion whose own
        setpoint the last one was (it knows its velocity and acceleration exactly), or None."""
        q = self.guard.last
        assert q is not None
        v, a = self.guard.derivatives()
        exact = getattr(before, "setpoint_state", None)
        if callable(exact):
            exact_q, exact_v, exact_a = exact()
            if np.allclose(exact_q, q, rtol=0.0, atol=1e-9):
                v, a = exact_v, exact_a
        motion = self.motion
        try:
            if motion is None:
                return
            self._arm_reactions(state)
            if callable(getattr(motion, "start_moving", None)):
                motion.start_moving(state, q, v, a, self.model, self.period,  # type: ignore[attr-defined]
                                    history=self.guard.recent())
            elif self.guard.at_rest():
                motion.start(state, q, self.model, self.period)
            else:  # a motion that starts only from rest: brake there first
                self._start_when_resting = True
                self._braking = True
        except BaseException as error:
            self.fail(error)

    def _arm_reactions(self, state: RobotState) -> None:
        """The running motion's reactions, checked against what the backend measures (a reaction
        that could never fire is refused at the start, not ignored)."""
        self._watch.start(self.motion, state, self.model)

    def _react(self, state: RobotState) -> None:
        """Check the reactions; the first met ends the motion (brake to rest) or hands it over."""
        try:
            reaction = self._watch.first_met(state, self.model)
        except BaseException as error:
            self.fail(error)
            return
        if reaction is None:
            return
        self.reaction = str(reaction.condition)
        if reaction.then is None:
            self.stopped = True
            self._braking = True
        elif interface_of(reaction.then) != JOINT_POSITION:  # its owner starts it once this one rests
            self.handover = reaction.then
            self._braking = True
        else:
            before = self.motion if self._last_from_motion else None
            self.motion = reaction.then
            self._begin(state, before)

    def take_over(self, successor: MotionExecutor) -> None:
        """``successor`` replaces this motion from the next cycle on (see the module docstring).
        Safe from any thread: the owner's loop makes the change at its next :meth:`next`."""
        self.successor = successor

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

    def robot_filled(self, state: RobotState) -> bool:
        """The robot filled cycles that no setpoint of ours reached and the guard has its account
        of them: a motion that plans online (a stream's ``go_on_from``) goes on from there,
        planned anew, and this returns True; any other keeps its clock (:meth:`skip`,
        :meth:`recheck`) and this returns False."""
        go_on_from = getattr(self.motion, "go_on_from", None)
        if self._braking or self._over or not callable(go_on_from):
            return False
        try:
            go_on_from(self.guard.recent())
        except BaseException as error:
            self.fail(error)
        return True

    def recheck(self, q: Array) -> Array | None:
        """Check a setpoint prepared ahead again, against a history that changed since (the robot
        filled a cycle). None if it no longer passes: then the executor brakes from here."""
        try:
            return self.check(q, fenced=not self._braking)
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

    def check(self, q: Array, *, fenced: bool = True) -> Array:
        """``q`` through the guard and the model's coupled limits (raises, never sends)."""
        checked = self.guard.check(q, fenced=fenced)
        if self.model.coupled_limits:
            self.model.check_joints(checked, "setpoint")
        return checked

    def result(self) -> MotionResult:
        """What the motion did so far; a motion with figures of its own (a ``summary()`` method,
        as :class:`~robohal.motion.cartesian.CartesianPath` has) adds them to ``info``."""
        result = self.recorder.result(completed=self.completed and self.error is None and not self.stopped,
                                      stopped=self.stopped, taken_over=self.taken_over, reaction=self.reaction)
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

    def _brake(self, state: RobotState) -> Array | None:
        """The next braking setpoint (the guard's brake), the settling ones after it, or None."""
        try:
            q, resting = self.guard.brake()
            if resting:
                if self._start_when_resting:  # a successor that waited for rest starts here
                    self._start_when_resting = False
                    self._braking = False
                    self.motion.start(state, q, self.model, self.period)  # type: ignore[union-attr]
                    return self.next(state)
                if self._settle_left <= 0:
                    self._end_brake()
                    return None
                self._settle_left -= 1
                return q
            self._brake_left -= 1
            if self._brake_left < 0:
                raise RuntimeError(f"the brake did not come to rest within {MAX_BRAKE_TIME:g} s")
            return self.check(q, fenced=False)  # a brake slows the arm where it goes: no fence refuses it
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
