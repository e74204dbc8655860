"""Online motion on the Franka backend, in its control process at 1 kHz, through the real
pylibfranka against the FCI simulator (which checks every command against the FR3's limits)
and through the stubs: a new motion takes over a running one, streams of targets are
followed, and the stream's end brakes the arm to rest."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from robohal import LifecycleState
from robohal.control.backend import wait_until
from robohal.robot import Robot
from robohal_franka.facts import READY_Q

from .test_backend import IMPLS, assert_at_rest


def stream(call, targets, rate: float) -> threading.Thread:
    def run() -> None:
        for target in targets:
            call(target)
            time.sleep(1.0 / rate)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def no_robot_errors(backend) -> None:
    state = backend.read()
    assert state.mode.value != "fault" and not state.faults
    assert state.info["success_rate"] > 0.9


@pytest.mark.parametrize("impl", IMPLS)
def test_a_new_move_takes_over_without_a_stop_in_the_control_process(connect, impl):
    backend, _ = connect(impl)
    robot = Robot(backend, backend.model)
    ready = np.array(READY_Q)
    robot.move_joints(ready + np.array([0.8, 0.0, 0, 0, 0, 0, 0]), speed=0.5, wait=False)
    first = backend._last_run
    assert wait_until(lambda: abs(backend.read().info["q_d"][0] - ready[0]) > 0.1, timeout=10.0)
    second = robot.move_joints(ready + np.array([0.0, 0.2, 0, 0, 0, 0, 0]), speed=0.5)
    assert first.done.is_set() and first.result.taken_over
    assert second.completed
    speeds = np.abs(np.diff(np.vstack([first.result.commanded, second.commanded]), axis=0)).max(axis=1) / 0.001
    switch = first.result.cycles
    assert speeds[switch - 3:switch + 3].min() > 0.05, "no stop at the take-over"
    assert np.allclose(backend.commanded, ready + np.array([0.0, 0.2, 0, 0, 0, 0, 0]), atol=1e-6)
    no_robot_errors(backend)
    assert robot.lifecycle is LifecycleState.READY


@pytest.mark.parametrize("impl", IMPLS)
def test_a_joint_stream_is_followed_and_its_end_brakes_to_rest(connect, impl):
    backend, _ = connect(impl)
    robot = Robot(backend, backend.model)
    ready = np.array(READY_Q)
    targets = [ready + np.array([0.3, -0.2, 0, 0.2, 0, 0, 0]) * np.sin(np.pi * s / 2)
               for s in np.linspace(0.0, 1.0, 101)]
    stream(robot.servo, targets, rate=100.0).join()
    assert wait_until(lambda: robot.lifecycle is LifecycleState.READY, timeout=5.0)
    assert np.allclose(backend.commanded, targets[-1], atol=1e-3)
    assert_at_rest(backend)
    no_robot_errors(backend)


@pytest.mark.parametrize("impl", IMPLS)
def test_a_pose_stream_is_followed_in_the_control_process(connect, impl):
    backend, _ = connect(impl)
    robot = Robot(backend, backend.model)
    start = backend.model.forward(backend.commanded)
    targets = []
    for s in np.linspace(0.0, 1.0, 101):
        pose = start.copy()
        pose[:3, 3] += [0.05 * s, 0.0, -0.05 * s]
        targets.append(pose)
    stream(robot.servo_pose, targets, rate=100.0).join()
    assert wait_until(lambda: robot.lifecycle is LifecycleState.READY, timeout=5.0)
    reached = backend.model.forward(backend.commanded)
    assert np.abs(reached[:3, 3] - targets[-1][:3, 3]).max() < 1e-3
    no_robot_errors(backend)


def contact(connect, impl: str, plane: str):
    """A backend whose simulated arm meets a plane (``HEIGHT,STIFFNESS``)."""
    if impl == "pylibfranka":
        return connect(impl, "--contact", plane)[0]
    return connect(impl, sim_contact=plane)[0]


@pytest.mark.parametrize("impl", IMPLS)
def test_move_until_contact_then_retract_through_the_control_process(connect, impl):
    """The reaction runs in the 1 kHz loop: it meets 5 N (the simulated plane pushing back, the
    robot's own O_F_ext_hat_K) long before the 60 N collision threshold would stop the robot."""
    from robohal.motion import PointToPoint
    from robohal.motion.reactions import Reaction, force

    backend = contact(connect, impl, "0.5,3000")
    robot = Robot(backend, backend.model)
    start = backend.commanded.copy()
    assert np.array_equal(robot.state.wrench, np.zeros(6)), "no contact up here"
    down = backend.model.forward(start)
    down[2, 3] -= 0.15  # 6 cm into the plane: 180 N if nothing stopped it
    result = robot.move_linear(down, speed=0.05, until=Reaction(force("z") > 5.0, then=PointToPoint(start, 0.5)))
    assert result.completed and result.reaction == "force z (N) > 5"
    assert np.allclose(backend.commanded, start, atol=1e-6), "retracted"
    deepest = min(backend.model.forward(q)[2, 3] for q in result.commanded)
    assert 0.5 - 0.01 < deepest < 0.5, "touched the plane, and did not press on into it"
    no_robot_errors(backend)
