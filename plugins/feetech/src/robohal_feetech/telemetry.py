"""What a servo reports each cycle, in SI units: the one place the servo's own units are converted.

A control cycle reads registers 56..70 of every servo in one sync read (:data:`~.registers.TELEMETRY`);
:func:`reading` turns one servo's block into a :class:`Reading`. Positions stay in ticks here:
only the calibration knows the angle they mean (:mod:`.calibration`).
"""

from __future__ import annotations

from typing import NamedTuple

from . import wire
from .registers import (
    CURRENT_UNIT_A,
    LOAD_FULL_SCALE,
    TICKS_PER_TURN,
    VOLTAGE_UNIT_V,
)

RAD_PER_TICK = 2.0 * 3.141592653589793 / TICKS_PER_TURN


class Reading(NamedTuple):  # (a tuple: built for every servo every cycle, cheaply)
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


def _signed(raw: int, sign_bit: int) -> int:
    magnitude = raw & ((1 << sign_bit) - 1)
    return -magnitude if raw & (1 << sign_bit) else magnitude


def reading(block: bytes, error: int = 0) -> Reading:
    """A :class:`Reading` from the telemetry block of a sync read (and the packet's error byte).

    The layout is :data:`~.registers.TELEMETRY`'s, read straight from the bytes (this runs for
    every servo every cycle); a test holds it to the control table's decoders."""
    b = block
    return Reading(
        position=b[0] | b[1] << 8,  # 56 Present_Position
        velocity=_signed(b[2] | b[3] << 8, 15) * RAD_PER_TICK,  # 58 Present_Velocity
        load=_signed(b[4] | b[5] << 8, 10) / LOAD_FULL_SCALE,  # 60 Present_Load
        voltage=b[6] * VOLTAGE_UNIT_V,  # 62 Present_Voltage
        temperature=float(b[7]),  # 63 Present_Temperature
        moving=bool(b[10]),  # 66 Moving
        current=_signed(b[13] | b[14] << 8, 15) * CURRENT_UNIT_A,  # 69 Present_Current
        errors=wire.error_names(error),
    )
