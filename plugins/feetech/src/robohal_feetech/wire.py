"""Codec of Feetech's STS serial-bus protocol: packets, checksums, sign-magnitude numbers.

Pure functions and frozen dataclasses, no I/O. Every packet, an instruction from the host or a
status packet from a servo, has one frame::

    FF FF  ID  LEN  CODE  PARAMS...  SUM

``LEN`` counts ``CODE``, the parameters and ``SUM`` (so ``len(PARAMS) + 2``); ``CODE`` is the
instruction in a host's packet and the servo's error bits in a status packet; ``SUM`` is
``~(ID + LEN + CODE + sum(PARAMS)) & 0xFF``. Multi-byte numbers are little-endian (the STS
series; the SCS series is big-endian and not spoken here). Facts from Feetech's STS memory
table and protocol manual, as the vendor's SDK (feetech-servo-sdk 1.0.0) implements them.

:class:`FrameParser` takes bytes as they arrive, in any slicing, and gives whole frames and the
garbage between them; it never raises, whatever the bytes are (a hypothesis test feeds it noise).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

HEADER = b"\xff\xff"
BROADCAST_ID = 0xFE
MAX_ID = 0xFC  # ids 0..252 address one servo; 0xFD is never an id; 0xFE is everyone
MAX_PARAMS = 250 - 6  # the SDK's packet buffers hold 250 bytes: the longest frame it sends or takes
BITS_PER_BYTE = 10  # 8N1 on the wire: a start bit, eight data bits, a stop bit


class Instruction(enum.IntEnum):
    PING = 0x01
    READ = 0x02
    WRITE = 0x03
    REG_WRITE = 0x04
    ACTION = 0x05
    SYNC_READ = 0x82
    SYNC_WRITE = 0x83


class ErrorBit(enum.IntFlag):
    """The status packet's error byte (the SDK's ERRBIT_*; Feetech's manual names them the same)."""

    VOLTAGE = 0x01
    ANGLE = 0x02  # the magnetic encoder: a sensor fault
    OVERHEAT = 0x04
    OVERCURRENT = 0x08
    OVERLOAD = 0x20


_BIT_NAMES = {int(bit): str(bit.name) for bit in ErrorBit}


def error_names(error: int) -> tuple[str, ...]:
    """The names of the bits set in a status packet's error byte (unknown bits as ``BIT<n>``)."""
    if not error:
        return ()
    return tuple(_BIT_NAMES.get(1 << n, f"BIT{n}") for n in range(8) if error & (1 << n))


class EncodingError(ValueError):
    """A number that the register's encoding cannot carry (the reason is the message)."""


def checksum(body: bytes | Iterable[int]) -> int:
    """``~sum & 0xFF`` over ID, LEN, CODE and the parameters (the frame without header and SUM)."""
    return ~sum(body) & 0xFF


def byte_time(baud: int) -> float:
    """Seconds one byte takes on the wire at ``baud`` (8N1)."""
    return BITS_PER_BYTE / float(baud)


# ---------------------------------------------------------------- numbers


def encode_sign_magnitude(value: int, sign_bit: int) -> int:
    """``value`` with its magnitude in the bits below ``sign_bit`` and its sign in that bit.

    Raises :class:`EncodingError` with the reason when the magnitude needs more bits: the
    homing offset's sign is bit 11, so its magnitude is at most 2047."""
    limit = (1 << sign_bit) - 1
    magnitude = abs(int(value))
    if magnitude > limit:
        raise EncodingError(f"magnitude {magnitude} exceeds {limit}: the sign is bit {sign_bit}, so the"
                            f" register carries -{limit}..{limit}")
    return magnitude | (1 << sign_bit) if value < 0 else magnitude


def decode_sign_magnitude(raw: int, sign_bit: int) -> int:
    """The signed number of a sign-magnitude register value (bits above ``sign_bit`` ignored)."""
    magnitude = raw & ((1 << sign_bit) - 1)
    return -magnitude if raw & (1 << sign_bit) else magnitude


def to_bytes(value: int, size: int) -> bytes:
    """An unsigned register value, little-endian; :class:`EncodingError` when it does not fit."""
    if not 0 <= value < 1 << (8 * size):
        raise EncodingError(f"{value} does not fit in {size} byte{'s' if size > 1 else ''}")
    return int(value).to_bytes(size, "little")


def from_bytes(data: bytes) -> int:
    return int.from_bytes(data, "little")


# ---------------------------------------------------------------- frames


