"""Arduino planar-arm HIL suite: runs against every ``arduino-planar`` target (default: the real
firmware in simavr, where the AVR toolchain is installed, and the Python emulator).

    pytest --pyargs robohal_arduino_planar.hil
    robohal hil --target 'arduino-planar://sim?model=arduino.planar2&firmware=simavr'

The simulators measure every servo pulse on D9/D10 (and the tool's on D6), model each servo's horn slewing toward its
pulse at the servo's rated speed (the SG90's by default), and take fault injection (reset,
garbage bytes), so these tests need one; on a real board they are skipped (measure the pulses
with a scope or logic analyser, and the horns with a camera or a protractor there: the same
figures apply).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest
from robohal import HardwareFault
from robohal.motion import JointTrajectory
from robohal.robot import Robot
from robohal.testing.target import HilTarget

from robohal_arduino_planar.wire import TOOL_PIN

pytestmark = pytest.mark.hil_backend("arduino-planar")

PULSE_TOLERANCE_US = 8.0
PINS = (9, 10)
FRAME_US = 20000.0  # the firmware's 50 Hz servo frame (PROTOCOL.md, Pulses)


@pytest.fixture
def sim(hil_target: HilTarget):
    """The target's simulator (pulse reports and control lines), or a skip on real hardware."""
    simulator = hil_target.simulator
    if simulator is None or not hasattr(simulator, "control"):
        pytest.skip("needs the bundled simulator's pulse reports and fault injection")
    return simulator


@pytest.fixture
def horns(sim):
    """The simulator, where it reports the servos' horns (the bundled ones do)."""
    if not hasattr(sim, "horns_since"):
        pytest.skip("needs a simulator that reports the servo horns")
    return sim


@pytest.fixture
def robot_with(hil_target: HilTarget) -> Iterator:
    """connect(**params) -> Robot on the target with extra URI parameters, closed after the test."""
    robots: list[Robot] = []

    def connect(**params: str) -> Robot:
        robot = hil_target.connect(**params)  # held to the cell's safety settings, as `robot` is
        robots.append(robot)
        return robot

    yield connect
    for robot in robots:
        robot.close()


def settled_pulses(sim, robot: Robot, frames: int = 5) -> dict[int, np.ndarray]:
    """Pulse widths on both pins over ``frames`` frames, starting two frames after now
    (a width change shows from the next 20 ms frame on), while the host holds."""
    for _ in range(3):
        robot.backend.cycle()
    mark = sim.mark()
    widths = {}
    for pin in PINS:
        pulses = sim.wait_pulses(mark, frames, pin, timeout=10.0)
        widths[pin] = np.array([pulse.width_us for pulse in pulses])
    for _ in range(2):
        robot.backend.cycle()  # keep the watchdog fed meanwhile
    return widths


def test_pulse_widths_match_commanded_angles(robot: Robot, sim) -> None:
    calibration = robot.backend.calibration
    targets = np.radians([[0.0, 0.0], [30.0, -45.0], [-60.0, 80.0], [89.0, -89.0]])
    for target in targets:
        assert robot.move_joints(target, speed=1.0).completed
        widths = settled_pulses(sim, robot)
        for joint, pin in enumerate(PINS):
            # the exact width of the commanded angle, not the rounded one the wire carried
            servo = calibration.servos[joint]
            expected = servo.offset_us + servo.direction * servo.scale_us_per_rad * target[joint]
            measured = widths[pin]
            assert len(measured) >= 5, f"too few pulses on D{pin}: {measured}"
            worst = float(np.abs(measured - expected).max())
            assert worst <= PULSE_TOLERANCE_US, (
                f"D{pin}: pulses {measured} us for {np.degrees(target[joint]):.1f} deg (expected {expected:.1f} us)")


def expected_width(robot: Robot, joint: int, angle: float) -> float:
    """The exact pulse width of a joint angle by the calibration (not rounded to the wire's 1 us)."""
    servo = robot.backend.calibration.servos[joint]
    return servo.offset_us + servo.direction * servo.scale_us_per_rad * angle


