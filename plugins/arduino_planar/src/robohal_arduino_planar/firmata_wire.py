"""Codec of the Firmata protocol, the messages a servo arm needs (no I/O).

Firmata is the binary protocol of StandardFirmata, the sketch in the Arduino IDE's examples.
Sources: the Firmata protocol documentation (firmata/protocol: protocol.md, servos.md,
capability query in protocol.md) and StandardFirmata.ino (Firmata 2.5). A byte with its top bit
set starts a message; data bytes carry 7 bits, so a 14-bit value travels as two bytes, least
significant first. Messages used here:

===========================  =============================  ===========================================
message                      bytes                          meaning
===========================  =============================  ===========================================
set pin mode                 ``F4 pin mode``                mode 1 = output, 4 = servo
analog (servo) write         ``E0|pin lsb msb``             pins 0..15: a servo's value (below 544:
                                                            degrees, else microseconds; Servo library)
extended analog              ``F0 6F pin lsb msb F7``       the same for any pin (here: pins above 15)
digital pin value            ``F5 pin value``               one output pin high (1) or low (0)
servo config                 ``F0 70 pin min(2) max(2) F7`` attach with pulse limits (us)
sampling interval            ``F0 7A ms(2) F7``             the board's reporting period (default 19 ms)
report version               ``F9`` / ``F9 major minor``    the protocol version (query / answer)
report firmware              ``F0 79 F7`` / ``F0 79 major   the firmware's version and name (each
                             minor name... F7``             character as two 7-bit bytes)
capability query / response  ``F0 6B F7`` / ``F0 6C         per pin: (mode, resolution) pairs, then 7F
                             (mode res)* 7F ... F7``
string                       ``F0 71 text... F7``           a message from the board (two 7-bit bytes
                                                            a character)
system reset                 ``FF``                         the board's own reset of its pin state
===========================  =============================  ===========================================

Firmata has no acknowledgement: nothing answers a write. That is what the backend built on it
cannot know (see :mod:`.firmata_backend`).
"""

from __future__ import annotations

from dataclasses import dataclass

BAUDRATE = 57600  # StandardFirmata: Firmata.begin(57600)
BITS_PER_BYTE = 10  # 8N1: a start bit, 8 data bits, a stop bit

START_SYSEX = 0xF0
END_SYSEX = 0xF7
SET_PIN_MODE = 0xF4
SET_DIGITAL_PIN_VALUE = 0xF5
ANALOG_MESSAGE = 0xE0
DIGITAL_MESSAGE = 0x90
REPORT_VERSION = 0xF9
SYSTEM_RESET = 0xFF
# sysex commands
EXTENDED_ANALOG = 0x6F
SERVO_CONFIG = 0x70
STRING_DATA = 0x71
REPORT_FIRMWARE = 0x79
SAMPLING_INTERVAL = 0x7A
CAPABILITY_QUERY = 0x6B
CAPABILITY_RESPONSE = 0x6C
# pin modes (protocol.md)
MODE_INPUT, MODE_OUTPUT, MODE_ANALOG, MODE_PWM, MODE_SERVO = 0, 1, 2, 3, 4
MODE_I2C, MODE_PULLUP = 6, 0x0B
MODE_NAMES = {0: "input", 1: "output", 2: "analog", 3: "pwm", 4: "servo", 5: "shift", 6: "i2c",
              7: "onewire", 8: "stepper", 9: "encoder", 10: "serial", 11: "pullup"}
MAX_14_BITS = 0x3FFF


def two_bytes(value: int) -> bytes:
    """A 14-bit value as Firmata's two 7-bit bytes, least significant first."""
    if not 0 <= value <= MAX_14_BITS:
        raise ValueError(f"a Firmata value is 0..{MAX_14_BITS}, got {value}")
    return bytes((value & 0x7F, value >> 7))


def from_two_bytes(lsb: int, msb: int) -> int:
    return (lsb & 0x7F) | ((msb & 0x7F) << 7)


