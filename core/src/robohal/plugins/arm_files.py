"""Arm files: a servo arm described completely in one TOML file, no Python.

An arm file says what the arm is (its kinematic model), how it is wired (which pin drives which
joint, the gripper's servo, a power pin) and how each servo is calibrated (its pulse at 0 rad,
direction, microseconds per radian and pulse limits); ``robohal arm new NAME`` writes a
commented one (:func:`template`). It is found, like a model file, in the folders of
``ROBOHAL_MODEL_PATH`` and ``~/.config/robohal/models``, and then among the arm files a plugin
ships (robohal_arduino_planar's ``arms/``: the MeArm and the Braccio); the first file with a name
wins, so a copy in your folder (a calibrated one) stands in for a bundled arm. Each arm registers
its model as ``arm.NAME`` (the core's plugin registers the user's arms, a plugin its own, minus
the names a user's file takes: :func:`arm_model_specs`); a URI's ``arm=NAME`` picks the file and
its model.

The format belongs to no board: the Arduino plugin drives the arm's servos by pin over its own
firmware or StandardFirmata. A bus-servo arm (robohal_feetech's SO-101) gives each servo an ``id``
on its bus instead of a pin, and no pulse widths (the servo reports its own position; its
calibration is the plugin's); its file may name a model a plugin registers (``kind = "model"``,
whose limits and speeds the joints then take unless they narrow them), and says what the bus and
its servos' protection are: ``[bus]`` (baud rate, model number, firmware), ``[protection]``
(torque limit and stall rule), the gripper's limits, and the supply's and temperature's bounds
(``[power]``, ``[temperature]``), which such servos report.
:func:`read_arm_file` checks everything a file says before anything can move, and refuses a bad
file in one line naming the file, the key and the problem: a joint without a pin (or id), two
joints on one pin, a pulse range past the servo's, limits outside the model's range or the servo's.

Units are SI and radians, as everywhere in robohal; pulse widths are microseconds.
"""

from __future__ import annotations

import copy
import logging
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument, PluginError, UnknownNameError
from ..kinematics import DHChain, JointLimits, Kinematics, Parallelogram, PlanarTwoLink, UrdfChain
from ..kinematics.vertical_plane import VerticalPlaneArm
from .model_files import model_dirs
from .records import ModelSpec


def _no_registry(name: str) -> Kinematics:
    raise PluginError(f"an arm file names the registered model {name!r}, but no plugin registry is loaded")


#: builds a registered model by name for ``kind = "model"`` arm files. The registry sets it when it
#: loads (robohal.plugins.registry): this module cannot import the registry, which reads arm files.
registered_model: Any = _no_registry

log = logging.getLogger(__name__)

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover (Python 3.10)
    import tomli as tomllib

#: registered model names are ``arm.NAME``
MODEL_PREFIX = "arm."
#: what a hobby servo takes when the file does not say (our choice: the range most hobby servos
#: accept, and the firmware's absolute envelope, robohal_arduino_planar PROTOCOL.md)
DEFAULT_SERVO_RANGE_US = (500, 2500)
#: full speed in this long, full acceleration in this long (our choice, as the planar arm's
#: model: a hobby servo gets up to speed in about 0.2 s)
ACCELERATION_TIME = 0.2
JERK_TIME = 0.05
#: the SG90 datasheet's 0.1 s/60 deg, the default top speed (rad/s) of a joint
DEFAULT_SPEED = math.radians(60.0) / 0.1
MODEL_KINDS = ("vertical-plane", "planar2", "dh", "urdf", "model")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_]*$")
# The keys each table takes; anything else is refused (a misspelt key must not fall back unseen).
TOP_KEYS = ("arm", "model", "joints", "gripper", "power", "servo", "bus", "protection", "temperature")
ARM_KEYS = ("name", "description")
MODEL_KEYS = {
    "vertical-plane": ("kind", "links", "base_height", "reach_offset", "elbow_from_horizontal", "zero", "tool",
                       "tool_length"),
    "planar2": ("kind", "links"),
    "dh": ("kind", "a", "d", "alpha", "offsets", "modified", "parallelogram"),
    "urdf": ("kind", "urdf", "base_link", "tip_link", "parallelogram"),
    "model": ("kind", "name"),  # a registered model (a plugin's), by name
}
SERVO_FIELDS = ("offset_us", "direction", "scale_us_per_rad", "min_us", "max_us")
JOINT_KEYS = ("name", "pin", "id", "lower", "upper", "speed", *SERVO_FIELDS)
GRIPPER_KEYS = ("pin", "min_us", "max_us", "open_us", "closed_us", "width", "speed")
BOUND_KEYS = ("warn_below", "fault_below", "warn_above", "fault_above")
POWER_KEYS = ("pin", "soft_start", *BOUND_KEYS)
SERVO_KEYS = ("min_us", "max_us")
# A bus servo's tables (an arm whose joints have ids)
BUS_KEYS = ("baud", "model_number", "min_firmware")
STALL_KEYS = ("stall_current", "stall_error", "stall_time", "stall", "hold_torque")
PROTECTION_KEYS = ("torque_limit", *STALL_KEYS)
BUS_GRIPPER_KEYS = ("id", "direction", "jaw_length", "torque_limit", "current_limit", *STALL_KEYS)
BUS_ONLY = ("bus", "protection", "temperature")
STALL_ACTIONS = ("hold", "release")


