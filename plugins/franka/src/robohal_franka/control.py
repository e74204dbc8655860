"""The Franka control process: it owns the pylibfranka ``Robot`` (or the stubs)
and runs the 1 kHz readOnce/writeOnce loop, away from the user's threads.

pylibfranka holds the GIL while it blocks, so a 1 kHz loop through it in the
user's process would starve the user's threads (and be starved by them). This
process publishes every state to shared memory, takes streamed setpoints from
the shared mailbox, runs whole motions sent through the pipe (stepping them
here, at 1 kHz), and passes every setpoint through its own
:class:`~robohal.control.guard.SetpointGuard` before writeOnce. When the parent's
stream misses cycles it brakes smoothly (jerk-limited) instead of holding
still, and reports the starvation.

A torque motion (:mod:`robohal.motion.torque`) runs in a torque session
(``start_torque_control``): each cycle the
:class:`~robohal.control.torque_executor.TorqueExecutor` is given the state and the
arm's dynamics there from pylibfranka's ``Model`` (:mod:`.model_terms`), and every
torque passes the :class:`~robohal.control.torque_guard.TorqueGuard` before writeOnce.
A motion of the other interface taking over, or handed over to by a reaction, waits
until the running one rests and its session has ended, then starts a session of its own.

Every session (a stream or a motion) starts where the robot says it holds: its
desired position ``q_d``, which a real arm holds still while its measured ``q``
lags and jitters around it (libfranka's examples and franky start there too).
The parent asks for a stream with ``stream`` and is told that start, so both
sides check the first setpoint against the same history.

Messages on the pipe, parent -> here: ``(kind, request_id, payload)`` with kind
``connect``, ``run``, ``stream``, ``stop``, ``recover``, ``collision``, ``close``. Here ->
parent: ``("reply", request_id, ok, value)`` and ``("event", kind, payload)``
(``fault``, ``error``, ``lost``, ``motion_done``).
"""

from __future__ import annotations

import gc
import importlib
import mmap
import os
import pickle
import re
import select
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
from robohal.control.executor import MotionExecutor
from robohal.control.guard import SetpointGuard
from robohal.control.torque_executor import TorqueExecutor
from robohal.control.torque_guard import TorqueGuard
from robohal.errors import ConnectFailed, ConnectionLost, HardwareFault, LimitViolation, ProtocolError, RobohalError
from robohal.kinematics import Kinematics, TorqueLimits
from robohal.motion.motions import JOINT_POSITION, JOINT_TORQUE, interface_of
from robohal.motion.servo import Servo, ServoTarget
from robohal.state import RobotMode, RobotState

from .model_terms import RobotModelTerms
from .shared import SESSION_MOTION, SESSION_NONE, SESSION_STREAM, SESSION_TORQUE, Doorbell, Layout, SharedBlock
from .wire import ERROR_NAMES, TCP_PORT

PERIOD = 0.001
# s after a state: how long a streamed setpoint may take to arrive. Our choice: the robot drops a
# command that comes after its cycle (it fills the cycle itself), so this leaves 0.6 ms of the 1 ms
# for the state's way here, our own step and the command's way back.
MAILBOX_WAIT = 0.0004
MAILBOX_POLL = 0.00005
# rad: how far the reported q_d (float32 on the wire) may sit from a prediction and still be it,
# for a robot that does not round as numpy does (see newest_dropped): float32 resolves 2.4e-7 rad
# at the FR3's largest joint angles (our choice: twice that).
DROP_TOLERANCE = 5e-7
CHECKS = ("position", "velocity", "acceleration", "jerk")
MAX_FAILURES = 10  # loop iterations in a row that raise before the link counts as lost
STEP_WINDOW = 20000  # motion steps kept for the timing figures (20 s at 1 kHz)

# libfranka's RobotMode -> robohal's
MODES = {0: RobotMode.STOPPED, 1: RobotMode.IDLE, 2: RobotMode.MOVING, 3: RobotMode.MOVING,
         4: RobotMode.FAULT, 5: RobotMode.STOPPED, 6: RobotMode.FAULT}


class RealtimeUnavailable(RobohalError):
    """libfranka was asked to enforce real-time scheduling the kernel cannot give."""


class StreamStarved(RobohalError):
    """The parent's setpoint stream missed cycles while the robot moved; the
    control process braked it to rest. ``recover()`` resumes."""


@dataclass(frozen=True)
class ControlConfig:
    host: str
    impl: str  # "pylibfranka" or "stubs"
    realtime: str  # "enforce" or "ignore"
    model: Kinematics
    model_name: str
    collision: tuple[tuple[float, ...], ...]
    stub_max_missed: int = 20
    stub_ideal: bool = False  # the stand-in's arm tracks perfectly (sim_ideal=1: unit tests only)
    stub_seed: int | None = None  # its tracking noise's seed (sim_seed=N)
    stub_contact: tuple[float, float] | None = None  # a plane the flange meets (sim_contact=HEIGHT,STIFFNESS)
    stub_hold: str = "command"  # the q_d a finished motion leaves (sim_hold=command|measured)
    torque_limits: TorqueLimits | None = None  # what the drives take in a torque session


# Errors across the pipe: exceptions with keyword attributes do not survive plain pickling.

