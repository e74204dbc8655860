"""Franka Desk figures, printed (never asserted):

1. Desk calls: robohal's Desk client against franky-control's (``franky.Desk``, the peer, in its
   own venv) on the same simulated Desk, both dialects, each in a process of its own: opening a
   session, one read (franky: the system status; ours: who holds control; one GET each), a control cycle (take control, unlock, FCI on, off
   where franky has it, lock, release) with the brakes taking no time, so the calls are measured,
   not the brakes. Medians over the rounds, ratio ours / peer;
2. bring-up: the wall time from ``robohal franka unlock`` (a new process, as a user types it)
   through ``robohal franka fci on`` to the first FCI motion done (connect, a 1 degree move) on a
   simulated robot that starts locked, with the brakes taking the simulator's default time; and
   the same through ``franka://...&desk_bringup=1`` in one call;
3. the simulator's 1 kHz pacing while a client moves the arm: Desk off against Desk idle, and the
   same requests (one every 10 ms) answered by another simulator's Desk against this one's own
   (state period p50/p99/max, late ticks), alternated over the rounds.

    python benchmarks/desk.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
FRANKY_PYTHON = REPO / ".venv-franky-sim" / "bin" / "python"
PASSWORD = "bench-Pw-1"

# The peer's side: franky's Desk in the franky venv, timed in its own process.
FRANKY_ROUNDS = """
import json, sys, time
import franky
dialect, host, password, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
kind = franky.Desk if dialect == "v1" else franky.DeskWebSession
times = {"open": [], "read": [], "cycle": []}
for _ in range(rounds):
    t = time.perf_counter(); desk = kind(host, "franka", password); desk.open(); times["open"].append(time.perf_counter() - t)
    t = time.perf_counter(); desk.system_status; times["read"].append(time.perf_counter() - t)
    t = time.perf_counter()
    desk.take_control(wait_timeout=10)
    desk.unlock_brakes()
    desk.enable_fci()
    if dialect == "v1":
        desk.disable_fci()
    desk.lock_brakes()
    desk.release_control()
    times["cycle"].append(time.perf_counter() - t)
    desk.close()
print(json.dumps(times))
"""

OURS_ROUNDS = """
import json, sys, time, tempfile
from pathlib import Path
from robohal_franka.desk import Credentials, DeskSession
from robohal_franka.desk.access import desk_tls
from robohal_franka.desk.tokens import TokenStore
dialect, url, fingerprint, password, rounds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
store = TokenStore(Path(tempfile.mkdtemp()))
times = {"open": [], "read": [], "cycle": []}
for _ in range(rounds):
    t = time.perf_counter()
    desk = DeskSession(url, Credentials("franka", password), tls=desk_tls(url, fingerprint), tokens=store)
    desk.open(); times["open"].append(time.perf_counter() - t)
    t = time.perf_counter(); desk.dialect.holder(); times["read"].append(time.perf_counter() - t)
    t = time.perf_counter()
    desk.take_control()
    desk.unlock()
    desk.fci(True)
    if dialect == "v1":
        desk.fci(False)
    desk.lock()
    desk.release_control()
    times["cycle"].append(time.perf_counter() - t)
    desk.close()
