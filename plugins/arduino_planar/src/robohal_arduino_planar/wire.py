"""Codec of the robohal planar-arm serial line protocol (version 3); see PROTOCOL.md.

Pure functions and frozen dataclasses, no I/O. A frame is one ASCII line::

    <WORD> <seq|-> <fields...> *<CC>\\n

where ``CC`` is the CRC-8 (polynomial 0x07, init 0, CRC-8/SMBUS) of every byte before the ``*``,
as two hex digits. Hosts send commands (:func:`encode_command` or ``Command.encode()``) and decode
replies with :func:`decode_reply`; the firmware emulator decodes commands with
:func:`decode_command`, which refuses a frame exactly as the firmware does.

Every decoder raises :class:`FrameError` (a ``ValueError``) on bad input, whatever the bytes are.
"""

from __future__ import annotations

import enum
import sys
from dataclasses import dataclass

# Each value is the firmware's (avr/robohal_planar/robohal_planar.ino, named in brackets) and
# PROTOCOL.md's; the emulator must match the firmware, so change them there first.
PROTOCOL_VERSION = 3           # [PROTOCOL_VERSION]: 2 added the tool servo, 3 the channels (SERVO, MOVE, SERVOS, POWER)
PLANAR_PROTOCOLS = (2, 3)      # the versions that drive the planar arm the same way
FIRMWARE_NAME = "robohal_planar"  # [FW_NAME]
FIRMWARE_VERSION = "3.1.0"     # [FW_VERSION]: 3.1.0 added POWER <pin> 2, the soft start
BAUDRATE = 115200              # [Serial.begin(115200)]
MAX_COMMAND_LINE = 48          # [LINE_MAX] bytes without the newline; longer -> LINE_TOO_LONG
MAX_REPLY_LINE = 160           # host side, our choice: the firmware's longest (STATE) is 127 bytes
MAX_TOKENS = 8                 # [MAX_TOKENS]
SEQ_MODULO = 65536             # sequence numbers are 0..65535 (the firmware's u16 parser) and wrap
ENVELOPE_US = (500, 2500)      # [ENVELOPE_MIN_US, ENVELOPE_MAX_US]: no limit configuration leaves it
DEFAULT_LIMITS_US = (1000, 2000)  # [DEFAULT_MIN_US, DEFAULT_MAX_US]
WATCHDOG_RANGE_MS = (50, 60000)   # [WATCHDOG_MIN_MS, WATCHDOG_MAX_MS], or 0 = off
DEFAULT_WATCHDOG_MS = 1000     # [DEFAULT_WATCHDOG_MS]
DEFAULT_WATCHDOG_ACTION = "detach"  # [watchdogDetach = true]
WATCHDOG_ACTIONS = ("hold", "detach")
SERVO_COUNT = 3                # [SERVO_COUNT]: the arm's two and the tool
ARM_SERVOS = 2                 # SET, LIMITS, ACK: servo 1 and servo 2
SERVO_PINS = (9, 10)           # servo_timer1.h: OC1A = D9, OC1B = D10 (the arm)
TOOL_PIN = 6                   # servo_tool.h: D6 (PD6), the tool (a gripper or a pen lift)
MAX_CHANNELS = 12              # servo_channels.h [CHANNELS_MAX]: the Servo library's count per 16-bit timer
CHANNEL_PINS = range(2, 20)    # [CHANNEL_PIN_MIN..CHANNEL_PIN_MAX]: D2..D13, A0..A5 as 14..19
POWER_SOFT_START = 2           # POWER's state: high after the Braccio library's ramp (soft_start.h)
#: the ramp's length: the Braccio library's HIGH_LIMIT_TIMEOUT (Braccio.h), 6 s
SOFT_START_S = 6.0
MOVE_WIDTHS = MAX_TOKENS - 3   # widths one MOVE carries: the word, the seq and the first channel take 3 tokens


