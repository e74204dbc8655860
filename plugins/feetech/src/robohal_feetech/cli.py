"""``robohal feetech ...``: a Feetech servo bus from the command line.

    robohal feetech scan PORT [--baud N]            every servo on the bus: id, model, firmware, position
    robohal feetech calibrate URI [--out FILE]      record each joint's travel, then set the homing offsets
    robohal feetech calibrate URI --apply FILE      write a calibration file (robohal's or LeRobot's) to the servos
    robohal feetech id PORT OLD NEW                 give the servo with id OLD the id NEW
    robohal feetech baud PORT NEW [--from OLD]      set every servo on the bus to NEW baud

PORT is the adapter's serial device (``/dev/ttyACM0``); URI is the arm's ``feetech://`` URI (its
``arm=`` names the arm file). ``feetech://sim?...`` runs the command on a simulated bus started for
it (``sim_calibrated=0`` for a factory-fresh one). Ids and baud rates go into the servos' EEPROM:
set them with one servo on the bus at a time, as the README says.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator

import click
from robohal.errors import RobohalError
from robohal.uri import RobotUri, parse_uri

from .arm import FeetechArm, load_arm
from .backend import default_calibration_path
from .bus import ServoBus
from .calibration import GRIPPER, Calibration, CalibrationError, RangeRecorder, read_calibration
from .registers import BAUD_CODES, REGISTERS, TICKS_PER_TURN

SAMPLE_PERIOD = 0.02  # s between two readings of the sweep (a joint turns far less than a quarter turn)


@contextlib.contextmanager
def open_bus(uri: RobotUri) -> Iterator[tuple[ServoBus, FeetechArm]]:
    """The arm's bus at ``uri`` (a simulated one for ``feetech://sim``, stopped after)."""
    if uri.scheme != "feetech":
        raise RobohalError(f"{uri}: robohal feetech takes a bus-servo arm's feetech:// URI, such as"
                           " feetech:///dev/ttyACM0?arm=so101; an arm of hobby servos is calibrated with"
                           " robohal arm calibrate URI")
    arm = load_arm(uri.params.get("arm", "so101"))
    simulator = None
    if uri.wants_simulator:
        from .simulation import start_simulator

        simulator = start_simulator(uri)
        uri = simulator.uri
    bus = ServoBus(uri.path, uri.get_int("baud", arm.baud), label=arm.label)
    try:
        bus.open()
        yield bus, arm
    finally:
        bus.close()
        if simulator is not None:
            simulator.stop()


def names_by_id(arm: FeetechArm) -> dict[int, str]:
    found = {joint.id: joint.name for joint in arm.joints}
    if arm.gripper is not None:
        found[arm.gripper.id] = GRIPPER
    return found


def missing_servos(bus: ServoBus, arm: FeetechArm) -> list[int]:
    return [servo_id for servo_id in arm.ids if bus.ping(servo_id) is None]


def prepare_sweep(bus: ServoBus, arm: FeetechArm) -> None:
    """Torque off and homing offsets 0, position limits 0..4095: the encoder as it is, free to turn."""
    reg = REGISTERS
    for servo_id in arm.ids:
        bus.write_register(servo_id, reg["Torque_Enable"], 0)
        bus.write_register(servo_id, reg["Lock"], 0)
        bus.write_register(servo_id, reg["Homing_Offset"], 0)
        bus.write_register(servo_id, reg["Min_Position_Limit"], 0)
        bus.write_register(servo_id, reg["Max_Position_Limit"], TICKS_PER_TURN - 1)
        bus.write_register(servo_id, reg["Lock"], 1)


def sample(bus: ServoBus, arm: FeetechArm) -> dict[int, int]:
    """Every servo's raw position now (one sync read)."""
    reg = REGISTERS["Present_Position"]
    statuses = bus.sync_read(reg.address, reg.size, arm.ids, what="the sweep's reading")
    return {servo_id: reg.decode(status.data[:2]) for servo_id, status in statuses.items()}


