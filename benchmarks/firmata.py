"""Servo arms from arm files: the Firmata path against pyfirmata2, and the robohal firmware's pulses.

1. StandardFirmata (``arduino-firmata://``): the MeArm's three joints written to the same simulated
   Uno (robohal_arduino_planar.firmata_board, 57600-baud wire timing) by robohal's backend and by
   pyfirmata2 (the Firmata client everyone else uses), one fresh board each:

   - host time per command: the CPU time of one command, which writes all three joints (three analog
     messages); robohal's includes the calibration (radians to checked microseconds) and building
     the bytes, pyfirmata2 gets microseconds;
   - latency: from the command's write to the board applying its last servo write (the board's
     ``SERVO`` line carries the host's monotonic clock), commands paced at 50 Hz, p50/p99. robohal's
     write is its cycle's: the backend converts, checks and encodes a setpoint before it waits for
     the cycle's tick (``ServoArmBackend._send``), and at the tick writes the bytes; its latency
     runs from that write, as pyfirmata2's from its first ``write``;
   - command rate: commands sent back to back until the board has applied the last (the 57600-baud
     wire is the limit for both).

   Each figure is printed as robohal / pyfirmata2 (goal <= 1.0x).
2. The robohal firmware (``arduino-arm://``) in simavr: the MeArm and the Braccio moved to a few
   poses, every pulse on every configured pin measured against its calibrated width (goal: within
   1 us).

    python benchmarks/firmata.py [--commands 300]

One run; nothing is asserted (the figures are printed).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

BOOT = "sim_boot_ms=100"


def percentiles(values: list[float]) -> str:
    ms = np.array(values) * 1000.0
    return f"p50 {np.percentile(ms, 50):.2f} ms  p99 {np.percentile(ms, 99):.2f} ms (n={len(ms)})"


def applied(sim, pin: int, width: int, after: float, timeout: float = 5.0) -> float:
    at = sim.applied_at(pin, width, after, timeout)
    if at is None:
        raise RuntimeError(f"the board never applied {width} us on pin {pin}")
    return at


def commands_for(base: tuple[int, ...], count: int) -> list[tuple[int, ...]]:
    """Widths that differ from the command before on every joint (so every joint is written); the
    last one is like no other, so its arrival marks the end of a burst."""
    out = [tuple(w + (k % 40) - 20 for w in base) for k in range(count - 1)]
    return [*out, tuple(w - 30 for w in base)]


def measure(peers: dict[str, tuple], pin: int) -> dict[str, dict]:
    """``peers``: name -> (prepare, write, simulator, [(widths, the argument prepare takes), ...]);
    ``write(prepare(argument))`` sends a command. Host CPU per command (both calls) and latency
    (from the write), the peers taking turns command by command (so both meet the same machine
    load), paced at 50 Hz; then each one's back-to-back rate."""
    figures = {name: {"host": [], "latency": []} for name in peers}
    count = len(next(iter(peers.values()))[3])
    order = list(peers)
    for k in range(count):
        began_pair = time.monotonic()
        order.reverse()  # each goes first every other time: the first after a pause meets cold caches
        for name in order:
            prepare, write, sim, commands = peers[name]
            widths, argument = commands[k]
            cpu = time.thread_time()
            prepared = prepare(argument)
            began = time.monotonic()
            write(prepared)
            figures[name]["host"].append(time.thread_time() - cpu)  # the CPU the command costs
            figures[name]["latency"].append(applied(sim, pin, widths[-1], began) - began)
        time.sleep(max(0.0, began_pair + 0.02 - time.monotonic()))
    for name, (prepare, write, sim, commands) in peers.items():
        began = time.monotonic()
        for _, argument in commands:
            write(prepare(argument))
        figures[name]["rate"] = count / (applied(sim, pin, commands[-1][0][-1], began, timeout=30.0) - began)
    return figures