class ErrorCode(enum.IntEnum):
    """Error codes of ``ERR`` replies; the name is sent along with the number."""

    BAD_CHECKSUM = 1   # CRC mismatch; the frame is ignored and its seq not trusted
    UNKNOWN_CMD = 2    # valid frame, unknown command word
    BAD_ARGS = 3       # wrong argument count or syntax, missing/bad seq, min >= max, bad watchdog value
    OUT_OF_LIMITS = 4  # a width outside a servo's limits, or limits outside the envelope
    LINE_TOO_LONG = 5  # more than MAX_COMMAND_LINE bytes before the newline
    BAD_FRAME = 6      # no "*CC" trailer, or bytes outside printable ASCII
    NO_SETPOINT = 7    # ATTACH before any SET since reset
    WRONG_MODE = 8     # a planar-arm command (SET, ATTACH, LIMITS, TOOL, TLIMITS) once channels are configured
    NO_SERVO = 9       # MOVE names a channel that no SERVO configured


class FrameError(ValueError):
    """A line that is not a valid frame. ``code`` is the error the firmware answers it with."""

    def __init__(self, code: ErrorCode, message: str, seq: int | None = None) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.seq = seq


# ---------------------------------------------------------------- framing


def crc8(data: bytes) -> int:
    """CRC-8/SMBUS: polynomial 0x07, initial value 0, no reflection, no final xor."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def encode_frame(*tokens: object) -> bytes:
    """Joins tokens with spaces and appends the checksum trailer and newline."""
    body = (" ".join(str(t) for t in tokens) + " ").encode("ascii")
    return body + b"*%02X\n" % crc8(body)


def split_frame(line: bytes) -> list[str]:
    """Checks a line's trailer and checksum and returns its tokens.

    ``line`` may end in ``\\n`` or ``\\r\\n``. Raises FrameError (BAD_FRAME or BAD_CHECKSUM).
    """
    if not isinstance(line, (bytes, bytearray)):
        raise TypeError("a frame is bytes")
    line = bytes(line).rstrip(b"\n").rstrip(b"\r")
    if any(b < 0x20 or b > 0x7E for b in line):
        raise FrameError(ErrorCode.BAD_FRAME, "bytes outside printable ASCII")
    star = line.rfind(b"*")
    trailer = line[star + 1:] if star >= 0 else b""
    if star < 0 or len(trailer) != 2 or any(c not in b"0123456789abcdefABCDEF" for c in trailer):
        raise FrameError(ErrorCode.BAD_FRAME, "missing '*CC' checksum trailer")
    body = line[:star]
    if crc8(body) != int(trailer, 16):
        raise FrameError(ErrorCode.BAD_CHECKSUM, f"checksum {trailer.decode()} != {crc8(body):02X}")
    return body.decode("ascii").split()


def parse_u16(token: str) -> int:
    """Decimal 0..65535, digits only (as the firmware parses); raises ValueError."""
    if not (1 <= len(token) <= 5) or not all("0" <= c <= "9" for c in token):
        raise ValueError(f"not a decimal 0..65535: {token!r}")
    value = int(token)
    if value > 65535:
        raise ValueError(f"not a decimal 0..65535: {token!r}")
    return value


def _seq_token(seq: int | None) -> str:
    return "-" if seq is None else str(seq)


def _check_seq(seq: int) -> None:
    if not 0 <= seq < SEQ_MODULO:
        raise ValueError(f"seq must be 0..65535, got {seq}")


# ---------------------------------------------------------------- commands (host -> firmware)


@dataclass(frozen=True)
class Hello:
    """Version query; answered with HelloReply."""

    seq: int

    def encode(self) -> bytes:
        _check_seq(self.seq)
        return encode_frame("HELLO", self.seq)


@dataclass(frozen=True)
class Ping:
    """Liveness check (also feeds the watchdog); answered with Pong."""

    seq: int

    def encode(self) -> bytes:
        _check_seq(self.seq)
        return encode_frame("PING", self.seq)


@dataclass(frozen=True)
class Set:
    """Pulse widths for servo 1 (D9) and servo 2 (D10) in microseconds; attaches both. Ack."""

    seq: int
    width1_us: int
    width2_us: int

    def encode(self) -> bytes:
        _check_seq(self.seq)
        return encode_frame("SET", self.seq, int(self.width1_us), int(self.width2_us))


@dataclass(frozen=True)
class Get:
    """State query; answered with State."""

    seq: int

    def encode(self) -> bytes:
        _check_seq(self.seq)
        return encode_frame("GET", self.seq)


@dataclass(frozen=True)
class Watchdog:
    """Host-silence watchdog: timeout in ms (0 = off, else 50..60000) and action hold|detach."""

    seq: int
    timeout_ms: int
    action: str

    def encode(self) -> bytes:
        _check_seq(self.seq)
        return encode_frame("WDOG", self.seq, int(self.timeout_ms), self.action)


@dataclass(frozen=True)
class Limits:
    """Pulse limits per servo, ((min1, max1), (min2, max2)) in us, within ENVELOPE_US."""

    seq: int
    limits: tuple[tuple[int, int], tuple[int, int]]

    def encode(self) -> bytes:
        _check_seq(self.seq)
        (a, b), (c, d) = self.limits
        return encode_frame("LIMITS", self.seq, int(a), int(b), int(c), int(d))


@dataclass(frozen=True)
class Tool:
    """The tool servo's (D6) pulse width in microseconds within its limits, or 0: no pulses.
    Answered with ToolReply, the width now on the pin."""

    seq: int
    width_us: int

    def encode(self) -> bytes:
        _check_seq(self.seq)
        return encode_frame("TOOL", self.seq, int(self.width_us))


@dataclass(frozen=True)
class ToolLimits:
    """The tool servo's pulse limits (min, max) in us, within ENVELOPE_US."""

    seq: int
    limits: tuple[int, int]

    def encode(self) -> bytes:
        _check_seq(self.seq)
        return encode_frame("TLIMITS", self.seq, int(self.limits[0]), int(self.limits[1]))


