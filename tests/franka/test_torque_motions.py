"""Torque motions through the real pylibfranka on the FCI simulator's arm (rigid-body dynamics,
friction, a contact plane): impedances hold and follow streamed equilibria, react to contact,
hand over to position motions and back, hand guiding floats the arm but its locked axes, and a
wrench past the drives is refused by robohal's guard, never by the robot.

One simulated robot serves the module (each test leaves it at rest in READY); every wait is for a
condition, with a deadline."""

from __future__ import annotations

import numpy as np
import pytest
import robohal
from robohal.control.backend import wait_until
from robohal.control.lifecycle import LifecycleState
from robohal.errors import LimitViolation
from robohal.motion import PointToPoint
from robohal.motion.reactions import ELAPSED, Reaction, force
from robohal.motion.torque import AppliedWrench, CartesianImpedance, JointImpedance
from robohal_franka.facts import READY_Q

PLANE = 0.55  # m: the simulated plane, about 4 cm under the flange at READY
URI = f"franka://sim?model=franka.fr3&sim_contact={PLANE},3000&gripper=0"
DEADLINE = 10.0  # s: for the arm to get somewhere it gets to in well under a second


@pytest.fixture(scope="module")
def robot():
    with robohal.connect(URI) as robot:
        yield robot


@pytest.fixture
def arm(robot):
    """The robot, at rest in READY before and after the test."""
    robot.move_joints(READY_Q, speed=0.3)
    yield robot
    if robot.lifecycle is LifecycleState.MOVING:
        robot.stop()
    if robot.lifecycle is LifecycleState.FAULT:
        robot.recover()
    robot.move_joints(READY_Q, speed=0.3)


def test_franka_takes_joint_torques_within_franka_s_limits(robot):
    assert robot.command_interfaces == frozenset({"joint_position", "joint_torque"})
    limits = robot.backend.torque_limits
    assert limits.torque.tolist() == [87.0] * 4 + [12.0] * 3
    assert limits.rate.tolist() == [1000.0 - 1e-3] * 7  # libfranka's kMaxTorqueRate


def test_a_joint_impedance_holds_then_follows_a_streamed_equilibrium(arm):
    q0 = arm.q
    held = arm.run(JointImpedance(), until=ELAPSED > 0.5)
    assert held.reaction and held.torques.shape == (held.cycles, 7)
    assert np.abs(held.measured - q0).max() < 2e-3  # friction and the spring: it stays put
    handle = arm.run(JointImpedance(), wait=False)
    goal = q0 + np.array([0.1, 0.0, -0.1, 0.1, 0.0, 0.0, 0.2])
    arm.servo(goal)  # one target: the equilibrium goes there (an impedance has no stream timeout)
    # there, and at rest: the springs against the joints' friction leave a few mrad (2.8 measured)
    assert wait_until(lambda: np.abs(arm.q - goal).max() < 6e-3 and np.abs(arm.state.dq).max() < 1e-3, DEADLINE), \
        arm.q - goal
    arm.stop()
    result = handle.wait(DEADLINE)
    assert result.stopped and np.abs(result.commanded[-1] - goal).max() < 1e-3  # its equilibrium, recorded
    assert arm.lifecycle is LifecycleState.READY and np.abs(arm.state.dq).max() < 0.02


def test_a_cartesian_impedance_follows_poses_presses_on_the_plane_and_hands_over(arm):
    start = arm.pose
    handle = arm.run(CartesianImpedance(2000.0, 100.0), wait=False)
    aside = start.copy()
    aside[1, 3] += 0.04
    arm.servo_pose(aside)
    assert wait_until(lambda: np.linalg.norm(arm.pose[:3, 3] - aside[:3, 3]) < 0.004, DEADLINE), arm.pose - aside
    # a press: from 5 mm above the plane (in position control: the impedance is taken over),
    # the equilibrium 15 mm under it, until the plane pushes back with 5 N; then back up in
    # position control, in a session of its own
    above = start.copy()
    above[2, 3] = PLANE + 0.005
    arm.move_linear(above, speed=0.05)
    assert handle.wait(DEADLINE).taken_over
    down = above.copy()
    down[2, 3] = PLANE - 0.015
    pressed = arm.run(CartesianImpedance(1000.0, 100.0, target=down),
                      until=Reaction(force("z") > 5.0, then=PointToPoint(READY_Q)))
    assert pressed.completed and pressed.reaction == "force z (N) > 5"
    torque_part = ~np.isnan(pressed.torques[:, 0])  # the run's record spans both sessions
    assert torque_part[0] and not torque_part[-1] and np.nanmax(pressed.wrenches[:, 2]) > 5.0
    assert np.abs(arm.q - np.array(READY_Q)).max() < 3e-3  # the retract ran to its end
    assert arm.state.wrench[2] < 1.0  # off the plane


def test_hand_guiding_floats_the_arm_but_its_locked_axes(arm):
    start = arm.pose
    handle = arm.teach(damping=2.0, locked=("z",), wait=False)
    try:
        arm.simulator.send("PUSH 0 8 -15")  # a hand pushes the flange sideways and down
        assert wait_until(lambda: arm.pose[1, 3] - start[1, 3] > 0.03, DEADLINE), arm.pose - start
        assert abs(arm.pose[2, 3] - start[2, 3]) < 0.012  # z held: 15 N on a 2000 N/m lock is 7.5 mm
    finally:
        arm.simulator.send("PUSH 0 0 0")
    arm.stop()
    result = handle.wait(DEADLINE)
    assert result.stopped and arm.lifecycle is LifecycleState.READY


def test_a_wrench_past_the_drives_is_refused_by_robohal_not_the_robot(arm):
    before = arm.simulator.stats()["robot_reflexes"]
    with pytest.raises(LimitViolation, match="torque command refused") as refused:
        arm.run(AppliedWrench([0.0, 0.0, -300.0, 0.0, 0.0, 0.0]))  # ramps toward 150 Nm on a joint
    assert any("damped to rest" in note for note in refused.value.__notes__)
    assert arm.simulator.stats()["robot_reflexes"] == before
    assert arm.lifecycle is LifecycleState.READY and np.abs(arm.state.dq).max() < 0.02


def test_a_position_motion_hands_over_to_an_impedance_on_contact(arm):
    """Down in position control until the plane pushes back, then a soft Cartesian impedance holds
    the flange there: the position motion comes to rest, its session ends, the impedance's begins."""
    down = arm.pose
    down[2, 3] = PLANE - 0.01
    result = arm.move_linear(down, speed=0.03, until=Reaction(force("z") > 3.0,
                                                                then=CartesianImpedance(300.0, 30.0, duration=0.5)))
    assert result.completed and result.reaction == "force z (N) > 3"
    torque_part = ~np.isnan(result.torques[:, 0])
    assert not torque_part[0] and torque_part[-1]  # position cycles first, then the impedance's
    assert arm.pose[2, 3] > PLANE - 0.005  # held softly near the surface, not driven 1 cm into it
