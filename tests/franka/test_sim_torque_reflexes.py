"""The simulated robot in torque control: the checks it makes of a client's torques (libfranka's
error names), the external torques and wrench it estimates from a plane and a hand on the flange,
the contact, collision and reflex rules of setCollisionBehavior, and the torque fields of its
state, each consistent with the others."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from robohal_franka import wire
from robohal_franka.facts import READY_Q
from robohal_franka.simulated_robot import SimulatedRobot
from robohal_franka.wire import MoveController, MoveGenerator, RobotMode

STEP = 0.999  # Nm per cycle: libfranka's limiter's largest step (rate_limiting.h, 1000 - kLimitEps Nm/s)


def torque_robot(**options) -> SimulatedRobot:
    robot = SimulatedRobot("franka.fr3", ideal=True, **options)
    robot.start_motion(MoveController.EXTERNAL, MoveGenerator.NONE)
    return robot


def send(robot: SimulatedRobot, tau) -> str | None:
    record = np.zeros((), dtype=wire.COMMAND)
    record["tau_J_d"] = tau
    robot.answer(record)
    return robot.tick()


def ramp(robot: SimulatedRobot, target, step: float = STEP) -> str | None:
    """From the torque in force to ``target``, at most ``step`` Nm per cycle on every joint."""
    target = np.asarray(target, dtype=float)
    while True:
        tau = robot.tau_J_d + np.clip(target - robot.tau_J_d, -step, step)
        event = send(robot, tau)
        if event is not None or np.array_equal(tau, target):
            return event


def thresholds(lower_torque=100.0, upper_torque=100.0, lower_force=100.0, upper_force=100.0) -> np.ndarray:
    """The 52 wire values of set_collision_behavior's four-argument form (both phases alike)."""
    torque = [lower_torque] * 7 + [upper_torque] * 7
    force = [lower_force] * 6 + [upper_force] * 6
    return np.array(torque * 2 + force * 2)


def record_of(robot: SimulatedRobot) -> dict[str, np.ndarray]:
    record = robot.fill(wire.new_state())
    return {name: wire.get_floats(record, name) for name in wire.STATE_FLOATS} | {
        "last_motion_errors": wire.error_names(record["reflex_reason"])}


def test_the_torque_rate_is_checked_as_libfranka_limits_it():
    """FCI documentation, Torque Control Requirements: the rate of tau_J_d is a necessary
    condition (1000 Nm/s); a first command starts from 0. libfranka's limiter's steps pass; one
    1.1 Nm step refuses the motion with controller_torque_discontinuity."""
    robot = torque_robot()
    assert ramp(robot, np.r_[3.0, np.zeros(6)]) is None
    assert send(robot, np.r_[3.0 - STEP, np.zeros(6)]) is None
    assert send(robot, np.r_[3.0 - STEP + 1.1, np.zeros(6)]) == "reflex"
    assert robot.errors == ("controller_torque_discontinuity",) and robot.mode is RobotMode.REFLEX
    robot.recover()
    robot.start_motion(MoveController.EXTERNAL, MoveGenerator.NONE)
    assert send(robot, np.r_[1.1, np.zeros(6)]) == "reflex"  # from 0, as the documentation asks
    assert robot.errors == ("controller_torque_discontinuity",)


def test_the_measured_torque_range_counts_the_gravity_the_robot_adds():
    """tau_j_range_violation is about the measured torque (errors.h), tau_J_d plus the gravity the
    robot compensates: joint 6 carries 1.59 Nm of it at the ready pose, so of 12 Nm it may be
    commanded -13.4 Nm but not +10.5."""
    gravity = torque_robot().dynamics.gravity(np.array(READY_Q))[5]
    assert gravity == pytest.approx(1.588, abs=1e-3)
    robot = torque_robot()
    assert ramp(robot, np.r_[np.zeros(5), -13.4, 0.0]) is None
    robot = torque_robot()
    assert ramp(robot, np.r_[np.zeros(5), 10.5, 0.0]) == "reflex"
    assert robot.errors == ("tau_j_range_violation",)
    assert robot.tau_J_d[5] < 10.5 + 1e-9 and robot.tau_J_d[5] + gravity <= 12.0  # the refused one never applied


def test_a_hand_on_the_flange_is_a_contact_then_a_collision_and_a_joint_reflex():
    """Above the lower torque threshold a joint reports contact, live; above the upper one a
    collision (kept until recovery) and the robot stops: joint_reflex."""
    robot = torque_robot()
    robot.collision_thresholds = thresholds(lower_torque=2.0, upper_torque=6.0)
    _, jacobian = robot.dynamics.flange(robot.tracking.position)
    push = np.array([0.0, 0.0, -1.0, 0.0, 0.0, 0.0])
    per_newton = np.abs(jacobian.T @ push).max()
    robot.push(push * 4.0 / per_newton)  # 4 Nm on the most loaded joint
    assert send(robot, np.zeros(7)) is None
    state = record_of(robot)
    np.testing.assert_array_equal(state["joint_contact"], (np.abs(robot.tau_ext) > 2.0).astype(float))
    assert state["joint_contact"].any() and not state["joint_collision"].any()
    robot.push(push * 8.0 / per_newton)
    assert send(robot, np.zeros(7)) == "reflex"
    assert robot.errors == ("joint_reflex",)
    robot.push(np.zeros(6))
    robot.tick()
    state = record_of(robot)
    assert not state["joint_contact"].any() and state["joint_collision"].any()  # contact gone, collision kept
    assert state["last_motion_errors"] == ("joint_reflex",)
    robot.recover()
    robot.tick()
    assert not record_of(robot)["joint_collision"].any()


