"""The core's tool API: what every gripper driver gets from :class:`Gripper` (checks, one
command at a time, ``wait=False``, a stopped command) and :class:`IoPorts` (signals by name).
The driver here is a bare model of fingers whose commands end when the test says so; the
Franka Hand runs the same API through the real pylibfranka in tests/franka/test_hand.py."""

from __future__ import annotations

import math
import threading
from concurrent.futures import Future

import numpy as np
import pytest
import robohal
from robohal.control.tools import Gripper, GripperBusy, GripperLimits, GripperState, IoPorts, Signal
from robohal.errors import HardwareFault, InvalidArgument, RobohalError, UnknownNameError

LIMITS = GripperLimits(max_speed=0.1, max_force=100.0)


class HeldFingers(Gripper):
    """Fingers that jump to each target once :attr:`release` is set; the hardware side of a stop
    is an abort of the running command, as the Franka Hand answers."""

    def __init__(self) -> None:
        super().__init__(LIMITS, name="test hand")
        self.width = 0.08
        self.release = threading.Event()
        self.release.set()
        self.aborted = False
        self.calls: list[tuple] = []
        self.connected = False

    def _connect(self) -> None:
        self.connected = True

    def _disconnect(self) -> None:
        self.connected = False

    def _carry_out(self, width: float) -> None:
        self.aborted = False
        assert self.release.wait(10.0)
        if self.aborted:
            raise HardwareFault("fingers: command aborted", names=("gripper",))
        self.width = width

    def _homing(self) -> bool:
        self.calls.append(("homing",))
        self._carry_out(0.08)
        return True

    def _move(self, width: float, speed: float) -> bool:
        self.calls.append(("move", width, speed))
        self._carry_out(width)
        return True

    def _grasp(self, width, speed, force, epsilon_inner, epsilon_outer) -> bool:
        self.calls.append(("grasp", width, speed, force, epsilon_inner, epsilon_outer))
        self._carry_out(width)
        return True

    def _stop(self) -> bool:
        self.aborted = True
        self.release.set()
        return True

    def _read(self) -> GripperState:
        return GripperState(self.width, 0.08, False, 0.0)


@pytest.fixture
def fingers():
    gripper = HeldFingers().connect()
    yield gripper
    gripper.release.set()
    gripper.disconnect()


def test_each_command_blocks_and_returns_the_hardware_s_answer(fingers):
    assert fingers.move(0.04, 0.05) is True and fingers.state.width == 0.04
    assert fingers.grasp(0.03, force=30.0, epsilon_outer=0.01) is True
    assert fingers.calls[-1] == ("grasp", 0.03, LIMITS.default_speed, 30.0, 0.005, 0.01)
    assert fingers.open() is True and fingers.calls[-1] == ("move", 0.08, LIMITS.default_speed)
    assert fingers.close() is True and fingers.calls[-1] == ("grasp", 0.0, LIMITS.default_speed,
                                                             LIMITS.default_force, 0.0, 0.08)
    assert fingers.homing() is True


def test_wait_false_returns_a_future_and_a_second_command_meanwhile_is_refused(fingers):
    fingers.release.clear()
    future = fingers.move(0.02, wait=False)
    assert isinstance(future, Future) and fingers.busy
    with pytest.raises(GripperBusy, match=r"busy with move\(0.02, 0.05\)"):
        fingers.grasp(0.01)
    fingers.release.set()
    assert future.result(timeout=10.0) is True and not fingers.busy
    assert fingers.move(0.03) is True  # free again


def test_stop_ends_the_running_command_which_returns_false(fingers):
    fingers.release.clear()
    future = fingers.grasp(0.01, wait=False)
    assert fingers.stop() is True
    assert future.result(timeout=10.0) is False and fingers.width == 0.08


def test_a_fault_the_hardware_reports_keeps_its_text(fingers):
    fingers.release.clear()
    future = fingers.move(0.02, wait=False)
    fingers.aborted = True  # an abort nobody asked for
    fingers.release.set()
    with pytest.raises(HardwareFault, match="fingers: command aborted"):
        future.result(timeout=10.0)


