"""Calibration of a Feetech arm: the one place where radians become encoder ticks (and back),
and how a calibration is found, checked, saved and read.

**Ticks.** An STS3215's encoder counts 4096 ticks a turn. The servo reports
``Present_Position = (encoder - Homing_Offset) mod 4096``, so its numbers wrap from 4095 to 0
at one point of the turn, the wrap point, and it only ever moves between two positions without
crossing it. A joint whose travel contains the wrap point cannot be driven across it: the
servo turns the long way round into its stop. The homing offset (sign-magnitude, bit 11:
-2047..2047) places the wrap point, and it must lie outside the joint's travel.

**Finding it.** :class:`RangeRecorder` records each joint's whole travel first, from the
servo's raw encoder (offset 0), unwrapping the numbers as the joint moves (a step of more than
a quarter turn between two samples is refused: the joint moved too fast to follow). Only then
is the offset chosen, :func:`choose_homing`: the travel's centre goes to 2047, so the wrap point
sits opposite it, as far from both ends as it can be. A travel that leaves less than
``margin`` ticks clear on each side is refused, with the reason. The offset is computed modulo a
turn, so it always fits the register; there is no "Magnitude 2114 exceeds 2047" here.

**Angles.** ``q = direction * (present - zero) * 2 pi / 4096``: ``zero`` is the middle of the
range, as LeRobot's calibration and the SO-101's published description both centre each joint.
Goals outside ``[range_min, range_max]`` are refused (:class:`~robohal.errors.LimitViolation`)
before they reach the wire; the same range goes into the servos' own position limits.

**Files.** JSON, one entry per joint name: ``id``, ``homing_offset``, ``range_min``,
``range_max``, ``drive_mode`` (1: inverted), as LeRobot writes its SO-101 calibration files
(``~/.cache/huggingface/lerobot/calibration/robots/so101_follower/NAME.json``), so those read
as they are; robohal adds ``zero`` and a ``format`` key. Every file is checked when read.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from robohal.errors import InvalidArgument, LimitViolation

from . import wire
from .models import JAW_RANGE
from .registers import TICKS_PER_TURN, register

RAD_PER_TICK = 2.0 * math.pi / TICKS_PER_TURN
HOMING_LIMIT = (1 << register("Homing_Offset").sign_bit) - 1  # 2047
#: ticks the wrap point must keep clear of each end of a recorded travel (about 5.6 deg): room
#: for the backlash and the overshoot a hand sweep misses (our choice)
WRAP_MARGIN = 64
MAX_SAMPLE_STEP = TICKS_PER_TURN // 4  # a quarter turn between two samples cannot be unwrapped
MIN_TRAVEL = 20  # ticks: less is a joint nobody moved during the sweep (our choice)
FORMAT = "robohal-feetech/1"
GRIPPER = "gripper"


class CalibrationError(InvalidArgument):
    """A calibration that cannot be used; the message gives every reason."""


@dataclass(frozen=True)
class JointCalibration:
    """One servo's calibration, in its own ticks (see the module docstring)."""

    id: int
    homing_offset: int
    range_min: int
    range_max: int
    zero: float
    direction: int = 1

    def problems(self, name: str) -> list[str]:
        """Why this calibration cannot be used (empty: it can)."""
        found = []
        if abs(self.homing_offset) > HOMING_LIMIT:
            found.append(f"{name}: homing offset {self.homing_offset} cannot be encoded: magnitude"
                         f" {abs(self.homing_offset)} exceeds {HOMING_LIMIT} (the register's sign is bit 11)")
        if not 0 <= self.range_min < self.range_max <= TICKS_PER_TURN - 1:
            found.append(f"{name}: range {self.range_min}..{self.range_max} is not an increasing range within"
                         f" 0..{TICKS_PER_TURN - 1} ticks")
        elif not self.range_min <= self.zero <= self.range_max:
            found.append(f"{name}: zero {self.zero:g} lies outside its range {self.range_min}..{self.range_max}")
        if self.direction not in (1, -1):
            found.append(f"{name}: direction must be 1 or -1, got {self.direction}")
        return found

    def to_radians(self, present: ArrayLike) -> np.ndarray:
        return self.direction * (np.asarray(present, dtype=np.float64) - self.zero) * RAD_PER_TICK

    def to_ticks(self, q: float) -> float:
        """The (unrounded) present-position ticks of angle ``q``."""
        return self.zero + self.direction * q / RAD_PER_TICK

    @property
    def travel(self) -> tuple[float, float]:
        """The range in radians, low to high."""
        ends = sorted(float(self.to_radians(t)) for t in (self.range_min, self.range_max))
        return ends[0], ends[1]