def test_servo_horns_reach_the_commanded_angles_within_the_settle_time(robot: Robot, horns, hil_target) -> None:
    """The backend has no position feedback, so its promise is the servos': once a motion is
    done, the arm is physically there within the backend's settle time."""
    settle_us = hil_target.spec.settle_time * 1e6
    for target in np.radians([[60.0, -70.0], [-80.0, 85.0], [0.0, 0.0]]):
        assert robot.move_joints(target, speed=1.0).completed
        mark = horns.horn_mark()
        deadline = time.monotonic() + 10.0 + hil_target.spec.settle_time
        reports: dict[int, list] = {}
        while time.monotonic() < deadline:
            robot.backend.cycle()  # hold, and keep the watchdog fed
            reports = {pin: horns.horns_since(mark, pin) for pin in PINS}
            if all(r and r[-1].time_us - r[0].time_us >= settle_us for r in reports.values()):
                break
        for joint, pin in enumerate(PINS):
            found = reports.get(pin) or []
            assert found and found[-1].time_us - found[0].time_us >= settle_us, f"too few horn reports on D{pin}"
            settled = [h.position_us for h in found if h.time_us - found[0].time_us >= settle_us]
            expected = expected_width(robot, joint, target[joint])
            assert np.abs(np.array(settled) - expected).max() <= PULSE_TOLERANCE_US, (
                f"D{pin}: the horn is at {settled} us {hil_target.spec.settle_time:g} s after the motion,"
                f" commanded {expected:.1f} us ({np.degrees(target[joint]):.1f} deg)")


def test_servo_horns_keep_up_with_a_full_speed_motion(robot: Robot, horns) -> None:
    """At the model's top joint speed each horn stays within one servo frame of its pulses: the
    model's speed limit is one the servos can follow, so the plan is what the arm does."""
    assert robot.move_joints(np.radians([-60.0, 60.0]), speed=1.0).completed
    pulse_mark, horn_mark = horns.mark(), horns.horn_mark()
    assert robot.move_joints(np.radians([60.0, -60.0]), speed=1.0).completed
    for pin in PINS:
        pulses = horns.pulses_since(pulse_mark, pin)
        checked = 0
        for horn in horns.horns_since(horn_mark, pin):
            # its own pulse ended at the horn report; the one before came a frame earlier
            before = [pulse for pulse in pulses if pulse.time_us < horn.time_us]
            if len(before) < 2 or abs(before[-1].time_us - before[-2].time_us - FRAME_US) > 100:
                continue  # no whole frame before it in the record
            low = min(before[-1].width_us, before[-2].width_us) - PULSE_TOLERANCE_US
            high = max(before[-1].width_us, before[-2].width_us) + PULSE_TOLERANCE_US
            assert low <= horn.position_us <= high, (
                f"D{pin}: the horn at {horn.position_us:.1f} us lags the pulses"
                f" ({before[-2].width_us:.1f}, {before[-1].width_us:.1f} us) by more than a frame")
            checked += 1
        assert checked >= 20, f"D{pin}: only {checked} horn reports during the motion"


def test_reset_mid_stream_detected_and_recovered(robot: Robot, sim) -> None:
    assert robot.move_joints(np.radians([20.0, -20.0]), speed=1.0).completed
    # a slow motion is streaming when the board resets
    start = robot.backend.commanded
    path = start + np.linspace(0, 1, 400)[:, None] * np.radians([20.0, 20.0])
    resets_before = robot.backend.counters["resets"]
    robot.run(JointTrajectory(path), wait=False)
    time.sleep(0.3)
    sim.control("RESET")
    deadline = time.monotonic() + 20.0
    while robot.backend.busy and time.monotonic() < deadline:
        time.sleep(0.02)
    with pytest.raises(HardwareFault) as fault:
        robot.wait()
    assert fault.value.names == ("MCU_RESET",) and fault.value.recoverable
    assert robot.backend.counters["resets"] == resets_before + 1
    stale_target = robot.backend.commanded  # the setpoint in flight when the board went away
    state = robot.recover()
    held = state.q
    # it holds where the servos were last acknowledged, never the newer target that was lost
    assert np.allclose(robot.backend.commanded, held)
    assert np.allclose(held, robot.backend.calibration.to_joints(state.info["pulses_us"]))
    assert np.abs(held - stale_target).max() < np.radians(2.0)  # and that is close to where it was going
    widths = settled_pulses(sim, robot)
    for joint, pin in enumerate(PINS):
        assert np.abs(widths[pin] - state.info["pulses_us"][joint]).max() <= PULSE_TOLERANCE_US
    # and it moves again
    assert robot.move_joints(np.radians([0.0, 0.0]), speed=1.0).completed


def test_garbage_on_the_line_is_counted_not_fatal(robot: Robot, sim) -> None:
    assert robot.move_joints(np.radians([10.0, 10.0]), speed=1.0).completed
    garbage_before = robot.backend.counters["garbage_lines"]
    firmware_before = dict(robot.backend.firmware_counters)
    noise_to_host = (b"\x00\xff\x13garbage\r\n" + b"ACK 7 1500 *ZZ\n" + b"STATE bogus\n").hex()
    noise_to_board = b"\x01\x02 nonsense *00\n".hex()
    path = robot.backend.commanded + np.linspace(0, 1, 150)[:, None] * np.radians([10.0, -10.0])
    robot.run(JointTrajectory(path), wait=False)
    for _ in range(3):
        time.sleep(0.3)
        sim.control(f"INJECT_TX {noise_to_host}")
        sim.control(f"INJECT_RX {noise_to_board}")
    result = robot.wait(timeout=30.0)
    assert result is not None and result.completed
    assert np.allclose(robot.state.q, path[-1], atol=2e-3)
    assert robot.backend.counters["garbage_lines"] >= garbage_before + 3
    for _ in range(30):  # long enough for a counter poll
        robot.backend.cycle()
    counters = robot.backend.firmware_counters
    firmware_refused = sum(counters[k] - firmware_before.get(k, 0) for k in ("garbage", "bad_checksum"))
    assert firmware_refused >= 3, counters


