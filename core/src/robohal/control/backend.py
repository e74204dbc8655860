"""The :class:`Backend` protocol: one hardware driver, one control loop.

Lifecycle::

    backend = factory(uri, model)     # nothing happens on the wire yet
    backend.connect()                 # link up; holds the measured position
    state = backend.read()            # the latest state
    state = backend.cycle(q)          # one control cycle: q out, the next state in
    backend.run(motion)               # a whole motion, one setpoint per cycle
    backend.stop(); backend.recover()
    backend.close()

Units are SI and radians. Each cycle sends one joint-position setpoint, at the
hardware's own rate (``period``): 1 ms on Franka, 4 ms on EGM, tens of ms for
hobby servos. Every setpoint passes the :class:`~robohal.control.guard.SetpointGuard`
before it reaches a wire. A backend whose robot also takes joint torques says so
(:attr:`Backend.command_interfaces`, :attr:`Backend.torque_limits`) and runs torque
motions through a :class:`~robohal.control.torque_executor.TorqueExecutor`; every other
backend refuses them at the call (:meth:`Backend.check_motion`). After ``connect()`` or ``recover()`` the backend holds
the *measured* position: it never replays a stale setpoint. When a motion fails
(a setpoint refused by the guard, an unreachable pose, Ctrl-C) the backend brakes
the arm to rest within the limits before the error reaches the caller; an error
met by a motion running in the background is re-raised on the caller's next call.

Subclasses implement the wire: :meth:`_open`, :meth:`_close`, :meth:`_send`,
:meth:`_receive` and, where the hardware has them, :meth:`_recover` and
:meth:`_read_now`. Threads that keep the link alive between cycles are started with
:func:`start_link_thread`, which holds the backend only weakly: a backend dropped
without ``close()`` is then closed when it is collected.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import warnings
import weakref
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ConnectionLost, HardwareFault, InvalidArgument, Unsupported
from ..kinematics import Kinematics, TorqueLimits
from ..motion import Motion, MotionResult
from ..motion.motions import JOINT_POSITION, JOINT_TORQUE, interface_of, interfaces_needed
from ..motion.servo import DEFAULT_TIMEOUT as SERVO_TIMEOUT
from ..motion.servo import Servo, ServoTarget
from ..payload import Payload
from ..state import Array, RobotMode, RobotState
from ..uri import RobotUri
from .executor import MotionExecutor
from .guard import SetpointGuard
from .handle import MotionHandle, interrupts_held
from .lifecycle import Lifecycle, LifecycleState

log = logging.getLogger(__name__)

#: the name of the threads that close dropped backends
CLOSER_THREAD = "robohal-close-dropped"


#: s: how often a waiting caller looks up (so that a Ctrl-C is seen while the arm moves)
WAIT_SLICE = 0.05
#: s: how long a Ctrl-C waits for the brake (a bound: the brake stops a joint in well under a second)
BRAKE_WAIT = 15.0


@dataclass(eq=False)
class _Job:
    """One motion asked of a backend, and what became of it (its caller waits on ``done``)."""

    executor: MotionExecutor
    background: bool
    done: threading.Event = field(default_factory=threading.Event)
    result: MotionResult | None = None
    error: BaseException | None = None

    def conclude(self) -> None:
        """Take the executor's result, or its error."""
        try:
            self.result = self.executor.finish()
        except BaseException as error:
            self.error = error
            self.result = self.executor.result()

    def outcome(self) -> MotionResult:
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


