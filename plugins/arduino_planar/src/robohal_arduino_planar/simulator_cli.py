"""``robohal sim arduino-planar [--firmware-sim | --emulator]``: a simulated arm on a pty.

Prints the pty path first (connect with ``arduino-planar://<path>``), then the simulator's
``RESET`` lines (``--pulses``: every ``PULSE`` and ``HORN`` line too) until Ctrl-C. Lines typed on stdin go to
the simulator as control lines (``RESET``, ``INJECT_TX 41420a``, ...).
"""

from __future__ import annotations

import sys
import threading
import time

import click


@click.command("arduino-planar")
@click.option("--firmware-sim/--emulator", "firmware_sim", default=True, show_default=True,
              help="The real firmware in simavr (needs `make avr-deps`), or the Python emulator.")
@click.option("--boot-ms", type=click.IntRange(0, 10000), default=300, show_default=True,
              help="Reset hold after the port is opened (a real Uno boots for 1-2 s).")
@click.option("--fast", is_flag=True, help="simavr free-running instead of real time.")
@click.option("--pulses", is_flag=True, help="Print every PULSE line and the servo's HORN line after it.")
@click.option("--servo-speed", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="Servo slew rate in rad/s  [default: 10.47, the SG90's 0.1 s/60 deg at 4.8 V]")
@click.option("--ideal", is_flag=True, help="The servo horns follow each pulse at once (perfect tracking).")
def command(firmware_sim: bool, boot_ms: int, fast: bool, pulses: bool, servo_speed: float | None,
            ideal: bool) -> None:
    """The planar-arm firmware (in simavr) or its emulator on a pseudo-terminal."""
    from .simulation import start

    sim = start("simavr" if firmware_sim else "emulator", boot_ms=boot_ms, realtime=not fast,
                servo_speed=servo_speed, ideal=ideal)
    try:
        click.echo(sim.pty_path)
        click.echo(f"# {sim.kind} running (pid {sim.pid}); connect to arduino-planar://{sim.pty_path};"
                   " Ctrl-C stops", err=True)
        if sys.stdin is not None and not sys.stdin.closed:
            threading.Thread(target=_forward_stdin, args=(sim,), daemon=True).start()
        shown_events = 0
        shown_pulses, shown_horns = sim.mark(), sim.horn_mark()
        while sim.alive():
            time.sleep(0.1)
            events = list(sim.events)
            for line in events[shown_events:]:
                click.echo(line)
            shown_events = len(events)
            if pulses:
                pulses_mark, horns_mark = sim.mark(), sim.horn_mark()
                for pulse in sim.pulses_since(shown_pulses)[:pulses_mark - shown_pulses]:
                    click.echo(f"PULSE {pulse.time_us:.0f} {pulse.pin} {pulse.width_us:.3f}")
                for horn in sim.horns_since(shown_horns)[:horns_mark - shown_horns]:
                    click.echo(f"HORN {horn.time_us:.0f} {horn.pin} {horn.position_us:.3f}")
                shown_pulses, shown_horns = pulses_mark, horns_mark
        click.echo(f"# simulator exited ({sim.process.returncode})", err=True)
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()


def _forward_stdin(sim) -> None:
    for line in sys.stdin:
        if line.strip() and sim.alive():
            sim.control(line.strip())
