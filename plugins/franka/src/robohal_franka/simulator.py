"""The FCI simulator: a Franka arm on a loopback address, speaking the robot's
side of the FCI protocol (TCP 1337 commands, 1 kHz UDP state stream, protocol
version 10) so that the real ``pylibfranka.Robot`` connects to it, and its Franka Hand
(TCP 1338 and its UDP state stream, :mod:`.simulated_hand`) for ``pylibfranka.Gripper``.

    robohal sim franka [--address 127.0.0.5] [--model franka.fr3]
        [--loss P] [--stall-after S] [--max-missed N] [--seed N] [--ideal 0|1] [--no-realtime 0|1]
        [--contact HEIGHT,STIFFNESS] [--object WIDTH] [--hold command|measured]
        [--desk v1|web|off] [--desk-user U] [--desk-password P] [--locked 0|1]
        [--selftest-time S] [--brake-time S] [--force-timeout S]

(``python -m robohal_franka.simulator ...`` is the same program.) The first stdout line is the
ready line of every robohal simulator, ``READY franka://<address>?model=<model>`` (with a Desk,
also ``desk=https://<address>[:PORT]`` and the ``desk_fingerprint`` of its certificate); without
``--address`` it binds a free loopback address of its own choosing, named there. Control
lines on stdin (for tests): ``STALL`` (stop the state stream), ``RESUME``,
``LOSS P``, ``REFLEX NAME`` (the next cycle raises that libfranka error), ``PUSH FX FY FZ [TX TY TZ]``
(a hand on the flange: that wrench in N and Nm, base frame, until the next PUSH; ``PUSH 0 0 0``
lets go),
``HAND_SILENT`` (the hand stops answering and streaming, as a hung hand), ``HAND_RESUME``,
``STATS`` (prints one ``STATS {json}`` line), ``QUIT``; for the Desk: ``PILOT BUTTON``,
``SELFTEST_FAIL``, ``SAFETY_ERROR NAME``, ``DESK_HOLDER OWNER``, ``DESK_RELEASE``, ``DESK_STATE``
(prints one ``DESK {json}`` line). With stdin a pipe, the simulator exits at its end, so it
never outlives its launcher; otherwise (a terminal, ``</dev/null``, a background job) it runs
until Ctrl-C or SIGTERM (see :func:`robohal.sim.process.control_lines`). It binds only a
loopback address. One client at a time, as the robot.

The arm tracks like a real one (see :mod:`.simulated_robot`): measured ``q``
lags ``q_d``, sits off it by a small static error and carries noise, all drawn
from ``--seed`` (random when not given; ``STATS`` reports it as ``robot_seed``).
``--ideal 1`` makes it track perfectly (``q == q_d``), for tests that need it. In torque control the
arm moves on its dynamics (:mod:`.dynamics`). ``--contact 0.3,3000[,1]``
puts a plane at z = 0.3 m that pushes back on the flange below it at 3000 N/m, holding it by friction
with coefficient 1 (the estimated external wrench; a Cartesian reflex past the collision threshold). ``--object 0.03`` puts a part
0.03 m wide between the hand's fingers (by default none). ``--hold measured`` makes the robot hold a
finished motion where it measures the arm and report that as ``q_d`` (by default it keeps the last
command; Franka documents neither, see :data:`.simulated_robot.HOLD_MEASURED`).

``--desk v1|web`` serves a simulated Desk (:mod:`.simulated_desk`, :mod:`.desk_server`) on
``https://<address>`` from a thread of this process, and its state gates the FCI (see
:meth:`FciSimulator._gate`); ``--locked 1`` starts the robot as a real one: joints locked, FCI off.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import random
import selectors
import socket
import sys
import time
from typing import TYPE_CHECKING

import numpy as np
from robohal.sim.process import (
    ControlLines,
    SimulatorError,
    announce_ready,
    boolean,
    control_lines,
    free_loopback_host,
)
from robohal.uri import RobotUri

from . import hand_wire, wire
from .facts import ARMS
from .simulated_desk import (
    BRAKE_TIME,
    DEFAULT_DESK_PASSWORD,
    DEFAULT_DESK_USER,
    SELF_TEST_TIME,
    TOKEN_FORCE_TIMEOUT,
    SimulatedDesk,
)
from .simulated_hand import HandServer
from .simulated_robot import (
    COMMAND_WAIT,
    DEFAULT_MAX_MISSED,
    HOLD_COMMAND,
    HOLDS,
    PERIOD,
    SimulatedRobot,
    parse_contact,
)
from .urdf import urdf_text
from .wire import Command, MoveStatus

if TYPE_CHECKING:
    from .desk_server import DeskServer

#: stdin control lines for the simulated Desk (:meth:`FciSimulator._desk_line`)
DESK_LINES = ("PILOT", "SELFTEST_FAIL", "SAFETY_ERROR", "DESK_HOLDER", "DESK_RELEASE", "DESK_STATE")

# s: a state comes at least this long after the one before (our choice). When the simulator itself runs late
# (descheduled on a busy machine), its clock slips instead of catching up with states the client
# could not answer in time: the real robot never runs late, so its lateness must not count against
# the client. Ticks later than LATE_TICK are counted in the stats.
MIN_TICK_GAP = 0.9 * PERIOD
LATE_TICK = 0.0005


def next_tick_after(scheduled: float, now: float) -> float:
    """When the tick due at ``scheduled`` (monotonic s) ran at ``now``, the next one:
    one period on, or :data:`MIN_TICK_GAP` after ``now`` when this tick ran late."""
    return max(scheduled + PERIOD, now + MIN_TICK_GAP)


ADDRESS_ATTEMPTS = 5  # free loopback addresses tried where none is given (another process may take one first)
SETTER_INVALID_ARGUMENT = 2  # a setter command's status kInvalidArgumentRejected (libfranka-common)
SIMULATOR_PRIORITY = 70  # our choice, FIFO: the robot's clock must not wait for other processes (below the client's 99)


def realtime_priority(priority: int) -> bool:
    """Run at real-time (FIFO) priority where the OS permits (root or CAP_SYS_NICE)."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return True
    except (AttributeError, OSError):
        return False


