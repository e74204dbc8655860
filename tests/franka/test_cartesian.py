"""CartesianBackend and CartesianPath (robohal.cartesian) driving a 7-DOF Franka model:
on the in-process sim backend and, through the control process, on Franka's."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import robohal
from robohal.cartesian import CartesianBackend
from robohal.errors import InvalidArgument
from robohal.motion.cartesian import CartesianPath, profile_for
from robohal.uri import parse_uri
from robohal_franka.facts import READY_Q

SIM = "sim://?model=franka.fr3&rate=1000&realtime=0&lag=0&q0=" + ",".join(f"{v:.9f}" for v in READY_Q)


def within_limits(setpoints: np.ndarray, model, start: np.ndarray) -> None:
    """Finite differences of the whole stream (from rest at ``start``) inside every limit."""
    limits = model.limits
    chain = np.vstack([start, start, start, setpoints])
    assert limits.within(chain).all()
    for order, bound in ((1, limits.velocity), (2, limits.acceleration), (3, limits.jerk)):
        worst = (np.abs(np.diff(chain, order, axis=0)) / 0.001**order / bound).max()
        assert worst <= 1.0 + 1e-6, f"derivative {order} at {worst:.3f} of its limit"
    # and under the FR3's end-of-travel speed curve, at each new setpoint
    low, high = limits.velocity_bounds(chain[1:])
    velocity = np.diff(chain, axis=0) / 0.001
    assert (velocity <= high + 1e-9).all() and (velocity >= low - 1e-9).all()


@pytest.fixture
def arm():
    robot = robohal.connect(SIM)
    try:
        yield CartesianBackend(robot.backend)
    finally:
        robot.close()


def test_straight_line_is_tracked_within_limits(arm):
    start_q = arm.backend.commanded
    target = arm.pose.copy()
    target[:3, 3] += [0.06, -0.04, -0.05]
    result = arm.move_linear(target, duration=0.6)
    assert result.completed
    within_limits(result.commanded, arm.model, start_q)
    info = result.info
    assert info["final_position_error"] < 1e-4 and info["final_rotation_error"] < 1e-3
    assert info["max_position_error"] < 1e-4  # on the way (m): 0.08 mm at up to 0.3 m/s
    print({k: round(float(v), 6) for k, v in info.items()})


def test_pose_per_cycle_streaming_follows_and_stays_in_the_box(arm):
    start_q = arm.backend.commanded
    start = arm.pose
    sent = []
    for k in range(1, 301):
        pose = start.copy()
        pose[1, 3] += 0.03 * np.sin(np.pi * k / 600) ** 2
        arm.cycle(pose)
        sent.append(arm.backend.commanded)
    within_limits(np.array(sent), arm.model, start_q)
    for _ in range(300):
        arm.cycle(pose)
    assert arm.last_residual < 1e-4
    assert np.linalg.norm(arm.commanded_pose[:3, 3] - pose[:3, 3]) < 1e-4


def test_unreachable_target_never_breaks_a_limit(arm):
    """A target 1 m away and turned: the joints go as far as the box lets them, no error."""
    start_q = arm.backend.commanded
    far = arm.pose.copy()
    far[:3, 3] += [1.0, 0.5, 0.0]
    sent = []
    for _ in range(400):
        arm.cycle(far)
        sent.append(arm.backend.commanded)
    within_limits(np.array(sent), arm.model, start_q)


def test_joint_moves_and_pose_cycles_mix(arm):
    robot_q = arm.backend.commanded + np.radians([5, 0, 0, 5, 0, 0, 0])
    from robohal.motion import PointToPoint

    arm.backend.run(PointToPoint(robot_q, speed=0.5))
    held = arm.commanded_pose
    for _ in range(20):
        arm.cycle(held)  # picks up from the joint move's end without a jump
    assert np.abs(arm.backend.commanded - robot_q).max() < 1e-6


def test_a_closed_loop_path_ends_at_rest_although_the_posture_is_not_reached():
    # A full circle leaves the arm on its start pose in another configuration of its
    # self-motion: the posture pull would keep the joints moving, yet the motion must
    # end at rest (Franka refuses to finish a motion while the robot still moves).
    with robohal.connect(SIM) as robot:
        start_q = robot.backend.commanded
        start = robot.model.forward(start_q)
        times = np.linspace(0.05, 1.5, 120)
        turn = 2 * np.pi * times / times[-1]
        poses = np.repeat(start[None], len(times), axis=0)
        poses[:, :3, 3] += 0.05 * np.stack([np.cos(turn) - 1.0, np.sin(turn), 0.5 * np.sin(turn)], -1)
        path = CartesianPath(poses, times)
        result = robot.run(path)
    assert result.completed and path.summary()["settled"]
    assert np.abs(result.commanded[-1] - start_q).max() > 1e-3  # the self-motion is still there
    assert np.abs(np.diff(result.commanded[-3:], axis=0)).max() < 1e-8
    within_limits(result.commanded, robot.model, start_q)


def test_path_forms_and_bad_input():
    pose = np.eye(4)
    path = CartesianPath([pose, pose], [0.5, 1.0])
    assert pickle.loads(pickle.dumps(path)).times.tolist() == [0.5, 1.0]
    with pytest.raises(InvalidArgument):
        CartesianPath()
    with pytest.raises(InvalidArgument):
        CartesianPath([pose], [0.5], end=pose)
    with pytest.raises(InvalidArgument):
        CartesianPath([pose, pose], [1.0, 0.5])
    with pytest.raises(InvalidArgument):
        CartesianPath(end=pose, duration=-1)
    profile = profile_for(2.0)
    assert profile.duration == pytest.approx(2.0)


def test_sampled_path_on_franka_runs_in_the_control_process(reference_model, start_simulator):
    """On Franka the IK runs inside the 1 kHz control process (pylibfranka and the FCI simulator)."""
    pytest.importorskip("pylibfranka")
    from robohal_franka.backend import FrankaBackend

    simulator = start_simulator()
    backend = FrankaBackend(parse_uri(f"franka://{simulator.host}?model=franka.fr3"), reference_model)
    with CartesianBackend(backend) as arm:
        start = arm.pose
        poses = []
        for dz in (0.01, 0.02, 0.02):
            pose = start.copy()
            pose[2, 3] += dz
            poses.append(pose)
        result = arm.follow(poses, [0.3, 0.6, 0.8])
        assert result.completed
        assert "max_position_error" in result.info  # figures measured in the control process
        assert result.info["final_position_error"] < 1e-4
        assert abs(arm.pose[2, 3] - start[2, 3] - 0.02) < 1e-4
    assert simulator.stats()["robot_reflexes"] == 0


def test_at_a_joint_limit_position_holds_and_orientation_yields():
    """A turn of the flange that would take joint 7 past its limit: joint 7 stops at
    the limit (as near as its end-of-travel speed curve allows coming to rest), the
    position is still reached, and with the default weighting the leftover goes to
    orientation (compared with weighting rotation like position)."""
    from robohal import spatial
    from robohal.kinematics.diffik import IkOptions

    errors = {}
    for weight in (IkOptions().rotation_weight, 1.0):
        with robohal.connect(SIM) as robot:
            arm = CartesianBackend(robot.backend, options=IkOptions(rotation_weight=weight))
            start_q = arm.backend.commanded
            target = arm.pose.copy()
            target[:3, :3] = target[:3, :3] @ spatial.rotation_z(3.0)[:3, :3]  # J7 would need 0.785 + 3 > 3.05 rad
            target[0, 3] += 0.03
            sent = []
            for _ in range(2000):
                arm.cycle(target)
                sent.append(arm.backend.commanded)
            within_limits(np.array(sent), arm.model, start_q)
            assert arm.model.limits.upper[6] - 0.01 < arm.backend.commanded[6] <= arm.model.limits.upper[6]
            assert abs(sent[-1][6] - sent[-2][6]) < 1e-9  # holding there
            errors[weight] = tuple(float(x) for x in spatial.distance(target, arm.commanded_pose))
    (position, rotation), (position_equal, rotation_equal) = errors.values()
    assert position < 1e-3
    assert position < position_equal and rotation > rotation_equal


def test_joint_moves_near_an_end_of_travel_slow_down_to_its_speed_curve():
    # Joint 2 of the FR3 to 20 mrad short of its upper limit: at full speed the approach
    # would break the arm's position-based speed curve; the move is retimed to keep it.
    # Into the last few mrad, where the arm allows no speed toward the limit, it is refused.
    from robohal.errors import LimitViolation
    from robohal.motion import PointToPoint, end_of_travel_ratio
    from robohal.motion.trajectory import joint_profile, sample_times

    model = robohal.get_model("franka.fr3")
    limits = model.limits
    start = np.array(READY_Q)
    target = start.copy()
    target[1] = limits.upper[1] - 0.02
    profile = joint_profile(target - start, limits.velocity * 0.98, limits.acceleration * 0.98, limits.jerk * 0.98)
    s, _, _ = profile.sample(sample_times(profile.duration, 0.001))  # the plain full-speed plan
    assert end_of_travel_ratio(model.limits, start, start + s[:, None] * (target - start), 0.001) > 1.0
    setpoints = PointToPoint(target).plan(start, model, 0.001)
    assert np.allclose(setpoints[-1], target)
    within_limits(setpoints, model, start)
    target[1] = model.limits.upper[1] - 0.002
    with pytest.raises(LimitViolation, match="too close"):
        PointToPoint(target).plan(start, model, 0.001)