@dataclass(frozen=True)
class ServoPulses:
    """How one hobby servo's pulse width stands for its joint angle:
    ``width_us = offset_us + direction * scale_us_per_rad * q``, within ``min_us..max_us``."""

    offset_us: float = 1500.0
    direction: int = 1
    scale_us_per_rad: float = 1000.0 / math.pi
    min_us: int = 1000
    max_us: int = 2000

    def width(self, q: float) -> float:
        """The pulse (us, unrounded) for angle ``q`` (rad)."""
        return self.offset_us + self.direction * self.scale_us_per_rad * float(q)

    def angle(self, width_us: float) -> float:
        """The angle (rad) a pulse (us) stands for."""
        return (float(width_us) - self.offset_us) / (self.direction * self.scale_us_per_rad)


@dataclass(frozen=True)
class ArmJoint:
    """One joint: its servo's pin (a hobby servo) or id (a bus servo), its range (rad), top speed
    (rad/s), and a hobby servo's pulses or a bus servo's direction (+1 or -1: which way the
    servo's positions turn the joint)."""

    name: str
    pin: int | None
    lower: float
    upper: float
    speed: float
    pulses: ServoPulses | None
    id: int | None = None
    direction: int = 1


@dataclass(frozen=True)
class ArmGripper:
    """The gripper's servo: its pin, pulse limits, the pulses that open and close it, the
    opening (m) at ``open_us`` and how fast the servo turns (rad/s)."""

    pin: int
    min_us: int
    max_us: int
    open_us: int
    closed_us: int
    width: float
    speed: float


@dataclass(frozen=True)
class StallRule:
    """When a bus servo has stalled (above ``current`` A, ``error`` rad from its goal, for
    ``time`` s) and what is done then: ``hold`` where it is at ``hold_torque`` of the stall
    torque, or ``release`` (torque off)."""

    current: float
    error: float
    time: float
    action: str
    hold_torque: float


#: a servo's stall rule when the file gives none (our choice: an STS3215 draws well under 1 A
#: moving an SO-101's links, 0.08 rad is 50 ticks, and 0.4 s is longer than any move's transient)
DEFAULT_STALL = StallRule(current=1.0, error=0.08, time=0.4, action="hold", hold_torque=0.5)
#: the gripper's: it stalls on every part it grasps, so it is found sooner and held more gently
DEFAULT_GRIPPER_STALL = StallRule(current=1.0, error=0.08, time=0.2, action="hold", hold_torque=0.3)


@dataclass(frozen=True)
class BusGripper:
    """A bus servo working the gripper's jaw: its id and direction, the jaw's length (m, pivot to
    tip), the torque (of the stall torque) and current (A) limits set at connect, its stall rule."""

    id: int
    direction: int
    jaw_length: float
    torque_limit: float
    current_limit: float
    stall: StallRule


@dataclass(frozen=True)
class ServoBus:
    """A bus-servo arm's bus: its baud rate, the model number every servo must report and the
    oldest firmware (major, minor) taken; None where the file leaves it to the plugin."""

    baud: int | None = None
    model_number: int | None = None
    min_firmware: tuple[int, int] | None = None


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
class PowerPin:
    """A pin that switches the servos' supply on (high), softly where ``soft_start`` (the
    Braccio shield's pin 12)."""

    pin: int
    soft_start: bool = False


