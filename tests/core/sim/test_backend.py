"""The built-in sim backend: it holds the measured position, reports injected faults, checks its URI, keeps its own clock and settles between cycles."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import robohal
from robohal import RobotMode
from robohal.errors import (
    HardwareFault,
    UriError,
)

FAST = "sim://?model=generic.planar2&realtime=0&rate=250"


@pytest.fixture
def robot():
    with robohal.connect(FAST) as connected:
        yield connected


def test_connect_holds_the_measured_position(robot):
    state = robot.state
    assert state.q.shape == (2,) and np.allclose(robot.backend.commanded, state.q)
    assert state.mode.value in ("idle", "moving")


def test_a_fault_raises_hardware_fault_then_recover_holds_where_it_is(robot):
    robot.move_joints(np.radians([10.0, 10.0]))
    robot.backend.inject_fault("simulated_overcurrent")
    with pytest.raises(HardwareFault) as fault:
        robot.backend.cycle()
    assert fault.value.names == ("simulated_overcurrent",)
    assert robot.state.faults == ("simulated_overcurrent",)  # the state can still be read
    assert pickle.loads(pickle.dumps(robot.state)).faults == ("simulated_overcurrent",)
    with pytest.raises(HardwareFault):
        robot.move_joints([0.0, 0.0])  # refused until recovered
    state = robot.recover()
    assert np.allclose(robot.backend.commanded, state.q), "after recovery hold the measured position"
    assert robot.move_joints([0.0, 0.0]).completed


def test_unrecoverable_fault_stays(robot):
    robot.backend.inject_fault("estop", recoverable=False)
    with pytest.raises(HardwareFault):
        robot.backend.cycle()
    with pytest.raises(HardwareFault):
        robot.recover()


def test_uri_parameters_are_validated():
    with pytest.raises(UriError, match="q0"):
        robohal.connect("sim://?model=generic.planar2&q0=1,2,3")
    with pytest.raises(UriError, match="rate"):
        robohal.connect("sim://?model=generic.planar2&rate=0")
    with pytest.raises(UriError, match="model"):
        robohal.connect("sim://")
    with robohal.connect("sim://?model=generic.planar2&realtime=0&q0=0.1,0.2") as robot:
        assert np.allclose(robot.state.q, [0.1, 0.2])


def test_state_time_rises_by_one_period(robot):
    times = [robot.backend.cycle().time for _ in range(10)]
    assert np.allclose(np.diff(times), robot.backend.period)


def test_a_real_time_sim_keeps_settling_between_cycles():
    """After a motion the lagging arm still moves; reads show it settle, as a real arm would,
    instead of a state frozen at the last cycle."""
    import time

    with robohal.connect("sim://?model=generic.planar2&realtime=1&lag=0.05") as robot:
        target = np.array([0.3, -0.4])
        robot.move_joints(target, speed=1.0)
        after_motion = robot.state
        assert after_motion.mode is RobotMode.MOVING, "the 50 ms lag leaves the arm short of the target"
        time.sleep(1.0)  # 20 time constants
        settled = robot.state
        assert settled.time > after_motion.time + 0.9
        assert settled.mode is RobotMode.IDLE
        assert np.allclose(settled.q, target, atol=1e-6)
