"""A robot never reached is not a lost robot, and nothing pretends to move one: on every bundled
backend, ``connect()`` to a loopback address where no robot answers raises ``ConnectFailed``
naming the address (never a ``ConnectionLost``, which a reconnect loop would retry), and an
option that would swap the robot at an address for a simulation is refused."""

from __future__ import annotations

import logging
import os
import socket

import pytest
import robohal
from robohal.errors import ConnectFailed, ConnectionLost, UriError
from robohal.sim.process import free_loopback_host, free_port


def refused_at_connect(uri: str) -> ConnectFailed:
    with pytest.raises(ConnectFailed) as raised:
        robohal.connect(uri)
    assert not isinstance(raised.value, ConnectionLost)
    return raised.value


def test_franka_with_nothing_at_the_address():
    pytest.importorskip("pylibfranka")
    host = free_loopback_host(1337)
    failure = refused_at_connect(f"franka://{host}?model=franka.fr3&realtime=ignore")
    assert f"{host}:1337" in str(failure) and failure.address == f"{host}:1337"
    assert "lost" not in str(failure) and "FCI" in str(failure)  # the next step: FCI may be off too


def test_abb_egm_with_no_robot_streaming():
    port = free_port()
    failure = refused_at_connect(f"abb-egm://127.0.0.1:{port}?model=abb.irb1410&connect_timeout=0.3")
    assert f"127.0.0.1:{port}" in str(failure) and "RAPID" in str(failure)


def test_abb_egm_on_a_port_another_program_holds():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        failure = refused_at_connect(f"abb-egm://127.0.0.1:{port}?model=abb.irb1410&connect_timeout=0.3")
    assert "bind" in str(failure) and f"127.0.0.1:{port}" in str(failure)


def test_arduino_without_its_port(tmp_path):
    device = tmp_path / "ttyACM9"
    failure = refused_at_connect(f"arduino-planar://{device}?boot=0&timeout=0.1")
    assert str(device) in str(failure) and failure.address == str(device)


def test_arduino_port_where_no_firmware_answers():
    controller, terminal = os.openpty()  # a serial line with nothing at its other end
    try:
        device = os.ttyname(terminal)
        failure = refused_at_connect(f"arduino-planar://{device}?boot=0.1&timeout=0.1&keepalive=0")
        assert device in str(failure) and "no reply from the firmware" in str(failure)
    finally:
        os.close(controller)
        os.close(terminal)


@pytest.mark.parametrize("uri", [
    "franka://127.0.0.1?model=franka.fr3&impl=stubs",
    "franka://172.16.0.2?model=franka.fr3&impl=stubs",
])
def test_the_franka_stand_in_serves_the_sim_host_only(uri):
    with pytest.raises(UriError, match="franka://sim only"):
        robohal.connect(uri)


@pytest.mark.parametrize("uri, names", [
    ("franka://172.16.0.2?model=franka.fr3&sim_ideal=1", "sim_ideal"),
    ("abb-egm://0.0.0.0:6510?model=abb.irb1410&sim_loss=0.1", "sim_loss"),
    ("arduino-planar:///dev/ttyACM0?firmware=emulator", "firmware"),
])
def test_simulator_options_on_a_robots_address_are_refused(uri, names):
    with pytest.raises(UriError, match=f"{names} only configures the bundled simulator"):
        robohal.connect(uri)


def connect_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if ": connected" in r.getMessage()]


def test_every_robot_says_whether_it_is_simulated(caplog):
    caplog.set_level(logging.INFO, logger="robohal")
    with robohal.connect("sim://?model=generic.planar2&realtime=0") as robot:
        assert robot.simulated
    assert "(simulated)" in connect_lines(caplog)[-1]
    with robohal.connect("franka://sim?model=franka.fr3&impl=stubs") as robot:
        assert robot.simulated and robot.backend.uri.host == "sim"
    with robohal.connect("arduino-planar://sim?firmware=emulator") as robot:
        assert robot.simulated


def test_a_simulator_named_by_its_address_is_a_robot_to_robohal(caplog):
    from robohal_arduino_planar.simulation import start_simulator

    caplog.set_level(logging.INFO, logger="robohal")
    simulator = start_simulator(robohal.parse_uri("arduino-planar://sim?firmware=emulator"))
    try:
        with robohal.connect(str(simulator.uri)) as robot:
            assert not robot.simulated  # on the wire it is a board; robohal cannot tell
        assert "(simulated)" not in connect_lines(caplog)[-1]
    finally:
        simulator.stop()
