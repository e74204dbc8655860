"""Robot Web Services speed: robohal's RWS client against abb-robot-client's ``RWS`` client, each
calling the same simulated RobotWare 6 controller (``--rws 6``: abb-robot-client speaks RWS 1.0
only) on loopback, and the time from a RAPID start to the first EGM datagram.

Every call is timed from the caller's side, many times over, in alternating rounds (ours, then
the peer's, then ours again ...) so that both see the machine alike; each line gives both medians
and p99s and the ratio ours / peer (below 1: ours is faster). Each client keeps its HTTP session
(cookies, Digest nonce) across calls, as a program would. RAPID data writes are timed with edit
mastership held by the writer (RobotWare 6 refuses them otherwise), so both send one request.
The start-to-EGM figure runs from just before the start call (motors already on) to the first
robot message on the sensor's UDP port. Nothing is asserted.

    python benchmarks/rws.py [--calls 200] [--rounds 4] [--starts 10]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np


def _simulator():
    from robohal.sim.process import SimulatorProcess, python_module

    sensor = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sensor.bind(("127.0.0.1", 0))
    argv = python_module("robohal_abb.simulator", "--sensor", f"127.0.0.1:{sensor.getsockname()[1]}",
                         "--comm-timeout", "0", "--tool", "none", "--rws", "6")
    return SimulatorProcess(argv), sensor


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values) * 1000.0, q))


def _time(call: Callable[[], object], calls: int, into: list[float]) -> None:
    for _ in range(calls):
        began = time.perf_counter()
        call()
        into.append(time.perf_counter() - began)


def _first_datagram(sensor: socket.socket, began: float, timeout: float = 10.0) -> float:
    sensor.settimeout(timeout)
    sensor.recv(65536)
    return time.perf_counter() - began


def _drain(sensor: socket.socket) -> None:
    """Until the stream has stopped: no datagram for 0.3 s."""
    sensor.settimeout(0.3)
    try:
        while True:
            sensor.recv(65536)
    except (TimeoutError, OSError):
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls of each kind per round")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--starts", type=int, default=10, help="RAPID starts timed to the first EGM datagram, each")
    options = parser.parse_args()

    from abb_robot_client import rws as peer_rws
    from robohal_abb.rws import RwsClient

    process, sensor = _simulator()
    try:
        url = process.uri.params["rws"]
        ours = RwsClient(url).open()
        peer = peer_rws.RWS(url)
        template = (Path(__import__("robohal_abb").__file__).parent / "rapid" / "RobohalEgm.mod").read_bytes()
        ours.upload("$HOME/RobohalEgm.mod", template)
        ours.load_module("$HOME/RobohalEgm.mod")
        ours.motors(True)

        signal = ("DO1", "Local", "DRV_1")
        kinds: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
            ("controller state", ours.controller_state, peer.get_controller_state),
            ("operation mode", ours.operation_mode, peer.get_operation_mode),
            ("RAPID execution", ours.execution, peer.get_execution_state),
            ("speed ratio", ours.speed_ratio, peer.get_speedratio),
            ("read a digital signal", lambda: ours.read_signal("Local/DRV_1/DO1"),
             lambda: peer.get_digital_io(*signal)),
            ("set a digital signal", lambda: ours.write_signal("Local/DRV_1/DO1", True),
             lambda: peer.set_digital_io(signal[0], 1, *signal[1:])),
            ("read a RAPID variable", lambda: ours.read_symbol("reg1", module="user"),
             lambda: peer.get_rapid_variable("user/reg1")),
            ("write a RAPID variable", lambda: ours.write_symbol("reg1", 3, module="user"),
             lambda: peer.set_rapid_variable("user/reg1", "3")),
            ("read the event log", lambda: ours.elog(), peer.read_event_log),
        ]
        times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name, _, _ in kinds}
        for _ in range(options.rounds):
            for name, mine, theirs in kinds:
                writes = name == "write a RAPID variable"
                if writes:
                    ours.request_mastership("edit")
                _time(mine, options.calls, times[name][0])
                if writes:
                    ours.release_mastership("edit")
                    peer._do_post("rw/mastership?action=request")
                _time(theirs, options.calls, times[name][1])
                if writes:
                    peer._do_post("rw/mastership?action=release")

        starts: tuple[list[float], list[float]] = ([], [])
        for _ in range(options.starts):
            for index, (start, stop) in enumerate(((ours.start, ours.stop), (peer.start, peer.stop))):
                ours.reset_program_pointer()
                _drain(sensor)
                began = time.perf_counter()
                start()
                starts[index].append(_first_datagram(sensor, began))
                stop()
        ours.motors(False)
        peer.logout()
        ours.close()
    finally:
        process.stop()
        sensor.close()

    print(f"RWS 1.0 (simulated RobotWare 6, loopback), {options.rounds} rounds x {options.calls} calls each;"
          " ms per call, ours / abb-robot-client")
    print(f"{'call':<24} {'ours p50':>9} {'peer p50':>9} {'ratio':>6}   {'ours p99':>9} {'peer p99':>9} {'ratio':>6}")
    ratios = []
    for name, (mine, theirs) in times.items():
        p50 = (_percentile(mine, 50), _percentile(theirs, 50))
        p99 = (_percentile(mine, 99), _percentile(theirs, 99))
        ratios.append(p50[0] / p50[1])
        print(f"{name:<24} {p50[0]:>9.3f} {p50[1]:>9.3f} {p50[0] / p50[1]:>6.2f}   {p99[0]:>9.3f} {p99[1]:>9.3f}"
              f" {p99[0] / p99[1]:>6.2f}")
    print(f"median of the p50 ratios: {statistics.median(ratios):.2f}")
    mine, theirs = starts
    print(f"RAPID start to the first EGM datagram ({options.starts} starts each, motors on): ours p50"
          f" {_percentile(mine, 50):.1f} ms, abb-robot-client p50 {_percentile(theirs, 50):.1f} ms,"
          f" ratio {_percentile(mine, 50) / _percentile(theirs, 50):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