def jaw_zero(range_min: int, range_max: int, direction: int) -> float:
    """The gripper's zero: its range's closed end is the jaw's closed limit (the published jaw
    range, :data:`~.models.JAW_RANGE`), as LeRobot's 0-100 % gripper scale starts at range_min."""
    closed = range_min if direction > 0 else range_max
    return closed - direction * JAW_RANGE[0] / RAD_PER_TICK


@dataclass(frozen=True)
class Calibration:
    """Every servo's calibration, by joint name (the gripper's as ``"gripper"``)."""

    joints: Mapping[str, JointCalibration]
    source: str = ""  # the file it came from, if any
    origin: str = "robohal"  # or "lerobot": who wrote the file

    def __getitem__(self, name: str) -> JointCalibration:
        return self.joints[name]

    def check(self, names: Sequence[str], ids: Mapping[str, int]) -> None:
        """Refuse a calibration that lacks a joint, names another servo than the arm file, or cannot
        be used (every reason at once)."""
        where = f"{self.source}: " if self.source else ""
        problems = []
        for name in names:
            joint = self.joints.get(name)
            if joint is None:
                problems.append(f"no calibration for {name}")
                continue
            if name in ids and joint.id != ids[name]:
                problems.append(f"{name}: calibrated as servo {joint.id}, the arm file says servo {ids[name]}")
            problems += joint.problems(name)
        if problems:
            raise CalibrationError(where + "; ".join(problems))

    def to_ticks(self, names: Sequence[str], q: ArrayLike, directions: Sequence[int]) -> list[int]:
        """Goal ticks of joint angles ``q`` (rad); :class:`LimitViolation` for one outside its
        calibrated range, before anything is sent."""
        ticks = []
        for index, (name, angle, sign) in enumerate(zip(names, np.asarray(q, dtype=np.float64), directions, strict=True)):
            joint = self.joints[name]
            value = joint.to_ticks(sign * float(angle))
            if not math.isfinite(value) or not joint.range_min <= round(value) <= joint.range_max:
                low, high = (sign * end for end in joint.travel)
                raise LimitViolation(f"{name}: {angle:.4f} rad lies outside its calibrated range"
                                     f" {min(low, high):.4f}..{max(low, high):.4f} rad ({joint.range_min}..{joint.range_max} ticks)",
                                     joint=index, quantity="position", value=float(angle))
            ticks.append(round(value))
        return ticks

    def to_radians(self, names: Sequence[str], present: Sequence[int], directions: Sequence[int]) -> np.ndarray:
        return np.array([sign * float(self.joints[name].to_radians(tick))
                         for name, tick, sign in zip(names, present, directions, strict=True)])

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"format": FORMAT}
        for name, joint in self.joints.items():
            data[name] = {"id": joint.id, "drive_mode": 0 if joint.direction > 0 else 1,
                          "homing_offset": joint.homing_offset, "range_min": joint.range_min,
                          "range_max": joint.range_max, "zero": joint.zero}
        return data

    def save(self, path: str | os.PathLike) -> Path:
        """Write the calibration (robohal's JSON, which LeRobot's readers take too)."""
        path = Path(path).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_json(), indent=4) + "\n", encoding="utf-8")
        return path


