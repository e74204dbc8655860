"""The torque motions' laws (robohal.motion.torque) against torques worked out by hand from their
formulas, their shaping (rate and saturation), their streams, and their kernels compiled or not."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import robohal
from robohal import spatial
from robohal.errors import InvalidArgument, LimitViolation
from robohal.kinematics import TorqueLimits
from robohal.motion.servo import ServoTarget
from robohal.motion.torque import (
    RATE_SHARE,
    TORQUE_SHARE,
    AppliedTorque,
    AppliedWrench,
    CartesianImpedance,
    JointImpedance,
    KnownTerms,
    Teach,
    cartesian_inertia,
    filter_share,
)
from robohal.state import RobotMode, RobotState

PERIOD = 0.001
LIMITS = TorqueLimits([87.0] * 4 + [12.0] * 3, 999.999)
STEP = 999.999 * PERIOD * RATE_SHARE  # Nm: the most a law's torque changes in one cycle
Q0 = np.array([0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6])
# a symmetric positive definite mass matrix (kg m^2) and Coriolis torques (Nm), made up: the laws take them as given
MASS = np.diag([1.2, 1.5, 0.9, 0.8, 0.2, 0.15, 0.05]) + 0.02 * np.ones((7, 7))
CORIOLIS = np.array([0.3, -0.2, 0.1, 0.05, -0.02, 0.01, 0.0])


@pytest.fixture(scope="module")
def model():
    return robohal.get_model("franka.fr3")


def state(q=Q0, dq=None, time=0.0) -> RobotState:
    return RobotState(time=time, q=q, dq=np.zeros(7) if dq is None else dq, mode=RobotMode.MOVING, wrench=np.zeros(6))


def terms(coriolis=CORIOLIS) -> KnownTerms:
    return KnownTerms(coriolis, MASS)


def started(motion, model, at=None):
    motion.start(at or state(), np.zeros(7), model, PERIOD, terms=terms(), limits=LIMITS)
    return motion


# Joint impedance ------------------------------------------------------------------------------


def test_joint_impedance_is_a_spring_and_damper_per_joint_plus_coriolis(model):
    stiffness = np.array([100.0, 200.0, 50.0, 80.0, 20.0, 10.0, 5.0])
    damping = np.array([10.0, 12.0, 4.0, 6.0, 2.0, 1.0, 0.5])
    target = Q0 + np.array([0.01, -0.02, 0.005, 0.0, -0.01, 0.02, 0.03])
    motion = started(JointImpedance(stiffness, damping, target=target, smoothing=0.0), model)
    dq = np.array([0.1, 0.0, -0.05, 0.02, 0.0, 0.1, -0.2])
    by_hand = stiffness * (target - Q0) + damping * (0.0 - dq) + CORIOLIS
    # given the robot's torque right at it, the law's ramp does not move it: the law itself shows
    tau = motion.step(state(dq=dq), terms(), by_hand)
    np.testing.assert_allclose(tau, by_hand, rtol=0, atol=1e-12)
    np.testing.assert_allclose(motion.reference(), target, rtol=0, atol=1e-15)


def test_joint_damping_is_critical_for_each_joint_s_own_inertia(model):
    stiffness = np.full(7, 400.0)
    motion = started(JointImpedance(stiffness, smoothing=0.0), model)
    dq = np.full(7, 0.01)
    by_hand = -2.0 * np.sqrt(stiffness * np.diag(MASS)) * dq + CORIOLIS
    np.testing.assert_allclose(motion.step(state(dq=dq), terms(), by_hand), by_hand, atol=1e-12)


def test_a_joint_target_is_reached_through_the_smoothing_filter(model):
    motion = started(JointImpedance(smoothing=0.05), model)
    goal = Q0 + 0.1
    motion.update(ServoTarget("joints", goal))
    share = filter_share(0.05, PERIOD)
    motion.step(state(), terms())
    np.testing.assert_allclose(motion.reference(), Q0 + share * 0.1, atol=1e-15)
    for _ in range(2000):  # 40 time constants
        motion.step(state(), terms())
    np.testing.assert_allclose(motion.reference(), goal, atol=1e-12)


def test_a_target_outside_a_joint_range_is_clamped_into_it(model):
    motion = started(JointImpedance(smoothing=0.0), model)
    beyond = Q0.copy()
    beyond[0] = 10.0
    motion.update(ServoTarget("joints", beyond))
    motion.step(state(), terms())
    assert motion.reference()[0] == model.limits.upper[0]


def test_the_law_ramps_at_most_its_share_of_the_rate_limit_per_cycle(model):
    motion = started(JointImpedance(smoothing=0.0, target=Q0 + 0.2), model)  # a 120 Nm pull on joint 1
    last = np.zeros(7)
    for _ in range(200):
        tau = motion.step(state(), terms(), last)
        assert np.abs(tau - last).max() <= STEP * (1 + 1e-12)
        last = tau
    # and a spring past the drives is scaled back as a whole, its direction kept
    caps = LIMITS.torque * TORQUE_SHARE
    assert (np.abs(last) <= caps * (1 + 1e-12)).all() and np.isclose(np.abs(last / caps).max(), 1.0)


# Cartesian impedance ---------------------------------------------------------------------------


def test_cartesian_impedance_pulls_the_flange_through_the_jacobian(model):
    pose = model.forward(Q0)
    target = pose.copy()
    target[:3, 3] += [0.0, 0.002, -0.01]
    motion = started(CartesianImpedance(500.0, 50.0, target=target, nullspace_stiffness=0.0, smoothing=0.0), model)
    jacobian = model.jacobian(Q0)
    by_hand = jacobian.T @ np.array([0.0, 500.0 * 0.002, 500.0 * -0.01, 0.0, 0.0, 0.0]) + CORIOLIS
    np.testing.assert_allclose(motion.step(state(), terms(), by_hand), by_hand, atol=1e-9)


def test_cartesian_damping_is_from_the_flange_inertia_and_the_ratio(model):
    motion = started(CartesianImpedance(300.0, 30.0, damping_ratio=0.7, nullspace_stiffness=0.0), model)
    dq = np.array([0.05, -0.02, 0.03, 0.04, -0.1, 0.02, 0.1])
    jacobian = model.jacobian(Q0)
    inertia = np.diag(np.linalg.inv(jacobian @ np.linalg.inv(MASS) @ jacobian.T))
    damping = 2 * 0.7 * np.sqrt(np.array([300.0] * 3 + [30.0] * 3) * inertia)
    by_hand = jacobian.T @ (-damping * (jacobian @ dq)) + CORIOLIS
    np.testing.assert_allclose(cartesian_inertia(jacobian, MASS), inertia, rtol=1e-9)
    np.testing.assert_allclose(motion.step(state(dq=dq), terms(), by_hand), by_hand, atol=1e-9)


def test_a_rotation_is_pulled_back_about_its_axis(model):
    pose = model.forward(Q0)
    target = pose.copy()
    target[:3, :3] = spatial.rotvec_to_matrix([0.0, 0.0, 0.05]) @ pose[:3, :3]  # 0.05 rad about base z
    motion = started(CartesianImpedance(500.0, 40.0, target=target, nullspace_stiffness=0.0, smoothing=0.0), model)
    by_hand = model.jacobian(Q0).T @ np.array([0, 0, 0, 0, 0, 40.0 * 0.05]) + CORIOLIS
    np.testing.assert_allclose(motion.step(state(), terms(), by_hand), by_hand, atol=1e-9)


def test_the_stretch_is_capped(model):
    pose = model.forward(Q0)
    target = pose.copy()
    target[2, 3] -= 0.5  # half a metre below: it pulls as if 5 cm
    motion = started(CartesianImpedance(400.0, target=target, nullspace_stiffness=0.0, smoothing=0.0,
                                        max_error=(0.05, 0.3)), model)
    by_hand = model.jacobian(Q0).T @ np.array([0, 0, -400.0 * 0.05, 0, 0, 0]) + CORIOLIS
    np.testing.assert_allclose(motion.step(state(), terms(), by_hand), by_hand, atol=1e-9)


def test_the_nullspace_posture_exerts_no_force_at_the_flange(model):
    posture = Q0 + np.array([0.0, 0.0, 0.3, 0.0, 0.0, 0.0, 0.0])  # joint 3: the elbow's swing
    motion = started(CartesianImpedance(nullspace_stiffness=20.0, posture=posture), model)
    alone = started(CartesianImpedance(nullspace_stiffness=0.0), model)
    # the laws before their ramp (a posture far off is a large torque the ramp would hide)
    raw = np.array(motion._law(state(), terms())) - np.array(alone._law(state(), terms()))  # the posture's share
    jacobian = model.jacobian(Q0)
    flange_wrench = np.linalg.solve(jacobian @ jacobian.T, jacobian @ raw)
    assert np.abs(flange_wrench).max() < 1e-4  # none (to the solve's 1e-6 regularisation)
    assert np.abs(raw).max() > 0.5  # but it does turn the redundant joints
    assert np.sign(raw[2]) > 0


def test_a_joints_target_moves_the_pose_and_the_posture(model):
    motion = started(CartesianImpedance(smoothing=0.0), model)
    q = Q0 + 0.05
    motion.update(ServoTarget("joints", q))
    motion.step(state(), terms())
    np.testing.assert_allclose(motion.reference_pose(), model.forward(q), atol=1e-12)
    np.testing.assert_allclose(motion._posture, q, atol=1e-15)


# Applied torques and wrenches, hand guiding -------------------------------------------------------


def test_an_applied_torque_is_added_to_coriolis_and_damping(model):
    torque = np.array([1.0, -2.0, 0.5, 0.0, 0.3, 0.0, -0.2])
    dq = np.full(7, 0.1)
    motion = started(AppliedTorque(torque, damping=2.0), model)
    by_hand = torque + CORIOLIS - 2.0 * dq
    np.testing.assert_allclose(motion.step(state(dq=dq), terms(), by_hand), by_hand, atol=1e-12)


def test_an_applied_torque_past_a_limit_is_refused_at_the_call(model):
    with pytest.raises(LimitViolation, match=r"joint 5 would be asked 13 Nm, beyond its limit of 12 Nm"):
        AppliedTorque([0, 0, 0, 0, 13.0, 0, 0]).check(model, LIMITS)


def test_an_applied_torque_ramps_and_is_never_scaled(model):
    motion = started(AppliedTorque([86.0, 0, 0, 0, 0, 0, 0]), model)
    last = np.zeros(7)
    for _ in range(50):
        last = motion.step(state(), terms(coriolis=np.zeros(7)), last)
    assert last[0] == pytest.approx(50 * STEP)  # ramping: no jump
    for _ in range(50):
        last = motion.step(state(), terms(coriolis=np.zeros(7)), last)
    assert last[0] == pytest.approx(86.0)  # all of it, not a spring's scaled share


def test_an_applied_wrench_goes_through_the_jacobian(model):
    wrench = np.array([0.0, 0.0, -5.0, 0.0, 0.2, 0.0])
    motion = started(AppliedWrench(wrench), model)
    by_hand = model.jacobian(Q0).T @ wrench + CORIOLIS
    np.testing.assert_allclose(motion.step(state(), terms(), by_hand), by_hand, atol=1e-9)


def test_teaching_floats_the_arm_and_holds_only_the_locked_axes(model):
    free = started(Teach(damping=3.0), model)
    dq = np.full(7, 0.05)
    np.testing.assert_allclose(free.step(state(dq=dq), terms(), CORIOLIS - 3.0 * dq), CORIOLIS - 3.0 * dq, atol=1e-12)
    locked = started(Teach(locked=("z", "rx")), model)
    moved = Q0 + np.array([0.0, 0.01, 0.0, 0.01, 0.0, 0.0, 0.0])  # the flange moves and turns
    error = spatial.pose_error(model.forward(Q0), model.forward(moved))
    held = np.array([0, 0, 2000.0 * error[2], 150.0 * error[3], 0, 0])  # z and rx pulled back, the rest free
    by_hand = model.jacobian(moved).T @ held + CORIOLIS
    np.testing.assert_allclose(locked.step(state(q=moved), terms(), by_hand), by_hand, atol=1e-9)


def test_bad_parameters_are_refused_when_made_or_at_the_call(model):
    with pytest.raises(InvalidArgument, match="locked axes"):
        Teach(locked="w")
    with pytest.raises(InvalidArgument, match="duration"):
        JointImpedance(duration=0.0)
    with pytest.raises(InvalidArgument, match="smoothing"):
        CartesianImpedance(smoothing=-1.0)
    with pytest.raises(InvalidArgument, match="zero or more"):
        JointImpedance(stiffness=-5.0).check(model, LIMITS)
    with pytest.raises(InvalidArgument, match="7 numbers"):
        JointImpedance(stiffness=[1.0, 2.0]).check(model, LIMITS)
    with pytest.raises(InvalidArgument):
        CartesianImpedance(translational_stiffness=[np.nan, 1, 1])


# Streams --------------------------------------------------------------------------------------


def test_streams_take_the_kinds_each_impedance_follows(model):
    joint = started(JointImpedance(), model)
    with pytest.raises(InvalidArgument, match="follows no pose stream; it takes joints"):
        joint.update(ServoTarget("pose", model.forward(Q0)))
    with pytest.raises(InvalidArgument, match="positions alone"):
        joint.update(ServoTarget("joints", Q0, velocity=np.zeros(7)))
    assert not started(Teach(), model).update(ServoTarget("joints", Q0))  # it follows none: a servo takes over
    joint.end()
    assert not joint.update(ServoTarget("joints", Q0))  # over: a new motion must take the stream


def test_a_torque_motion_survives_the_trip_to_a_control_process(model):
    motion = started(CartesianImpedance(smoothing=0.0), model)
    motion.update(ServoTarget("pose", model.forward(Q0 + 0.01)))
    copy = pickle.loads(pickle.dumps(motion))
    a, b = motion.step(state(), terms()), copy.step(state(), terms())
    np.testing.assert_array_equal(a, b)


def test_a_pose_target_is_reached_through_the_smoothing_filter(model):
    motion = started(CartesianImpedance(smoothing=0.05), model)
    start = model.forward(Q0)
    goal = start.copy()
    goal[:3, 3] += [0.02, -0.01, 0.03]
    goal[:3, :3] = spatial.rotvec_to_matrix([0.0, 0.2, 0.1]) @ start[:3, :3]
    motion.update(ServoTarget("pose", goal))
    motion.step(state(), terms())
    share = filter_share(0.05, PERIOD)
    moved = spatial.pose_error(motion.reference_pose(), start)
    np.testing.assert_allclose(moved, share * spatial.pose_error(goal, start), atol=1e-12)  # along the line, about the axis
    for _ in range(2000):
        motion.step(state(), terms())
    np.testing.assert_allclose(motion.reference_pose(), goal, atol=1e-12)
