"""The Arduino simulator program: a simulated Uno on a pseudo-terminal, for each of the plugin's schemes.

    robohal sim arduino-planar [--firmware simavr|emulator|firmata] [--boot-ms N] [--fast 0|1]
        [--servo-speed RAD_PER_S] [--ideal 0|1] [--pulses 0|1] [--watchdog-ms N] [--watchdog-action A]
    robohal sim arduino-arm [--firmware simavr|emulator] ...     (python -m robohal_arduino_planar.arm_simulator)
    robohal sim arduino-firmata [...]                            (python -m robohal_arduino_planar.firmata_simulator)
    python -m robohal_arduino_planar.simulator ...  (the first)

``--firmware simavr`` (the default) builds the real firmware and the simavr harness (see
:mod:`.firmware`) and becomes the harness; ``--firmware emulator`` runs the emulated MCU
(:mod:`.emulator`) in this process; ``--firmware firmata`` (the only one of arduino-firmata) a
simulated Uno running stock StandardFirmata (:mod:`.firmata_board`). The first stdout line is the
ready line of every robohal simulator, naming the scheme the program was started for:
``READY arduino-planar:///dev/pts/N``, ``READY arduino-arm:///dev/pts/N`` (the same firmware, whose
channels that backend drives) or ``READY arduino-firmata:///dev/pts/N`` (connect there); then a
``RESET`` line whenever the MCU leaves reset, and with ``--pulses 1`` every servo ``PULSE`` line and
the ``HORN`` line after it (the launcher asks for them: the HIL suites read them; at a terminal they
are noise). stdin takes the control lines of PROTOCOL.md (``RESET``, ``INJECT_TX 41420a``, ``STATS``,
``QUIT``, ...); the program ends at QUIT, at the end of a pipe on stdin (its launcher's), and on
SIGTERM or SIGINT. Started otherwise (a terminal, ``</dev/null``, a background job), only the signals end it.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys

from robohal.sim.process import announce_ready, boolean, control_lines
from robohal.uri import RobotUri

from . import firmware
from . import wire as p
from .emulator import DEFAULT_BOOT_MS, Emulator
from .servo import SG90_SPEED

KINDS = ("simavr", "emulator", "firmata")  # our firmware in simavr or emulated, or StandardFirmata
#: the firmware each scheme's simulator runs (the first is its default): arduino-arm drives our
#: firmware's channels, arduino-firmata speaks to StandardFirmata only
SCHEME_KINDS = {"arduino-planar": KINDS, "arduino-arm": ("simavr", "emulator"), "arduino-firmata": ("firmata",)}
MAX_BOOT_MS = 60000  # the harness's bound for a mistyped value


def parser(scheme: str = "arduino-planar") -> argparse.ArgumentParser:
    switch = {"type": boolean, "nargs": "?", "const": True, "default": False, "metavar": "0|1"}
    kinds = SCHEME_KINDS[scheme]
    found = argparse.ArgumentParser(prog=f"robohal sim {scheme}",
                                    description=__doc__.split("\n\n")[0])
    found.add_argument("--firmware", choices=kinds, default=kinds[0],
                       help="the real firmware in simavr (needs `make avr-deps`), the Python emulator of it, or a"
                            f" simulated board running stock StandardFirmata (here: {', '.join(kinds)}; default"
                            f" {kinds[0]})")
    found.add_argument("--boot-ms", type=int, default=DEFAULT_BOOT_MS,
                       help=f"reset hold after the port is opened; a real Uno boots 1-2 s (default {DEFAULT_BOOT_MS})")
    found.add_argument("--fast", **switch, help="simavr free-running instead of real time (the emulator runs in real time)")
    found.add_argument("--servo-speed", type=float, default=None,
                       help=f"servo slew rate in rad/s (default {SG90_SPEED:.2f}: SG90, 0.1 s/60 deg at 4.8 V)")
    found.add_argument("--ideal", **switch, help="the horns follow each pulse at once (perfect tracking)")
    found.add_argument("--pulses", **switch, help="print every PULSE line and the servo's HORN line after it")
    found.add_argument("--watchdog-ms", type=int, default=None,
                       help=f"the emulator's power-up watchdog timeout (default {p.DEFAULT_WATCHDOG_MS})")
    found.add_argument("--watchdog-action", choices=p.WATCHDOG_ACTIONS, default=None,
                       help=f"the emulator's power-up watchdog action (default {p.DEFAULT_WATCHDOG_ACTION})")
    return found


def main(argv: list[str] | None = None, scheme: str = "arduino-planar") -> int:
    """Run the simulator of ``scheme`` (a key of :data:`SCHEME_KINDS`), which its ready line names."""
    options = parser(scheme)
    args = options.parse_args(argv)
    if args.servo_speed is not None and not (args.servo_speed > 0 and math.isfinite(args.servo_speed)):
        options.error("--servo-speed must be a positive number of rad/s (or use --ideal 1)")
    if not 0 <= args.boot_ms <= MAX_BOOT_MS:
        options.error(f"--boot-ms must be 0..{MAX_BOOT_MS}")
    if args.firmware == "simavr":
        if args.watchdog_ms is not None or args.watchdog_action is not None:
            options.error("--watchdog-ms and --watchdog-action set the emulator's watchdog; the firmware's is"
                          " built in (a host sets it over the wire: WDOG)")
        return run_simavr(args, scheme)
    if args.firmware == "firmata":
        if args.watchdog_ms is not None or args.watchdog_action is not None:
            options.error("--watchdog-ms and --watchdog-action set the robohal firmware's watchdog; StandardFirmata"
                          " has none")
        return run_firmata(args)
    return run_emulator(args, scheme)


def run_simavr(args: argparse.Namespace, scheme: str) -> int:
    """Build the firmware and the harness (if out of date), then become the harness."""
    missing = firmware.toolchain_missing()
    if missing:
        print(f"the firmware simulator needs the AVR toolchain and simavr: {missing} (or use --firmware emulator)",
              file=sys.stderr)
        return 2
    try:
        argv = firmware.harness_command(args.boot_ms, fast=args.fast, servo_speed=args.servo_speed,
                                        ideal=args.ideal, pulses=args.pulses, scheme=scheme)
    except RuntimeError as exc:  # a failed build
        print(exc, file=sys.stderr)
        return 1
    if sys.stdin is None:  # started with no stdin: the harness's pty must not become its descriptor 0
        nothing = os.open(os.devnull, os.O_RDONLY)
        os.dup2(nothing, 0)
        os.close(nothing)
    sys.stdout.flush()
    os.execv(argv[0], argv)
    return 1  # not reached: execv replaces this process or raises


def run_emulator(args: argparse.Namespace, scheme: str) -> int:
    """Run the emulated MCU here until QUIT, stdin's end, SIGTERM or SIGINT."""
    emulator = Emulator(args.boot_ms,
                        p.DEFAULT_WATCHDOG_MS if args.watchdog_ms is None else args.watchdog_ms,
                        args.watchdog_action or p.DEFAULT_WATCHDOG_ACTION,
                        SG90_SPEED if args.servo_speed is None else args.servo_speed, args.ideal, args.pulses)

    def on_signal(signum: int, frame: object) -> None:
        emulator.stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        announce_ready(RobotUri(scheme, path=emulator.slave_path))
        emulator.run(control_lines(sys.stdin))
    except BrokenPipeError:
        pass
    return 0


def run_firmata(args: argparse.Namespace) -> int:
    """Run the simulated StandardFirmata board here until QUIT, stdin's end, SIGTERM or SIGINT."""
    from .firmata_board import Board

    board = Board(args.boot_ms, SG90_SPEED if args.servo_speed is None else args.servo_speed, args.ideal, args.pulses)

    def on_signal(signum: int, frame: object) -> None:
        board.stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        announce_ready(RobotUri("arduino-firmata", path=board.slave_path))
        board.run(control_lines(sys.stdin))
    except BrokenPipeError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
