"""Torque-control figures, printed (never asserted), as ratios in one run:

1. the impedance step's cost in Franka's 1 kHz control process (from the state in hand to the
   checked torque: the robot's model terms, the law, the torque guard), its CPU time p50 and p99
   for a joint impedance and for a Cartesian impedance whose equilibrium is streamed at 100 Hz
   (goal p99 <= 100 us), against the position step's in the same run (a servo stream);
2. the robot's control_command_success_rate (commands per Move cycle, counted by the FCI
   simulator) over a joint impedance held for a few seconds through robohal, against a raw
   pylibfranka torque loop running the same law (springs, dampers, Coriolis from the Model,
   the same rate saturation) on the same simulator (the peer; goal ratio >= 0.99).

    python benchmarks/torque.py [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time

STIFFNESS = [600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0]  # Nm/rad: libfranka's joint impedance example's
DAMPING = [50.0, 50.0, 50.0, 50.0, 30.0, 25.0, 15.0]  # Nm s/rad: the same example's

PEER = """
import json, sys, numpy as np, pylibfranka as lib
stiffness, damping = np.array(json.loads(sys.argv[3])), np.array(json.loads(sys.argv[4]))
robot = lib.Robot(sys.argv[1], lib.RealtimeConfig.kIgnore)
model = robot.load_model()
cycles = int(float(sys.argv[2]) * 1000)
control = robot.start_torque_control()
state, _ = control.readOnce()
rest, last, late = np.array(state.q), np.zeros(7), 0
for i in range(cycles):
    tau = stiffness * (rest - np.array(state.q)) - damping * np.array(state.dq) + np.array(model.coriolis(state))
    tau = last + np.clip(tau - last, -0.95, 0.95)  # the rate saturation robohal's laws use
    last = tau
    command = lib.Torques(tau.tolist())
    command.motion_finished = i == cycles - 1
    control.writeOnce(command)
    if i < cycles - 1:
        state, duration = control.readOnce()
        late += duration.to_sec() > 0.0015
print(json.dumps({"late": late}))
"""


def counts(simulator) -> dict:
    return simulator.stats(timeout=10.0)


def success(after: dict, before: dict) -> dict:
    move = after["robot_move_ticks"] - before["robot_move_ticks"]
    missed = after["robot_missed"] - before["robot_missed"]
    return {"move_cycles": move, "missed_cycles": missed, "success_rate": 1 - missed / max(move, 1),
            "reflexes": after["robot_reflexes"] - before["robot_reflexes"]}


def step_costs(robot, seconds: float) -> dict:
    """The control process's step cost: a servo stream (position), a joint impedance held, a
    Cartesian impedance whose equilibrium is streamed, ``seconds`` each."""
    from robohal.motion.reactions import ELAPSED
    from robohal.motion.torque import CartesianImpedance, JointImpedance

    costs = {}
    start = robot.commanded
    pose0 = robot.model.forward(start)

    def stream(steer) -> None:
        began, k = time.monotonic(), 0
        while time.monotonic() - began < seconds:  # 100 Hz
            steer(0.02 * math.sin(2 * math.pi * k * 0.01 / 2))
            k += 1
            time.sleep(max(0.0, began + k * 0.01 - time.monotonic()))  # pacing a stream

    def pose_at(offset: float):
        pose = pose0.copy()
        pose[1, 3] += offset
        return pose

    robot.backend.step_timing()
    stream(lambda offset: robot.servo(start + offset))
    robot.wait(timeout=10.0)
    costs["position (servo stream)"] = robot.backend.step_timing()
    robot.move_joints(start, speed=0.3)
    robot.backend.step_timing()
    robot.run(JointImpedance(STIFFNESS, DAMPING), until=ELAPSED > seconds)
    costs["joint impedance"] = robot.backend.step_timing()
    handle = robot.run(CartesianImpedance(), wait=False)
    robot.backend.step_timing()
    stream(lambda offset: robot.servo_pose(pose_at(offset)))
    costs["Cartesian impedance (streamed)"] = robot.backend.step_timing()
    robot.stop()
    handle.wait(10.0)
    robot.move_joints(start, speed=0.3)
    return costs


def success_rates(simulator, robot, seconds: float) -> dict:
    from robohal.motion.reactions import ELAPSED
    from robohal.motion.torque import JointImpedance

    before = counts(simulator)
    robot.run(JointImpedance(STIFFNESS, DAMPING), until=ELAPSED > seconds)
    ours = success(counts(simulator), before)
    robot.close()  # one FCI client at a time: the peer's turn
    before = counts(simulator)
    back = subprocess.run([sys.executable, "-c", PEER, simulator.uri.host, str(seconds), json.dumps(STIFFNESS),
                           json.dumps(DAMPING)], capture_output=True, text=True, timeout=seconds * 5 + 60)
    peer = success(counts(simulator), before)
    peer["error"] = None if back.returncode == 0 else back.stderr[-300:]
    return {"ours": ours, "peer": peer}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    try:
        import pylibfranka  # noqa: F401
    except ImportError:
        print("pylibfranka is not installed (pip install pylibfranka): the torque figures are skipped")
        return 0
    import robohal
    from robohal.kinematics.kernels import COMPILED
    from robohal.uri import parse_uri
    from robohal_franka.simulation import start_simulator

    simulator = start_simulator(parse_uri("franka://sim?model=franka.fr3"))
    try:
        robot = robohal.connect(simulator.uri.with_params(gripper="0"))
        try:
            costs = step_costs(robot, args.seconds)
            rates = success_rates(simulator, robot, args.seconds)
        finally:
            robot.close()
    finally:
        simulator.stop()
    position = costs["position (servo stream)"]
    kernels = "compiled" if COMPILED else "interpreted"
    for name, cost in costs.items():
        if "p50_us" not in cost:
            print(f"{name}: no steps timed")
            continue
        print(f"{name} step in Franka's 1 kHz control process, its CPU time: p50 {cost['p50_us']:.0f} us,"
              f" p99 {cost['p99_us']:.0f} us (goal p99 <= 100 us); / position step: p50"
              f" {cost['p50_us'] / position['p50_us']:.2f}, p99 {cost['p99_us'] / position['p99_us']:.2f}"
              f" (kernels {kernels})")
    ours, peer = rates["ours"], rates["peer"]
    print(f"{args.seconds:.0f} s of joint impedance, ours: {json.dumps(ours)}")
    print(f"raw pylibfranka torque loop (peer): {json.dumps(peer)}")
    print(f"control_command_success_rate ours / peer: {ours['success_rate'] / max(peer['success_rate'], 1e-9):.3f}"
          " (goal >= 0.99)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
