"""The third servo as robot.gripper (tool=gripper, the simulators' default) and as a pen lift
(tool=pen, robot.io["pen_down"]), through the backend's real serial link to the emulated board."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import robohal
from robohal import GripperBusy
from robohal.errors import ConnectionLost, InvalidArgument, UriError
from robohal.uri import RobotUri
from robohal_arduino_planar import wire as p
from robohal_arduino_planar.backend import ArduinoPlanarBackend
from robohal_arduino_planar.calibration import Calibration, ToolCalibration

EMULATOR = "arduino-planar://sim?firmware=emulator&sim_boot_ms=50"
TOOL = p.TOOL_PIN


@pytest.fixture
def robot():
    with robohal.connect(EMULATOR) as robot:
        yield robot


def tool_widths(robot, mark: int, count: int = 3) -> list[float]:
    """The widths on D6 after `mark`, once `count` pulses came."""
    robot.simulator.wait_pulses(mark, count, TOOL)
    return [pulse.width_us for pulse in robot.simulator.pulses_since(mark, TOOL)]


def test_the_simulators_come_with_a_gripper_and_hardware_names_its_tool(robot) -> None:
    assert robot.gripper is not None and not robot.io
    assert robot.backend.tool == "gripper"
    uri = RobotUri("arduino-planar", path="/dev/ttyACM0", params={"model": "arduino.planar2"})
    registry_model = robot.model
    assert ArduinoPlanarBackend(uri, registry_model).tool == "none"  # real hardware: named or none
    with pytest.raises(UriError, match="tool='claw'"):
        ArduinoPlanarBackend(uri.with_params(tool="claw"), registry_model)
    with robohal.connect(EMULATOR + "&tool=none") as bare:
        assert bare.gripper is None and not bare.io


def test_open_close_and_grasp_put_the_calibrated_widths_on_d6(robot) -> None:
    gripper, tool = robot.gripper, robot.backend.calibration.tool
    assert gripper.homing() is True
    assert gripper.state.width == pytest.approx(tool.width) and gripper.max_width == tool.width
    mark = robot.simulator.mark()
    assert gripper.close() is True
    assert gripper.state.width == 0.0 and gripper.state.is_grasped
    assert tool_widths(robot, mark)[-1] == tool.closed_us
    mark = robot.simulator.mark()
    assert gripper.open() is True and not gripper.state.is_grasped
    assert tool_widths(robot, mark)[-1] == tool.open_us
    # grasp: squeeze to width - epsilon_inner; is_grasped says a grasp was commanded
    assert gripper.grasp(0.02, epsilon_inner=0.004) is True
    assert gripper.state.width == pytest.approx(0.016, abs=tool.width / abs(tool.open_us - tool.closed_us))
    assert gripper.state.is_grasped
    assert gripper.move(0.03) is True and not gripper.state.is_grasped


def test_a_move_ramps_at_the_speed_asked(robot) -> None:
    gripper = robot.gripper
    gripper.open()
    mark = robot.simulator.mark()
    began = time.monotonic()
    gripper.move(0.0, speed=0.1)  # 40 mm at 0.1 m/s: 0.4 s, in 20 ms steps
    took = time.monotonic() - began
    widths = [w for w in tool_widths(robot, mark) if w]
    assert widths == sorted(widths, reverse=True), "closing steadily"
    assert len(set(widths)) >= 10, "in steps, not one jump"
    assert took >= 0.4


@pytest.mark.parametrize("bad", [
    lambda g: g.move(float("nan")), lambda g: g.move(math.inf), lambda g: g.move(-0.001),
    lambda g: g.move(g.max_width + 0.001), lambda g: g.move("wide"), lambda g: g.move(0.01, speed=0.0),
    lambda g: g.move(0.01, speed=g.limits.max_speed * 1.01), lambda g: g.move(0.01, speed=float("nan")),
    lambda g: g.grasp(0.01, force=1.0), lambda g: g.grasp(0.01, epsilon_inner=-0.001),
])
def test_bad_input_is_refused_before_the_wire(robot, bad) -> None:
    gripper = robot.gripper
    sent = robot.backend.counters["bytes_sent"]
    with pytest.raises(InvalidArgument):
        bad(gripper)
    assert robot.backend.counters["bytes_sent"] == sent and not gripper.busy


def test_a_command_while_busy_is_refused_and_the_arm_keeps_moving(robot) -> None:
    gripper = robot.gripper
    gripper.open()
    closing = gripper.close(speed=gripper.limits.max_speed / 8, wait=False)
    with pytest.raises(GripperBusy):
        gripper.move(0.0)
    target = np.radians([20.0, -20.0])
    assert robot.move_joints(target, speed=1.0).completed
    assert not closing.done(), "the arm moved while the gripper was still closing"
    assert closing.result(timeout=10.0) is True
    assert np.allclose(robot.state.q, target, atol=2e-3)


def test_stop_ends_a_move_where_the_claw_is(robot) -> None:
    gripper = robot.gripper
    gripper.open()
    closing = gripper.close(speed=gripper.limits.max_speed / 8, wait=False)
    deadline = time.monotonic() + 5.0
    while gripper.state.width > 0.03 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gripper.stop() is True
    assert closing.result(timeout=5.0) is False
    width = gripper.state.width
    assert 0.0 < width < gripper.max_width and not gripper.state.is_grasped
    mark = robot.simulator.mark()
    assert all(w == robot.backend.tool_pulse for w in tool_widths(robot, mark)), "it holds there"


def test_a_lost_link_ends_the_command_with_an_error_and_never_hangs() -> None:
    robot = robohal.connect(EMULATOR)
    try:
        gripper = robot.gripper
        gripper.open()
        closing = gripper.close(speed=gripper.limits.max_speed / 20, wait=False)
        robot.simulator.stop()  # the board is unplugged mid-move
        with pytest.raises(ConnectionLost):
            closing.result(timeout=10.0)
        assert not gripper.busy
        with pytest.raises(ConnectionLost):
            gripper.move(0.01)
    finally:
        robot.close()  # closing what is left of the link raises nothing


def test_a_reset_board_gets_the_tools_width_back(robot) -> None:
    gripper = robot.gripper
    gripper.move(0.01)
    width_us = robot.backend.tool_pulse
    resets = len(robot.simulator.resets())
    robot.simulator.control("RESET")
    deadline = time.monotonic() + 10.0
    while len(robot.simulator.resets()) == resets and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(robohal.HardwareFault, match="MCU_RESET"):
        robot.move_joints([0.05, 0.0], speed=1.0)
    mark = robot.simulator.mark()
    assert tool_widths(robot, mark)[-1] == width_us, "re-held after the reset"


def test_the_pen_lift_is_a_digital_output() -> None:
    with robohal.connect(EMULATOR + "&tool=pen&tool_open_us=1800&tool_closed_us=1200") as robot:
        assert robot.gripper is None and list(robot.io) == ["pen_down"]
        assert robot.io["pen_down"] is False
        mark = robot.simulator.mark()
        robot.io["pen_down"] = True
        assert robot.io["pen_down"] is True and tool_widths(robot, mark)[-1] == 1200
        mark = robot.simulator.mark()
        robot.io["pen_down"] = False
        assert robot.io["pen_down"] is False and tool_widths(robot, mark)[-1] == 1800
        with pytest.raises(InvalidArgument):
            robot.io["pen_down"] = 0.5


def test_the_tool_calibration_reads_from_file_and_uri(tmp_path) -> None:
    path = tmp_path / "cal.toml"
    path.write_text("[tool]\nmin_us = 800\nmax_us = 2200\nopen_us = 2100\nclosed_us = 900\nwidth = 0.05\n")
    uri = RobotUri("arduino-planar", path="/dev/x", params={"calibration": str(path), "tool_speed": "5.0"})
    tool = Calibration.from_uri(uri).tool
    assert (tool.min_us, tool.max_us, tool.open_us, tool.closed_us, tool.width, tool.speed) == \
        (800, 2200, 2100, 900, 0.05, 5.0)
    assert tool.to_us(0.05) == 2100 and tool.to_us(0.0) == 900 and tool.to_width(1500) == pytest.approx(0.025)
    assert Calibration.from_mapping({}, Calibration.from_file(path)).tool == tool.__class__(**{
        **tool.__dict__, "speed": ToolCalibration().speed})
    roundtrip = tmp_path / "again.toml"
    roundtrip.write_text(Calibration.from_uri(uri).to_toml())
    assert Calibration.from_file(roundtrip).tool == tool
    for bad in ({"open_us": 2300}, {"closed_us": 1000, "open_us": 1000}, {"width": 0}, {"speed": "fast"},
                {"grip": 1}):
        with pytest.raises(InvalidArgument):
            Calibration.from_mapping({"tool": bad})