@dataclass(frozen=True)
class ArmFile:
    """One arm file, read and checked (see the module docstring)."""

    path: Path
    name: str
    description: str
    model: Mapping[str, Any]
    joints: tuple[ArmJoint, ...]
    gripper: ArmGripper | BusGripper | None
    power: PowerPin | None
    servo_range_us: tuple[int, int]
    #: a bus-servo arm's (None: a hobby-servo arm, driven by pins)
    bus: ServoBus | None = None
    torque_limit: float = 1.0  # the joints' servos' torque limit, of their stall torque (a bus servo's)
    stall: StallRule = DEFAULT_STALL
    supply: Bounds = Bounds()  # V: the servos' supply, as they report it
    temperature: Bounds = Bounds()  # degC, as the servos report it

    @property
    def model_name(self) -> str:
        return MODEL_PREFIX + self.name

    @property
    def pins(self) -> tuple[int, ...]:
        """Every servo pin: the joints' in order, then the gripper's (a hobby-servo arm)."""
        return tuple(j.pin for j in self.joints if j.pin is not None) + \
            ((self.gripper.pin,) if isinstance(self.gripper, ArmGripper) else ())

    @property
    def ids(self) -> tuple[int, ...]:
        """Every servo id: the joints' in order, then the gripper's (a bus-servo arm)."""
        return tuple(j.id for j in self.joints if j.id is not None) + \
            ((self.gripper.id,) if isinstance(self.gripper, BusGripper) else ())

    def limits(self) -> JointLimits:
        speed = np.array([j.speed for j in self.joints])
        return JointLimits(lower=[j.lower for j in self.joints], upper=[j.upper for j in self.joints],
                           velocity=speed, acceleration=speed / ACCELERATION_TIME,
                           jerk=speed / ACCELERATION_TIME / JERK_TIME)

    def build(self) -> Kinematics:
        """The arm's model, with the joint limits of this file."""
        return _build(self.model, self.limits(), self.path)

    def spec(self) -> ModelSpec:
        return ModelSpec(self.model_name, factory=self.build, dof=len(self.joints),
                         description=self.description or f"servo arm from {self.path.name}", tags=("arm", "servo"),
                         source=str(self.path))


# Reading -----------------------------------------------------------------------------------------


