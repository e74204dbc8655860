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
from robohal.control.tools import Gripper, GripperBusy, GripperLimits, GripperState, IoPorts, Signal, SignalGripper
from robohal.errors import ConnectionLost, HardwareFault, InvalidArgument, RobohalError, UnknownNameError

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



# A two-state gripper on signals -------------------------------------------------------------


class PneumaticTool:
    """A gripper's signals: ``closed`` follows the output ``valve`` on the ``lag``-th read after a
    switch (reads, not time: nothing here depends on the machine's speed); ``part`` is a sensor
    the test sets; ``stuck`` keeps the feedback where it is, ``lost`` makes every read fail."""

    def __init__(self, lag: int = 3) -> None:
        self.valve, self.closed, self.part = False, False, False
        self.lag, self.reads_since_switch = lag, 0
        self.stuck, self.lost = False, False

    def read(self, name):
        if self.lost:
            raise ConnectionLost("the cell's link is lost")
        if name == "closed":
            self.reads_since_switch += 1
            if self.reads_since_switch >= self.lag and not self.stuck:
                self.closed = self.valve
        return {"valve": self.valve, "closed": self.closed, "part": self.part}[name]

    def write(self, name, value):
        if self.lost:
            raise ConnectionLost("the cell's link is lost")
        if value != self.valve:
            self.valve, self.reads_since_switch = value, 0


def pneumatic_io(tool: PneumaticTool) -> IoPorts:
    signals = {"valve": Signal("valve"), "closed": Signal("closed", direction="input"),
               "part": Signal("part", direction="input"), "level": Signal("level", "analog", "input")}
    return IoPorts(signals, read=tool.read, write=tool.write, owner="test cell")


@pytest.fixture
def pneumatic():
    tool = PneumaticTool()
    gripper = SignalGripper(pneumatic_io(tool), "valve", closed_input="closed", part_input="part", delay=0.0,
                            timeout=5.0, width=0.04).connect()
    yield gripper, tool
    gripper.disconnect()


def test_a_signal_gripper_closes_on_its_output_and_waits_for_its_feedback(pneumatic):
    gripper, tool = pneumatic
    state = gripper.state
    assert (state.width, state.max_width, state.is_grasped) == (0.04, 0.04, False), "open: its nominal width"
    tool.part = True
    assert gripper.close() is True and tool.valve and tool.closed  # it waited for the feedback
    assert gripper.state.time >= state.time
    state = gripper.state
    assert (state.width, state.max_width, state.is_grasped) == (0.0, 0.04, True)
    assert gripper.open() is True and not tool.valve and not tool.closed
    tool.part = False
    assert gripper.grasp(0.01) is False, "closed on nothing: no part"
    assert gripper.move(0.04) is True and gripper.homing() is True and not tool.closed


def test_a_signal_gripper_has_two_widths_and_checks_the_rest(pneumatic):
    gripper, tool = pneumatic
    for width in (0.02, math.nan, -0.01, 0.05):
        with pytest.raises(InvalidArgument):
            gripper.move(width)
    for bad in (lambda: gripper.grasp(0.0, force=-1.0), lambda: gripper.grasp(0.0, speed=math.inf)):
        with pytest.raises(InvalidArgument):
            bad()
    assert not tool.valve and not gripper.busy


def test_a_feedback_that_never_comes_is_a_hardware_fault_at_the_deadline():
    tool = PneumaticTool()
    tool.stuck = True
    gripper = SignalGripper(pneumatic_io(tool), "valve", closed_input="closed", delay=0.0, timeout=0.05).connect()
    try:
        with pytest.raises(HardwareFault, match=r"closed did not report closed within 0\.05 s") as fault:
            gripper.close()
        assert fault.value.names == ("gripper_timeout",) and not gripper.busy
    finally:
        gripper.disconnect()


def test_stop_ends_the_wait_and_leaves_the_output_as_it_is(pneumatic):
    gripper, tool = pneumatic
    tool.stuck = True
    closing = gripper.close(wait=False)
    with pytest.raises(GripperBusy):
        gripper.open()
    assert gripper.stop() is True
    assert closing.result(timeout=10.0) is False
    assert tool.valve, "a stop switches nothing: a vacuum switched off would drop its part"


def test_a_lost_link_is_the_command_s_error_and_the_gripper_works_again_after(pneumatic):
    gripper, tool = pneumatic
    tool.lost = True
    with pytest.raises(ConnectionLost):
        gripper.close()
    assert not gripper.busy
    tool.lost = False
    assert gripper.close() is False  # no part


@pytest.mark.parametrize("kwargs, message", [
    ({"output": "closed"}, "'closed' must be a digital output"),
    ({"output": "valve", "closed_input": "valve"}, "'valve' must be a digital input"),
    ({"output": "valve", "part_input": "level"}, "'level' must be a digital input"),
    ({"output": "nozzle"}, "unknown I/O signal"),
    ({"output": "valve", "delay": 2.0, "timeout": 1.0}, "delay <= timeout"),
    ({"output": "valve", "delay": math.nan}, "must be finite"),
    ({"output": "valve", "width": 0.0}, "width > 0"),
])
def test_a_signal_gripper_refuses_a_bad_setup(kwargs, message):
    with pytest.raises((InvalidArgument, UnknownNameError), match=message):
        SignalGripper(pneumatic_io(PneumaticTool()), **kwargs)
