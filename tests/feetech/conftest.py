"""Fixtures of the Feetech tests: simulated servo buses, each stopped when its test ends."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

import pytest
from robohal.uri import parse_uri
from robohal_feetech.simulation import FeetechSimulator, start_simulator


def wait_for(condition: Callable[[], bool], timeout: float = 10.0, step: Callable[[], object] | None = None) -> bool:
    """Poll ``condition`` (calling ``step`` between) until it holds or ``timeout`` s pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if step is not None:
            step()
        else:
            time.sleep(0.005)
    return bool(condition())


def stats(simulator: FeetechSimulator) -> dict:
    return simulator.stats()


def servo_stats(simulator: FeetechSimulator, servo_id: int) -> dict:
    return next(s for s in simulator.stats()["servos"] if s["id"] == servo_id)


@pytest.fixture
def simulators() -> Iterator[Callable[..., FeetechSimulator]]:
    """start(**sim_options) -> a running simulated bus (``calibrated="0"`` is ``sim_calibrated=0``)."""
    started: list[FeetechSimulator] = []

    def start(**options: str) -> FeetechSimulator:
        query = "".join(f"&sim_{key}={value}" for key, value in options.items())
        simulator = start_simulator(parse_uri(f"feetech://sim?arm=so101{query}"))
        started.append(simulator)
        return simulator

    yield start
    for simulator in started:
        simulator.stop()


@pytest.fixture
def simulator(simulators) -> FeetechSimulator:
    return simulators()


def lerobot_file(calibration_path: str, target) -> dict:
    """The simulator's calibration as LeRobot writes its SO-101 files (no zero, no format key)."""
    data = json.loads(open(calibration_path, encoding="utf-8").read())
    data.pop("format")
    for entry in data.values():
        entry.pop("zero")
    target.write_text(json.dumps(data, indent=4), encoding="utf-8")
    return data
