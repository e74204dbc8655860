"""EGM sensor-side speed: robohal's abb-egm backend against abb-robot-client's
``EGM`` client, each driving the same simulated controller on loopback at 250 Hz.

For each peer, the simulated controller (its own process) measures the round
trip (robot message sent -> the kernel's receive stamp on the sensor's reply:
the sensor's time alone) and the rate it held; it reads the replies at its next
cycle, so a reply never wakes it onto the sensor's core;
the peer (its own process) measures the age of every state its control loop
acts on (now - the robot's feedback time): a receiver that falls behind shows a
growing age. Each is run on the machine as it is, next to a busy second
process, and with the controller and the sensor pinned to different cores (a
real controller is a separate machine). Figures are printed as ratios
(ours / peer); nothing is asserted. Ours runs with the default reply=ahead (each
setpoint answers the next robot message, encoded before it arrives), so its loop gets
the state after the answer went out: its state age includes the answer's sendto (on
loopback the controller's receive runs inside that call), which the peer's, taken
before it sends, does not. A line below each table gives reply=fresh (each robot
message answered by the command computed from its own state).

    python benchmarks/egm.py [--seconds 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

MODEL = os.environ.get("ROBOHAL_EGM_BENCH_MODEL", "abb.irb1410")


def _percentiles(values: list[float]) -> dict[str, float]:
    array = np.array(values) * 1000.0
    return {"p50_ms": float(np.percentile(array, 50)), "p99_ms": float(np.percentile(array, 99)),
            "max_ms": float(array.max()), "n": len(values)}


def _trend(ages: list[float]) -> float:
    """Mean age in the last quarter minus the first quarter (ms): > 0 when falling behind."""
    quarter = max(1, len(ages) // 4)
    return 1000.0 * (float(np.mean(ages[-quarter:])) - float(np.mean(ages[:quarter])))


def drive_ours(port: int, seconds: float, reply: str = "ahead") -> dict:
    import robohal
    from robohal import LimitViolation
    from robohal.uri import parse_uri
    from robohal_abb.backend import EgmBackend

    model = robohal.get_model(MODEL)
    backend = EgmBackend(parse_uri(f"abb-egm://127.0.0.1:{port}?robot=127.0.0.1&timeout=5&reply={reply}"), model)
    state = backend.connect()
    q0 = np.array(state.q)
    ages = []
    start = time.monotonic()
    cycles = restarts = anchor = 0
    first_seqno = None
    while time.monotonic() - start < seconds:
        t = (cycles - anchor) * backend.period  # one setpoint per period, as motions do
        q = q0.copy()
        q[0] += math.radians(5.0) * (1 - math.cos(2 * math.pi * 0.2 * t))
        try:
            state = backend.cycle(q)
        except LimitViolation:
            # a stall past the takeover time (a machine under heavy load) let the hold thread
            # brake the arm: the next setpoint of the old curve would jump, so start it again there
            restarts += 1
            q0, anchor = backend.commanded.copy(), cycles
            continue
        ages.append(time.time() - state.time)
        first_seqno = state.info["seqno"] if first_seqno is None else first_seqno
        cycles += 1
    stats = backend.statistics
    span = state.info["seqno"] - first_seqno + 1
    backend.close()
    return {"ages": _percentiles(ages), "age_trend_ms": _trend(ages), "cycles": cycles, "replied": cycles / span,
            "reply_latency_p50_ms": 1000 * stats["reply_latency_p50"], "reply_latency_p99_ms": 1000 * stats["reply_latency_p99"],
            "drained": stats.get("datagrams_drained", 0), "restarts": restarts}


def drive_peer(port: int, seconds: float, checked: bool = False) -> dict:
    """abb-robot-client's loop; with ``checked`` every target also passes robohal's core
    SetpointGuard (radians), the safety work our backend does on each cycle."""
    from abb_robot_client.egm import EGM

    guard = None
    if checked:
        import robohal
        from robohal.control.guard import SetpointGuard

        guard = SetpointGuard(robohal.get_model(MODEL).limits, 0.004, ("position", "velocity", "acceleration"))
    egm = EGM(port=port)
    ages = []
    q0 = None
    start = time.monotonic()
    cycles = 0
    seqnos = []
    while time.monotonic() - start < seconds:
        ok, state = egm.receive_from_robot(timeout=1.0)
        if not ok:
            continue
        seqnos.append(state.robot_message.header.seqno)
        feedback_time = state.robot_message.feedBack.time
        ages.append(time.time() - (feedback_time.sec + feedback_time.usec * 1e-6))
        if q0 is None:
            q0 = np.array(state.joint_angles)
            if guard is not None:
                guard.reset(np.radians(q0))
        t = cycles * 0.004
        q = q0.copy()
        q[0] += 5.0 * (1 - math.cos(2 * math.pi * 0.2 * t))
        if guard is not None:
            checked_q = guard.check(np.radians(q))
            guard.commit(checked_q)
            q = np.degrees(checked_q)
        egm.send_to_robot(q)
        cycles += 1
    egm.socket.close()
    return {"ages": _percentiles(ages), "age_trend_ms": _trend(ages), "cycles": cycles,
            "replied": cycles / (seqnos[-1] - seqnos[0] + 1)}


def run_one(driver: str, seconds: float, cores: tuple[int, int] | None = None) -> dict:
    """One simulated controller + one sensor process; both report. ``cores``: pin the
    controller to the first CPU and the sensor to the second."""
    from robohal.sim.process import SimulatorProcess, free_port, python_module

    port = free_port()
    sim_argv = os.environ.get("ROBOHAL_EGM_BENCH_SIM")
    argv = sim_argv.split() if sim_argv else python_module("robohal_abb.simulator")
    sim = SimulatorProcess([*argv, "--sensor", f"127.0.0.1:{port}", "--model", MODEL, "--comm-timeout", "0"])
    try:
        sensor_process = subprocess.Popen([sys.executable, __file__, "--driver", driver, "--port", str(port),
                                           "--seconds", str(seconds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True)
        if cores is not None:  # the sensor is still importing: pinned before it streams
            os.sched_setaffinity(sim.pid, {cores[0]})
            os.sched_setaffinity(sensor_process.pid, {cores[1]})
        stdout, stderr = sensor_process.communicate(timeout=seconds + 60)
        if sensor_process.returncode != 0:
            raise RuntimeError(f"{driver} failed:\n{stderr[-2000:]}")
        sensor = json.loads(stdout.strip().splitlines()[-1])
        sim.send("QUIT")
        controller = None
        deadline = time.monotonic() + 10
        while controller is None and time.monotonic() < deadline:
            line = sim.readline(1.0)
            if line and line.startswith("STATS "):
                controller = json.loads(line[6:])
    finally:
        sim.stop()
    return {"sensor": sensor, "controller": controller}


def busy_process() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def _median(runs: list[dict], *path: str) -> float:
    values = []
    for run in runs:
        value = run
        for key in path:
            value = value[key]
        values.append(value)
    return float(np.median(values))


def report(label: str, ours: list[dict], peer: list[dict], checked: list[dict], fresh: list[dict]) -> None:
    def row(name: str, *path: str, ratio: bool = True) -> None:
        a, b = _median(ours, *path), _median(peer, *path)
        shown = f"{a / b:8.2f}" if ratio and b else f"{'-':>8}"
        print(f"  {name:<50} {a:9.3f} {b:9.3f} {shown}")

    print(f"-- {label}: robohal abb-egm vs abb-robot-client, median of {len(ours)} runs each"
          " (ratio = ours / peer; < 1 is faster)")
    print(f"  {'':<50} {'ours':>9} {'peer':>9} {'ratio':>8}")
    row("rate held by the controller (Hz)", "controller", "rate_hz")
    row("round trip p50 (ms)", "controller", "round_trip", "p50_ms")
    row("round trip p99 (ms)", "controller", "round_trip", "p99_ms")
    row("state age at the control loop p50 (ms)", "sensor", "ages", "p50_ms")
    row("state age at the control loop p99 (ms)", "sensor", "ages", "p99_ms")
    row("state age growth, last - first quarter (ms)", "sensor", "age_trend_ms", ratio=False)
    row("robot messages answered (share)", "sensor", "replied", ratio=False)
    print(f"  for scale, the peer's loop with robohal's limit check added: round trip p50"
          f" {_median(checked, 'controller', 'round_trip', 'p50_ms'):.3f} ms, p99"
          f" {_median(checked, 'controller', 'round_trip', 'p99_ms'):.3f} ms")
    print(f"  ours with reply=fresh (each state answered by the command computed from it, a period sooner):"
          f" round trip p50 {_median(fresh, 'controller', 'round_trip', 'p50_ms'):.3f} ms, p99"
          f" {_median(fresh, 'controller', 'round_trip', 'p99_ms'):.3f} ms; state age p50"
          f" {_median(fresh, 'sensor', 'ages', 'p50_ms'):.3f} ms, p99 {_median(fresh, 'sensor', 'ages', 'p99_ms'):.3f} ms")
    print(f"  ours only: reply latency (datagram in -> reply out) p50 {_median(ours, 'sensor', 'reply_latency_p50_ms'):.3f}"
          f" ms, p99 {_median(ours, 'sensor', 'reply_latency_p99_ms'):.3f} ms; stale datagrams skipped per run"
          f" {_median(ours, 'sensor', 'drained'):.0f} (a late loop answers the newest message, not a backlog);"
          f" curves started again after a stall braked the arm {sum(run['sensor']['restarts'] for run in ours)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="per run")
    parser.add_argument("--rounds", type=int, default=3, help="runs per peer and load, interleaved")
    parser.add_argument("--driver", choices=["ours", "ours-fresh", "peer", "peer-checked"])
    parser.add_argument("--port", type=int)
    args = parser.parse_args()
    if args.driver:
        if args.driver in ("ours", "ours-fresh"):
            result = drive_ours(args.port, args.seconds, "fresh" if args.driver == "ours-fresh" else "ahead")
        else:
            result = drive_peer(args.port, args.seconds, checked=args.driver == "peer-checked")
        print(json.dumps(result))
        return
    try:
        import abb_robot_client  # noqa: F401
    except ImportError:
        print("abb-robot-client is not installed (pip install -e './plugins/abb[test]'); skipping the EGM benchmark")
        return
    scenarios = [("as the machine is", False, None), ("with a busy second process", True, None)]
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cpus) > 1:
        # A real controller is another machine: here it gets a core of its own, so the sensor's
        # work after a reply cannot delay the controller's reading of it on a shared core.
        scenarios.append((f"controller and sensor on cores of their own ({cpus[0]} and {cpus[-1]})", False,
                          (cpus[0], cpus[-1])))
    for label, busy, cores in scenarios:
        hog = busy_process() if busy else None
        runs: dict[str, list[dict]] = {"ours": [], "peer": [], "peer-checked": [], "ours-fresh": []}
        try:
            for _ in range(args.rounds):
                for driver in runs:
                    runs[driver].append(run_one(driver, args.seconds, cores))
        finally:
            if hog is not None:
                hog.kill()
                hog.wait()
        report(label, runs["ours"], runs["peer"], runs["peer-checked"], runs["ours-fresh"])


if __name__ == "__main__":
    main()