@dataclass(frozen=True)
class Attach:
    """Re-attach the arm's servos at their last SET widths (the tool: TOOL). Ack, or NO_SETPOINT."""

    seq: int

    def encode(self) -> bytes:
        _check_seq(self.seq)
        return encode_frame("ATTACH", self.seq)


@dataclass(frozen=True)
class Detach:
    """Stop the pulses on every pin, the tool's too (servos go limp). Ack with widths 0."""

    seq: int

    def encode(self) -> bytes:
        _check_seq(self.seq)
        return encode_frame("DETACH", self.seq)


@dataclass(frozen=True)
class Servo:
    """Channel ``channel`` (1..12) on Arduino pin ``pin`` (2..19) with pulse limits (min, max) in us.
    The first one switches the firmware to channels until its reset. Answered with ServoReply."""

    seq: int
    channel: int
    pin: int
    limits: tuple[int, int]

    def encode(self) -> bytes:
        _check_seq(self.seq)
        return encode_frame("SERVO", self.seq, int(self.channel), int(self.pin), int(self.limits[0]), int(self.limits[1]))


@dataclass(frozen=True)
class Move:
    """Widths (us) for channels ``first``, ``first + 1``, ... (1 to MOVE_WIDTHS of them), each within
    its limits, or 0: that channel's pulses stop. All or nothing. Answered with MoveReply."""

    seq: int
    first: int
    widths_us: tuple[int, ...]

    def encode(self) -> bytes:
        _check_seq(self.seq)
        return encode_frame("MOVE", self.seq, int(self.first), *(int(w) for w in self.widths_us))


@dataclass(frozen=True)
class Servos:
    """Channel state query; answered with ServosReply."""

    seq: int

    def encode(self) -> bytes:
        _check_seq(self.seq)
        return encode_frame("SERVOS", self.seq)


@dataclass(frozen=True)
class Power:
    """Drive the servos' power switch on Arduino pin ``pin`` (2..19, no servo's) high (True) or low;
    with ``soft_start`` (firmware 3.1.0 and later) high after the Braccio library's ramp.
    Answered with PowerReply."""

    seq: int
    pin: int
    on: bool
    soft_start: bool = False

    def encode(self) -> bytes:
        _check_seq(self.seq)
        return encode_frame("POWER", self.seq, int(self.pin), _power_state(self.on, self.soft_start))


Command = (Hello | Ping | Set | Get | Watchdog | Limits | Attach | Detach | Tool | ToolLimits | Servo | Move | Servos
           | Power)


def encode_command(command: Command) -> bytes:
    """The wire bytes of a command, newline included."""
    return command.encode()


