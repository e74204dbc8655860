"""Arduino servo arm speed: the arduino-planar backend against the real firmware running in simavr
in real-time mode (the harness throttles simulated time to the wall clock, 115200-baud timing).

1. Command round trip (SET sent -> ACK decoded), p50/p99, through the backend's own transport,
   as a ratio against two peers: a bare pyserial SET/ACK loop on the same pty (what a
   hand-written script gets) and the wire floor (the bytes of SET + ACK at 10 bits each over
   115200 baud; the firmware also waits up to 2.6 ms for the PWM frame's safe window).
2. A 50 Hz setpoint stream (a slow sine on both joints) for ``--seconds`` s: errors of every
   kind (resends, garbage, refused frames, overflows, watchdog trips) must be zero; the rate held
   and the period jitter are printed.

    python benchmarks/arduino.py [--seconds 10] [--commands 500] [--emulator]

Nothing is asserted: the figures are printed (main() returns the stream's error count).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def percentiles(values: list[float]) -> str:
    ms = np.array(values) * 1000.0
    return f"p50 {np.percentile(ms, 50):.2f} ms  p99 {np.percentile(ms, 99):.2f} ms  max {ms.max():.2f} ms (n={len(ms)})"


def bare_pyserial_round_trips(path: str, count: int) -> list[float]:
    """A minimal host: SET, read the line, no checks beyond the seq."""
    import serial
    from robohal_arduino_planar import wire as p

    times = []
    with serial.Serial(path, p.BAUDRATE, timeout=1.0) as port:
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:  # wait out the reset-on-open
            port.write(p.Ping(1).encode())
            if port.readline().startswith(b"PONG 1 "):
                break
        port.reset_input_buffer()
        for seq in range(2, count + 2):
            widths = (1500 + (seq % 2) * 10, 1500 - (seq % 2) * 10)
            began = time.perf_counter()
            port.write(p.Set(seq, *widths).encode())
            line = port.readline()
            times.append(time.perf_counter() - began)
            if not line.startswith(b"ACK %d " % seq):
                raise RuntimeError(f"bare loop got {line!r}")
    return times


def backend_round_trips(backend, count: int) -> list[float]:
    """SET -> ACK through the backend's transport (one command in flight, seq matching, decode)."""
    from robohal_arduino_planar import wire as p

    times = []
    for k in range(count):
        widths = (1500 + (k % 2) * 10, 1500 - (k % 2) * 10)
        with backend._wire:
            began = time.perf_counter()
            reply = backend._transact(lambda seq, w=widths: p.Set(seq, *w))
            times.append(time.perf_counter() - began)
        if not isinstance(reply, p.Ack):
            raise RuntimeError(f"SET answered with {reply!r}")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the 50 Hz stream")
    parser.add_argument("--commands", type=int, default=500, help="round trips per peer")
    parser.add_argument("--emulator", action="store_true", help="the Python emulator instead of simavr")
    args = parser.parse_args(argv)

    import robohal
    from robohal.motion import JointTrajectory
    from robohal.uri import parse_uri
    from robohal_arduino_planar import firmware
    from robohal_arduino_planar import wire as p
    from robohal_arduino_planar.simulation import start_simulator

    kind = "emulator" if args.emulator else "simavr"
    sim_uri = parse_uri(f"arduino-planar://sim?model=arduino.planar2&firmware={kind}&sim_boot_ms=100")
    if kind == "simavr" and firmware.toolchain_missing():
        print(f"skipped: {firmware.toolchain_missing()}")
        return 0

    # 1. round trips: the bare loop first (its own simulator: the port is exclusive per host)
    with start_simulator(sim_uri) as sim:
        bare = bare_pyserial_round_trips(sim.pty_path, args.commands)
    with start_simulator(sim_uri) as sim:
        uri = f"arduino-planar://{sim.pty_path}?model=arduino.planar2&keepalive=0&poll=0"
        with robohal.connect(uri) as robot:
            ours = backend_round_trips(robot.backend, args.commands)
    floor = (len(p.Set(1000, 1500, 1500).encode()) + len(p.Ack(1000, (1500, 1500)).encode())) * 10 / p.BAUDRATE
    print(f"{kind} round trip, backend SET->ACK:   {percentiles(ours)}")
    print(f"{kind} round trip, bare pyserial SET:  {percentiles(bare)}")
    print(f"  ratio backend/bare (p50): {np.median(ours) / np.median(bare):.2f}x;"
          f" backend p50 / wire floor {floor * 1000:.2f} ms: {np.median(ours) / floor:.2f}x")

    # 2. a 50 Hz stream
    with start_simulator(sim_uri) as sim:
        with robohal.connect(f"arduino-planar://{sim.pty_path}?model=arduino.planar2&rate=50") as robot:
            period = robot.backend.period
            n = round(args.seconds / period)
            t = np.arange(n) * period
            q0 = robot.backend.commanded
            path = q0 + np.radians(20.0) * np.sin(2 * np.pi * 0.25 * t)[:, None] * np.array([1.0, -1.0])
            robot.move_joints(path[0], speed=1.0)
            before = robot.backend.counters.copy()
            began = time.monotonic()
            result = robot.run(JointTrajectory(path))
            elapsed = time.monotonic() - began
            for _ in range(30):  # a counter poll from the firmware
                robot.backend.cycle()
            host = robot.backend.counters
            fw = robot.backend.firmware_counters
    steps = np.diff(result.times)
    host_errors = {k: host[k] - before.get(k, 0) for k in
                   ("resends", "garbage_lines", "firmware_rejects", "stale_replies", "resets", "watchdog_events")}
    fw_errors = {k: fw[k] for k in ("bad_checksum", "overflow", "garbage", "rejected", "watchdog_trips")}
    errors = sum(host_errors.values()) + sum(fw_errors.values()) + (0 if result.completed else 1)
    print(f"{kind} 50 Hz stream: {result.cycles} setpoints in {elapsed:.2f} s"
          f" ({result.cycles / elapsed:.2f} Hz; period {percentiles(list(steps))})")
    print(f"  errors: {errors} (host {host_errors}, firmware {fw_errors})")
    print(f"  max |measured - commanded|: {np.degrees(result.tracking_error.max()):.3f} deg (whole-microsecond pulses)")
    return 1 if errors else 0


if __name__ == "__main__":
    main()  # no SystemExit: benchmarks/run.py runs every benchmark in one process
