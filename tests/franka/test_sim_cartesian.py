"""The simulated robot's Cartesian pose and velocity generators: its own IK, its checks by
libfranka's error names, and the real pylibfranka's Cartesian control against the FCI simulator.

This file is also the client the tests run in a subprocess (pylibfranka may switch its thread to
SCHED_FIFO and holds the GIL while it blocks):

    python test_sim_cartesian.py HOST pylibfranka|stubs
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from robohal_franka import wire
from robohal_franka.facts import FR3, dh_forward
from robohal_franka.simulated_robot import IK_NAMES, SimulatedRobot
from robohal_franka.wire import MoveController, MoveGenerator, RobotMode

SMOOTH_POSE_S = 2.0
VELOCITY_S = 1.0


# The client side (runs in its own process) ------------------------------------------------------


def _names(errors) -> list[str]:
    return sorted(n for n in dir(type(errors)) if not n.startswith("_") and getattr(errors, n) is True) if errors else []


def _recover(robot) -> int:
    robot.automatic_error_recovery()
    for _ in range(100):  # states queued before the recovery come first
        state = robot.read_once()
        if int(state.robot_mode) != 4:
            break
    return int(state.robot_mode)


def _pose_motion(lib, robot, offset, duration: float, jump_at: int | None = None):
    """libfranka's generate_cartesian_pose_motion example, shortened: the flange swings on an arc
    in x-z and back, starting from O_T_EE_c. ``offset(P0, k)`` may spoil the command at cycle k."""
    control = robot.start_cartesian_pose_control(lib.ControllerMode.JointImpedance)
    state, period = control.readOnce()
    start = list(state.O_T_EE_c)
    cycles = round(duration / 0.001)
    k = 0  # the robot's clock, in cycles: as libfranka's examples, the motion follows its time
    try:
        while k < cycles:
            k = min(cycles, k + max(1, round(period.to_sec() / 0.001)))
            t = k * 0.001
            angle = math.pi / 4 * (1 - math.cos(2 * math.pi * t / duration))
            pose = list(start)
            pose[12] += 0.1 * math.sin(angle)
            pose[14] += 0.1 * (math.cos(angle) - 1)
            pose = offset(pose, k)
            command = lib.CartesianPose(pose)
            command.motion_finished = k == cycles
            control.writeOnce(command)
            if k < cycles:
                state, period = control.readOnce()
    except Exception as exc:
        del control
        return start, [type(exc).__name__, str(exc)]
    del control
    return start, None


def _velocity_motion(lib, robot, duration: float, jump: bool = False):
    """libfranka's generate_cartesian_velocity_motion example, one period: 0.1 m/s peak at 45 deg in x-z."""
    control = robot.start_cartesian_velocity_control(lib.ControllerMode.JointImpedance)
    _, period = control.readOnce()
    cycles = round(duration / 0.001)
    k = 0  # the robot's clock, in cycles, as in _pose_motion
    try:
        while k < cycles:
            k = min(cycles, k + max(1, round(period.to_sec() / 0.001)))
            t = k * 0.001
            v = 0.1 / 2 * (1 - math.cos(2 * math.pi / duration * t))
            if jump and k >= 50:  # once, at the first cycle from 50 on
                v += 0.5
                jump = False
            command = lib.CartesianVelocities([math.cos(math.pi / 4) * v, 0, -math.sin(math.pi / 4) * v, 0, 0, 0])
            command.motion_finished = k == cycles
            control.writeOnce(command)
            if k < cycles:
                _, period = control.readOnce()
    except Exception as exc:
        del control
        return [type(exc).__name__, str(exc)]
    del control
    return None