def sysex(command: int, payload: bytes = b"") -> bytes:
    if any(b > 0x7F for b in payload):
        raise ValueError("sysex data bytes are 7-bit")
    return bytes((START_SYSEX, command)) + payload + bytes((END_SYSEX,))


# ---------------------------------------------------------------- host -> board


def set_pin_mode(pin: int, mode: int) -> bytes:
    return bytes((SET_PIN_MODE, pin, mode))


def servo_config(pin: int, min_us: int, max_us: int) -> bytes:
    return sysex(SERVO_CONFIG, bytes((pin,)) + two_bytes(min_us) + two_bytes(max_us))


def servo_write(pin: int, value: int) -> bytes:
    """The write of a servo's value: an analog message for pins 0..15, else extended analog."""
    if pin <= 15 and 0 <= value <= MAX_14_BITS:  # the common case in one bytes() (it runs every cycle)
        return bytes((ANALOG_MESSAGE | pin, value & 0x7F, value >> 7))
    if pin <= 15:
        return bytes((ANALOG_MESSAGE | pin,)) + two_bytes(value)
    return sysex(EXTENDED_ANALOG, bytes((pin,)) + two_bytes(value))


def digital_pin_value(pin: int, high: bool) -> bytes:
    return bytes((SET_DIGITAL_PIN_VALUE, pin, 1 if high else 0))


def sampling_interval(ms: int) -> bytes:
    return sysex(SAMPLING_INTERVAL, two_bytes(ms))


def version_query() -> bytes:
    return bytes((REPORT_VERSION,))


def firmware_query() -> bytes:
    return sysex(REPORT_FIRMWARE)


def capability_query() -> bytes:
    return sysex(CAPABILITY_QUERY)


# ---------------------------------------------------------------- board -> host


def version_report(major: int, minor: int) -> bytes:
    return bytes((REPORT_VERSION, major, minor))


def firmware_report(major: int, minor: int, name: str) -> bytes:
    return sysex(REPORT_FIRMWARE, bytes((major, minor)) + b"".join(two_bytes(ord(c)) for c in name))


def capability_response(pins: list[list[tuple[int, int]]]) -> bytes:
    body = b"".join(bytes(b for mode in modes for b in mode) + b"\x7f" for modes in pins)
    return sysex(CAPABILITY_RESPONSE, body)


def string_data(text: str) -> bytes:
    return sysex(STRING_DATA, b"".join(two_bytes(ord(c)) for c in text))


# ---------------------------------------------------------------- messages


@dataclass(frozen=True)
class Message:
    """One decoded message: ``kind`` names it, ``pin`` and ``value`` where it has them, ``data``
    the sysex payload (or the two bytes of a three-byte message)."""

    kind: str
    pin: int | None = None
    value: int | None = None
    data: bytes = b""


#: three-byte messages: the command (top nibble for the channel ones), and its name
_CHANNEL = {ANALOG_MESSAGE: "analog", DIGITAL_MESSAGE: "digital", 0xC0: "report_analog", 0xD0: "report_digital"}
_THREE = {SET_PIN_MODE: "set_pin_mode", SET_DIGITAL_PIN_VALUE: "digital_pin_value", REPORT_VERSION: "version"}


