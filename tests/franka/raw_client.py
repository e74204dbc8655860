"""Scenarios of raw pylibfranka (or stub) calls against an FCI simulator, run in
their own process by the tests; prints one JSON line with what happened.

    python raw_client.py SCENARIO HOST [impl]
"""

from __future__ import annotations

import importlib
import json
import math
import sys
import time


def names(errors) -> list[str]:
    return [n for n in dir(type(errors)) if not n.startswith("_") and getattr(errors, n) is True] if errors else []


def bump(lib, robot, joint: int, amplitude: float, duration: float, jump_at: int | None = None, jump: float = 0.0):
    """A smooth bump on one joint; optionally a jump at cycle ``jump_at``. Returns the exception text or None."""
    control = robot.start_joint_position_control(lib.ControllerMode.JointImpedance)
    state, period = control.readOnce()
    q0 = list(state.q_d)  # where the robot holds the arm (the measured q sits off it), as libfranka's examples
    cycles = round(duration / 0.001)
    k = 0  # the robot's clock in cycles: as libfranka's examples, the motion follows its time
    try:
        while k < cycles:
            k = min(cycles, k + max(1, round(period.to_sec() / 0.001)))
            t = k * 0.001
            q = list(q0)
            q[joint] += amplitude * math.sin(math.pi * t / duration) ** 4  # at rest at both ends
            if jump_at is not None and k > jump_at:
                q[joint] += jump
            command = lib.JointPositions(q)
            command.motion_finished = k == cycles
            control.writeOnce(command)
            if k < cycles:
                state, period = control.readOnce()
    except Exception as exc:
        del control
        return type(exc).__name__, str(exc)
    del control
    return None


def main() -> None:
    scenario, host = sys.argv[1], sys.argv[2]
    impl = sys.argv[3] if len(sys.argv) > 3 else "pylibfranka"
    lib = importlib.import_module("pylibfranka" if impl == "pylibfranka" else "robohal_franka.stubs")
    out: dict = {}
    started = time.perf_counter()
    robot = lib.Robot(host, lib.RealtimeConfig.kIgnore)
    out["connect_s"] = time.perf_counter() - started
    state = robot.read_once()
    out.update(q=list(state.q), q_d=list(state.q_d), dq=list(state.dq), O_T_EE=list(state.O_T_EE),
               O_T_EE_d=list(state.O_T_EE_d), gravity_vector=list(state.O_ddP_O),
               mode=int(state.robot_mode), time=state.time.to_sec())
    if scenario == "read":
        if impl == "pylibfranka":
            model = robot.load_model()
            out["model_gravity"] = list(model.gravity(state))
    elif scenario == "smooth":
        out["error"] = bump(lib, robot, 3, 0.2, 1.0)
        state = robot.read_once()
        out.update(after_q=list(state.q), after_q_d=list(state.q_d), after_mode=int(state.robot_mode),
                   success_rate=state.control_command_success_rate)
    elif scenario == "jump":
        out["error"] = bump(lib, robot, 0, 0.1, 1.0, jump_at=300, jump=0.02)
        state = robot.read_once()
        out.update(after_mode=int(state.robot_mode), current=names(state.current_errors),
                   last=names(state.last_motion_errors))
        try:
            bump(lib, robot, 0, 0.05, 0.2)
            out["move_in_reflex"] = None
        except Exception as exc:
            out["move_in_reflex"] = type(exc).__name__
        robot.automatic_error_recovery()
        for _ in range(100):  # states queued before the recovery come first
            state = robot.read_once()
            if int(state.robot_mode) != 4:
                break
        out.update(recovered_mode=int(state.robot_mode), recovered_errors=names(state.current_errors))
        out["after_recovery"] = bump(lib, robot, 0, 0.05, 0.8)
    elif scenario == "velocity":
        control = robot.start_joint_velocity_control(lib.ControllerMode.JointImpedance)
        state, period = control.readOnce()
        q0 = list(state.q_d)
        k = 0  # the robot's clock, as in bump()
        while k < 1000:
            k = min(1000, k + max(1, round(period.to_sec() / 0.001)))
            t = k * 0.001
            command = lib.JointVelocities([0.2 * (1 - math.cos(2 * math.pi * t)) / 2, 0, 0, 0, 0, 0, 0])
            command.motion_finished = k == 1000
            control.writeOnce(command)
            if k < 1000:
                state, period = control.readOnce()
        del control
        robot_q = list(robot.read_once().q_d)
        out.update(start_q_d=q0, end_q_d=robot_q)  # desired: the measured q carries noise
    elif scenario == "torque":
        control = robot.start_torque_control()
        state, _ = control.readOnce()
        q0 = list(state.q)
        for i in range(500):  # one period of 2 Nm on joint 1: past its static friction (1.137 Nm), from 0
            command = lib.Torques([2.0 * math.sin(2 * math.pi * i / 500), 0, 0, 0, 0, 0, 0])
            command.motion_finished = i == 499
            control.writeOnce(command)
            if i < 499:
                state, _ = control.readOnce()
        del control
        out.update(start_q=q0, end_q=list(robot.read_once().q))
        try:
            control = robot.start_torque_control()
            control.readOnce()
            control.writeOnce(lib.Torques([50.0, 0, 0, 0, 0, 0, 0]))
            control.readOnce()
            control.readOnce()
            out["torque_jump"] = None
        except Exception as exc:
            out["torque_jump"] = [type(exc).__name__, str(exc)]
    elif scenario == "model":  # [impl] [LOAD_JSON: mass, center (3), inertia (9, column-major)]
        if len(sys.argv) > 4:
            mass, center, inertia = json.loads(sys.argv[4])
            robot.set_load(mass, center, inertia)
        state = robot.read_once()
        model = robot.load_model()
        out.update(rest_q=list(state.q), rest_tau_J=list(state.tau_J), rest_tau_J_d=list(state.tau_J_d),
                   m_total=state.m_total, gravity=list(model.gravity(state)), mass=list(model.mass(state)))
        # Torque control: 100 cycles of zero torque (the robot holds the arm against gravity), then one
        # period of a 0.6 s sine past the joints' static friction; the Model's terms on the way.
        amplitude = [4.0, 4.0, 0.0, 4.0, 0.0, 1.5, 0.0]
        control = robot.start_torque_control()
        state, _ = control.readOnce()
        samples = []
        for i in range(700):
            if i == 100:
                out["held_q"] = list(state.q)
            s = math.sin(2 * math.pi * max(i - 100, 0) / 600)
            command = lib.Torques([a * s for a in amplitude])
            command.motion_finished = i == 699
            control.writeOnce(command)
            if i < 699:
                state, _ = control.readOnce()
                if i in (250, 400, 550):
                    samples.append({"q": list(state.q), "dq": list(state.dq), "tau_J": list(state.tau_J),
                                    "tau_J_d": list(state.tau_J_d), "coriolis": list(model.coriolis(state)),
                                    "gravity": list(model.gravity(state)), "mass": list(model.mass(state))})
        del control
        out["samples"] = samples
    elif scenario == "stop":
        control = robot.start_joint_position_control(lib.ControllerMode.JointImpedance)
        state, _ = control.readOnce()
        control.writeOnce(lib.JointPositions(list(state.q_d)))
        robot.stop()
        del control
        out["after_stop_mode"] = int(robot.read_once().robot_mode)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
