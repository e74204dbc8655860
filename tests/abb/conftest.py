"""Shared fixtures of the ABB tests (EGM: simulated controller processes, a raw sensor socket)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from robohal.sim.process import SimulatorProcess, free_port, python_module
from robohal.uri import RobotUri, parse_uri
from robohal_abb.simulator import TOOL_PARAMS

EGM_MODEL = "abb.irb1410"


class EgmSim:
    """A simulated controller process and the concrete URI of the sensor port it streams to."""

    def __init__(self, process: SimulatorProcess, uri: RobotUri, sensor_port: int) -> None:
        self.process = process
        self.uri = uri
        self.sensor_port = sensor_port
        self.lines: list[str] = []

    def send(self, line: str) -> None:
        self.process.send(line)

    def _read(self, timeout: float) -> str | None:
        line = self.process.readline(timeout)
        if line is not None:
            self.lines.append(line)
        return line

    def wait_line(self, prefix: str, timeout: float = 10.0) -> str:
        """The next stdout line starting with ``prefix`` (earlier lines are kept in ``lines``)."""
        for line in self.lines:
            if line.startswith(prefix):
                self.lines.remove(line)
                return line
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self._read(min(0.5, max(deadline - time.monotonic(), 0.01)))
            if line is not None and line.startswith(prefix):
                self.lines.remove(line)
                return line
        raise AssertionError(f"the simulator printed no {prefix!r} line within {timeout} s; saw {self.lines[-5:]}")

    def stats(self) -> dict:
        self.send("STATS")
        return json.loads(self.wait_line("STATS ")[6:])

    def connect_uri(self, **params: str | None) -> str:
        """The URI to connect with, parameters set (None removes one: ``robot=None``)."""
        return str(self.uri.with_params(**params))


@pytest.fixture
def egm_sim() -> Iterator[Callable[..., EgmSim]]:
    """Start simulated controllers: ``egm_sim("--loss", "0.1", mode="pose")``; all are stopped after the test."""
    started: list[SimulatorProcess] = []

    def start(*args: str, mode: str = "joint", model: str = EGM_MODEL) -> EgmSim:
        port = free_port()
        argv = python_module("robohal_abb.simulator", "--sensor", f"127.0.0.1:{port}", "--model", model,
                             "--mode", mode, *args)
        process = SimulatorProcess(argv, params={"mode": mode})
        started.append(process)
        # the ready line names the sensor's port, the controller's host and its tool's signals
        tool = {} if "--tool" in args and args[args.index("--tool") + 1] == "none" else TOOL_PARAMS
        expected = parse_uri(f"abb-egm://127.0.0.1:{port}?model={model}&robot=127.0.0.1&mode={mode}")
        assert process.uri == expected.with_params(**tool)
        return EgmSim(process, process.uri, port)

    yield start
    for process in started:
        process.stop()


class RawSensor:
    """The PC side of EGM with nothing of robohal's backend: one UDP socket."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", port))
        self.robot: tuple[str, int] | None = None

    def receive_raw(self, timeout: float = 2.0) -> bytes:
        self.sock.settimeout(timeout)
        data, self.robot = self.sock.recvfrom(65536)
        return data

    def receive(self, timeout: float = 2.0):
        from robohal_abb import wire

        return wire.decode_robot(self.receive_raw(timeout), 6)

    def collect(self, seconds: float, reply: Callable | None = None) -> list:
        """Every robot message for ``seconds`` (decoded), answering each with ``reply(message)`` if given."""
        from robohal_abb import wire

        messages = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                message = wire.decode_robot(self.receive_raw(max(end - time.monotonic(), 0.01)), 6)
            except TimeoutError:
                break
            messages.append(message)
            if reply is not None:
                answer = reply(message)
                if answer is not None:
                    self.sock.sendto(answer, self.robot)
        return messages

    def send_joints(self, q) -> None:
        from robohal_abb import wire

        assert self.robot is not None, "no robot message yet"
        self.sock.sendto(wire.encode_sensor_joints(1, 0, np.asarray(q, dtype=float)), self.robot)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw_sensor() -> Iterator[Callable[[int], RawSensor]]:
    made: list[RawSensor] = []

    def make(port: int) -> RawSensor:
        sensor = RawSensor(port)
        made.append(sensor)
        return sensor

    yield make
    for sensor in made:
        sensor.close()