print(json.dumps(times))
"""


def simulator(*args: str):
    from robohal.sim.process import SimulatorProcess, free_loopback_host, python_module

    host = free_loopback_host(1337)
    return SimulatorProcess(python_module("robohal_franka.simulator", "--address", host, *args))


def medians(times: dict) -> dict:
    return {key: statistics.median(values) * 1000 for key, values in times.items()}


def desk_calls(rounds: int) -> None:
    if not FRANKY_PYTHON.exists():
        print("desk calls: skipped, no franky venv (make franky-sim)")
        return
    for dialect in ("v1", "web"):
        with simulator("--desk", dialect, "--desk-password", PASSWORD, "--brake-time", "0") as sim:
            url, fingerprint = sim.uri.params["desk"], sim.uri.params["desk_fingerprint"]
            ours = json.loads(subprocess.run([sys.executable, "-c", OURS_ROUNDS, dialect, url, fingerprint, PASSWORD,
                                              str(rounds)], capture_output=True, text=True, check=True).stdout)
            peer = json.loads(subprocess.run([str(FRANKY_PYTHON), "-c", FRANKY_ROUNDS, dialect,
                                              url.removeprefix("https://"), PASSWORD, str(rounds)],
                                             capture_output=True, text=True, check=True).stdout)
        mine, theirs = medians(ours), medians(peer)
        print(f"desk calls ({dialect}, median of {rounds}; ours / franky-control):")
        for key in ("open", "read", "cycle"):
            print(f"  {key:6s} {mine[key]:8.2f} ms  {theirs[key]:8.2f} ms  ratio {mine[key] / theirs[key]:.2f}")


def cli(*args: str, env: dict) -> float:
    began = time.perf_counter()
    # the CLI installed next to this interpreter: `make bench` runs it without the venv on PATH
    robohal_cli = str(Path(sys.executable).with_name("robohal"))
    subprocess.run([robohal_cli, "franka", *args], check=True, env=env, capture_output=True)
    return time.perf_counter() - began


def bring_up(rounds: int) -> None:
    import robohal

    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "XDG_STATE_HOME": home, "XDG_CONFIG_HOME": home, "ROBOHAL_FRANKA_DESK_USER": "franka",
               "ROBOHAL_FRANKA_DESK_PASSWORD": PASSWORD}
        os.environ.update({key: env[key] for key in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "ROBOHAL_FRANKA_DESK_USER",
                                                     "ROBOHAL_FRANKA_DESK_PASSWORD")})
        commands, one_call = [], []
        for _ in range(rounds):
            with simulator("--desk", "v1", "--locked", "1", "--desk-password", PASSWORD) as sim:
                uri = sim.uri.with_params(realtime="ignore")
                began = time.perf_counter()
                unlock = cli("unlock", str(sim.uri), env=env)
                fci = cli("fci", "on", str(sim.uri), env=env)
                with robohal.connect(str(uri)) as robot:
                    connected = time.perf_counter()
                    robot.move_joints(robot.backend.commanded + np.radians(1.0), speed=0.5)
                    done = time.perf_counter()
                cli("lock", str(sim.uri), env=env)
                commands.append((done - began, unlock, fci, connected - began - unlock - fci, done - connected))
            with simulator("--desk", "v1", "--locked", "1", "--desk-password", PASSWORD) as sim:
                began = time.perf_counter()
                with robohal.connect(str(sim.uri.with_params(realtime="ignore", desk_bringup="1"))) as robot:
                    robot.move_joints(robot.backend.commanded + np.radians(1.0), speed=0.5)
                    one_call.append(time.perf_counter() - began)
        parts = np.median(np.array(commands), axis=0)
        print(f"bring-up, robohal franka unlock -> first FCI motion done (median of {rounds}): {parts[0]:.2f} s"
              f" (unlock {parts[1]:.2f} s, fci on {parts[2]:.2f} s, connect {parts[3]:.2f} s, the 1 degree move"
              f" {parts[4]:.2f} s); through desk_bringup=1 in one call: {np.median(one_call):.2f} s")


def pacing(rounds: int) -> None:
    """Four runs per round. Serving requests costs CPU wherever it runs (two shared cores here), so
    a busy Desk is set against the same requests answered by another simulator's Desk: what is
    left is what serving them from the 1 kHz loop's own process costs."""
    import robohal

    runs = {"Desk off": ([], None), "Desk idle": (["--desk", "v1"], None),
            "Desk off, requests answered elsewhere": ([], "elsewhere"), "Desk answering requests": (["--desk", "v1"], "here")}
    results: dict[str, list[dict]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, (args, requests_to) in runs.items():
            with simulator("--seed", "1", "--desk-password", PASSWORD, *args) as sim:
                other = simulator("--desk", "v1", "--desk-password", PASSWORD) if requests_to == "elsewhere" else None
                stop = threading.Event()
                requests = threading.Thread(target=_requests, args=((other or sim).uri, stop), daemon=True)
                try:
                    with robohal.connect(str(sim.uri.with_params(realtime="ignore"))) as robot:
                        if requests_to:
                            requests.start()
                        q0 = robot.backend.commanded
                        for _ in range(2):
                            robot.move_joints(q0 + 0.2, speed=0.5)
                            robot.move_joints(q0, speed=0.5)
                        stats = sim.stats()
                finally:
                    stop.set()
                    if requests.is_alive():
                        requests.join()
                    if other is not None:
                        other.stop()
            results[name].append(stats)
    print(f"simulator pacing while a client moves the arm (median over {rounds} runs each; requests: one every 10 ms):")
    for name, found in results.items():
        p50, p99, top, late = (statistics.median(run[key] for run in found) for key in
                               ("period_p50_us", "period_p99_us", "period_max_us", "late_ticks"))
        print(f"  {name:38s} period p50 {p50:7.1f} us, p99 {p99:7.1f} us, max {top:8.1f} us, late ticks {late:.0f}")


def _requests(uri, stop: threading.Event) -> None:
    host = uri.params["desk"].removeprefix("https://")
    connection = http.client.HTTPSConnection(host, context=ssl._create_unverified_context(), timeout=10)
    auth = {"Authorization": "Basic " + base64.b64encode(f"franka:{PASSWORD}".encode()).decode()}
    while not stop.is_set():
        connection.request("GET", "/api/system", headers=auth)
        connection.getresponse().read()
        stop.wait(0.01)
    connection.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--only", choices=("calls", "bringup", "pacing"), default=None)
    args = parser.parse_args()
    if args.only in (None, "calls"):
        desk_calls(args.rounds)
    if args.only in (None, "bringup"):
        bring_up(max(3, args.rounds // 4))
    if args.only in (None, "pacing"):
        pacing(max(3, args.rounds // 5))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