def decode_command(line: bytes) -> Command:
    """Decodes a command line as the firmware does, refusing it with the firmware's error code.

    Checks in firmware order: trailer, checksum, token count and seq, command word, arguments.
    State-dependent checks (widths against limits, limits against envelope and setpoints,
    ATTACH without a setpoint) are the receiver's job. The seq of the FrameError is set once the
    frame's checksum and seq were valid.
    """
    if len(bytes(line).rstrip(b"\n").rstrip(b"\r")) > MAX_COMMAND_LINE:
        raise FrameError(ErrorCode.LINE_TOO_LONG, f"more than {MAX_COMMAND_LINE} bytes")
    tokens = split_frame(line)
    if len(tokens) > MAX_TOKENS:
        raise FrameError(ErrorCode.BAD_ARGS, "too many tokens")
    try:
        seq = parse_u16(tokens[1]) if len(tokens) >= 2 else None
    except ValueError:
        seq = None
    if seq is None:
        raise FrameError(ErrorCode.BAD_ARGS, "missing or bad sequence number")
    word, args = tokens[0], tokens[2:]

    def need(n: int) -> None:
        if len(args) != n:
            raise FrameError(ErrorCode.BAD_ARGS, f"{word} takes {n} arguments", seq)

    def number(token: str) -> int:
        try:
            return parse_u16(token)
        except ValueError as exc:
            raise FrameError(ErrorCode.BAD_ARGS, str(exc), seq) from None

    if word == "HELLO":
        need(0)
        return Hello(seq)
    if word == "PING":
        need(0)
        return Ping(seq)
    if word == "SET":
        need(2)
        return Set(seq, number(args[0]), number(args[1]))
    if word == "GET":
        need(0)
        return Get(seq)
    if word == "WDOG":
        need(2)
        timeout = number(args[0])
        if args[1] not in WATCHDOG_ACTIONS:
            raise FrameError(ErrorCode.BAD_ARGS, "watchdog action is hold or detach", seq)
        if timeout != 0 and not WATCHDOG_RANGE_MS[0] <= timeout <= WATCHDOG_RANGE_MS[1]:
            raise FrameError(ErrorCode.BAD_ARGS, "watchdog timeout is 0 or 50..60000 ms", seq)
        return Watchdog(seq, timeout, args[1])
    if word == "LIMITS":
        need(4)
        v = [number(a) for a in args]
        if v[0] >= v[1] or v[2] >= v[3]:
            raise FrameError(ErrorCode.BAD_ARGS, "each min must be below its max", seq)
        return Limits(seq, ((v[0], v[1]), (v[2], v[3])))
    if word == "ATTACH":
        need(0)
        return Attach(seq)
    if word == "DETACH":
        need(0)
        return Detach(seq)
    if word == "TOOL":
        need(1)
        return Tool(seq, number(args[0]))
    if word == "TLIMITS":
        need(2)
        low, high = number(args[0]), number(args[1])
        if low >= high:
            raise FrameError(ErrorCode.BAD_ARGS, "min must be below max", seq)
        return ToolLimits(seq, (low, high))
    if word == "SERVO":
        need(4)
        channel, pin, low, high = (number(a) for a in args)
        if not 1 <= channel <= MAX_CHANNELS or pin not in CHANNEL_PINS or low >= high:
            raise FrameError(ErrorCode.BAD_ARGS, "channel 1..12, pin 2..19, min below max", seq)
        return Servo(seq, channel, pin, (low, high))
    if word == "MOVE":
        if not args[1:]:
            raise FrameError(ErrorCode.BAD_ARGS, "MOVE takes a first channel and 1..5 widths", seq)
        first, *widths = (number(a) for a in args)
        if first < 1 or first + len(widths) - 1 > MAX_CHANNELS:
            raise FrameError(ErrorCode.BAD_ARGS, "channels 1..12", seq)
        return Move(seq, first, tuple(widths))
    if word == "SERVOS":
        need(0)
        return Servos(seq)
    if word == "POWER":
        need(2)
        pin, on = number(args[0]), number(args[1])
        if pin not in CHANNEL_PINS or on > POWER_SOFT_START:
            raise FrameError(ErrorCode.BAD_ARGS, "pin 2..19, state 0, 1 or 2", seq)
        return Power(seq, pin, bool(on), on == POWER_SOFT_START)
    raise FrameError(ErrorCode.UNKNOWN_CMD, f"unknown command {word!r}", seq)


