"""libfranka's eight Python examples (pylibfranka/examples in libfranka's repository, for pylibfranka
0.21), driven as each one drives the robot: the same pylibfranka calls, start values, motions and
timing, with the console and argument handling left out. Run in a process of its own against an
FCI simulator; prints one JSON line of what happened.

    python libfranka_examples.py EXAMPLE HOST
"""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np
import pylibfranka as franka

# The collision thresholds most examples set (Nm per joint, then N/Nm per Cartesian axis).
EXAMPLE_TORQUES = [20.0, 20.0, 18.0, 18.0, 16.0, 14.0, 12.0]
EXAMPLE_FORCES = [20.0, 20.0, 20.0, 25.0, 25.0, 25.0]
READY = [0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2, math.pi / 4]


def default_collision_behaviour(robot) -> None:
    robot.set_collision_behavior(EXAMPLE_TORQUES, EXAMPLE_TORQUES, EXAMPLE_FORCES, EXAMPLE_FORCES)


def common_behaviour(robot) -> None:
    """example_common.setDefaultBehaviour: its thresholds and impedances."""
    robot.set_collision_behavior([20.0] * 7, [40.0] * 7, [10.0] * 6, [20.0] * 6)
    robot.set_joint_impedance([3000.0, 3000.0, 3000.0, 2500.0, 2500.0, 2000.0, 2000.0])
    robot.set_cartesian_impedance([3000.0, 3000.0, 3000.0, 300.0, 300.0, 300.0])


def print_robot_state(robot, out: dict) -> None:
    default_collision_behaviour(robot)
    state = robot.read_once()
    out.update(mode=str(state.robot_mode), q=list(state.q), position=[state.O_T_EE[12], state.O_T_EE[13], state.O_T_EE[14]],
               tau_J=list(state.tau_J), success_rate=state.control_command_success_rate)


def joint_position(robot, out: dict) -> None:
    """A 5 s swing of joints 4, 5 and 7 from where the robot holds the arm, and back."""
    default_collision_behaviour(robot)
    control = robot.start_joint_position_control(franka.ControllerMode.CartesianImpedance)
    start, elapsed, finished = [0.0] * 7, 0.0, False
    while not finished:
        state, period = control.readOnce()
        elapsed += period.to_sec()
        if elapsed <= period.to_sec():  # the first cycle: q_d where the state has it (it does)
            start = state.q_d
        angle = math.pi / 8.0 * (1 - math.cos(math.pi / 2.5 * elapsed))
        command = list(start)
        for joint in (3, 4, 6):
            command[joint] += angle
        positions = franka.JointPositions(command)
        finished = elapsed >= 5.0
        positions.motion_finished = finished
        control.writeOnce(positions)
    out["start"] = list(start)


def joint_velocity(robot, out: dict) -> None:
    """Joints 4-7 out and back at up to 1 rad/s, 2 s."""
    default_collision_behaviour(robot)
    control = robot.start_joint_velocity_control(franka.ControllerMode.CartesianImpedance)
    period_max, omega_max, elapsed, finished = 1.0, 1.0, 0.0, False
    while not finished:
        _, period = control.readOnce()
        elapsed += period.to_sec()
        direction = np.floor(np.power(-1.0, (elapsed - np.fmod(elapsed, period_max)) / period_max))
        omega = direction * omega_max / 2.0 * (1.0 - np.cos(2.0 * np.pi / period_max * elapsed))
        velocities = franka.JointVelocities([0.0, 0.0, 0.0, omega, omega, omega, omega])
        finished = elapsed >= 2.0 * period_max
        velocities.motion_finished = finished
        control.writeOnce(velocities)


def minimum_jerk(s: float) -> float:
    return 10 * s**3 - 15 * s**4 + 6 * s**5


def joint_impedance(robot, out: dict) -> None:
    """A spring-damper in joint space through five configurations, 3 s each and 0.5 s of rest, from
    the measured q, with Coriolis from the robot's model, over the torque interface."""
    targets = [[0.0, -0.3, 0.0, -1.8, 0.0, 1.5, 0.0], [0.0, 0.0, 0.0, -1.57, 0.0, 1.57, 0.0],
               [0.5, -0.3, 0.0, -1.8, 0.0, 1.5, 0.0], [-0.5, -0.3, 0.0, -1.8, 0.0, 1.5, 0.0],
               [0.0, -0.3, 0.0, -1.8, 0.0, 1.5, 0.0]]
    stiffness = np.full(7, 50.0)
    damping = 2.0 * np.sqrt(stiffness)
    robot.set_collision_behavior([100.0] * 7, [100.0] * 7, [100.0] * 6, [100.0] * 6)
    position = np.array(robot.read_once().q)
    control = robot.start_torque_control()
    model = robot.load_model()
    errors = []
    for target in targets:
        began, goal = time.time(), np.array(target)
        while True:
            state, _ = control.readOnce()
            fraction = min((time.time() - began) / 3.0, 1.0)
            wanted = position + minimum_jerk(fraction) * (goal - position)
            q, dq = np.array(state.q), np.array(state.dq)
            torques = -stiffness * (q - wanted) - damping * dq + np.array(model.coriolis(state))
            command = franka.Torques(torques.tolist())
            command.motion_finished = False
            control.writeOnce(command)
            if time.time() - began >= 3.5:
                errors.append(float(np.abs(q - goal).max()))
                position = wanted
                break
    out["errors_at_targets"] = errors


