"""The Franka Hand as ``robot.gripper``, through the official ``pylibfranka.Gripper``.

``franka://ROBOT_IP?model=franka.fr3&gripper=1`` names the hand (the FCI simulator's robots
carry it by default). pylibfranka holds the GIL while a gripper command blocks, for as long
as the fingers move, so each ``pylibfranka.Gripper`` lives in a process of its own (a fresh
interpreter, as the arm's control process): one carries out the commands (homing, move,
grasp), the other reads the state and sends ``stop`` while a command runs. Neither touches
the arm's 1 kHz control process, and every call here has a deadline: a hand that stops
answering is a :class:`~robohal.errors.ConnectionLost` after it, never a hang, and the arm
moves on meanwhile. The hand's own errors keep its text ("libfranka gripper: Command failed!").
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import weakref
from multiprocessing.connection import Connection
from typing import Any

from robohal.control.tools import Gripper, GripperLimits, GripperState
from robohal.errors import ConnectFailed, ConnectionLost, HardwareFault, RobohalError, UriError
from robohal.uri import RobotUri

from .facts import HAND_MAX_FORCE, HAND_MAX_SPEED, HAND_MAX_WIDTH

HAND_MAIN = "import sys; from robohal_franka.hand import serve; sys.exit(serve(int(sys.argv[1]), sys.argv[2]))"
LIMITS = GripperLimits(max_speed=HAND_MAX_SPEED, max_force=HAND_MAX_FORCE, default_speed=0.05, default_force=20.0)
CONNECT_TIMEOUT = 30.0  # s: a fresh interpreter importing pylibfranka, then libfranka's connect
READ_TIMEOUT = 3.0  # s: read_once waits for the next state datagram (libfranka gives up after its own timeout)
STOP_TIMEOUT = 5.0
# s added to a command's travel time before the hand counts as gone. Our choice: the hand needs
# time to build up its force and to answer; a move blocked by an object stalls far longer on a
# real hand (franka_ros issue 281), and is then lost here rather than waited for.
COMMAND_SLACK = 10.0


def hand_for(uri: RobotUri, backend: Any) -> FrankaHand | None:
    """The ``gripper`` tool of a ``franka://`` robot: the hand when the URI names it (``gripper=1``)."""
    if not uri.get_bool("gripper", False):
        return None
    if uri.params.get("impl") == "stubs":
        raise UriError(f"{uri}: impl=stubs has no Franka Hand; use the FCI simulator or a robot")
    return FrankaHand(uri.host)


class HandProcess:
    """One ``pylibfranka.Gripper`` in its own interpreter, called through a pipe with a deadline."""

    def __init__(self, host: str, role: str) -> None:
        self.role = role
        parent, child = socket.socketpair()
        self.process = subprocess.Popen([sys.executable, "-c", HAND_MAIN, str(child.fileno()), host],
                                        pass_fds=[child.fileno()], stdin=subprocess.DEVNULL, start_new_session=True)
        child.close()
        self.conn = Connection(parent.detach())
        self.lock = threading.Lock()
        self.lost: str | None = None

    def call(self, method: str, args: tuple = (), *, timeout: float) -> Any:
        with self.lock:
            if self.lost is not None:
                raise ConnectionLost(self.lost)
            try:
                self.conn.send((method, args))
                if not self.conn.poll(timeout):
                    self.gone(f"the Franka Hand did not answer {method} within {timeout:g} s")
                answer = self.conn.recv()
            except (EOFError, OSError):
                self.gone(f"the Franka Hand's {self.role} process ended during {method}")
            kind, value = answer
            if kind == "ok":
                return value
            if kind == "fault":
                raise HardwareFault(value, names=("gripper",))
            if kind == "lost":
                self.gone(value)
            raise RobohalError(value)

    def gone(self, why: str) -> None:
        self.lost = why
        self.stop()
        raise ConnectionLost(why)

    def stop(self) -> None:
        stop_process(self.process, self.conn)


def stop_process(process: subprocess.Popen, conn: Connection) -> None:
    try:
        conn.close()
    except OSError:
        pass
    if process.poll() is None:
        process.kill()
    process.wait()