def realtime_priority(priority: int = 80) -> bool:
    """Run this process at real-time (FIFO) priority where the OS permits."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return True
    except (AttributeError, OSError):
        return False


def pack_error(exc: BaseException) -> tuple:
    try:
        pickle.dumps((type(exc), exc.args, exc.__dict__))
        return ("exception", type(exc), exc.args, dict(exc.__dict__), str(exc))
    except Exception:
        return ("exception", RobohalError, (f"{type(exc).__name__}: {exc}",), {}, str(exc))


def unpack_error(packed: tuple) -> BaseException:
    _, cls, args, attributes, text = packed
    try:
        exc = cls.__new__(cls)
        exc.args = args
        exc.__dict__.update(attributes)
        return exc
    except Exception:
        return RobohalError(text)


def error_names(errors: Any) -> tuple[str, ...]:
    """The set error names of a pylibfranka (or stub) ``Errors`` value."""
    return tuple(name for name in ERROR_NAMES if bool(getattr(errors, name, False)))


def names_in_message(text: str) -> tuple[str, ...]:
    listed = re.findall(r'"([a-z_]+)"', text)
    return tuple(name for name in listed if name in ERROR_NAMES)


def to_robot_state(state: Any, faults: tuple[str, ...] = ()) -> RobotState:
    mode = MODES.get(int(state.robot_mode), RobotMode.STOPPED)
    return RobotState(
        time=state.time.to_sec(), q=state.q, dq=state.dq, mode=mode, faults=faults,
        q_commanded=state.q_d, info={"success_rate": state.control_command_success_rate},
        wrench=flange_wrench(state),
    )


def flange_wrench(state: Any) -> np.ndarray:
    """The external wrench on the flange (robohal's RobotState.wrench): libfranka's O_F_ext_hat_K
    counts what the robot applies to the world as positive (robot_state.h), so its negative."""
    return -np.asarray(state.O_F_ext_hat_K, dtype=np.float64)


class ControlLoop:
    def __init__(self, conn: Any, shared: SharedBlock, config: ControlConfig,
                 state_bell: Doorbell | None = None, setpoint_bell: Doorbell | None = None) -> None:
        self.conn = conn
        # Whether a request waits, in ~1 us (Connection.poll builds a selector per call: ~20 us a cycle).
        self._requests = select.poll()
        self._requests.register(conn.fileno(), select.POLLIN)
        self.state_bell = state_bell  # we ring it after each state
        self.setpoint_bell = setpoint_bell  # the parent rings it after each setpoint
        self.shared = shared
        self.config = config
        self.model = config.model
        limits = config.model.limits
        self.limits = limits
        self.guard = SetpointGuard(limits, PERIOD, CHECKS)
        self.torque_guard = None if config.torque_limits is None else TorqueGuard(config.torque_limits, PERIOD)
        self.dynamics: Any = None  # the robot's dynamics Model, loaded for the first torque motion
        self.interface = JOINT_POSITION  # what the open session commands
        # A motion of the other interface that takes over: it starts once the running one rests
        # and its session has ended.
        self.after_session: MotionExecutor | TorqueExecutor | None = None
        self.switching_from: MotionExecutor | TorqueExecutor | None = None  # the motion it took over from
        self.lib: Any = None
        self.robot: Any = None
        self.control: Any = None
        self.first_write = False
        # The running motion's executor; or one with no motion, braking a stream to rest to end it.
        self.executor: MotionExecutor | TorqueExecutor | None = None
        self.prepared: np.ndarray | None = None  # the executor's next setpoint, already checked
        self.stop_reply: int | None = None
        self.stream_refused = False
        # seconds each motion step took (the executor's next setpoint, computed while the robot
        # runs the last): the most recent STEP_WINDOW of them, for figures
        self.step_times = np.zeros(STEP_WINDOW)  # wall time: preemption by other processes included
        self.step_cpu = np.zeros(STEP_WINDOW)  # this thread's CPU time: the step's own cost
        self.step_count = 0
        self.own_runs = 0  # run ids this process gives (negative: apart from the parent's)
        self._converted: Any = None  # the pylibfranka state last converted, and what it became
        self._converted_state: RobotState | None = None
        self.session_start: np.ndarray | None = None  # the held position a session starts from
        self.starved_at_start = 0.0  # Layout.STARVED when the session started
        self.lost_at_start = 0.0  # Layout.LOST when the session started
        self.closing = False
        self.lost = False
        self.failures = 0  # loop iterations in a row that raised
        self.state: Any = None

    # Pipe ------------------------------------------------------------------------------

    def reply(self, request_id: int, ok: bool, value: Any = None) -> None:
        self.conn.send(("reply", request_id, ok, pack_error(value) if not ok else value))

    def event(self, kind: str, payload: Any = None) -> None:
        self.conn.send(("event", kind, payload))

    # Lifecycle --------------------------------------------------------------------------

    def run(self) -> None:
        kind, request_id, _ = self.conn.recv()
        if kind == "hello":  # up, with its library imported: what follows is libfranka's connect alone
            try:
                self.lib = self.library()
            except Exception as exc:
                self.reply(request_id, False, exc)
                return
            self.reply(request_id, True)
            kind, request_id, _ = self.conn.recv()
        if kind != "connect":
            self.reply(request_id, False, ProtocolError(f"expected connect, got {kind}"))
            return
        try:
            self.connect()
        except Exception as exc:
            self.reply(request_id, False, self.map_connect_error(exc))
            return
        self.reply(request_id, True)  # the state is in shared memory
        while not self.closing:
            if self.lost:
                self.serve_after_loss()
                continue
            try:
                self.iteration()
            except (EOFError, BrokenPipeError, ConnectionResetError):
                break  # the parent went away
            except Exception as exc:
                self.fail(exc)
                self.failures += 1
                if self.failures > MAX_FAILURES and not self.lost:  # never spin on an error
                    self.lost = True
                    self.event("lost", pack_error(ConnectionLost(
                        f"franka: the control loop keeps failing ({type(exc).__name__}: {exc}); reconnect")))
            else:
                self.failures = 0
        self.shutdown()

    def library(self) -> Any:
        return importlib.import_module("robohal_franka.stubs" if self.config.impl == "stubs" else "pylibfranka")

    def connect(self) -> None:
        config = self.config
        if self.lib is None:
            self.lib = self.library()
        if config.impl == "stubs":
            # pylibfranka moves its thread to SCHED_FIFO where permitted (a robot PC runs
            # PREEMPT_RT); the stand-in does the same, so both see the same scheduling.
            realtime_priority()
            realtime = self.lib.RealtimeConfig.kIgnore if config.realtime == "ignore" else self.lib.RealtimeConfig.kEnforce
            self.robot = self.lib.Robot(config.host, realtime, model=config.model_name, max_missed=config.stub_max_missed,
                                        ideal=config.stub_ideal, seed=config.stub_seed, contact=config.stub_contact,
                                        hold=config.stub_hold)
        else:
            realtime = self.lib.RealtimeConfig.kIgnore if config.realtime == "ignore" else self.lib.RealtimeConfig.kEnforce
            self.robot = self.lib.Robot(config.host, realtime)
        self.robot.set_collision_behavior(*[list(v) for v in config.collision])
        self.state = self.robot.read_once()
        self.publish(self.state)
        self.hold_here()

    def shutdown(self) -> None:
        self.drop_control()
        self.robot = None  # pylibfranka closes its sockets when the Robot goes

    def serve_after_loss(self) -> None:
        """The link is gone: answer the parent until it closes us."""
        kind, request_id, _ = self.conn.recv()
        if kind == "close":
            self.closing = True
            self.reply(request_id, True)
        else:
            self.reply(request_id, False, ConnectionLost("franka: the connection to the robot was lost; reconnect"))

    # The 1 kHz loop -----------------------------------------------------------------------

    def iteration(self) -> None:
        if self.control is None:
            self.state = self.robot.read_once()
        else:
            self.state, duration = self.control.readOnce()
            step = round(duration.to_sec() / PERIOD)
            torque = self.interface == JOINT_TORQUE  # the robot holds a late torque command's cycle on the last one
            filled = max(step - 1, 0) + (0 if torque else self.newest_dropped(step))
            if step > 1:
                self.shared.add(Layout.LATE)
            if filled:
                self.shared.add(Layout.LOST, filled)
                if not torque:
                    self.robot_filled(filled, step)
        self.publish(self.state)
        while self._requests.poll(0):
            self.handle(*self.conn.recv())
            if self.closing or self.lost:
                return
        if self.control is None and self.executor is None:
            self.refuse_sessionless_setpoint()
        if self.control is not None:
            self.write()

    def newest_dropped(self, step: int) -> bool:
        """Whether the robot dropped our newest command (it came after its cycle) and filled that
        cycle instead: the state's desired position is where the robot's constant-acceleration
        continuation without it leads, not where it leads with it. The robot rounds its account
        to float32 for the wire, so the prediction that rounds to the reported values on every
        joint is its account; when both do (they differ by less than float32 resolves), ours is
        kept. A robot that rounds otherwise is met with the nearer within DROP_TOLERANCE, and one
        that reports neither keeps our own account. (Taking the wrong one leaves our history off
        the robot's; the next fill extrapolates that threefold, and a stream at the jerk limit
        then meets a reflex.)"""
        if self.first_write or not self.guard.active or step < 1:
            return False
        reported = np.array(self.state.q_d, dtype=np.float64)
        wire = reported.astype(np.float32)
        kept = self.guard.continuation(step - 1)
        if (kept.astype(np.float32) == wire).all():  # every cycle but a late one: nothing more to do
            return False
        dropped = self.guard.continuation(step, without_newest=True)
        if (dropped.astype(np.float32) == wire).all():
            was_dropped = True
        else:
            kept_off, dropped_off = np.abs(kept - reported).max(), np.abs(dropped - reported).max()
            was_dropped = bool(dropped_off <= DROP_TOLERANCE and dropped_off < kept_off)
        if was_dropped:
            self.guard.drop_newest()
        return was_dropped

    def robot_filled(self, cycles: int, step: int) -> None:
        """No command of ours reached the robot for ``cycles`` cycles (this process ran late: it
        skipped states, or its command came after its cycle), and the robot continued the
        motion at constant acceleration through them (the FCI's model of a lost command,
        libfranka's rate_limiting.h). Our history follows the robot's, and a running motion
        follows the robot's clock (``step`` cycles since the last state): its setpoints for the
        cycles between are past."""
        if self.first_write:
            return  # nothing sent yet: the robot holds
        self.guard.fill(cycles)
        executor = self.executor
        if executor is None or executor.braking:
            self.prepared = None  # a brake or a stream goes on from the guard, which now has the robot's account
            return
        if executor.robot_filled(self.robot_state()):  # a streamed motion plans anew from the robot's account
            self.prepared = None
            return
        if step > 1:  # the motion's setpoints for the skipped cycles are past
            executor.skip(self.robot_state(), step - 1 if self.prepared is None else step - 2)
            self.prepared = None
        elif self.prepared is not None:  # on time, but checked against a history the robot did not keep
            self.prepared = executor.recheck(self.prepared)

    def publish(self, state: Any) -> None:
        errors = state.current_errors
        bits = [1.0 if getattr(errors, name, False) else 0.0 for name in ERROR_NAMES] if errors else [0.0] * len(ERROR_NAMES)
        self.shared.publish(state.time.to_sec(), state.q, state.dq, state.q_d, int(state.robot_mode),
                            state.control_command_success_rate, bits, flange_wrench(state))
        if self.state_bell is not None and self.shared.get(Layout.PARENT_WAITING):
            self.state_bell.ring()

    def held_position(self) -> np.ndarray:
        """Where the robot holds: its desired position. A session's first command must be this
        (the measured ``q`` lags it and jitters around it: starting there would be a step)."""
        return np.array(self.state.q_d, dtype=np.float64)

    def hold_here(self) -> None:
        """No session: the next one starts from the held position; say so to the parent."""
        q = self.held_position()
        self.guard.reset(q)
        self.shared.set(Layout.COMMANDED, q)

    def refuse_sessionless_setpoint(self) -> None:
        """A streamed setpoint with no stream session (it was posted as the session ended: a
        stop() or a fault from another thread): never send it; the parent's cycle() raises."""
        if self.stream_refused:
            return  # the parent has been told why (StreamStarved, sent before the braking began)
        taken = self.shared.take_setpoint()
        if taken is None:
            return
        self.shared.set(Layout.DROPPED, taken[0])
        self.shared.set(Layout.CONSUMED, taken[0])

    def start_session(self, kind: int) -> None:
        gc.disable()  # a full collection can take longer than a cycle; collect between sessions
        self.session_start = self.held_position()  # before the Move: the start the parent is told
        if kind == SESSION_TORQUE:
            self.control = self.robot.start_torque_control()
            self.interface, self.first_write = JOINT_TORQUE, False
            self.torque_guard.reset()  # the robot starts from no torque of ours
        else:
            self.control = self.robot.start_joint_position_control(self.lib.ControllerMode.JointImpedance)
            self.interface, self.first_write = JOINT_POSITION, True
        self.guard.reset(self.session_start)
        self.starved_at_start = self.shared.get(Layout.STARVED)
        self.lost_at_start = self.shared.get(Layout.LOST)
        self.prepared = None
        self.shared.set(Layout.SESSION, kind)

    def drop_control(self) -> None:
        gc.enable()
        control, self.control = self.control, None
        if control is not None:
            del control  # an unfinished control sends StopMove as it goes
        self.shared.set(Layout.SESSION, SESSION_NONE)
        self.prepared = None
        self.interface = JOINT_POSITION

    def write(self) -> None:
        if self.interface == JOINT_TORQUE:
            self.write_torques()
            return
        finish = False
        executor = self.executor
        if self.first_write:  # the robot wants the first command at the position it holds
            self.first_write = False
            assert self.session_start is not None
            q = self.session_start
        elif executor is not None:  # a motion, or a brake that ends the session
            q, self.prepared = self.prepared, None
            if q is None:
                q = self.motion_setpoint()
            executor = self.executor
            if q is None:  # over and at rest: the command that finishes the motion
                q, finish = self.guard.last, True
        else:
            q = self.guard.check(self.stream_step())
        command = self.lib.JointPositions(q.tolist())
        if finish:
            command.motion_finished = True
        self.control.writeOnce(command)
        self.guard.commit(q)
        # a setpoint of the motion's, with the state it answers (its time marks the robot's cycle)
        if executor is not None and not finish and executor.sent(self.robot_state(), q):
            self.shared.add(Layout.MOTION_SETPOINTS)
        self.shared.set(Layout.COMMANDED, q)
        self.shared.add(Layout.WRITES)
        if finish:
            self.finished()
        elif executor is not None and not executor.braking:
            # The next setpoint, computed while the robot runs this one: the command goes out
            # right after the next state instead of a motion step later.
            began, cpu = time.perf_counter(), time.thread_time()
            self.prepared = self.motion_setpoint()
            slot = self.step_count % len(self.step_times)
            self.step_times[slot] = time.perf_counter() - began
            self.step_cpu[slot] = time.thread_time() - cpu
            self.step_count += 1

    def write_torques(self) -> None:
        """One cycle of a torque session: the executor's torques for the newest state, computed
        now (they depend on it), checked by the torque guard; once it is over and the arm rests,
        the command that ends the session and leaves the arm to the robot's hold."""
        state = self.robot_state()  # (every session converts each state; the step's cost is what follows)
        began, cpu = time.perf_counter(), time.thread_time()
        if self.torque_guard.follow_robot(self.state.tau_J_d):  # our last command came too late for the robot
            self.shared.add(Layout.LOST)
        tau = self.torque_step(state, RobotModelTerms(self.dynamics, self.state))
        executor = self.executor
        finish = tau is None
        if finish:
            tau = self.torque_guard.last
        else:
            slot = self.step_count % len(self.step_times)
            self.step_times[slot] = time.perf_counter() - began
            self.step_cpu[slot] = time.thread_time() - cpu
            self.step_count += 1
        command = self.lib.Torques(tau.tolist())
        command.motion_finished = finish
        self.control.writeOnce(command)
        self.torque_guard.commit(tau)
        if executor is not None and not finish and executor.sent(state, tau):
            self.shared.add(Layout.MOTION_SETPOINTS)
        self.shared.set(Layout.COMMANDED, state.q)  # no joint command in a torque session: where the arm is
        self.shared.add(Layout.WRITES)
        if finish:
            self.finished()

    def torque_step(self, state: RobotState, terms: RobotModelTerms) -> np.ndarray | None:
        """The running torque executor's torques; when it is over and another takes over from it,
        that one's (the first reports its end). None when the last one is over and at rest."""
        while True:
            executor = self.executor
            if executor is None:  # (never: a torque session always runs an executor)
                return None
            tau = executor.next(state, terms)
            if tau is not None or executor.successor is None:
                return tau
            self.executor = executor.successor
            if executor.motion is not None:
                self.motion_over(executor)
            self.executor.start_after(executor, state, terms)

    def robot_state(self) -> RobotState:
        """The newest state as robohal's :class:`RobotState`, built once per state (a cycle may
        need it three times: for the motion's step, its record, and a reaction)."""
        if self._converted is not self.state:
            self._converted_state = to_robot_state(self.state)
            self._converted = self.state
        return self._converted_state

    def step_timing(self) -> dict[str, float]:
        """Percentiles (us) of the recent motion steps' cost (the thread's CPU time) and of their
        wall time (preemption by other processes included); then start afresh."""
        count = min(self.step_count, len(self.step_times))
        self.step_count = 0
        if count == 0:
            return {"steps": 0}
        cpu, wall = np.sort(self.step_cpu[:count]) * 1e6, np.sort(self.step_times[:count]) * 1e6
        return {"steps": int(count), "p50_us": float(cpu[count // 2]), "p99_us": float(cpu[int(count * 0.99)]),
                "max_us": float(cpu[-1]), "wall_p50_us": float(wall[count // 2]),
                "wall_p99_us": float(wall[int(count * 0.99)])}

    def motion_setpoint(self) -> np.ndarray | None:
        """The running executor's next setpoint; when it is over and another takes over from it,
        that one's (the first reports its end). None when the last one is over and at rest."""
        state = self.robot_state()
        while True:
            executor = self.executor
            assert executor is not None
            q = executor.next(state)
            if q is not None or executor.successor is None:
                return q
            self.executor = executor.successor
            if executor.motion is not None:
                self.motion_over(executor)
            self.executor.start_after(executor, state)

    # Setpoint sources -------------------------------------------------------------------------

    def stream_step(self) -> np.ndarray:
        deadline = time.monotonic() + MAILBOX_WAIT
        taken = self.shared.take_setpoint()
        while taken is None and not self._requests.poll(0):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if self.setpoint_bell is not None:
                self.setpoint_bell.wait(left)
            else:
                time.sleep(MAILBOX_POLL)
            taken = self.shared.take_setpoint()
        if taken is None:
            q, resting = self.guard.brake()
            if not resting:
                self.shared.add(Layout.STARVED)
            return q
        seq, q = taken
        self.shared.set(Layout.CONSUMED_AT, self.shared.get(Layout.STATE_COUNT))
        self.shared.set(Layout.CONSUMED, seq)
        if self.stream_refused:
            return self.guard.last
        try:
            return self.guard.check(q)
        except LimitViolation as exc:
            # The setpoint passed the parent's guard, whose history starts where ours does (the
            # session's start): ours differs only after cycles we braked through without a setpoint.
            self.stream_refused = True
            starved = int(self.shared.get(Layout.STARVED) - self.starved_at_start)
            lost = int(self.shared.get(Layout.LOST) - self.lost_at_start)
            if starved:
                error: RobohalError = StreamStarved(
                    f"franka: the setpoint stream fell behind the robot's 1 kHz cycle while moving ({starved} cycles"
                    f" starved in this stream); the control process braked the robot to rest ({exc}). Call recover()"
                    " to resume; run whole motions with run() to keep them in the control loop.")
            elif lost:
                error = StreamStarved(
                    f"franka: the control process ran late and lost {lost} of the robot's cycles in this stream; the"
                    f" robot continued at constant acceleration through them, and the stream's next setpoint did not"
                    f" follow on ({exc}); the control process braked the robot to rest. Call recover() to resume; give"
                    " the control process a real-time kernel, or run whole motions with run(), which keep to the"
                    " robot's clock.")
            else:
                error = StreamStarved(
                    f"franka: the control process refused a streamed setpoint that the caller's check had passed, with"
                    f" no cycle starved or lost ({exc}); it braked the robot to rest. Call recover() to resume.")
            self.event("error", pack_error(error))
            self.end_session_braking()
            q = self.executor.next(self.robot_state()) if self.executor is not None else None
            return self.guard.last if q is None else q

    def end_session_braking(self) -> None:
        """Brake the session to rest (the executor's brake), then finish it: a running motion is
        stopped; a stream gets an executor that only brakes."""
        waiting, self.after_session = self.after_session, None
        if waiting is not None:  # it never ran
            waiting.stopped = True
            self.motion_over(waiting)
        self.switching_from = None
        if self.executor is not None:
            dropped, self.executor.successor = self.executor.successor, None
            if dropped is not None and dropped.motion is not None:  # it never ran
                dropped.stopped = True
                self.motion_over(dropped)
            if self.executor.handover is not None:  # resting for a reaction's handover: the run ends here
                self.executor.handover, self.executor.stopped = None, True
            self.executor.stop()
        elif self.interface == JOINT_TORQUE:
            self.executor = TorqueExecutor(None, self.torque_guard, self.model, name=self.config.host)
        else:
            self.executor = MotionExecutor(None, self.guard, self.model, finish_at_rest=True, name=self.config.host)
        self.prepared = None

    def finished(self) -> None:
        """The robot has the finishing command: the session is over. A state from after it is
        published first: what the robot holds now (its q_d: the last command, or, on a robot that
        holds the arm where it measures it, that) is ``commanded`` the moment anyone hears the
        motion ended."""
        gc.enable()
        self.control = None
        self.state = self.robot.read_once()
        self.publish(self.state)
        self.shared.set(Layout.SESSION, SESSION_NONE)
        if self.interface == JOINT_TORQUE:  # the robot holds the arm where it rests: the next session starts there
            self.hold_here()
        following, self.after_session = self.after_session, None
        executor = self.executor
        if executor is not None and executor is self.switching_from:  # it ended for the motion taking over
            executor.stopped, executor.taken_over = False, True
        self.switching_from = None
        if following is None and executor is not None and executor.handover is not None and executor.error is None:
            # a reaction handed over to a motion of the other interface: the same run goes on in it
            following = self.executor_for(executor.handover, executor.tag)
            following.reaction = executor.reaction
            following.recorder.take(executor.recorder)  # one run: its result spans both sessions
            self.executor = executor.successor
        self.drop_motions()
        if self.stop_reply is not None:
            self.reply(self.stop_reply, True, self.guard.last)
            self.stop_reply = None
        elif following is not None:
            try:
                self.begin(following)
            except Exception as exc:  # it could not start: nothing moved for it
                self.motion_over(following, self.map_error(exc))

    def drop_motions(self, error: BaseException | None = None, *, stopped: bool = False) -> bool:
        """End the running executor, the one waiting to take over from it and one waiting for the
        next session, telling the parent how each motion ended. Returns whether there was a motion
        to tell of."""
        executor, self.executor = self.executor, None
        waiting, self.after_session = self.after_session, None
        self.prepared = None
        told = False
        while executor is not None:
            if executor.motion is not None:
                executor.stopped = executor.stopped or stopped
                self.motion_over(executor, error)
                told = True
            executor = executor.successor
        if waiting is not None:  # it never ran
            waiting.stopped = True
            self.motion_over(waiting, error)
            told = True
        return told

    def motion_over(self, executor: MotionExecutor | TorqueExecutor, error: BaseException | None = None) -> None:
        """Tell the parent how the motion ended: its result, the error it met, where it rests."""
        error = error or executor.error
        result = executor.result()
        self.event("motion_done", (executor.tag, result, None if error is None else pack_error(error), self.guard.last))

    # Commands from the parent ---------------------------------------------------------------

    def handle(self, kind: str, request_id: int, payload: Any) -> None:
        try:
            if kind == "run":
                run_id, motion = payload
                self.start_motion(motion, run_id)
                self.reply(request_id, True)
            elif kind == "steer":
                self.reply(request_id, True, self.steer(*payload))
            elif kind == "target":  # a stream's next target: no reply (the parent does not wait)
                self.next_target(*payload)
            elif kind == "stream":
                self.reply(request_id, True, self.start_stream())
            elif kind == "stop":
                if self.control is None:
                    self.reply(request_id, True, self.guard.last)
                else:
                    self.stop_reply = request_id
                    self.end_session_braking()
            elif kind == "recover":
                self.reply(request_id, True, self.recover())
            elif kind == "timing":
                self.reply(request_id, True, self.step_timing())
            elif kind == "collision":
                if self.control is not None:
                    raise ProtocolError("stop the motion before changing the collision behaviour")
                self.robot.set_collision_behavior(*[list(v) for v in payload])
                self.reply(request_id, True)
            elif kind == "load":
                if self.control is not None:
                    raise ProtocolError("stop the motion before changing the payload")
                mass, center, inertia = payload
                self.robot.set_load(mass, list(center), list(inertia))
                self.reply(request_id, True)
            elif kind == "close":
                self.close_session()
                self.closing = True
                self.reply(request_id, True)
            else:
                raise ProtocolError(f"unknown request {kind!r}")
        except Exception as exc:
            mapped = self.map_error(exc)
            if isinstance(mapped, ConnectionLost):  # (opening a stream, say): the link is gone for good here too
                self.lost = True
            self.reply(request_id, False, mapped)

    def start_motion(self, motion: Any, run_id: int) -> None:
        """Start ``motion``; while another runs, it takes over from it at the next cycle."""
        if self.stream_refused:
            raise StreamStarved("franka: the stream was braked after starving; call recover() first")
        if self.stop_reply is not None:
            raise RobohalError("stop() is braking the arm to rest; start the motion once it has returned")
        executor = self.executor_for(motion, run_id)
        running = self.executor
        if self.after_session is not None or (self.control is not None and executor.command_interface != self.interface):
            self.switch_after(executor)  # the other interface: once the running motion rests, in a session of its own
            return
        if running is not None:  # a take-over: the loop hands over at the next cycle
            replaced = running.successor
            running.take_over(executor)
            if replaced is not None and replaced.motion is not None:  # it never ran
                replaced.taken_over = True
                self.motion_over(replaced)
            self.prepared = None
            return
        if self.control is None:
            self.begin(executor)
        else:  # from a stream's last setpoint
            executor.start_after(MotionExecutor(None, self.guard, self.model), self.robot_state())
            self.shared.set(Layout.SESSION, SESSION_MOTION)
            self.executor = executor

    def executor_for(self, motion: Any, run_id: int) -> MotionExecutor | TorqueExecutor:
        """The executor that runs ``motion`` (as run ``run_id``) on its interface."""
        if interface_of(motion) == JOINT_TORQUE:
            if self.torque_guard is None:
                raise ProtocolError("franka: this control process was started without torque limits")
            return TorqueExecutor(motion, self.torque_guard, self.model, name=self.config.host, tag=run_id)
        # libfranka wants a motion's last command at rest: the executor brakes it there
        return MotionExecutor(motion, self.guard, self.model, finish_at_rest=True, name=self.config.host, tag=run_id)

    def begin(self, executor: MotionExecutor | TorqueExecutor) -> None:
        """Start ``executor``'s motion in a new session (none is open). It is planned before the
        robot starts waiting for commands: a start may take milliseconds."""
        if executor.command_interface == JOINT_TORQUE:
            if self.dynamics is None:
                self.dynamics = self.robot.load_model()  # once: libfranka builds it from what the robot serves
            self.torque_guard.reset()
            executor.start(self.robot_state(), RobotModelTerms(self.dynamics, self.state))
            self.start_session(SESSION_TORQUE)
            self.shared.set(Layout.COMMANDED, self.state.q)
        else:
            executor.start(self.robot_state(), self.held_position())
            self.start_session(SESSION_MOTION)
        self.executor = executor

    def switch_after(self, executor: MotionExecutor | TorqueExecutor) -> None:
        """``executor`` commands the other interface than the open session: the running motion (or
        stream) brakes to rest and its session ends, then ``executor`` starts in one of its own.
        A motion already waiting so is taken over before it ran."""
        replaced, self.after_session = self.after_session, executor
        if replaced is not None:
            replaced.taken_over = True
            self.motion_over(replaced)
            return  # the running one already brakes for it
        running = self.executor
        if running is None:  # a stream: brake it to rest, then the session ends
            self.end_session_braking()
            self.after_session = executor
            return
        dropped, running.successor = running.successor, None
        if dropped is not None and dropped.motion is not None:  # it never ran
            dropped.taken_over = True
            self.motion_over(dropped)
        self.switching_from = running
        running.stop()
        self.prepared = None

    def steer(self, run_id: int, target: ServoTarget, timeout: float, dynamics: float) -> int:
        """A stream's newest target for the running motion that follows streams (a servo motion,
        an impedance's equilibrium); without one, start a servo motion (taking over from any
        motion). Returns the run that follows the stream: ``run_id`` when a new one started."""
        running = self.executor
        if running is not None:
            newest = self.after_session or running.successor or running
            update = getattr(newest.motion, "update", None)
            if callable(update) and not (newest is running and running.braking) and update(target):
                return newest.tag
        self.start_motion(Servo(target, timeout=timeout, dynamics=dynamics), run_id)
        return run_id

    def next_target(self, target: ServoTarget, timeout: float, dynamics: float) -> None:
        """A stream's next target, sent without waiting for a reply. Where the servo motion has
        ended meanwhile (its timeout, a stop), a new one starts under an id of ours, and the parent
        is told (``started``) before anything else of it."""
        try:
            self.own_runs -= 1
            if self.steer(self.own_runs, target, timeout, dynamics) == self.own_runs:
                self.event("started", self.own_runs)
        except Exception as exc:  # refused (a fault, a starved stream): the parent's next call meets it
            self.event("error", pack_error(self.map_error(exc)))

    def start_stream(self) -> np.ndarray:
        """Open a stream session (if none is open) and return the position it starts from."""
        if self.executor is not None:
            raise RobohalError("a motion is running; wait() for it or stop() it before streaming")
        if self.stream_refused:
            raise StreamStarved("franka: the stream was braked after it was refused; call recover() first")
        if self.control is None:
            # A setpoint still in the mailbox was posted for a session that has ended: stale.
            self.shared.set(Layout.CONSUMED, self.shared.get(Layout.SETPOINT_SEQ))
            self.start_session(SESSION_STREAM)
            return self.session_start.copy()
        last = self.guard.last
        assert last is not None
        return last

    def recover(self) -> None:
        self.drop_motions(stopped=True)
        self.drop_control()
        self.robot.automatic_error_recovery()
        for _ in range(100):  # states queued before the recovery come first
            self.state = self.robot.read_once()
            if int(self.state.robot_mode) != 4:  # Reflex
                break
        self.publish(self.state)
        self.hold_here()
        self.shared.set(Layout.CONSUMED, self.shared.get(Layout.SETPOINT_SEQ))
        self.stream_refused = False

    def close_session(self) -> None:
        """Bring a running session to rest and finish it (bounded)."""
        if self.control is None:
            return
        self.end_session_braking()
        deadline = time.monotonic() + 5.0
        try:
            while self.control is not None and time.monotonic() < deadline:
                self.state, _ = self.control.readOnce()
                self.publish(self.state)
                self.write()
        except Exception:
            pass
        self.drop_motions(stopped=True)
        self.drop_control()

    # Errors ----------------------------------------------------------------------------------

    def map_connect_error(self, exc: BaseException) -> BaseException:
        """An error of libfranka's connect, where the robot was never reached, as ConnectFailed."""
        if type(exc).__name__ != "NetworkException":
            return self.map_error(exc)
        address = f"{self.config.host}:{TCP_PORT}"
        if "refused" in str(exc):
            # libfranka says "enable FCI mode in Desk" for any refused TCP connection: nothing
            # listening there is as likely as FCI being off (the backend asks Desk where it can)
            return ConnectFailed(
                f"franka: nothing accepted a connection at {address} (TCP refused): FCI is off, or this is not the"
                f" robot's address. Activate FCI: robohal franka fci on franka://{self.config.host} (or in Desk), or"
                " connect with desk_bringup=1; else check the address, that the robot is on and cabled to this"
                f" computer. libfranka: {exc}", address=address)
        return ConnectFailed(f"franka: could not reach the robot at {address}: {exc}. Check the address, the cable and"
                             " this computer's IP in the robot's subnet (ping it).", address=address)

    def refused_in_mode(self, text: str) -> HardwareFault | None:
        """libfranka's "command not possible in the current mode ("MODE")!" as what to do about it.
        libfranka adds "Did you open the brakes?" to the mode Other (robot_impl.h), the mode of a
        robot whose joints are locked (libfranka issue 133)."""
        found = re.search(r'command not possible in the current mode \("([^"]+)"\)', text)
        if found is None:
            return None
        mode, uri = found.group(1), f"franka://{self.config.host}"
        if mode == "Other":
            advice = (f"its joints are locked (or a Desk self-test or safety error holds them). Unlock them:"
                      f" robohal franka unlock {uri} (or the padlock in Desk), or connect with desk_bringup=1")
        elif mode == "User stopped":
            advice = "its user stop (external activation device) is pressed: release it"
        elif mode == "Reflex":
            advice = "it is in a reflex: call recover()"
        else:
            advice = f"it is in the mode {mode!r}, in which it takes no motion"
        return HardwareFault(f"franka: the robot refused the command: {advice}. libfranka: {text}", names=(),
                             recoverable=mode == "Reflex")

    def map_error(self, exc: BaseException) -> BaseException:
        kind = type(exc).__name__
        if kind == "CommandException":
            refused = self.refused_in_mode(str(exc))
            if refused is not None:
                return refused
        if kind in ("ControlException", "CommandException"):
            names: tuple[str, ...] = ()
            try:
                state = self.robot.read_once()
                self.state = state
                self.publish(state)
                names = error_names(state.last_motion_errors) or error_names(state.current_errors)
            except Exception:
                pass
            names = names or names_in_message(str(exc))
            label = ", ".join(names) or "a rejected command"
            return HardwareFault(f"franka: the robot stopped the motion: {label} ({exc})", names=names, recoverable=True)
        if kind == "NetworkException":
            return ConnectionLost(f"franka: lost the robot at {self.config.host}: {exc}")
        if kind == "RealtimeException":
            return RealtimeUnavailable(
                f"franka: {exc} libfranka enforces real-time scheduling by default: run on a PREEMPT_RT kernel,"
                " or add realtime=ignore to the URI (franka://HOST?realtime=ignore) to accept late cycles.")
        if kind == "InvalidOperationException":
            return ProtocolError(f"franka: {exc}")
        return exc

    def fail(self, exc: BaseException) -> None:
        """An error inside the loop: end the session, keep the error for the parent."""
        gc.enable()
        self.control = None  # libfranka refuses to read while a failed control object lives
        self.shared.set(Layout.SESSION, SESSION_NONE)
        mapped = self.map_error(exc)
        if isinstance(mapped, ConnectionLost):
            self.lost = True
        if not self.drop_motions(mapped):  # (a motion's error goes with its end)
            if isinstance(mapped, (HardwareFault, ConnectionLost)):
                self.event("fault" if isinstance(mapped, HardwareFault) else "lost", pack_error(mapped))
            else:
                self.event("error", pack_error(mapped))
        if self.stop_reply is not None:
            self.reply(self.stop_reply, False, mapped)
            self.stop_reply = None
        if not isinstance(mapped, (HardwareFault, ConnectionLost, LimitViolation)):
            traceback.print_exception(mapped)


def control_main(conn: Any, buffer: Any, config: ControlConfig,
                 state_bell: Doorbell | None = None, setpoint_bell: Doorbell | None = None) -> None:
    """Run the control loop until the parent closes it or goes away."""
    loop = ControlLoop(conn, SharedBlock(buffer), config, state_bell, setpoint_bell)
    try:
        loop.run()
    except (EOFError, OSError, KeyboardInterrupt):
        pass  # the parent went away
    finally:
        try:
            loop.shutdown()
        except Exception:
            pass


def main(argv: list[str]) -> int:
    """The control process's entry point (arguments: pipe FD, shared-memory file, state
    doorbell write FD, setpoint doorbell read FD), started by
    :class:`~robohal_franka.backend.FrankaBackend`."""
    conn = Connection(int(argv[0]))
    state_bell = Doorbell(-1, int(argv[2]))
    setpoint_bell = Doorbell(int(argv[3]), -1)
    with open(argv[1], "r+b") as handle:
        buffer = mmap.mmap(handle.fileno(), Layout.SIZE * 8)
    try:
        config = conn.recv()
    except (EOFError, OSError):
        return 0
    control_main(conn, buffer, config, state_bell, setpoint_bell)
    return 0

