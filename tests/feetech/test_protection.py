"""Protection: the gripper's torque and current limits set at connect; a stall (current and
position error persisting) holds or releases per the arm file instead of burning a servo; a
stalled arm joint is a fault that recover() clears; temperatures warn, then fault."""

from __future__ import annotations

import pytest
import robohal
from robohal import HardwareFault
from robohal.plugins.arm_files import StallRule
from robohal_feetech.arm import BUNDLED
from robohal_feetech.protection import StallTimer

from .conftest import servo_stats, wait_for


def test_a_stall_needs_current_and_error_to_persist_while_the_servo_stands() -> None:
    timer = StallTimer(StallRule(current=1.0, error=0.1, time=0.4, action="hold", hold_torque=0.3))
    assert not timer.update(0.0, 1.5, 0.2)
    assert not timer.update(0.3, 1.5, 0.2)
    assert not timer.update(0.35, 0.2, 0.2)  # the current fell: it starts again
    assert not timer.update(0.5, 1.5, 0.2) and not timer.update(0.8, 1.5, 0.2)
    assert not timer.update(0.95, 1.5, 0.2, speed=1.0)  # turning: moving, not stalled
    assert not timer.update(1.0, 1.5, 0.2) and timer.update(1.45, 1.5, 0.2)
    assert not timer.update(1.5, 1.5, 0.2), "declared once"
    timer.clear()
    assert not timer.update(2.0, 0.5, 0.2, load=0.29, load_limit=0.3)  # at its (lowered) torque limit
    assert timer.update(2.5, 0.5, 0.2, load=0.29, load_limit=0.3)


def test_the_jaw_limits_are_set_at_connect_and_a_grasp_holds_at_the_hold_torque(simulators) -> None:
    simulator = simulators(object="0.03")
    with robohal.connect(str(simulator.uri)) as robot:
        jaw = servo_stats(simulator, 6)
        assert jaw["torque_limit"] == 500  # the arm file's 0.5 of the stall torque
        assert servo_stats(simulator, 1)["torque_limit"] == 1000
        gripper = robot.gripper
        assert gripper.open() is True
        assert gripper.grasp(0.03, epsilon_inner=0.004, epsilon_outer=0.004) is True
        assert gripper.state.is_grasped and abs(gripper.state.width - 0.03) < 0.004
        assert robot.backend.counters["stalls"] == 1
        assert wait_for(lambda: servo_stats(simulator, 6)["torque_limit"] == 300)  # hold_torque 0.3: no burning
        assert abs(servo_stats(simulator, 6)["current"]) <= 0.31 * 2.7 + 0.2
        assert robot.lifecycle.value == "ready", "a grasp is no fault"
        assert gripper.open() is True and not gripper.state.is_grasped
        assert wait_for(lambda: servo_stats(simulator, 6)["torque_limit"] == 500)


def test_a_grasp_on_nothing_closes_and_says_so(simulator) -> None:
    with robohal.connect(str(simulator.uri)) as robot:
        robot.gripper.open()
        assert robot.gripper.grasp(0.03, epsilon_inner=0.004, epsilon_outer=0.004) is False
        assert robot.gripper.state.width < 0.005


def test_a_blocked_arm_joint_stalls_is_held_and_recovers(simulator) -> None:
    with robohal.connect(str(simulator.uri)) as robot:
        start = robot.commanded.copy()
        simulator.control("BLOCK 2 0.15")  # something in shoulder_lift's way at 0.15 rad
        target = start.copy()
        target[1] = 0.4
        with pytest.raises(HardwareFault, match=r"servo 2 \(shoulder_lift\) stalled: .* holding where it is at 50% torque"):
            robot.move_joints(target, speed=0.3)
            wait_for(lambda: False, timeout=5.0, step=robot.backend.cycle)
        assert robot.lifecycle.value == "fault"
        assert wait_for(lambda: servo_stats(simulator, 2)["torque_limit"] == 500)  # sent by the next poll
        assert abs(robot.state.q[1] - 0.15) < 0.02
        simulator.control("BLOCK 2 none")
        robot.recover()
        assert wait_for(lambda: servo_stats(simulator, 2)["torque_limit"] == 1000)
        assert robot.move_joints(start, speed=0.3).completed


def test_a_hot_servo_warns_then_faults(simulator) -> None:
    with robohal.connect(str(simulator.uri)) as robot:
        simulator.control("TEMP 4 58")
        assert wait_for(lambda: robot.backend.counters["temperature_warnings"] > 0, step=robot.backend.cycle)
        simulator.control("TEMP 4 67")
        with pytest.raises(HardwareFault, match=r"servo 4 \(wrist_flex\) measures 67 degC, past the arm file's fault bound"):
            wait_for(lambda: False, timeout=5.0, step=robot.backend.cycle)
        with pytest.raises(HardwareFault, match="not recovered, the cause persists"):
            robot.recover()  # still 67 degC: the same reading faults again
        simulator.control("TEMP 4 40")
        assert wait_for(lambda: servo_stats(simulator, 4)["temperature"] < 41)
        robot.recover()
        assert robot.lifecycle.value == "ready"


def test_a_supply_out_of_bounds_at_connect_is_a_fault_that_recover_does_not_clear(simulators) -> None:
    simulator = simulators(supply="3.8")
    with robohal.connect(str(simulator.uri)) as robot:
        with pytest.raises(HardwareFault, match="UNDERVOLTAGE"):
            robot.backend.cycle()
        with pytest.raises(HardwareFault, match=r"servo 1 \(shoulder_pan\) measures 3.\d+ V, past .* not recovered"):
            robot.recover()


def test_an_arm_file_that_says_release_turns_a_stalled_servo_s_torque_off(simulators, tmp_path, monkeypatch) -> None:
    bundled = (BUNDLED / "so101.toml").read_text()
    mine = bundled.replace('stall = "hold"                    # a stalled arm joint', 'stall = "release"  #')
    assert mine != bundled
    (tmp_path / "so101.toml").write_text(mine)  # the user's so101 stands in for the bundled one
    monkeypatch.setenv("ROBOHAL_MODEL_PATH", str(tmp_path))
    simulator = simulators()
    with robohal.connect(str(simulator.uri)) as robot:
        assert robot.backend.arm.stall.action == "release"
        simulator.control("BLOCK 3 -0.1")  # something in elbow_flex's way
        target = robot.commanded.copy()
        target[2] = -0.4
        with pytest.raises(HardwareFault, match=r"servo 3 \(elbow_flex\) stalled: .*; released \(torque off\)"):
            robot.move_joints(target, speed=0.3)
            wait_for(lambda: False, timeout=5.0, step=robot.backend.cycle)
        assert wait_for(lambda: servo_stats(simulator, 3)["torque"] == 0)
        assert all(servo_stats(simulator, i)["torque"] == 1 for i in (1, 2, 4, 5, 6))