class Client:
    """One connected libfranka client."""

    def __init__(self, sock: socket.socket, address: tuple[str, int]) -> None:
        self.sock = sock
        self.address = address
        self.buffer = b""
        self.udp_port: int | None = None
        self.move_id: int | None = None  # command_id of the running Move, answered at its end


class FciSimulator:
    def __init__(self, address: str, model: str = "franka.fr3", *, loss: float = 0.0,
                 stall_after: float | None = None, max_missed: int = DEFAULT_MAX_MISSED,
                 port: int = wire.TCP_PORT, seed: int | None = None, ideal: bool = False,
                 contact: tuple[float, ...] | None = None, hand_object: float = 0.0,
                 hand_port: int = hand_wire.TCP_PORT, hold: str = HOLD_COMMAND,
                 desk: DeskServer | None = None) -> None:
        if not ipaddress.ip_address(address).is_loopback:
            raise SystemExit(f"the simulator binds loopback addresses only (127.0.0.0/8), not {address}")
        if model not in ARMS:
            raise SystemExit(f"unknown model {model!r}; choose from {sorted(ARMS)}")
        if not 0.0 <= loss < 1.0:
            raise SystemExit("--loss is a probability in [0, 1)")
        self.address = address
        self.model = model
        self.loss = loss
        self.stall_after = stall_after
        self.stalled = False
        self.rng = random.Random(seed)
        self.robot = SimulatedRobot(model, max_missed=max_missed, ideal=ideal, seed=seed, contact=contact, hold=hold)
        self.urdf = urdf_text(model).encode()
        self.selector = selectors.SelectSelector()  # microsecond timeouts (epoll rounds up to whole ms)
        self.port = port
        self.listener: socket.socket | None = None
        self._listen()  # bound even while Desk has FCI off: the port is this simulator's
        self.port = self.listener.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind((address, 0))
        self.udp.setblocking(False)
        self.selector.register(self.udp, selectors.EVENT_READ, "udp")
        self.desk = desk  # its Desk, whose state gates the FCI (see _gate); None: always open
        try:
            self.hand = HandServer(address, self.selector, hand_object, port=hand_port)
        except ValueError as exc:
            raise SystemExit(f"--object: {exc}") from None
        self.client: Client | None = None
        self.connected_at: float | None = None
        self.record = wire.new_state()
        self.running = True
        self.stats = {"states_sent": 0, "states_dropped": 0, "late_ticks": 0, "clients": 0, "bad_datagrams": 0}
        self._periods: list[float] = []
        self._last_send: float | None = None
        self._state_delivered = False  # whether the client has the last state to answer
        if desk is not None:
            self._gate()

    # Main loop --------------------------------------------------------------------

    def serve(self, control: ControlLines | None = None) -> None:
        if control is not None:
            self.selector.register(control, selectors.EVENT_READ, "stdin")
        next_tick = time.monotonic() + PERIOD
        while self.running:
            timeout = next_tick - time.monotonic()
            for key, _ in self.selector.select(max(timeout, 0.0)):
                self._dispatch(key)
            now = time.monotonic()
            if now >= next_tick and self._awaiting_client(now - next_tick):
                continue
            if now >= next_tick:
                self._tick(now)
                if now - next_tick > LATE_TICK:
                    self.stats["late_ticks"] += 1
                next_tick = next_tick_after(next_tick, now)
        self.close()

    def close(self) -> None:
        if self.client is not None:
            self._drop_client()
        self.hand.close()
        self._stop_listening()
        self.selector.close()
        self.udp.close()
        if self.desk is not None:
            self.desk.stop()

    # Desk's gates ----------------------------------------------------------------------

    def _listen(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.address, self.port))
        listener.listen(1)
        listener.setblocking(False)
        self.selector.register(listener, selectors.EVENT_READ, "accept")
        self.listener = listener

    def _stop_listening(self) -> None:
        listener, self.listener = self.listener, None
        if listener is not None:
            self.selector.unregister(listener)
            listener.close()

    def _gate(self) -> None:
        """Apply Desk's state (read, never changed, from here). FCI off: nothing listens on TCP 1337,
        so libfranka's connect is refused ("Connection to FCI refused. Please install FCI feature or
        enable FCI mode in Desk.", pylibfranka 0.21), and a connected client is dropped (our choice).
        The arm's brakes shut (joints locked, a self-test, a safety error): see
        :meth:`SimulatedRobot.set_brakes`; a running motion ends, its Move answered Aborted."""
        desk = self.desk.desk
        changes = desk.changes  # before reading: a change meanwhile is applied on the next tick
        if desk.fci_active() != (self.listener is not None):
            if self.listener is None:
                self._listen()
            else:
                self._stop_listening()
                self._drop_client()
        ended = self.robot.set_brakes(not desk.arm_ready())
        client = self.client
        if ended and client is not None and client.move_id is not None:
            self._reply(Command.MOVE, client.move_id, wire.STATUS.pack(MoveStatus.ABORTED))
            client.move_id = None
        self.desk.applied = changes

    def _dispatch(self, key: selectors.SelectorKey) -> None:
        if isinstance(key.data, tuple):  # the hand's sockets carry their own handler
            key.data[1]()
        elif key.data == "accept":
            self._accept()
        elif key.data == "udp":
            self._read_udp()
        elif key.data == "tcp":
            self._read_tcp()
        elif key.data == "stdin":
            self._read_stdin(key.fileobj)

    def _awaiting_client(self, overdue: float) -> bool:
        """Whether this tick waits a little longer for the client's command (see COMMAND_WAIT)."""
        if overdue >= COMMAND_WAIT or self.client is None or not self._state_delivered:
            return False
        self._read_udp()
        if not self.robot.awaits_command():
            return False
        self.selector.select(min(COMMAND_WAIT - overdue, 0.0002))
        return True

    def _tick(self, now: float) -> None:
        if self.desk is not None:
            self._gate()
        self._read_udp()  # every command that has arrived takes part in this cycle, however late we run
        self.hand.tick(now)
        event = self.robot.tick()
        self._state_delivered = False
        client = self.client
        if client is None:
            return
        if event is not None and client.move_id is not None:
            status = MoveStatus.SUCCESS if event == "finished" else MoveStatus.REFLEX_ABORTED
            self._reply(Command.MOVE, client.move_id, wire.STATUS.pack(status))
            client.move_id = None
        if self.stall_after is not None and self.connected_at is not None and now - self.connected_at > self.stall_after:
            self.stalled = True
        if client.udp_port is None or self.stalled:
            return
        if self.loss and self.rng.random() < self.loss:
            self.stats["states_dropped"] += 1
            return
        self.robot.fill(self.record)
        try:
            self.udp.sendto(self.record.tobytes(), (client.address[0], client.udp_port))
        except OSError:
            return
        self.stats["states_sent"] += 1
        self._state_delivered = True
        if self._last_send is not None and len(self._periods) < 600_000:
            self._periods.append(now - self._last_send)
        self._last_send = now

    # TCP ------------------------------------------------------------------------------

    def _accept(self) -> None:
        if self.listener is None:
            return
        try:
            sock, address = self.listener.accept()
        except OSError:
            return
        if self.client is not None:
            sock.close()  # the robot serves one client at a time
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client = Client(sock, address)
        self.selector.register(sock, selectors.EVENT_READ, "tcp")
        self.stats["clients"] += 1
        self.connected_at = time.monotonic()

    def _drop_client(self) -> None:
        client, self.client = self.client, None
        if client is None:
            return
        self.robot.stop_motion()
        self.connected_at = None
        self.selector.unregister(client.sock)
        client.sock.close()

    def _read_tcp(self) -> None:
        client = self.client
        assert client is not None
        try:
            chunk = client.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop_client()
            return
        client.buffer += chunk
        while len(client.buffer) >= wire.HEADER.size:
            command, command_id, size = wire.HEADER.unpack_from(client.buffer)
            if size < wire.HEADER.size or size > 1 << 20:
                self._drop_client()  # not the FCI protocol
                return
            if len(client.buffer) < size:
                return
            body = client.buffer[wire.HEADER.size:size]
            client.buffer = client.buffer[size:]
            self._handle(client, command, command_id, body)
            if self.client is not client:
                return

    def _reply(self, command: int, command_id: int, body: bytes) -> None:
        if self.client is None:
            return
        try:
            self.client.sock.sendall(wire.message(command, command_id, body))
        except OSError:
            self._drop_client()

    def _handle(self, client: Client, command: int, command_id: int, body: bytes) -> None:
        robot = self.robot
        ok = wire.STATUS.pack(0)
        if command == Command.CONNECT:
            version, udp_port = wire.CONNECT_REQUEST.unpack_from(body)
            status = 0 if version == wire.PROTOCOL_VERSION else 1
            self._reply(command, command_id, wire.CONNECT_RESPONSE.pack(status, wire.PROTOCOL_VERSION))
            if status == 0:
                client.udp_port = udp_port
        elif command == Command.GET_ROBOT_MODEL:
            self._reply(command, command_id, ok + self.urdf)
        elif command == Command.MOVE:
            controller, generator, *fields = wire.MOVE_REQUEST.unpack_from(body)
            asynchronous, maximum_velocities = bool(fields[6]), fields[7:14]
            status = robot.start_motion(controller, generator, asynchronous, maximum_velocities)
            self._reply(command, command_id, wire.STATUS.pack(status))
            if status is MoveStatus.MOTION_STARTED:
                client.move_id = command_id
        elif command == Command.STOP_MOVE:
            if robot.stop_motion() and client.move_id is not None:
                self._reply(Command.MOVE, client.move_id, wire.STATUS.pack(MoveStatus.PREEMPTED))
                client.move_id = None
            self._reply(command, command_id, ok)
        elif command == Command.AUTOMATIC_ERROR_RECOVERY:
            robot.recover()
            self._reply(command, command_id, ok)
        elif command == Command.SET_COLLISION_BEHAVIOR:
            robot.collision_thresholds = np.array(wire.COLLISION_BEHAVIOR.unpack_from(body))
            self._reply(command, command_id, ok)
        elif command == Command.SET_LOAD:
            values = np.array(wire.LOAD_REQUEST.unpack_from(body))
            try:
                robot.load = (float(values[0]), values[1:4], values[4:13])
            except ValueError:  # a setter's kInvalidArgumentRejected (libfranka-common's service types)
                self._reply(command, command_id, wire.STATUS.pack(SETTER_INVALID_ARGUMENT))
                return
            self._reply(command, command_id, ok)
        elif command in (Command.SET_JOINT_IMPEDANCE, Command.SET_CARTESIAN_IMPEDANCE, Command.SET_GUIDING_MODE,
                         Command.SET_EE_TO_K, Command.SET_NE_TO_EE):
            self._reply(command, command_id, ok)
        else:
            self._drop_client()  # an unknown command: the robot closes the connection

    # UDP and stdin --------------------------------------------------------------------

    def _read_udp(self) -> None:
        while True:
            try:
                data, _ = self.udp.recvfrom(2048)
            except (BlockingIOError, OSError):
                return
            command = wire.decode_command(data)
            if command is None:
                self.stats["bad_datagrams"] += 1
                continue
            self.robot.receive(command)

    def _read_stdin(self, control: ControlLines) -> None:
        lines = control.read()
        if lines is None:
            self.selector.unregister(control)
            if control.ends_run:  # the launcher went away
                self.running = False
            return
        for line in lines:
            self.control(line.strip())

    def control(self, line: str) -> None:
        words = line.split()
        if not words:
            return
        verb = words[0].upper()
        if verb == "STALL":
            self.stalled = True
        elif verb == "RESUME":
            self.stalled = False
            self.stall_after = None
        elif verb == "LOSS" and len(words) == 2:
            self.loss = min(max(float(words[1]), 0.0), 0.99)
        elif verb == "LATE" and len(words) == 2 and words[1].isdigit():
            self.robot.inject_late(int(words[1]))
        elif verb == "REFLEX" and len(words) == 2:
            try:
                self.robot.inject_reflex(words[1])
            except ValueError as exc:
                print(f"ERROR {exc}", flush=True)
        elif verb == "PUSH" and len(words) in (4, 7):
            try:
                self.robot.push([float(word) for word in words[1:]] + [0.0] * (7 - len(words)))
            except ValueError as exc:
                print(f"ERROR {exc}", flush=True)
        elif verb in ("HAND_SILENT", "HAND_RESUME"):
            self.hand.silent = verb == "HAND_SILENT"
        elif verb == "STATS":
            print("STATS " + json.dumps(self.report()), flush=True)
        elif verb in DESK_LINES:
            self._desk_line(verb, words[1:])
        elif verb == "QUIT":
            self.running = False

    def _desk_line(self, verb: str, words: list[str]) -> None:
        """A control line for the Desk, run on its server's loop (the Desk's one thread)."""
        if self.desk is None:
            print(f"ERROR {verb}: this simulator has no Desk (--desk v1 or --desk web)", flush=True)
            return
        desk = self.desk.desk

        def run() -> None:
            try:
                if verb == "PILOT" and len(words) == 1:
                    desk.press(words[0].lower())
                elif verb == "SELFTEST_FAIL":
                    desk.fail_next_self_test = True
                elif verb == "SAFETY_ERROR" and len(words) == 1:
                    desk.raise_safety_error(words[0])
                elif verb == "DESK_HOLDER" and len(words) == 1:
                    desk.take_by_someone_else(words[0])
                elif verb == "DESK_RELEASE":
                    desk.release_by_someone_else()
                elif verb == "DESK_STATE":
                    print("DESK " + json.dumps({**desk.snapshot(), "requests": self.desk.requests}), flush=True)
                else:
                    print(f"ERROR {verb}: see the simulator's control lines", flush=True)
            except ValueError as exc:
                print(f"ERROR {exc}", flush=True)

        self.desk.call(run)

    def report(self) -> dict:
        periods = np.array(self._periods) if self._periods else np.zeros(1)
        return {
            **self.stats,
            **self.hand.stats,
            **{f"robot_{k}": v for k, v in self.robot.stats.items()},
            "mode": self.robot.mode.name,
            "errors": list(self.robot.errors),
            "success_rate": self.robot.success_rate,
            "load_mass": self.robot.load[0],
            "period_p50_us": float(np.percentile(periods, 50) * 1e6),
            "period_p99_us": float(np.percentile(periods, 99) * 1e6),
            "period_max_us": float(periods.max() * 1e6),
        }


