"""The torque executor: what runs a torque motion (:mod:`robohal.motion.torque`), the way the
:class:`~robohal.control.executor.MotionExecutor` runs a position motion.

Each control cycle its owner (a backend's control loop) reads the state, asks
:meth:`TorqueExecutor.next` for the joint torques to send, with the robot's dynamics at that
state (:class:`~robohal.motion.torque.ModelTerms`), sends them and tells :meth:`TorqueExecutor.sent`.
Every torque passes the :class:`~robohal.control.torque_guard.TorqueGuard`. However the motion
ends (it completes, is stopped, is refused by the guard, fails, or a reaction ends it), the guard's
brake damps the arm to rest before :meth:`TorqueExecutor.next` says it is over; then the owner
ends the torque session and the robot's own hold takes over, and :meth:`TorqueExecutor.finish`
returns the :class:`~robohal.motion.MotionResult` or raises the error met.

A torque motion taking over from another (:meth:`TorqueExecutor.take_over`) starts from the torque
last sent, at the next cycle: its law ramps from there. A motion of another interface cannot go on
in a torque session: a reaction that hands over to one ends this motion at rest and leaves it in
:attr:`TorqueExecutor.handover`, for the owner to start once the session has ended.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from ..kinematics import Kinematics
from ..motion import MotionRecorder, MotionResult
from ..motion.motions import JOINT_TORQUE, interface_of
from ..motion.reactions import ReactionWatch
from ..motion.torque import ModelTerms
from ..state import Array, RobotState
from .torque_guard import TorqueGuard

log = logging.getLogger(__name__)

#: s: the longest the brake may take before the executor gives up on it and leaves the arm to the
#: robot's hold (a bound: the brake rests an arm in well under a second)
MAX_BRAKE_TIME = 5.0


class TorqueExecutor:
    """Runs one torque motion (see the module docstring); ``motion=None`` only brakes."""

    command_interface = JOINT_TORQUE

    def __init__(self, motion: Any, guard: TorqueGuard, model: Kinematics, *, name: str = "", tag: Any = None) -> None:
        self.motion = motion
        self.guard = guard
        self.model = model
        self.period = guard.period
        self.name = name  # who runs it, for the log
        self.tag = tag  # whatever its owner tells its motions apart by
        self.recorder = MotionRecorder(self.period, model.dof)
        self.error: BaseException | None = None
        self.stopped = False
        self.completed = False
        self.taken_over = False
        self.successor: TorqueExecutor | None = None
        #: a motion of another interface a reaction handed over to: the owner starts it once this
        #: executor is over (at rest) and the torque session has ended
        self.handover: Any = None
        self.reaction: str | None = None
        self._stop_requested = False
        self._braking = motion is None
        self._released = False  # braking without the model: the torque back to zero
        self._brake_left = math.ceil(MAX_BRAKE_TIME / self.period)
        self._over = False
        self._watch = ReactionWatch()  # the running motion's reactions

    # The owner's calls ---------------------------------------------------------------------

    def start(self, state: RobotState, terms: ModelTerms) -> None:
        """Start the motion from the measured ``state`` and the torque last sent. An error here is
        raised as it is: nothing has been sent for it."""
        if self.motion is not None:
            self._arm_reactions(state)
            self.motion.start(state, self.guard.last, self.model, self.period, terms=terms, limits=self.guard.limits)

    def start_after(self, previous: TorqueExecutor, state: RobotState, terms: ModelTerms) -> None:
        """Take over from ``previous`` (over now), from the torque it sent last; an error here
        brakes, reported as this motion's."""
        try:
            self.start(state, terms)
        except BaseException as error:
            self.fail(error)

    def next(self, state: RobotState, terms: ModelTerms) -> Array | None:
        """The checked torques (Nm) for this cycle, or None once the motion is over and the arm at
        rest (then the owner ends the session and calls :meth:`finish`)."""
        if self._over:
            return None
        if self.successor is not None and self.error is None:
            self.taken_over = True
            self._over = True
            self._end_motion()
            return None
        if self._stop_requested and not self._braking:
            self.stopped = True
            self._begin_brake()
        if self._watch.reactions and not self._braking:
            self._react(state, terms)
        if not self._braking:
            try:
                tau = self.motion.step(state, terms, self.guard.applied)  # (ramped from what the robot applies)
                if tau is not None:
                    return self.guard.check(tau)
                self.completed = True
                self._begin_brake()
            except BaseException as error:  # a refused torque, a failed law, Ctrl-C: brake, then report
                self.fail(error)
        return self._brake(state, terms)

    def sent(self, state: RobotState, torque: Array) -> bool:
        """``torque`` went out with ``state`` the robot reported for it: record it (not the brake
        after a completed motion, which is not part of it). Returns whether it was recorded."""
        if self.completed and self._braking:
            return False
        reference = getattr(self.motion, "reference", None)
        commanded = reference() if callable(reference) else None
        self.recorder.add(state, commanded, torque)
        return True

    def finish(self) -> MotionResult:
        """The motion's result; raises the error it met (after braking) instead, if any."""
        if self.error is not None:
            raise self.error
        return self.result()

    # Anyone's calls ----------------------------------------------------------------------------

    def take_over(self, successor: TorqueExecutor) -> None:
        """``successor`` (a torque motion) replaces this one from the next cycle (safe from any thread)."""
        self.successor = successor

    def stop(self) -> None:
        """Brake to rest from the next cycle on (safe from any thread: it only sets a flag)."""
        self._stop_requested = True

    def fail(self, error: BaseException) -> None:
        """An error met while running: brake to rest, then :meth:`finish` raises ``error``. An error
        while braking releases the torque instead (the first error stays the one raised)."""
        if self._over:
            return
        if self._braking:
            if error is not self.error:
                self._note(error)
            self._released = True
            return
        self.error = error
        self._begin_brake()

    @property
    def braking(self) -> bool:
        return self._braking and not self._over

    @property
    def over(self) -> bool:
        return self._over

    def result(self) -> MotionResult:
        """What the motion did so far (its torques, and the measured wrench where there is one)."""
        return self.recorder.result(completed=self.completed and self.error is None and not self.stopped,
                                    stopped=self.stopped, taken_over=self.taken_over, reaction=self.reaction)

    # Reactions ---------------------------------------------------------------------------------

    def _arm_reactions(self, state: RobotState) -> None:
        self._watch.start(self.motion, state, self.model)

    def _react(self, state: RobotState, terms: ModelTerms) -> None:
        """The first reaction met ends the motion (braked to rest) or hands over: to a torque
        motion at once, from the torque last sent; to one of another interface after the brake."""
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
            self._begin_brake()
        elif interface_of(reaction.then) == JOINT_TORQUE:
            self._end_motion()
            self.motion = reaction.then
            try:
                self.start(state, terms)
            except BaseException as error:
                self.fail(error)
        else:
            self.handover = reaction.then
            self._begin_brake()

    # Braking -------------------------------------------------------------------------------------

    def _begin_brake(self) -> None:
        self._braking = True
        self._end_motion()

    def _end_motion(self) -> None:
        end = getattr(self.motion, "end", None)  # a stream's targets go to a new motion from now on
        if callable(end):
            end()

    def _brake(self, state: RobotState, terms: ModelTerms) -> Array | None:
        """The next torque of the guard's brake, or None once the arm rests (the brake's last torque
        is then the one the owner ends the session with)."""
        try:
            if self._released:
                tau, resting = self.guard.release(state)
            else:
                try:
                    tau, resting = self.guard.brake(state, terms)
                except Exception as failure:  # no usable model: release the torque instead
                    self._note(failure)
                    self._released = True
                    tau, resting = self.guard.release(state)
            if resting:
                self._end_brake()
                return None
            self._brake_left -= 1
            if self._brake_left < 0:
                raise RuntimeError(f"the arm did not come to rest within {MAX_BRAKE_TIME:g} s of braking;"
                                   " the robot's own hold took over")
            return self.guard.check(tau)
        except BaseException as failure:  # the brake itself failed: over, the robot's hold takes over
            self._note(failure)
            self._over = True
            return None

    def _end_brake(self) -> None:
        self._over = True
        if self.error is not None:
            self.error.add_note("robohal: the torque motion was damped to rest within the torque limits; the robot's"
                                " own hold took over")
            log.warning("%s: torque motion failed (%r); damped to rest", self.name, self.error)

    def _note(self, failure: BaseException) -> None:
        if self.error is None:
            self.error = failure
        elif failure is not self.error:
            self.error.add_note(f"robohal: while braking: {failure!r}")
            log.error("%s: torque motion failed (%r), and then %r while braking", self.name, self.error, failure)

