"""ABB EGM HIL suite: runs against every ``abb-egm`` target (default: the simulated controller).

    robohal hil                                                 # with the other suites, on the bundled simulators
    pytest --pyargs robohal_abb.hil                             # this suite alone, on the bundled simulator
    robohal hil --target 'abb-egm://0.0.0.0:6510?model=abb.irb1410&robot=192.168.125.1'

Moves are small and head towards the middle of the joint ranges. The fault tests
(packet loss, stall, restart, motors off) need the simulator's fault injection and
start their own simulated controller; on a real cell they are skipped.

The gripper test picks a part and puts it back: on the simulator the part lies where
``sim_part`` (default ``DEFAULT_PART``) says; on a real cell, declare the gripper in the
target's URI (``do=...&gripper=...``, rapid/SETUP.md) and say where a part lies with
``ROBOHAL_ABB_PART=X,Y,Z`` (m, base frame; the cup comes down on it facing down from 5 cm
above), or the test is skipped.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import numpy as np
import pytest
from robohal import ConnectionLost, HardwareFault, RobotMode
from robohal.testing.target import HilTarget
from robohal.uri import parse_uri

from robohal_abb.hil import move_over
from robohal_abb.simulator import DEFAULT_PART

pytestmark = pytest.mark.hil_backend("abb-egm")

#: how far (m) the measured flange may stray from a commanded straight line
LINE_TOLERANCE = 0.001
#: m above the part the cup starts its approach from, and goes back to with the part
APPROACH = 0.05


def towards_middle(robot, degrees: float) -> np.ndarray:
    limits = robot.model.limits
    start = robot.backend.commanded
    return limits.clip(start + np.where(start <= limits.centre, 1.0, -1.0) * np.radians(degrees))


def settle(robot, target: np.ndarray, tolerance: float, timeout: float = 5.0):
    deadline = time.monotonic() + timeout
    state = robot.backend.cycle()
    while time.monotonic() < deadline and np.abs(state.q - target).max() > tolerance:
        state = robot.backend.cycle()
    return state


@pytest.fixture
def faulty(hil_target: HilTarget) -> Iterator:
    """Start a dedicated simulated controller with options (``loss="0.1"``) and yield its target."""
    if hil_target.simulator is None:
        pytest.skip("needs the simulated controller's fault injection")
    with hil_target.dedicated_simulators() as start:
        yield start


def test_joint_move_reaches_its_target(robot, hil_target: HilTarget) -> None:
    target = towards_middle(robot, 10.0)
    result = robot.move_joints(target, speed=0.5)
    assert result.completed
    state = settle(robot, target, hil_target.spec.position_tolerance)
    assert np.abs(state.q - target).max() <= hil_target.spec.position_tolerance
    assert state.mode is not RobotMode.FAULT


def test_cartesian_straight_line_tracks(robot) -> None:
    """move_linear plans through the model's IK; the *measured* flange stays on the line."""
    robot.move_joints(towards_middle(robot, 15.0), speed=0.5)
    start = robot.model.forward(robot.backend.commanded)
    goal = start.copy()
    goal[:3, 3] += [0.06, -0.04, -0.05]
    result = robot.move_linear(goal, speed=0.15)
    assert result.completed
    settle(robot, result.commanded[-1], 1e-4)
    measured = robot.model.forward(np.vstack([result.measured, robot.state.q[None]]))[:, :3, 3]
    line = goal[:3, 3] - start[:3, 3]
    direction = line / np.linalg.norm(line)
    offsets = measured - start[:3, 3]
    along = np.clip(offsets @ direction, 0.0, np.linalg.norm(line))
    cross = np.linalg.norm(offsets - np.outer(along, direction), axis=1)
    assert cross.max() <= LINE_TOLERANCE, f"strayed {1000 * cross.max():.2f} mm from the line"
    assert np.linalg.norm(measured[-1] - goal[:3, 3]) <= LINE_TOLERANCE


