"""The pylibfranka-compatible stubs: the same client scenarios as against the
FCI simulator, with the same outcomes (the stubs run the same simulated robot)."""

from __future__ import annotations

import numpy as np
import pytest
from robohal_franka import stubs
from robohal_franka.facts import READY_Q, dh_forward

IDLE, REFLEX = 1, 4


def test_api_surface_matches_pylibfranka():
    pylibfranka = pytest.importorskip("pylibfranka")
    for name in ("Robot", "RobotState", "JointPositions", "JointVelocities", "CartesianPose", "CartesianVelocities",
                 "Torques", "Errors", "Duration",
                 "ControllerMode", "RobotMode", "RealtimeConfig", "FrankaException", "CommandException",
                 "ControlException", "NetworkException", "RealtimeException", "InvalidOperationException"):
        assert hasattr(pylibfranka, name) and hasattr(stubs, name), name
    for name in ("read_once", "start_joint_position_control", "start_joint_velocity_control",
                 "start_cartesian_pose_control", "start_cartesian_velocity_control", "start_torque_control",
                 "set_collision_behavior", "automatic_error_recovery", "stop"):
        assert hasattr(pylibfranka.Robot, name) and hasattr(stubs.Robot, name), name
    for enum in ("RobotMode", "ControllerMode", "RealtimeConfig"):
        theirs = {k: int(v) for k, v in getattr(pylibfranka, enum).__members__.items()}
        ours = {k: int(v) for k, v in getattr(stubs, enum).__members__.items()}
        assert ours == theirs
    for exception in ("CommandException", "ControlException", "NetworkException", "RealtimeException"):
        assert issubclass(getattr(stubs, exception), RuntimeError) and issubclass(getattr(pylibfranka, exception), RuntimeError)


def test_read_gives_the_simulated_state(raw_client):
    out = raw_client("read", "stubs", "stubs")
    assert np.allclose(out["q_d"], READY_Q, atol=1e-6) and out["mode"] == IDLE
    assert 1e-6 < np.abs(np.array(out["q"]) - out["q_d"]).max() < 1e-3  # the same imperfect arm
    assert np.allclose(np.array(out["O_T_EE"]).reshape(4, 4, order="F"), dh_forward(np.array(out["q"])), atol=1e-5)


def test_smooth_motion_and_jump_reflex_with_recovery(raw_client):
    out = raw_client("smooth", "stubs", "stubs")
    assert out["error"] is None and out["after_mode"] == IDLE
    out = raw_client("jump", "stubs", "stubs")
    kind, message = out["error"]
    assert kind == "ControlException" and "joint_motion_generator_velocity_limits_violation" in message
    assert out["after_mode"] == REFLEX
    assert set(out["current"]) == set(out["last"]) == {"joint_motion_generator_velocity_limits_violation",
                                                       "joint_motion_generator_velocity_discontinuity",
                                                       "joint_motion_generator_acceleration_discontinuity"}
    assert out["move_in_reflex"] == "CommandException"
    assert out["recovered_mode"] == IDLE and out["after_recovery"] is None


def test_velocity_torque_and_stop(raw_client):
    out = raw_client("velocity", "stubs", "stubs")
    assert (np.array(out["end_q_d"]) - out["start_q_d"])[0] == pytest.approx(0.1, abs=2e-3)
    out = raw_client("torque", "stubs", "stubs")
    assert out["torque_jump"][0] == "ControlException" and "controller_torque_discontinuity" in out["torque_jump"][1]
    assert raw_client("stop", "stubs", "stubs")["after_stop_mode"] == IDLE


def test_realtime_enforced_off_a_realtime_kernel_and_busy_robot():
    if stubs._realtime_kernel():
        pytest.skip("this kernel is PREEMPT_RT")
    with pytest.raises(stubs.RealtimeException, match="realtime"):
        stubs.Robot("stub", stubs.RealtimeConfig.kEnforce)
    robot = stubs.Robot("stub", stubs.RealtimeConfig.kIgnore)
    control = robot.start_joint_position_control(stubs.ControllerMode.JointImpedance)
    with pytest.raises(stubs.InvalidOperationException):
        robot.read_once()
    state, duration = control.readOnce()
    assert duration.to_sec() == 0.0 and state.robot_mode == stubs.RobotMode.Move
    assert str(state.current_errors) == "[]" and not state.current_errors