def read_calibration(path: str | os.PathLike) -> Calibration:
    """A calibration file, robohal's or LeRobot's (``homing_offset``, ``range_min``, ``range_max``,
    ``drive_mode`` per joint); each entry's numbers are checked for their form here, and for use
    by :meth:`Calibration.check`."""
    path = Path(path).expanduser()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CalibrationError(f"{path}: no such calibration file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CalibrationError(f"{path}: not a calibration file: {exc}") from None
    if not isinstance(data, dict):
        raise CalibrationError(f"{path}: a calibration file is a JSON object of joints")
    origin = "robohal" if data.get("format") == FORMAT else "lerobot"
    joints = {}
    for name, entry in data.items():
        if name == "format":
            continue
        if not isinstance(entry, dict):
            raise CalibrationError(f"{path}: {name}: must be an object with id, homing_offset, range_min, range_max")
        try:
            numbers = {key: entry[key] for key in ("id", "homing_offset", "range_min", "range_max")}
            drive_mode = entry.get("drive_mode", 0)
            if any(isinstance(v, bool) or not isinstance(v, int) for v in (*numbers.values(), drive_mode)):
                raise TypeError
        except (KeyError, TypeError):
            raise CalibrationError(f"{path}: {name}: id, homing_offset, range_min, range_max (and drive_mode)"
                                   " must be whole numbers") from None
        if drive_mode not in (0, 1):
            raise CalibrationError(f"{path}: {name}: drive_mode must be 0 or 1, got {drive_mode}")
        direction = -1 if drive_mode else 1
        low, high = numbers["range_min"], numbers["range_max"]
        zero = entry.get("zero")
        if zero is None:
            zero = jaw_zero(low, high, direction) if name == GRIPPER else (low + high) / 2.0
        elif isinstance(zero, bool) or not isinstance(zero, (int, float)):
            raise CalibrationError(f"{path}: {name}: zero must be a number")
        joints[name] = JointCalibration(numbers["id"], numbers["homing_offset"], low, high, float(zero), direction)
    return Calibration(joints, source=str(path), origin=origin)


# -------------------------------------------------------------------- finding one


@dataclass(frozen=True)
class Homing:
    """What :func:`choose_homing` found for one joint's recorded travel."""

    homing_offset: int
    range_min: int
    range_max: int


def choose_homing(low: float, high: float, name: str, margin: int = WRAP_MARGIN) -> Homing:
    """The homing offset that puts the wrap point opposite the middle of a recorded travel
    ``low..high`` (raw encoder ticks, unwrapped: ``high - low`` is how far it turned), and the
    travel's range in present-position ticks under it. :class:`CalibrationError` when the travel
    cannot be placed with ``margin`` ticks clear of the wrap point on both sides."""
    lo, hi = math.floor(low), math.ceil(high)
    span = hi - lo
    # the range must lie within margin..4095-margin; two ticks less, for the one offset the
    # register cannot carry (below)
    room = TICKS_PER_TURN - 1 - 2 * margin - 2
    if span > room:
        raise CalibrationError(
            f"{name}: travels {span} ticks ({math.degrees(span * RAD_PER_TICK):.1f} deg); its range cannot be"
            f" encoded: with the wrap point {margin} ticks clear of both ends a joint may travel at most"
            f" {room} ticks ({math.degrees(room * RAD_PER_TICK):.1f} deg). Limit its travel, or mind the"
            " wrap point yourself.")
    centre = (lo + hi) // 2
    middle = (TICKS_PER_TURN - 1) // 2  # 2047: the centre of 0..4095
    offset = (centre - middle + TICKS_PER_TURN // 2) % TICKS_PER_TURN - TICKS_PER_TURN // 2  # centre - offset = 2047
    if offset < -HOMING_LIMIT:  # -2048 is the one residue the register cannot carry: one tick over
        offset += 1
    # present = raw - offset, taken in the turn that holds the centre at about 2047
    present_centre = (centre - offset) % TICKS_PER_TURN
    base = centre - offset - present_centre
    range_min, range_max = lo - offset - base, hi - offset - base
    if range_min < margin or range_max > TICKS_PER_TURN - 1 - margin:  # (cannot happen after the span check)
        raise CalibrationError(f"{name}: no homing offset keeps the wrap point {margin} ticks clear of {lo}..{hi}")
    return Homing(int(offset), int(range_min), int(range_max))


@dataclass
class _Track:
    first: int
    last: int
    position: int  # unwrapped
    low: int
    high: int
    jumps: int = 0


@dataclass
class RangeRecorder:
    """Each servo's travel, from raw encoder samples taken while a hand moves the joints (torque
    off, homing offset 0): ``add({id: ticks})`` per sample, then :meth:`calibration`."""

    names: Mapping[int, str]  # servo id -> joint name
    margin: int = WRAP_MARGIN
    _tracks: dict[int, _Track] = field(default_factory=dict)
    samples: int = 0

    def add(self, raw: Mapping[int, int]) -> None:
        self.samples += 1
        for servo_id, tick in raw.items():
            tick = int(tick) % TICKS_PER_TURN
            track = self._tracks.get(servo_id)
            if track is None:
                self._tracks[servo_id] = _Track(tick, tick, tick, tick, tick)
                continue
            step = (tick - track.last + TICKS_PER_TURN // 2) % TICKS_PER_TURN - TICKS_PER_TURN // 2
            track.last = tick
            if abs(step) > MAX_SAMPLE_STEP:
                track.jumps += 1
                continue
            track.position += step
            track.low, track.high = min(track.low, track.position), max(track.high, track.position)

    def travel(self, servo_id: int) -> tuple[int, int] | None:
        """The recorded travel in unwrapped raw ticks (None before any sample)."""
        track = self._tracks.get(servo_id)
        return None if track is None else (track.low, track.high)

    def calibration(self, directions: Mapping[str, int] | None = None, gripper: str | None = GRIPPER) -> Calibration:
        """The calibration of what was recorded; every joint that cannot be calibrated is named
        with its reason, all at once."""
        joints, problems = {}, []
        for servo_id, name in self.names.items():
            track = self._tracks.get(servo_id)
            if track is None:
                problems.append(f"{name}: servo {servo_id} gave no sample")
                continue
            if track.jumps:
                problems.append(f"{name}: moved more than a quarter turn between two samples {track.jumps} time(s):"
                                " sweep it more slowly")
                continue
            if track.high - track.low < MIN_TRAVEL:
                problems.append(f"{name}: travelled only {track.high - track.low} ticks: move it through its whole range")
                continue
            try:
                homing = choose_homing(track.low, track.high, name, self.margin)
            except CalibrationError as exc:
                problems.append(str(exc))
                continue
            direction = (directions or {}).get(name, 1)
            zero = (jaw_zero(homing.range_min, homing.range_max, direction) if name == gripper
                    else (homing.range_min + homing.range_max) / 2.0)
            joints[name] = JointCalibration(servo_id, homing.homing_offset, homing.range_min, homing.range_max,
                                            zero, direction)
        if problems:
            raise CalibrationError("; ".join(problems))
        return Calibration(joints)


def wrap_inside(homing_offset: int, low: float, high: float) -> bool:
    """Whether the wrap point lies inside a travel ``low..high`` (raw ticks, unwrapped) under
    ``homing_offset``: the failure :func:`choose_homing` rules out (for tests and checks)."""
    first = math.floor(low) - homing_offset
    return any((first + k) % TICKS_PER_TURN == 0 for k in range(1, math.ceil(high) - math.floor(low) + 1))


def encodable(value: int) -> bool:
    try:
        register("Homing_Offset").encode(value)
    except wire.EncodingError:
        return False
    return True