class _Checker:
    """Refusals in one line: the file, the key, the problem."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, key: str, problem: str) -> InvalidArgument:
        return InvalidArgument(f"{self.path}: {key}: {problem}")

    def table(self, value: Any, key: str, known: tuple[str, ...]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(key, f"must be a table, got {value!r:.60}")
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise self.fail(f"{key}.{unknown[0]}", f"unknown key; {key} takes {', '.join(known)}")
        return value

    def number(self, table: Mapping[str, Any], key: str, where: str, default: Any = None, *,
               positive: bool = False, whole: bool = False) -> Any:
        if key not in table:
            if default is None:
                raise self.fail(f"{where}.{key}", "missing")
            return default
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(f"{where}.{key}", f"must be a finite number, got {value!r:.60}")
        if whole and value != int(value):
            raise self.fail(f"{where}.{key}", f"must be a whole number, got {value!r}")
        if positive and value <= 0:
            raise self.fail(f"{where}.{key}", f"must be positive, got {value!r}")
        return int(value) if whole else float(value)

    def numbers(self, table: Mapping[str, Any], key: str, where: str, count: int | None = None,
                default: Any = None) -> list[float]:
        if key not in table:
            if default is None:
                raise self.fail(f"{where}.{key}", "missing")
            return list(default)
        value = table[key]
        if (not isinstance(value, list) or (count is not None and len(value) != count)
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)):
            wanted = f"{count} numbers" if count is not None else "a list of numbers"
            raise self.fail(f"{where}.{key}", f"must be {wanted}, got {value!r:.60}")
        return [float(v) for v in value]

    def optional(self, table: Mapping[str, Any], key: str, where: str, low: float, high: float, *,
                 whole: bool = False) -> Any:
        """``table[key]`` within ``low..high``, or None where the table leaves it out."""
        if key not in table:
            return None
        value = self.number(table, key, where, whole=whole)
        if not low <= value <= high:
            raise self.fail(f"{where}.{key}", f"must be in {low:g}..{high:g}, got {value!r}")
        return value

    def servo_id(self, table: Mapping[str, Any], where: str) -> int:
        if "id" not in table:
            raise self.fail(f"{where}.id", "missing: which servo id drives it?")
        servo_id = table["id"]
        if isinstance(servo_id, bool) or not isinstance(servo_id, int) or not 0 <= servo_id <= 253:
            raise self.fail(f"{where}.id", f"must be a servo id (0..253), got {servo_id!r:.40}")
        return servo_id

    def direction(self, table: Mapping[str, Any], where: str) -> int:
        direction = self.number(table, "direction", where, 1, whole=True)
        if direction not in (1, -1):
            raise self.fail(f"{where}.direction", f"must be +1 or -1, got {direction}")
        return direction

    def pin(self, table: Mapping[str, Any], where: str) -> int:
        if "pin" not in table:
            raise self.fail(f"{where}.pin", "missing: which pin drives it?")
        pin = table["pin"]
        if isinstance(pin, bool) or not isinstance(pin, int) or pin < 0:
            raise self.fail(f"{where}.pin", f"must be a pin number (0 or more), got {pin!r:.40}")
        return pin


def read_arm_file(path: str | os.PathLike) -> ArmFile:
    """Read and check one arm file; :class:`~robohal.errors.InvalidArgument` names the file, the
    key and the problem in one line."""
    path = Path(path)
    check = _Checker(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidArgument(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"{path}: not valid TOML: {exc}") from None
    unknown = sorted(set(data) - set(TOP_KEYS))
    if unknown:
        raise check.fail(unknown[0], f"unknown table; an arm file has {', '.join(TOP_KEYS)}")
    for table in ("arm", "model", "joints"):
        if table not in data:
            raise check.fail(table, "missing")
    arm = check.table(data["arm"], "arm", ARM_KEYS)
    name = arm.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise check.fail("arm.name", f"must be lower-case letters, digits and _ (it names model arm.NAME), got {name!r:.40}")
    description = arm.get("description", "")
    if not isinstance(description, str):
        raise check.fail("arm.description", "must be a string")
    servo = check.table(data.get("servo", {}), "servo", SERVO_KEYS)
    servo_range = (check.number(servo, "min_us", "servo", DEFAULT_SERVO_RANGE_US[0], whole=True),
                   check.number(servo, "max_us", "servo", DEFAULT_SERVO_RANGE_US[1], whole=True))
    if not 0 < servo_range[0] < servo_range[1]:
        raise check.fail("servo", f"min_us..max_us must be increasing pulse widths, got {servo_range}")
    model = _model_table(check, data["model"])
    if not isinstance(data["joints"], list) or not data["joints"]:
        raise check.fail("joints", "must be one [[joints]] table per joint, base first")
    # a bus-servo arm: its joints' servos have ids on a bus, not pins
    on_bus = any(isinstance(raw, Mapping) and "id" in raw for raw in data["joints"])
    if not on_bus:
        for table in BUS_ONLY:
            if table in data:
                raise check.fail(table, "only a bus-servo arm (joints with an id) has this table")
    own = _registered(check, model) if model["kind"] == "model" else None
    pins: dict[int, str] = {}
    noun = "id" if on_bus else "pin"

    def claim(pin: int, key: str, who: str) -> None:
        if pin in pins:
            raise check.fail(key, f"{noun} {pin} is already {pins[pin]}'s: one {noun} drives one servo")
        pins[pin] = who

    joints = []
    for index, raw in enumerate(data["joints"]):
        where = f"joints[{index}]"
        table = check.table(raw, where, JOINT_KEYS)
        joint_name = table.get("name", f"joint {index + 1}")
        if not isinstance(joint_name, str) or not joint_name:
            raise check.fail(f"{where}.name", "must be a string")
        pin, servo_id, pulses, direction = None, None, None, 1
        if on_bus:
            for key in ("pin", *SERVO_FIELDS):
                if key in table and key != "direction":
                    raise check.fail(f"{where}.{key}", "a bus servo takes an id, not a pin or pulse widths"
                                     " (it reports its own position)")
            servo_id = check.servo_id(table, where)
            claim(servo_id, f"{where}.id", f"{where} ({joint_name})")
            direction = check.direction(table, where)
        else:
            pin = check.pin(table, where)
            claim(pin, f"{where}.pin", f"{where} ({joint_name})")
            pulses = _pulses(check, table, where, servo_range)
            direction = pulses.direction
        # a registered model's own limits and speeds, unless the file narrows them
        lower = check.number(table, "lower", where, None if own is None else float(own.limits.lower[index]))
        upper = check.number(table, "upper", where, None if own is None else float(own.limits.upper[index]))
        if not lower < upper:
            raise check.fail(f"{where}.lower", f"{lower:g} rad must be below upper, {upper:g} rad")
        for key, q in (("lower", lower), ("upper", upper)):
            # a URDF's and a registered model's own ranges: _check_model
            if model["kind"] not in ("urdf", "model") and not -math.pi <= q <= math.pi:
                raise check.fail(f"{where}.{key}", f"{q:g} rad is outside the model's range -pi..pi")
        for key, q in (("lower", lower), ("upper", upper)) if pulses else ():
            width = pulses.width(q)
            if not pulses.min_us - 0.5 <= width <= pulses.max_us + 0.5:
                raise check.fail(f"{where}.{key}", f"{q:g} rad ({math.degrees(q):.1f} deg) needs {width:.0f} us,"
                                 f" outside the servo's pulse limits {pulses.min_us}..{pulses.max_us} us")
        default_speed = DEFAULT_SPEED if own is None or index >= own.dof else float(own.limits.velocity[index])
        speed = check.number(table, "speed", where, default_speed, positive=True)
        joints.append(ArmJoint(joint_name, pin, lower, upper, speed, pulses, servo_id, direction))
    gripper: ArmGripper | BusGripper | None = None
    if "gripper" in data and on_bus:
        table = check.table(data["gripper"], "gripper", BUS_GRIPPER_KEYS)
        servo_id = check.servo_id(table, "gripper")
        claim(servo_id, "gripper.id", "the gripper")
        gripper = BusGripper(servo_id, check.direction(table, "gripper"),
                             jaw_length=check.number(table, "jaw_length", "gripper", 0.075, positive=True),
                             torque_limit=_fraction(check, table, "torque_limit", "gripper", 0.5),
                             current_limit=check.number(table, "current_limit", "gripper", 1.2, positive=True),
                             stall=_stall(check, table, "gripper", DEFAULT_GRIPPER_STALL))
    elif "gripper" in data:
        table = check.table(data["gripper"], "gripper", GRIPPER_KEYS)
        pin = check.pin(table, "gripper")
        claim(pin, "gripper.pin", "the gripper")
        gripper = _gripper(check, table, pin, servo_range)
    power, supply = None, Bounds()
    if "power" in data:
        table = check.table(data["power"], "power", POWER_KEYS if on_bus else ("pin", "soft_start"))
        if "pin" in table or not on_bus:  # a bus-servo arm's [power] may give only the supply's bounds
            pin = check.pin(table, "power")
            if not on_bus:  # (a bus-servo arm's ids are no pins)
                claim(pin, "power.pin", "the power switch")
            soft = table.get("soft_start", False)
            if not isinstance(soft, bool):
                raise check.fail("power.soft_start", "must be true or false")
            power = PowerPin(pin, soft)
        supply = _bounds(check, table, "power")
    bus_servos = {}
    if on_bus:
        bus = check.table(data.get("bus", {}), "bus", BUS_KEYS)
        protection = check.table(data.get("protection", {}), "protection", PROTECTION_KEYS)
        bus_servos = dict(
            bus=ServoBus(check.optional(bus, "baud", "bus", 1, 1e8, whole=True),
                         check.optional(bus, "model_number", "bus", 0, 65535, whole=True),
                         _firmware(check, bus)),
            torque_limit=_fraction(check, protection, "torque_limit", "protection", 1.0),
            stall=_stall(check, protection, "protection", DEFAULT_STALL),
            temperature=_bounds(check, check.table(data.get("temperature", {}), "temperature", BOUND_KEYS),
                                "temperature"))
    found = ArmFile(path=path, name=name, description=description, model=model, joints=tuple(joints),
                    gripper=gripper, power=power, servo_range_us=servo_range, supply=supply, **bus_servos)
    _check_model(check, found)
    return found


def _fraction(check: _Checker, table: Mapping[str, Any], key: str, where: str, default: float) -> float:
    """A share of a servo's stall torque, 0..1."""
    value = check.optional(table, key, where, 0.0, 1.0)
    return default if value is None else value