def firmata_figures(commands: int) -> None:
    import robohal
    from robohal.uri import parse_uri
    from robohal_arduino_planar.simulation import start_firmata_simulator

    try:
        import pyfirmata2
    except ImportError:
        print("skipped the Firmata comparison: pyfirmata2 is not installed (pip install pyfirmata2)")
        return
    q = np.radians([10.0, 5.0, -20.0])
    with robohal.connect(f"arduino-firmata://sim?arm=mearm&{BOOT}") as robot, \
            start_firmata_simulator(parse_uri(f"arduino-firmata://sim?arm=mearm&{BOOT}")) as their_sim:
        backend = robot.backend
        calibration, pins = backend.calibration, backend.pins
        plan = commands_for(calibration.to_pulses(q), commands)

        def robohal_prepare(joints: np.ndarray) -> tuple:  # what a cycle does before its tick: radians, checked
            return backend._prepare(calibration.to_pulses(joints))

        board = pyfirmata2.Arduino(their_sim.pty_path)  # waits out the reset-on-open as for a real board
        try:
            servos = [board.get_pin(f"d:{pin}:s") for pin in pins]

            def microseconds(widths: tuple[int, ...]) -> tuple[int, ...]:
                return widths

            def pyfirmata2_write(widths: tuple[int, ...]) -> None:
                for servo, width in zip(servos, widths, strict=True):
                    servo.write(width)

            figures = measure({"robohal arduino-firmata": (robohal_prepare, backend._put, robot.simulator,
                                                           [(w, calibration.to_joints(w)) for w in plan]),
                               "pyfirmata2": (microseconds, pyfirmata2_write, their_sim, [(w, w) for w in plan])},
                              pins[-1])
        finally:
            board.exit()

    for name, found in figures.items():
        print(f"{name:24s} host CPU per command p50 {np.median(found['host']) * 1e6:.0f} us;"
              f"  latency {percentiles(found['latency'])};  rate {found['rate']:.0f} commands/s")
    ours, theirs = figures.values()
    print(f"  ratio robohal/pyfirmata2: host CPU {np.median(ours['host']) / np.median(theirs['host']):.2f}x,"
          f" latency p50 {np.median(ours['latency']) / np.median(theirs['latency']):.2f}x,"
          f" time per command at full rate {theirs['rate'] / ours['rate']:.2f}x  (goal <= 1.0x)")


def pulse_figures() -> None:
    import robohal
    from robohal_arduino_planar import firmware

    missing = firmware.toolchain_missing()
    if missing:
        print(f"skipped the firmware's pulse accuracy: {missing}")
        return
    poses = {"mearm": [[0.0, 0.0, 0.0], [60.0, 30.0, -50.0], [-80.0, -40.0, 10.0]],
             "braccio": [[0.0, 0.0, 0.0, 0.0, 0.0], [60.0, 50.0, -70.0, 40.0, 80.0], [-85.0, -70.0, 85.0, -85.0, -85.0]]}
    for arm, targets in poses.items():
        errors = []
        with robohal.connect(f"arduino-arm://sim?arm={arm}&{BOOT}") as robot:
            backend, sim = robot.backend, robot.simulator
            for target in np.radians(targets):
                robot.move_joints(target, speed=1.0)
                mark = sim.mark()
                for _ in range(5):
                    backend.cycle()
                for joint, pin in enumerate(backend.pins):
                    expected = backend.calibration.servos[joint].to_us(target[joint])
                    errors += [pulse.width_us - expected for pulse in sim.wait_pulses(mark, 4, pin)[1:]]
        errors = np.array(errors)
        print(f"robohal firmware in simavr, {arm} ({len(backend.pins)} joints): {len(errors)} pulses, error"
              f" {errors.min():+.3f}..{errors.max():+.3f} us, median {np.median(errors):+.3f} us,"
              f" max |error| {np.abs(errors).max():.3f} us (goal <= 1 us)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=300, help="commands per peer and figure")
    args = parser.parse_args(argv)
    firmata_figures(args.commands)
    pulse_figures()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
