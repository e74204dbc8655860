"""The STS3215's control table: each register's address, size, encoding, memory and default.

Addresses and sizes are Feetech's STS/SMS memory table (as LeRobot's feetech tables and the
vendor's SDK use them). Signed registers are sign-magnitude, with the sign in the bit named
here: the homing offset in bit 11 (so -2047..2047), goal position, speeds and current in bit 15,
the load in bit 10. Registers below 40 are EEPROM: they survive power-off only when written with
the ``Lock`` register at 0. Defaults are a factory-fresh servo's where the table gives one, else
marked as our choice; the simulator starts from them.

Everything here is in the servo's own units (ticks, 0.1 %, 6.5 mA, 0.1 V, degC); radians and SI
units come in :mod:`.calibration` and :mod:`.telemetry`, the one place each is converted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from . import wire

MODEL_NUMBER_STS3215 = 777  # Model_Number (address 3) of an STS3215 (LeRobot's MODEL_NUMBER_TABLE)
TICKS_PER_TURN = 4096  # 12-bit magnetic encoder
#: the Baud_Rate register's codes (Feetech's table, as LeRobot's STS_SMS_SERIES_BAUDRATE_TABLE)
BAUD_CODES = {1_000_000: 0, 500_000: 1, 250_000: 2, 128_000: 3, 115_200: 4, 57_600: 5, 38_400: 6, 19_200: 7}
BAUD_OF_CODE = {code: baud for baud, code in BAUD_CODES.items()}
RETURN_DELAY_UNIT_S = 2e-6  # Return_Delay_Time counts 2 us
EEPROM_END = 40  # addresses below are EEPROM
CURRENT_UNIT_A = 6.5e-3  # Present_Current counts 6.5 mA
VOLTAGE_UNIT_V = 0.1
LOAD_FULL_SCALE = 1000  # Present_Load and the torque limits count 0.1 % of the stall torque
ACCELERATION_UNIT = 100  # Acceleration counts 100 ticks/s^2


@dataclass(frozen=True)
class Register:
    name: str
    address: int
    size: int
    default: int = 0
    sign_bit: int | None = None
    writable: bool = True

    @property
    def eeprom(self) -> bool:
        return self.address < EEPROM_END

    @property
    def span(self) -> range:
        return range(self.address, self.address + self.size)

    def encode(self, value: int) -> bytes:
        """``value`` (signed where the register is) as the bytes the servo stores; raises
        :class:`~.wire.EncodingError` naming the register when it cannot be carried."""
        try:
            raw = wire.encode_sign_magnitude(value, self.sign_bit) if self.sign_bit is not None else int(value)
            return wire.to_bytes(raw, self.size)
        except wire.EncodingError as exc:
            raise wire.EncodingError(f"{self.name} = {value}: {exc}") from None

    def decode(self, data: bytes) -> int:
        raw = wire.from_bytes(data)
        return wire.decode_sign_magnitude(raw, self.sign_bit) if self.sign_bit is not None else raw


_TABLE = (
    Register("Firmware_Major_Version", 0, 1, 3, writable=False),  # 3.10: our choice of a current version
    Register("Firmware_Minor_Version", 1, 1, 10, writable=False),
    Register("Model_Number", 3, 2, MODEL_NUMBER_STS3215, writable=False),
    Register("ID", 5, 1, 1),
    Register("Baud_Rate", 6, 1, BAUD_CODES[1_000_000]),
    Register("Return_Delay_Time", 7, 1, 250),  # 500 us from the factory (LeRobot sets it to 0)
    Register("Response_Status_Level", 8, 1, 1),
    Register("Min_Position_Limit", 9, 2, 0),
    Register("Max_Position_Limit", 11, 2, TICKS_PER_TURN - 1),
    Register("Max_Temperature_Limit", 13, 1, 70),  # degC: Feetech's overheat protection threshold
    Register("Max_Voltage_Limit", 14, 1, 80),  # 0.1 V; 8.0 V for the 7.4 V servo: our choice
    Register("Min_Voltage_Limit", 15, 1, 40),  # 0.1 V; its rated range starts at 4 V
    Register("Max_Torque_Limit", 16, 2, LOAD_FULL_SCALE),
    Register("Phase", 18, 1, 0),
    Register("Unloading_Condition", 19, 1, 0),
    Register("LED_Alarm_Condition", 20, 1, 0),
    Register("P_Coefficient", 21, 1, 32),
    Register("D_Coefficient", 22, 1, 32),
    Register("I_Coefficient", 23, 1, 0),
    Register("Minimum_Startup_Force", 24, 2, 16),
    Register("CW_Dead_Zone", 26, 1, 1),
    Register("CCW_Dead_Zone", 27, 1, 1),
    Register("Protection_Current", 28, 2, 500),  # 6.5 mA units: 3.25 A, our choice
    Register("Angular_Resolution", 30, 1, 1),
    Register("Homing_Offset", 31, 2, 0, sign_bit=11),
    Register("Operating_Mode", 33, 1, 0),
    Register("Protective_Torque", 34, 1, 20),
    Register("Protection_Time", 35, 1, 200),
    Register("Overload_Torque", 36, 1, 80),
    Register("Torque_Enable", 40, 1, 0),
    Register("Acceleration", 41, 1, 0),
    Register("Goal_Position", 42, 2, 0, sign_bit=15),
    Register("Goal_Time", 44, 2, 0),
    Register("Goal_Velocity", 46, 2, 0, sign_bit=15),
    Register("Torque_Limit", 48, 2, LOAD_FULL_SCALE),
    Register("Lock", 55, 1, 1),
    Register("Present_Position", 56, 2, 0, writable=False),
    Register("Present_Velocity", 58, 2, 0, sign_bit=15, writable=False),
    Register("Present_Load", 60, 2, 0, sign_bit=10, writable=False),
    Register("Present_Voltage", 62, 1, 74, writable=False),
    Register("Present_Temperature", 63, 1, 25, writable=False),
    Register("Status", 65, 1, 0, writable=False),
    Register("Moving", 66, 1, 0, writable=False),
    Register("Present_Current", 69, 2, 0, sign_bit=15, writable=False),
    Register("Maximum_Acceleration", 85, 1, 254),
)

REGISTERS: Mapping[str, Register] = {register.name: register for register in _TABLE}
MEMORY_SIZE = 128  # bytes of the simulated table; addresses past the last register read as 0


def register(name: str) -> Register:
    try:
        return REGISTERS[name]
    except KeyError:
        raise KeyError(f"no register {name!r} in the STS3215 control table") from None


#: what each control cycle reads from every servo in one sync read: position through current
TELEMETRY = ("Present_Position", "Present_Velocity", "Present_Load", "Present_Voltage", "Present_Temperature",
             "Status", "Moving", "Present_Current")
TELEMETRY_START = REGISTERS["Present_Position"].address
TELEMETRY_LENGTH = REGISTERS["Present_Current"].address + 2 - TELEMETRY_START  # 15 bytes: 56..70


def unpack(block: bytes, start: int, names: tuple[str, ...]) -> dict[str, int]:
    """Register values out of a block read from ``start`` (a sync read's data)."""
    values = {}
    for name in names:
        reg = REGISTERS[name]
        offset = reg.address - start
        values[name] = reg.decode(block[offset:offset + reg.size])
    return values


def default_memory() -> bytearray:
    """A factory-fresh servo's control table."""
    memory = bytearray(MEMORY_SIZE)
    for reg in _TABLE:
        memory[reg.address:reg.address + reg.size] = reg.encode(reg.default)
    return memory