# ---------------------------------------------------------------- replies (firmware -> host)


@dataclass(frozen=True)
class HelloReply:
    seq: int
    protocol: int
    firmware: str
    version: str
    servos: int
    limits: tuple[tuple[int, int], tuple[int, int]]
    tool_limits: tuple[int, int]
    watchdog_ms: int
    watchdog_action: str
    channels: int = 0  # version 3: how many channels SERVO can configure (12); 0 before

    def encode(self) -> bytes:
        (a, b), (c, d) = self.limits
        last = (self.channels,) if self.protocol >= 3 else ()
        return encode_frame("HELLO", self.seq, self.protocol, self.firmware, self.version, self.servos,
                            a, b, c, d, *self.tool_limits, self.watchdog_ms, self.watchdog_action, *last)


@dataclass(frozen=True)
class Pong:
    seq: int

    def encode(self) -> bytes:
        return encode_frame("PONG", self.seq)


@dataclass(frozen=True)
class Ack:
    """Widths now on the pins after SET/ATTACH/DETACH; 0 = that servo has no pulses."""

    seq: int
    widths_us: tuple[int, int]

    def encode(self) -> bytes:
        return encode_frame("ACK", self.seq, *self.widths_us)


@dataclass(frozen=True)
class State:
    """GET reply. Setpoints are 0 until the first SET (the tool's: TOOL); counters wrap modulo 2**32."""

    seq: int
    setpoints_us: tuple[int, int]
    tool_setpoint_us: int
    attached: tuple[bool, bool]
    tool_attached: bool
    watchdog_ms: int
    watchdog_action: str
    watchdog_trips: int
    frames_ok: int
    bad_checksum: int
    overflow: int
    garbage: int
    rejected: int
    uptime_ms: int

    def encode(self) -> bytes:
        return encode_frame("STATE", self.seq, *self.setpoints_us, self.tool_setpoint_us,
                            *(int(a) for a in self.attached), int(self.tool_attached), self.watchdog_ms, self.watchdog_action, self.watchdog_trips, self.frames_ok,
                            self.bad_checksum, self.overflow, self.garbage, self.rejected, self.uptime_ms)


@dataclass(frozen=True)
class ToolReply:
    """The tool's width now on D6 after TOOL; 0 = no pulses."""

    seq: int
    width_us: int

    def encode(self) -> bytes:
        return encode_frame("TOOL", self.seq, self.width_us)


@dataclass(frozen=True)
class ToolLimitsReply:
    seq: int
    limits: tuple[int, int]

    def encode(self) -> bytes:
        return encode_frame("TLIMITS", self.seq, *self.limits)


@dataclass(frozen=True)
class WatchdogReply:
    seq: int
    timeout_ms: int
    action: str

    def encode(self) -> bytes:
        return encode_frame("WDOG", self.seq, self.timeout_ms, self.action)


@dataclass(frozen=True)
class LimitsReply:
    seq: int
    limits: tuple[tuple[int, int], tuple[int, int]]

    def encode(self) -> bytes:
        (a, b), (c, d) = self.limits
        return encode_frame("LIMITS", self.seq, a, b, c, d)


@dataclass(frozen=True)
class ServoReply:
    seq: int
    channel: int
    pin: int
    limits: tuple[int, int]

    def encode(self) -> bytes:
        return encode_frame("SERVO", self.seq, self.channel, self.pin, *self.limits)


@dataclass(frozen=True)
class MoveReply:
    """The widths now on the channels' pins after MOVE; 0 = no pulses."""

    seq: int
    first: int
    widths_us: tuple[int, ...]

    def encode(self) -> bytes:
        return encode_frame("MOVE", self.seq, self.first, *self.widths_us)


@dataclass(frozen=True)
class ServosReply:
    """SERVOS reply: the channels up to the highest configured one, which of them pulse (bit 0:
    channel 1) and their setpoints (0 = none since configured)."""

    seq: int
    attached_mask: int
    setpoints_us: tuple[int, ...]

    @property
    def attached(self) -> tuple[bool, ...]:
        return tuple(bool(self.attached_mask >> i & 1) for i in range(len(self.setpoints_us)))

    def encode(self) -> bytes:
        return encode_frame("SERVOS", self.seq, len(self.setpoints_us), self.attached_mask, *self.setpoints_us)


