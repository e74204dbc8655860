"""What the servos report each cycle, in SI units: the one place the servos' own units are converted.

A control cycle reads registers 56..70 of every servo in one sync read (:data:`~.registers.TELEMETRY`);
:class:`Telemetry` decodes the blocks of all of them, a column of numbers per quantity, and
:func:`reading` one servo's block into a :class:`Reading`. Positions stay in ticks here: only the
calibration knows the angle they mean (:mod:`.calibration`).

This runs every control cycle while the next one waits, so the blocks of all servos are taken
apart in one ``struct`` unpack and each quantity converted in one pass (per-register calls, and
numpy on six numbers, cost a cycle several times more: tens of microseconds).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from functools import cache, cached_property
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
BLOCK = "HHHBB2xB2xH"
QUANTITIES = 7
assert struct.calcsize("<" + BLOCK) == TELEMETRY_LENGTH


@cache
def _blocks(count: int) -> struct.Struct:
    return struct.Struct("<" + BLOCK * count)


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
    status packets' error bytes. ``readings`` gives one :class:`Reading` per id."""

    def __init__(self, ids: Sequence[int], blocks: bytes, errors: Sequence[int]) -> None:
        raw = _blocks(len(ids)).unpack(blocks)
        self.ids = tuple(ids)
        self.errors = tuple(errors)
        self.position = raw[0::QUANTITIES]
        self.velocity = [(-(v & 0x7FFF) if v & 0x8000 else v) * RAD_PER_TICK for v in raw[1::QUANTITIES]]
        self.load = [(-(v & 0x3FF) if v & 0x400 else v & 0x3FF) / LOAD_FULL_SCALE for v in raw[2::QUANTITIES]]
        self.voltage = [v * VOLTAGE_UNIT_V for v in raw[3::QUANTITIES]]
        self.temperature = [float(v) for v in raw[4::QUANTITIES]]
        self.moving = [v != 0 for v in raw[5::QUANTITIES]]
        self.current = [(-(v & 0x7FFF) if v & 0x8000 else v) * CURRENT_UNIT_A for v in raw[6::QUANTITIES]]
        # the raw voltages and temperatures: they change on a seconds scale (in 0.1 V and 1 degC
        # steps), so the backend judges them only when these differ from the last judged
        self.slow = raw[3::QUANTITIES] + raw[4::QUANTITIES]

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
    return Telemetry((0,), block, (error,)).reading(0)
