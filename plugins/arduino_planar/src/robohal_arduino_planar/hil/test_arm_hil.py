"""HIL suite of the arm files' servo arms: runs against every ``arduino-arm`` target (an arm file on the
robohal firmware: in simavr where the AVR toolchain is installed, and on its emulator) and every
``arduino-firmata`` target (the same arm on StandardFirmata).

    robohal hil --target 'arduino-arm://sim?arm=mearm&firmware=simavr'
    robohal hil --target 'arduino-firmata://sim?arm=mearm'

The simulators report every pulse on every pin; on a real board these tests are skipped (measure
the pulses with a scope or a logic analyser there: the same figures apply).
"""

from __future__ import annotations

import time

import pytest
from robohal import HardwareFault
from robohal.robot import Robot
from robohal.testing.target import HilTarget

pytestmark = pytest.mark.hil_backend("arduino-arm", "arduino-firmata")

# The firmware's pulses measure within 1 us of the command in simavr (PROTOCOL.md, Channels), the
# emulator's and the Firmata board's are exact: the figure an arm file's calibration can count on.
PULSE_TOLERANCE_US = 1.0


@pytest.fixture
def sim(hil_target: HilTarget):
    simulator = hil_target.simulator
    if simulator is None or not hasattr(simulator, "control"):
        pytest.skip("needs the bundled simulator's pulse reports and fault injection")
    return simulator


def held_pulses(robot: Robot, sim, pin: int, frames: int = 4) -> list[float]:
    """The pin's pulse widths over ``frames`` frames from the next one on, while the host holds."""
    robot.backend.cycle()
    mark = sim.mark()
    pulses = sim.wait_pulses(mark, frames + 1, pin, timeout=10.0)
    robot.backend.cycle()  # keep a watchdog fed
    return [pulse.width_us for pulse in pulses[1:]]


def test_every_joint_pin_pulses_its_calibrated_width(robot: Robot, sim) -> None:
    limits = robot.model.limits
    for fraction in (0.5, 0.2, 0.8):
        target = limits.lower + fraction * (limits.upper - limits.lower)
        assert robot.move_joints(target, speed=1.0).completed
        for joint, pin in enumerate(robot.backend.pins):
            expected = robot.backend.calibration.servos[joint].to_us(target[joint])
            widths = held_pulses(robot, sim, pin)
            assert widths and max(abs(w - expected) for w in widths) <= PULSE_TOLERANCE_US, (
                f"pin {pin} ({robot.backend.arm.joints[joint].name}): {widths} us, calibrated {expected} us")


def test_the_gripper_pin_pulses_what_the_gripper_holds(robot: Robot, sim) -> None:
    if robot.gripper is None:
        pytest.skip("the arm has no gripper")
    grip = robot.backend.arm.gripper
    for width in (robot.gripper.state.max_width, 0.0):
        robot.gripper.move(width)
        widths = held_pulses(robot, sim, grip.pin)
        assert widths and max(abs(w - robot.backend.tool_pulse) for w in widths) <= PULSE_TOLERANCE_US
        assert grip.min_us <= robot.backend.tool_pulse <= grip.max_us


@pytest.mark.needs_feature("mcu-reset")
def test_a_reset_is_reported_and_the_position_held_again(robot: Robot, sim) -> None:
    limits = robot.model.limits
    target = limits.lower + 0.3 * (limits.upper - limits.lower)
    assert robot.move_joints(target, speed=1.0).completed
    held = robot.state.info["pulses_us"]
    sim.control("RESET")
    with pytest.raises(HardwareFault) as fault:
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            robot.backend.cycle()
    assert "MCU_RESET" in fault.value.names
    assert robot.recover().info["pulses_us"] == held
    for joint, pin in enumerate(robot.backend.pins):
        widths = held_pulses(robot, sim, pin)
        assert widths and max(abs(w - held[joint]) for w in widths) <= PULSE_TOLERANCE_US


@pytest.mark.hil_backend("arduino-arm")
def test_host_silence_trips_the_firmware_watchdog(hil_target: HilTarget, sim) -> None:
    """The robohal firmware stops every channel when the host goes quiet (StandardFirmata has no
    such watchdog: there the servos keep their last widths)."""
    robot = hil_target.connect(watchdog_ms="300", keepalive="0")
    try:
        limits = robot.model.limits
        assert robot.move_joints(limits.lower + 0.5 * (limits.upper - limits.lower), speed=1.0).completed
        pin = robot.backend.pins[0]
        assert held_pulses(robot, sim, pin)
        mark = sim.mark()
        after = []
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:  # the host is silent: no cycle, no keep-alive
            now_us = sim.stats()["sim_us"]
            after = sim.pulses_since(mark, pin)
            if after and now_us - after[-1].time_us > 200_000:  # ten frames without a pulse: stopped
                break
            time.sleep(0.05)
        assert after, "the servo pulsed until the watchdog's timeout"
        assert after[-1].time_us - after[0].time_us <= 300_000 + 2 * 20_000 + 1000, "pulses outlived the watchdog"
    finally:
        robot.close()
