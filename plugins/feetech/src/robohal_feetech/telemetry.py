"""What the servos report each cycle, in SI units: the one place the servos' own units are converted.

A control cycle reads registers 56..70 of every servo in one sync read (:data:`~.registers.TELEMETRY`);
a :class:`Telemetry` takes each servo's block as its answer arrives, a list per quantity, and
:func:`reading` turns one block into a :class:`Reading`. Positions stay in ticks here: only the
calibration knows the angle they mean (:mod:`.calibration`).

This runs every control cycle, so a block is taken apart in one ``struct`` unpack and nothing
is built per servo (per-register calls cost a cycle more than the servos' return delays, and
numpy on six numbers more still: tens of microseconds).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from functools import cached_property
from typing import NamedTuple

from . import wire
from .registers import (
    CURRENT_UNIT_A,
    LOAD_FULL_SCALE,
    TELEMETRY_LENGTH,
    TICKS_PER_TURN,
    VOLTAGE_UNIT_V,
)

RAD_PER_TICK = 2.0 * 3.141592653589793 / TICKS_PER_TURN

# one servo's block, as :data:`~.registers.TELEMETRY` (a test holds it to the control table's
# decoders): 56 position, 58 velocity, 60 load, 62 voltage, 63 temperature, (64, 65), 66 moving,
# (67, 68), 69 current; velocity and current are sign-magnitude in bit 15, the load in bit 10
BLOCK = struct.Struct("<HHHBB2xB2xH")
assert BLOCK.size == TELEMETRY_LENGTH


class Reading(NamedTuple):
    """One servo's report: ``position`` (ticks), ``velocity`` (rad/s, the servo's sense), ``load``
    (-1..1 of its stall torque), ``voltage`` (V), ``temperature`` (degC), ``moving``,
    ``current`` (A, signed as the load) and the status packet's ``errors`` (bit names)."""

    position: int
    velocity: float
    load: float
    voltage: float
    temperature: float
    moving: bool
    current: float
    errors: tuple[str, ...] = ()


class Telemetry:
    """Every servo's report of one sync read, a list per quantity, in the order of ``ids``:
    ``position`` (ticks), ``velocity`` (rad/s), ``load`` (share of the stall torque),
    ``current`` (A), ``voltage`` (V), ``temperature`` (degC), ``moving``; ``errors`` are the
    status packets' error bytes, ``slow`` each servo's raw (voltage, temperature). ``take``
    fills a servo's row; ``readings`` gives one :class:`Reading` per id."""

    def __init__(self, ids: Sequence[int]) -> None:
        count = len(ids)
        self.ids = tuple(ids)
        self.position = [0] * count
        self.velocity = [0.0] * count
        self.load = [0.0] * count
        self.voltage = [0.0] * count
        self.temperature = [0.0] * count
        self.moving = [False] * count
        self.current = [0.0] * count
        self.errors = [0] * count
        self.slow: list[tuple[int, int] | None] = [None] * count

    def take(self, row: int, block: bytes, error: int = 0) -> None:
        """Servo ``row``'s telemetry block and its status packet's error byte."""
        position, velocity, load, voltage, temperature, moving, current = BLOCK.unpack(block)
        self.position[row] = position
        self.velocity[row] = (-(velocity & 0x7FFF) if velocity & 0x8000 else velocity) * RAD_PER_TICK
        self.load[row] = (-(load & 0x3FF) if load & 0x400 else load & 0x3FF) / LOAD_FULL_SCALE
        self.voltage[row] = voltage * VOLTAGE_UNIT_V
        self.temperature[row] = float(temperature)
        self.moving[row] = moving != 0
        self.current[row] = (-(current & 0x7FFF) if current & 0x8000 else current) * CURRENT_UNIT_A
        self.errors[row] = error
        self.slow[row] = (voltage, temperature)

    def reading(self, index: int) -> Reading:
        return Reading(self.position[index], self.velocity[index], self.load[index], self.voltage[index],
                       self.temperature[index], self.moving[index], self.current[index],
                       wire.error_names(self.errors[index]))

    @cached_property
    def readings(self) -> dict[int, Reading]:
        """One :class:`Reading` per servo id (built when first asked for, not every cycle)."""
        return {servo_id: self.reading(index) for index, servo_id in enumerate(self.ids)}


def reading(block: bytes, error: int = 0) -> Reading:
    """A :class:`Reading` from one servo's telemetry block (and the status packet's error byte)."""
    found = Telemetry((0,))
    found.take(0, block, error)
    return found.reading(0)