def test_ten_percent_packet_loss_still_converges(faulty) -> None:
    target = faulty(loss="0.1", seed="7")
    with target.connect() as robot:
        goal = towards_middle(robot, 8.0)
        assert robot.move_joints(goal, speed=0.5).completed
        state = settle(robot, goal, target.spec.position_tolerance)
        assert np.abs(state.q - goal).max() <= target.spec.position_tolerance
        assert state.info["lost_messages"] > 0


def test_stalled_robot_raises_connection_lost_within_the_timeout(faulty) -> None:
    target = faulty()
    timeout = 0.5
    with target.connect(timeout=str(timeout)) as robot:
        robot.backend.cycle()
        target.simulator.send("STALL")
        started = time.monotonic()
        with pytest.raises(ConnectionLost):
            while time.monotonic() - started < 30.0:
                robot.backend.cycle()
        # bounded by the configured timeout (plus scheduling on a busy machine), never a hang
        assert time.monotonic() - started < timeout + 5.0


def test_controller_restart_is_handled(faulty) -> None:
    target = faulty()
    with target.connect() as robot:
        assert robot.move_joints(towards_middle(robot, 10.0), speed=0.5).completed
        target.simulator.send("RESTART 0 10 10 0 20 0")
        where = np.radians([0, 10, 10, 0, 20, 0])
        deadline = time.monotonic() + 10.0
        while robot.state.info["session"] < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert robot.state.info["session"] == 2
        assert np.allclose(robot.backend.commanded, where, atol=1e-9), "holds the measured position"
        state = robot.backend.cycle()
        assert np.allclose(state.info["q_planned"], where, atol=1e-9), "no stale target replayed"
        assert robot.move_joints(towards_middle(robot, 5.0), speed=0.5).completed


def test_motors_off_is_a_clear_hardware_fault(faulty) -> None:
    target = faulty()
    with target.connect() as robot:
        target.simulator.send("MOTORS OFF")
        with pytest.raises(HardwareFault) as fault:
            deadline = time.monotonic() + 10.0
            while time.monotonic() < deadline:
                robot.backend.cycle()
        assert "motors_off" in fault.value.names
        assert "motors_off" in str(fault.value)


def part_position(hil_target: HilTarget) -> np.ndarray:
    """Where a part lies (m, base frame): the simulator's, or the cell's from ROBOHAL_ABB_PART."""
    if hil_target.simulator is not None:
        where = parse_uri(hil_target.requested).params.get("sim_part")
    else:
        where = os.environ.get("ROBOHAL_ABB_PART")
        if where is None:
            pytest.skip("set ROBOHAL_ABB_PART=X,Y,Z (m, base frame) to where a part lies under the cup")
    return np.array([float(v) for v in where.split(",")] if where else DEFAULT_PART)


def straight_to(robot, position: np.ndarray, tolerance: float) -> None:
    """Straight (move_linear) to ``position``, keeping the orientation; then settle there."""
    goal = robot.model.forward(robot.backend.commanded)
    goal[:3, 3] = position
    result = robot.move_linear(goal, speed=0.05)
    assert result.completed
    settle(robot, result.commanded[-1], tolerance)


def test_gripper_picks_a_part_lifts_it_and_puts_it_back(robot, hil_target: HilTarget) -> None:
    if robot.gripper is None:
        pytest.skip(f"{robot.name} declares no gripper (gripper=DO in the URI)")
    gripper, tolerance = robot.gripper, hil_target.spec.position_tolerance
    part = part_position(hil_target)
    above = part + np.array([0.0, 0.0, APPROACH])
    assert gripper.open() is True
    assert move_over(robot, above).completed
    assert gripper.grasp(0.0) is False, "nothing to hold 5 cm above the part"
    assert gripper.open() is True
    straight_to(robot, part, tolerance)
    assert gripper.grasp(0.0) is True and gripper.state.is_grasped
    straight_to(robot, above, tolerance)
    assert gripper.state.is_grasped, "it carries the part"
    straight_to(robot, part, tolerance)
    assert gripper.open() is True and not gripper.state.is_grasped
    straight_to(robot, above, tolerance)
    assert not gripper.state.is_grasped, "the part stayed where it was put"