def client_main(host: str, impl: str) -> None:
    import importlib

    lib = importlib.import_module("pylibfranka" if impl == "pylibfranka" else "robohal_franka.stubs")
    robot = lib.Robot(host, lib.RealtimeConfig.kIgnore)
    out: dict = {}
    start, out["pose_error"] = _pose_motion(lib, robot, lambda pose, k: pose, SMOOTH_POSE_S)
    state = robot.read_once()
    out.update(pose_start=start, pose_end_d=list(state.O_T_EE_d), pose_end=list(state.O_T_EE),
               pose_mode=int(state.robot_mode))

    before = robot.read_once()
    out["velocity_error"] = _velocity_motion(lib, robot, VELOCITY_S)
    state = robot.read_once()
    out.update(velocity_start_d=list(before.O_T_EE_d), velocity_end_d=list(state.O_T_EE_d),
               velocity_mode=int(state.robot_mode))

    def jump(pose, k):
        if k >= 300:
            pose[12] += 0.01
        return pose

    _, out["jump_error"] = _pose_motion(lib, robot, jump, SMOOTH_POSE_S)
    state = robot.read_once()
    out.update(jump_mode=int(state.robot_mode), jump_last=_names(state.last_motion_errors))
    out["jump_recovered"] = _recover(robot)

    def start_off(pose, k):
        if k == 1:
            pose[13] += 0.005  # 5 mm off where the robot holds the flange
        return pose

    _, out["start_error"] = _pose_motion(lib, robot, start_off, 0.2)
    out["start_last"] = _names(robot.read_once().last_motion_errors)
    _recover(robot)

    out["velocity_jump_error"] = _velocity_motion(lib, robot, VELOCITY_S, jump=True)
    out["velocity_jump_last"] = _names(robot.read_once().last_motion_errors)
    out["velocity_jump_recovered"] = _recover(robot)
    print(json.dumps(out))


# The tests ---------------------------------------------------------------------------------------


IDLE, REFLEX = 1, 4
JUMP = {"cartesian_motion_generator_velocity_limits_violation", "cartesian_motion_generator_velocity_discontinuity",
        "cartesian_motion_generator_acceleration_discontinuity"}

def command(pose=None, twist=None, elbow=None, finished=False) -> np.ndarray:
    record = np.zeros((), dtype=wire.COMMAND)
    if pose is not None:
        record["O_T_EE_c"] = np.asarray(pose).ravel(order="F")
    if twist is not None:
        record["O_dP_EE_c"] = twist
    if elbow is not None:
        record["elbow_c"] = elbow
        record["valid_elbow"] = True
    record["motion_generation_finished"] = finished
    return record

def pose_robot(q0=None, **options) -> tuple[SimulatedRobot, np.ndarray]:
    robot = SimulatedRobot(**({"q0": q0} if q0 is not None else {}), seed=11, **options)
    assert robot.start_motion(MoveController.CARTESIAN_IMPEDANCE, MoveGenerator.CARTESIAN_POSITION).name == "MOTION_STARTED"
    held = wire.get_floats(robot.fill(wire.new_state()), "O_T_EE_c").reshape(4, 4, order="F")
    return robot, held

def arc(start: np.ndarray, k: int, cycles: int, radius=0.1) -> np.ndarray:
    angle = math.pi / 4 * (1 - math.cos(2 * math.pi * k / cycles))
    pose = start.copy()
    pose[0, 3] += radius * math.sin(angle)
    pose[2, 3] += radius * (math.cos(angle) - 1)
    return pose


def test_a_smooth_pose_motion_is_followed_exactly_through_the_robot_s_ik():
    robot, start = pose_robot()
    cycles = 1000
    for k in range(1, cycles + 1):
        target = arc(start, k, cycles, radius=0.05)
        robot.answer(command(target, finished=k == cycles))
        assert robot.tick() in (None, "finished"), robot.errors
        assert np.allclose(dh_forward(robot.q_d), target, atol=1e-6)  # within float32 of the start pose
    assert robot.mode is RobotMode.IDLE and robot.stats["reflexes"] == 0
    for _ in range(300):
        robot.tick()
    assert np.abs(robot.q - robot.q_d).max() < 2e-4  # the measured arm follows, to its static error


def test_the_elbow_sets_joint_3():
    robot, start = pose_robot()
    q3 = robot.q_d[2]
    cycles = 800
    for k in range(1, cycles + 1):
        elbow = q3 + 0.1 * math.sin(math.pi * k / cycles) ** 4  # the elbow swings while the flange holds
        robot.answer(command(start, elbow=(elbow, -1.0), finished=k == cycles))
        assert robot.tick() in (None, "finished"), robot.errors
        assert robot.q_d[2] == pytest.approx(elbow, abs=1e-12)
        assert np.allclose(dh_forward(robot.q_d), start, atol=1e-6)
    assert robot.mode is RobotMode.IDLE


