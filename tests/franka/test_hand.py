"""The Franka Hand: the FCI simulator's hand against the real ``pylibfranka.Gripper``, and
``robot.gripper`` on ``franka://sim`` through it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import robohal
from robohal.control.tools import GripperBusy, GripperLimits
from robohal.errors import ConnectFailed, ConnectionLost, HardwareFault, InvalidArgument, UriError
from robohal_franka import hand

pytest.importorskip("pylibfranka", reason="pip install pylibfranka (a Linux wheel)")

RAW_HAND_CLIENT = Path(__file__).with_name("raw_hand_client.py")
PART = 0.03  # m: the simulated part between the fingers
FAILED = ["CommandException", "libfranka gripper: Command failed!"]


@pytest.fixture(scope="module")
def raw():
    """One run of raw pylibfranka.Gripper calls against a simulator with a part in the hand."""
    from robohal.sim.process import SimulatorProcess, free_loopback_host, python_module

    host = free_loopback_host(1337)
    simulator = SimulatorProcess(python_module("robohal_franka.simulator", "--address", host, "--object", str(PART)))
    try:
        done = subprocess.run([sys.executable, str(RAW_HAND_CLIENT), host], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        yield json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        simulator.stop()


def test_pylibfranka_gripper_connects_and_reads_the_state_stream(raw):
    assert raw["version"] == 3  # the research interface version of libfranka's gripper
    first, second = raw["first"], raw["second"]
    assert first["width"] == pytest.approx(0.08) and first["max_width"] == pytest.approx(0.08)
    assert not first["is_grasped"] and first["temperature"] > 0
    assert second["time"] > first["time"]  # read_once waits for a newer state


def test_homing_and_move_reach_their_widths(raw):
    assert raw["homing"] == ["ok", True] and raw["after_homing"]["width"] == pytest.approx(0.08)
    assert raw["move"] == ["ok", True] and raw["after_move"]["width"] == pytest.approx(0.05)


def test_a_grasp_succeeds_or_fails_by_the_epsilons(raw):
    assert raw["grasp_held"] == ["ok", True]
    assert raw["after_grasp_held"]["width"] == pytest.approx(PART) and raw["after_grasp_held"]["is_grasped"]
    assert raw["grasp_wrong_width"] == ["ok", False]  # expected 5 cm, closed on 3 cm
    assert not raw["after_grasp_wrong_width"]["is_grasped"]
    assert raw["grasp_by_epsilon"] == ["ok", True]  # 5 cm with 2.5 cm inner tolerance takes the 3 cm part


def test_stop_releases_the_grip_and_aborts_a_running_command(raw):
    assert raw["stop_releases"] == ["ok", True] and not raw["after_stop"]["is_grasped"]
    assert raw["stop_from_other"] == ["ok", True]
    assert raw["move_stopped"] == ["CommandException", "libfranka gripper: Command aborted!"]
    assert raw["move_stopped_after"] < 1.0  # the whole move takes 1.2 s
    assert 0.02 < raw["after_stopped"]["width"] < 0.08


def test_a_move_blocked_by_the_part_is_unsuccessful(raw):
    assert raw["move_blocked"] == ["ok", False]
    assert raw["after_move_blocked"]["width"] == pytest.approx(PART)


@pytest.mark.parametrize("case", ["width_above_max", "width_negative", "width_nan", "speed_zero", "speed_above_max",
                                  "force_above_max", "epsilon_negative"])
def test_out_of_range_commands_fail_as_the_hand_answers_them(raw, case):
    assert raw["refused"][case] == FAILED


def test_a_library_of_another_version_is_refused_and_garbage_closes_the_connection(simulator):
    import socket

    from robohal_franka import hand_wire

    with socket.create_connection((simulator.host, hand_wire.TCP_PORT), timeout=5.0) as sock:
        sock.sendall(hand_wire.message(hand_wire.Command.CONNECT, 7, hand_wire.CONNECT_REQUEST.pack(2, 40000)))
        answer = sock.recv(64)
        command, command_id, size = hand_wire.HEADER.unpack_from(answer)
        status, version = hand_wire.CONNECT_RESPONSE.unpack_from(answer, hand_wire.HEADER.size)
        assert (command, command_id, size) == (hand_wire.Command.CONNECT, 7, len(answer))
        assert status == hand_wire.ConnectStatus.INCOMPATIBLE_LIBRARY_VERSION and version == hand_wire.VERSION
    with socket.create_connection((simulator.host, hand_wire.TCP_PORT), timeout=5.0) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert sock.recv(64) == b""  # not the gripper protocol: closed
    assert simulator.stats()["hand_clients"] == 2


# robot.gripper on franka://sim ---------------------------------------------------------------


@pytest.fixture
def robot():
    with robohal.connect(f"franka://sim?model=franka.fr3&sim_object={PART}&sim_ideal=1") as robot:
        yield robot


def test_the_simulated_robot_comes_with_its_hand(robot):
    gripper = robot.gripper
    assert isinstance(gripper, hand.FrankaHand) and robot.backend.uri.params["gripper"] == "1"
    assert gripper.homing() is True
    assert gripper.grasp(PART, 0.1, 20.0) is True and gripper.state.is_grasped
    assert gripper.open() is True and not gripper.state.is_grasped
    assert gripper.grasp(0.05, 0.1, 20.0) is False  # the part is 3 cm
    assert gripper.close() is True and gripper.state.width == pytest.approx(PART)


def test_the_arm_moves_while_the_hand_closes(robot):
    gripper = robot.gripper
    gripper.open()
    closing = gripper.grasp(PART, speed=0.02, force=20.0, wait=False)  # 2.5 s of travel
    with pytest.raises(GripperBusy):
        gripper.open()
    target = robot.backend.commanded + np.radians(2.0)
    assert robot.move_joints(target, speed=0.5).completed
    assert gripper.busy, "the arm's move ended before the fingers closed"
    assert closing.result(timeout=30.0) is True


def test_stop_ends_a_running_grasp_which_returns_false(robot):
    gripper = robot.gripper
    gripper.open()
    closing = gripper.grasp(PART, speed=0.01, force=20.0, wait=False)
    deadline = time.monotonic() + 10.0
    while gripper.state.width > 0.075 and time.monotonic() < deadline:
        pass
    assert gripper.stop() is True
    assert closing.result(timeout=10.0) is False
    assert PART < gripper.state.width < 0.08 and not gripper.busy


def test_bad_input_is_refused_before_the_hand(robot):
    gripper = robot.gripper
    commands = robot.simulator.stats()["hand_commands"]
    for call, message in [(lambda: gripper.move(float("nan")), "finite"), (lambda: gripper.move(0.081), "width"),
                          (lambda: gripper.move(0.04, 0.2), "speed"), (lambda: gripper.grasp(0.03, force=141), "force")]:
        with pytest.raises(InvalidArgument, match=message):
            call()
    assert robot.simulator.stats()["hand_commands"] == commands


def test_what_the_hand_refuses_raises_its_own_text(robot):
    gripper = robot.gripper
    gripper.limits = GripperLimits(max_speed=1.0, max_force=1000.0)  # past the hand's own limits
    with pytest.raises(HardwareFault, match="libfranka gripper: Command failed!"):
        gripper.move(0.04, 0.5)
    with pytest.raises(HardwareFault, match="libfranka gripper: Command failed!"):
        gripper.grasp(0.03, 0.05, 500.0)
    assert gripper.move(0.04, 0.1) is True  # and it takes the next command


def test_a_hung_hand_is_a_lost_link_after_a_deadline_and_never_blocks_the_arm(robot, monkeypatch):
    monkeypatch.setattr(hand, "COMMAND_SLACK", 1.0)
    gripper = robot.gripper
    robot.simulator.send("HAND_SILENT")
    closing = gripper.grasp(PART, 0.1, 20.0, wait=False)  # 2.6 s deadline at 0.1 m/s
    started = time.monotonic()
    target = robot.backend.commanded + np.radians(2.0)
    assert robot.move_joints(target, speed=0.5).completed  # the arm goes on meanwhile
    assert robot.move_joints(target - np.radians(2.0), speed=0.5).completed
    with pytest.raises(ConnectionLost, match="did not answer grasp within"):
        closing.result(timeout=30.0)
    assert time.monotonic() - started < 10.0
    with pytest.raises(ConnectionLost):
        gripper.grasp(PART)  # lost until connected again
    assert robot.state.q.shape == (7,)
    robot.simulator.send("HAND_RESUME")
    assert gripper.connect() is gripper and gripper.move(0.05, 0.1) is True


def test_gripper_0_leaves_the_hand_off_and_the_stubs_have_none():
    with robohal.connect("franka://sim?model=franka.fr3&gripper=0") as robot:
        assert robot.gripper is None
    with robohal.connect("franka://sim?model=franka.fr3&impl=stubs") as robot:
        assert robot.gripper is None


@pytest.mark.parametrize("uri, message", [
    ("franka://sim?model=franka.fr3&impl=stubs&gripper=1", "impl=stubs has no Franka Hand"),
    ("franka://sim?model=franka.fr3&impl=stubs&sim_object=0.03", "impl=stubs does not simulate sim_object"),
    ("franka://sim?model=franka.fr3&sim_object=0.09", "sim_object is the width"),
    ("franka://sim?model=franka.fr3&gripper=maybe", "is not a boolean"),
])
def test_bad_hand_parameters_are_refused(uri, message):
    with pytest.raises(UriError, match=message):
        robohal.connect(uri)


def test_a_hand_that_cannot_be_reached_fails_the_connect():
    gripper = hand.FrankaHand("127.0.0.1")  # no gripper server here
    started = time.monotonic()
    with pytest.raises(ConnectFailed, match=r"cannot connect to the Franka Hand at 127\.0\.0\.1"):
        gripper.connect()
    assert time.monotonic() - started < hand.CONNECT_TIMEOUT
