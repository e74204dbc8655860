"""The EGM backend: robohal's side of ABB Externally Guided Motion (the "sensor").

    abb-egm://HOST:PORT?model=abb.irb1410[&robot=IP][&timeout=S][&connect_timeout=S][&mode=joint|pose]
        [&sample_rate=MS][&reply=ahead|fresh]

``HOST:PORT`` is the UDP address this binds (default ``0.0.0.0:6510``), the one
the controller's UDP Unicast Device points at. The controller is the UDP
client: it sends an ``EgmRobot`` every 4 ms and takes the answer from the
address it sent to.

Only the robot is heard. With ``robot=IP`` that is every datagram from that
address. Without it, the backend locks onto the sender (host and port) of the
first valid robot message after connect and counts every other sender as
foreign: never answered, never taken as state. A restart of the controller's
EGM run from the same address is a new session as usual. Once the locked robot
has been silent for longer than ``timeout`` (the link is reported lost), the
next valid robot message locks anew, from whatever address (a controller back
from a reboot may send from another port); that starts a new session. The first
sender wins: on a network where anyone may be first, name the controller with
``robot=``. Binding a non-loopback address without it logs a warning naming
the locked address.

Whoever waits for the robot reads the socket: the control loop while it
streams, a background thread between motions. Each read drains every datagram
that is waiting, drops what is bad (counted by reason), foreign, or older than
what it has (reordered or duplicated, told from a new session by the robot's
feedback time), and keeps only the newest robot message. The control loop's :meth:`_send` answers that
message, once, with the checked setpoint; :meth:`_receive` waits for the next
one. Between motions the thread answers each new message itself with the last
setpoint, so the controller's ``\\CommTimeout`` never fires while the robot
holds still; if the control loop stopped calling while the setpoints still moved,
the thread brakes the arm to rest within the limits first. What it sends is
committed to the setpoint guard, so a loop that resumes is checked against it.
A new EGM session (seqno back to 0) makes the backend hold the *measured*
position; it never replays a target from the old session.

Which robot message a setpoint answers (``reply``): with ``ahead`` (the default)
``cycle(q)`` answers the *next* robot message with ``q``, encoded before it arrives:
the shortest answer, and nothing is lost for a planned trajectory (every motion of
robohal's own), whose setpoints do not depend on the state. With ``fresh``, ``cycle(q)``
answers the message whose state the last ``cycle()`` returned, if it is still fresh:
a command computed from a state reaches the controller one period (4 ms) sooner, what a
feedback loop on the measured state wants, at the price of a longer answer (the state is
built and handed over before the answer can be sent).

I/O signals and a gripper (``do=``, ``di=``, ``ao=``, ``ai=``, ``gripper=...``) ride on
the same messages, as EGM's RAPID data: see :mod:`robohal_abb.signals`.

``rws=http(s)://CONTROLLER`` names the cell's Robot Web Services (with ``rws_start``,
``rws_dialect``, ``rws_fingerprint``, ``rws_ca``, ``rws_timeout``): ``connect()`` checks the cell
first, or starts it, ``close()`` stops what it started, and an ended stream's error gets the
controller's event log's reason; see :mod:`robohal_abb.cell_link`.

``mode=joint`` (EGMRunJoint) sends joint targets; ``mode=pose`` (EGMRunPose,
tool0 in the base frame) sends the model's forward kinematics of the same
checked joint setpoint. The joints on the wire are the model's joints in
degrees: for parallelogram robots (IRB 1410) the model already uses the
controller's joint-3 convention.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import select
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
from robohal import (
    Backend,
    ConnectFailed,
    ConnectionLost,
    HardwareFault,
    LimitViolation,
    RobohalError,
    RobotMode,
    RobotState,
    UriError,
)
from robohal.control.backend import start_link_thread
from robohal.kinematics import Kinematics
from robohal.state import Array
from robohal.uri import RobotUri

from . import stamps, wire
from .signals import EgmSignals, SignalLayout

log = logging.getLogger("robohal.abb")

DEFAULT_HOST = "0.0.0.0"
DEFAULT_TIMEOUT = 2.0  # s; our choice: twice the common \CommTimeout (1 s), so the controller gives up first
#: a seqno this far behind the newest is a restarted session even when its feedback time is not
#: later (a controller clock set back); our choice: a loopback or cell LAN reorders a datagram by
#: one or two places, and the simulator's --reorder by one
REORDER_WINDOW = 8
#: robot messages kept for the timing figures (about 4 s at 250 Hz)
TIMING_WINDOW = 1000
#: the timing figures in each state are refreshed after this many replies (the first time
#: after FIRST_TIMING, so a short first motion already reports them)
TIMING_REFRESH = 250
FIRST_TIMING = 25
#: a robot message older than this many periods is not answered any more; our choice: by then the
#: next message is due, and the manual's advice is one answer per robot message
STALE_AFTER_PERIODS = 2
#: s the hold thread rests while the control loop streams
HOLD_THREAD_REST = 0.025
#: periods without a send before the hold thread answers for the control loop: a user's stream that
#: stopped is braked after 2.5; a motion the executor runs gets 12 (our choice). The executor's thread
#: is delayed by the interpreter now and then (a CI run met over 10 ms); braking in between would
#: leave its plan nothing to continue from, and the controller keeps the last target meanwhile.
TAKEOVER_PERIODS = 2.5
MOTION_TAKEOVER_PERIODS = 12


class SessionRestarted(ConnectionLost):
    """The controller started a new EGM session (seqno 0) while a motion streamed.
    The motion is aborted; the backend holds the measured position and is ready
    for the next command."""


@dataclass(slots=True)
class _Received:
    message: wire.RobotMessage
    arrival: float  # wall-clock seconds (kernel timestamp where available)
    arrival_monotonic: float
    address: tuple[str, int]
    index: int  # counts valid robot messages since connect
    session: int
    previous: wire.RobotMessage | None  # the one before, in the same session (for the velocity)
    replied: bool = False

    @property
    def dq(self) -> list[float]:
        """Joint velocity (rad/s) from this and the previous message of the session."""
        previous = self.previous
        dt = self.message.time - previous.time if previous is not None else 0.0
        if dt <= 0:
            return [0.0] * len(self.message.q)
        assert previous is not None
        return [(a - b) / dt for a, b in zip(self.message.q, previous.q, strict=True)]


class EgmBackend(Backend):
    """ABB EGM, sensor side (see the module docstring)."""

    answers_each_message = True  # reply=ahead: answer each robot message right after decoding it

    checks = ("position", "velocity", "acceleration")

    def __init__(self, uri: RobotUri, model: Kinematics) -> None:
        if model.dof != 6:
            raise UriError(f"{uri}: abb-egm streams the 6 axes of an ABB arm; the model has {model.dof} joints")
        options = self.read_options(uri)
        super().__init__(uri, model, options["sample_ms"] / 1000.0)
        self.host = uri.host or DEFAULT_HOST
        self.port = uri.port if uri.port is not None else wire.DEFAULT_PORT
        self.timeout = options["timeout"]
        self.connect_timeout = options["connect_timeout"]
        self.mode = options["mode"]
        self.answers_each_message = options["reply"] == "ahead"
        robot = uri.params.get("robot")
        try:
            self.robot_ip = socket.gethostbyname(robot) if robot else None
        except OSError:
            raise UriError(f"{uri}: robot={robot!r} is not an address") from None
        # without robot=: the (host, port) of the first valid robot message, the only sender heard
        self._locked: tuple[str, int] | None = None
        self._exposed = False  # bound where others than this computer can send (found at connect: no lookup before)
        self._sock: socket.socket | None = None
        self._poll: Any = None  # the socket's poller's poll()
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()
        self._lock = threading.RLock()  # the shared state below; held briefly, never while waiting
        self._reader = threading.Lock()  # whoever holds it reads the socket
        self._newest: _Received | None = None
        self._consumed = 0  # index of the last message the control loop used
        self._count = 0
        self._session = 0
        self._restart_pending = False
        self._target: Array | None = None  # the last target sent (or the measured position to hold)
        self._last_send = 0.0  # monotonic time of the control loop's last reply
        self._sending = False  # the control loop is in _send (waiting for a message to answer)
        self._held_since_send = False  # the hold thread answered since the control loop last did
        self._sensor_seqno = 0
        self._encoder = wire.SensorEncoder()
        self._decoder = wire.RobotDecoder(model.dof)  # used by whoever holds _reader
        self._started = time.monotonic()
        self._seqno_gaps = 0
        self._lost = 0
        self._bad = 0
        self._replies = 0
        self._intervals: deque[float] = deque(maxlen=TIMING_WINDOW)
        self._latencies: deque[float] = deque(maxlen=TIMING_WINDOW)
        self._timing: dict[str, float | None] = self.timing()
        self._timing_due = FIRST_TIMING  # reply count at the next refresh
        self._thread_error: BaseException | None = None
        #: the I/O signals the URI declares (robot.io, robot.gripper), sent and read with every message
        self.signals = EgmSignals(SignalLayout.from_uri(uri), self)
        #: the cell over Robot Web Services, when the URI names it (rws=...): checked or started at
        #: connect, asked why a stream ended
        self.cell_link = _cell_link(uri)

    @staticmethod
    def read_options(uri: RobotUri) -> dict[str, Any]:
        """The URI's timing and mode parameters, checked (also before a bundled simulator starts)."""
        sample_ms = uri.get_float("sample_rate", 4.0, minimum=4.0)
        timeout = uri.get_float("timeout", DEFAULT_TIMEOUT, minimum=0.01)
        mode = uri.params.get("mode", "joint")
        if mode not in ("joint", "pose"):
            raise UriError(f"{uri}: mode must be joint or pose, got {mode!r}")
        reply = uri.params.get("reply", "ahead")
        if reply not in ("ahead", "fresh"):
            raise UriError(f"{uri}: reply must be ahead or fresh, got {reply!r}")
        return {"sample_ms": sample_ms, "timeout": timeout, "mode": mode, "reply": reply,
                "connect_timeout": uri.get_float("connect_timeout", timeout, minimum=0.01)}

    # Lifecycle ------------------------------------------------------------------------

    def _open(self) -> RobotState:
        self._exposed = not _loopback(self.host)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            # No SO_REUSEADDR: on UDP it lets a second socket bind the same port, and the robot's
            # messages would go to whichever connection bound last while the other one answers too.
            stamps.enable(sock)
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRNOTAVAIL:  # often the controller's address given as the host
                why = (f"{self.host} is not an address of this computer. The host is where this computer listens"
                       f" for the robot (0.0.0.0, or this computer's own IP on the robot's network); the"
                       f" controller's address goes in robot=, as in abb-egm://0.0.0.0:{self.port}?robot={self.host}")
            else:
                why = "is another program, or another robohal connection, using that port?"
            raise ConnectFailed(f"abb-egm: cannot bind UDP {self.host}:{self.port}: {exc.strerror or exc} ({why})",
                                address=f"{self.host}:{self.port}") from None
        sock.setblocking(False)
        self._sock = sock
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        self._poll = poller.poll
        self._closing.clear()
        with self._lock:
            self._newest, self._consumed, self._count, self._target = None, 0, 0, None
            self._locked = None  # each connection locks onto its robot anew
            self._restart_pending, self._thread_error = False, None
        self.signals.reset()
        self._thread = start_link_thread(self, type(self)._hold_step, self._closing, f"robohal-egm-{self.port}")
        try:
            if self.cell_link is not None:  # the socket is bound: the first robot message is heard
                self.cell_link.bring_up()
            received = self._wait_active(self.connect_timeout, what="connect")
        except BaseException:
            self._close()
            raise
        with self._lock:
            self._restart_pending = False
            self._consumed = received.index
            self._target = np.array(received.message.q)
        self.signals.start(received.message.rapid)  # the outputs as the controller has them: connecting changes none
        return self._state_of(received)

    def _close(self) -> None:
        if self.cell_link is not None:  # while the hold thread still answers: RAPID ends the run itself
            self.cell_link.leave()
        self._closing.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        with self._reader:
            if self._sock is not None:
                self._sock.close()
                self._sock = None

    def _activate(self, state: RobotState) -> None:
        super()._activate(state)
        with self._lock:
            self._target = self._holdable(np.array(state.q))

    def _holdable(self, q: Array) -> Array | None:
        """The measured position as a target to hold, or None if the model's limits refuse it:
        then nothing is held (the controller keeps its own last target until its CommTimeout)
        and the state reports the fault."""
        if self._admissible(q):
            return q
        self._anomaly("measured_outside_limits", f"the robot reports joints outside the model's limits"
                      f" ({np.degrees(q).round(2).tolist()} deg): nothing is held")
        return None

    # Reading the socket ---------------------------------------------------------------

    def _pump(self, wait: float, index: int) -> None:
        """Wait up to ``wait`` s for datagrams and take in everything waiting, unless a
        message newer than ``index`` is already there or another thread is reading."""
        if not self._reader.acquire(timeout=max(wait, 0.0)):
            return
        try:
            newest, sock, poll = self._newest, self._sock, self._poll
            if sock is None or (newest is not None and newest.index > index):
                return
            # Sleeps until the datagram comes. Spinning from just before the next message is due
            # was measured (benchmarks/egm.py): with a core of its own it halved the round trip
            # and took 66 us off the state age, but on a core shared with other work (the
            # controller's process, a busy job) it kept that work waiting and the p99 age rose 30-75%.
            if not poll(max(wait, 0.0) * 1000.0):
                return
            arrivals = []
            while True:  # drain: a receiver that reads one datagram per cycle falls behind
                try:
                    datagram, ancillary, _, address = sock.recvmsg(65536, stamps.ANCILLARY_SIZE)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError as exc:
                    self._anomaly("receive_errors", f"receiving failed: {exc}")
                    break
                arrivals.append((datagram, stamps.arrival_time(ancillary), address))
                if not poll(0):  # cheaper than a read that fails: the robot is waiting
                    break
            if len(arrivals) > 1:
                self.counters["datagrams_drained"] += len(arrivals) - 1
            for datagram, arrival, address in arrivals:
                self._accept(datagram, arrival, address)
        finally:
            self._reader.release()

    def _streaming(self) -> bool:
        """The control loop answers: it is sending now, or sent within the last cycles."""
        takeover = MOTION_TAKEOVER_PERIODS if self.busy else TAKEOVER_PERIODS
        return self._sending or time.monotonic() - self._last_send < takeover * self.period

    def _hold_step(self) -> float | None:
        """Between motions: read the socket and answer every new message with the held target
        (one step of the hold thread; returns the pause before the next, None to end). While
        the control loop streams it reads the socket itself and this thread rests."""
        if self._streaming():
            # rest long: waking every cycle would take the GIL from the control loop; after a
            # motion the first few messages stay unanswered, which EGM tolerates (it keeps the last target)
            return HOLD_THREAD_REST
        try:
            newest = self._newest
            self._pump(0.02, newest.index if newest is not None else 0)
            self._maybe_hold()
        except BaseException as exc:  # surfaced to the control loop on its next call
            log.error("%s: the hold thread stopped: %r (the robot is no longer answered)", self.uri, exc)
            self._thread_error = exc
            return None
        return 0.0

    def _accept(self, datagram: bytes, arrival: float, address: tuple[str, int]) -> None:
        counters = self.counters
        if self.robot_ip is not None:
            if address[0] != self.robot_ip:
                self._anomaly("foreign_datagrams", f"ignored a datagram from {address[0]}:{address[1]} (robot={self.robot_ip})")
                return
        elif self._locked is not None and address != self._locked and not self._robot_lost():
            self._anomaly("foreign_datagrams", f"ignored a datagram from {address[0]}:{address[1]} (the robot is"
                          f" {self._locked[0]}:{self._locked[1]}, the sender of the first robot message)")
            return
        try:
            message = self._decoder.decode(datagram)
        except wire.BadMessage as bad:
            self._anomaly(f"bad_{bad.reason}", f"bad datagram from {address[0]}: {bad}")
            self._bad += 1
            return
        with self._lock:
            previous = self._newest
            if self.robot_ip is None and address != self._locked:
                self._lock_onto(address)
                previous = None  # another sender: its seqnos continue nothing of the old one's
            new_session = previous is None
            if previous is not None:
                last = previous.message.seqno
                if message.seqno <= last:
                    # The seqno alone cannot tell a copy or a late datagram from a new session
                    # (seqno 0 again, even right after an old session's first message, seqno 0;
                    # or a few seqnos on when its first messages were lost). The robot's feedback
                    # time can: a copy carries the same time, a late datagram an earlier one, a
                    # new session a later one. Far behind is a new session whatever the time says
                    # (a controller whose clock was set back).
                    late = message.time <= previous.message.time
                    if late and message.seqno == last:
                        self._anomaly("duplicates_dropped", f"dropped a repeated message (seqno {last})")
                        return
                    if late and last - message.seqno <= REORDER_WINDOW:
                        self._anomaly("reordered_dropped", f"dropped a late message (seqno {message.seqno} after {last})")
                        return
                    new_session = True
                elif message.seqno > last + 1:
                    self._seqno_gaps += 1
                    self._lost += message.seqno - last - 1
            if new_session:
                self._session += 1
                if self._newest is not None:
                    counters["sessions_restarted"] += 1
                    log.info("%s: the EGM session restarted (seqno %d after %d): holding the measured position",
                             self.uri, message.seqno, self._newest.message.seqno)
                    self._restart_pending = True
                    # hold the measured position, never the old target (nothing, if it is outside the limits)
                    self._target = self._holdable(np.array(message.q))
                    if self.guard.active and self._target is not None:  # from rest there: the old motion is over
                        self.guard.reset(self._target)
            else:
                assert previous is not None
                self._intervals.append(arrival - previous.arrival)
            self._count += 1
            counters["robot_messages"] += 1
            self._newest = _Received(message, arrival, time.monotonic(), address, self._count, self._session,
                                     None if new_session else previous.message)

    def _robot_lost(self) -> bool:
        """The locked robot has been silent for longer than ``timeout``: the link is lost (every
        call says so), and the next valid robot message may lock onto a new sender."""
        newest = self._newest
        return newest is None or time.monotonic() - newest.arrival_monotonic > self.timeout

    def _lock_onto(self, address: tuple[str, int]) -> None:
        """From now on only ``address`` is the robot (no robot= given); call with the lock held."""
        old, self._locked = self._locked, address
        where = f"{address[0]}:{address[1]}"
        if old is not None:
            self.counters["robot_relocked"] += 1
            log.warning("%s: the robot at %s:%d was silent for more than %g s; now answering %s, the sender of the"
                        " next robot message", self.uri, old[0], old[1], self.timeout, where)
        elif self._exposed:
            log.warning("%s: no robot= given: answering only %s, the sender of the first robot message, and counting"
                        " every other sender as foreign; give robot=IP to name the controller", self.uri, where)
        else:
            log.info("%s: answering only %s, the sender of the first robot message", self.uri, where)

    def _stale(self, received: _Received) -> bool:
        """Too old to answer: a newer message is due, and a late answer could even reach the
        controller after it restarted the session (a target from the old session)."""
        # the kernel's arrival stamp, not when we read it: a datagram that waited in the
        # socket buffer is as old as it is
        return time.time() - received.arrival > STALE_AFTER_PERIODS * self.period

    def _maybe_hold(self) -> None:
        """Between motions, answer the newest message: with the held target, or with the
        next braking step if the last setpoints still moved (a control loop that stopped
        mid-motion must not stop the arm dead). What goes out is committed to the guard,
        so a stream that resumes is checked against what the robot was really sent."""
        with self._lock:
            newest = self._newest
            if (newest is None or newest.replied or self._target is None or self._streaming()
                    or self._stale(newest)):
                return
            q = self._target
            guard = self.guard
            if guard.active:
                step, resting = guard.brake()
                if not resting:
                    if self._admissible(step):
                        q = step
                        self.counters["hold_braking_replies"] += 1
                    else:  # braking would cross a coupled (linkage) limit: stopping short is the lesser harm
                        q = guard.last
                        guard.reset(q)  # held from now on: no braking from the stop's own jump
                        self._anomaly("hold_braking_refused", "braking the last motion would cross a linkage limit:"
                                      " stopped short instead")
                guard.commit(q)
                self._target = q
                self._held_since_send = True
            self._reply(newest, q)
            self.counters["hold_replies"] += 1

    def _wait_newer(self, index: int, timeout: float | None = None) -> _Received:
        """The newest robot message once one newer than ``index`` is in, reading the
        socket meanwhile; :class:`ConnectionLost` when the robot stays silent."""
        limit = self.timeout if timeout is None else min(timeout, self.timeout)
        began = time.monotonic()
        while True:
            self._raise_thread_error()
            newest = self._newest
            if newest is not None and newest.index > index:
                return newest
            last = newest.arrival_monotonic if newest is not None else began
            left = last + limit - time.monotonic()
            if left <= 0:
                self.counters["silence_timeouts"] += 1
                raise ConnectionLost(
                    f"abb-egm: the robot has been silent for more than {limit:g} s (last seqno "
                    f"{newest.message.seqno if newest else '-'}): the EGM run ended, RAPID stopped, or the link broke"
                    + self._stream_end_note())
            self._pump(min(left, 0.05), index)

    def _wait_active(self, timeout: float, what: str) -> _Received:
        """The first robot message whose EGM run follows targets (motors on, RAPID and MCI running)."""
        deadline = time.monotonic() + timeout
        seen: _Received | None = None
        while True:
            self._raise_thread_error()
            newest = self._newest
            if newest is not None and (seen is None or newest.index > seen.index):
                seen = newest
                if newest.message.active:
                    return newest
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._pump(min(left, 0.05), seen.index if seen is not None else 0)
        if seen is not None:
            names = seen.message.faults()
            raise HardwareFault(
                f"abb-egm: the robot streams EGM but does not follow targets ({', '.join(names)}): turn the motors"
                " on and (re)start the RAPID program's EGM loop" + self._stream_end_note(), names=names,
                recoverable=True)
        bad = sum(v for k, v in self.counters.items() if k.startswith("bad_"))
        foreign = self.counters["foreign_datagrams"]
        message = (
            f"abb-egm: no EGM message from the robot on UDP {self.host}:{self.port} within {timeout:g} s ({what}). "
            "Check that the RAPID program runs EGMRunJoint (or EGMRunPose), that the controller's UDP Unicast Device "
            f"points at this computer's IP and port {self.port}, and that no firewall drops UDP {self.port}"
            f" (datagrams seen: {bad} undecodable or incomplete, {foreign} from other addresses)"
            + self._stream_end_note() + ".")
        if what == "connect":  # never reached: not a lost robot (a reconnect loop must not spin on it)
            raise ConnectFailed(message, address=f"{self.host}:{self.port}")
        raise ConnectionLost(message)

    # The wire ----------------------------------------------------------------------------

    def _encode(self, seqno: int, q: Array) -> tuple[int, bytes, tuple[float, ...] | None]:
        """The answer carrying ``q`` and the outputs as sensor message ``seqno`` (call with the
        lock held), with the outputs it carries."""
        tm = int((time.monotonic() - self._started) * 1000.0)
        outputs = self.signals.to_robot
        if self.mode == "joint":
            return seqno, self._encoder.joints(seqno, tm, q, outputs), outputs
        return seqno, wire.encode_sensor_pose(seqno, tm, self.model.forward(q), outputs), outputs

    def _reply(self, received: _Received, q: Array,
               prepared: tuple[int, bytes, tuple[float, ...] | None] | None = None) -> None:
        """Answer one robot message with ``q`` (call with the lock held). ``prepared``:
        the answer encoded ahead of time, used if its seqno is still the next one and the
        outputs did not change since (an answer never carries an output's old value)."""
        self._sensor_seqno += 1
        if prepared is not None and prepared[0] == self._sensor_seqno and prepared[2] is self.signals.to_robot:
            datagram = prepared[1]
        else:
            datagram = self._encode(self._sensor_seqno, q)[1]
        sock = self._sock
        if sock is None:
            raise ConnectionLost("abb-egm: not connected")
        # stamped before sendto: on loopback the receiver may run inside the call
        latency = time.time() - received.arrival
        sock.sendto(datagram, received.address)
        received.replied = True
        self._replies += 1
        self._latencies.append(latency)

    def _send(self, q: Array) -> None:
        with self._lock:
            self._raise_thread_error()
            self._check_session()
            self._sending = True  # from now on the control loop answers, not the hold thread
        try:
            while True:
                with self._lock:
                    newest = self._newest
                    if newest is not None and not newest.replied and not self._stale(newest):
                        self._recheck(q)
                        self._reply(newest, q)
                        self._target = q
                        self._last_send = time.monotonic()
                        self._consumed = max(self._consumed, newest.index)
                        break
                # answered already (by the hold thread, at the hand-over) or too old: answer the next one
                self._wait_newer(newest.index if newest is not None else 0)
                with self._lock:
                    self._check_session()
        finally:
            self._sending = False
        self._refresh_timing()  # after the reply: off the robot's critical path

    def _answer_next(self, q: Array) -> RobotState:
        """Wait for the next robot message and answer it with ``q`` at once; the state
        is built after the reply, off the robot's critical path."""
        self._sending = True  # the hold thread stands down, or it could answer first with the old target
        self._refresh_timing()  # while no message waits: the state's age would carry it
        try:
            with self._lock:  # encoded while the robot is not waiting for it
                prepared = self._encode(self._sensor_seqno + 1, q)
            received = self._wait_newer(self._consumed)
            answered = False
            with self._lock:
                self._check_session()
                newest = self._newest
                if newest is not None and not newest.replied and not self._stale(newest):
                    self._recheck(q)
                    self._reply(newest, q, prepared)
                    self._target = q
                    self._last_send = time.monotonic()
                    self._consumed = max(self._consumed, newest.index)
                    received, answered = newest, True
            if not answered:  # answered already or too old: the next message gets the answer
                self._send(q)
                received = self._newest
                with self._lock:
                    self._consumed = max(self._consumed, received.index)
        finally:
            self._sending = False
        return self._state_of(received)

    def _refresh_timing(self) -> None:
        if self._replies >= self._timing_due:
            self._timing = self.timing()
            self._timing_due = self._replies + TIMING_REFRESH

    def _admissible(self, q: Array) -> bool:
        """Whether ``q`` is inside the model's joint set, coupled limits included."""
        try:
            self.model.check_joints(q, "braking setpoint")
        except LimitViolation:
            return False
        return True

    def _recheck(self, q: Array) -> None:
        """The setpoint was checked before the hold thread answered (and braked) meanwhile:
        check it again against what was really sent (call with the lock held)."""
        if self._held_since_send:
            self.guard.check(q)
            self._held_since_send = False

    def _receive(self, timeout: float | None) -> RobotState:
        received = self._wait_newer(self._consumed, timeout)
        with self._lock:
            self._consumed = received.index
            self._check_session()
        return self._state_of(received)

    def _check_session(self) -> None:
        """A new session while streaming: hold the measured position and abort the motion."""
        if not self._restart_pending:
            return
        newest = self._newest
        assert newest is not None
        self._restart_pending = False
        self._consumed = newest.index
        state = self._state_of(newest)
        self._state = state
        self._activate(state)
        raise SessionRestarted(
            f"abb-egm: the controller started a new EGM session (seqno {newest.message.seqno}); the motion was"
            " aborted and the robot holds its measured position")

    def _read_now(self) -> RobotState | None:
        with self._lock:
            self._raise_thread_error()
            newest = self._newest
            if newest is None:
                return None
            if time.monotonic() - newest.arrival_monotonic > self.timeout:
                raise ConnectionLost(f"abb-egm: the robot has been silent for more than {self.timeout:g} s"
                                     + self._stream_end_note())
            if self._restart_pending:  # between motions a new session is no error: just hold
                self._restart_pending = False
                state = self._state_of(newest)
                self._activate(state)
                return state
        return self._state_of(newest)

    def _recover(self) -> RobotState:
        if self.cell_link is not None:  # with rws_start=1: motors on and RAPID started again
            self.cell_link.restart()
        received = self._wait_active(self.connect_timeout, what="recover")
        with self._lock:
            self._restart_pending = False
            self._consumed = received.index
        return self._state_of(received)

    def fresh_message(self) -> wire.RobotMessage:
        """The newest robot message (for the I/O signals): :class:`ConnectionLost` once the robot
        has been silent for longer than ``timeout``, as every other call."""
        with self._lock:
            if self._sock is None:
                raise RobohalError(f"{self.uri} is not connected")
            newest = self._newest
            if newest is None or time.monotonic() - newest.arrival_monotonic > self.timeout:
                raise ConnectionLost(f"abb-egm: the robot has been silent for more than {self.timeout:g} s:"
                                     " its I/O signals are unknown and no output reaches it")
            return newest.message

    def _raise_thread_error(self) -> None:
        if self._thread_error is not None:
            error, self._thread_error = self._thread_error, None
            raise ConnectionLost(f"abb-egm: the receive thread failed: {error!r}") from error

    def _fault_of(self, state: RobotState) -> HardwareFault:
        fault = super()._fault_of(state)
        note = self._stream_end_note()
        if not note:
            return fault
        return HardwareFault(f"{fault}{note}", names=fault.names, recoverable=fault.recoverable)

    def _stream_end_note(self) -> str:
        """Why the stream ended, in the controller's words, when the URI names its RWS (else "")."""
        if self.cell_link is None:
            return ""
        newest = self._newest
        return self.cell_link.note(newest.index if newest is not None else None)

    # State ------------------------------------------------------------------------------

    def _state_of(self, received: _Received) -> RobotState:
        message = received.message
        q = np.array(message.q)  # one array: checked here, then the state's own
        faults = () if message.active else message.faults()
        if not self._admissible(q):  # a model that does not fit this robot, or a bad datagram
            faults = (*faults, "joints_outside_model_limits")
        dq = received.dq
        if faults:
            mode = RobotMode.FAULT
        elif max(map(abs, dq)) > 1e-3:
            mode = RobotMode.MOVING
        else:
            mode = RobotMode.IDLE
        info: dict[str, Any] = {
            "motor_state": message.motor_state,
            "rapid_state": message.rapid_state,
            "mci_state": message.mci_state,
            "converged": message.converged,
            "utilization": message.utilization,
            "seqno": message.seqno,
            "session": received.session,
            "seqno_gaps": self._seqno_gaps,
            "lost_messages": self._lost,
            "bad_datagrams": self._bad,
            "q_planned": message.q_planned,
            "recoverable": True,
            **self._timing,
        }
        force = message.force
        return RobotState.handed_over(message.time, q, np.array(dq), mode, faults, self._target, info,
                                      None if force is None else np.array(force))

    def timing(self) -> dict[str, float | None]:
        """Reply latency (robot message arrival -> answer sent) and robot message
        intervals over the last few seconds, in seconds, and the rate held."""
        # sorted lists, not numpy: np.percentile's first call takes milliseconds, far more than a
        # cycle, and this first runs in the middle of a motion
        latencies, intervals = sorted(self._latencies), sorted(self._intervals)
        return {
            "reply_latency_p50": _percentile(latencies, 50),
            "reply_latency_p99": _percentile(latencies, 99),
            "interval_p50": _percentile(intervals, 50),
            "interval_p99": _percentile(intervals, 99),
            "rate_hz": len(intervals) / sum(intervals) if intervals else None,
        }

    @property
    def statistics(self) -> dict[str, Any]:
        """Counters (datagrams by fate, replies, sessions) and timing figures."""
        return {**dict(self.counters), **self.timing(), "seqno_gaps": self._seqno_gaps, "lost_messages": self._lost}


def _cell_link(uri: RobotUri):
    """The cell's RWS link for a URI that names ``rws=``, else None (nothing of RWS is imported)."""
    if not any(key == "rws" or key.startswith("rws_") for key in uri.params):
        return None
    from .cell import CellOptions
    from .cell_link import CellLink

    options = CellOptions.from_uri(uri)
    return CellLink(options) if options is not None else None


def _loopback(host: str) -> bool:
    """Whether binding ``host`` listens on this computer's loopback only (127.0.0.0/8)."""
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def _percentile(ordered: list[float], q: float) -> float | None:
    """The ``q``-th percentile of sorted values (linear between the nearest ranks)."""
    if not ordered:
        return None
    rank = (len(ordered) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)