@dataclass(frozen=True)
class PowerReply:
    seq: int
    pin: int
    on: bool
    soft_start: bool = False

    def encode(self) -> bytes:
        return encode_frame("POWER", self.seq, self.pin, _power_state(self.on, self.soft_start))


@dataclass(frozen=True)
class ErrorReply:
    """``seq`` is None when the firmware could not trust the frame's seq (``-`` on the wire)."""

    seq: int | None
    code: int
    name: str

    def encode(self) -> bytes:
        return encode_frame("ERR", _seq_token(self.seq), self.code, self.name)


@dataclass(frozen=True)
class Boot:
    """Unsolicited banner after reset (may be lost: pyserial's open flushes input)."""

    protocol: int
    firmware: str
    version: str

    seq = None

    def encode(self) -> bytes:
        return encode_frame("BOOT", "-", self.protocol, self.firmware, self.version)


@dataclass(frozen=True)
class Event:
    """Unsolicited event; version 1 has ``WDT hold|detach`` (the watchdog tripped)."""

    kind: str
    detail: str

    seq = None

    def encode(self) -> bytes:
        return encode_frame("EVT", "-", self.kind, self.detail)


Reply = (HelloReply | Pong | Ack | State | ToolReply | ToolLimitsReply | WatchdogReply | LimitsReply | ServoReply
         | MoveReply | ServosReply | PowerReply | ErrorReply | Boot | Event)


def _u32(token: str) -> int:
    if not (1 <= len(token) <= 10) or not token.isdigit() or not token.isascii() or int(token) > 0xFFFFFFFF:
        raise ValueError(f"not a decimal 0..2**32-1: {token!r}")
    return int(token)


def _power_state(on: bool, soft_start: bool) -> int:
    """POWER's state on the wire: 0 low, 1 high, 2 high after the soft-start ramp."""
    if soft_start and not on:
        raise ValueError("a soft start switches the power on")
    return POWER_SOFT_START if soft_start else int(bool(on))


def _flag(token: str) -> bool:
    if token not in ("0", "1"):
        raise ValueError(f"not 0 or 1: {token!r}")
    return token == "1"


def _action(token: str) -> str:
    if token not in WATCHDOG_ACTIONS:
        raise ValueError(f"not a watchdog action: {token!r}")
    return token