def write_calibration(bus: ServoBus, arm: FeetechArm, calibration: Calibration) -> None:
    """The homing offsets and position limits into the servos' EEPROM (unlocked, written, locked)."""
    reg = REGISTERS
    for name, servo_id in ((names_by_id(arm)[i], i) for i in arm.ids):
        joint = calibration[name]
        bus.write_register(servo_id, reg["Torque_Enable"], 0)
        bus.write_register(servo_id, reg["Lock"], 0)
        bus.write_register(servo_id, reg["Homing_Offset"], joint.homing_offset)
        bus.write_register(servo_id, reg["Min_Position_Limit"], joint.range_min)
        bus.write_register(servo_id, reg["Max_Position_Limit"], joint.range_max)
        bus.write_register(servo_id, reg["Lock"], 1)


def calibration_table(calibration: Calibration) -> str:
    rows = [f"{'joint':<14} {'id':>3} {'offset':>7} {'min':>5} {'zero':>7} {'max':>5}  travel (deg)"]
    for name, joint in calibration.joints.items():
        low, high = joint.travel
        rows.append(f"{name:<14} {joint.id:>3} {joint.homing_offset:>7} {joint.range_min:>5} {joint.zero:>7.1f}"
                    f" {joint.range_max:>5}  {low * 57.2958:+.1f} .. {high * 57.2958:+.1f}")
    return "\n".join(rows)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def feetech() -> None:
    """Feetech serial-bus servos (STS3215: the SO-101): scan a bus, calibrate an arm, set ids and baud rates."""


@feetech.command()
@click.argument("port")
@click.option("--baud", type=click.Choice([str(b) for b in BAUD_CODES]), default=None,
              help="Only this baud rate (default: every one, 1 Mbps first).")
@click.option("--max-id", type=int, default=20, show_default=True, help="The highest id pinged.")
def scan(port: str, baud: str | None, max_id: int) -> None:
    """Every servo that answers on PORT: baud rate, id, model, firmware and position."""
    # the bus's own timeout, not a shorter one to hurry past silent ids: a USB adapter holds the
    # answers back up to its latency timer (16 ms on an FTDI), and a servo that answered its ping
    # is read with the usual retries (a busy host can miss one answer)
    bus = ServoBus(port, 1_000_000)
    try:
        bus.open()
    except RobohalError as exc:
        raise click.ClickException(str(exc)) from None
    found = 0
    try:
        for rate in ([int(baud)] if baud else list(BAUD_CODES)):
            bus.set_baud(rate)
            for servo_id in range(max_id + 1):
                if bus.ping(servo_id, retries=False) is None:
                    continue
                found += 1
                data = bus.read(servo_id, 0, 5).data
                position = bus.read_register(servo_id, REGISTERS["Present_Position"])
                click.echo(f"{rate:>8} baud  id {servo_id:>3}  model {data[3] | data[4] << 8:>5}  firmware"
                           f" {data[0]}.{data[1]}  position {position}")
    finally:
        bus.close()
    if not found:
        raise click.ClickException(f"no servo answers on {port} (is the servos' supply on?)")


