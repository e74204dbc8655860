"""``robohal arm new NAME`` and ``robohal arm calibrate URI``: write an arm file, and calibrate its
servos on the arm itself.

The calibration walks a person through each servo of an arm file (:mod:`robohal.plugins.arm_files`)
in turn: jog the servo (``+``/``-`` by 10 us, ``]``/``[`` by 1 us) until the joint sits on the mark
asked for, and press Enter to record the pulse. The marks: the joint's 0 rad (as the file's model
defines it: the comment above its ``zero``), then a quarter turn the positive way, then its safe
ends either way. From these it computes the pulse at 0 rad, the direction, the microseconds per
radian and the pulse limits, and writes them into the arm file's ``[[joints]]`` table, keeping the
rest of the file; a bundled arm's copy goes to the user's models folder, where it then stands in
for the bundled one. ``q`` (or the end of input) stops without writing. Keys can be piped
(``printf '+++\\n...' | robohal arm calibrate URI``): that is how it is scripted and tested.

The backend must offer ``arm`` (the :class:`~robohal.plugins.arm_files.ArmFile`), ``pulse_widths()``
and ``hold_pulses(widths)`` (the servo-arm backends of robohal_arduino_planar do).
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import RobohalError
from ..plugins.arm_files import ServoPulses, read_arm_file, template, write_calibration
from ..plugins.model_files import model_dirs

FINE_US, COARSE_US = 1, 10
QUARTER = math.pi / 2  # the second mark: a quarter turn from 0 rad
MARKS = ("its 0 rad mark", "a quarter turn (+90 deg) the positive way", "its safe end, the low side",
         "its safe end, the high side")


def user_models_dir() -> Path:
    """The user's own models folder (the last of the search path: ~/.config/robohal/models)."""
    return model_dirs(dict(os.environ))[-1]


def new_arm(name: str, folder: Path | None = None, force: bool = False) -> Path:
    """Write the commented template for arm ``name`` to ``folder`` (the user's models folder)."""
    text = template(name)
    folder = folder or user_models_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    if path.exists() and not force:
        raise RobohalError(f"{path} exists; --force overwrites it")
    path.write_text(text, encoding="utf-8")
    return path


def calibrate(robot, keys: Iterator[str], say: Callable[[str], None]) -> Path | None:
    """Walk through each servo of ``robot``'s arm file; return the file written (None: stopped)."""
    backend = robot.backend
    arm = getattr(backend, "arm", None)
    if getattr(getattr(arm, "file", arm), "bus", None) is not None:  # a bus-servo arm file's arm
        raise RobohalError(f"{robot.name}: bus servos keep their own calibration (homing offsets and limits);"
                           f" its plugin calibrates them: robohal {backend.uri.scheme} calibrate URI")
    if arm is None or not hasattr(backend, "hold_pulses"):
        raise RobohalError(f"{robot.name}: calibrate needs a servo arm from an arm file (arduino-arm, arduino-firmata)")
    widths = list(backend.pulse_widths())
    low, high = arm.servo_range_us
    found: list[ServoPulses] = []
    for index, joint in enumerate(arm.joints):
        marks = []
        for mark in MARKS:
            say(f"joint {index + 1} ({joint.name}, pin {joint.pin}): jog to {mark}, then Enter"
                f"  (+/- {COARSE_US} us, ]/[ {FINE_US} us, q quits)  now {widths[index]} us")
            while True:
                key = next(keys, "q")
                step = {"+": COARSE_US, "-": -COARSE_US, "]": FINE_US, "[": -FINE_US}.get(key)
                if key in ("q", "\x03"):
                    say("stopped: nothing written")
                    return None
                if key in ("\n", "\r"):
                    marks.append(widths[index])
                    break
                if step is not None:
                    widths[index] = min(max(widths[index] + step, low), high)
                    backend.hold_pulses(tuple(widths))
                    say(f"  {widths[index]} us")
        zero, quarter, end_low, end_high = marks
        if quarter == zero:
            raise RobohalError(f"joint {index + 1} ({joint.name}): the quarter-turn mark is the 0 rad mark's pulse")
        scale = abs(quarter - zero) / QUARTER
        pulses = ServoPulses(offset_us=float(zero), direction=1 if quarter > zero else -1, scale_us_per_rad=scale,
                             min_us=min(end_low, end_high), max_us=max(end_low, end_high))
        found.append(pulses)
        say(f"joint {index + 1} ({joint.name}): {pulses.offset_us:.0f} us at 0 rad, direction {pulses.direction:+d},"
            f" {scale:.1f} us/rad, {pulses.min_us}..{pulses.max_us} us")
    return _save(arm, found, say)


def _save(arm, found: list[ServoPulses], say: Callable[[str], None]) -> Path:
    path = arm.path
    if not os.access(path, os.W_OK) or not any(path.parent.resolve() == d.resolve() for d in model_dirs(dict(os.environ))):
        target = user_models_dir() / path.name  # a bundled arm: the user's copy stands in for it
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        path = target
    draft = path.with_name(f".{path.name}.calibrating")
    shutil.copyfile(path, draft)
    try:
        for index, pulses in enumerate(found):
            draft.write_text(write_calibration(draft, index, pulses), encoding="utf-8")
        read_arm_file(draft)  # the joints' limits must still fit the new pulses: a refusal says which
        os.replace(draft, path)
    finally:
        draft.unlink(missing_ok=True)
    say(f"calibration written to {path}")
    return path


def keys_from(read: Callable[[], str]) -> Iterator[str]:
    while True:
        char = read()
        if not char:
            return
        yield char