def move_gripper(robot, out: dict, host: str) -> None:
    """Homing, a 5 mm grasp at 0.1 m/s with 60 N, then the state (the example's waits shortened)."""
    gripper = franka.Gripper(host)
    gripper.homing()
    out["grasped"] = bool(gripper.grasp(0.005, 0.1, 60))
    out["is_grasped"] = bool(gripper.read_once().is_grasped)
    gripper.stop()


def async_position_control(robot, out: dict) -> None:
    """Targets 0.25 rad either side of the ready pose, switched every second, written at 50 Hz for
    10 s through libfranka's asynchronous position control, then stopped."""
    common_behaviour(robot)
    configuration = franka.AsyncPositionControlHandler.Configuration(
        maximum_joint_velocities=[0.655, 0.655, 0.655, 0.655, 1.315, 1.315, 1.315], goal_tolerance=10.0)
    configured = franka.AsyncPositionControlHandler.configure(robot, configuration)
    if configured.error_message is not None:
        raise RuntimeError(configured.error_message)
    handler = configured.handler
    elapsed, direction, since_switch, step = 0.0, 1.0, 0.0, 0.020
    statuses: list[str] = []
    while True:
        began = time.monotonic()
        feedback = handler.get_target_feedback()
        if feedback.error_message is not None:
            raise RuntimeError(feedback.error_message)
        statuses.append(str(feedback.status).rsplit(".", 1)[-1])
        elapsed += step
        target = [q + direction * 0.25 for q in READY]
        since_switch += step
        if since_switch >= 1.0:
            direction, since_switch = -direction, 0.0
        result = handler.set_joint_position_target(
            franka.AsyncPositionControlHandler.JointPositionTarget(joint_positions=target))
        if result.error_message is not None:
            raise RuntimeError(result.error_message)
        if elapsed > 10.0:
            handler.stop_control()
            break
        time.sleep(max(0.0, step - (time.monotonic() - began)))
    out["statuses"] = sorted(set(statuses))
    state = robot.read_once()
    out["q_d_after"] = list(state.q_d)


def cartesian_pose(robot, out: dict) -> None:
    """A 0.3 m-radius arc in x-z over 5 s from the *measured* flange pose, as the example starts."""
    default_collision_behaviour(robot)
    control = robot.start_cartesian_pose_control(franka.ControllerMode.JointImpedance)
    elapsed, finished = 0.0, False
    state, period = control.readOnce()
    start = state.O_T_EE
    out["start_offset"] = float(np.abs(np.array(start) - np.array(state.O_T_EE_d)).max())
    while not finished:
        state, period = control.readOnce()
        angle = np.pi / 4 * (1 - np.cos(np.pi / 5.0 * elapsed))
        elapsed += period.to_sec()
        pose = list(start)
        pose[12] += 0.3 * np.sin(angle)
        pose[14] += 0.3 * (np.cos(angle) - 1)
        command = franka.CartesianPose(pose)
        finished = elapsed >= 5.0
        command.motion_finished = finished
        control.writeOnce(command)


