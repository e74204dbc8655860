"""Servo calibration: the one place where radians become pulse widths (and back).

Each servo maps a joint angle ``q`` (rad) to a pulse width (us)::

    width_us = offset_us + direction * scale_us_per_rad * q

The default fits a hobby servo: 1500 us at 0 rad, 1000/pi us per rad (so 1000..2000 us
spans -90..+90 deg), direction +1, pulse limits 1000..2000 us. The wire carries whole
microseconds, so a commanded angle lands within half a microsecond: 0.5 * pi / 1000 rad
(about 1.6 mrad) with the default scale.

A calibration comes from a TOML file (``[servo1]`` / ``[servo2]`` tables) and/or URI
parameters (``s1_offset_us``, ``s1_dir``, ``s1_scale_us_per_rad``, ``s1_min_us``,
``s1_max_us``, same for ``s2_``); URI parameters win over the file::

    [servo1]
    offset_us = 1520          # pulse at 0 rad
    direction = -1            # +1 or -1: which way a wider pulse turns the joint
    scale_us_per_rad = 318.3  # about 1000/pi
    min_us = 900              # pulse limits, sent to the firmware on connect (500..2500)
    max_us = 2100

The tool servo on D6 (a gripper or a pen lift, ``tool=gripper|pen``) has a ``[tool]`` table, or
URI parameters ``tool_min_us``, ``tool_max_us``, ``tool_open_us``, ``tool_closed_us``,
``tool_width``, ``tool_speed``::

    [tool]
    min_us = 1000             # pulse limits, sent to the firmware on connect (TLIMITS)
    max_us = 2000
    open_us = 1900            # gripper fully open / pen up
    closed_us = 1100          # gripper closed / pen down on the paper
    width = 0.04              # m between the fingers at open_us (the gripper's max_width)
    speed = 10.47             # rad/s the servo turns at (SG90 rating), for how long a move takes
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from robohal.errors import InvalidArgument, LimitViolation
from robohal.uri import RobotUri

from . import wire as p
from .servo import SG90_SPEED, US_PER_RAD

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT_OFFSET_US = 1500.0
_FLOAT64 = np.dtype(np.float64)  # numpy's one float64 dtype: a control cycle's vector has it
# The tool's defaults are our choice, a start for calibrating one's own claw or pen lift: most of
# the hobby-servo range, and a claw opening of 40 mm (small SG90 claws open about that much).
DEFAULT_TOOL_OPEN_US = 1900
DEFAULT_TOOL_CLOSED_US = 1100
DEFAULT_TOOL_WIDTH = 0.04
TOOL_FIELDS = ("min_us", "max_us", "open_us", "closed_us", "width", "speed")
DEFAULT_SCALE_US_PER_RAD = 1000.0 / math.pi
FIELDS = ("offset_us", "direction", "scale_us_per_rad", "min_us", "max_us")
# short URI spellings: s1_dir=-1, s1_scale=... are accepted too
URI_ALIASES = {"dir": "direction", "scale": "scale_us_per_rad", "offset": "offset_us",
               "min": "min_us", "max": "max_us"}


@dataclass(frozen=True)
class ServoCalibration:
    """One servo: pulse width at 0 rad, direction, microseconds per radian and pulse limits."""

    offset_us: float = DEFAULT_OFFSET_US
    direction: int = 1
    scale_us_per_rad: float = DEFAULT_SCALE_US_PER_RAD
    min_us: int = p.DEFAULT_LIMITS_US[0]
    max_us: int = p.DEFAULT_LIMITS_US[1]

    def __post_init__(self) -> None:
        low, high = p.ENVELOPE_US
        if self.direction not in (1, -1):
            raise InvalidArgument(f"servo direction must be +1 or -1, got {self.direction}")
        if not (math.isfinite(self.scale_us_per_rad) and self.scale_us_per_rad > 0):
            raise InvalidArgument(f"servo scale must be a positive number of us per rad, got {self.scale_us_per_rad}")
        if not (math.isfinite(self.offset_us) and low <= self.offset_us <= high):
            raise InvalidArgument(f"servo offset must lie in {low}..{high} us, got {self.offset_us}")
        if not (low <= self.min_us < self.max_us <= high):
            raise InvalidArgument(f"servo pulse limits must satisfy {low} <= min < max <= {high} us,"
                                  f" got {self.min_us}..{self.max_us}")

    def to_us(self, q: float) -> int:
        """The whole-microsecond width for angle ``q`` (rad), not checked against the limits."""
        return round(self.offset_us + self.direction * self.scale_us_per_rad * float(q))

    def to_rad(self, width_us: float) -> float:
        """The angle (rad) a width (us) stands for."""
        return (float(width_us) - self.offset_us) / (self.direction * self.scale_us_per_rad)

    @property
    def angle_range(self) -> tuple[float, float]:
        """The joint angles (rad, low to high) the pulse limits allow."""
        a, b = self.to_rad(self.min_us), self.to_rad(self.max_us)
        return (min(a, b), max(a, b))

    @property
    def resolution(self) -> float:
        """Radians per microsecond at the wire."""
        return 1.0 / self.scale_us_per_rad


@dataclass(frozen=True)
class ToolCalibration:
    """The tool servo (D6): its pulse limits, the widths for open (pen up) and closed (pen down),
    the finger opening at ``open_us`` (m) and its turning speed (rad/s).

    Between closed and open, the finger width is taken as linear in the pulse width: a claw's
    linkage is not quite linear, so a width in between is approximate (calibrate the ends)."""

    min_us: int = p.DEFAULT_LIMITS_US[0]
    max_us: int = p.DEFAULT_LIMITS_US[1]
    open_us: int = DEFAULT_TOOL_OPEN_US
    closed_us: int = DEFAULT_TOOL_CLOSED_US
    width: float = DEFAULT_TOOL_WIDTH
    speed: float = SG90_SPEED

    def __post_init__(self) -> None:
        low, high = p.ENVELOPE_US
        if not (low <= self.min_us < self.max_us <= high):
            raise InvalidArgument(f"tool pulse limits must satisfy {low} <= min < max <= {high} us,"
                                  f" got {self.min_us}..{self.max_us}")
        for name in ("open_us", "closed_us"):
            if not self.min_us <= getattr(self, name) <= self.max_us:
                raise InvalidArgument(f"tool {name} = {getattr(self, name)} lies outside its pulse limits"
                                      f" {self.min_us}..{self.max_us} us")
        if self.open_us == self.closed_us:
            raise InvalidArgument("tool open_us and closed_us must differ")
        for name in ("width", "speed"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise InvalidArgument(f"tool {name} must be a positive number, got {value}")

    def to_us(self, width: float) -> int:
        """The whole-microsecond pulse for a finger ``width`` in [0, width] m."""
        return round(self.closed_us + (self.open_us - self.closed_us) * float(width) / self.width)

    def to_width(self, width_us: float) -> float:
        """The finger width (m) a pulse stands for."""
        return (float(width_us) - self.closed_us) / (self.open_us - self.closed_us) * self.width

    def travel_time(self, from_us: float, to_us: float) -> float:
        """Seconds the servo takes to turn between two pulse widths at its speed."""
        return abs(float(to_us) - float(from_us)) / (self.speed * US_PER_RAD)

    @property
    def max_speed(self) -> float:
        """The fingers' speed (m/s) when the servo turns at full speed."""
        return self.speed * US_PER_RAD * self.width / abs(self.open_us - self.closed_us)