class Backend(ABC):
    """Base class of every hardware backend (see the module docstring)."""

    #: seconds per control cycle
    period: float
    #: which setpoint checks the hardware needs (see :mod:`robohal.control.guard`)
    checks: Iterable[str] = ("position", "velocity")
    #: True for robots that send their state and take one setpoint in reply to each
    #: message (EGM): a cycle waits for the message first and answers it at once
    #: with the setpoint already checked, so nothing else sits on the robot's
    #: critical path; the setpoint was computed from the previous message.
    answers_each_message: bool = False
    #: False where cycles are not paced by the wall clock (a simulation that runs as fast as it is
    #: driven): a stream of targets from a user thread has no time there to keep pace with, so
    #: ``robohal draw`` plays its planned setpoints instead
    realtime: bool = True
    #: the bundled simulator this backend talks to (host ``sim``), if any: stopped with the
    #: :class:`~robohal.robot.Robot`, or when the backend is dropped without ``close()``
    simulator: Any = None
    #: True where the backend itself is a simulation (the in-process ``sim://`` robot, a stand-in
    #: for a vendor library); see :attr:`simulated`
    in_process_simulation: bool = False
    #: what the hardware takes commands as (:mod:`robohal.motion.motions`): joint positions on
    #: every robot; a backend whose robot takes joint torques adds ``"joint_torque"`` and declares
    #: :attr:`torque_limits`. A motion needing another is refused at the call (:meth:`check_motion`).
    command_interfaces: frozenset[str] = frozenset({JOINT_POSITION})
    #: the joint torques (Nm) and torque rates (Nm/s) the drives take, where they take torques
    torque_limits: TorqueLimits | None = None

    def __init__(self, uri: RobotUri, model: Kinematics, period: float) -> None:
        self.uri = uri
        self.model = model
        self.period = float(period)
        self.guard = SetpointGuard(model.limits, self.period, self.checks)
        self.counters: Counter[str] = Counter()
        self._life = Lifecycle(uri.scheme)
        self._state: RobotState | None = None
        self._jobs = threading.Lock()  # guards the three below
        self._job: _Job | None = None  # the motion the motion thread runs now
        self._next_job: _Job | None = None  # the one taking over from it at the next cycle
        self._last_job: _Job | None = None  # the newest asked for (wait() returns its result)
        self._loop: threading.Thread | None = None  # the motion thread
        self._executing: threading.Thread | None = None
        self._loss_told = False  # the lost link of this connection has been logged
        self._loss_lock = threading.Lock()

    # Lifecycle ---------------------------------------------------------------------

    @property
    def lifecycle(self) -> LifecycleState:
        """Where the backend is in its lifecycle (:mod:`robohal.control.lifecycle`)."""
        return self._life.state

    @property
    def connected(self) -> bool:
        return self._life.state is not LifecycleState.DISCONNECTED

    @property
    def simulated(self) -> bool:
        """True when no hardware is behind this backend: a simulator robohal started for the
        ``sim`` host, or a simulation in this process. A simulator started by hand and named by
        its address is, on the wire, a robot: robohal cannot tell, and says False."""
        return self.in_process_simulation or self.simulator is not None

    def connect(self) -> RobotState:
        """Open the link and hold the measured position."""
        if self.connected:
            return self.read()
        state = self._open()
        self._loss_told = False
        self._state = state
        self._life.to(LifecycleState.READY)
        self._activate(state)
        log.info("%s: connected%s%s, %g Hz", self.uri, f" to {self.identity}" if self.identity else "",
                 " (simulated)" if self.simulated else "", 1.0 / self.period)
        if state.mode is RobotMode.FAULT:  # commands are refused until recover(), as after any fault
            self._set_fault(self._fault_of(state))
        return state

    def close(self) -> None:
        """Stop any motion and close the link. Safe to call twice."""
        if not self.connected:
            return
        try:
            self._stop_motion(timeout=5.0)
        finally:
            self._life.to(LifecycleState.DISCONNECTED)
            self._close()
            log.info("%s: closed", self.uri)

    def __del__(self) -> None:
        # Dropped while connected (a Robot that went out of scope unclosed, a notebook cell
        # run again): link threads hold a backend only weakly (start_link_thread), so the
        # last reference going ends up here. Close it, and its simulator, like close() would.
        if sys.is_finalizing():  # at exit, the processes and sockets go with the interpreter
            return
        life = getattr(self, "_life", None)
        connected = life is not None and life.state is not LifecycleState.DISCONNECTED
        if not connected and getattr(self, "simulator", None) is None:
            return
        # The collector runs this in whatever thread it interrupts, even another robot's control
        # loop: closing (joins, process waits) takes a thread of its own.
        try:
            threading.Thread(target=self._close_abandoned, name=CLOSER_THREAD, daemon=True).start()
        except RuntimeError:  # no new threads while the interpreter shuts down: the links go with it
            return
        if connected:  # (a closed backend whose Robot was dropped only leaves the simulator to stop)
            log.warning("%s: dropped while connected (no close()); closing it", getattr(self, "uri", "?"))
            warnings.warn(f"robohal: {type(self).__name__} for {getattr(self, 'uri', '?')} was dropped while"
                          " connected (no close()); closing it", ResourceWarning, source=self)

    def _close_abandoned(self) -> None:
        try:
            self.close()
        except Exception:  # nobody is left to tell: closing is best effort here
            pass
        finally:
            if self.simulator is not None:
                self.simulator.stop()

    def __enter__(self) -> Backend:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _activate(self, state: RobotState) -> None:
        """(Re)activation: hold where the robot *is*, not where it was told to go."""
        self.guard.reset(state.q)

    # State and control -----------------------------------------------------------

    def read(self) -> RobotState:
        """The latest state (without waiting for a new cycle where possible). It
        works in a fault too, so the fault can be inspected; commands do not. A
        thread that watches the state leaves a background motion's error for the
        caller's next command."""
        self._life.check_readable()
        state = self._read_now()
        if state is not None:
            self._state = state
        assert self._state is not None
        return self._state

    @property
    def commanded(self) -> Array:
        """The last setpoint sent (the measured position right after activation)."""
        last = self.guard.last
        if last is None:
            raise ConnectionLost(f"{self.uri.scheme}: not connected")
        return last

    def cycle(self, setpoint: ArrayLike | None = None) -> RobotState:
        """One control cycle: send ``setpoint`` (None: hold the last one) and
        return the next state. Raises :class:`LimitViolation` before sending a
        setpoint outside the limits."""
        self._life.check_command("streaming")
        q = self.guard.last if setpoint is None else self.guard.check(setpoint)
        assert q is not None
        if self.model.coupled_limits and setpoint is not None:
            self.model.check_joints(q, "setpoint")
        return self._cycle(q)

    def _cycle(self, q: Array) -> RobotState:
        """Send the checked setpoint ``q`` and return the next state."""
        try:
            if self.answers_each_message:
                state = self._answer_next(q)
                self.guard.commit(q)
                self.counters["commands_sent"] += 1
            else:
                self._send(q)
                self.guard.commit(q)
                self.counters["commands_sent"] += 1
                state = self._receive(timeout=None)
        except ConnectionLost as lost:
            self._link_lost(lost)
            raise
        self.counters["cycles"] += 1
        self._state = state
        if state.mode is RobotMode.FAULT:
            raise self._set_fault(self._fault_of(state))
        return state

    def _set_fault(self, fault: HardwareFault) -> HardwareFault:
        """Record the hardware's fault (commands are refused until recover()); logged when new."""
        self._life.enter_fault(fault, announce=lambda: log.warning("%s: %s", self.uri, fault))
        return fault

    def _link_lost(self, lost: ConnectionLost) -> None:
        """Log a lost link, once per connection (a loss is usually met by several calls)."""
        with self._loss_lock:  # the caller's thread and a link thread may meet the same loss at once
            told, self._loss_told = self._loss_told, True
        if not told:
            log.warning("%s: %s", self.uri, lost)

    def _anomaly(self, counter: str, what: str) -> None:
        """Count an irregularity of the link in ``counters[counter]``; the first of each kind
        is logged as a warning, the rest only counted."""
        self.counters[counter] += 1
        if self.counters[counter] == 1:
            log.warning("%s: %s (the first; counters[%r] counts them)", self.uri, what, counter)

    def _fault_of(self, state: RobotState) -> HardwareFault:
        return HardwareFault(
            f"{self.uri.scheme}: the robot reports {', '.join(state.faults) or 'a fault'}"
            " (recover() clears it if it can)",
            names=state.faults,
            recoverable=bool(state.info.get("recoverable", True)),
        )

    # Motions -----------------------------------------------------------------------------

    def check_motion(self, motion: Motion) -> None:
        """Refuse ``motion`` before anything is sent if this robot cannot run it: it (or a motion
        its reactions hand over to) commands an interface the hardware does not take
        (:class:`~robohal.errors.Unsupported`, listing those it takes), or, for a torque motion,
        asks what the drives cannot give."""
        needed = interfaces_needed(motion)
        missing = needed - self.command_interfaces
        if JOINT_TORQUE in needed and self.torque_limits is None:
            missing |= {JOINT_TORQUE}
        if missing:
            raise Unsupported(
                f"{self.uri.scheme}: {type(getattr(motion, 'motion', motion)).__name__} needs"
                f" {', '.join(sorted(missing)).replace('_', ' ')} commands, and this robot takes"
                f" {', '.join(sorted(self.command_interfaces)).replace('_', ' ')} commands only; nothing was sent")
        if JOINT_TORQUE in needed:
            pending, seen = [motion], set()
            while pending:  # each torque motion, and those its reactions hand over to
                item = pending.pop()
                if item is None or id(item) in seen:
                    continue
                seen.add(id(item))
                check = getattr(item, "check", None)
                if interface_of(item) == JOINT_TORQUE and callable(check):
                    check(self.model, self.torque_limits)
                pending += [reaction.then for reaction in getattr(item, "reactions", ())]

    def run(self, motion: Motion, *, wait: bool = True) -> MotionResult | MotionHandle:
        """Run ``motion`` to its end, one setpoint per cycle, on the backend's motion thread.

        While another motion runs, the new one takes over from it at the next cycle, from
        where the setpoints are (:meth:`MotionExecutor.take_over`): no stop in between where
        the motion can start while moving. With ``wait=False`` this returns a
        :class:`~robohal.control.handle.MotionHandle` at once; an error the motion meets is
        raised by its ``wait()`` or else by the next call. A Ctrl-C while waiting brakes the
        arm to rest, then raises."""
        self.check_motion(motion)
        job = _Job(MotionExecutor(motion, self.guard, self.model, name=str(self.uri)), background=not wait)
        with self._jobs:
            current = self._job
            if current is None:
                self._life.begin_motion()
                self._job = job
                self._loop = threading.Thread(target=self._run_jobs, args=(job,), daemon=True,
                                              name=f"robohal-{self.uri.scheme}-motion")
                self._loop.start()
            else:
                self._life.check_command(moving=True)
                replaced, self._next_job = self._next_job, job
                current.executor.take_over(job.executor)
                if replaced is not None:  # a newer command came before it could start
                    replaced.executor.taken_over = True
                    replaced.conclude()
                    replaced.done.set()
            self._last_job = job
        return self._wait_job(job) if wait else MotionHandle(self, job)

    def steer(self, target: ServoTarget, *, timeout: float = SERVO_TIMEOUT, dynamics: float = 1.0) -> None:
        """A stream's newest target: the running :class:`~robohal.motion.servo.Servo` motion takes
        it at its next cycle; without one, a new one starts (taking over from any other motion).
        Returns at once; safe from any thread. ``timeout`` and ``dynamics`` apply to a new one."""
        target.check(self.model.dof)
        self._life.check_command(moving=True)
        with self._jobs:
            job = self._next_job or self._job
            motion = None if job is None else job.executor.motion
            if isinstance(motion, Servo) and motion.update(target):
                return
        self.run(Servo(target, timeout=timeout, dynamics=dynamics), wait=False)

    def _run_jobs(self, job: _Job) -> None:
        """The motion thread: run ``job``, then each motion that takes over, until none is left."""
        self._executing = threading.current_thread()
        executor = job.executor
        state: RobotState | None = None
        try:
            try:
                state = self.read()
                executor.start(state, self.commanded)
            except BaseException as error:  # planning failed: nothing moved
                executor.fail(error)
            while True:
                q = executor.next(state) if state is not None else None
                if q is None:
                    following = self._end_job(job)
                    if following is None:
                        return
                    job = following
                    if state is None:
                        state = self.read()
                    job.executor.start_after(executor, state)
                    executor = job.executor
                    continue
                try:
                    state = self._cycle(q)
                except (ConnectionLost, HardwareFault) as error:
                    executor.error = error  # the robot is gone or has stopped itself: nothing to brake
                    with self._jobs:
                        dropped, self._next_job = self._next_job, None
                    if dropped is not None:  # it never ran
                        dropped.executor.error = error
                        dropped.conclude()
                        dropped.done.set()
                    self._end_job(job)
                    return
                except BaseException as error:  # a failed send, an interrupted wait for the robot: brake
                    executor.fail(error)
                    continue
                executor.sent(state, q)
        except BaseException as error:  # a bug of ours: never leave a caller waiting
            executor.error = executor.error or error
            self._end_job(job)
            raise

    def _end_job(self, job: _Job) -> _Job | None:
        """``job`` is over: its outcome goes to its caller (in the background, its error to the
        next call), and the motion that takes over from it, if any, is returned. Without one the
        backend is READY again before the caller hears of the end."""
        job.conclude()
        if job.background and job.error is not None:
            self._life.hand_over(job.error)
        with self._jobs:
            following = None
            if self._job is job:
                following, self._next_job = self._next_job, None
                self._job = following
                if following is None:
                    self._executing = None
                    self._life.motion_ended()
        job.done.set()
        return following

    def _wait_job(self, job: _Job) -> MotionResult:
        """Wait for ``job``; a Ctrl-C meanwhile brakes the running motion to rest, then is raised."""
        try:
            while not job.done.wait(WAIT_SLICE):  # in slices: a Ctrl-C is seen while the arm moves
                pass
        except KeyboardInterrupt as interrupt:
            with interrupts_held():  # a second Ctrl-C must not leave the arm half braked
                running = self._job
                if running is not None:
                    running.executor.fail(interrupt)
                    running.done.wait(BRAKE_WAIT)
                at_rest = self._life.wait_while_moving(BRAKE_WAIT)
            interrupt.add_note("robohal: the motion was braked to rest within the limits" if at_rest else
                               f"robohal: the arm was still braking after {BRAKE_WAIT:g} s; robot.wait() returns"
                               " once it is at rest")
            raise
        return job.outcome()

    def cancel_motion(self, job: _Job) -> bool:
        """Stop ``job`` (a :class:`MotionHandle`'s): brake it to rest if it runs, drop it if it
        waits to take over. False when it is over, or another motion takes over from it."""
        with self._jobs:
            if job.done.is_set() or job not in (self._job, self._next_job):
                return False
            if job is self._job and self._next_job is not None:
                return False  # taken over at the next cycle: the newer motion goes on
            # brakes from its next cycle on (one waiting to take over brakes from where it starts:
            # unlinking it could race the motion thread into ending the running one unbraked)
            job.executor.stop()
        if threading.current_thread() is not self._executing:
            job.done.wait(BRAKE_WAIT)
        return True

    def claim_error(self, error: BaseException) -> None:
        """A handle raised ``error``: the next command need not raise it again."""
        self._life.claim(error)

    # The payload ------------------------------------------------------------------------------

    #: what the robot was told it carries (None: nothing said since connect)
    payload: Payload | None = None

    def set_payload(self, payload: Payload) -> None:
        """Tell the robot what it carries (:class:`~robohal.payload.Payload`). Backends whose
        hardware takes a load override this; the rest refuse it."""
        raise Unsupported(f"{self.uri.scheme}: this robot takes no payload (its controller does not model one);"
                          " nothing was sent")

    def wait(self, timeout: float | None = None) -> MotionResult | None:
        """Wait for the background motion (and any that took over from it); re-raise the error it
        met, if any. None if it still runs after ``timeout`` seconds."""
        if not self._life.wait_while_moving(timeout):
            return None
        self._life.check_command()
        job = self._last_job
        return None if job is None else job.result

    def check_setpoints(self, q: ArrayLike) -> None:
        """Raise :class:`~robohal.errors.LimitViolation` if the hardware would refuse any of the
        joint setpoints ``q`` ((N, dof) or (dof,), rad) for limits of its own beyond the model's
        (servo pulse ranges, say), so that a planner can refuse a whole path before anything
        moves (``robohal draw`` and ``jog`` call it). The model's limits are the guard's job:
        by default there is nothing more to check."""

    @property
    def identity(self) -> str:
        """What answered at the other end, as the hardware names itself (firmware and
        version, controller type...) once connected; empty where the protocol does not say."""
        return ""

    @property
    def busy(self) -> bool:
        """Whether a motion runs (in the foreground or the background)."""
        return self._life.state is LifecycleState.MOVING

    def stop(self) -> None:
        """Stop the running motion (decelerating within the limits) and hold. From another
        thread this also stops a motion run in the foreground (``wait=True``), which then
        returns its result with ``stopped=True``."""
        self._stop_motion(timeout=15.0)
        self._stop_hardware()

    def _stop_motion(self, timeout: float) -> None:
        """Brake the running motion to rest, drop the one about to take over, and wait (not from
        the motion thread itself)."""
        with self._jobs:
            job, dropped, self._next_job = self._job, self._next_job, None
            if job is not None:
                job.executor.successor = None
                job.executor.stop()  # the executor brakes from its next cycle on
        if dropped is not None:  # it never ran
            dropped.executor.stopped = True
            dropped.conclude()
            dropped.done.set()
        if threading.current_thread() is not self._executing:
            self._life.wait_while_moving(timeout)

    def recover(self) -> RobotState:
        """Clear a recoverable fault and hold the measured position."""
        self._life.check_readable()
        self._life.forget_pending()
        fault = self._life.fault
        if isinstance(fault, HardwareFault) and not fault.recoverable:
            raise fault
        state = self._recover()
        if fault is not None:
            names = getattr(fault, "names", ())
            log.info("%s: recovered from %s; holding the measured position", self.uri, ", ".join(names) or "a fault")
        if self._life.state is LifecycleState.FAULT:
            self._life.to(LifecycleState.READY)
        self._state = state
        self._activate(state)
        return state

    # The wire (subclasses) ------------------------------------------------------------

    @abstractmethod
    def _open(self) -> RobotState:
        """Open the link and return the first measured state."""

    @abstractmethod
    def _close(self) -> None:
        """Release the link (sockets, ports, processes)."""

    @abstractmethod
    def _send(self, q: Array) -> None:
        """Put one checked setpoint on the wire."""

    @abstractmethod
    def _receive(self, timeout: float | None) -> RobotState:
        """Wait for the next cycle's state. Raise :class:`ConnectionLost` when the
        robot stays silent past the backend's timeout."""

    def _answer_next(self, q: Array) -> RobotState:
        """For robots that take one setpoint per message (``answers_each_message``):
        wait for the next message, answer it with ``q``, return its state. Override to
        answer before building the state, off the robot's critical path."""
        state = self._receive(timeout=None)
        self._send(q)
        return state

    def _read_now(self) -> RobotState | None:
        """The freshest state without waiting a cycle, if the wire allows (else None:
        the last received state is returned)."""
        return None

    def _recover(self) -> RobotState:
        """Clear the hardware's fault; return the measured state."""
        return self._receive(timeout=None)

    def _stop_hardware(self) -> None:
        """Protocol-level stop where the hardware has one."""


def start_link_thread(backend: Backend, step: Callable[[Any], float | None], stop: threading.Event,
                      name: str) -> threading.Thread:
    """Run ``step(backend)`` on a daemon thread until ``stop`` is set, ``step`` returns None
    or the backend is gone, pausing between steps for the seconds it returns.

    The thread holds the backend only during a step, so a backend its owner dropped can
    be collected (and closed, :meth:`Backend.__del__`). ``step`` must be a plain
    function (``type(self)._step``): a bound method would keep the backend alive.
    """
    backend_ref = weakref.ref(backend)

    def loop() -> None:
        pause: float | None = 0.0
        while pause is not None and not stop.wait(pause):
            owner = backend_ref()
            if owner is None:
                return
            pause = step(owner)
            del owner  # may be the last reference: then the backend closes now (on its own thread)

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    return thread


def wait_until(predicate: Any, timeout: float, interval: float = 0.001) -> bool:
    """Poll ``predicate`` until true or ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def require_dof(q: ArrayLike, dof: int, what: str = "joints") -> Array:
    array = np.asarray(q, dtype=np.float64)
    if array.shape != (dof,):
        raise InvalidArgument(f"{what} must have {dof} values, got shape {array.shape}")
    return array