@pytest.mark.parametrize(("spoil", "errors"), [
    (lambda pose: pose @ np.diag([1.01, 1.01, 1.01, 1.0]), {"cartesian_position_motion_generator_invalid_frame"}),
    (lambda pose: pose @ np.diag([1.0, 1.0, -1.0, 1.0]), {"cartesian_position_motion_generator_invalid_frame"}),  # a mirror
    (lambda pose: pose + _shift(0.01), JUMP),  # 10 mm in one cycle
])
def test_bad_pose_commands_raise_libfranka_s_errors(spoil, errors):
    robot, start = pose_robot()
    robot.answer(command(start))
    assert robot.tick() is None
    robot.answer(command(spoil(start)))
    assert robot.tick() == "reflex"
    assert set(robot.errors) == errors and robot.mode is RobotMode.REFLEX
    robot.recover()
    assert robot.mode is RobotMode.IDLE


def _shift(dx: float) -> np.ndarray:
    shift = np.zeros((4, 4))
    shift[0, 3] = dx
    return shift


@pytest.mark.parametrize(("first", "error"), [
    (lambda pose: pose + _shift(2e-3), "cartesian_position_motion_generator_start_pose_invalid"),
    # off by a rest error (as libfranka's examples start, from the measured O_T_EE): it starts there
    (lambda pose: pose + _shift(1e-4), None),
    # within one cycle at 9 m/s^2 from rest (9e-6 m), and within the joints' jerk through the IK
    (lambda pose: pose + _shift(1e-6), None),
])
def test_the_first_pose_starts_where_the_robot_holds_the_flange(first, error):
    robot, start = pose_robot()
    robot.answer(command(first(start)))
    event = robot.tick()
    assert robot.errors == (() if error is None else (error,)) and event == (None if error is None else "reflex")


@pytest.mark.parametrize(("elbows", "error"), [
    ([(0.01, -1.0)], "cartesian_motion_generator_start_elbow_invalid"),  # 10 mrad off joint 3
    ([(0.0, 1.0)], "cartesian_motion_generator_start_elbow_invalid"),  # the other side of the flip
    ([(0.0, -1.0), (0.0, 1.0)], "cartesian_motion_generator_elbow_sign_inconsistent"),  # a flip mid-motion
    ([(0.0, -1.0), (0.0, -1.0), (1e-3, -1.0)], "cartesian_motion_generator_elbow_limit_violation"),  # 1 mrad jump
])
def test_elbow_checks(elbows, error):
    robot, start = pose_robot()
    q3 = robot.q_d[2]
    events = []
    for offset, sign in elbows:
        robot.answer(command(start, elbow=(q3 + offset, sign)))
        events.append(robot.tick())
    assert events[-1] == "reflex" and events[:-1] == [None] * (len(elbows) - 1)
    assert robot.errors == (error,)