class SynchronisedMove:
    """example_common.MotionGenerator's profile, in its own words: every joint from the *measured*
    q to the goal, all arriving together, each on a cubic-ramped trapezoid (2 or 2.5 rad/s, 5
    rad/s^2, times the speed factor)."""

    def __init__(self, speed: float, goal) -> None:
        self.goal = np.array(goal)
        self.v_max = np.array([2.0, 2.0, 2.0, 2.0, 2.5, 2.5, 2.5]) * speed
        self.a_max = np.full(7, 5.0) * speed
        self.time = 0.0
        self.start: np.ndarray | None = None

    def plan(self) -> None:
        delta = self.delta = self.goal - self.start
        moving = self.moving = np.abs(delta) > 1e-12
        reach = self.v_max.copy()
        short = np.abs(delta) < 1.5 * self.v_max**2 / self.a_max  # 3/4 v^2/a at both ends
        reach[short] = np.sqrt(4.0 / 3.0 * np.abs(delta[short]) * self.a_max[short] / 2.0)
        reach[~moving] = 1.0
        ramp = 1.5 * reach / self.a_max
        total = np.where(moving, ramp + np.abs(delta) / reach, 0.0)
        t_f = total.max()
        a = 1.5 * self.a_max  # the synchronised speed from the common end time
        b = -t_f * self.a_max**2
        c = np.abs(delta) * self.a_max**2
        speed = (-b - np.sqrt(np.maximum(b * b - 4.0 * a * c, 0.0))) / (2.0 * a)
        speed[~moving] = 1.0
        self.speed = speed
        self.t1 = 1.5 * speed / self.a_max
        self.tf = np.where(moving, self.t1 + np.abs(delta) / speed, 0.0)
        self.t2 = self.tf - self.t1
        self.q1 = speed * np.sign(delta) * 0.5 * self.t1

    def __call__(self, state, seconds: float):
        self.time += seconds
        if self.start is None:
            self.start = np.array(state.q)  # the measured joints, as the example
            self.plan()
        t, sign = self.time, np.sign(self.delta)
        offset = np.where(self.moving, self.delta, 0.0)
        for i in np.flatnonzero(self.moving):
            t1, t2, tf, v = self.t1[i], self.t2[i], self.tf[i], self.speed[i] * sign[i]
            if t < t1:
                offset[i] = -v / t1**3 * (0.5 * t - t1) * t**3
            elif t < t2:
                offset[i] = self.q1[i] + (t - t1) * v
            elif t < tf:
                d = tf - t2
                offset[i] = self.delta[i] + 0.5 * ((t - t1 - 2 * d - (t2 - t1)) * (t - t1 - (t2 - t1)) ** 3 / d**3
                                                  + (2 * t - 2 * t1 - d - 2 * (t2 - t1))) * v
        positions = franka.JointPositions((self.start + offset).tolist())
        positions.motion_finished = bool(t >= self.tf.max())
        return positions


def cartesian_velocity(robot, out: dict) -> None:
    """First a synchronised joint move to joint 2 at +pi/4 (from the measured q, at half speed);
    then a Cartesian velocity out and back at 45 deg in x-z, up to 0.1 m/s, 8 s."""
    robot.automatic_error_recovery()
    common_behaviour(robot)
    move = SynchronisedMove(0.5, [0.0, np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4])
    control = robot.start_joint_position_control(franka.ControllerMode.CartesianImpedance)
    while True:
        state, period = control.readOnce()
        positions = move(state, period.to_sec())
        control.writeOnce(positions)
        if positions.motion_finished:
            robot.stop()
            break
    out["moved_to"] = list(robot.read_once().q_d)
    robot.set_joint_impedance([3000.0, 3000.0, 3000.0, 2500.0, 2500.0, 2000.0, 2000.0])
    default_collision_behaviour(robot)
    control = robot.start_cartesian_velocity_control(franka.ControllerMode.CartesianImpedance)
    period_max, v_max, elapsed, finished = 4.0, 0.1, 0.0, False
    while not finished:
        _, period = control.readOnce()
        elapsed += period.to_sec()
        direction = np.floor(np.power(-1.0, (elapsed - np.fmod(elapsed, period_max)) / period_max))
        v = direction * v_max / 2.0 * (1.0 - np.cos(2.0 * np.pi / period_max * elapsed))
        velocities = franka.CartesianVelocities([np.cos(np.pi / 4) * v, 0.0, np.sin(np.pi / 4) * v, 0.0, 0.0, 0.0])
        finished = elapsed >= 2.0 * period_max
        velocities.motion_finished = finished
        control.writeOnce(velocities)


EXAMPLES = {f.__name__: f for f in (print_robot_state, joint_position, joint_velocity, joint_impedance, move_gripper,
                                     async_position_control, cartesian_pose, cartesian_velocity)}


def main() -> None:
    example, host = sys.argv[1], sys.argv[2]
    out: dict = {"error": None}
    robot = franka.Robot(host, franka.RealtimeConfig.kIgnore)  # this machine has no real-time kernel
    try:
        if example == "move_gripper":
            move_gripper(robot, out, host)
        else:
            EXAMPLES[example](robot, out)
    except Exception as exc:  # what the example would print before robot.stop()
        out["error"] = [type(exc).__name__, str(exc)]
    state = robot.read_once()
    out.update(mode=str(state.robot_mode).rsplit(".", 1)[-1],
               last_motion_errors=[n for n in dir(type(state.last_motion_errors))
                                   if not n.startswith("_") and getattr(state.last_motion_errors, n) is True])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