class FrankaHand(Gripper):
    """The Franka Hand (see the module's notes). Widths in m, speeds in m/s, forces in N."""

    def __init__(self, host: str) -> None:
        super().__init__(LIMITS, name="Franka Hand")
        self.host = host
        self._commands: HandProcess | None = None
        self._monitor: HandProcess | None = None
        self._finalizer: weakref.finalize | None = None

    def _connect(self) -> None:
        processes = [HandProcess(self.host, "command"), HandProcess(self.host, "monitor")]
        # a dropped robot's hand processes end with it
        self._finalizer = weakref.finalize(self, _stop_all, [(p.process, p.conn) for p in processes])
        try:
            for process in processes:
                process.call("ready", timeout=CONNECT_TIMEOUT)
        except ConnectionLost as silent:  # never reached: not a lost hand
            self._finalizer()
            raise ConnectFailed(f"franka: {silent} (does the robot have a hand, set up in Desk? gripper=0 leaves it"
                                " out)", address=self.host) from None
        except BaseException:
            self._finalizer()
            raise
        self._commands, self._monitor = processes

    def _disconnect(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self._commands = self._monitor = None

    def _link(self, process: HandProcess | None) -> HandProcess:
        if process is None:
            raise RobohalError("the Franka Hand is not connected")
        return process

    def _read(self) -> GripperState:
        width, max_width, is_grasped, time = self._link(self._monitor).call("read_once", timeout=READ_TIMEOUT)
        return GripperState(width, max_width, is_grasped, time)

    def _stop(self) -> bool:
        return self._link(self._monitor).call("stop", timeout=STOP_TIMEOUT)

    def _homing(self) -> bool:
        return self._link(self._commands).call("homing", timeout=2 * HAND_MAX_WIDTH / HAND_MAX_SPEED + COMMAND_SLACK)

    def _move(self, width: float, speed: float) -> bool:
        return self._link(self._commands).call("move", (width, speed), timeout=self._travel(speed))

    def _grasp(self, width: float, speed: float, force: float, epsilon_inner: float, epsilon_outer: float) -> bool:
        return self._link(self._commands).call("grasp", (width, speed, force, epsilon_inner, epsilon_outer),
                                               timeout=self._travel(speed))

    @staticmethod
    def _travel(speed: float) -> float:
        return 2 * HAND_MAX_WIDTH / speed + COMMAND_SLACK  # at most open, then close, the whole way


def _stop_all(processes: list[tuple[subprocess.Popen, Connection]]) -> None:
    for process, conn in processes:
        stop_process(process, conn)


# The hand process ------------------------------------------------------------------------


def serve(fd: int, host: str) -> int:
    """Run one ``pylibfranka.Gripper`` for the parent on the pipe ``fd``: each request
    ``(method, args)`` is answered ``("ok", value)``, ``("fault", text)`` (the hand refused),
    ``("lost", text)`` (the link broke) or ``("error", text)``."""
    import pylibfranka

    conn = Connection(fd)
    try:
        method, _ = conn.recv()
    except EOFError:
        return 0
    try:
        gripper = pylibfranka.Gripper(host)
    except Exception as exc:  # NetworkException, IncompatibleVersion: the hand cannot be reached
        conn.send(("lost", f"cannot connect to the Franka Hand at {host}: {exc}"))
        return 1
    conn.send(("ok", None))
    while True:
        try:
            method, args = conn.recv()
        except (EOFError, OSError):
            return 0
        try:
            if method == "read_once":
                state = gripper.read_once()
                value: Any = (state.width, state.max_width, bool(state.is_grasped), state.time.to_sec())
            else:
                value = bool(getattr(gripper, method)(*args))
            answer = ("ok", value)
        except pylibfranka.CommandException as exc:
            answer = ("fault", str(exc))
        except pylibfranka.NetworkException as exc:
            answer = ("lost", f"the link to the Franka Hand broke: {exc}")
        except Exception as exc:
            answer = ("error", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(answer)
        except OSError:
            return 0
        if answer[0] == "lost":
            return 1
