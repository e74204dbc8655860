"""franky-control (a third-party client with its own libfranka) against the bundled
FCI simulator: its joint, waypoint, velocity and Cartesian motions, and its joint and
Cartesian impedance and torque motions (in torque control, on the simulated arm's dynamics),
finish with no reflex and leave the robot where they were asked to.

The client runs in the franky venv (``make franky-sim``), one process per motion, and a
fresh simulator per test (a reflex, like the robot's, outlives the client that caused it).
"""

from __future__ import annotations

import numpy as np
import pytest

JOINT_TOLERANCE = 5e-3  # rad: our choice; a measured arm settles near, not exactly on, its command
TRANSLATION_TOLERANCE = 2e-3  # m: our choice, as above
ROTATION_TOLERANCE = 5e-3  # rad: our choice, as above


@pytest.fixture(scope="module")
def franky(third_party):
    """The client side, or a skip naming what is missing (before any simulator starts)."""
    reason = third_party.missing_reason("franky")
    if reason:
        pytest.skip(reason)
    return third_party


@pytest.fixture
def run_motion(franky, simulator):
    """``run_motion(scenario)`` -> the client's account, after checking the robot's side."""

    def run(scenario: str) -> dict:
        result = franky.run_client(scenario, simulator.host)
        stats = simulator.stats()
        link = {key: stats.get(key) for key in ("robot_missed", "late_ticks", "states_dropped")}
        assert result["error"] is None, f"franky {scenario}: {result['error']} (simulator: {link})"
        assert result["robot_mode"] == "RobotMode.Idle"
        assert result["last_motion_errors"] == "[]" and not result["has_errors"]
        assert stats["robot_reflexes"] == 0
        assert np.abs(result["dq_end"]).max() < 1e-2  # at rest
        return result

    return run


def assert_joints_at(result: dict, expected) -> None:
    error = np.abs(np.array(result["q_end"]) - np.array(expected))
    assert error.max() < JOINT_TOLERANCE, f"joints {error.round(4).tolist()} rad from the target"


def rotation_angle(q1, q2) -> float:
    """Angle between two unit quaternions (either sign), rad."""
    return 2.0 * float(np.arccos(min(1.0, abs(float(np.dot(q1, q2))))))


def assert_pose_at(result: dict) -> None:
    distance = np.linalg.norm(np.array(result["translation_end"]) - result["translation"])
    assert distance < TRANSLATION_TOLERANCE, f"flange {distance * 1000:.2f} mm from the target"
    angle = rotation_angle(result["quaternion_end"], result["quaternion"])
    assert angle < ROTATION_TOLERANCE, f"orientation {angle:.4f} rad from the target"


def test_joint_motion(run_motion):
    result = run_motion("joint")
    assert_joints_at(result, result["q"])


def test_joint_waypoint_motion(run_motion):
    result = run_motion("joint_waypoint")
    assert_joints_at(result, result["q"])


def test_joint_velocity_motion(run_motion):
    result = run_motion("joint_velocity")
    moved = np.array(result["q_end"]) - result["q0"]
    # franky's duration spans its ramp up and hold, and the ramp down mirrors the ramp up, so each
    # joint travels its velocity times the duration (measured: 0.1 rad for 0.2 rad/s over 0.5 s).
    expected = np.array(result["dq"]) * result["hold_s"]
    assert np.abs(moved - expected).max() < 0.1 * np.abs(expected).max() + JOINT_TOLERANCE, moved.round(4).tolist()


def test_cartesian_motion(run_motion):
    assert_pose_at(run_motion("cartesian"))


def test_cartesian_waypoint_motion(run_motion):
    assert_pose_at(run_motion("cartesian_waypoint"))


# franky's impedances pull with springs against the simulated joints' friction: they settle a few
# mrad (mm) off the target (measured 5.7 mrad on joint 7 at 50 Nm/rad, 3.4 mm at 1000 N/m)
IMPEDANCE_JOINT_TOLERANCE = 0.012  # rad: our choice, twice the measured
IMPEDANCE_TRANSLATION_TOLERANCE = 0.007  # m: our choice, twice the measured


def test_joint_impedance_motion(run_motion):
    result = run_motion("joint_impedance")
    error = np.abs(np.array(result["q_end"]) - result["q"])
    assert error.max() < IMPEDANCE_JOINT_TOLERANCE, error.round(4).tolist()
    assert np.abs(np.array(result["q_end"]) - result["q0"]).max() > 0.1  # it did move


def test_cartesian_impedance_motion(run_motion):
    result = run_motion("cartesian_impedance")
    distance = np.linalg.norm(np.array(result["translation_end"]) - result["translation"])
    assert distance < IMPEDANCE_TRANSLATION_TOLERANCE, f"flange {distance * 1000:.2f} mm from the target"
    assert rotation_angle(result["quaternion_end"], result["quaternion"]) < 0.02


def test_a_zero_torque_motion_floats_the_arm_where_it_is(run_motion):
    """franky's direct torque motion sending nothing on top of the robot's gravity compensation:
    the simulated robot compensates gravity itself, so the arm stays put."""
    result = run_motion("torque")
    assert np.abs(np.array(result["q_end"]) - result["q0"]).max() < 1e-3
