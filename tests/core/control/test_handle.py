"""Motion handles (what ``wait=False`` returns) and a second Ctrl-C while the arm brakes, on the
in-process sim backend, paced by the clock so that motions run while the test looks at them."""

from __future__ import annotations

import logging
import os
import signal
import threading

import numpy as np
import pytest
import robohal
from robohal import MotionHandle, MotionResult
from robohal.control.backend import wait_until
from robohal.control.executor import MotionExecutor
from robohal.control.lifecycle import LifecycleState
from robohal.testing.contract import FailingMotion, InjectedError

REALTIME = "sim://?model=generic.planar2&rate=250"


@pytest.fixture
def robot():
    with robohal.connect(REALTIME) as connected:
        yield connected


def cycles_sent(robot) -> int:
    return robot.backend.counters["commands_sent"]


def test_every_motion_returns_a_handle_whose_wait_gives_its_result(robot):
    target = np.radians([20.0, 30.0])
    moving = robot.move_joints(target, speed=0.5, wait=False)
    assert isinstance(moving, MotionHandle)
    result = moving.wait()
    assert isinstance(result, MotionResult) and result.completed and moving.done()
    assert np.array_equal(result.target, target) and np.allclose(robot.commanded, target)
    assert moving.wait() is result  # as often as asked
    line = robot.model.forward(robot.commanded)
    line[0, 3] += 0.01
    assert robot.move_linear(line, wait=False).wait().completed
    assert robot.follow([np.radians([10.0, 10.0]), np.radians([0.0, 20.0])], wait=False).result().completed
    assert robot.run(robohal.motion.Hold(0.05), wait=False).wait().completed


def test_wait_with_a_timeout_raises_while_the_motion_runs(robot):
    moving = robot.move_joints(np.radians([80.0, 80.0]), speed=0.05, wait=False)
    with pytest.raises(TimeoutError):
        moving.wait(timeout=0.01)
    assert not moving.done()
    assert moving.cancel()


def test_cancel_brakes_the_motion_to_rest_and_returns_there(robot):
    moving = robot.move_joints(np.radians([80.0, 80.0]), speed=0.1, wait=False)
    assert wait_until(lambda: cycles_sent(robot) >= 25, timeout=30.0)
    assert moving.cancel()
    assert moving.done() and robot.lifecycle is LifecycleState.READY
    velocity, acceleration = robot.backend.guard.derivatives()
    assert np.abs(velocity).max() < 1e-6 and np.abs(acceleration).max() < 1e-3
    result = moving.wait()
    assert result.stopped and not result.completed
    assert 0 < np.abs(robot.commanded).max() < np.radians(79.0)
    assert not moving.cancel()  # over: nothing to cancel


def test_a_handle_taken_over_reports_it_and_cannot_cancel_the_newer_motion(robot):
    first = robot.move_joints(np.radians([80.0, 80.0]), speed=0.1, wait=False)
    assert wait_until(lambda: cycles_sent(robot) >= 25, timeout=30.0)
    second = robot.move_joints(np.radians([10.0, 10.0]), speed=0.5, wait=False)
    assert first.wait().taken_over
    assert not first.cancel()
    assert second.wait().completed and np.allclose(robot.commanded, np.radians([10.0, 10.0]))


def test_the_error_a_motion_meets_is_raised_by_its_handle_once(robot):
    failing = robot.run(FailingMotion(cycles=5), wait=False)
    with pytest.raises(InjectedError):
        failing.wait()
    # raised by the handle: the next command does not raise it again
    assert robot.move_joints(np.radians([5.0, 5.0])).completed


def test_without_a_look_at_its_handle_the_error_goes_to_the_next_command(robot):
    robot.run(FailingMotion(cycles=5), wait=False)
    assert wait_until(lambda: robot.lifecycle is LifecycleState.READY, timeout=30.0)
    with pytest.raises(InjectedError):
        robot.move_joints(np.radians([5.0, 5.0]))


def test_a_second_ctrl_c_while_the_arm_brakes_waits_for_rest(robot, monkeypatch, caplog):
    """The first Ctrl-C starts the brake; a second one, pressed as the brake starts, must not
    leave the arm moving: the interrupt is raised once the arm is at rest."""
    import gc

    fail = MotionExecutor.fail
    pressed = []

    def fail_and_press_again(executor, error):
        fail(executor, error)
        if isinstance(error, KeyboardInterrupt) and not pressed:
            pressed.append(True)
            os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, while the brake has just begun

    monkeypatch.setattr(MotionExecutor, "fail", fail_and_press_again)
    started = threading.Event()

    def press_when_moving():
        if wait_until(lambda: cycles_sent(robot) >= 50, timeout=30.0):
            os.kill(os.getpid(), signal.SIGINT)  # the first, to the process as a terminal does
        started.set()

    # a KeyboardInterrupt raised inside a finaliser is swallowed: no collection while it lands
    gc.collect()
    gc.disable()
    caplog.set_level(logging.WARNING, logger="robohal")
    try:
        threading.Thread(target=press_when_moving, daemon=True).start()
        with pytest.raises(KeyboardInterrupt) as raised:
            robot.move_joints(np.radians([80.0, 80.0]), speed=0.2)
        assert robot.lifecycle is LifecycleState.READY  # at rest, not still braking
    finally:
        gc.enable()
    assert pressed and started.is_set()
    velocity, _ = robot.backend.guard.derivatives()
    assert np.abs(velocity).max() < 1e-6
    assert any("braked to rest" in note for note in raised.value.__notes__)
    assert any("braking the arm to rest after Ctrl-C" in record.getMessage() for record in caplog.records)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
