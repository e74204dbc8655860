"""The simulated arm tracks like a real one: measured q follows q_d through a joint-controller
model (lag, small overshoot, a residual static error, seeded noise); q_d is what the robot holds."""

from __future__ import annotations

import numpy as np
import pytest
from robohal_franka import wire
from robohal_franka.simulated_robot import (
    POSITION_NOISE,
    STATIC_ERROR,
    TRACKING_BANDWIDTH,
    SimulatedRobot,
)
from robohal_franka.wire import MoveController, MoveGenerator, RobotMode


def joint_command(q, finished=False) -> np.ndarray:
    record = np.zeros((), dtype=wire.COMMAND)
    record["q_c"] = q
    record["motion_generation_finished"] = finished
    return record


def run_bump(robot: SimulatedRobot, joint=3, amplitude=0.2, duration=1.0):
    """A sin^4 bump (at rest at both ends); returns the per-cycle (q_d, q) of the motion."""
    assert robot.start_motion(MoveController.JOINT_IMPEDANCE, MoveGenerator.JOINT_POSITION).name == "MOTION_STARTED"
    q0 = robot.q_d.copy()
    cycles = round(duration / 1e-3)
    desired, measured = [], []
    for k in range(1, cycles + 1):
        q = q0.copy()
        q[joint] += amplitude * np.sin(np.pi * k / cycles) ** 4
        robot.answer(joint_command(q, finished=k == cycles))
        assert robot.tick() in (None, "finished")
        desired.append(robot.q_d.copy())
        measured.append(robot.q.copy())
    assert robot.mode is RobotMode.IDLE
    return np.array(desired), np.array(measured)


def settle(robot: SimulatedRobot, cycles=500) -> np.ndarray:
    positions = []
    for _ in range(cycles):
        robot.tick()
        positions.append(robot.q.copy())
    return np.array(positions)


def test_at_rest_the_arm_sits_near_q_d_never_on_it():
    robot = SimulatedRobot(seed=7)
    held = robot.q_d.copy()
    positions = settle(robot)
    assert (robot.q_d == held).all()  # Idle holds q_d constant
    offset = positions.mean(axis=0) - held
    low, high = STATIC_ERROR
    assert (np.abs(offset) > 0.5 * low).all() and (np.abs(offset) < 2 * high).all()  # the static error
    jitter = positions.std(axis=0)
    assert (jitter > 0.5 * POSITION_NOISE).all() and (jitter < 2 * POSITION_NOISE).all()  # and noise


def test_measured_q_lags_during_a_motion_and_settles_with_little_overshoot():
    robot = SimulatedRobot(seed=1)
    desired, measured = run_bump(robot)
    error = measured[:, 3] - desired[:, 3]
    # the lag is of the order of ddq_d / w^2 (the bump peaks near 6 rad/s^2)
    peak_acceleration = np.abs(np.diff(desired[:, 3], 2)).max() / 1e-6
    assert 0.3 * peak_acceleration / TRACKING_BANDWIDTH**2 < np.abs(error).max() < 2 * peak_acceleration / TRACKING_BANDWIDTH**2
    after = settle(robot, 300)
    held = robot.q_d[3]
    assert abs(held - desired[0, 3]) < 1e-6  # the bump returned; the robot holds its end
    overshoot = np.abs(after[:, 3] - held).max()
    assert overshoot < 5e-4  # a real arm's: small (the lag's order, not a swing)
    assert abs(after[-100:, 3].mean() - held - robot.tracking.bias[3]) < 5e-6  # settled on its static error


def test_dq_comes_from_the_same_model():
    robot = SimulatedRobot(seed=2)
    robot.start_motion(MoveController.JOINT_IMPEDANCE, MoveGenerator.JOINT_POSITION)
    # the model's velocity is the derivative of its position (the measured dq adds only noise)
    positions, velocities = [], []
    q0 = robot.q_d.copy()
    for k in range(1, 201):
        q = q0.copy()
        q[3] += 0.01 * np.sin(np.pi * k / 200) ** 4
        robot.answer(joint_command(q, finished=k == 200))
        assert robot.tick() in (None, "finished")
        positions.append(robot.tracking.position.copy())
        velocities.append(robot.dq.copy())
    fd = np.diff(np.array(positions)[:, 3]) / 1e-3
    assert np.abs(fd - np.array(velocities)[1:, 3]).max() < 5e-3
    assert np.abs(np.array(velocities)[:, 3]).max() > 0.1  # it moved