def start_desk(args: argparse.Namespace) -> DeskServer:
    """The simulated Desk for the options given, serving from its own thread."""
    from .desk_server import DESK_PORT, DeskServer  # aiohttp and cryptography only when a Desk is asked for

    desk = SimulatedDesk(args.desk_user, args.desk_password, locked=args.locked, self_test_time=args.selftest_time,
                         token_force_timeout=args.force_timeout, brake_time=args.brake_time)
    server = DeskServer(desk, args.address, dialect=args.desk, model=args.model,
                        port=DESK_PORT if args.desk_port is None else args.desk_port)
    server.start()
    return server


def start_on_address(args: argparse.Namespace) -> tuple[FciSimulator, DeskServer | None]:
    """The simulator, and its Desk where one is asked for, on ``args.address``; OSError (or the
    Desk's ValueError) where they cannot serve there, with nothing left running."""
    desk = None if args.desk == "off" else start_desk(args)
    try:
        simulator = FciSimulator(args.address, args.model, loss=args.loss, stall_after=args.stall_after,
                                 max_missed=args.max_missed, port=args.port, seed=args.seed, ideal=args.ideal,
                                 contact=args.contact, hand_object=args.object, hand_port=args.hand_port,
                                 hold=args.hold, desk=desk)
    except OSError:
        if desk is not None:
            desk.stop()
        raise
    return simulator, desk


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="robohal sim franka", description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", default=None,
                        help="loopback address to bind, e.g. 127.0.0.5 (default: a free one, named in the ready line)")
    parser.add_argument("--model", default="franka.fr3", choices=sorted(ARMS))
    parser.add_argument("--loss", type=float, default=0.0, help="probability of dropping each state datagram")
    parser.add_argument("--stall-after", type=float, default=None, help="stop the state stream S s after a client connects")
    parser.add_argument("--max-missed", type=int, default=DEFAULT_MAX_MISSED,
                        help="command cycles in a row a client may miss before communication_constraints_violation")
    parser.add_argument("--no-realtime", type=boolean, nargs="?", const=True, default=False, metavar="0|1",
                        help="do not ask for FIFO scheduling (by default the simulated robot takes it where permitted)")
    parser.add_argument("--port", type=int, default=wire.TCP_PORT, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the loss injection and of the arm's tracking error and noise")
    parser.add_argument("--ideal", type=boolean, nargs="?", const=True, default=False, metavar="0|1",
                        help="perfect tracking: measured q equals q_d (tests only)")
    parser.add_argument("--contact", type=parse_contact, default=None, metavar="HEIGHT,STIFFNESS[,FRICTION]",
                        help="a plane at HEIGHT m (base z) pushing back with STIFFNESS N/m on the flange below it"
                             " (and holding it with that friction coefficient, default 0)")
    parser.add_argument("--object", type=float, default=0.0, metavar="WIDTH",
                        help="a part WIDTH m wide between the hand's fingers (0: none)")
    parser.add_argument("--hand-port", type=int, default=hand_wire.TCP_PORT, help=argparse.SUPPRESS)
    parser.add_argument("--hold", choices=HOLDS, default=HOLD_COMMAND,
                        help="the q_d a finished motion leaves: the last command (default) or where the arm is measured")
    parser.add_argument("--desk", choices=("v1", "web", "off"), default="off",
                        help="serve a simulated Desk on https://ADDRESS: the Desk API v1 or the older web session")
    parser.add_argument("--desk-user", default=DEFAULT_DESK_USER, help="the Desk's user name")
    parser.add_argument("--desk-password", default=DEFAULT_DESK_PASSWORD, help="the Desk's password")
    parser.add_argument("--desk-port", type=int, default=None, help=argparse.SUPPRESS)  # default 443
    parser.add_argument("--locked", type=boolean, nargs="?", const=True, default=False, metavar="0|1",
                        help="start as a robot does: joints locked, FCI off (needs --desk)")
    parser.add_argument("--selftest-time", type=float, default=SELF_TEST_TIME, metavar="S",
                        help="how long the Desk's safety self-tests take")
    parser.add_argument("--brake-time", type=float, default=BRAKE_TIME, metavar="S",
                        help="how long the joints' brakes take to open or close")
    parser.add_argument("--force-timeout", type=float, default=TOKEN_FORCE_TIMEOUT, metavar="S",
                        help="how long a forced take of control waits for the Pilot's circle button (web dialect)")
    args = parser.parse_args(argv)
    if args.locked and args.desk == "off":
        parser.error("--locked 1 needs a Desk to unlock the joints and activate FCI: add --desk v1 or --desk web")
    if args.address is not None and not ipaddress.ip_address(args.address).is_loopback:
        parser.error(f"the simulator binds loopback addresses only (127.0.0.0/8), not {args.address}")
    picked = args.address is None  # ours to choose: another free address is as good
    for _ in range(ADDRESS_ATTEMPTS if picked else 1):
        try:
            if picked:
                args.address = free_loopback_host(args.port)
            simulator, desk = start_on_address(args)
            break
        except SimulatorError as exc:  # no free address at all
            failure = str(exc)
        except (OSError, ValueError) as exc:  # taken since it was found free, or its hand's or Desk's port is
            failure = f"cannot serve on {args.address}: {exc}"
    else:
        print(failure, file=sys.stderr)
        return 2
    if not args.no_realtime:
        realtime_priority(SIMULATOR_PRIORITY)
    port = None if simulator.port == wire.TCP_PORT else simulator.port
    params = {"model": args.model}
    if desk is not None:  # where its Desk is, and the certificate it made (a client pins it)
        params.update(desk=desk.url, desk_fingerprint=desk.fingerprint)
    announce_ready(RobotUri("franka", host=args.address, port=port, params=params))
    try:
        simulator.serve(control_lines(sys.stdin))
    except KeyboardInterrupt:
        simulator.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