@dataclass(frozen=True)
class Frame:
    """One packet: ``code`` is the instruction (host to servo) or the error byte (servo to host)."""

    servo_id: int
    code: int
    params: bytes = b""

    def encode(self) -> bytes:
        if not 0 <= self.servo_id <= 0xFE or not 0 <= self.code <= 0xFF:
            raise EncodingError(f"id {self.servo_id} or code {self.code} is not a byte a frame carries")
        if len(self.params) > MAX_PARAMS:
            raise EncodingError(f"{len(self.params)} parameter bytes; a frame carries at most {MAX_PARAMS}")
        body = bytes((self.servo_id, len(self.params) + 2, self.code)) + bytes(self.params)
        return HEADER + body + bytes((checksum(body),))

    @property
    def size(self) -> int:
        """Bytes on the wire."""
        return len(self.params) + 6

    @property
    def errors(self) -> tuple[str, ...]:
        return error_names(self.code)


def ping(servo_id: int) -> bytes:
    return Frame(servo_id, Instruction.PING).encode()


def read(servo_id: int, address: int, length: int) -> bytes:
    return Frame(servo_id, Instruction.READ, bytes((address, length))).encode()


def write(servo_id: int, address: int, data: bytes) -> bytes:
    return Frame(servo_id, Instruction.WRITE, bytes((address,)) + data).encode()


def reg_write(servo_id: int, address: int, data: bytes) -> bytes:
    return Frame(servo_id, Instruction.REG_WRITE, bytes((address,)) + data).encode()


def action(servo_id: int = BROADCAST_ID) -> bytes:
    return Frame(servo_id, Instruction.ACTION).encode()


def sync_read(address: int, length: int, ids: Iterable[int]) -> bytes:
    """Every servo in ``ids`` answers, in that order, with ``length`` bytes from ``address``."""
    return Frame(BROADCAST_ID, Instruction.SYNC_READ, bytes((address, length, *ids))).encode()


def sync_write(address: int, length: int, data: Mapping[int, bytes]) -> bytes:
    """One packet that writes ``length`` bytes at ``address`` into each servo (no one answers)."""
    params = bytearray((address, length))
    for servo_id, chunk in data.items():
        if len(chunk) != length:
            raise EncodingError(f"servo {servo_id}: {len(chunk)} bytes where the sync write carries {length}")
        params.append(servo_id)
        params += chunk
    return Frame(BROADCAST_ID, Instruction.SYNC_WRITE, bytes(params)).encode()


def status(servo_id: int, error: int = 0, params: bytes = b"") -> bytes:
    """A servo's status packet (the simulator's answers)."""
    return Frame(servo_id, error, params).encode()


def status_size(data_length: int) -> int:
    """Bytes of a status packet carrying ``data_length`` bytes."""
    return data_length + 6


def data_size(status_size: int) -> int:
    """Data bytes of a status packet of ``status_size`` bytes."""
    return status_size - 6


@dataclass(frozen=True)
class Corrupt:
    """Bytes the parser dropped: a frame with a wrong checksum, or noise between frames."""

    data: bytes
    reason: str


@dataclass
class FrameParser:
    """Frames out of a byte stream, resynchronising on the ``FF FF`` header after garbage.

    ``feed(data)`` returns what ``data`` completed, in order: :class:`Frame` for each valid
    packet and :class:`Corrupt` for dropped bytes. A frame whose checksum fails is dropped
    from its first header byte only, so a valid frame that began inside it is still found.
    ``pending`` is how many bytes wait for the rest of a frame.
    """

    _buffer: bytearray = field(default_factory=bytearray)

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def reset(self) -> None:
        self._buffer.clear()

    def feed(self, data: bytes) -> list[Frame | Corrupt]:
        self._buffer += data
        found: list[Frame | Corrupt] = []
        buffer = self._buffer
        while True:
            start = buffer.find(HEADER)
            if start < 0:
                # keep a trailing FF: it may be the first half of a header
                keep = 1 if buffer.endswith(b"\xff") else 0
                if len(buffer) > keep:
                    found.append(Corrupt(bytes(buffer[:len(buffer) - keep]), "bytes outside a frame"))
                    del buffer[:len(buffer) - keep]
                break
            # FF FF FF ...: the header is the last two of a run of FF (an id is never FF)
            while start + 2 < len(buffer) and buffer[start + 2] == 0xFF:
                start += 1
            if start:
                found.append(Corrupt(bytes(buffer[:start]), "bytes outside a frame"))
                del buffer[:start]
            if len(buffer) < 4:
                break
            length = buffer[3]
            if length < 2:
                found.append(Corrupt(bytes(buffer[:2]), f"length byte {length} is below 2"))
                del buffer[:2]
                continue
            total = length + 4
            if len(buffer) < total:
                break
            body = bytes(buffer[2:total - 1])
            if checksum(body) != buffer[total - 1]:
                found.append(Corrupt(bytes(buffer[:2]), "checksum mismatch"))
                del buffer[:2]
                continue
            found.append(Frame(body[0], body[2], body[3:]))
            del buffer[:total]
        return found