def press(robot: SimulatedRobot, force: float, cycles: int, ramp: int = 200) -> str | None:
    """The client pushes the flange down with ``force`` N through J^T F (reached in ``ramp``
    cycles), with some joint damping, as a force controller would."""
    event = None
    for k in range(cycles):
        q = robot.tracking.position
        _, jacobian = robot.dynamics.flange(q)
        wrench = np.r_[0.0, 0.0, -force * min(1.0, (k + 1) / (ramp + 1)), 0.0, 0.0, 0.0]
        tau = jacobian.T @ wrench - 20.0 * robot.tracking.velocity
        tau = robot.tau_J_d + np.clip(tau - robot.tau_J_d, -STEP, STEP)
        event = send(robot, tau)
        if event is not None:
            return event
    return event


def plane_below(robot: SimulatedRobot, gap: float = 0.002, friction: float = 0.0) -> tuple[float, float, float]:
    return robot.forward(robot.tracking.position)[2, 3] - gap, 20000.0, friction


def test_pressing_on_the_plane_is_measured_as_the_robots_external_wrench():
    """The arm pressed down on the plane by a client's 30 N comes to rest on it; the robot's
    estimate of the external wrench is the plane's push (O_F_ext_hat_K; K_F_ext_hat_K in the flange
    frame; tau_ext_hat_filtered = J^T of it), with a Cartesian contact on z, and no reflex under the
    upper threshold."""
    robot = torque_robot(contact=plane_below(SimulatedRobot("franka.fr3", ideal=True)))
    robot.collision_thresholds = thresholds(lower_force=10.0, upper_force=40.0)
    assert press(robot, 30.0, 1500) is None
    state = record_of(robot)
    wrench = -state["O_F_ext_hat_K"]  # libfranka reports what the robot applies to the world
    assert 24.0 < wrench[2] <= 30.0  # of the client's 30 N, the joints' static friction holds the rest
    assert np.abs(wrench[[0, 1, 3, 4, 5]]).max() < 1e-6  # a frictionless plane pushes straight up
    pose = state["O_T_EE"].reshape(4, 4, order="F")
    np.testing.assert_allclose(-state["K_F_ext_hat_K"][:3], pose[:3, :3].T @ wrench[:3], atol=1e-4)
    _, jacobian = robot.dynamics.flange(state["q"])
    np.testing.assert_allclose(-state["tau_ext_hat_filtered"], jacobian.T @ wrench, atol=1e-3)
    np.testing.assert_array_equal(state["cartesian_contact"], [0, 0, 1, 0, 0, 0])
    assert np.abs(state["dq"]).max() < 1e-3  # at rest on the plane
    assert pose[2, 3] < robot.contact.height  # in it by about 30 N / 20000 N/m
    assert robot.contact.height - pose[2, 3] == pytest.approx(wrench[2] / 20000.0, rel=0.01)


def test_pressing_past_the_upper_force_threshold_is_a_cartesian_reflex():
    robot = torque_robot(contact=plane_below(SimulatedRobot("franka.fr3", ideal=True)))
    robot.collision_thresholds = thresholds(lower_force=10.0, upper_force=20.0)
    assert press(robot, 30.0, 1500) == "reflex"
    assert robot.errors == ("cartesian_reflex",)
    assert record_of(robot)["cartesian_collision"][2] == 1.0


