"""The simulated servo bus program: an arm's Feetech servos on a pseudo-terminal.

    robohal sim feetech [--arm so101] [--calibrated 0|1] [--baud N] [--firmware [ID:]MAJOR.MINOR]
        [--supply VOLTS] [--object WIDTH]
    python -m robohal_feetech.simulator ...  (the same program)

It opens a pty, puts the arm file's servos on it (:mod:`.servo`, :mod:`.simbus`) and prints the
ready line of every robohal simulator, ``READY feetech:///dev/pts/N?arm=so101&calibration=FILE``:
connect there, with the calibration the simulated arm was given. Any client can: the vendor's
SDK drives it as it drives real servos. stdin takes control lines, each answered by nothing but
its effect (``STATS`` shows it):

=========================  ============================================================
``STATS``                  ``STATS {json}``: each servo's encoder, registers, load, current,
                           temperature; the bus's counts
``DROP N [ID]``            drop the next N status packets (of servo ID)
``CORRUPT N [ID]``         corrupt the next N status packets' checksums
``SILENT ID 1|0``          the servo stops (1) or resumes (0) answering and hearing
``SUPPLY VOLTS``           the supply's voltage (it sags with the current drawn)
``TEMP ID DEGC``           the servo's temperature now
``HAND ID FRACTION``       a hand moves the joint to FRACTION of its travel between its stops
``OBJECT WIDTH|none``      a part WIDTH m wide between the jaws (the closing jaw stalls on it)
``BLOCK ID RAD|none``      something in the joint's way at RAD, on the side it is on now
``POWER``                  power cycle every servo (unsaved EEPROM values are lost)
``QUIT``                   end
=========================  ============================================================

**The simulated arm** (our choice, a plausible build): each joint's mechanical stops lie 3 deg
beyond the model's range, the jaw's at its published range; each servo horn was mounted at its
own encoder angle, and the shoulder pan's travel crosses the encoder's wrap point, as an arm
assembled without care for it does. With ``--calibrated 1`` (the default) the servos come
calibrated as :mod:`.calibration` would (homing offsets and position limits in EEPROM) and the
calibration file is written for the backend; ``--calibrated 0`` is a factory-fresh bus
(offsets 0, limits 0..4095), to calibrate.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import select
import shutil
import signal
import sys
import tempfile
import termios
import time
from pathlib import Path

from robohal.sim.process import announce_ready, boolean, control_lines, wake_on_time
from robohal.sim.serial_pty import open_serial_pty
from robohal.uri import RobotUri

from .arm import DEFAULT_ARM, FeetechArm, load_arm
from .calibration import GRIPPER, Calibration, JointCalibration, choose_homing
from .models import JAW_RANGE
from .registers import BAUD_CODES, TICKS_PER_TURN
from .servo import RAD_PER_TICK, SimServo, Stops
from .simbus import SimBus

STOP_MARGIN = math.radians(3.0)  # the stops beyond the model's range
# Encoder ticks at each joint's 0 rad, in the arm file's order, then the jaw's (our choice): the
# first puts the shoulder pan's travel across the wrap point (3900 +- 1300 ticks).
MOUNTS = (3900, 2150, 1900, 2400, 1000, 2300)
DEFAULT_SUPPLY = 7.4  # V
IDLE_WAIT = 0.5  # s: the longest the loop sleeps with nothing due (how soon it sees a stop flag)
_BAUD_OF_SPEED = {getattr(termios, f"B{baud}"): baud for baud in BAUD_CODES if hasattr(termios, f"B{baud}")}


def jaw_geometry(arm: FeetechArm) -> float:
    return arm.gripper.jaw_length if arm.gripper else 0.075


def jaw_angle(width: float, jaw_length: float) -> float:
    """The jaw angle (rad) at which its tip is ``width`` from the fixed jaw (chord of the swing)."""
    return 2.0 * math.asin(min(1.0, max(0.0, width / (2.0 * jaw_length))))


def build_servos(arm: FeetechArm, model_ranges: list[tuple[float, float]], firmware: dict[int | None, tuple[int, int]],
                 baud: int) -> tuple[list[SimServo], dict[int, tuple[float, int, tuple[float, float]]]]:
    """The simulated servos at 0 rad, and per id (mount ticks, direction, travel in rad)."""
    servos, geometry = [], {}
    moving = [(joint.id, joint.direction, rng) for joint, rng in zip(arm.joints, model_ranges, strict=True)]
    if arm.gripper is not None:
        moving.append((arm.gripper.id, arm.gripper.direction, JAW_RANGE))
    for index, (servo_id, direction, (low, high)) in enumerate(moving):
        margin = 0.0 if arm.gripper is not None and servo_id == arm.gripper.id else STOP_MARGIN
        mount = MOUNTS[index % len(MOUNTS)]
        ends = sorted(mount + direction * angle / RAD_PER_TICK for angle in (low - margin, high + margin))
        start = mount if ends[0] <= mount <= ends[1] else (ends[0] + ends[1]) / 2
        servo = SimServo(servo_id, start, Stops(*ends), firmware.get(servo_id, firmware.get(None, (3, 10))))
        servo.set("Baud_Rate", BAUD_CODES[baud])
        servo.saved = bytes(servo.memory[:len(servo.saved)])
        servos.append(servo)
        geometry[servo_id] = (float(mount), direction, (low - margin, high + margin))
    return servos, geometry


def calibrate_servos(arm: FeetechArm, servos: list[SimServo], geometry: dict) -> Calibration:
    """Give the servos the calibration :mod:`.calibration` would find, and return it (each zero
    the true 0 rad, which the simulation knows)."""
    names = {joint.id: joint.name for joint in arm.joints}
    if arm.gripper is not None:
        names[arm.gripper.id] = GRIPPER
    joints = {}
    for servo in servos:
        homing = choose_homing(servo.stops.low, servo.stops.high, names[servo.id])
        for name, value in (("Homing_Offset", homing.homing_offset), ("Min_Position_Limit", homing.range_min),
                            ("Max_Position_Limit", homing.range_max)):
            servo.set(name, value)
        servo.saved = bytes(servo.memory[:len(servo.saved)])
        mount = geometry[servo.id][0]
        zero = (mount - homing.homing_offset) % TICKS_PER_TURN
        joints[names[servo.id]] = JointCalibration(servo.id, homing.homing_offset, homing.range_min,
                                                   homing.range_max, zero, 1)
    return Calibration(joints)


def parser() -> argparse.ArgumentParser:
    switch = {"type": boolean, "nargs": "?", "const": True, "metavar": "0|1"}
    found = argparse.ArgumentParser(prog="robohal sim feetech", description=__doc__.split("\n\n")[0])
    found.add_argument("--arm", default=DEFAULT_ARM, help=f"the arm file (name or path; default {DEFAULT_ARM})")
    found.add_argument("--calibrated", default=True, **switch,
                       help="the servos come calibrated and the calibration file is announced (default 1)")
    found.add_argument("--baud", type=int, default=None, choices=sorted(BAUD_CODES),
                       help="the servos' baud rate (default: the arm file's)")
    found.add_argument("--firmware", action="append", default=[], metavar="[ID:]MAJOR.MINOR",
                       help="the firmware version every servo (or servo ID) reports (default 3.10)")
    found.add_argument("--supply", type=float, default=DEFAULT_SUPPLY, help=f"supply volts (default {DEFAULT_SUPPLY})")
    found.add_argument("--object", type=float, default=None, metavar="WIDTH",
                       help="a part WIDTH m wide between the jaws from the start")
    return found


def firmware_versions(texts: list[str]) -> dict[int | None, tuple[int, int]]:
    found: dict[int | None, tuple[int, int]] = {}
    for text in texts:
        who, _, version = text.rpartition(":")
        major, _, minor = version.partition(".")
        found[int(who) if who else None] = (int(major), int(minor or 0))
    return found


class Program:
    """The simulator's process: the pty, the bus, the control lines."""

    def __init__(self, args: argparse.Namespace) -> None:
        import robohal

        self.arm = load_arm(args.arm)
        model = robohal.get_model(self.arm.model)
        ranges = list(zip(model.limits.lower, model.limits.upper, strict=True))
        self.baud = args.baud or self.arm.baud
        servos, self.geometry = build_servos(self.arm, ranges, firmware_versions(args.firmware), self.baud)
        self.folder = Path(tempfile.mkdtemp(prefix="robohal-feetech-"))
        self.calibration_path: Path | None = None
        if args.calibrated:
            self.calibration_path = calibrate_servos(self.arm, servos, self.geometry).save(
                self.folder / f"{self.arm.name}.json")
        self.bus = SimBus(servos, args.supply, time.monotonic())
        if args.object is not None:
            self.place_object(args.object)
        self.port = open_serial_pty()
        self.master, self.slave_path = self.port.master, self.port.path
        self.due: list[tuple[float, int, bytes]] = []
        self.sequence = 0
        self.stop = False

    def uri(self, arm_text: str) -> RobotUri:
        params = {"arm": arm_text}
        if self.calibration_path is not None:
            params["calibration"] = str(self.calibration_path)
        if self.baud != 1_000_000:
            params["baud"] = str(self.baud)
        return RobotUri("feetech", path=self.slave_path, params=params)

    def host_baud(self) -> int:
        """The host's line speed (0: one no servo takes, such as a custom rate)."""
        try:
            speed = termios.tcgetattr(self.master)[5]
        except termios.error:
            return self.baud
        return _BAUD_OF_SPEED.get(speed, 0)

    # ------------------------------------------------------------------ control lines

    def place_object(self, width: float | None) -> None:
        if self.arm.gripper is None:
            return
        servo = self.bus.servo(self.arm.gripper.id)
        if servo is None:
            return
        if width is None:
            servo.place_object(None)
            return
        mount, direction, _ = self.geometry[self.arm.gripper.id]
        servo.place_object(mount + direction * jaw_angle(width, jaw_geometry(self.arm)) / RAD_PER_TICK, direction)

    def block(self, servo_id: int, angle: float | None) -> None:
        """Something in a joint's way at ``angle`` (rad), from the side the joint is on now."""
        servo = self.bus.servo(servo_id)
        if servo is None or servo_id not in self.geometry:
            return
        if angle is None:
            servo.place_object(None)
            return
        mount, direction, _ = self.geometry[servo_id]
        raw = mount + direction * angle / RAD_PER_TICK
        servo.place_object(raw, 1 if servo.raw >= raw else -1)

    def stats(self) -> dict:
        self.bus.advance(max(self.bus.clock, time.monotonic()))
        servos = []
        for servo in self.bus.servos:
            mount, direction, _ = self.geometry.get(servo.id, (0.0, 1, (0.0, 0.0)))
            servos.append({
                "id": servo.id, "raw": servo.raw, "angle": direction * (servo.raw - mount) * RAD_PER_TICK,
                "present": servo.present, "goal": servo.get("Goal_Position"),
                "torque": servo.get("Torque_Enable"), "effort": servo.effort, "current": servo.current,
                "temperature": servo.temperature, "voltage": servo.voltage, "velocity": servo.velocity,
                "homing_offset": servo.get("Homing_Offset"), "torque_limit": servo.get("Torque_Limit"),
                "lock": servo.get("Lock"), "silent": servo.silent, "stops": [servo.stops.low, servo.stops.high],
                "object": servo.object, "error": servo.error_byte(),
            })
        return {"servos": servos, "counts": dict(self.bus.counts), "supply": self.bus.supply, "host_baud": self.host_baud()}

    def control(self, line: str) -> None:
        words = line.split()
        if not words:
            return
        command, args = words[0].upper(), words[1:]
        try:
            if command == "STATS":
                print("STATS " + json.dumps(self.stats()), flush=True)
            elif command == "QUIT":
                self.stop = True
            elif command in ("DROP", "CORRUPT"):
                plan = self.bus.faults.drop if command == "DROP" else self.bus.faults.corrupt
                plan[int(args[1]) if len(args) > 1 else None] += int(args[0])
            elif command == "SILENT":
                servo = self.bus.servo(int(args[0]))
                if servo is not None:
                    servo.silent = (args[1] if len(args) > 1 else "1") != "0"
            elif command == "SUPPLY":
                self.bus.advance(time.monotonic())
                self.bus.supply = float(args[0])
            elif command == "TEMP":
                servo = self.bus.servo(int(args[0]))
                if servo is not None:
                    self.bus.advance(time.monotonic())
                    servo.temperature = float(args[1])
            elif command == "HAND":
                servo = self.bus.servo(int(args[0]))
                if servo is not None:
                    self.bus.advance(time.monotonic())
                    fraction = min(1.0, max(0.0, float(args[1])))
                    servo.hand(servo.stops.low + fraction * (servo.stops.high - servo.stops.low))
            elif command == "OBJECT":
                self.bus.advance(time.monotonic())
                self.place_object(None if args[0].lower() == "none" else float(args[0]))
            elif command == "BLOCK":
                self.bus.advance(time.monotonic())
                self.block(int(args[0]), None if args[1].lower() == "none" else float(args[1]))
            elif command == "POWER":
                for servo in self.bus.servos:
                    servo.power_cycle()
            else:
                print(f"ERROR unknown control line {line!r}", file=sys.stderr, flush=True)
        except (IndexError, ValueError) as exc:
            print(f"ERROR control line {line!r}: {exc}", file=sys.stderr, flush=True)

    # ------------------------------------------------------------------ the loop

    def run(self) -> None:
        lines = control_lines(sys.stdin)
        while not self.stop:
            wait = IDLE_WAIT if not self.due else max(0.0, min(IDLE_WAIT, self.due[0][0] - time.monotonic()))
            # select(), not a selector: epoll rounds its timeout up to whole milliseconds, and the
            # answers are due in microseconds
            watched = [self.master] + ([lines.fileno()] if lines is not None else [])
            try:
                readable, _, _ = select.select(watched, [], [], wait)
            except InterruptedError:
                continue
            if self.master in readable:
                self._from_host()
            if lines is not None and lines.fileno() in readable:
                got = lines.read()
                if got is None:
                    if lines.ends_run:
                        self.stop = True
                    lines = None
                else:
                    for line in got:
                        self.control(line)
            self._to_host()

    def _from_host(self) -> None:
        try:
            data = os.read(self.master, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # EIO: no one holds the line's other end right now
            time.sleep(0.01)
            return
        if data:
            for due, packet in self.bus.receive(data, time.monotonic(), self.host_baud()):
                self.sequence += 1
                heapq.heappush(self.due, (due, self.sequence, packet))

    def _to_host(self) -> None:
        now = time.monotonic()
        while self.due and self.due[0][0] <= now:
            _, _, packet = heapq.heappop(self.due)
            try:
                os.write(self.master, packet)
            except OSError:
                pass  # nobody reads: the bytes are lost, as on a bus with no host

    def close(self) -> None:
        self.port.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    options = parser()
    args = options.parse_args(argv)
    try:
        firmware_versions(args.firmware)
    except ValueError:
        options.error("--firmware takes MAJOR.MINOR or ID:MAJOR.MINOR")
    if not 0.0 <= args.supply <= 30.0:
        options.error("--supply must be 0..30 V")
    try:
        program = Program(args)
    except Exception as exc:  # an arm file or model that cannot be used: one line, not a traceback
        print(f"robohal sim feetech: {exc}", file=sys.stderr)
        return 2

    def on_signal(signum: int, frame: object) -> None:
        program.stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    wake_on_time()
    try:
        announce_ready(program.uri(args.arm))
        program.run()
    except BrokenPipeError:
        pass
    finally:
        program.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