@dataclass(frozen=True)
class Calibration:
    """The arm's servos (the planar arm's: servo 1 on D9 drives joint 1, servo 2 on D10 joint 2;
    an arm file's: one per joint) and the tool."""

    servos: tuple[ServoCalibration, ...] = (ServoCalibration(), ServoCalibration())
    tool: ToolCalibration = ToolCalibration()

    def __post_init__(self) -> None:
        if not self.servos:
            raise InvalidArgument("a calibration has at least one arm servo")

    @cached_property
    def _pulse_map(self) -> tuple[tuple[float, float, int, int], ...]:
        """(offset, signed scale, min, max) per servo, for :meth:`to_pulses`."""
        return tuple((s.offset_us, s.direction * s.scale_us_per_rad, s.min_us, s.max_us) for s in self.servos)

    def to_pulses(self, q: ArrayLike) -> tuple[int, ...]:
        """Pulse widths (us) for joints ``q`` (rad); raises :class:`LimitViolation` for a width
        outside a servo's pulse limits, so such a command never reaches the wire."""
        # one numpy call for the float64 vector every control cycle passes (cold, each costs microseconds)
        angles = q.tolist() if type(q) is np.ndarray and q.dtype is _FLOAT64 else np.asarray(q, dtype=np.float64).tolist()
        if (type(angles) is not list or len(angles) != len(self.servos) or (angles and type(angles[0]) is not float)
                or not all(map(math.isfinite, angles))):
            raise InvalidArgument(f"joints must be {len(self.servos)} finite values, got {q!r}")
        # Plain floats, not numpy calls: this runs every control cycle for a handful of servos,
        # where numpy's per-call cost is most of the time (benchmarks/firmata.py).
        widths = []
        for joint, ((offset, scale, low, high), angle) in enumerate(zip(self._pulse_map, angles, strict=True)):
            width = round(offset + scale * angle)  # as ServoCalibration.to_us
            if not low <= width <= high:
                servo = self.servos[joint]
                raise LimitViolation(
                    f"setpoint refused: joint {joint + 1} at {math.degrees(angle):.2f} deg needs {width} us,"
                    f" outside the servo's pulse limits {servo.min_us}..{servo.max_us} us",
                    joint=joint, quantity="position", value=angle,
                    limit=servo.angle_range[0] if angle < 0 else servo.angle_range[1])
            widths.append(width)
        return tuple(widths)

    def to_joints(self, widths_us: Sequence[float]) -> np.ndarray:
        """Joint angles (rad) for pulse widths (us)."""
        return np.array([servo.to_rad(w) for servo, w in zip(self.servos, widths_us, strict=True)])

    @property
    def limits_us(self) -> tuple[tuple[int, int], ...]:
        """The pulse limits to send to the firmware (``LIMITS``), per servo."""
        return tuple((servo.min_us, servo.max_us) for servo in self.servos)

    @classmethod
    def from_arm(cls, arm: Any) -> Calibration:
        """The calibration an arm file (:class:`robohal.plugins.arm_files.ArmFile`) gives its
        joints' servos and its gripper (a default tool where it has none)."""
        servos = tuple(ServoCalibration(j.pulses.offset_us, j.pulses.direction, j.pulses.scale_us_per_rad,
                                        j.pulses.min_us, j.pulses.max_us) for j in arm.joints)
        grip = arm.gripper
        tool = ToolCalibration() if grip is None else ToolCalibration(
            grip.min_us, grip.max_us, grip.open_us, grip.closed_us, grip.width, grip.speed)
        return cls(servos, tool)

    @property
    def resolution(self) -> float:
        """The coarsest wire resolution (rad per us) of the arm's two servos."""
        return max(servo.resolution for servo in self.servos)

    def uncovered(self, lower: ArrayLike, upper: ArrayLike) -> list[str]:
        """Why the pulse limits do not cover the joint range lower..upper (rad): one line per servo."""
        problems = []
        for joint, (servo, lo, hi) in enumerate(zip(self.servos, np.asarray(lower), np.asarray(upper), strict=True)):
            a, b = servo.to_us(lo), servo.to_us(hi)
            if min(a, b) < servo.min_us or max(a, b) > servo.max_us:
                problems.append(f"joint {joint + 1}: {math.degrees(lo):.1f}..{math.degrees(hi):.1f} deg needs"
                                f" {min(a, b)}..{max(a, b)} us, pulse limits are {servo.min_us}..{servo.max_us} us")
        return problems

    # Loading -----------------------------------------------------------------------------

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], base: Calibration | None = None, source: str = "calibration") -> Calibration:
        """A calibration from ``{"servo1": {...}, "servo2": {...}, "tool": {...}}`` on top of ``base``."""
        base = base or cls()
        unknown = set(data) - {"servo1", "servo2", "tool"}
        if unknown:
            raise InvalidArgument(f"{source}: unknown section(s) {sorted(unknown)}; use [servo1], [servo2] and [tool]")
        tool = data.get("tool", {})
        if not isinstance(tool, Mapping):
            raise InvalidArgument(f"{source}: tool must be a table")
        servos = list(base.servos)
        for index in range(p.ARM_SERVOS):
            section = data.get(f"servo{index + 1}", {})
            if not isinstance(section, Mapping):
                raise InvalidArgument(f"{source}: servo{index + 1} must be a table")
            servos[index] = _updated(servos[index], section, f"{source} [servo{index + 1}]", FIELDS)
        return cls(tuple(servos), _updated(base.tool, tool, f"{source} [tool]", TOOL_FIELDS))

    @classmethod
    def from_file(cls, path: str | Path, base: Calibration | None = None) -> Calibration:
        """Reads a TOML calibration file (see the module docstring)."""
        path = Path(path).expanduser()
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InvalidArgument(f"cannot read calibration file {path}: {exc.strerror or exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise InvalidArgument(f"calibration file {path} is not valid TOML: {exc}") from None
        return cls.from_mapping(data, base, str(path))

    @classmethod
    def from_uri(cls, uri: RobotUri) -> Calibration:
        """The calibration file named by ``calibration=`` (if any), then ``sN_*`` parameters."""
        calibration = cls.from_file(uri.params["calibration"]) if uri.params.get("calibration") else cls()
        sections: dict[str, dict[str, str]] = {}
        for key, value in uri.params.items():
            if len(key) > 3 and key[0] == "s" and key[1].isdigit() and key[2] == "_":
                if key[1] not in "12":
                    raise InvalidArgument(f"{uri}: parameter {key}: the arm has servos s1 and s2")
                name = URI_ALIASES.get(key[3:], key[3:])
                sections.setdefault(f"servo{key[1]}", {})[name] = value
            elif key.startswith("tool_"):
                sections.setdefault("tool", {})[key[5:]] = value
        return cls.from_mapping(sections, calibration, f"{uri}") if sections else calibration

    def to_toml(self) -> str:
        """This calibration as a TOML file."""
        out = []
        for index, servo in enumerate(self.servos):
            out.append(f"[servo{index + 1}]")
            out.append(f"offset_us = {servo.offset_us:g}")
            out.append(f"direction = {servo.direction}")
            out.append(f"scale_us_per_rad = {servo.scale_us_per_rad!r}")
            out.append(f"min_us = {servo.min_us}")
            out.append(f"max_us = {servo.max_us}")
            out.append("")
        out.append("[tool]")
        out.extend(f"{name} = {getattr(self.tool, name)!r}" for name in TOOL_FIELDS)
        out.append("")
        return "\n".join(out)


def _updated(servo: Any, section: Mapping[str, Any], where: str, fields: Sequence[str]) -> Any:
    unknown = set(section) - set(fields)
    if unknown:
        raise InvalidArgument(f"{where}: unknown key(s) {sorted(unknown)}; known: {', '.join(fields)}")
    changes: dict[str, Any] = {}
    for name, raw in section.items():
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise InvalidArgument(f"{where}: {name} = {raw!r} is not a number") from None
        if not math.isfinite(value):
            raise InvalidArgument(f"{where}: {name} must be finite")
        if name in ("direction", "min_us", "max_us", "open_us", "closed_us"):
            if value != int(value):
                raise InvalidArgument(f"{where}: {name} must be a whole number, got {raw!r}")
            value = int(value)
        changes[name] = value
    try:
        return replace(servo, **changes)
    except InvalidArgument as exc:
        raise InvalidArgument(f"{where}: {exc}") from None
