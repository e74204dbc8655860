"""A simulated STS3215: its control table and the motor, gears and load behind it.

No I/O and no clock of its own: the simulator (:mod:`.simulator`) hands it the instructions
addressed to it and advances it in time (:meth:`SimServo.advance`). Its rules, each sourced or
marked as our choice:

- **Control table** (:mod:`.registers`): reads return the stored bytes; writes to read-only
  registers are ignored; EEPROM registers (below address 40) written while ``Lock`` is 1 take
  effect but are not saved, so a power cycle (:meth:`power_cycle`) brings the saved value back
  (Feetech's memory table: the lock flag protects the EEPROM); an ``ID`` or ``Baud_Rate`` write
  takes effect after the status packet that answers it.
- **Position** (Feetech's manual): ``Present_Position = (encoder - Homing_Offset) mod 4096``;
  in position mode the servo drives its present position toward ``Goal_Position`` (clamped to
  ``Min/Max_Position_Limit``), never across the wrap point: a goal across it is reached the long
  way round, or not at all where a mechanical stop is in the way.
- **Motion** (our choice, a model with the servo's published figures): the servo runs its own
  setpoint to the goal at up to the no-load 0.192 s/60 deg at 7.4 V (STS3215, 7.4 V), in
  proportion to the supply voltage, or ``Goal_Velocity`` when set, and ``Acceleration`` x 100
  ticks/s^2 (254 when 0); the horn follows that setpoint with a lag of 20 ms at
  ``P_Coefficient`` 32 (longer for a smaller P); the setpoint keeps within twice that lag's
  distance at full speed of the horn, so a blocked servo's does not wind up.
- **Load and current** (our choice): a free joint needs little effort (3 % of the stall torque,
  friction); a joint against a stop or an object is pushed with its error over 64 ticks (at P 32),
  saturated at ``Torque_Limit`` (0.1 %) and at the current ``Protection_Current`` allows.
  ``Present_Load`` is that effort, ``Present_Current`` the stall current (2.7 A) times it plus
  0.15 A no-load while it turns: a blocked joint's load and current stay high (a stall).
- **Protection** (register names Feetech's, behaviour our choice): above
  ``Max_Temperature_Limit`` the torque goes off (error bit OVERHEAT); an effort above
  ``Overload_Torque`` % for ``Protection_Time`` x 10 ms is cut back to ``Protective_Torque`` %
  (error bit OVERLOAD); a supply outside ``Min/Max_Voltage_Limit`` sets error bit VOLTAGE.
- **Heat** (our choice): 0.03 degC/(A^2 s) in, a 300 s time constant out to 25 degC: a stalled
  servo passes 65 degC in about a minute.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import wire
from .registers import (
    ACCELERATION_UNIT,
    BAUD_OF_CODE,
    CURRENT_UNIT_A,
    EEPROM_END,
    LOAD_FULL_SCALE,
    REGISTERS,
    TICKS_PER_TURN,
    VOLTAGE_UNIT_V,
    default_memory,
)

RAD_PER_TICK = 2.0 * math.pi / TICKS_PER_TURN
NO_LOAD_SPEED = math.radians(60.0) / 0.192 / RAD_PER_TICK  # ticks/s at RATED_VOLTAGE
RATED_VOLTAGE = 7.4
LOOP_TIME_CONSTANT = 0.02  # s at P_Coefficient 32
FULL_EFFORT_ERROR = 64.0  # ticks of error for full effort at P_Coefficient 32
STALL_CURRENT = 2.7  # A at full effort
IDLE_CURRENT = 0.15  # A while turning
AMBIENT = 25.0  # degC
HEATING = 0.03  # degC per A^2 s
COOLING_TIME = 300.0  # s
MOVING_SPEED = 20.0  # ticks/s: above, Moving reads 1
FRICTION_EFFORT = 0.03  # of the stall torque, to keep a free joint turning


@dataclass
class Stops:
    """Where the mechanism stops the encoder, in unwrapped raw ticks."""

    low: float
    high: float


class SimServo:
    """One simulated servo (see the module docstring)."""

    def __init__(self, servo_id: int, raw: float, stops: Stops, firmware: tuple[int, int] = (3, 10)) -> None:
        self.memory = default_memory()
        self.memory[REGISTERS["ID"].address] = servo_id
        self.memory[0], self.memory[1] = firmware
        self.saved = bytes(self.memory[:EEPROM_END])  # the EEPROM as it survives power-off
        self.raw = float(raw)
        self.stops = stops
        self.object: float | None = None  # an extra stop (raw ticks) for a joint coming from its open side
        self.open_side = 1  # which way of the object (+1: higher raw ticks) the joint is free
        self.velocity = 0.0  # raw ticks/s
        self.profile: float | None = None  # the servo's own setpoint on its way to the goal (present ticks)
        self.profile_speed = 0.0
        self.effort = 0.0  # -1..1 of the stall torque
        self.current = 0.0  # A
        self.temperature = AMBIENT
        self.voltage = RATED_VOLTAGE
        self.overload_for = 0.0  # s the effort has been above Overload_Torque
        self.overloaded = False
        self.overheated = False
        self.pending: tuple[int, bytes] | None = None  # a REG_WRITE waiting for ACTION
        self.silent = False  # answers nothing and hears nothing (a cut cable, a dead servo)

    # -------------------------------------------------------------- the control table

    def get(self, name: str) -> int:
        reg = REGISTERS[name]
        if reg.size == 1:
            return self.memory[reg.address]
        raw = self.memory[reg.address] | self.memory[reg.address + 1] << 8
        if reg.sign_bit is None:
            return raw
        magnitude = raw & ((1 << reg.sign_bit) - 1)
        return -magnitude if raw & (1 << reg.sign_bit) else magnitude

    def set(self, name: str, value: int) -> None:
        reg = REGISTERS[name]
        self.memory[reg.address:reg.address + reg.size] = reg.encode(value)

    @property
    def id(self) -> int:
        return self.memory[REGISTERS["ID"].address]

    @property
    def baud(self) -> int:
        return BAUD_OF_CODE.get(self.memory[REGISTERS["Baud_Rate"].address], 0)

    def read(self, address: int, length: int) -> bytes:
        """``length`` bytes from ``address`` (past the table: zeros)."""
        self._refresh_present()
        return bytes(self.memory[address:address + length]).ljust(length, b"\0")

    def write(self, address: int, data: bytes) -> None:
        """Store ``data`` at ``address``, register by register (read-only ones are left alone)."""
        locked = self.get("Lock") != 0
        for offset, byte in enumerate(data):
            at = address + offset
            if at >= len(self.memory) or not self._writable(at):
                continue
            self.memory[at] = byte
            if at < EEPROM_END and not locked:
                saved = bytearray(self.saved)
                saved[at] = byte
                self.saved = bytes(saved)
        if self.get("Torque_Enable") == 0:
            self.overloaded = False

    @staticmethod
    def _writable(address: int) -> bool:
        for reg in REGISTERS.values():
            if address in reg.span:
                return reg.writable
        return True  # unnamed addresses are stored as written (our choice)

    def power_cycle(self) -> None:
        """Power off and on: RAM back to its defaults, EEPROM to what was saved."""
        memory = default_memory()
        memory[:EEPROM_END] = self.saved
        self.memory = memory
        self.velocity = self.effort = self.current = 0.0
        self.pending = None
        self.overloaded = self.overheated = False

    def error_byte(self) -> int:
        error = 0
        low, high = self.get("Min_Voltage_Limit") * VOLTAGE_UNIT_V, self.get("Max_Voltage_Limit") * VOLTAGE_UNIT_V
        if not low <= self.voltage <= high:
            error |= wire.ErrorBit.VOLTAGE
        if self.overheated:
            error |= wire.ErrorBit.OVERHEAT
        if self.overloaded:
            error |= wire.ErrorBit.OVERLOAD
        return int(error)

    # -------------------------------------------------------------- the mechanism

    @property
    def present(self) -> float:
        """The present position, unrounded (0 <= present < 4096)."""
        return (self.raw - self.get("Homing_Offset")) % TICKS_PER_TURN

    def hand(self, raw: float) -> None:
        """A hand moves the joint (torque off, or against the motor), within its stops."""
        self.raw = min(max(raw, self.stops.low), self.stops.high)
        self.velocity, self.profile, self.profile_speed = 0.0, None, 0.0

    def place_object(self, raw: float | None, open_side: int = 1) -> None:
        """Something at ``raw`` ticks that stops the joint coming from ``open_side`` (+1: from higher
        ticks); from the other side it is not in the way (a jaw closed past a part holds none)."""
        self.object, self.open_side = raw, open_side

    def _limits(self) -> tuple[float, float]:
        low, high = self.stops.low, self.stops.high
        if self.object is not None and (self.raw - self.object) * self.open_side >= 0:
            if self.open_side > 0:
                low = max(low, self.object)
            else:
                high = min(high, self.object)
        return low, high

    def advance(self, dt: float, supply: float) -> None:
        """Move on by ``dt`` seconds with the bus's supply at ``supply`` volts."""
        if dt <= 0:
            return
        self.voltage = supply
        torque_on = self.get("Torque_Enable") != 0 and not self.overheated
        if torque_on:
            self._drive(dt)
        else:
            self.velocity, self.effort, self.profile, self.profile_speed = 0.0, 0.0, None, 0.0
        moving = abs(self.velocity) > MOVING_SPEED
        self.current = STALL_CURRENT * abs(self.effort) + (IDLE_CURRENT if moving else 0.0)
        self._heat(dt)

    def _drive(self, dt: float) -> None:
        p_gain = max(self.get("P_Coefficient"), 1)
        low_limit, high_limit = self.get("Min_Position_Limit"), self.get("Max_Position_Limit")
        goal = float(self.get("Goal_Position"))
        if low_limit < high_limit:
            goal = min(max(goal, low_limit), high_limit)
        present = self.present
        if self.profile is None:
            self.profile = present
        # the servo's own profile: its setpoint runs to the goal at the speed and acceleration allowed
        # (in present-position numbers: it never turns across the wrap point)
        speed = NO_LOAD_SPEED * self.voltage / RATED_VOLTAGE
        if self.get("Goal_Velocity"):
            speed = min(speed, abs(self.get("Goal_Velocity")))
        acceleration = (self.get("Acceleration") or 254) * ACCELERATION_UNIT
        left = goal - self.profile
        braking = math.sqrt(2.0 * acceleration * abs(left))  # the speed that still stops at the goal
        wanted = math.copysign(min(speed, braking), left)
        self.profile_speed += max(-acceleration * dt, min(acceleration * dt, wanted - self.profile_speed))
        step = self.profile_speed * dt
        if abs(step) >= abs(left):
            step, self.profile_speed = left, 0.0
        self.profile += step
        # never further ahead of the horn than twice its lag at full speed: a blocked servo's
        # setpoint does not wind up past what it pushes against (our choice)
        lead = 2.0 * speed * LOOP_TIME_CONSTANT * 32.0 / p_gain
        if abs(self.profile - present) > lead:
            self.profile = present + math.copysign(lead, self.profile - present)
            self.profile_speed = min(abs(self.profile_speed), speed) * (1 if self.profile > present else -1)
        # the horn follows the setpoint with the loop's lag, unless a stop or an object is in the way
        lag = LOOP_TIME_CONSTANT * 32.0 / p_gain
        move = (self.profile - present) * (1.0 - math.exp(-dt / lag))
        low, high = self._limits()
        target = self.raw + move
        blocked = not low <= target <= high
        self.raw = min(max(target, low), high)
        self.velocity = (self.raw - (target - move)) / dt
        # effort: what a free joint needs is small (friction); a blocked one is pushed ever harder
        limit = min(self.get("Torque_Limit"), self.get("Max_Torque_Limit")) / LOAD_FULL_SCALE
        limit = min(limit, self.get("Protection_Current") * CURRENT_UNIT_A / STALL_CURRENT)
        if self.overloaded:
            limit = min(limit, self.get("Protective_Torque") / 100.0)
        error = self.profile - self.present
        if blocked or abs(self.velocity) < MOVING_SPEED:
            demand = error * p_gain / (32.0 * FULL_EFFORT_ERROR)
        else:
            demand = math.copysign(FRICTION_EFFORT, self.velocity) + (error - self.velocity * lag) / FULL_EFFORT_ERROR
        self.effort = max(-limit, min(limit, demand))
        self._protect(dt)

    def _protect(self, dt: float) -> None:
        if abs(self.effort) * 100.0 >= self.get("Overload_Torque"):
            self.overload_for += dt
            if self.overload_for >= self.get("Protection_Time") * 0.01:
                self.overloaded = True
        else:
            self.overload_for = 0.0
            self.overloaded = False

    def _heat(self, dt: float) -> None:
        self.temperature += (HEATING * self.current ** 2 - (self.temperature - AMBIENT) / COOLING_TIME) * dt
        limit = self.get("Max_Temperature_Limit")
        if self.temperature > limit:
            self.overheated = True
        elif self.temperature < limit - 5.0:  # cooled down: the torque may come back (our choice)
            self.overheated = False

    def _refresh_present(self) -> None:
        """Write the measured quantities into their registers (sign-magnitude where signed)."""
        memory = self.memory

        def put(address: int, value: int, sign_bit: int | None = None) -> None:
            if sign_bit is not None and value < 0:
                value = -value | (1 << sign_bit)
            memory[address] = value & 0xFF
            memory[address + 1] = value >> 8 & 0xFF

        put(56, round(self.present) % TICKS_PER_TURN)  # Present_Position
        put(58, max(-32767, min(32767, round(self.velocity))), 15)  # Present_Velocity
        put(60, round(self.effort * LOAD_FULL_SCALE), 10)  # Present_Load
        memory[62] = max(0, min(255, round(self.voltage / VOLTAGE_UNIT_V)))  # Present_Voltage
        memory[63] = max(0, min(255, round(self.temperature)))  # Present_Temperature
        memory[65] = self.error_byte()  # Status
        memory[66] = int(abs(self.velocity) > MOVING_SPEED)  # Moving
        sign = -1 if self.effort < 0 else 1
        put(69, sign * min(32767, round(self.current / CURRENT_UNIT_A)), 15)  # Present_Current
