"""A Robot or backend dropped without close() is closed, with its simulator, and a
ResourceWarning; link threads started with start_link_thread never keep it alive."""

from __future__ import annotations

import gc
import threading
import time
import warnings
import weakref

import numpy as np
import pytest
import robohal
from robohal.control.backend import start_link_thread
from robohal.motion import Hold
from robohal.robot import Robot
from robohal.uri import parse_uri

FAST = "sim://?model=generic.planar2&realtime=0&rate=250"


class FakeSimulator:
    """Stands in for a bundled simulator: only whether it was stopped matters here."""

    def __init__(self) -> None:
        self.uri = parse_uri(FAST)
        self.stopped = threading.Event()

    def stop(self) -> None:
        self.stopped.set()


def robot_with_simulator() -> tuple[Robot, FakeSimulator]:
    simulator = FakeSimulator()
    plain = robohal.connect(FAST)
    return Robot(plain.backend, plain.model, simulator=simulator, name=FAST), simulator


def wait_for(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    return predicate()


@pytest.fixture
def resource_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield caught


def test_a_dropped_robot_closes_its_backend_and_stops_its_simulator(resource_warnings):
    robot, simulator = robot_with_simulator()
    backend = robot.backend
    del robot
    assert backend.connected  # the Robot alone is gone: the backend is still referenced here
    del backend
    assert wait_for(simulator.stopped.is_set)
    assert any("was dropped while connected (no close())" in str(w.message) for w in resource_warnings)


def test_the_backend_of_a_dropped_robot_keeps_working_and_its_simulator_running(resource_warnings):
    # CartesianBackend(robohal.connect(uri).backend): the Robot goes, its backend and simulator stay
    robot, simulator = robot_with_simulator()
    backend = robot.backend
    del robot
    gc.collect()
    assert not simulator.stopped.is_set()
    assert backend.run(Hold(0.02)).completed
    backend.close()
    assert not simulator.stopped.is_set()  # closing a backend may be followed by connect()
    del backend
    assert wait_for(simulator.stopped.is_set)  # nobody can use it any more
    assert not [w for w in resource_warnings if issubclass(w.category, ResourceWarning)]  # it was closed


def test_a_closed_robot_leaves_no_warning_when_dropped(resource_warnings):
    robot, simulator = robot_with_simulator()
    backend = weakref.ref(robot.backend)
    robot.close()
    assert simulator.stopped.is_set() and robot.backend.simulator is None
    del robot
    assert wait_for(lambda: backend() is None)
    assert not [w for w in resource_warnings if issubclass(w.category, ResourceWarning)]


def test_a_background_motion_keeps_its_backend_until_it_ends(resource_warnings):
    # in real time: a fast-forwarded motion can end before this thread runs again
    robot = robohal.connect("sim://?model=generic.planar2&rate=250")
    start = robot.q
    robot.move_joints(start + np.radians(5.0), speed=0.5, wait=False)
    backend = weakref.ref(robot.backend)
    del robot
    running = backend()
    assert running is not None and running.busy  # the motion holds it
    del running
    assert wait_for(lambda: bool(resource_warnings), timeout=20.0)  # ran to its end, then was dropped
    assert "was dropped while connected" in str(resource_warnings[0].message)
    resource_warnings.clear()  # (a warning holds its source)
    assert wait_for(lambda: backend() is None)


class Owner:
    """A weakly referenceable stand-in for a backend; its steps land in ``steps``."""

    def __init__(self, steps: list) -> None:
        self.steps = steps

    @staticmethod
    def step(owner: Owner) -> float:
        owner.steps.append(time.monotonic())
        return 0.001


def test_a_link_thread_ends_when_its_backend_is_gone():
    steps: list = []
    owner = Owner(steps)
    thread = start_link_thread(owner, Owner.step, threading.Event(), "test-link")  # type: ignore[arg-type]
    assert wait_for(lambda: len(steps) > 3)
    owner_ref = weakref.ref(owner)
    del owner
    thread.join(timeout=5.0)
    assert not thread.is_alive()
    assert owner_ref() is None


def test_a_link_thread_ends_when_stopped_or_when_its_step_says_so():
    owner, stop = Owner([]), threading.Event()
    thread = start_link_thread(owner, Owner.step, stop, "test-link")  # type: ignore[arg-type]
    stop.set()
    thread.join(timeout=5.0)
    assert not thread.is_alive()
    calls = []
    thread = start_link_thread(owner, lambda o: calls.append(o) and None, threading.Event(), "test-link")  # type: ignore[arg-type]
    thread.join(timeout=5.0)
    assert not thread.is_alive() and len(calls) == 1
