"""A simulated Franka Hand and the server of its protocol (:mod:`.hand_wire`), part of the
FCI simulator: the real ``pylibfranka.Gripper`` connects to it on TCP port 1338 of the
simulator's address.

The model: two fingers whose opening ``width`` moves at the commanded speed; a part of
``object_width`` m (0: none) sits between them, so closing stops there. Rules and where
they come from:

- A command's arguments out of range (width outside [0, max_width], speed outside
  (0, HAND_MAX_SPEED], force outside [0, HAND_MAX_FORCE], a negative epsilon, NaN) are
  answered FAIL, which libfranka raises as "Command failed!" (its mapping of the status).
  The limits are the facts in :mod:`.facts`; which exact bounds the hand's firmware uses is
  not published, so these are ours, from the data sheet's figures.
- Grasp: success when the fingers come to rest between ``width - epsilon_inner`` and
  ``width + epsilon_outer`` (libfranka's ``Gripper::grasp`` documentation). The fingers close
  until they are blocked (on the part, or on each other at 0), as the hand closes under force;
  when they are narrower than ``width + epsilon_outer`` they first open to it (our choice: the
  hand must be able to reach around the part). A successful grasp sets ``is_grasped`` until
  the next command or a stop.
- Move: blocked by the part, the real hand stalls for a long time (up to about 100 s,
  franka_ros issue 281) before it gives up; this one answers UNSUCCESSFUL after
  :data:`STALL_TIME` (our choice, so that tests do not wait).
- Stop: ends the running command, which is answered ABORTED, and releases the grip
  (libfranka issue 111: stop releases the force of a grasp).
- A new command while one runs takes over; the one it replaced is answered ABORTED (our choice).
- Homing: closes until blocked, then opens fully; it sets ``max_width`` to the travel.
  The hand starts homed (Desk homes it when the robot starts; our simplification).
"""

from __future__ import annotations

import math
import selectors
import socket
from dataclasses import dataclass

from . import hand_wire as wire
from .facts import HAND_MAX_FORCE, HAND_MAX_SPEED, HAND_MAX_WIDTH
from .hand_wire import Command, Status

STALL_TIME = 1.0  # s a blocked move pushes before it is answered UNSUCCESSFUL (see above)
HOMING_SPEED = HAND_MAX_SPEED  # m/s (our choice)
STATE_PERIOD = 0.01  # s between state datagrams (our choice: the rate is not published)
TEMPERATURE = 30  # deg C, constant


@dataclass
class Running:
    """The command the fingers carry out, and whom to answer."""

    client: HandClient
    command: Command
    command_id: int
    stages: list[float]  # the widths to reach in turn
    speed: float
    grasp: tuple[float, float, float] | None = None  # width, epsilon inner, epsilon outer
    stalled_for: float = 0.0


class HandClient:
    def __init__(self, sock: socket.socket, address: tuple[str, int]) -> None:
        self.sock = sock
        self.address = address
        self.buffer = b""
        self.udp_port: int | None = None


class SimulatedHand:
    """The fingers: :meth:`start` a command, :meth:`advance` them in time."""

    def __init__(self, object_width: float = 0.0) -> None:
        if not 0.0 <= object_width < HAND_MAX_WIDTH:
            raise ValueError(f"the object must be narrower than the hand's {HAND_MAX_WIDTH} m, got {object_width}")
        self.object_width = object_width
        self.width = HAND_MAX_WIDTH
        self.max_width = HAND_MAX_WIDTH
        self.is_grasped = False

    def blocked_at(self) -> float:
        """Where closing fingers stop: on the part when it is between them, else on each other."""
        return self.object_width if self.object_width and self.width >= self.object_width - 1e-9 else 0.0

    def refusal(self, command: Command, body: tuple[float, ...]) -> bool:
        """Whether a command's arguments are out of the hand's range (answered FAIL)."""
        if command == Command.MOVE:
            width, speed = body
            return not (0.0 <= width <= self.max_width and 0.0 < speed <= HAND_MAX_SPEED)
        if command == Command.GRASP:
            width, inner, outer, speed, force = body
            return not (0.0 <= width <= self.max_width and 0.0 < speed <= HAND_MAX_SPEED
                        and 0.0 <= force <= HAND_MAX_FORCE and inner >= 0.0 and outer >= 0.0)
        return False

    def stages(self, command: Command, body: tuple[float, ...]) -> tuple[list[float], float]:
        if command == Command.HOMING:
            return [self.blocked_at(), HAND_MAX_WIDTH], HOMING_SPEED
        if command == Command.MOVE:
            return [body[0]], body[1]
        width, _inner, outer, speed, _force = body
        reach = min(width + outer, self.max_width)
        first = [reach] if self.width < reach else []
        return [*first, 0.0], speed

    def advance(self, running: Running, dt: float) -> Status | None:
        """Move the fingers ``dt`` s on; the command's status once it ends, else None."""
        goal = running.stages[0]
        floor = self.blocked_at() if goal < self.width else 0.0
        target = max(goal, floor)
        step = running.speed * dt
        self.width = target if abs(target - self.width) <= step else self.width + math.copysign(step, target - self.width)
        if self.width != target:
            return None
        if target > goal:  # blocked before the goal
            if running.grasp is not None:
                return self.grasped(running.grasp)
            running.stalled_for += dt
            return Status.UNSUCCESSFUL if running.stalled_for >= STALL_TIME else None
        running.stages.pop(0)
        if running.stages:
            return None
        if running.command == Command.HOMING:
            self.max_width = HAND_MAX_WIDTH
        if running.grasp is not None:  # closed fully on nothing
            return self.grasped(running.grasp)
        return Status.SUCCESS

    def grasped(self, grasp: tuple[float, float, float]) -> Status:
        width, inner, outer = grasp
        self.is_grasped = width - inner <= self.width <= width + outer
        return Status.SUCCESS if self.is_grasped else Status.UNSUCCESSFUL


