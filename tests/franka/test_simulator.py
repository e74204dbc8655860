"""The FCI simulator against the real pylibfranka client (each scenario in its own process)."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest
from robohal.uri import parse_uri
from robohal_franka.facts import READY_Q, dh_forward
from robohal_franka.reference_arm import ReferenceArm

pytest.importorskip("pylibfranka", reason="pip install pylibfranka (a Linux wheel)")
IDLE, MOVE, REFLEX = 1, 2, 4


def test_pylibfranka_connects_reads_a_consistent_state_and_loads_our_urdf(simulator, raw_client):
    out = raw_client("read", simulator.host)
    q, q_d = np.array(out["q"]), np.array(out["q_d"])
    assert np.allclose(q_d, READY_Q, atol=1e-6)  # the robot holds the ready pose
    # the measured arm sits near it, never exactly on it (a real arm's residual error and noise)
    assert np.abs(q - q_d).max() < 1e-3 and np.abs(q - q_d).max() > 1e-6
    assert out["mode"] == IDLE
    pose = np.array(out["O_T_EE"]).reshape(4, 4, order="F")  # column-major on the wire
    assert np.allclose(pose, dh_forward(q), atol=1e-5)
    assert np.allclose(np.array(out["O_T_EE_d"]).reshape(4, 4, order="F"), dh_forward(q_d), atol=1e-5)
    assert np.allclose(pose[:3, 3], [0.3069, 0.0, 0.5903], atol=1e-3)
    assert out["gravity_vector"] == pytest.approx([0, 0, -9.81], abs=1e-5)
    # libfranka's own Model, built from the URDF we served: gravity loads the shoulder and elbow
    gravity = np.array(out["model_gravity"])
    assert gravity.shape == (7,) and np.isfinite(gravity).all() and abs(gravity[1]) + abs(gravity[3]) > 1.0


def test_smooth_joint_position_motion_finishes_without_reflex(simulator, raw_client):
    out = raw_client("smooth", simulator.host)
    assert out["error"] is None
    assert out["after_mode"] == IDLE
    assert np.allclose(out["after_q_d"], out["q_d"], atol=1e-6)  # the bump returns to its start
    assert np.allclose(out["after_q"], out["q_d"], atol=1e-3)  # and the arm follows it there
    stats = simulator.stats()
    # the bump spans 1000 of the robot's cycles: commanded, or filled where the client skipped a state
    assert stats["robot_reflexes"] == 0 and stats["robot_commands"] + stats["robot_filled"] >= 999


def test_jump_raises_the_velocity_reflex_and_recovery_returns_to_idle(simulator, raw_client):
    out = raw_client("jump", simulator.host)
    kind, message = out["error"]
    assert kind == "ControlException"
    assert "joint_motion_generator_velocity_limits_violation" in message
    assert out["after_mode"] == REFLEX
    # a 20 mrad step breaks the velocity, acceleration and jerk limits at once: all are reported
    jump = {"joint_motion_generator_velocity_limits_violation", "joint_motion_generator_velocity_discontinuity",
            "joint_motion_generator_acceleration_discontinuity"}
    assert set(out["current"]) == jump and set(out["last"]) == jump
    assert out["move_in_reflex"] == "CommandException"  # no motion until recovered
    assert out["recovered_mode"] == IDLE and out["recovered_errors"] == []
    assert out["after_recovery"] is None


def test_velocity_and_torque_interfaces(simulator, raw_client):
    out = raw_client("velocity", simulator.host)
    moved = np.array(out["end_q_d"]) - np.array(out["start_q_d"])
    # a 1 s raised-cosine velocity of peak 0.2 rad/s integrates to 0.1 rad
    assert moved[0] == pytest.approx(0.1, abs=2e-3) and np.abs(moved[1:]).max() < 1e-6
    out = raw_client("torque", simulator.host)
    assert np.abs(np.array(out["end_q"]) - out["start_q"]).max() > 1e-4  # the torque moved the arm
    kind, message = out["torque_jump"]
    assert kind == "ControlException" and "controller_torque_discontinuity" in message


def test_stop_ends_a_motion(simulator, raw_client):
    out = raw_client("stop", simulator.host)
    assert out["after_stop_mode"] == IDLE


def test_two_simulators_side_by_side_and_loopback_only(start_simulator, raw_client):
    first, second = start_simulator(), start_simulator()
    assert first.host != second.host
    a = raw_client("read", first.host)
    b = raw_client("read", second.host)
    assert a["mode"] == b["mode"] == IDLE
    with socket.socket() as sock:  # only the loopback address given is bound
        sock.settimeout(1.0)
        assert sock.connect_ex(("127.0.0.1", 1337)) != 0 or first.host == "127.0.0.1"


def test_refuses_a_non_loopback_address():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "robohal_franka.simulator", "--address", "192.0.2.1"],
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert done.returncode != 0 and "loopback" in (done.stderr + done.stdout)


def test_starts_fast_and_prints_its_address_first(start_simulator):
    started = time.monotonic()
    simulator = start_simulator("--model", "franka.panda")
    elapsed = time.monotonic() - started
    assert simulator.first_line == f"READY franka://{simulator.host}?model=franka.panda"
    assert simulator.uri == parse_uri(f"franka://{simulator.host}?model=franka.panda")
    print(f"simulator start: {elapsed * 1000:.0f} ms")  # a figure, not an assertion (see benchmarks/)


def test_panda_limits_apply(start_simulator, raw_client):
    """The Panda's joint 7 range is narrower than FR3's: our URDF and checker follow the model."""
    simulator = start_simulator("--model", "franka.panda")
    out = raw_client("read", simulator.host)
    assert np.allclose(out["q_d"], READY_Q, atol=1e-6)
    assert ReferenceArm("franka.panda").limits.upper[6] < ReferenceArm("franka.fr3").limits.upper[6]


def test_a_late_tick_slips_the_clock_instead_of_shortening_the_next_cycle():
    from robohal_franka.simulator import MIN_TICK_GAP, next_tick_after

    assert next_tick_after(10.0, 10.00005) == pytest.approx(10.001)  # on time: the schedule holds
    # 0.6 ms late: the client still gets nearly a full cycle to answer this state
    assert next_tick_after(10.0, 10.0006) == pytest.approx(10.0006 + MIN_TICK_GAP)
    assert MIN_TICK_GAP >= 0.0008