@pytest.mark.parametrize("call, message", [
    (lambda g: g.move(math.nan), "width must be finite"),
    (lambda g: g.move(0.09), r"width must be within \[0, 0.08\] m"),
    (lambda g: g.move(-0.001), "width must be within"),
    (lambda g: g.move("wide"), "width must be a number"),
    (lambda g: g.move(True), "width must be a number"),
    (lambda g: g.move(0.04, speed=0.0), r"speed must be within \(0, 0.1\] m/s"),
    (lambda g: g.move(0.04, speed=math.inf), "speed must be finite"),
    (lambda g: g.grasp(0.04, force=101.0), r"force must be within \[0, 100\] N"),
    (lambda g: g.grasp(0.04, force=math.nan), "force must be finite"),
    (lambda g: g.grasp(0.04, epsilon_inner=-0.001), "epsilons must be >= 0"),
])
def test_bad_input_is_refused_with_a_clear_error_before_the_hardware(fingers, call, message):
    with pytest.raises(InvalidArgument, match=message):
        call(fingers)
    assert fingers.calls == [] and not fingers.busy


def test_numpy_numbers_are_accepted(fingers):
    assert fingers.move(np.float32(0.04), np.float64(0.05)) is True


def test_a_gripper_not_connected_says_so():
    with pytest.raises(RobohalError, match="not connected"):
        HeldFingers().move(0.04)


def test_disconnect_stops_a_running_command(fingers):
    fingers.release.clear()
    future = fingers.move(0.01, wait=False)
    fingers.disconnect()
    assert future.result(timeout=10.0) is False and not fingers.connected


def test_a_robot_without_tools_has_no_gripper_and_no_signals():
    with robohal.connect("sim://?model=generic.planar2&realtime=0") as robot:
        assert robot.gripper is None
        assert len(robot.io) == 0
        with pytest.raises(UnknownNameError, match=r"unknown I/O signal of .* 'vacuum'"):
            robot.io["vacuum"]


def test_a_robot_connects_and_closes_its_gripper_with_the_arm():
    from robohal.sim.backend import SimBackend
    from robohal.uri import parse_uri

    model = robohal.get_model("generic.planar2")
    gripper = HeldFingers()
    robot = robohal.Robot(SimBackend(parse_uri("sim://?model=generic.planar2&realtime=0"), model), model,
                          gripper=gripper)
    with robot:
        assert gripper.connected and robot.gripper.move(0.04) is True
    assert not gripper.connected and not robot.backend.connected


class Outputs:
    def __init__(self) -> None:
        self.values = {"vacuum": False, "pressure": 0.0, "part_present": True}

    def read(self, name):
        return self.values[name]

    def write(self, name, value):
        self.values[name] = value


@pytest.fixture
def io():
    outputs = Outputs()
    signals = {"vacuum": Signal("vacuum"), "pressure": Signal("pressure", "analog"),
               "part_present": Signal("part_present", direction="input")}
    return IoPorts(signals, read=outputs.read, write=outputs.write, owner="test cell"), outputs


def test_io_reads_and_writes_declared_signals_by_name(io):
    ports, outputs = io
    ports["vacuum"] = True
    ports["pressure"] = 0.5
    assert ports["vacuum"] is True and ports["pressure"] == 0.5 and ports["part_present"] is True
    assert outputs.values["vacuum"] is True and sorted(ports) == ["part_present", "pressure", "vacuum"]


@pytest.mark.parametrize("name, value, error, message", [
    ("vacum", True, UnknownNameError, "unknown I/O signal of test cell 'vacum'; did you mean vacuum"),
    ("part_present", True, InvalidArgument, "is an input"),
    ("vacuum", 2, InvalidArgument, "set it to True or False"),
    ("vacuum", "on", InvalidArgument, "set it to True or False"),
    ("pressure", math.nan, InvalidArgument, "must be finite"),
])
def test_io_refuses_unknown_names_inputs_and_bad_values(io, name, value, error, message):
    ports, outputs = io
    before = dict(outputs.values)
    with pytest.raises(error, match=message):
        ports[name] = value
    assert outputs.values == before


def test_a_signal_of_an_unknown_kind_is_refused():
    with pytest.raises(InvalidArgument, match="kind is 'digital' or 'analog'"):
        Signal("x", kind="pwm")
