"""Feetech servo-arm HIL suite: runs against every ``feetech`` target (default: the SO-101 on the
simulated servo bus).

    pytest --pyargs robohal_feetech.hil
    robohal hil --target 'feetech:///dev/ttyACM0?arm=so101&calibration=~/so101.json'

On a real arm the telemetry and tracking tests run as they are (small moves); the fault
injection tests need the simulator (they drop packets, cut a servo off, lower the supply) and
skip on hardware: try those faults by hand there (pull a servo's cable, and see it named).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from robohal import ConnectionLost, HardwareFault
from robohal.robot import Robot
from robohal.testing.contract import small_target
from robohal.testing.target import HilTarget

pytestmark = pytest.mark.hil_backend("feetech")


def wait_for(condition, timeout: float = 10.0, step=None) -> bool:
    """Poll ``condition`` (calling ``step`` between) until it holds or ``timeout`` s pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if step is not None:
            step()
        else:
            time.sleep(0.01)
    return bool(condition())


@pytest.fixture
def simulated(hil_target: HilTarget) -> HilTarget:
    if hil_target.simulator is None or not hasattr(hil_target.simulator, "control"):
        pytest.skip("needs the simulated servo bus's fault injection")
    return hil_target


def test_every_servo_reports_its_telemetry_in_si_units(robot: Robot) -> None:
    state = robot.backend.cycle()
    ids = state.info["servo_ids"]
    assert len(ids) == len(robot.backend.arm.ids)
    for volts, degrees, amps in zip(state.info["voltage_V"], state.info["temperature_C"], state.info["current_A"],
                                    strict=True):
        assert 3.0 < volts < 15.0, f"{volts} V is no servo supply"
        assert 0.0 < degrees < 90.0
        assert abs(amps) < 5.0


def test_a_move_is_tracked_and_each_goal_stays_in_the_calibrated_range(robot: Robot, hil_target: HilTarget) -> None:
    target = small_target(robot, size=np.radians(5.0))
    result = robot.move_joints(target, speed=0.5)
    assert result.completed
    lag = np.abs(result.measured - result.commanded).max()
    assert lag < np.radians(5.0), f"the servos lagged {np.degrees(lag):.2f} deg behind their goals"
    robot.backend.check_setpoints(result.commanded)  # every setpoint sent was inside the calibrated range


def test_the_jaw_opens_and_closes_by_width(robot: Robot) -> None:
    gripper = robot.gripper
    if gripper is None:
        pytest.skip("this arm has no gripper")
    assert gripper.move(0.04) is True
    assert abs(gripper.state.width - 0.04) < 0.003
    assert gripper.open() is True


def test_lost_status_packets_are_asked_for_again_and_counted(robot: Robot, simulated: HilTarget) -> None:
    counters = robot.backend.counters
    before = {name: counters[name] for name in ("retries", "missing_status", "corrupt_status")}
    simulated.simulator.control("DROP 2")
    simulated.simulator.control("CORRUPT 1")
    assert wait_for(lambda: counters["missing_status"] >= before["missing_status"] + 2
                    and counters["corrupt_status"] > before["corrupt_status"], step=robot.backend.cycle)
    assert counters["retries"] > before["retries"]
    robot.backend.cycle()  # and the link goes on


def test_a_silent_servo_is_named(simulated: HilTarget) -> None:
    with simulated.dedicated_simulators() as start:
        target = start()
        with target.connect() as robot:
            target.simulator.control("SILENT 3")
            with pytest.raises(ConnectionLost, match=r"servo 3 \(elbow_flex\)"):
                wait_for(lambda: False, timeout=5.0, step=robot.backend.cycle)


def test_a_sagging_supply_warns_then_faults(simulated: HilTarget) -> None:
    with simulated.dedicated_simulators() as start:
        target = start()
        with target.connect() as robot:
            target.simulator.control("SUPPLY 4.3")
            assert wait_for(lambda: robot.backend.counters["voltage_warnings"] > 0, step=robot.backend.cycle)
            target.simulator.control("SUPPLY 3.5")
            with pytest.raises(HardwareFault, match=r"servo \d \(\w+\) measures 3\.\d V, past the arm file's fault bound"):
                wait_for(lambda: False, timeout=5.0, step=robot.backend.cycle)
            with pytest.raises(HardwareFault):
                robot.recover()  # the cause persists
            target.simulator.control("SUPPLY 7.4")
            assert wait_for(lambda: _recovers(robot))


def _recovers(robot: Robot) -> bool:
    try:
        robot.recover()
    except HardwareFault:
        return False
    return True
