"""A Feetech arm's configuration: the arm file (:mod:`robohal.plugins.arm_files`) read for this bus.

The file names the model and each joint's servo; the Feetech tables say how fast the bus runs,
which servos and firmware it expects, the gripper servo and its limits, the stall protection,
and the voltage and temperature bounds (see ``arms/so101.toml``, the bundled SO-101). Every
value is checked here, once, with the file and key named; the backend, the simulator and the
calibration take a :class:`FeetechArm`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robohal.errors import InvalidArgument
from robohal.plugins.arm_files import ArmFile, ArmJoint, find_arm_file

from .registers import BAUD_CODES, MODEL_NUMBER_STS3215

BUNDLED = Path(__file__).parent / "arms"
DEFAULT_ARM = "so101"
STALL_ACTIONS = ("hold", "release")
BUS_KEYS = ("baud", "model_number", "min_firmware")
GRIPPER_KEYS = ("id", "direction", "jaw_length", "torque_limit", "current_limit", "hold_torque", "stall")
PROTECTION_KEYS = ("torque_limit", "stall_current", "stall_error", "stall_time", "stall", "hold_torque")
BOUND_KEYS = ("warn_below", "fault_below", "warn_above", "fault_above")


@dataclass(frozen=True)
class StallRule:
    """When a servo has stalled (above ``current`` A, ``error`` rad from its goal, for ``time`` s)
    and what is done then: ``hold`` where it is at ``hold_torque`` of the stall torque, or ``release``."""

    current: float
    error: float
    time: float
    action: str
    hold_torque: float


@dataclass(frozen=True)
class GripperServo:
    """The jaw's servo: its id and direction, the jaw's length (m), and the limits set at connect."""

    id: int
    direction: int
    jaw_length: float
    torque_limit: float
    current_limit: float
    stall: StallRule


@dataclass(frozen=True)
class Bounds:
    """Warning and fault bounds of a measured quantity (None: none on that side)."""

    warn_below: float | None = None
    fault_below: float | None = None
    warn_above: float | None = None
    fault_above: float | None = None

    def judge(self, value: float) -> str | None:
        """``"fault"``, ``"warn"`` or None for a measured ``value``."""
        if (self.fault_below is not None and value < self.fault_below) or \
                (self.fault_above is not None and value > self.fault_above):
            return "fault"
        if (self.warn_below is not None and value < self.warn_below) or \
                (self.warn_above is not None and value > self.warn_above):
            return "warn"
        return None


@dataclass(frozen=True)
class FeetechArm:
    file: ArmFile
    baud: int
    model_number: int
    min_firmware: tuple[int, int]
    joints: tuple[ArmJoint, ...]
    gripper: GripperServo | None
    torque_limit: float
    stall: StallRule
    voltage: Bounds
    temperature: Bounds

    @property
    def name(self) -> str:
        return self.file.name

    @property
    def model(self) -> str:
        return self.file.model

    @property
    def ids(self) -> tuple[int, ...]:
        """Every servo on the bus: the arm's joints, then the gripper's."""
        return tuple(j.id for j in self.joints) + ((self.gripper.id,) if self.gripper else ())

    def label(self, servo_id: int) -> str:
        """``servo 3 (elbow_flex)``: how messages name a servo."""
        for joint in self.joints:
            if joint.id == servo_id:
                return f"servo {servo_id} ({joint.name})"
        if self.gripper is not None and self.gripper.id == servo_id:
            return f"servo {servo_id} (gripper)"
        return f"servo {servo_id}"


def _number(table: Any, key: str, default: float, where: str, low: float = 0.0, high: float = float("inf")) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise InvalidArgument(f"{where}: {key} must be a number in {low:g}..{high:g}, got {value!r}")
    return float(value)


def _stall(table: Any, where: str, defaults: StallRule) -> StallRule:
    action = table.get("stall", defaults.action)
    if action not in STALL_ACTIONS:
        raise InvalidArgument(f"{where}: stall must be one of {', '.join(STALL_ACTIONS)}, got {action!r}")
    return StallRule(_number(table, "stall_current", defaults.current, where, 0.0, 10.0),
                     _number(table, "stall_error", defaults.error, where, 0.0, 3.2),
                     _number(table, "stall_time", defaults.time, where, 0.0, 60.0), action,
                     _number(table, "hold_torque", defaults.hold_torque, where, 0.0, 1.0))


def _bounds(table: Any, where: str) -> Bounds:
    values = {key: (None if key not in table else _number(table, key, 0.0, where, -1e3, 1e3)) for key in BOUND_KEYS}
    return Bounds(**values)


def _firmware(text: Any, where: str) -> tuple[int, int]:
    try:
        major, minor = str(text).split(".")
        return int(major), int(minor)
    except ValueError:
        raise InvalidArgument(f"{where}: min_firmware must be 'MAJOR.MINOR', got {text!r}") from None


DEFAULT_STALL = StallRule(current=1.0, error=0.08, time=0.4, action="hold", hold_torque=0.5)


def feetech_arm(file: ArmFile) -> FeetechArm:
    """The Feetech reading of an arm file (every key checked, the file named in each refusal)."""
    bus = file.table("bus", BUS_KEYS)
    where = f"{file.path} [bus]"
    baud = bus.get("baud", 1_000_000)
    if baud not in BAUD_CODES:
        raise InvalidArgument(f"{where}: baud {baud!r} is not one the servos take: {', '.join(map(str, BAUD_CODES))}")
    model_number = int(_number(bus, "model_number", MODEL_NUMBER_STS3215, where, 0, 65535))
    min_firmware = _firmware(bus.get("min_firmware", "0.0"), where)
    for joint in file.joints:
        if not 0 <= joint.id <= 252:
            raise InvalidArgument(f"{file.path}: joint {joint.name}: servo ids are 0..252, got {joint.id}")
    protection = file.table("protection", PROTECTION_KEYS)
    where = f"{file.path} [protection]"
    stall = _stall(protection, where, DEFAULT_STALL)
    torque_limit = _number(protection, "torque_limit", 1.0, where, 0.0, 1.0)
    gripper = None
    if "gripper" in file.tables:
        table = file.table("gripper", GRIPPER_KEYS)
        where = f"{file.path} [gripper]"
        servo_id = table.get("id")
        if isinstance(servo_id, bool) or not isinstance(servo_id, int) or not 0 <= servo_id <= 252:
            raise InvalidArgument(f"{where}: id must be the jaw servo's id, 0..252, got {servo_id!r}")
        if servo_id in file.ids:
            raise InvalidArgument(f"{where}: id {servo_id} already drives a joint")
        direction = table.get("direction", 1)
        if direction not in (1, -1) or isinstance(direction, bool):
            raise InvalidArgument(f"{where}: direction must be 1 or -1, got {direction!r}")
        gripper = GripperServo(servo_id, direction, _number(table, "jaw_length", 0.075, where, 0.001, 1.0),
                               _number(table, "torque_limit", 0.5, where, 0.0, 1.0),
                               _number(table, "current_limit", 1.2, where, 0.0, 10.0),
                               _stall(table, where, StallRule(1.0, 0.08, 0.2, "hold", 0.3)))
    return FeetechArm(file, baud, model_number, min_firmware, file.joints, gripper, torque_limit, stall,
                      _bounds(file.table("power", BOUND_KEYS), f"{file.path} [power]"),
                      _bounds(file.table("temperature", BOUND_KEYS), f"{file.path} [temperature]"))


def load_arm(name_or_path: str = DEFAULT_ARM) -> FeetechArm:
    """``arm=`` of a URI: a file, or a name in the user's arm folders or among the bundled arms."""
    return feetech_arm(find_arm_file(name_or_path, bundled=(BUNDLED,)))