@pytest.mark.parametrize("friction, slides", [(1.0, False), (0.2, True)])
def test_the_planes_friction_holds_the_pressed_flange_up_to_its_coefficient(friction, slides):
    """Pressed with about 28 N and pushed sideways with 25 N by a hand: a plane of friction 1 holds
    the flange (up to 28 N), one of 0.2 (6 N) lets it slide."""
    robot = torque_robot(contact=plane_below(SimulatedRobot("franka.fr3", ideal=True), friction=friction))
    assert press(robot, 30.0, 800) is None
    before = robot.forward(robot.tracking.position)[:3, 3]
    robot.push([25.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert press(robot, 30.0, 300, ramp=0) is None
    moved = robot.forward(robot.tracking.position)[:3, 3] - before
    wrench = -record_of(robot)["O_F_ext_hat_K"]  # on the flange (libfranka reports the opposite)
    held = wrench[0] - 25.0  # what the plane's friction pushes against the hand
    assert -friction * wrench[2] - 1e-3 <= held < 0.0
    if slides:
        assert moved[0] > 1e-3 and held == pytest.approx(-friction * wrench[2], rel=0.05)
    else:
        assert abs(moved[0]) < 1e-6 and held < -15.0


def test_the_torque_fields_tell_one_story():
    """In torque control the measured link-side torque moves the links: M(q) ddq + c + g = tau_J +
    tau_ext (M without the drives' inertia, which sits behind the torque sensor); dtau_J is its
    change per second; tau_J_d is the client's command. Under the robot's own controller tau_J_d
    is tau_J without gravity."""
    robot = torque_robot(contact=plane_below(SimulatedRobot("franka.fr3", ideal=True)))
    model = robot.dynamics.model.copy()
    model.armature = np.zeros(7)
    data = model.createData()
    previous = robot.tau_J.copy()
    for k in range(900):
        q, dq = robot.tracking.position.copy(), robot.tracking.velocity.copy()
        wrench = np.r_[0.0, 0.0, -25.0 * min(1.0, k / 200), 0.0, 0.0, 0.0]
        tau = robot.dynamics.flange(q)[1].T @ wrench + 0.8 * np.sin(np.arange(7) + k / 50) - 2.0 * dq
        assert send(robot, robot.tau_J_d + np.clip(tau - robot.tau_J_d, -STEP, STEP)) is None
        ddq = robot.tracking.acceleration
        np.testing.assert_allclose(pin.rnea(model, data, q, dq, ddq), robot.tau_J + robot.tau_ext, atol=1e-8)
        np.testing.assert_allclose(robot.dtau_J, (robot.tau_J - previous) / 0.001, atol=1e-6)
        previous = robot.tau_J.copy()
    assert robot.wrench[2] > 5.0  # the plane took part
    idle = SimulatedRobot("franka.fr3", seed=3)
    for _ in range(50):
        idle.tick()
    np.testing.assert_allclose(idle.tau_J - idle.tau_J_d, idle.dynamics.gravity(idle.tracking.position), atol=1e-9)


def test_a_payload_the_robot_was_told_of_is_held_with_the_arm():
    """setLoad: a 2 kg payload weighs on the arm and the robot compensates it, so zero torque
    holds the arm; the measured torque at rest is the weight of both."""
    robot = SimulatedRobot("franka.fr3", ideal=True)
    bare = robot.dynamics.gravity(robot.tracking.position)
    robot.load = (2.0, np.array([0.0, 0.0, 0.1]), np.zeros(9))
    robot.tick()
    loaded = robot.dynamics.gravity(robot.tracking.position)
    assert np.abs(loaded - bare).max() > 1.0
    np.testing.assert_allclose(robot.tau_J, loaded, atol=1e-9)
    robot.start_motion(MoveController.EXTERNAL, MoveGenerator.NONE)
    q0 = robot.tracking.position.copy()
    for _ in range(300):
        assert send(robot, np.zeros(7)) is None
    np.testing.assert_array_equal(robot.tracking.position, q0)
    state = record_of(robot)
    assert state["m_load"][0] == pytest.approx(2.0) and state["F_x_Cload"][2] == pytest.approx(0.1)


def test_the_stubs_run_the_same_dynamics():
    """robohal_franka.stubs (the in-process pylibfranka stand-in) share the simulated arm: its state
    reports the payload's weight in tau_J, and a hand pushing the flange moves the arm in torque
    control."""
    from robohal_franka import stubs

    robot = stubs.Robot("sim", stubs.RealtimeConfig.kIgnore, ideal=True)
    robot.set_load(1.0, [0.0, 0.0, 0.05], [0.0] * 9)
    state = robot.read_once()
    np.testing.assert_allclose(state.tau_J, robot.robot.dynamics.gravity(np.array(state.q)), atol=1e-4)
    control = robot.start_torque_control()
    state, _ = control.readOnce()
    q0 = np.array(state.q)
    robot.robot.push([0.0, 30.0, 0.0, 0.0, 0.0, 0.0])
    for _ in range(200):
        control.writeOnce(stubs.Torques([0.0] * 7))
        state, _ = control.readOnce()
    assert np.abs(np.array(state.q) - q0).max() > 1e-3 and state.O_F_ext_hat_K[1] == pytest.approx(-30.0, abs=1e-3)
    robot.robot.push(np.zeros(6))
    finished = stubs.Torques([0.0] * 7)
    finished.motion_finished = True
    control.writeOnce(finished)


def test_a_load_that_is_no_load_is_refused():
    """setLoad with a negative or non-finite mass, centre or inertia is refused (a setter's
    kInvalidArgumentRejected; libfranka raises CommandException), and the arm keeps its load."""
    from robohal_franka import stubs

    robot = stubs.Robot("sim", stubs.RealtimeConfig.kIgnore, ideal=True)
    robot.set_load(0.5, [0.0, 0.0, 0.05], [0.0] * 9)
    for mass, center in ((-1.0, [0.0, 0.0, 0.0]), (1.0, [0.0, float("nan"), 0.0]), (float("inf"), [0.0] * 3)):
        with pytest.raises(stubs.CommandException, match="invalid argument"):
            robot.set_load(mass, center, [0.0] * 9)
    assert robot.robot.load[0] == 0.5
