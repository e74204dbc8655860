"""Fixtures: the planar-arm firmware in simavr (through the C harness) and the Python emulator, each
in its own process on a pty, driven with pyserial."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import serial
from robohal.sim.process import parse_ready_line, python_module
from robohal_arduino_planar import firmware
from robohal_arduino_planar import wire as p

SIMULATORS = ("firmware", "emulator")
READ_TIMEOUT_S = 3.0
STOP_TIMEOUT_S = 5.0


class SimProcess:
    """A running simulator: its stdout (the ready line, RESET and PULSE lines) is read by a thread."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self.lines: list[str] = []
        self.pulses: list[tuple[float, int, float]] = []   # (sim_us, pin, width_us)
        self.horns: list[tuple[float, int, float]] = []    # (sim_us, pin, position_us)
        self.stats_lines: list[dict] = []
        self._cond = threading.Condition()
        self._ports: list[serial.Serial] = []
        first = self._readline_with_timeout(20.0)
        uri = parse_ready_line(first) if first.startswith(("READY arduino-planar:///dev/", "READY arduino-firmata:///dev/")) else None
        if uri is None or uri.host or uri.params:
            self.stop()
            raise RuntimeError(f"simulator did not announce a pty: {first!r} {self.proc.stderr.read()!r}")
        self.pty_path = uri.path
        self.stderr: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        # Drain stderr too, so a chatty simulator can never block on a full pipe.
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()

    def _readline_with_timeout(self, timeout: float) -> str:
        result: list[str] = []
        t = threading.Thread(target=lambda: result.append(self.proc.stdout.readline()), daemon=True)
        t.start()
        t.join(timeout)
        return result[0] if result else ""

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self._cond:
                if line.startswith("PULSE "):
                    _, t, pin, width = line.split()
                    self.pulses.append((float(t), int(pin), float(width)))
                elif line.startswith("HORN "):
                    _, t, pin, position = line.split()
                    self.horns.append((float(t), int(pin), float(position)))
                elif line.startswith("STATS "):
                    self.stats_lines.append(json.loads(line[len("STATS "):]))
                else:
                    self.lines.append(line.strip())
                self._cond.notify_all()

    # ---- stdout observations
    def wait_for(self, predicate, timeout: float = 10.0) -> bool:
        """Waits until predicate() (called under the lock) is true."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return predicate()
                self._cond.wait(min(left, 0.2))
            return True

    def pulse_mark(self) -> int:
        with self._cond:
            return len(self.pulses)

    def pulses_since(self, mark: int, pin: int) -> list[float]:
        with self._cond:
            return [w for _, pn, w in self.pulses[mark:] if pn == pin]

    def pulse_times_since(self, mark: int, pin: int) -> list[float]:
        """Rising-edge times (simulated us) of the pin's pulses after `mark`."""
        with self._cond:
            return [t for t, pn, _ in self.pulses[mark:] if pn == pin]

    def wait_pulses(self, mark: int, count: int, timeout: float = 10.0) -> dict[int, list[float]]:
        """Waits for `count` pulses on each servo pin after `mark`; returns the widths per pin."""
        self.wait_for(lambda: all(len([1 for _, pn, _ in self.pulses[mark:] if pn == pin]) >= count
                                  for pin in p.SERVO_PINS), timeout)
        return {pin: self.pulses_since(mark, pin) for pin in p.SERVO_PINS}

    def wait_quiet(self, quiet_s: float = 0.3, timeout: float = 5.0) -> bool:
        """True once no pulse has been reported for quiet_s (of wall time)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            mark = self.pulse_mark()
            time.sleep(quiet_s)
            if self.pulse_mark() == mark:
                return True
        return False

    def horn_mark(self) -> int:
        with self._cond:
            return len(self.horns)

    def horns_since(self, mark: int, pin: int) -> list[tuple[float, float]]:
        """(sim_us, position_us) of the pin's horn reports after `mark`."""
        with self._cond:
            return [(t, x) for t, pn, x in self.horns[mark:] if pn == pin]

    def wait_horns(self, mark: int, count: int, timeout: float = 10.0) -> dict[int, list[tuple[float, float]]]:
        """Waits for `count` horn reports on each servo pin after `mark`."""
        self.wait_for(lambda: all(len([1 for _, pn, _ in self.horns[mark:] if pn == pin]) >= count
                                  for pin in p.SERVO_PINS), timeout)
        return {pin: self.horns_since(mark, pin) for pin in p.SERVO_PINS}

    def stats(self, timeout: float = 5.0) -> dict:
        """Sends STATS and returns the simulator's answer."""
        with self._cond:
            seen = len(self.stats_lines)
        self.control("STATS")
        assert self.wait_for(lambda: len(self.stats_lines) > seen, timeout), "no STATS answer"
        with self._cond:
            return self.stats_lines[seen]

    def resets(self) -> list[str]:
        with self._cond:
            return [line for line in self.lines if line.startswith("RESET ")]

    # ---- control
    def control(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def open(self, timeout: float = 0.2) -> serial.Serial:
        port = serial.Serial(self.pty_path, p.BAUDRATE, timeout=timeout, write_timeout=READ_TIMEOUT_S)
        self._ports.append(port)
        return port

    def stop(self) -> None:
        for port in self._ports:
            try:
                port.close()
            except Exception:
                pass
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("QUIT\n")
                self.proc.stdin.close()
            except (BrokenPipeError, OSError, ValueError):
                pass
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(STOP_TIMEOUT_S)
        for stream in (self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except Exception:
                pass


class Host:
    """A minimal test host: one command in flight, replies matched by seq, unsolicited lines kept."""

    def __init__(self, port: serial.Serial) -> None:
        self.port = port
        self.seq = 0
        self.unsolicited: list[p.Reply] = []
        self.raw: list[bytes] = []

    def next_seq(self) -> int:
        self.seq = (self.seq + 1) % p.SEQ_MODULO
        return self.seq

    def read_line(self, timeout: float = READ_TIMEOUT_S) -> bytes:
        deadline = time.monotonic() + timeout
        buf = b""
        while time.monotonic() < deadline:
            buf += self.port.readline()
            if buf.endswith(b"\n"):
                self.raw.append(buf)
                return buf
        return buf

    def read_reply(self, timeout: float = READ_TIMEOUT_S) -> p.Reply | None:
        line = self.read_line(timeout)
        return p.decode_reply(line) if line else None

    def send_raw(self, data: bytes) -> None:
        self.port.write(data)
        self.port.flush()

    def request(self, command: p.Command, timeout: float = READ_TIMEOUT_S) -> p.Reply:
        """Sends a command and returns its reply (the ERR with seq None counts as its reply)."""
        self.send_raw(command.encode())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = self.read_reply(deadline - time.monotonic())
            if reply is None:
                break
            if isinstance(reply, (p.Boot, p.Event)):
                self.unsolicited.append(reply)
                continue
            if reply.seq == command.seq or (isinstance(reply, p.ErrorReply) and reply.seq is None):
                return reply
        raise AssertionError(f"no reply to {command!r}; received {self.raw[-5:]!r}")

    def handshake(self, timeout: float = 15.0) -> None:
        """PING until a PONG arrives: the port may still be in its boot delay after the open."""
        deadline = time.monotonic() + timeout
        self.send_raw(b"\n")
        while time.monotonic() < deadline:
            seq = self.next_seq()
            self.send_raw(p.Ping(seq).encode())
            end = time.monotonic() + 0.25
            while time.monotonic() < end:
                line = self.read_line(0.25)
                if not line:
                    continue
                try:
                    reply = p.decode_reply(line)
                except p.FrameError:
                    continue
                if isinstance(reply, p.Pong) and reply.seq == seq:
                    return
        raise AssertionError("simulator never answered PING")

    # conveniences
    def set(self, w1: int, w2: int) -> p.Reply:
        return self.request(p.Set(self.next_seq(), w1, w2))

    def get(self) -> p.State:
        reply = self.request(p.Get(self.next_seq()))
        assert isinstance(reply, p.State), reply
        return reply


@pytest.fixture(scope="session")
def firmware_build() -> tuple[Path, Path]:
    reason = firmware.toolchain_missing()
    if reason:
        pytest.skip(reason)
    return firmware.build_firmware(), firmware.build_harness()


def _src_env() -> dict[str, str]:
    env = dict(os.environ)
    src = str(Path(firmware.__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def emulator_command(boot_ms: int, *extra: str) -> list[str]:
    """The simulator program running the emulator, with every PULSE and HORN line."""
    return python_module("robohal_arduino_planar.simulator", "--firmware", "emulator", "--boot-ms", str(boot_ms),
                         "--pulses", "1", *extra)


def start_simulator(kind: str, request: pytest.FixtureRequest, boot_ms: int = 50,
                    extra: tuple[str, ...] = ()) -> SimProcess:
    """Starts one simulator process (the harness itself, or the program running the emulator)
    printing every pulse, stopped again when the test ends."""
    if kind == "firmware":
        request.getfixturevalue("firmware_build")      # skips without the toolchain
        sim = SimProcess([*firmware.harness_command(boot_ms, pulses=True), *extra])
    else:
        sim = SimProcess(emulator_command(boot_ms, *extra), env=_src_env())
    request.addfinalizer(sim.stop)
    return sim


@pytest.fixture(params=SIMULATORS)
def sim_kind(request: pytest.FixtureRequest) -> str:
    """Each behavioural test runs against the firmware in simavr and against the emulator."""
    return request.param


@pytest.fixture
def sim_factory(request: pytest.FixtureRequest):
    """start(kind, boot_ms=50, extra=()) -> SimProcess, stopped when the test ends."""
    def start(kind: str, boot_ms: int = 50, extra: tuple[str, ...] = ()) -> SimProcess:
        return start_simulator(kind, request, boot_ms, extra)
    return start


@pytest.fixture
def connect():
    """connect(sim, handshake=True) -> Host: opens the pty with pyserial and (by default) handshakes."""
    def open_host(sim: SimProcess, handshake: bool = True) -> Host:
        h = Host(sim.open())
        if handshake:
            h.handshake()
        return h
    return open_host


@pytest.fixture
def sim(sim_kind: str, request: pytest.FixtureRequest) -> SimProcess:
    return start_simulator(sim_kind, request)


@pytest.fixture
def host(sim: SimProcess) -> Iterator[Host]:
    h = Host(sim.open())
    h.handshake()
    yield h
