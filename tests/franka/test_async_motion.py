"""The robot's own generator behind libfranka's asynchronous position control, on the simulated arm
in process: targets at the client's rate, planned within the client's velocities and the arm's
limits, a stop that brakes to rest, and targets the robot cannot take."""

from __future__ import annotations

import numpy as np
from robohal_franka import wire
from robohal_franka.facts import FR3, READY_Q
from robohal_franka.simulated_robot import CommandChecker, SimulatedRobot
from robohal_franka.wire import MoveController, MoveGenerator, MoveStatus, RobotMode

SLOW = [0.655] * 4 + [1.315] * 3  # libfranka's example's maximum velocities, rad/s


def async_robot(maximum_velocities=SLOW) -> SimulatedRobot:
    robot = SimulatedRobot("franka.fr3", ideal=True)
    started = robot.start_motion(MoveController.JOINT_IMPEDANCE, MoveGenerator.JOINT_POSITION, True, maximum_velocities)
    assert started is MoveStatus.MOTION_STARTED
    return robot


def target(q, finished: bool = False) -> np.ndarray:
    record = np.zeros((), dtype=wire.COMMAND)
    record["q_c"] = q
    record["motion_generation_finished"] = finished
    return record


def test_targets_at_50_hz_are_reached_within_the_clients_velocities_and_the_arms_limits():
    robot = async_robot()
    goal = np.array(READY_Q) + 0.25
    checker = CommandChecker(FR3)  # the robot's own profile passes its own checks
    checker.reset(robot.q_d.copy())
    peak = np.zeros(7)
    for k in range(3000):
        if k % 20 == 0:  # a target every 20 ms, nothing in between: no lost cycle
            robot.receive(target(goal))
        assert robot.tick() is None, robot.errors
        assert checker.check_position(robot.q_d) == ()  # (and recorded)
        peak = np.maximum(peak, np.abs(robot.dq_d))
    assert np.allclose(robot.q_d, goal, atol=1e-9) and np.abs(robot.dq_d).max() < 0.01  # "target reached"
    assert (peak <= np.array(SLOW) + 1e-9).all() and (peak > 0.5 * np.array(SLOW)).any()
    assert robot.stats["reflexes"] == 0 and robot.mode is RobotMode.MOVE


def test_a_new_target_replans_from_the_motion_under_way():
    robot = async_robot()
    robot.receive(target(np.array(READY_Q) + 0.25))
    for _ in range(200):
        robot.tick()
    moving = robot.dq_d.copy()
    assert np.abs(moving).max() > 0.1
    robot.receive(target(np.array(READY_Q) - 0.25))  # turn back while moving: no jump in velocity
    robot.tick()
    assert np.abs(robot.dq_d - moving).max() < 10.0 * 0.001 * 1.01


def test_motion_finished_brakes_to_rest_and_ends_the_motion():
    robot = async_robot()
    robot.receive(target(np.array(READY_Q) + 0.25))
    for _ in range(300):
        robot.tick()
    robot.receive(target(np.zeros(7), finished=True))  # libfranka's stopControl sends zeros: not a target
    events = [robot.tick() for _ in range(2000)]
    assert "finished" in events and robot.mode is RobotMode.IDLE and robot.errors == ()
    assert np.abs(robot.q_d - np.array(READY_Q)).max() < 0.26  # braked where it was, not toward zero


def test_a_target_outside_the_joint_ranges_is_refused():
    robot = async_robot()
    outside = np.array(READY_Q)
    outside[3] = 0.5  # joint 4 stays below -0.15 rad on the FR3
    robot.receive(target(outside))
    assert robot.tick() == "reflex"
    assert robot.errors == ("joint_via_motion_generator_planning_joint_limit_violation",)


def test_without_velocities_from_the_client_the_arms_rated_ones_apply():
    robot = async_robot(maximum_velocities=[0.0] * 7)
    assert np.array_equal(robot.async_motion.maximum_velocities, FR3.velocity)


def test_only_joint_positions_can_be_asynchronous():
    robot = SimulatedRobot("franka.fr3")
    refused = robot.start_motion(MoveController.JOINT_IMPEDANCE, MoveGenerator.CARTESIAN_POSITION, True, SLOW)
    assert refused is MoveStatus.INVALID_ARGUMENT_REJECTED and robot.mode is RobotMode.IDLE