class Parser:
    """Splits a byte stream into :class:`Message` s, either way. A data byte outside a message
    is dropped, as Firmata's parser drops it; a new command byte ends an unfinished message.
    ``from_host``: the board's side, where ``F9`` is the version query, a message of one byte
    (the answer carries two data bytes)."""

    MAX_SYSEX = 1024  # our choice: a longer sysex is noise (StandardFirmata keeps 64 bytes)

    def __init__(self, from_host: bool = False) -> None:
        self.from_host = from_host
        self._command: int | None = None
        self._data = bytearray()
        self._sysex = False
        self.dropped = 0

    def feed(self, data: bytes) -> list[Message]:
        out = []
        for byte in data:
            if self._sysex:
                if byte == END_SYSEX:
                    self._sysex = False
                    if self._data:
                        out.append(_sysex_message(bytes(self._data)))
                    self._data.clear()
                elif byte & 0x80:  # a command inside a sysex: the sysex was cut
                    self._sysex = False
                    self.dropped += len(self._data)
                    self._data.clear()
                    self._start(byte, out)
                elif len(self._data) < self.MAX_SYSEX:
                    self._data.append(byte)
                continue
            if byte & 0x80:
                if self._command is not None:
                    self.dropped += 1 + len(self._data)
                self._start(byte, out)
                continue
            if self._command is None:
                self.dropped += 1
                continue
            self._data.append(byte)
            if len(self._data) == 2:
                out.append(_short_message(self._command, bytes(self._data)))
                self._command = None
                self._data.clear()
        return out

    def _start(self, byte: int, out: list[Message]) -> None:
        self._data.clear()
        self._command = None
        if byte == START_SYSEX:
            self._sysex = True
        elif byte == SYSTEM_RESET:
            out.append(Message("system_reset"))
        elif byte == REPORT_VERSION and self.from_host:
            out.append(Message("version"))
        elif byte == REPORT_VERSION or byte in _THREE or (byte & 0xF0) in _CHANNEL:
            self._command = byte
        else:
            self.dropped += 1


def _short_message(command: int, data: bytes) -> Message:
    if command in _THREE:
        name = _THREE[command]
        if name == "version":
            return Message("version", value=data[0], data=data)
        return Message(name, pin=data[0], value=data[1], data=data)
    name = _CHANNEL[command & 0xF0]
    return Message(name, pin=command & 0x0F, value=from_two_bytes(data[0], data[1]), data=data)


def _sysex_message(data: bytes) -> Message:
    command, payload = data[0], data[1:]
    if command == EXTENDED_ANALOG and len(payload) >= 2:
        value = 0
        for shift, byte in enumerate(payload[1:]):
            value |= (byte & 0x7F) << (7 * shift)
        return Message("analog", pin=payload[0], value=value, data=payload)
    names = {SERVO_CONFIG: "servo_config", SAMPLING_INTERVAL: "sampling_interval", REPORT_FIRMWARE: "firmware",
             CAPABILITY_QUERY: "capability_query", CAPABILITY_RESPONSE: "capabilities", STRING_DATA: "string"}
    return Message(names.get(command, f"sysex_{command:02x}"), data=payload)


def decode_firmware(message: Message) -> tuple[int, int, str]:
    """(major, minor, name) of a firmware report."""
    data = message.data
    if len(data) < 2:
        raise ValueError("a firmware report has at least its version")
    name = "".join(chr(from_two_bytes(data[i], data[i + 1])) for i in range(2, len(data) - 1, 2))
    return data[0], data[1], name


def decode_capabilities(message: Message) -> list[dict[int, int]]:
    """Per pin, its modes and their resolutions."""
    pins: list[dict[int, int]] = [{}]
    data = message.data
    i = 0
    while i < len(data):
        if data[i] == 0x7F:
            pins.append({})
            i += 1
            continue
        if i + 1 >= len(data):
            raise ValueError("a capability response ends inside a (mode, resolution) pair")
        pins[-1][data[i]] = data[i + 1]
        i += 2
    return pins[:-1]


def decode_string(message: Message) -> str:
    data = message.data
    return "".join(chr(from_two_bytes(data[i], data[i + 1])) for i in range(0, len(data) - 1, 2))


def decode_servo_config(message: Message) -> tuple[int, int, int]:
    """(pin, min_us, max_us) of a servo config."""
    data = message.data
    if len(data) < 5:
        raise ValueError("a servo config carries a pin and two 14-bit pulse widths")
    return data[0], from_two_bytes(data[1], data[2]), from_two_bytes(data[3], data[4])