def test_the_ik_keeps_the_joint_limits_near_the_end_of_travel():
    # joint 1 20 mrad below its upper limit; the flange turns about the base z axis toward it at
    # 0.05 rad/s: the FR3's position-based speed curve stops it before the range does
    q0 = np.array([FR3.upper[0] - 0.02, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    robot, start = pose_robot(q0=q0)
    angle, errors = 0.0, ()
    for k in range(1, 2001):
        rate = 0.05 * min(k / 200, 1.0)  # ramp up at 0.25 rad/s^2
        angle += rate * 1e-3
        turn = np.eye(4)
        turn[:2, :2] = [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]]
        robot.answer(command(turn @ start))
        if robot.tick() == "reflex":
            errors = robot.errors
            break
    assert errors == (IK_NAMES["velocity"],)
    assert robot.q_d[0] < FR3.upper[0]


def test_cartesian_velocity_integrates_the_desired_pose_and_checks_the_twist():
    robot = SimulatedRobot(seed=12)
    robot.start_motion(MoveController.JOINT_IMPEDANCE, MoveGenerator.CARTESIAN_VELOCITY)
    start = dh_forward(robot.q_d)
    cycles = 1000
    for k in range(1, cycles + 1):
        v = 0.05 * (1 - math.cos(2 * math.pi * k / cycles))
        robot.answer(command(twist=[v, 0, 0, 0, 0, v], finished=k == cycles))
        assert robot.tick() in (None, "finished"), robot.errors
    end = dh_forward(robot.q_d)
    assert end[0, 3] - start[0, 3] == pytest.approx(0.05, abs=1e-4)  # the integral of the twist
    turned = math.atan2(end[1, 0], end[0, 0]) - math.atan2(start[1, 0], start[0, 0])
    assert turned == pytest.approx(0.05, abs=1e-4) and robot.mode is RobotMode.IDLE
    # from rest to 0.5 m/s in one cycle: over the acceleration and jerk limits (not the 3 m/s one)
    robot.start_motion(MoveController.JOINT_IMPEDANCE, MoveGenerator.CARTESIAN_VELOCITY)
    robot.answer(command(twist=[0.5, 0, 0, 0, 0, 0]))
    assert robot.tick() == "reflex"
    assert robot.errors == ("cartesian_motion_generator_velocity_discontinuity",
                            "cartesian_motion_generator_acceleration_discontinuity")


def test_a_cartesian_motion_finished_at_speed_is_refused():
    robot = SimulatedRobot(seed=13)
    robot.start_motion(MoveController.JOINT_IMPEDANCE, MoveGenerator.CARTESIAN_VELOCITY)
    for k in range(1, 101):  # up to 0.05 m/s at 0.5 m/s^2, then stop dead
        robot.answer(command(twist=[min(k, 100) * 5e-4, 0, 0, 0, 0, 0], finished=k == 100))
        event = robot.tick()
    assert event == "reflex"
    assert robot.errors == ("cartesian_motion_generator_velocity_discontinuity",
                            "cartesian_motion_generator_acceleration_discontinuity")


def _run_client(host: str, impl: str) -> dict:
    done = subprocess.run([sys.executable, __file__, host, impl], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"client failed:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check_client(out: dict) -> None:
    # libfranka's Cartesian examples run with no reflex and end where they should
    assert out["pose_error"] is None and out["pose_mode"] == IDLE
    start, end_d = (np.array(out[name]).reshape(4, 4, order="F") for name in ("pose_start", "pose_end_d"))
    assert np.allclose(end_d, start, atol=1e-5)  # the arc returns to its start
    assert np.allclose(np.array(out["pose_end"]).reshape(4, 4, order="F")[:3, 3], start[:3, 3], atol=1e-3)
    assert out["velocity_error"] is None and out["velocity_mode"] == IDLE
    moved = np.array(out["velocity_end_d"])[12:15] - np.array(out["velocity_start_d"])[12:15]
    assert moved == pytest.approx([0.05 * math.cos(math.pi / 4), 0.0, -0.05 * math.sin(math.pi / 4)], abs=2e-4)
    # a 10 mm jump of the pose: every Cartesian rate error, then recovery
    kind, message = out["jump_error"]
    assert kind == "ControlException" and "cartesian_motion_generator_velocity_limits_violation" in message
    assert out["jump_mode"] == REFLEX and set(out["jump_last"]) == JUMP and out["jump_recovered"] == IDLE
    assert out["start_error"][0] == "ControlException"
    assert out["start_last"] == ["cartesian_position_motion_generator_start_pose_invalid"]
    assert out["velocity_jump_error"][0] == "ControlException"
    assert out["velocity_jump_last"] == ["cartesian_motion_generator_acceleration_discontinuity",
                                         "cartesian_motion_generator_velocity_discontinuity"]
    assert out["velocity_jump_recovered"] == IDLE


def test_pylibfranka_runs_cartesian_pose_and_velocity_control_on_the_simulator(simulator):
    pytest.importorskip("pylibfranka", reason="pip install pylibfranka (a Linux wheel)")
    _check_client(_run_client(simulator.host, "pylibfranka"))
    stats = simulator.stats()
    assert stats["robot_reflexes"] == 3  # the jump, the start pose, the velocity jump: nothing else


def test_the_stubs_run_the_same_cartesian_client():
    _check_client(_run_client("stubs", "stubs"))


if __name__ == "__main__":
    client_main(sys.argv[1], sys.argv[2])
