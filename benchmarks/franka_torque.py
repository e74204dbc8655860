"""Franka in torque control, figures printed (never asserted):

1. one cycle of the simulated arm's dynamics (robohal_franka.dynamics.ArmDynamics.step: CRBA, M^-1
   and the nonlinear terms from pinocchio, friction with stiction) at rest, moving, partly stuck
   and pressed on the plane, p50/p99 compute time, against the peer: one MuJoCo step of
   franky-sim's FR3 (its own scene, hand and ground included), called from Python as franky-sim
   calls it; ratios ours / peer, and the share of the 1 ms cycle;
2. the free-space trajectory of libfranka's joint impedance example (tests/franka/impedance_loop.py,
   the real pylibfranka) on robohal's simulator and on franky-sim: the largest joint difference,
   and its ratio to the move.

    python benchmarks/franka_torque.py [--cycles 5000]

Part 1's peer and part 2 need franky-sim's venv (make franky-sim); without it they say so.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
FRANKA_TESTS = REPO / "tests" / "franka"

MUJOCO_PEER = """
import json, sys, time
import mujoco, numpy as np
from franky_sim.mujoco_simulator import MujocoSimulator
sim = MujocoSimulator()
sim.init()
sim.add_robot(initial_q=(0.0, -0.785398, 0.0, -2.356194, 0.0, 1.570796, 0.785398))
sim.start()
model, data = sim.model, sim.data
times = []
for _ in range(int(sys.argv[1])):
    t0 = time.perf_counter()
    mujoco.mj_step(model, data)
    times.append(time.perf_counter() - t0)
us = np.array(times) * 1e6
print(json.dumps({"p50_us": float(np.percentile(us, 50)), "p99_us": float(np.percentile(us, 99))}))
"""


def third_party():
    spec = importlib.util.spec_from_file_location("franka_third_party", FRANKA_TESTS / "third_party.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def percentiles(times: list[float]) -> dict[str, float]:
    us = np.array(times) * 1e6
    return {"p50_us": float(np.percentile(us, 50)), "p99_us": float(np.percentile(us, 99))}


def step_times(cycles: int) -> dict[str, dict[str, float]]:
    """ArmDynamics.step in four situations, each timed on its own state (the state is not advanced,
    so every call does the same work)."""
    from robohal_franka.dynamics import ArmDynamics
    from robohal_franka.facts import READY_Q
    from robohal_franka.simulated_robot import Contact

    dynamics = ArmDynamics("franka.fr3")
    q = np.array(READY_Q)
    hold = dynamics.gravity(q)
    pose, jacobian = dynamics.flange(q)
    plane = Contact(float(pose[2, 3]) + 0.001, 30000.0)  # 1 mm into it: about 30 N
    cases = {
        "at rest": (np.zeros(7), hold, None),
        "moving": (np.full(7, 0.3), hold + 2.0, None),
        "partly stuck": (np.r_[0.3, np.zeros(6)], hold + np.r_[3.0, np.zeros(6)], None),
        "pressed on the plane": (np.zeros(7), hold + jacobian.T @ [0, 0, -30.0, 0, 0, 0], plane.on_arm),
    }
    figures = {}
    for name, (dq, tau, external) in cases.items():
        dynamics.step(q, dq, tau, 0.001, external)  # warm: the friction search starts from the last
        times = []
        for _ in range(cycles):
            t0 = time.perf_counter()
            dynamics.step(q, dq, tau, 0.001, external)
            times.append(time.perf_counter() - t0)
        figures[name] = percentiles(times)
    return figures


def mujoco_step(cycles: int, module) -> dict[str, float] | str:
    reason = module.missing_reason("franky_sim")
    if reason:
        return reason
    done = subprocess.run([str(module.venv_python()), "-c", MUJOCO_PEER, str(cycles)], capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0:
        return f"the MuJoCo peer failed: {done.stderr.strip().splitlines()[-1:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def free_space_difference(module) -> dict | str:
    """The free scenario of tests/franka/test_torque_against_franky_sim.py, on both simulators."""
    reason = module.missing_reason("franky_sim")
    if reason:
        return reason
    from robohal.sim.process import SimulatorProcess, free_loopback_host, python_module

    sys.path.insert(0, str(FRANKA_TESTS))
    from test_torque_against_franky_sim import FRANKY_HAND, GOAL, START, run_loop

    host = free_loopback_host(1337)
    ours = SimulatorProcess(python_module("robohal_franka.simulator", "--address", host, "--ideal", "1"))
    try:
        a = run_loop("free", host, {"start": START, "goal": GOAL, "load": FRANKY_HAND})
    finally:
        ours.stop()
    for _ in range(20):
        host = free_loopback_host(1337)
        if module.ports_free(host):
            break
    server = module.FrankySim(host)
    try:
        b = run_loop("free", host, {"start": START, "goal": GOAL})
    finally:
        server.stop()
        server.remove_log()
    if a["error"] or b["error"]:
        return f"a run failed: ours {a['error']}, franky-sim {b['error']}"
    ours_q, theirs_q = np.array(a["samples"])[:, 1:8], np.array(b["samples"])[:, 1:8]
    difference = np.abs(ours_q - theirs_q)
    move = np.abs(np.array(GOAL) - np.array(START)).max()
    return {"max_mrad": float(difference.max() * 1e3), "end_mrad": float(difference[-1].max() * 1e3),
            "move_rad": float(move), "samples": len(ours_q)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=5000)
    args = parser.parse_args()
    module = third_party()
    ours = step_times(args.cycles)
    peer = mujoco_step(args.cycles, module)
    print("dynamics cycle (ArmDynamics.step, franka.fr3), p50 / p99 us:")
    for name, figures in ours.items():
        line = f"  {name}: {figures['p50_us']:.1f} / {figures['p99_us']:.1f}"
        line += f" ({figures['p50_us'] / 1000:.1%} of the 1 ms cycle at p50)"
        if isinstance(peer, dict):
            line += f", ratio ours/MuJoCo p50 {figures['p50_us'] / peer['p50_us']:.2f}"
        print(line)
    print(f"  peer, one mj_step of franky-sim's FR3: {peer['p50_us']:.1f} / {peer['p99_us']:.1f}"
          if isinstance(peer, dict) else f"  peer: {peer}")
    difference = free_space_difference(module)
    if isinstance(difference, dict):
        print(f"free-space joint impedance (libfranka's example) against franky-sim: largest joint difference "
              f"{difference['max_mrad']:.2f} mrad ({difference['end_mrad']:.2f} at the end) over "
              f"{difference['samples']} samples, ratio to the {difference['move_rad']:.2f} rad move "
              f"{difference['max_mrad'] / 1e3 / difference['move_rad']:.4f}")
    else:
        print(f"free-space difference against franky-sim: {difference}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