def test_the_seed_makes_the_arm_reproducible():
    a, b, c = SimulatedRobot(seed=5), SimulatedRobot(seed=5), SimulatedRobot(seed=6)
    qa, qb, qc = settle(a, 50), settle(b, 50), settle(c, 50)
    assert (qa == qb).all() and not (qa == qc).all()
    assert a.stats["seed"] == 5  # reported, so that an unseeded run (a fresh seed each) can be replayed


def test_ideal_tracks_perfectly():
    robot = SimulatedRobot(ideal=True)
    assert (robot.q == robot.q_d).all() and (robot.dq == 0).all()
    desired, measured = run_bump(robot)
    assert (desired == measured).all()


def test_after_a_reflex_the_robot_holds_where_it_stopped():
    robot = SimulatedRobot(seed=4)
    robot.start_motion(MoveController.JOINT_IMPEDANCE, MoveGenerator.JOINT_POSITION)
    q = robot.q_d.copy()
    for k in range(1, 301):  # speed joint 1 up to 0.1 rad/s at 1 rad/s^2
        q = q + np.r_[min(k, 100) * 1e-3 * 1e-3, np.zeros(6)]
        robot.answer(joint_command(q))
        assert robot.tick() is None
    robot.answer(joint_command(q + np.r_[0.05, np.zeros(6)]))  # a jump
    assert robot.tick() == "reflex"
    stopped = robot.q_d.copy()
    assert np.abs(stopped - q).max() < 1e-6  # the last accepted desired position
    after = settle(robot, 300)
    assert (robot.q_d == stopped).all()
    assert np.abs(after[-1] - stopped).max() < 5 * STATIC_ERROR[1]
    robot.recover()
    assert (robot.q_d == stopped).all() and robot.mode is RobotMode.IDLE


@pytest.mark.parametrize("model", ["franka.fr3", "franka.panda"])
def test_the_state_record_separates_desired_and_measured(model):
    robot = SimulatedRobot(model, seed=9)
    record = robot.fill(wire.new_state())
    q, q_d = wire.get_floats(record, "q"), wire.get_floats(record, "q_d")
    assert not np.allclose(q, q_d, atol=1e-6) and np.allclose(q, q_d, atol=1e-3)
    pose, pose_d = (wire.get_floats(record, name).reshape(4, 4, order="F") for name in ("O_T_EE", "O_T_EE_d"))
    assert np.allclose(pose, robot.forward(q), atol=1e-5) and np.allclose(pose_d, robot.forward(q_d), atol=1e-5)
    assert np.allclose(wire.get_floats(record, "O_T_EE_c"), pose_d.ravel(order="F"), atol=1e-6)  # held


def test_sim_ideal_and_sim_seed_ride_on_the_uri():
    from robohal.errors import UriError
    from robohal.sim.process import simulator_options
    from robohal.uri import parse_uri
    from robohal_franka.simulation import simulator_args, start_simulator

    uri = parse_uri("franka://sim?model=franka.fr3&sim_ideal=1&sim_seed=4")
    assert simulator_args(uri, "127.0.0.9") == ["--address", "127.0.0.9", "--model", "franka.fr3"]
    assert simulator_options(uri) == ["--ideal", "1", "--seed", "4"]
    assert simulator_options(parse_uri("franka://sim?model=franka.fr3")) == []  # never ideal by default
    with pytest.raises(UriError, match="sim_ideal"):
        start_simulator(parse_uri("franka://sim?model=franka.fr3&sim_ideal=maybe"))


def test_the_fci_simulator_tracks_imperfectly_unless_ideal(start_simulator, raw_client):
    pytest.importorskip("pylibfranka", reason="pip install pylibfranka (a Linux wheel)")
    real = raw_client("read", start_simulator("--seed", "3").host)
    assert 1e-6 < np.abs(np.array(real["q"]) - real["q_d"]).max() < 1e-3
    ideal = raw_client("read", start_simulator("--ideal", "1").host)
    assert ideal["q"] == ideal["q_d"] and ideal["dq"] == [0.0] * 7
