"""Franka speed figures, printed (never asserted):

1. one differential-IK cycle (IkOptions defaults, franka.fr3) against a plain numpy
   damped-least-squares step with no joint box (the peer): p50/p99 compute time;
2. 10 s of 1 kHz Cartesian tracking (a double circle through CartesianPath, the IK
   inside the control process) through the real pylibfranka against our FCI
   simulator, against the peer: a raw pylibfranka loop replaying the same joint
   setpoints precomputed offline (no robohal in the loop). Reported: cycles the
   robot saw without a command, the robot's control_command_success_rate (commands
   per Move cycle), late client cycles, reflexes; ratios ours / peer;
3. simulator start time (process start to its READY line) and the state period
   jitter its clients see.

    python benchmarks/franka.py [--seconds 10]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time

import numpy as np


def ik_cycle_times(n: int = 3000) -> dict[str, float]:
    import robohal
    from robohal.kinematics import diffik
    from robohal.kinematics.diffik import DifferentialIk
    from robohal_franka.facts import READY_Q

    model = robohal.get_model("franka.fr3")
    start = np.array(READY_Q)
    ik = DifferentialIk(model)
    ik.reset(start)
    pose0 = model.forward(start)
    ours, peer = [], []
    q = start.copy()
    for k in range(n):
        target = pose0.copy()
        target[1, 3] += 0.05 * math.sin(2 * math.pi * k / 2000)
        t0 = time.perf_counter()
        ik.step(target)
        ours.append(time.perf_counter() - t0)
        # the peer: one plain DLS step, analytic Jacobian, no box, no nullspace
        t0 = time.perf_counter()
        pose = model.forward(q)
        jac = model.jacobian(q)
        error = np.concatenate([target[:3, 3] - pose[:3, 3], 0.1 * np.zeros(3)])
        q = q + jac.T @ np.linalg.solve(jac @ jac.T + 0.05**2 * np.eye(6), error)
        peer.append(time.perf_counter() - t0)
    us = lambda values, p: float(np.percentile(np.array(values) * 1e6, p))  # noqa: E731
    return {"ours_p50_us": us(ours, 50), "ours_p99_us": us(ours, 99), "peer_p50_us": us(peer, 50),
            "peer_p99_us": us(peer, 99), "compiled": diffik.COMPILED}


def circle_path(model, start_q: np.ndarray, seconds: float):
    """Poses every 10 ms on two 5 cm circles in the y-z plane, at rest at both ends."""
    from robohal.motion.cartesian import CartesianPath

    pose0 = model.forward(start_q)
    times = np.arange(1, int(seconds * 100) + 1) * 0.01
    u = times / seconds
    theta = 4 * math.pi * (u - np.sin(2 * math.pi * u) / (2 * math.pi))
    poses = np.repeat(pose0[None], len(times), axis=0)
    poses[:, 1, 3] += 0.05 * np.sin(theta)
    poses[:, 2, 3] += 0.05 * (np.cos(theta) - 1)
    return CartesianPath(poses, times)


def stats(simulator) -> dict:
    return simulator.stats(timeout=10.0)


def delta(after: dict, before: dict) -> dict:
    move = after["robot_move_ticks"] - before["robot_move_ticks"]
    missed = after["robot_missed"] - before["robot_missed"]
    return {"move_cycles": move, "missed_cycles": missed, "success_rate": 1 - missed / max(move, 1),
            "reflexes": after["robot_reflexes"] - before["robot_reflexes"]}


PEER = """
import json, sys, pylibfranka as lib
setpoints = json.load(open(sys.argv[2]))
robot = lib.Robot(sys.argv[1], lib.RealtimeConfig.kIgnore)
control = robot.start_joint_position_control(lib.ControllerMode.JointImpedance)
state, _ = control.readOnce()
late = 0
out = {}
try:
    for i, q in enumerate(setpoints):
        control.writeOnce(lib.JointPositions(q))
        if i < len(setpoints) - 1:
            state, duration = control.readOnce()
            late += duration.to_sec() > 0.0015
except Exception as exc:
    out["error"] = str(exc)