class HandServer:
    """The hand's side of the protocol on ``address``:1338, in the FCI simulator's loop:
    it registers its sockets with the simulator's selector and is called on every tick."""

    def __init__(self, address: str, selector: selectors.BaseSelector, object_width: float = 0.0,
                 port: int = wire.TCP_PORT) -> None:
        self.hand = SimulatedHand(object_width)
        self.selector = selector
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((address, port))
        self.listener.listen(4)
        self.listener.setblocking(False)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind((address, 0))
        selector.register(self.listener, selectors.EVENT_READ, ("hand", self._accept))
        self.clients: list[HandClient] = []
        self.running: Running | None = None
        self.silent = False  # a hung hand (a control line): no answers, no states
        self.started: float | None = None
        self.last_tick: float | None = None
        self.next_state = 0.0
        self.stats = {"hand_clients": 0, "hand_commands": 0, "hand_states_sent": 0}

    def close(self) -> None:
        for client in list(self.clients):
            self._drop(client)
        self.selector.unregister(self.listener)
        self.listener.close()
        self.udp.close()

    # Ticks ---------------------------------------------------------------------------

    def tick(self, now: float) -> None:
        if self.started is None:
            self.started = self.last_tick = now
        dt, self.last_tick = now - self.last_tick, now
        if self.running is not None and not self.silent:
            status = self.hand.advance(self.running, dt)
            if status is not None:
                self._finish(status)
        if now >= self.next_state and not self.silent:
            self.next_state = now + STATE_PERIOD
            self._send_state(now)

    def _send_state(self, now: float) -> None:
        hand = self.hand
        record = wire.STATE.pack(int((now - self.started) * 1000) & 0xFFFFFFFF, hand.width, hand.max_width,
                                 hand.is_grasped, TEMPERATURE)
        for client in self.clients:
            if client.udp_port is not None:
                try:
                    self.udp.sendto(record, (client.address[0], client.udp_port))
                    self.stats["hand_states_sent"] += 1
                except OSError:
                    pass

    def _finish(self, status: Status) -> None:
        running, self.running = self.running, None
        if running is not None:
            self._reply(running.client, running.command, running.command_id, wire.STATUS.pack(status))

    # TCP -----------------------------------------------------------------------------

    def _accept(self) -> None:
        try:
            sock, address = self.listener.accept()
        except OSError:
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client = HandClient(sock, address)
        self.clients.append(client)
        self.stats["hand_clients"] += 1
        self.selector.register(sock, selectors.EVENT_READ, ("hand", lambda: self._read(client)))

    def _drop(self, client: HandClient) -> None:
        if client in self.clients:
            self.clients.remove(client)
            self.selector.unregister(client.sock)
            client.sock.close()
        if self.running is not None and self.running.client is client:
            self.running.client = None  # the fingers carry on; there is no one to answer

    def _reply(self, client: HandClient | None, command: int, command_id: int, body: bytes) -> None:
        if client is None or client not in self.clients:
            return
        try:
            client.sock.sendall(wire.message(command, command_id, body))
        except OSError:
            self._drop(client)

    def _read(self, client: HandClient) -> None:
        try:
            chunk = client.sock.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(client)
            return
        client.buffer += chunk
        while len(client.buffer) >= wire.HEADER.size:
            command, command_id, size = wire.HEADER.unpack_from(client.buffer)
            if size < wire.HEADER.size or size > 1024 or command not in Command._value2member_map_:
                self._drop(client)  # not the gripper protocol
                return
            if len(client.buffer) < size:
                return
            body, client.buffer = client.buffer[wire.HEADER.size:size], client.buffer[size:]
            self._handle(client, Command(command), command_id, body)

    def _handle(self, client: HandClient, command: Command, command_id: int, body: bytes) -> None:
        self.stats["hand_commands"] += 1
        if command == Command.CONNECT:
            version, udp_port = wire.CONNECT_REQUEST.unpack_from(body)
            status = wire.ConnectStatus.SUCCESS if version == wire.VERSION \
                else wire.ConnectStatus.INCOMPATIBLE_LIBRARY_VERSION
            self._reply(client, command, command_id, wire.CONNECT_RESPONSE.pack(status, wire.VERSION))
            if status == wire.ConnectStatus.SUCCESS:
                client.udp_port = udp_port
            return
        if self.silent:
            return
        if command == Command.STOP:
            if self.running is not None:
                self._finish(Status.ABORTED)
            self.hand.is_grasped = False
            self._reply(client, command, command_id, wire.STATUS.pack(Status.SUCCESS))
            return
        layout = {Command.MOVE: wire.MOVE_REQUEST, Command.GRASP: wire.GRASP_REQUEST}.get(command)
        try:
            values = layout.unpack(body) if layout is not None else ()
        except Exception:  # a body of the wrong size
            self._reply(client, command, command_id, wire.STATUS.pack(Status.FAIL))
            return
        if self.hand.refusal(command, values):
            self._reply(client, command, command_id, wire.STATUS.pack(Status.FAIL))
            return
        if self.running is not None:
            self._finish(Status.ABORTED)
        self.hand.is_grasped = False
        stages, speed = self.hand.stages(command, values)
        grasp = (values[0], values[1], values[2]) if command == Command.GRASP else None
        self.running = Running(client, command, command_id, stages, speed, grasp)
