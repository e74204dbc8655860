"""A backend's lifecycle: the named states, the transitions allowed, and every refusal derived
from them; on the lifecycle alone and on a connected sim backend."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import robohal
from robohal import LifecycleState
from robohal.control.lifecycle import TRANSITIONS, Lifecycle
from robohal.errors import ConnectionLost, HardwareFault, RobohalError
from robohal.motion import Hold

FAST = "sim://?model=generic.planar2&realtime=0&rate=250"
D, R, M, F, L = LifecycleState


def test_every_state_has_its_transitions_and_nothing_else_moves():
    assert set(TRANSITIONS) == set(LifecycleState)
    life = Lifecycle("test")
    assert life.state is D
    with pytest.raises(RobohalError, match="no transition from disconnected to moving"):
        life.to(M)
    life.to(R)
    life.to(M)
    life.enter_lost(ConnectionLost("gone"))
    with pytest.raises(RobohalError, match="no transition from lost to ready"):
        life.to(R)
    life.to(D)
    assert life.lost is None


@pytest.mark.parametrize(("state", "refusal"), [
    (D, "not connected"), (L, "gone"), (F, "estop"), (M, "a motion is running"),
])
def test_each_state_refuses_commands_with_its_own_reason(state, refusal):
    life = Lifecycle("test")
    if state is not D:
        life.to(R)
    if state is M:
        life.to(M)
    if state is F:
        life.enter_fault(HardwareFault("estop"))
    if state is L:
        life.enter_lost(ConnectionLost("gone"))
    with pytest.raises(RobohalError, match=refusal):
        life.check_command()


def test_reads_work_in_a_fault_and_while_moving_but_not_without_a_link():
    life = Lifecycle("test")
    with pytest.raises(ConnectionLost):
        life.check_readable()
    life.to(R)
    life.enter_fault(HardwareFault("estop"))
    life.check_readable()
    life.to(R)
    life.to(M)
    life.check_readable()


def test_a_background_error_is_raised_once_by_the_next_command():
    life = Lifecycle("test")
    life.to(R)
    life.hand_over(ValueError("met in the background"))
    with pytest.raises(ValueError):
        life.check_command()
    life.check_command()


def test_a_fault_is_announced_once_and_before_anyone_sees_it():
    life = Lifecycle("test")
    life.to(R)
    life.to(M)
    seen = []
    waiter = threading.Thread(target=lambda: seen.append(life.wait_while_moving(5.0) and list(told)))
    told: list[str] = []
    waiter.start()
    life.enter_fault(HardwareFault("reflex"), announce=lambda: told.append("told"))
    life.enter_fault(HardwareFault("reflex"), announce=lambda: told.append("again"))
    waiter.join(5.0)
    assert told == ["told"] and seen == [["told"]]


def test_a_backend_walks_the_lifecycle():
    robot = robohal.connect(FAST, )
    backend = robot.backend
    try:
        assert robot.lifecycle is R and backend.connected
        backend.run(Hold(10.0), wait=False)
        assert robot.lifecycle is M and backend.busy
        with pytest.raises(RobohalError, match="a motion is running"):
            backend.cycle()
        held = backend._last_job
        robot.move_joints([0.1, 0.1], wait=False)  # a new motion takes over from the running one
        assert robot.lifecycle is M
        assert robot.wait().completed and held.result.taken_over
        assert robot.lifecycle is R
        backend.run(Hold(10.0), wait=False)
        robot.stop()
        assert robot.lifecycle is R
        backend.inject_fault("estop")
        with pytest.raises(HardwareFault):
            backend.cycle()
        assert robot.lifecycle is F and backend.read().faults == ("estop",)
        with pytest.raises(HardwareFault, match="estop"):
            robot.move_joints([0.1, 0.1])
        robot.recover()
        assert robot.lifecycle is R
        robot.move_joints(np.array([0.05, 0.05]))
    finally:
        robot.close()
    assert robot.lifecycle is D and not backend.connected
    with pytest.raises(ConnectionLost, match="not connected"):
        backend.read()
