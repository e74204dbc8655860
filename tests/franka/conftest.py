"""Fixtures for the Franka plugin's tests: FCI simulators in their own processes
(loopback only, always stopped) and backends connected to them."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from robohal.sim.process import SimulatorProcess, free_loopback_host, python_module
from robohal.uri import parse_uri
from robohal_franka.backend import FrankaBackend
from robohal_franka.reference_arm import ReferenceArm

RAW_CLIENT = Path(__file__).with_name("raw_client.py")
THIRD_PARTY = Path(__file__).with_name("third_party.py")


class Simulator:
    def __init__(self, *args: str, host: str | None = None) -> None:
        self.host = host or free_loopback_host(1337)
        self.process = SimulatorProcess(python_module("robohal_franka.simulator", "--address", self.host, *args))
        self.uri = self.process.uri
        self.first_line = self.process.first_line

    def send(self, line: str) -> None:
        self.process.send(line)

    def stats(self, timeout: float = 5.0) -> dict:
        return self.process.stats(timeout)

    def stop(self) -> None:
        self.process.stop()

    def desk_state(self, timeout: float = 5.0) -> dict:
        """The simulated Desk's state (its stdin line DESK_STATE)."""
        self.process.lines()
        self.send("DESK_STATE")
        deadline = time.monotonic() + timeout
        while (line := self.process.readline(max(deadline - time.monotonic(), 0.0))) is not None:
            if line.startswith("DESK "):
                return json.loads(line[len("DESK "):])
        raise AssertionError(f"the simulator did not answer DESK_STATE within {timeout:g} s")

    def wait_desk(self, condition, timeout: float = 10.0) -> dict:
        """The Desk's state once ``condition(state)`` holds (an AssertionError at the deadline)."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.desk_state()
            if condition(state):
                return state
            if time.monotonic() > deadline:
                raise AssertionError(f"the Desk never got there within {timeout:g} s: {state}")
            time.sleep(0.02)  # polling a condition with a deadline

    def desk(self, tmp_path: Path, password: str = "franka", user: str = "franka", **options):
        """A :class:`DeskSession` to this simulator's Desk, trusting the certificate whose fingerprint the
        ready line gave, its control tokens kept under ``tmp_path``."""
        from robohal_franka.desk import Credentials, DeskSession
        from robohal_franka.desk.access import desk_tls
        from robohal_franka.desk.tokens import TokenStore

        url = self.uri.params["desk"]
        return DeskSession(url, Credentials(user, password), tls=desk_tls(url, self.uri.params["desk_fingerprint"]),
                           tokens=TokenStore(tmp_path / "tokens"), **options)


@pytest.fixture
def start_simulator():
    started: list[Simulator] = []

    def start(*args: str, host: str | None = None) -> Simulator:
        simulator = Simulator(*args, host=host)
        started.append(simulator)
        return simulator

    yield start
    for simulator in started:
        simulator.stop()


@pytest.fixture
def simulator(start_simulator) -> Simulator:
    return start_simulator()


@pytest.fixture
def raw_client():
    """``raw_client(scenario, host, impl="pylibfranka")`` -> what happened (see raw_client.py)."""
    return run_raw_client


def run_raw_client(scenario: str, host: str, *args: str, timeout: float = 60.0) -> dict:
    """Run a scenario of real pylibfranka calls in its own process (pylibfranka
    may switch its thread to SCHED_FIFO and holds the GIL while it blocks)."""
    import json

    done = subprocess.run([sys.executable, str(RAW_CLIENT), scenario, host, *args],
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"raw client failed:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def reference_model():
    """The registered ``franka.fr3`` model (analytic Jacobian), else the simulator's own geometry."""
    import robohal
    from robohal.errors import UnknownNameError

    try:
        return robohal.get_model("franka.fr3")
    except UnknownNameError:
        return ReferenceArm("franka.fr3")


@pytest.fixture(scope="session")
def third_party():
    """tests/franka/third_party.py (franky-sim and the franky client), loaded by path: the
    tests are imported by path too, so it is no importable module."""
    spec = importlib.util.spec_from_file_location("franka_third_party", THIRD_PARTY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def connect(start_simulator, reference_model):
    """``connect(impl, *simulator_args, **uri_params)`` opens a FrankaBackend (closed after the test)."""
    opened: list[FrankaBackend] = []

    def open_backend(impl: str = "pylibfranka", *simulator_args: str, **params: str):
        if impl == "pylibfranka":
            pytest.importorskip("pylibfranka")
            simulator = start_simulator(*simulator_args)
            host = simulator.host
        else:
            simulator, host = None, "sim"  # the stubs serve the host sim only
        query = "&".join(f"{k}={v}" for k, v in {"model": "franka.fr3", "impl": impl, **params}.items())
        backend = FrankaBackend(parse_uri(f"franka://{host}?{query}"), reference_model)
        opened.append(backend)
        backend.connect()
        return backend, simulator

    yield open_backend
    for backend in opened:
        backend.close()
        assert backend._process is None
