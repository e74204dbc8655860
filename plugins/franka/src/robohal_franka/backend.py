"""The Franka backend: ``franka://HOST?model=franka.fr3&realtime=ignore|enforce&impl=pylibfranka|stubs``.

The pylibfranka session lives in a dedicated control process
(:mod:`.control`, a fresh interpreter: nothing of the user's process is forked
or re-imported): it runs the 1 kHz readOnce/writeOnce loop and steps whole motions
there. This object, in the user's process, reads the latest state from shared
memory, streams setpoints through the shared mailbox (:meth:`cycle`), ships
motions through a pipe (:meth:`run`) and re-raises the errors the control
process reports on the next call.

URI parameters: ``realtime`` (``enforce`` by default on a PREEMPT_RT kernel,
else ``ignore``), ``impl`` (``pylibfranka``, the default, or ``stubs``: the
pure-Python stand-in, same code path), ``collision`` (torque and force
thresholds for the collision behaviour, in Nm and N: ``collision=40,60``),
``desk_bringup=1`` (connect takes control in Desk, unlocks the joints and activates FCI as
needed, and close gives back what it changed; ``desk_force=1`` takes control from its holder,
by Desk's rules) with the Desk parameters of :mod:`.desk.access`.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import mmap
import os
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from robohal.control.backend import Backend
from robohal.control.handle import MotionHandle, interrupts_held
from robohal.errors import ConnectFailed, ConnectionLost, HardwareFault, InvalidArgument, RobohalError, UriError
from robohal.kinematics import Kinematics, TorqueLimits
from robohal.motion import Motion, MotionResult
from robohal.motion.motions import JOINT_POSITION, JOINT_TORQUE
from robohal.motion.servo import DEFAULT_TIMEOUT as SERVO_TIMEOUT
from robohal.motion.servo import ServoTarget
from robohal.payload import Payload
from robohal.state import RobotMode, RobotState
from robohal.uri import RobotUri

from .control import MODES, ControlConfig, StreamStarved, pack_error, unpack_error
from .facts import ARMS, FR3, MAX_PAYLOAD
from .shared import SESSION_MOTION, SESSION_STREAM, SESSION_TORQUE, Doorbell, Layout, SharedBlock
from .simulated_robot import HOLD_COMMAND, parse_contact
from .wire import ERROR_NAMES, TCP_PORT

PERIOD = 0.001
#: Nm/s: libfranka's rate_limiting.h keeps its torque rate kLimitEps below 1000 Nm/s (kMaxTorqueRate)
LIMIT_EPS = 1e-3
START_TIMEOUT = 30.0  # s: the control process starts and imports numpy, robohal and pylibfranka
#: s: libfranka's own TCP timeout (its Network's tcp_timeout default, network.h). A silent peer that
#: accepts the connection holds libfranka's handshake for ever (measured): robohal gives up a second
#: after libfranka would have.
LIBFRANKA_CONNECT_TIMEOUT = 60.0
REQUEST_TIMEOUT = 10.0
STATE_TIMEOUT = 2.0  # s without a new state while streaming: the control process or the robot is gone
# Not ``-m robohal_franka.control``: its classes must pickle under their module's name.
CONTROL_MAIN = "import sys; from robohal_franka.control import main; sys.exit(main(sys.argv[1:]))"
# One BLAS thread: a real-time loop must not wait for worker threads the scheduler runs later.
CONTROL_ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else None
IMPLEMENTATIONS = ("pylibfranka", "stubs")
#: s: how often a waiting caller looks up (so that a Ctrl-C is seen while the arm moves)
WAIT_SLICE = 0.05


def realtime_kernel() -> bool:
    try:
        with open("/sys/kernel/realtime") as handle:
            return handle.read().strip() == "1"
    except OSError:
        return "PREEMPT_RT" in os.uname().version


log = logging.getLogger("robohal.franka")

# Backends whose motion runs in their control process. No thread of ours holds such a
# backend meanwhile, and a self-reference would be a cycle the collector frees: a Robot
# dropped after move_joints(..., wait=False) must still see its motion through.
_MOVING: set[FrankaBackend] = set()


class LiveCounters(dict):
    """``counters`` that include what the control process did on its own
    (cycles and setpoints of motions it ran)."""

    def __init__(self, backend: FrankaBackend) -> None:
        super().__init__()
        self._backend = weakref.ref(backend)  # not a cycle: a dropped backend is freed (and closed) at once

    def __missing__(self, key: str) -> int:
        return 0

    def _extra(self, key: str) -> int:
        backend = self._backend()
        return backend._motion_setpoints() if backend is not None and key in ("cycles", "commands_sent") else 0

    def __getitem__(self, key: str) -> int:
        return dict.get(self, key, 0) + self._extra(key)

    def __setitem__(self, key: str, value: int) -> None:
        dict.__setitem__(self, key, value - self._extra(key))


@dataclass(eq=False)
class _Run:
    """A motion sent to the control process, and what became of it (its caller waits on ``done``)."""

    background: bool
    done: threading.Event = field(default_factory=threading.Event)
    result: MotionResult | None = None
    error: BaseException | None = None


class FrankaBackend(Backend):
    checks = ("position", "velocity", "acceleration", "jerk")
    #: FCI's joint position and torque interfaces (torque motions: robohal.motion.torque)
    command_interfaces = frozenset({JOINT_POSITION, JOINT_TORQUE})

    def __init__(self, uri: RobotUri, model: Kinematics) -> None:
        super().__init__(uri, model, PERIOD)
        if model.dof != 7:
            raise InvalidArgument(f"franka: the model must have 7 joints, {type(model).__name__} has {model.dof}")
        if not uri.host:
            raise UriError(f"{uri}: which robot? franka://ROBOT_IP?model=franka.fr3 (or franka://sim for the simulator)")
        self.impl = uri.params.get("impl", "pylibfranka")
        if self.impl not in IMPLEMENTATIONS:
            raise UriError(f"{uri}: impl must be one of {', '.join(IMPLEMENTATIONS)}")
        if self.impl == "stubs" and not uri.wants_simulator:
            # the stand-in runs an arm of its own whatever the host: at a robot's address it would
            # report motions no robot made
            raise UriError(f"{uri}: impl=stubs is the in-process stand-in for pylibfranka, not a robot; it serves"
                           " franka://sim only. Drop impl=stubs to drive the robot at that address.")
        self.in_process_simulation = self.impl == "stubs"
        # libfranka's RealtimeConfig; not Backend.realtime (whether cycles are paced by the clock: they are)
        self.realtime_config = uri.params.get("realtime", "enforce" if realtime_kernel() else "ignore")
        if self.realtime_config not in ("enforce", "ignore"):
            raise UriError(f"{uri}: realtime must be 'enforce' or 'ignore'")
        self.collision = self._collision_thresholds(uri)
        self.model_name = uri.model or "franka.fr3"
        arm = ARMS.get(self.model_name, FR3)  # (a model of one's own on a Franka: the drives are an FR3's or a Panda's, alike)
        #: Franka's published joint torque limits, and libfranka's torque-rate limit (kMaxTorqueRate)
        self.torque_limits = TorqueLimits(arm.torque, arm.torque_rate - LIMIT_EPS)
        self.counters = LiveCounters(self)  # type: ignore[assignment]
        self._process: subprocess.Popen | None = None
        self._shm_file: Any = None
        self._mmap: mmap.mmap | None = None
        self._state_bell: Doorbell | None = None
        self._setpoint_bell: Doorbell | None = None
        self._conn: Any = None
        self._shared: SharedBlock | None = None
        self._reader: threading.Thread | None = None
        self._replies: dict[int, queue.Queue] = {}
        self._ids = itertools.count(1)
        self._send_lock = threading.Lock()
        self._runs: dict[int, _Run] = {}  # motions in the control process, by run id
        self._runs_lock = threading.Lock()
        self._run_ids = itertools.count(1)
        self._last_run: _Run | None = None  # the newest started (wait() returns its result)
        self._servo_run: _Run | None = None  # the servo motion a stream of targets runs, if any
        self._gone = False  # the control process lost the robot, or exited: the pipe says nothing more
        self._fault_names: tuple[str, ...] = ()
        self._base_motion_setpoints = 0
        self.desk_bringup = uri.get_bool("desk_bringup", False)
        self.desk_force = uri.get_bool("desk_force", False)
        self._desk: Any = None  # the Desk session of a bring-up, and what it changed (given back on close)
        self._brought: Any = None

    @staticmethod
    def _contact(uri: RobotUri) -> tuple[float, float] | None:
        """``sim_contact=HEIGHT,STIFFNESS`` for the stubs' arm (the FCI simulator takes it as --contact)."""
        text = uri.params.get("sim_contact")
        if text is None:
            return None
        try:
            return parse_contact(text)
        except ValueError as exc:
            raise UriError(f"{uri}: sim_contact: {exc}") from None

    @staticmethod
    def _collision_thresholds(uri: RobotUri) -> tuple[tuple[float, ...], ...]:
        raw = uri.params.get("collision", "40,60")
        try:
            torque, force = (float(v) for v in raw.split(","))
        except ValueError:
            raise UriError(f"{uri}: collision=TORQUE,FORCE (Nm, N), e.g. collision=40,60") from None
        # finite: an infinite threshold would switch the collision reflex off unseen
        if not (0 < torque < math.inf and 0 < force < math.inf):
            raise UriError(f"{uri}: collision thresholds must be finite and positive, got {raw}")
        return ((torque,) * 7, (torque,) * 7, (force,) * 6, (force,) * 6)

    # Process and pipe ------------------------------------------------------------------

    def _open(self) -> RobotState:
        if self.desk_bringup and not self.in_process_simulation:
            self._bring_up()
        try:
            return self._start_control()
        except ConnectFailed as refused:
            self._give_back()
            raise self._explained(refused) from None
        except BaseException:
            self._give_back()
            raise

    def _bring_up(self) -> None:
        """Desk first: control, joints unlocked, FCI active (what was changed is given back on close)."""
        from .desk import bring_up
        from .desk.access import open_desk

        desk = open_desk(self.uri)
        try:
            self._brought = bring_up(desk, force=self.desk_force)
        except BaseException:
            desk.close()
            raise
        self._desk = desk
        log.info("%s: brought up through Desk (%s)", self.uri, self._brought)

    def _give_back(self) -> None:
        desk, done, self._desk, self._brought = self._desk, self._brought, None, None
        if desk is None:
            return
        try:
            from .desk import give_back

            give_back(desk, done)
        except RobohalError as exc:
            log.warning("%s: giving the robot back through Desk failed: %s", self.uri, exc)
        finally:
            desk.close()

    def _explained(self, refused: ConnectFailed) -> ConnectFailed:
        """libfranka's refused connection, where the URI names a Desk: Desk says whether FCI is off."""
        if "TCP refused" not in str(refused) or "desk" not in self.uri.params:
            return refused
        try:
            from .desk.access import open_desk

            with open_desk(self.uri) as desk:
                status = desk.status()
        except RobohalError:
            return refused
        if status.fci_active:
            return refused
        return ConnectFailed(f"franka: FCI is off (Desk at {desk.address} says so): robohal franka fci on {self.uri},"
                             f" or connect with desk_bringup=1. ({refused})", address=refused.address)

    def _start_control(self) -> RobotState:
        # A fresh interpreter (not multiprocessing's spawn, which re-imports the user's
        # main module): shared memory is a file in /dev/shm, the pipe a socketpair.
        self._shm_file = tempfile.NamedTemporaryFile(prefix="robohal-franka-", dir=SHM_DIR)
        self._shm_file.truncate(Layout.SIZE * 8)
        self._mmap = mmap.mmap(self._shm_file.fileno(), Layout.SIZE * 8)
        self._shared = SharedBlock(self._mmap)
        parent, child = socket.socketpair()
        self._state_bell = Doorbell.create()
        self._setpoint_bell = Doorbell.create()
        child_fds = [child.fileno(), self._state_bell.write_fd, self._setpoint_bell.read_fd]
        config = ControlConfig(
            host=self.uri.host, impl=self.impl, realtime=self.realtime_config, model=self.model,
            model_name=self.model_name, collision=self.collision,
            stub_max_missed=self.uri.get_int("sim_max_missed", 20, minimum=1),
            stub_ideal=self.uri.get_bool("sim_ideal", False),
            stub_seed=self.uri.get_int("sim_seed", 0, minimum=0) if "sim_seed" in self.uri.params else None,
            stub_contact=self._contact(self.uri),
            stub_hold=self.uri.params.get("sim_hold", HOLD_COMMAND),
            torque_limits=self.torque_limits,
        )
        self._process = subprocess.Popen(
            [sys.executable, "-c", CONTROL_MAIN, str(child_fds[0]), self._shm_file.name, *map(str, child_fds[1:])],
            pass_fds=child_fds, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=CONTROL_ENV,
            # its own session: a Ctrl-C at the terminal reaches this process, which brakes the arm
            # through the loop, not the loop itself (it would drop the robot mid-motion)
            start_new_session=True,
        )
        child.close()
        for fd in child_fds[1:]:
            os.close(fd)  # the child's ends
        self._state_bell.write_fd = self._setpoint_bell.read_fd = -1
        self._conn = Connection(parent.detach())
        self._gone = False
        self._fault_names = ()
        self._reader = threading.Thread(target=_read_pipe, args=(weakref.ref(self), self._conn, self._replies),
                                        name="robohal-franka-pipe", daemon=True)
        self._reader.start()
        try:
            self._conn.send(config)
            self._request("hello", None, timeout=START_TIMEOUT)
            try:
                state = self._request("connect", None, timeout=LIBFRANKA_CONNECT_TIMEOUT + 1.0)
            except ConnectionLost as silent:  # never reached: not a lost robot
                address = f"{self.uri.host}:{TCP_PORT}"
                raise ConnectFailed(f"franka: no FCI answer from {address} within {LIBFRANKA_CONNECT_TIMEOUT + 1.0:g} s"
                                    f" ({silent}). Is this the robot's address, and is FCI active (in Desk)?",
                                    address=address) from None
        except BaseException:
            self._stop_process()
            raise
        self._shm_file.close()  # both processes have it mapped: nothing is left behind if either dies
        self._shm_file = None
        return self._snapshot_state() if state is None else state

    def _close(self) -> None:
        try:
            if self._process is not None and self._process.poll() is None and not self._gone:
                self._request("close", None, timeout=REQUEST_TIMEOUT)
        except RobohalError:
            pass
        finally:
            self._stop_process()
            self._give_back()

    def _stop_process(self) -> None:
        process, self._process = self._process, None
        if self._conn is not None and self._gone:
            self._hang_up()  # after a loss it waits on the pipe for nothing more: its end says so
        if process is not None:
            for stop in (None, process.terminate, process.kill):
                if stop is not None:
                    stop()
                try:
                    process.wait(timeout=5.0)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self._conn is not None:
            self._conn.close()
        for bell in (self._state_bell, self._setpoint_bell):
            if bell is not None:
                bell.close()
        if self._reader is not None:
            self._reader.join(timeout=2.0)
        self._conn = None
        if self._shared is not None:
            self._base_motion_setpoints = self._motion_setpoints()  # the next connection starts at 0
            self._shared = None
        if self._mmap is not None:
            # The map holds a file descriptor of its own: close it now, not whenever the
            # backend is freed.
            with contextlib.suppress(BufferError):  # a view still held elsewhere: the GC frees it
                self._mmap.close()
            self._mmap = None
        if self._shm_file is not None:
            self._shm_file.close()
            self._shm_file = None

    def _hang_up(self) -> None:
        """End the pipe for both sides at once. A plain close would not: our reader thread,
        blocked in a read on it, keeps the socket open, and the control process sees no EOF."""
        try:
            with socket.socket(fileno=os.dup(self._conn.fileno())) as end:
                end.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already gone

    def _on_event(self, kind: str, payload: Any) -> None:
        if kind == "motion_done":
            run_id, result, error, commanded = payload
            error = None if error is None else unpack_error(error)
            self._after_motion(run_id, result, error, commanded)
        elif kind == "fault":
            fault = unpack_error(payload)
            if isinstance(fault, HardwareFault):
                self._fault_names = fault.names
                self._set_fault(fault)  # raised by every call until recover()
            else:
                log.warning("%s: %s", self.uri, fault)
                self._life.hand_over(fault)
        elif kind == "lost":
            self._lose(unpack_error(payload))  # type: ignore[arg-type]
        elif kind == "started":  # a servo motion the control process started for a stream's target
            with self._runs_lock:
                run = self._runs[payload] = _Run(background=True)
                self._life.motion_started()
                _MOVING.add(self)
            self._last_run = self._servo_run = run
        elif kind == "error":
            error = unpack_error(payload)
            log.warning("%s: %s", self.uri, error)
            if isinstance(error, StreamStarved):
                self._life.enter_fault(error)  # the control process braked the stream: recover() resumes
            else:
                self._life.hand_over(error)

    def _lose(self, lost: ConnectionLost) -> None:
        """The link is gone for good: every call raises ``lost`` until close()."""
        self._gone = True
        # told before any caller can meet it: a caller that raises it has seen the log
        self._life.enter_lost(lost, announce=lambda: self._link_lost(lost))

    def _after_motion(self, run_id: int, result: MotionResult, error: BaseException | None,
                      commanded: np.ndarray) -> None:
        """The control process ended a motion (completed, stopped, taken over or failed)."""
        with self._runs_lock:
            run = self._runs.pop(run_id, None)
            last = not self._runs
        if last:
            self.guard.reset(commanded)  # the control process brought it to rest here
        if isinstance(error, ConnectionLost):
            self._lose(error)
        elif isinstance(error, HardwareFault):
            self._fault_names = error.names
            self._set_fault(error)
        elif error is not None:
            log.warning("%s: motion failed (%r); the control process braked it to rest", self.uri, error)
            if run is not None and run.background:
                self._life.hand_over(error)  # for the next command
        if run is not None:
            run.result, run.error = result, error
        if last:
            self._motion_ended()
        if run is not None:
            run.done.set()

    def _motion_ended(self) -> None:
        self._life.motion_ended()
        _MOVING.discard(self)  # (the caller still holds it: freed, if at all, after it returns)

    def _new_run(self, background: bool) -> tuple[int, _Run]:
        """A run id for a motion about to be sent (taking over from any running one)."""
        with self._runs_lock:
            self._life.begin_motion(take_over=True)
            run_id = next(self._run_ids)
            run = self._runs[run_id] = _Run(background)
            _MOVING.add(self)
        return run_id, run

    def _forget_run(self, run_id: int) -> None:
        """A run the control process did not start."""
        with self._runs_lock:
            self._runs.pop(run_id, None)
            last = not self._runs
        if last:
            self._motion_ended()

    def _abandon_runs(self, error: BaseException) -> None:
        """The control process is gone: every run still waiting ends with ``error``."""
        with self._runs_lock:
            runs, self._runs = list(self._runs.values()), {}
        self._motion_ended()
        for run in runs:
            run.error = error
            run.done.set()

    def _tell(self, message: tuple) -> None:
        """Put a message on the pipe to the control process (no answer awaited)."""
        if self._conn is None:
            raise ConnectionLost(f"franka: not connected to {self.uri.host}")
        with self._send_lock:
            try:
                self._conn.send(message)
            except (OSError, ValueError) as exc:
                raise ConnectionLost(f"franka: the control process is gone ({exc})") from None

    def _request(self, kind: str, payload: Any, timeout: float = REQUEST_TIMEOUT) -> Any:
        if self._conn is None:
            raise ConnectionLost(f"franka: not connected to {self.uri.host}")
        request_id = next(self._ids)
        waiter: queue.Queue = queue.Queue()
        self._replies[request_id] = waiter
        try:
            self._tell((kind, request_id, payload))
            try:
                ok, value = waiter.get(timeout=timeout)
            except queue.Empty:
                raise ConnectionLost(f"franka: the control process did not answer {kind!r} within {timeout:.0f} s") from None
            if not ok:
                raise unpack_error(value)
        except ConnectionLost as lost:
            if self.connected:  # a request that meets a lost link leaves it lost: every later call raises it
                self._lose(lost)
            raise
        finally:
            self._replies.pop(request_id, None)
        return value

    # State -----------------------------------------------------------------------------

    def _motion_setpoints(self) -> int:
        """Setpoints of motions the control process ran, over every connection of this backend."""
        live = 0 if self._shared is None else int(self._shared.get(Layout.MOTION_SETPOINTS))
        return self._base_motion_setpoints + live

    def _snapshot_state(self) -> RobotState:
        assert self._shared is not None
        a = self._shared.snapshot()
        bits = a[Layout.ERRORS]
        faults = tuple(name for name, bit in zip(ERROR_NAMES, bits, strict=True) if bit) or ()
        mode = MODES.get(int(a[Layout.ROBOT_MODE]))
        assert mode is not None
        if mode is RobotMode.FAULT and not faults:
            faults = self._fault_names
        return RobotState(
            time=float(a[Layout.TIME]), q=a[Layout.Q], dq=a[Layout.DQ], mode=mode, faults=faults,
            q_commanded=a[Layout.COMMANDED], wrench=a[Layout.WRENCH],
            info={
                "success_rate": float(a[Layout.SUCCESS_RATE]),
                "recoverable": True,
                "q_d": a[Layout.Q_D].copy(),
                "late_cycles": int(a[Layout.LATE]),
                "lost_cycles": int(a[Layout.LOST]),
                "starved_cycles": int(a[Layout.STARVED]),
                "writes": int(a[Layout.WRITES]),
            },
        )

    def _read_now(self) -> RobotState | None:
        return self._snapshot_state() if self._shared is not None else None

    @property
    def figures(self) -> dict[str, Any]:
        """Loop figures from the control process: late and lost cycles, starvation, success rate."""
        state = self._snapshot_state()
        return dict(state.info)

    # Streaming ---------------------------------------------------------------------------

    @property
    def commanded(self) -> np.ndarray:
        """The last setpoint of the running stream or motion; between them, the position the
        robot holds (its ``q_d``), where the next stream or motion starts."""
        shared = self._shared
        if shared is None or not self.connected:
            raise ConnectionLost(f"franka: not connected to {self.uri.host}")
        session = shared.get(Layout.SESSION)
        if session == SESSION_STREAM:
            return super().commanded
        if session in (SESSION_MOTION, SESSION_TORQUE):  # (in a torque session: where the arm is)
            return shared.snapshot()[Layout.COMMANDED]
        return shared.snapshot()[Layout.Q_D]

    def cycle(self, setpoint: ArrayLike | None = None) -> RobotState:
        """One 1 kHz cycle of a stream. The first cycle after connect, a motion, stop() or
        recover() opens the stream where the robot holds (``commanded`` until then): both this
        side's check and the control process's then start from that same position."""
        self._life.check_command("streaming")
        if setpoint is not None:
            self.guard.check_static(setpoint)  # never open a stream for a setpoint that cannot pass
        assert self._shared is not None
        if self._shared.get(Layout.SESSION) != SESSION_STREAM:
            self.guard.reset(self._request("stream", None))
        return super().cycle(setpoint)

    def _send(self, q: np.ndarray) -> None:
        assert self._shared is not None
        self._sent_seq = self._shared.post_setpoint(q)
        if self._setpoint_bell is not None:
            self._setpoint_bell.ring()

    def _receive(self, timeout: float | None) -> RobotState:
        """Wait for the first state after the control process wrote our setpoint."""
        shared = self._shared
        assert shared is not None and self._state_bell is not None
        limit = time.monotonic() + (STATE_TIMEOUT if timeout is None else timeout)
        seq = getattr(self, "_sent_seq", 0)

        def answered() -> bool:
            return shared.get(Layout.CONSUMED) >= seq and shared.get(Layout.STATE_COUNT) > shared.get(Layout.CONSUMED_AT)

        def dropped() -> bool:
            return shared.get(Layout.DROPPED) >= seq > 0

        while True:
            if dropped():
                raise RobohalError("franka: the stream ended (stop() or a fault) before this setpoint reached the"
                                   " robot; it was not sent. The next cycle() opens a new stream where the robot holds.")
            lost, fault = self._life.lost, self._life.fault
            if lost is not None:
                raise lost
            if isinstance(fault, StreamStarved):
                raise fault
            self._life.raise_pending()
            if answered() and not dropped():  # (a drop is marked before it counts as consumed)
                return self._snapshot_state()
            left = limit - time.monotonic()
            if left <= 0:
                raise ConnectionLost(f"franka: no state from {self.uri.host} within {STATE_TIMEOUT:.0f} s")
            shared.set(Layout.PARENT_WAITING, 1)  # then look again: the control process rings only when it sees this
            if not answered():
                self._state_bell.wait(min(left, 0.02))
            shared.set(Layout.PARENT_WAITING, 0)

    # Motions in the control process ----------------------------------------------------------

    def run(self, motion: Motion, *, wait: bool = True) -> MotionResult | MotionHandle:
        """Run ``motion`` in the control process at 1 kHz (it is pickled there, and its
        :class:`~robohal.control.executor.MotionExecutor` runs there); while another runs, it
        takes over from it there at the next cycle; a motion of the other interface (joint
        positions, joint torques) takes over once the running one rests."""
        self.check_motion(motion)
        run_id, run = self._new_run(background=not wait)
        try:
            self._request("run", (run_id, motion))
        except BaseException:
            self._forget_run(run_id)
            raise
        self._last_run = run
        if not wait:
            return MotionHandle(self, run)
        try:
            while not run.done.wait(WAIT_SLICE):  # in slices: a Ctrl-C is seen while the arm moves
                pass
        except KeyboardInterrupt as interrupt:  # Ctrl-C while the arm moves: brake it, then raise
            if self.busy:
                self._brake_after_interrupt(interrupt)
            raise
        if run.error is not None:
            raise run.error
        return run.result

    def steer(self, target: ServoTarget, *, timeout: float = SERVO_TIMEOUT, dynamics: float = 1.0) -> None:
        """A stream's newest target for the motion in the control process that follows it: the
        servo motion (see :meth:`robohal.control.backend.Backend.steer`), or a running impedance,
        whose equilibrium it moves. While that motion runs, a target is sent without waiting for an
        answer (a stream from a busy thread must not wait on the pipe); the control process starts
        a servo motion if it ended meanwhile."""
        target.check(self.model.dof)
        self._life.check_command(moving=True)
        servo = self._servo_run
        if servo is not None and not servo.done.is_set():
            self._tell(("target", 0, (target, timeout, dynamics)))
            return
        run_id, run = self._new_run(background=True)
        try:
            taken = self._request("steer", (run_id, target, timeout, dynamics))
        except BaseException:
            self._forget_run(run_id)
            raise
        if taken == run_id:
            self._last_run = self._servo_run = run
        else:  # the running motion took it (a servo motion, an impedance): the stream's next go to it
            self._forget_run(run_id)
            with self._runs_lock:
                self._servo_run = self._runs.get(taken)

    def cancel_motion(self, run: _Run) -> bool:
        """Brake ``run`` (a :class:`MotionHandle`'s) to rest if it is the newest motion; False when
        it is over, or a newer one takes over from it."""
        if run.done.is_set() or run is not self._last_run:
            return False
        self.stop()
        return True

    def claim_error(self, error: BaseException) -> None:
        self._life.claim(error)

    def _brake_after_interrupt(self, interrupt: BaseException) -> None:
        try:
            with interrupts_held():  # a second Ctrl-C must not leave the arm half braked
                self.stop()
        except Exception as failure:
            interrupt.add_note(f"robohal: braking after this interrupt failed too: {failure!r}")
        else:
            interrupt.add_note("robohal: the motion was braked to rest within the limits")

    def wait(self, timeout: float | None = None) -> MotionResult | None:
        """Wait for the running motion (and any that took over from it); re-raise the error it
        met, if any. None if one still runs after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        # in slices: a thread blocked in one long wait would see a Ctrl-C only when the motion ends
        while not self._life.wait_while_moving(WAIT_SLICE):
            if deadline is not None and time.monotonic() >= deadline:
                return None
        self._life.check_command()
        run = self._last_run
        return None if run is None else run.result

    def _stop_motion(self, timeout: float) -> None:
        """(On close:) nothing to wait for here: the control process brakes a running motion to
        rest itself when it is told to close."""

    def stop(self) -> None:
        """Stop the running motion or stream: brake to rest within the limits, then hold."""
        if self._conn is None or self._gone:
            return
        commanded = self._request("stop", None, timeout=REQUEST_TIMEOUT)
        if not self._life.wait_while_moving(REQUEST_TIMEOUT):
            raise ConnectionLost("franka: the motion did not stop within 10 s")
        # the stopped motion's outcome stays for wait(): a foreground run() waiting for it
        # must return that motion's result, not the one before
        if commanded is not None:
            self.guard.reset(commanded)

    def _recover(self) -> RobotState:
        self._life.wait_while_moving(REQUEST_TIMEOUT)
        self._request("recover", None)
        self._fault_names = ()
        return self._snapshot_state()

    def set_collision_behavior(self, lower_torque: ArrayLike, upper_torque: ArrayLike,
                               lower_force: ArrayLike, upper_force: ArrayLike) -> None:
        """Contact thresholds (Nm per joint, N/Nm per Cartesian axis), as libfranka's."""
        values = []
        for name, value, size in (("lower_torque", lower_torque, 7), ("upper_torque", upper_torque, 7),
                                  ("lower_force", lower_force, 6), ("upper_force", upper_force, 6)):
            array = np.asarray(value, dtype=np.float64)
            if array.shape != (size,) or not np.isfinite(array).all() or (array <= 0).any():
                raise InvalidArgument(f"{name} must be {size} positive finite values")
            values.append(tuple(array.tolist()))
        self._life.check_command("changing the collision behaviour")
        self._request("collision", tuple(values))

    def set_payload(self, payload: Payload) -> None:
        """Send the load on the flange to the robot (libfranka's ``setLoad``): its mass, center of
        mass in the flange frame and inertia, added to the end effector's the robot knows from
        Desk. The robot then compensates its weight; a wrong one reads as an external force."""
        if payload.mass > MAX_PAYLOAD:
            raise InvalidArgument(f"franka: the arm is rated for {MAX_PAYLOAD:g} kg, not {payload.mass:g} kg;"
                                  " nothing was sent")
        self._life.check_command("changing the payload")
        self._request("load", (payload.mass, tuple(payload.center_of_mass),
                               tuple(payload.inertia.ravel(order="F"))))  # column-major, as libfranka's arrays
        self.payload = payload

    def step_timing(self) -> dict[str, float]:
        """What computing each motion setpoint cost the control process (the executor's step: the
        motion, the guard; for a torque motion also the robot's model terms, from the state in hand
        to the checked torque): its CPU time in us, p50, p99 and max, and its wall time (other
        processes' preemption included), over the steps since the last call."""
        return self._request("timing", None)

    @property
    def control_pid(self) -> int | None:
        return None if self._process is None else self._process.pid


def _read_pipe(backend_ref: weakref.ref[FrankaBackend], conn: Connection, replies: dict[int, queue.Queue]) -> None:
    """The pipe reader thread: replies go straight to their waiters, events to the backend.
    It holds the backend only while handing it an event, so a backend dropped unclosed can be
    collected (and closed): its close request's reply needs no backend to arrive."""
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            break
        except Exception as exc:  # an answer that does not unpickle here
            message = ("event", "error", pack_error(RobohalError(f"franka: unreadable message from the control process: {exc}")))
        if message[0] == "reply":
            _, request_id, ok, value = message
            waiter = replies.get(request_id)
            if waiter is not None:
                waiter.put((ok, value))
            continue
        backend = backend_ref()
        if backend is not None:
            backend._on_event(message[1], message[2])
        del backend
    backend = backend_ref()
    if backend is not None and backend.connected and not backend._gone:
        backend._lose(ConnectionLost(f"franka: the control process for {backend.uri.host} exited"))
    lost = None if backend is None else backend._life.lost
    for waiter in list(replies.values()):
        waiter.put((False, pack_error(lost or ConnectionLost("franka: closed"))))
    if backend is not None:
        backend._abandon_runs(lost or ConnectionLost("franka: closed"))