def _stall(check: _Checker, table: Mapping[str, Any], where: str, defaults: StallRule) -> StallRule:
    action = table.get("stall", defaults.action)
    if action not in STALL_ACTIONS:
        raise check.fail(f"{where}.stall", f"must be one of {', '.join(STALL_ACTIONS)}, got {action!r:.40}")
    given = {key: check.optional(table, key, where, 0.0, high)
             for key, high in (("stall_current", 10.0), ("stall_error", math.pi), ("stall_time", 60.0))}
    return StallRule(current=defaults.current if given["stall_current"] is None else given["stall_current"],
                     error=defaults.error if given["stall_error"] is None else given["stall_error"],
                     time=defaults.time if given["stall_time"] is None else given["stall_time"], action=action,
                     hold_torque=_fraction(check, table, "hold_torque", where, defaults.hold_torque))


def _bounds(check: _Checker, table: Mapping[str, Any], where: str) -> Bounds:
    return Bounds(**{key: check.optional(table, key, where, -1e3, 1e3) for key in BOUND_KEYS})


def _firmware(check: _Checker, bus: Mapping[str, Any]) -> tuple[int, int] | None:
    if "min_firmware" not in bus:
        return None
    text = bus["min_firmware"]
    match = re.fullmatch(r"(\d+)\.(\d+)", text) if isinstance(text, str) else None
    if match is None:
        raise check.fail("bus.min_firmware", f"must be \"MAJOR.MINOR\", got {text!r:.40}")
    return int(match[1]), int(match[2])


def _registered(check: _Checker, table: Mapping[str, Any]) -> Kinematics:
    """The registered model ``kind = "model"`` names (a plugin's: see ``robohal models``)."""
    name = table.get("name")
    if not isinstance(name, str) or not name:
        raise check.fail("model.name", "missing: which registered model (robohal models)?")
    if name.startswith(MODEL_PREFIX):
        raise check.fail("model.name", f"{name} is an arm file's model; name the model it is built on")
    try:
        return registered_model(name)
    except (UnknownNameError, PluginError) as exc:
        raise check.fail("model.name", str(exc)) from None


