"""Franka connect failures (a silent address, a refused one), the payload (libfranka's setLoad,
taken by the FCI simulator's model), motion handles through the control process, and a second
Ctrl-C while the control process brakes."""

from __future__ import annotations

import gc
import logging
import os
import signal
import socket
import threading
import time

import numpy as np
import pytest
import robohal
from robohal import MotionHandle, Payload
from robohal.control.backend import wait_until
from robohal.errors import ConnectFailed, ConnectionLost, InvalidArgument
from robohal.robot import Robot
from robohal.sim.process import free_loopback_host
from robohal_franka import backend as franka_backend


def test_a_silent_fci_port_fails_a_second_after_libfrankas_timeout(monkeypatch):
    """libfranka waits for ever on a peer that accepts and never answers (measured): robohal gives
    up a second after libfranka's own TCP timeout, with ConnectFailed naming the address. The
    timeout is shortened here; the rule is the same."""
    pytest.importorskip("pylibfranka")
    monkeypatch.setattr(franka_backend, "LIBFRANKA_CONNECT_TIMEOUT", 1.0)
    host = free_loopback_host(1337)
    with socket.socket() as silent:
        silent.bind((host, 1337))
        silent.listen(1)
        started = time.monotonic()
        with pytest.raises(ConnectFailed) as raised:
            robohal.connect(f"franka://{host}?model=franka.fr3&realtime=ignore")
        waited = time.monotonic() - started
    assert not isinstance(raised.value, ConnectionLost)
    assert f"{host}:1337" in str(raised.value) and "2 s" in str(raised.value)
    assert waited >= 2.0  # robohal's bound, not an earlier guess of its own


def test_the_payload_reaches_the_simulated_robot():
    with robohal.connect("franka://sim?model=franka.fr3") as robot:
        assert robot.payload is None
        payload = Payload(0.8, [0.0, 0.01, 0.06], np.diag([2e-3, 2e-3, 1e-3]))
        robot.payload = payload
        assert robot.payload is payload
        assert robot.simulator.stats()["load_mass"] == pytest.approx(0.8)
        with pytest.raises(InvalidArgument, match="3 kg"):
            robot.payload = Payload(4.0)
        assert robot.simulator.stats()["load_mass"] == pytest.approx(0.8)  # nothing sent
        assert robot.payload is payload


def test_the_stubs_take_a_payload_too():
    with robohal.connect("franka://sim?model=franka.fr3&impl=stubs") as robot:
        robot.payload = Payload(0.5)
        assert robot.payload.mass == 0.5


@pytest.mark.parametrize("impl", ["pylibfranka", "stubs"])
def test_motion_handles_through_the_control_process(connect, impl):
    backend, _ = connect(impl)
    robot = Robot(backend, backend.model)
    start = robot.commanded
    moving = robot.move_joints(start + np.array([0.5, 0, 0, 0, 0, 0, 0]), speed=0.2, wait=False)
    assert isinstance(moving, MotionHandle) and not moving.done()
    assert wait_until(lambda: abs(robot.commanded[0] - start[0]) > 0.02, timeout=30.0)  # under way
    assert moving.cancel()
    result = moving.wait()
    assert result.stopped and not backend.busy
    assert 0.02 < robot.commanded[0] - start[0] < 0.49
    again = robot.move_joints(start, speed=0.5, wait=False)
    assert again.wait().completed and np.allclose(robot.commanded, start, atol=1e-6)


def test_a_second_ctrl_c_while_the_control_process_brakes_waits_for_rest(connect, monkeypatch, caplog):
    backend, _ = connect("stubs")
    robot = Robot(backend, backend.model)
    start = robot.commanded
    stop = type(backend).stop
    pressed = []

    def stop_and_press_again(self):
        if not pressed:
            pressed.append(True)
            os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, as the brake is asked for
        stop(self)

    monkeypatch.setattr(type(backend), "stop", stop_and_press_again)

    def press_when_moving():
        if wait_until(lambda: abs(backend.read().info["q_d"][0] - start[0]) > 0.02, timeout=30.0):
            os.kill(os.getpid(), signal.SIGINT)

    caplog.set_level(logging.WARNING, logger="robohal")
    gc.collect()
    gc.disable()  # a KeyboardInterrupt raised inside a finaliser is swallowed
    try:
        threading.Thread(target=press_when_moving, daemon=True).start()
        with pytest.raises(KeyboardInterrupt) as raised:
            robot.move_joints(start + np.array([1.0, 0, 0, 0, 0, 0, 0]), speed=0.3)
        assert not backend.busy  # at rest when the interrupt reaches the caller
    finally:
        gc.enable()
    assert pressed
    assert any("braked to rest" in note for note in raised.value.__notes__)
    assert any("braking the arm to rest after Ctrl-C" in record.getMessage() for record in caplog.records)
