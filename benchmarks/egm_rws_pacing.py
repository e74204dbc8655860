"""The simulated ABB controller's 4 ms EGM pacing with and without its Robot Web Services, printed
(never asserted): the tick period p50/p99/max and late ticks from the simulator's own ``STATS``.

Four runs per round, alternated: no RWS; RWS 6 idle (RAPID brought up over RWS, so EGM streams as
in the other runs); no RWS while the same requests go to another simulator's RWS; RWS 6 answering
requests (a read and a signal write every 10 ms) itself. Serving requests costs CPU wherever it
runs (two shared cores here), so the last two set a busy RWS against the same requests answered
elsewhere: what is left is what serving them from the EGM loop's own process costs. Nothing
answers the stream (``--comm-timeout 0``): the loop's pacing is measured, not a sensor.

    python benchmarks/egm_rws_pacing.py [--rounds 5] [--seconds 8]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import threading
import time
from pathlib import Path

import httpx
import robohal_abb
from robohal.sim.process import SimulatorProcess, python_module

AUTH = httpx.DigestAuth("Default User", "robotics")
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
START = "regain=continue&execmode=continue&cycle=forever&condition=none&stopatbp=disabled&alltaskbytsp=false"


def simulator(sink_port: int, *args: str) -> SimulatorProcess:
    return SimulatorProcess(python_module("robohal_abb.simulator", "--sensor", f"127.0.0.1:{sink_port}",
                                          "--comm-timeout", "0", *args))


def bring_up(url: str) -> None:
    """Upload, load and start the RAPID template over RWS 1.0, so the EGM stream flows."""
    template = (Path(robohal_abb.__file__).parent / "rapid" / "RobohalEgm.mod").read_bytes()
    with httpx.Client(base_url=url, auth=AUTH, timeout=10) as http:
        for method, path, body in (("PUT", "/fileservice/$HOME/RobohalEgm.mod", template),
                                   ("POST", "/rw/mastership?action=request", b""),
                                   ("POST", "/rw/rapid/tasks/T_ROB1?action=loadmod", b"modulepath=$HOME/RobohalEgm.mod"),
                                   ("POST", "/rw/mastership?action=release", b""),
                                   ("POST", "/rw/panel/ctrlstate?action=setctrlstate", b"ctrl-state=motoron"),
                                   ("POST", "/rw/rapid/execution?action=resetpp", b""),
                                   ("POST", "/rw/rapid/execution?action=start", START.encode())):
            answer = http.request(method, path, content=body, headers=FORM if method == "POST" else {})
            answer.raise_for_status()


def requests(url: str, stop: threading.Event) -> None:
    """A read and a signal write every 10 ms until ``stop``."""
    with httpx.Client(base_url=url, auth=AUTH, timeout=10) as http:
        value = 0
        while not stop.wait(0.01):
            http.get("/rw/rapid/execution?json=1")
            value ^= 1
            http.post("/rw/iosystem/signals/Local/DRV_1/DO1?action=set", content=f"lvalue={value}", headers=FORM)


def run(name: str, seconds: float) -> dict:
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    port = sink.getsockname()[1]
    started: list[SimulatorProcess] = []
    stop = threading.Event()
    thread = None
    try:
        rws = name != "no RWS" and name != "no RWS, requests answered elsewhere"
        sim = simulator(port, *(["--rws", "6"] if rws else []))
        started.append(sim)
        if rws:
            bring_up(sim.uri.params["rws"])
        target = None
        if name == "no RWS, requests answered elsewhere":
            other = simulator(port, "--rws", "6")
            started.append(other)
            target = other.uri.params["rws"]
        elif name == "RWS 6 answering requests":
            target = sim.uri.params["rws"]
        if target is not None:
            thread = threading.Thread(target=requests, args=(target, stop), daemon=True)
            thread.start()
        time.sleep(seconds)  # the measured window: the loop runs on its own meanwhile
        return sim.stats()["period"]
    finally:
        stop.set()
        if thread is not None:
            thread.join()
        for process in started:
            process.stop()
        sink.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    names = ["no RWS", "RWS 6 idle", "no RWS, requests answered elsewhere", "RWS 6 answering requests"]
    results: dict[str, list[dict]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name in names:
            results[name].append(run(name, args.seconds))
    print(f"EGM tick period (4 ms), median over {args.rounds} runs of {args.seconds:g} s each"
          " (requests: a read and a write every 10 ms):")
    for name, found in results.items():
        p50, p99, top, late = (statistics.median(period[key] for period in found)
                               for key in ("p50_ms", "p99_ms", "max_ms", "late_ticks"))
        print(f"  {name:38s} p50 {p50:6.3f} ms, p99 {p99:6.3f} ms, max {top:7.3f} ms, late ticks {late:.0f}")


if __name__ == "__main__":
    main()