def _pulses(check: _Checker, table: Mapping[str, Any], where: str, servo_range: tuple[int, int]) -> ServoPulses:
    low, high = servo_range
    defaults = ServoPulses()
    pulses = ServoPulses(
        offset_us=check.number(table, "offset_us", where, defaults.offset_us),
        direction=check.number(table, "direction", where, defaults.direction, whole=True),
        scale_us_per_rad=check.number(table, "scale_us_per_rad", where, defaults.scale_us_per_rad, positive=True),
        min_us=check.number(table, "min_us", where, defaults.min_us, whole=True),
        max_us=check.number(table, "max_us", where, defaults.max_us, whole=True))
    if pulses.direction not in (1, -1):
        raise check.fail(f"{where}.direction", f"must be +1 or -1, got {pulses.direction}")
    for key in ("min_us", "max_us", "offset_us"):
        value = getattr(pulses, key)
        if not low <= value <= high:
            raise check.fail(f"{where}.{key}", f"{value:g} us is past the servo's {low}..{high} us"
                             " (the [servo] table says what your servos take)")
    if not pulses.min_us < pulses.max_us:
        raise check.fail(f"{where}.min_us", f"{pulses.min_us} us must be below max_us, {pulses.max_us} us")
    return pulses


def _gripper(check: _Checker, table: Mapping[str, Any], pin: int, servo_range: tuple[int, int]) -> ArmGripper:
    low, high = servo_range
    values = {key: check.number(table, key, "gripper", whole=True) for key in ("min_us", "max_us", "open_us", "closed_us")}
    for key, value in values.items():
        if not low <= value <= high:
            raise check.fail(f"gripper.{key}", f"{value} us is past the servo's {low}..{high} us")
    if not values["min_us"] < values["max_us"]:
        raise check.fail("gripper.min_us", "must be below max_us")
    for key in ("open_us", "closed_us"):
        if not values["min_us"] <= values[key] <= values["max_us"]:
            raise check.fail(f"gripper.{key}", f"{values[key]} us lies outside its pulse limits"
                             f" {values['min_us']}..{values['max_us']} us")
    if values["open_us"] == values["closed_us"]:
        raise check.fail("gripper.closed_us", "must differ from open_us")
    width = check.number(table, "width", "gripper", positive=True)
    speed = check.number(table, "speed", "gripper", DEFAULT_SPEED, positive=True)
    return ArmGripper(pin, width=width, speed=speed, **values)


def _model_table(check: _Checker, value: Any) -> Mapping[str, Any]:
    kind = value.get("kind") if isinstance(value, Mapping) else None
    if kind not in MODEL_KINDS:
        raise check.fail("model.kind", f"must be one of {', '.join(MODEL_KINDS)}, got {kind!r:.40}")
    table = check.table(value, "model", MODEL_KEYS[kind])
    if kind == "vertical-plane":
        check.numbers(table, "links", "model", 2)
    elif kind == "planar2":
        check.numbers(table, "links", "model", 2)
    elif kind == "dh":
        for key in ("a", "d", "alpha"):
            check.numbers(table, key, "model")
    elif kind == "urdf":
        for key in ("urdf", "base_link", "tip_link"):
            if not isinstance(table.get(key), str):
                raise check.fail(f"model.{key}", "missing")
    if "parallelogram" in table:
        check.table(table["parallelogram"], "model.parallelogram", ("driven", "coupled", "scaling"))
    return dict(table)


def _check_model(check: _Checker, arm: ArmFile) -> None:
    """Build the model once: its joint count must be the file's, and the file's limits must lie
    inside the model's own range (a URDF's limits, else a full turn either way)."""
    kind = arm.model["kind"]
    if kind in ("urdf", "model"):
        inner = _inner_model(arm.model, arm.path)
        if inner.dof != len(arm.joints):
            raise check.fail("joints", f"{len(arm.joints)} joints, but the model has {inner.dof}")
        names = getattr(inner, "joint_names", None)
        if kind == "model" and names and tuple(names) != tuple(j.name for j in arm.joints):
            raise check.fail("joints", f"name {', '.join(j.name for j in arm.joints)}; the model"
                             f" {arm.model['name']} has {', '.join(names)}, in that order")
        own = inner.limits
        lower, upper = own.lower, own.upper
    else:
        lower, upper = np.full(len(arm.joints), -math.pi), np.full(len(arm.joints), math.pi)
    for index, joint in enumerate(arm.joints):
        for key, q in (("lower", joint.lower), ("upper", joint.upper)):
            if not lower[index] - 1e-9 <= q <= upper[index] + 1e-9:
                raise check.fail(f"joints[{index}].{key}", f"{q:g} rad is outside the model's range"
                                 f" {lower[index]:g}..{upper[index]:g} rad for joint {index + 1}")
    try:
        model = arm.build()
    except (InvalidArgument, PluginError) as exc:
        raise check.fail("model", str(exc)) from None
    if model.dof != len(arm.joints):
        raise check.fail("joints", f"{len(arm.joints)} joints, but the {kind} model has {model.dof}")


def _inner_model(table: Mapping[str, Any], path: Path) -> Kinematics:
    if table["kind"] == "model":
        return _registered(_Checker(path), table)
    urdf = (path.parent / table["urdf"]).resolve()
    try:
        return UrdfChain.from_urdf(urdf, table["base_link"], table["tip_link"])
    except InvalidArgument as exc:
        raise InvalidArgument(f"{path}: model.urdf: {exc}") from None