def decode_reply(line: bytes) -> Reply:
    """Decodes one reply line (with or without its newline). Raises FrameError on anything else."""
    if len(line) > MAX_REPLY_LINE:
        raise FrameError(ErrorCode.LINE_TOO_LONG, f"reply longer than {MAX_REPLY_LINE} bytes")
    tokens = split_frame(line)
    if len(tokens) < 2:
        raise FrameError(ErrorCode.BAD_FRAME, "a reply has a word and a seq")
    word, seq_token, f = tokens[0], tokens[1], tokens[2:]
    try:
        seq = None if seq_token == "-" else parse_u16(seq_token)

        def fields(n: int) -> None:
            if len(f) != n:
                raise ValueError(f"{word} has {n} fields, got {len(f)}")

        def numbered() -> int:
            if seq is None:
                raise ValueError(f"{word} needs a seq")
            return seq

        if word == "HELLO":
            if len(f) >= 4 and f[0].isdigit() and f[0].isascii() and int(f[0]) not in PLANAR_PROTOCOLS:
                # Another version's HELLO: its first four fields mean the same in every version, so a
                # host can say what it found (and refuse it); the rest is left empty.
                return HelloReply(numbered(), parse_u16(f[0]), f[1], f[2], parse_u16(f[3]), ((0, 0), (0, 0)),
                                  (0, 0), 0, DEFAULT_WATCHDOG_ACTION)
            protocol = parse_u16(f[0])
            fields(13 if protocol >= 3 else 12)  # version 3 added the channel count
            return HelloReply(numbered(), protocol, f[1], f[2], parse_u16(f[3]),
                              ((parse_u16(f[4]), parse_u16(f[5])), (parse_u16(f[6]), parse_u16(f[7]))),
                              (parse_u16(f[8]), parse_u16(f[9])), parse_u16(f[10]), _action(f[11]),
                              parse_u16(f[12]) if protocol >= 3 else 0)
        if word == "PONG":
            fields(0)
            return Pong(numbered())
        if word == "ACK":
            fields(2)
            return Ack(numbered(), (parse_u16(f[0]), parse_u16(f[1])))
        if word == "STATE":
            fields(15)
            return State(numbered(), (parse_u16(f[0]), parse_u16(f[1])), parse_u16(f[2]), (_flag(f[3]), _flag(f[4])),
                         _flag(f[5]), parse_u16(f[6]), _action(f[7]), *(_u32(x) for x in f[8:15]))
        if word == "TOOL":
            fields(1)
            return ToolReply(numbered(), parse_u16(f[0]))
        if word == "TLIMITS":
            fields(2)
            return ToolLimitsReply(numbered(), (parse_u16(f[0]), parse_u16(f[1])))
        if word == "WDOG":
            fields(2)
            return WatchdogReply(numbered(), parse_u16(f[0]), _action(f[1]))
        if word == "LIMITS":
            fields(4)
            v = [parse_u16(x) for x in f]
            return LimitsReply(numbered(), ((v[0], v[1]), (v[2], v[3])))
        if word == "SERVO":
            fields(4)
            v = [parse_u16(x) for x in f]
            return ServoReply(numbered(), v[0], v[1], (v[2], v[3]))
        if word == "MOVE":
            if len(f) < 2:
                raise ValueError("MOVE has a first channel and widths")
            return MoveReply(numbered(), parse_u16(f[0]), tuple(parse_u16(x) for x in f[1:]))
        if word == "SERVOS":
            if len(f) < 2 or len(f) != 2 + parse_u16(f[0]):
                raise ValueError("SERVOS has a count, a mask and count setpoints")
            return ServosReply(numbered(), parse_u16(f[1]), tuple(parse_u16(x) for x in f[2:]))
        if word == "POWER":
            fields(2)
            state = parse_u16(f[1])
            if state > POWER_SOFT_START:
                raise ValueError(f"not a power state 0, 1 or 2: {f[1]!r}")
            return PowerReply(numbered(), parse_u16(f[0]), state != 0, state == POWER_SOFT_START)
        if word == "ERR":
            fields(2)
            return ErrorReply(seq, parse_u16(f[0]), f[1])
        if word == "BOOT":
            fields(3)
            return Boot(parse_u16(f[0]), f[1], f[2])
        if word == "EVT":
            fields(2)
            return Event(f[0], f[1])
    except ValueError as exc:
        raise FrameError(ErrorCode.BAD_ARGS, f"{word}: {exc}") from None
    raise FrameError(ErrorCode.UNKNOWN_CMD, f"unknown reply {word!r}")


def error_reply(seq: int | None, code: ErrorCode) -> ErrorReply:
    """The ERR reply the firmware sends for ``code``."""
    return ErrorReply(seq, int(code), code.name)


# ---------------------------------------------------------------- byte stream -> lines


class LineSplitter:
    """Splits a byte stream into lines; a line longer than ``max_len`` is returned truncated
    (and then fails decoding) rather than growing without bound."""

    def __init__(self, max_len: int = MAX_REPLY_LINE) -> None:
        self._buf = bytearray()
        self._max_len = max_len
        self._overlong = False

    def feed(self, data: bytes) -> list[bytes]:
        data = bytes(data)
        lines = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                self._append(data[start:])
                return lines
            self._append(data[start:nl])
            if self._buf or self._overlong:
                lines.append(bytes(self._buf) + (b"~" if self._overlong else b""))
            self._buf.clear()
            self._overlong = False
            start = nl + 1

    def _append(self, part: bytes) -> None:
        room = self._max_len - len(self._buf)
        if len(part) > room:
            self._overlong = True
            part = part[:max(room, 0)]
        self._buf += part


def _main(argv: list[str]) -> int:
    """``python -m robohal_arduino_planar.wire PING 1`` prints the framed line (for terminals)."""
    if not argv:
        print("usage: python -m robohal_arduino_planar.wire WORD SEQ [ARGS...]", file=sys.stderr)
        return 2
    sys.stdout.write(encode_frame(*argv).decode("ascii"))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