def test_host_silence_trips_the_watchdog_in_the_pulses(robot_with, sim) -> None:
    robot = robot_with(keepalive="0", watchdog_ms="200", watchdog_action="detach")
    assert robot.move_joints(np.radians([15.0, -15.0]), speed=1.0).completed
    mark = sim.mark()
    time.sleep(0.8)  # the host goes silent
    silent = sim.pulses_since(mark)
    assert silent, "the servos should pulse until the watchdog trips"
    trip = max(pulse.time_us for pulse in silent)
    last_pulses_end = trip - min(pulse.time_us for pulse in silent)
    assert last_pulses_end < 0.5e6, "pulses went on for longer than the watchdog allows"
    quiet = sim.mark()
    time.sleep(0.3)
    assert sim.pulses_since(quiet) == [], "detach: no pulses after the watchdog tripped"
    # speaking again re-attaches at the held position
    state = robot.backend.cycle()
    assert all(state.info["attached"])
    widths = settled_pulses(sim, robot)
    for joint, pin in enumerate(PINS):
        assert np.abs(widths[pin] - state.info["pulses_us"][joint]).max() <= PULSE_TOLERANCE_US


def test_command_burst_never_overflows_the_firmware_buffer(robot_with) -> None:
    robot = robot_with(rate="200", poll="100")
    before = robot.backend.counters.copy()
    start = robot.backend.commanded
    # 400 setpoints as fast as the board acknowledges them (5 ms period)
    path = start + np.sin(np.linspace(0, np.pi, 400))[:, None] * np.radians([5.0, -5.0])
    assert robot.run(JointTrajectory(path)).completed
    assert robot.backend.counters["cycles"] - before["cycles"] == len(path)
    for _ in range(100):  # hold until the backend has read the firmware's counters again
        robot.backend.cycle()
    counters = robot.backend.firmware_counters
    assert counters["frames_ok"] >= len(path)
    assert counters["overflow"] == 0 and counters["bad_checksum"] == 0 and counters["garbage"] == 0, counters
    assert counters["rejected"] == 0, counters
    assert robot.backend.counters["resends"] == before["resends"]


# The tool servo (D6) --------------------------------------------------------------------------


def gripper_of(robot: Robot):
    if robot.gripper is None:
        pytest.skip(f"{robot.name} names no gripper (tool=gripper; the simulators have one by default)")
    return robot.gripper


def test_gripper_grasps_and_releases_through_the_protocol(robot: Robot) -> None:
    """Every step acknowledged by the firmware (TOOL, answered with the width on D6); on real
    hardware, put an object of 10-20 mm between the fingers and watch it held and let go."""
    gripper = gripper_of(robot)
    tool = robot.backend.calibration.tool
    assert gripper.homing() is True and gripper.state.width == pytest.approx(gripper.max_width)
    assert gripper.grasp(0.015, epsilon_inner=0.005) is True
    state = gripper.state
    assert state.is_grasped and state.width == pytest.approx(0.010, abs=tool.width / abs(tool.open_us - tool.closed_us))
    assert robot.backend.tool_pulse == tool.to_us(0.010)
    assert gripper.open() is True
    assert not gripper.state.is_grasped and robot.backend.tool_pulse == tool.open_us


def test_gripper_widths_reach_the_tool_pin_and_its_horn(robot: Robot, horns) -> None:
    gripper = gripper_of(robot)
    tool = robot.backend.calibration.tool
    for width in (0.0, gripper.max_width / 2, gripper.max_width):
        assert gripper.move(width) is True
        target = tool.to_us(width)
        mark, horn_mark = horns.mark(), horns.horn_mark()
        pulses = horns.wait_pulses(mark, 5, TOOL_PIN, timeout=10.0)
        robot.backend.cycle()  # keep the watchdog fed meanwhile
        assert all(abs(pulse.width_us - target) <= PULSE_TOLERANCE_US for pulse in pulses)
        # the move returned once the horn had the time to get there: it is there at the next pulse
        assert abs(horns.horns_since(horn_mark, TOOL_PIN)[0].position_us - target) <= PULSE_TOLERANCE_US