def _build(table: Mapping[str, Any], limits: JointLimits, path: Path) -> Kinematics:
    kind = table["kind"]
    if kind == "vertical-plane":
        return VerticalPlaneArm(limits.dof, table["links"], base_height=table.get("base_height", 0.0),
                                reach_offset=table.get("reach_offset", 0.0),
                                elbow_from_horizontal=table.get("elbow_from_horizontal", False),
                                zero=table.get("zero"), tool=table.get("tool", (0.0, 0.0)),
                                tool_length=table.get("tool_length", 0.0), limits=limits)
    if kind == "planar2":
        model: Kinematics = PlanarTwoLink(*table["links"], limits=limits)
    elif kind == "dh":
        model = DHChain(table["a"], table["d"], table["alpha"], table.get("offsets", 0.0),
                                    modified=bool(table.get("modified", False)), limits=limits)
    else:
        model = copy.copy(_inner_model(table, path))
        try:
            model.limits = limits
        except AttributeError:
            raise InvalidArgument(f"{path}: model: the limits of {type(model).__name__} cannot be narrowed") from None
    if "parallelogram" in table:
        link = table["parallelogram"]
        model = Parallelogram(model, scaling=link.get("scaling", 1.0), driven=link.get("driven", 1),
                              coupled=link.get("coupled", 2))
    return model


# Finding -----------------------------------------------------------------------------------------


def arm_dirs(bundled: Sequence[Path] = (), environ: Mapping[str, str] | None = None) -> list[Path]:
    """The folders searched for arm files, in order: the model path, the user's, then ``bundled``
    (the folders of arm files a plugin ships)."""
    return [*model_dirs(dict(os.environ if environ is None else environ)), *bundled]


def is_arm_file(data: Mapping[str, Any]) -> bool:
    """Whether parsed TOML is an arm file (it has an ``[arm]`` table), not a model file."""
    return isinstance(data.get("arm"), Mapping)


def _candidates(folders: Sequence[Path]):
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
                continue  # the model-file reader reports it
            if is_arm_file(data):
                yield path, data


def find_arm(name: str, bundled: Sequence[Path] = (), environ: Mapping[str, str] | None = None) -> ArmFile:
    """The first arm file named ``name`` on the search path (then in ``bundled``), read and checked."""
    known = []
    for path, data in _candidates(arm_dirs(bundled, environ)):
        found = data["arm"].get("name")
        if found == name:
            return read_arm_file(path)
        if isinstance(found, str):
            known.append(found)
    raise UnknownNameError("arm", name, sorted(set(known)))


def arm_model_specs(bundled: Sequence[Path] | None = None, environ: Mapping[str, str] | None = None) -> list[ModelSpec]:
    """Model specs of the user's arms (``bundled`` None: the core's plugin), or of the arms in the
    ``bundled`` folders a plugin ships, less those a user's arm file of the same name stands in
    for. A bad file is skipped with a warning."""
    user = arm_dirs((), environ)
    specs: dict[str, ModelSpec] = {}
    if bundled is not None:  # a plugin's own: the user's arm of a name wins
        for _, data in _candidates(user):
            name = data["arm"].get("name")
            if isinstance(name, str):
                specs[MODEL_PREFIX + name] = None  # type: ignore[assignment]
    for path, data in _candidates(user if bundled is None else bundled):
        name = data["arm"].get("name")
        if isinstance(name, str) and MODEL_PREFIX + name in specs:
            continue  # an earlier folder's arm of that name stands in for this one
        try:
            spec = _lazy_spec(path, data)
        except InvalidArgument as exc:
            log.warning("arm file skipped: %s", exc)
            continue
        specs[spec.name] = spec
    return [spec for spec in specs.values() if spec is not None]


def _lazy_spec(path: Path, data: Mapping[str, Any]) -> ModelSpec:
    """The model spec read only as far as listing needs (the name and joint count); the file is
    checked whole when the model is built."""
    name = data["arm"].get("name")
    joints = data.get("joints")
    if not isinstance(name, str) or not _NAME.match(name) or not isinstance(joints, list) or not joints:
        return read_arm_file(path).spec()  # raises with the reason

    def build() -> Kinematics:
        return read_arm_file(path).build()

    description = data["arm"].get("description") or f"servo arm from {path.name}"
    return ModelSpec(MODEL_PREFIX + name, factory=build, dof=len(joints), description=str(description),
                     tags=("arm", "servo"), source=str(path))


def arm_name_of_model(model: str) -> str | None:
    """``mearm`` for the model ``arm.mearm``; None for a model no arm file registers."""
    return model[len(MODEL_PREFIX):] if model.startswith(MODEL_PREFIX) else None


# Writing ---------------------------------------------------------------------------------------