class BareRobot:
    """A robot side with nothing of the simulator: one UDP socket on ``host`` (loopback) that
    sends the ``EgmRobot`` datagrams a test writes, and counts the answers it gets."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        import robohal

        self.model = robohal.get_model(EGM_MODEL)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, 0))
        self.sock.setblocking(False)
        self.address = self.sock.getsockname()

    def datagram(self, seqno: int, q_deg=(0.0,) * 6, at: float | None = None, motor_state: str = "on") -> bytes:
        """A complete robot message; ``at`` is its feedback time (default: now)."""
        from robohal_abb import wire

        q = np.radians(np.asarray(q_deg, dtype=float))
        pose = self.model.forward(q)
        return wire.encode_robot(seqno=seqno, tm=seqno * 4, time=time.time() if at is None else at, q=q,
                                 q_planned=q, pose=pose, pose_planned=pose, motor_state=motor_state)

    def send(self, port: int, datagram: bytes) -> None:
        self.sock.sendto(datagram, ("127.0.0.1", port))

    def answers(self) -> int:
        """How many datagrams came back since the last call."""
        count = 0
        for _ in range(100_000):  # bounded: a backend answers at most one per robot message
            try:
                self.sock.recv(65536)
            except BlockingIOError:
                break
            count += 1
        return count

    def connect(self, uri: str, datagram: bytes, timeout: float = 10.0):
        """``robohal.connect(uri)`` while this robot sends ``datagram`` (the same one, again and
        again: every copy after the first is a duplicate) until the backend has taken it in."""
        import robohal

        result: list = []

        def opening() -> None:
            try:
                result.append(robohal.connect(uri))
            except BaseException as exc:
                result.append(exc)

        port = parse_uri(uri).port
        opener = threading.Thread(target=opening)
        opener.start()
        deadline = time.monotonic() + timeout
        while opener.is_alive() and time.monotonic() < deadline:
            self.send(port, datagram)
            opener.join(0.004)
        opener.join(timeout)
        assert result, "connect() did not return"
        if isinstance(result[0], BaseException):
            raise result[0]
        return result[0]

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def bare_robot() -> Iterator[Callable[..., BareRobot]]:
    """Make bare robot sockets: ``bare_robot("127.0.0.2")``; all are closed after the test."""
    made: list[BareRobot] = []

    def make(host: str = "127.0.0.1") -> BareRobot:
        robot = BareRobot(host)
        made.append(robot)
        return robot

    yield make
    for robot in made:
        robot.close()


# Robot Web Services (--rws 6|7) ---------------------------------------------------------------------

@pytest.fixture
def rws_template() -> Callable[..., bytes]:
    """The RAPID template with the simulated cell's tool named in its I/O arrays, as rapid/SETUP.md
    section 4 tells a cell to do: the module a user uploads (``rws_template(broken=True)``: with a
    syntax error)."""
    return _rws_template


def _rws_template(*, broken: bool = False) -> bytes:
    from pathlib import Path

    import robohal_abb

    text = (Path(robohal_abb.__file__).parent / "rapid" / "RobohalEgm.mod").read_text()
    text = text.replace('CONST string DO_NAMES{4} := ["", "", "", ""];',
                        'CONST string DO_NAMES{4} := ["doVacuum", "", "", ""];')
    text = text.replace('CONST string DI_NAMES{4} := ["", "", "", ""];',
                        'CONST string DI_NAMES{4} := ["diVacuumOn", "diPartPresent", "", ""];')
    if broken:  # an IF whose ENDIF went missing: a syntax error the controller reports
        text = text.replace("        ENDIF\n        ! \\NoWaitCond", "        ! \\NoWaitCond", 1)
    return text.encode()


class RwsCell:
    """A simulated controller with RWS and the UDP port its EGM stream goes to (nothing answers it)."""

    def __init__(self, process: SimulatorProcess, sensor: socket.socket) -> None:
        self.process = process
        self.sensor = sensor
        self.url = process.uri.params["rws"]
        self.lines: list[str] = []

    def datagrams(self, seconds: float) -> int:
        """How many robot messages arrive within ``seconds``."""
        count = 0
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.sensor.settimeout(left)
            try:
                self.sensor.recv(65536)
            except (TimeoutError, OSError):
                break
            count += 1
        return count

    def wait_stream(self, flowing: bool, timeout: float = 10.0) -> None:
        """Until robot messages flow (a message within 0.2 s), or until they stopped (none for 0.5 s)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if flowing and self.datagrams(0.2) > 0:
                return
            if not flowing and self.datagrams(0.5) == 0:
                return
        raise AssertionError(f"the EGM stream {'never started' if flowing else 'went on'} within {timeout} s")

    def state(self) -> dict:
        self.process.send("RWS STATE")
        deadline = time.monotonic() + 10.0
        while (left := deadline - time.monotonic()) > 0:
            line = self.process.readline(left)
            if line is None:
                break
            if line.startswith("RWS "):
                return json.loads(line[4:])
            self.lines.append(line)
        raise AssertionError("the simulator did not answer RWS STATE")


@pytest.fixture
def rws_cell() -> Iterator[Callable[..., RwsCell]]:
    """Start simulated controllers with RWS: ``rws_cell(6)``, ``rws_cell(7, "--rws-password", "x")``;
    each is stopped after the test."""
    started: list[tuple[SimulatorProcess, socket.socket]] = []

    def start(version: int, *args: str) -> RwsCell:
        sensor = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sensor.bind(("127.0.0.1", 0))
        port = sensor.getsockname()[1]
        argv = python_module("robohal_abb.simulator", "--sensor", f"127.0.0.1:{port}", "--model", EGM_MODEL,
                             "--comm-timeout", "0", "--rws", str(version), *args)
        try:
            process = SimulatorProcess(argv)
        except BaseException:
            sensor.close()
            raise
        started.append((process, sensor))
        return RwsCell(process, sensor)

    yield start
    for process, sensor in started:
        process.stop()
        sensor.close()