del control  # StopMove: the replay's last setpoints need not end exactly at rest
out["late"] = late
print(json.dumps(out))
"""


def tracking(seconds: float) -> dict:
    import tempfile

    import robohal
    from robohal.cartesian import CartesianBackend
    from robohal.uri import parse_uri
    from robohal_franka.simulation import start_simulator

    out: dict = {}
    simulator = start_simulator(parse_uri("franka://sim?model=franka.fr3"))
    try:
        robot = robohal.connect(simulator.uri)
        try:
            arm = CartesianBackend(robot.backend)
            start_q = robot.backend.commanded
            path = circle_path(robot.model, start_q, seconds)
            before = stats(simulator)
            figures0 = robot.backend.figures
            try:
                result = arm.run(path)
                out["ours_error"] = None
            except Exception as exc:  # a reflex is a figure here, not a crash
                result, out["ours_error"] = None, str(exc)
            after = stats(simulator)
            figures = robot.backend.figures
            out["ours"] = {**delta(after, before), "late_client_cycles": figures["late_cycles"] - figures0["late_cycles"]}
            if result is not None:
                out["ours"].update(max_path_error_mm=result.info["max_position_error"] * 1e3,
                                   end_error_um=result.info["final_position_error"] * 1e6)
                setpoints = result.commanded
            else:
                robot.recover()
            robot.move_joints(start_q, speed=0.3)  # back to the start for the peer
        finally:
            robot.close()
        out["simulator_state_period"] = {k: after[k] for k in ("period_p50_us", "period_p99_us", "period_max_us")}
        if result is None:
            return out
        # the peer replays the same setpoints from the same start, raw
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(setpoints.tolist(), handle)
        before = stats(simulator)
        back = subprocess.run([sys.executable, "-c", PEER, simulator.uri.host, handle.name], capture_output=True,
                              text=True, timeout=seconds * 5 + 30)
        peer = json.loads(back.stdout.strip().splitlines()[-1]) if back.returncode == 0 else {"error": back.stderr[-300:]}
        after = stats(simulator)
        out["peer"] = {**delta(after, before), "late_client_cycles": peer.get("late"), "error": peer.get("error")}
    finally:
        simulator.stop()
    return out


def simulator_starts(n: int = 5) -> dict:
    from robohal.uri import parse_uri
    from robohal_franka.simulation import start_simulator

    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        simulator = start_simulator(parse_uri("franka://sim?model=franka.fr3"))
        times.append(time.perf_counter() - t0)
        simulator.stop()
    return {"start_median_ms": float(np.median(times) * 1e3), "start_max_ms": float(np.max(times) * 1e3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    try:
        import pylibfranka  # noqa: F401
    except ImportError:
        print("pylibfranka is not installed (pip install pylibfranka): tracking figures skipped")
        have_pylibfranka = False
    else:
        have_pylibfranka = True
    ik = ik_cycle_times()
    kernel = "compiled kernel" if ik["compiled"] else "pure Python: no C compiler at install"
    print(f"IK cycle ({kernel}): ours p50 {ik['ours_p50_us']:.0f} us, p99 {ik['ours_p99_us']:.0f} us (target p99 <= 200 us);"
          f" plain DLS step p50 {ik['peer_p50_us']:.0f} us, p99 {ik['peer_p99_us']:.0f} us;"
          f" ratio p50 {ik['ours_p50_us'] / ik['peer_p50_us']:.2f}, p99 {ik['ours_p99_us'] / ik['peer_p99_us']:.2f}")
    starts = simulator_starts()
    print(f"simulator start: median {starts['start_median_ms']:.0f} ms, max {starts['start_max_ms']:.0f} ms")
    if have_pylibfranka:
        figures = tracking(args.seconds)
        ours, period = figures["ours"], figures["simulator_state_period"]
        print(f"{args.seconds:.0f} s Cartesian tracking, ours: {json.dumps(ours)}"
              + (f" error: {figures['ours_error']}" if figures.get("ours_error") else ""))
        if "peer" in figures:
            peer = figures["peer"]
            print(f"raw pylibfranka replay (peer): {json.dumps(peer)}")
            print(f"ratios ours/peer: success rate {ours['success_rate'] / max(peer['success_rate'], 1e-9):.3f},"
                  f" missed cycles {ours['missed_cycles']} / {peer['missed_cycles']}")
        print(f"state period seen by the simulator's clock: p50 {period['period_p50_us']:.0f} us,"
              f" p99 {period['period_p99_us']:.0f} us, max {period['period_max_us']:.0f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