@feetech.command()
@click.argument("uri")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Where the calibration goes (default ~/.config/robohal/feetech/ARM.json).")
@click.option("--apply", "apply", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Write this calibration file (robohal's or LeRobot's) to the servos instead of calibrating.")
def calibrate(uri: str, out: str | None, apply: str | None) -> None:
    """Calibrate the arm at URI: its torque goes off, you move every joint through its whole travel,
    then each joint's homing offset is chosen so the encoder's wrap point lies outside it."""
    try:
        parsed = parse_uri(uri)
        with open_bus(parsed) as (bus, arm):
            missing = missing_servos(bus, arm)
            if missing:
                raise click.ClickException(f"{', '.join(arm.label(i) for i in missing)} does not answer on {bus.device}"
                                           f" at {bus.baud} baud (robohal feetech scan {bus.device})")
            if apply:
                calibration = read_calibration(apply)
                calibration.check(list(names_by_id(arm).values()), {n: i for i, n in names_by_id(arm).items()})
                write_calibration(bus, arm, calibration)
                click.echo(calibration_table(calibration))
                click.echo(f"written to the servos from {apply}")
                return
            calibration = sweep(bus, arm)
            write_calibration(bus, arm, calibration)
            path = calibration.save(out or default_calibration_path(arm.name))
            click.echo(calibration_table(calibration))
            click.echo(f"saved to {path}; connect with calibration={path}" if out else f"saved to {path}")
    except CalibrationError as exc:
        raise click.ClickException(f"not calibrated: {exc}") from None
    except RobohalError as exc:
        raise click.ClickException(str(exc)) from None


def sweep(bus: ServoBus, arm: FeetechArm, stop: threading.Event | None = None) -> Calibration:
    """The interactive sweep: torque off, sample while the user moves every joint, until Enter."""
    names = names_by_id(arm)
    recorder = RangeRecorder(names)
    prepare_sweep(bus, arm)
    click.echo("Torque is off. Move every joint slowly through its whole travel, end to end (the gripper"
               " closed and fully open), then press Enter.")
    done = stop or threading.Event()
    if stop is None:
        threading.Thread(target=lambda: (sys.stdin.readline(), done.set()), daemon=True).start()
    shown = 0.0
    while not done.is_set():
        recorder.add(sample(bus, arm))
        if time.monotonic() - shown > 0.5 and sys.stdout.isatty():
            shown = time.monotonic()
            spans = []
            for servo_id, name in names.items():
                travel = recorder.travel(servo_id)
                spans.append(f"{name} {0 if travel is None else travel[1] - travel[0]}")
            click.echo("\r" + ", ".join(spans) + " ticks", nl=False)
        done.wait(SAMPLE_PERIOD)
    click.echo("")
    return recorder.calibration()


@feetech.command("id")
@click.argument("port")
@click.argument("old", type=int)
@click.argument("new", type=int)
@click.option("--baud", type=int, default=1_000_000, show_default=True)
def set_id(port: str, old: int, new: int, baud: int) -> None:
    """Give the servo OLD the id NEW (saved in its EEPROM). Connect one servo at a time."""
    if not 0 <= new <= 252:
        raise click.ClickException("ids are 0..252")
    with _port(port, baud) as bus:
        if bus.ping(new) is not None:
            raise click.ClickException(f"id {new} is taken on {port}: two servos would answer at once")
        if bus.ping(old) is None:
            raise click.ClickException(f"no servo {old} answers on {port} at {baud} baud")
        bus.write_register(old, REGISTERS["Lock"], 0)
        bus.write_register(old, REGISTERS["ID"], new)
        bus.write_register(new, REGISTERS["Lock"], 1)
        click.echo(f"servo {old} is servo {new} now")


@feetech.command()
@click.argument("port")
@click.argument("new", type=click.Choice([str(b) for b in BAUD_CODES]))
@click.option("--from", "old", type=click.Choice([str(b) for b in BAUD_CODES]), default="1000000", show_default=True)
@click.option("--max-id", type=int, default=20, show_default=True)
def baud(port: str, new: str, old: str, max_id: int) -> None:
    """Set every servo on PORT (found at --from) to NEW baud (saved in its EEPROM)."""
    with _port(port, int(old)) as bus:
        ids = [i for i in range(max_id + 1) if bus.ping(i, retries=False) is not None]
        if not ids:
            raise click.ClickException(f"no servo answers on {port} at {old} baud")
        for servo_id in ids:
            bus.write_register(servo_id, REGISTERS["Lock"], 0)
            with contextlib.suppress(RobohalError):  # it answers at the old rate, or already the new one
                bus.write_register(servo_id, REGISTERS["Baud_Rate"], BAUD_CODES[int(new)])
        bus.set_baud(int(new))
        for servo_id in ids:
            bus.write_register(servo_id, REGISTERS["Lock"], 1)
        click.echo(f"servos {', '.join(map(str, ids))} speak {new} baud now")


@contextlib.contextmanager
def _port(port: str, baud: int) -> Iterator[ServoBus]:
    bus = ServoBus(port, baud)
    try:
        bus.open()
        yield bus
    except RobohalError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        bus.close()