def template(name: str) -> str:
    """A commented arm file to start from: a four-servo arm (base, shoulder, elbow and a claw)."""
    if not _NAME.match(name):
        raise InvalidArgument(f"arm name {name!r}: use lower-case letters, digits and _")
    return TEMPLATE.replace("NAME", name)


def write_calibration(path: Path, joint: int, pulses: ServoPulses) -> str:
    """The text of ``path`` with the ``joint``-th ``[[joints]]`` table's pulse keys set to
    ``pulses`` (the rest of the file, comments included, as it was)."""
    text = path.read_text(encoding="utf-8")
    starts = [m.start() for m in re.finditer(r"^\[\[joints\]\]\s*$", text, flags=re.M)]
    if joint >= len(starts):
        raise InvalidArgument(f"{path}: joints[{joint}]: no such [[joints]] table")
    begin = starts[joint]
    body = text.index("\n", begin) + 1 if "\n" in text[begin:] else len(text)
    after = re.search(r"^\[", text[body:], flags=re.M)
    end = body + after.start() if after else len(text)
    block = text[begin:end]
    values = {"offset_us": f"{pulses.offset_us:.1f}", "direction": str(pulses.direction),
              "scale_us_per_rad": f"{pulses.scale_us_per_rad:.2f}", "min_us": str(pulses.min_us),
              "max_us": str(pulses.max_us)}
    for key, value in values.items():
        pattern = re.compile(rf"^({key}\s*=\s*)([^#\n]*?)(\s*(#.*)?)$", flags=re.M)
        if pattern.search(block):
            block = pattern.sub(lambda m, v=value: f"{m.group(1)}{v}{m.group(3)}", block, count=1)
        else:
            block = block.rstrip("\n") + f"\n{key} = {value}\n" + ("\n" if block.endswith("\n\n") else "")
    return text[:begin] + block + text[end:]


TEMPLATE = '''\
# A robohal arm file: one servo arm, its model, its wiring and its servos' calibration.
# Put it in ~/.config/robohal/models (or a folder on ROBOHAL_MODEL_PATH); then
#   robohal models | grep arm.NAME
#   robohal draw 'arduino-arm://sim?arm=NAME' circle --dry-run       (nothing moves)
#   robohal arm calibrate 'arduino-arm:///dev/ttyACM0?arm=NAME'      (writes the calibration here)
# Units: metres, radians (1 rad = 57.3 deg), pulse widths in microseconds.

[arm]
name = "NAME"                     # the URI's arm=NAME; the model is arm.NAME
description = "my four-servo arm"

[model]
# vertical-plane: the base turns about z, the other links move in one vertical plane (most
# hobby arms). Also: kind = "planar2" (links = [l1, l2]: a planar two-link arm),
# kind = "dh" (a, d, alpha, offsets lists) or kind = "urdf" (urdf, base_link, tip_link).
kind = "vertical-plane"
links = [0.080, 0.080]            # m: shoulder to elbow, elbow to wrist
base_height = 0.0                 # m: the shoulder axis above the base frame's origin
elbow_from_horizontal = false     # true on a parallel linkage (the MeArm's): the elbow angle counts from level
zero = [0.0, 1.5707963, 0.0]      # rad: each joint's geometric angle at 0 rad (here the upper arm points up)
tool = [0.05, 0.0]                # m: the claw's tip from the wrist, forward and up (it stays level)

[servo]                           # what your servos accept (check their datasheet)
min_us = 500
max_us = 2500

# One [[joints]] table per joint, base first. The pulse of a joint angle q (rad) is
# offset_us + direction * scale_us_per_rad * q, within min_us..max_us.
[[joints]]
name = "base"
pin = 11
lower = -1.5708                   # rad (-90 deg)
upper = 1.5708                    # rad (+90 deg)
speed = 3.14                      # rad/s, the fastest the joint may turn
offset_us = 1500                  # the pulse at 0 rad
direction = 1                     # +1 or -1: which way a wider pulse turns the joint
scale_us_per_rad = 636.6          # 2000 us per pi rad: 500..2500 us span 180 deg
min_us = 500
max_us = 2500

[[joints]]
name = "shoulder"
pin = 10
lower = -0.7854
upper = 0.7854
speed = 3.14
offset_us = 1500
direction = 1
scale_us_per_rad = 636.6
min_us = 900
max_us = 2100

[[joints]]
name = "elbow"
pin = 9
lower = -1.0472
upper = 0.5236
speed = 3.14
offset_us = 1500
direction = 1
scale_us_per_rad = 636.6
min_us = 800
max_us = 1900

[gripper]                         # leave this table out if the arm has no gripper
pin = 6
min_us = 1000
max_us = 2000
open_us = 1900                    # the claw open
closed_us = 1100                  # the claw shut
width = 0.03                      # m between the fingers at open_us
speed = 10.47                     # rad/s the claw's servo turns (SG90: 0.1 s/60 deg)

# [power]                         # a pin that switches the servos' supply, if the board has one
# pin = 12
# soft_start = true
'''
