"""A simulated Arduino Uno running StandardFirmata, on a pseudo-terminal.

``robohal sim arduino-firmata`` (or ``robohal sim arduino-planar --firmware firmata``) runs it:
the program announces ``READY arduino-firmata:///dev/pts/N``, and any Firmata client drives it as
it drives a real board (pyfirmata2 does so in the tests). StandardFirmata cannot be built here
(no Firmata or Servo library in Debian), so this is the sketch's behaviour written from its
sources; each rule names where it comes from:

- [SF] StandardFirmata.ino (Firmata 2.5): ``Firmata.begin(57600)`` sends the protocol version
  and the firmware report at start (``printVersion``, ``printFirmwareVersion``); ``setPinModeCallback``
  with ``PIN_MODE_SERVO`` attaches the pin's servo with the Servo library's default pulse range
  when it has none; ``SERVO_CONFIG`` detaches an attached servo and attaches it again with the
  given range; ``attachServo`` takes the next of ``MAX_SERVOS`` (12 on an Uno) Servo objects,
  reusing detached ones, else sends the string "Max servos attached"; ``analogWriteCallback`` on a
  servo pin calls ``Servo::write(value)``; a sampling interval below 1 ms is taken as 1 ms
  (``MINIMUM_SAMPLING_INTERVAL``); ``systemResetCallback`` detaches every servo; the capability
  response lists, per pin, input/pullup/output (digital pins), analog (A0-A5, 10 bits), PWM (3, 5,
  6, 9, 10, 11: 8 bits), servo (every digital pin, 14 bits) and I2C (A4, A5).
- [Boards] Firmata's Boards.h for the Uno: digital pins 2..19 (0 and 1 are the serial port and
  offer no mode).
- [Servo] Arduino's Servo library (Servo.h, avr/Servo.cpp): a new Servo holds 1500 us
  (``DEFAULT_PULSE_WIDTH``), so a servo attached before its first write pulses 1500 us; ``attach``
  keeps its range as ``(544 - min) / 4`` and ``(2400 - max) / 4`` in signed bytes ("resolution of
  min/max is 4 uS"; "todo min/max check: abs(min - MIN_PULSE_WIDTH) /4 < 128"), so a range is
  rounded to 4 us and one outside about 36..1052 / 1892..2908 us wraps around; ``write(value)``
  takes a value below 544 (``MIN_PULSE_WIDTH``) as degrees, 0..180, mapped onto the range with
  Arduino's integer ``map``; ``writeMicroseconds`` clamps to the range; the servos of one timer
  pulse one after another, each frame at least ``REFRESH_INTERVAL`` (20 ms) long.
- Our choices: each pulse is exactly its value long (the library trims 2 us for its own
  ``digitalWrite`` delay, so a real pulse comes within a few microseconds); the wire carries 57600
  baud both ways (10 bits a byte) and the board handles a message as it arrives (no receive
  buffer overflow is modelled: StandardFirmata reads faster than 57600 baud delivers); the
  reset-on-open hold (``--boot-ms``) as the robohal firmware's simulators have it.

With ``--pulses 1`` stdout carries ``PULSE <sim_us> <pin> <width_us>`` per pulse and ``HORN`` after
it (the horn model of :mod:`.servo`), as the other simulators print them, and ``SERVO <monotonic_s>
<pin> <us>`` when a write reaches a servo (the host's clock: a latency figure reads it), and
``PIN <monotonic_s> <pin> <0|1>`` when a write reaches a digital output (a power pin's soft start).
Control lines on stdin: ``RESET`` (held in reset for ``--boot-ms``, then the sketch starts again and
sends its start-up version and firmware report, as a brownout's reset does), ``STATS`` and ``QUIT``,
as the other simulators take them.
"""

from __future__ import annotations

import collections
import json
import math
import sys
import time
from dataclasses import dataclass, field

from . import firmata_wire as fw
from .board_process import BoardProcess
from .emulator import DEFAULT_BOOT_MS
from .servo import SG90_SPEED, ServoHorn

# [SF] Firmata 2.5.8: protocol version 2.6, StandardFirmata's firmware version 2.5; the IDE
# compiles StandardFirmata.ino as StandardFirmata.ino.cpp and setFirmwareNameAndVersion strips
# ".cpp" from __FILE__'s file name.
PROTOCOL_VERSION = (2, 6)
FIRMWARE_VERSION = (2, 5)
FIRMWARE_NAME = "StandardFirmata.ino"
TOTAL_PINS = 20                                  # [Boards] Uno: D0-D13, A0-A5 as 14-19
DIGITAL_PINS = range(2, 20)                      # [Boards] IS_PIN_DIGITAL
ANALOG_PINS = range(14, 20)                      # [Boards] IS_PIN_ANALOG
PWM_PINS = (3, 5, 6, 9, 10, 11)                  # [Boards] IS_PIN_PWM (digitalPinHasPWM)
I2C_PINS = (18, 19)                              # [Boards] IS_PIN_I2C: SDA, SCL
MAX_SERVOS = 12                                  # [Servo] one 16-bit timer on an Uno
MIN_PULSE_WIDTH, MAX_PULSE_WIDTH, DEFAULT_PULSE_WIDTH = 544, 2400, 1500  # [Servo]
REFRESH_INTERVAL_US = 20000                      # [Servo]
DEFAULT_SAMPLING_MS = 19                         # [SF] samplingInterval
BYTE_S = 10 / fw.BAUDRATE                        # 8N1 at 57600 baud


def _int8(value: int) -> int:
    """C's conversion to a signed byte (gcc wraps modulo 256)."""
    return (value + 128) % 256 - 128


def _c_div(a: int, b: int) -> int:
    """C's integer division: truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def arduino_map(x: int, in_min: int, in_max: int, out_min: int, out_max: int) -> int:
    """Arduino's map(): long arithmetic, truncating."""
    return _c_div((x - in_min) * (out_max - out_min), in_max - in_min) + out_min


@dataclass
class ServoObject:
    """One of StandardFirmata's ``Servo servos[MAX_SERVOS]`` [SF], as the Servo library keeps it [Servo]."""

    us: int = DEFAULT_PULSE_WIDTH
    min8: int = 0                                # (544 - min) / 4 as int8
    max8: int = 0                                # (2400 - max) / 4 as int8
    pin: int | None = None                       # attached to, or None

    @property
    def servo_min(self) -> int:
        return MIN_PULSE_WIDTH - self.min8 * 4

    @property
    def servo_max(self) -> int:
        return MAX_PULSE_WIDTH - self.max8 * 4

    def attach(self, pin: int, min_us: int = MIN_PULSE_WIDTH, max_us: int = MAX_PULSE_WIDTH) -> None:
        self.pin = pin
        self.min8 = _int8(_c_div(MIN_PULSE_WIDTH - min_us, 4))
        self.max8 = _int8(_c_div(MAX_PULSE_WIDTH - max_us, 4))

    def write(self, value: int) -> None:
        if value < MIN_PULSE_WIDTH:  # degrees
            value = arduino_map(min(max(value, 0), 180), 0, 180, self.servo_min, self.servo_max)
        self.us = min(max(value, self.servo_min), self.servo_max)


@dataclass
class StandardFirmata:
    """The sketch's state machine: messages in, reply bytes out, servo widths readable."""

    servos: list[ServoObject] = field(default_factory=lambda: [ServoObject() for _ in range(MAX_SERVOS)])
    servo_of_pin: dict[int, int] = field(default_factory=dict)   # servoPinMap [SF]
    detached: list[int] = field(default_factory=list)            # detachedServos [SF]
    servo_count: int = 0
    modes: dict[int, int] = field(default_factory=dict)
    outputs: dict[int, int] = field(default_factory=dict)
    sampling_ms: int = DEFAULT_SAMPLING_MS
    on_write: object = None                                      # callback(pin, us) when a servo's value changes
    on_pin: object = None                                        # callback(pin, level) when a digital output is written

    def banner(self) -> bytes:
        """What Firmata.begin() sends [SF]."""
        return fw.version_report(*PROTOCOL_VERSION) + fw.firmware_report(*FIRMWARE_VERSION, FIRMWARE_NAME)

    def capabilities(self) -> bytes:
        pins = []
        for pin in range(TOTAL_PINS):
            modes: list[tuple[int, int]] = []
            if pin in DIGITAL_PINS:
                modes += [(fw.MODE_INPUT, 1), (fw.MODE_PULLUP, 1), (fw.MODE_OUTPUT, 1)]
            if pin in ANALOG_PINS:
                modes.append((fw.MODE_ANALOG, 10))
            if pin in PWM_PINS:
                modes.append((fw.MODE_PWM, 8))
            if pin in DIGITAL_PINS:
                modes.append((fw.MODE_SERVO, 14))
            if pin in I2C_PINS:
                modes.append((fw.MODE_I2C, 1))
            pins.append(modes)
        return fw.capability_response(pins)

    def reset(self) -> None:
        """systemResetCallback [SF]: every servo detached, the pins back to their defaults."""
        for pin in list(self.servo_of_pin):
            self._detach(pin)
        self.modes.clear()
        self.outputs.clear()

    def _attach(self, pin: int, min_us: int | None, max_us: int | None) -> bytes:
        if self.servo_count >= MAX_SERVOS and not self.detached:
            return fw.string_data("Max servos attached")
        if self.detached:
            index = self.detached.pop()
        else:
            index = self.servo_count
            self.servo_count += 1
        self.servo_of_pin[pin] = index
        if min_us and max_us and min_us > 0 and max_us > 0:
            self.servos[index].attach(pin, min_us, max_us)
        else:
            self.servos[index].attach(pin)
        self._changed(pin)
        return b""

    def _detach(self, pin: int) -> None:
        index = self.servo_of_pin.pop(pin, None)
        if index is not None and self.servos[index].pin is not None:
            self.servos[index].pin = None
            self.detached.append(index)

    def _changed(self, pin: int) -> None:
        index = self.servo_of_pin.get(pin)
        if self.on_write is not None and index is not None:
            self.on_write(pin, self.servos[index].us)  # type: ignore[operator]

    def handle(self, message: fw.Message) -> bytes:
        kind = message.kind
        if kind == "version":
            return fw.version_report(*PROTOCOL_VERSION)
        if kind == "firmware":
            return fw.firmware_report(*FIRMWARE_VERSION, FIRMWARE_NAME)
        if kind == "capability_query":
            return self.capabilities()
        if kind == "sampling_interval" and len(message.data) >= 2:
            self.sampling_ms = max(1, fw.from_two_bytes(message.data[0], message.data[1]))
            return b""
        if kind == "system_reset":
            self.reset()
            return b""
        if kind == "set_pin_mode":
            return self._set_mode(message.pin, message.value)  # type: ignore[arg-type]
        if kind == "servo_config":
            pin, min_us, max_us = fw.decode_servo_config(message)
            if pin not in DIGITAL_PINS:
                return b""
            if pin in self.servo_of_pin:
                self._detach(pin)
            out = self._attach(pin, min_us, max_us)
            self.modes[pin] = fw.MODE_SERVO
            return out
        if kind == "analog" and self.modes.get(message.pin) == fw.MODE_SERVO and message.pin in self.servo_of_pin:
            self.servos[self.servo_of_pin[message.pin]].write(message.value)  # type: ignore[arg-type]
            self._changed(message.pin)  # type: ignore[arg-type]
            return b""
        if kind == "digital_pin_value" and self.modes.get(message.pin) == fw.MODE_OUTPUT:
            self.outputs[message.pin] = message.value  # type: ignore[index,assignment]
            if self.on_pin is not None:
                self.on_pin(message.pin, message.value)  # type: ignore[operator]
        return b""

    def _set_mode(self, pin: int, mode: int) -> bytes:
        if pin not in DIGITAL_PINS:
            return b""
        if self.modes.get(pin) == fw.MODE_SERVO and mode != fw.MODE_SERVO:
            self._detach(pin)
        self.modes[pin] = mode
        if mode == fw.MODE_SERVO and pin not in self.servo_of_pin:
            return self._attach(pin, None, None)
        return b""

    def pulses(self) -> list[tuple[int, int]]:
        """(pin, width us) of every attached servo, in the timer's order (servo index) [Servo]."""
        return [(s.pin, s.us) for s in self.servos if s.pin is not None]


class Board(BoardProcess):
    """The process around :class:`StandardFirmata`: the pty, reset-on-open, the 57600-baud wire
    both ways, the servo frames and the control lines."""

    name = "firmata board"

    def __init__(self, boot_ms: int = DEFAULT_BOOT_MS, servo_speed: float = SG90_SPEED, ideal: bool = False,
                 pulses: bool = False) -> None:
        super().__init__(fw.BAUDRATE, boot_ms)
        self.pulses = pulses
        self.servo_speed, self.ideal = servo_speed, ideal
        self.horns: dict[int, ServoHorn] = {}
        self.sketch: StandardFirmata | None = None   # None: held in reset
        self.parser = fw.Parser(from_host=True)
        self.rx: collections.deque[tuple[float, int]] = collections.deque()   # host bytes on the wire
        self.rx_end = 0.0
        self.tx: collections.deque[tuple[float, int]] = collections.deque()   # board bytes on the wire
        self.tx_end = 0.0
        self.next_frame = 0.0

    def _send(self, data: bytes, now: float) -> None:
        for byte in data:
            self.tx_end = max(self.tx_end, now) + BYTE_S
            self.tx.append((self.tx_end, byte))

    def _written(self, pin: int, us: int) -> None:
        if self.pulses:
            print(f"SERVO {time.monotonic():.6f} {pin} {us}")

    def _pin_written(self, pin: int, level: int) -> None:
        if self.pulses:
            print(f"PIN {time.monotonic():.6f} {pin} {level}")

    def _held(self, now: float) -> None:
        self._frames(now)
        for horn in self.horns.values():
            horn.unpowered(now - self.t0)
        self.sketch = None
        self.rx.clear()
        self.tx.clear()
        self.parser = fw.Parser(from_host=True)

    def _started(self, now: float) -> None:
        self.sketch = StandardFirmata(on_write=self._written, on_pin=self._pin_written)
        self.next_frame = now
        self._send(self.sketch.banner(), now)

    def _control(self, word: str, arg: str) -> bool:
        if word != "STATS":
            return False
        self._frames(time.monotonic())
        now = time.monotonic() - self.t0
        servos = self.sketch.pulses() if self.sketch else []
        stats = {"sim_us": self.sim_us(), "servos": {str(pin): us for pin, us in servos},
                 "horn_us": {str(pin): round(h.advance(now), 4) for pin, h in self.horns.items()},
                 "sampling_ms": self.sketch.sampling_ms if self.sketch else None}
        print("STATS " + json.dumps(stats), flush=True)
        return True

    def _frames(self, now: float) -> None:
        """The Servo library's frames up to ``now``: the attached servos pulse one after another,
        each frame REFRESH_INTERVAL long or as long as their pulses [Servo]."""
        if self.sketch is None:
            return
        while self.next_frame <= now:
            start = self.next_frame
            offset = 0.0
            for pin, us in self.sketch.pulses():
                horn = self.horns.setdefault(pin, ServoHorn(self.servo_speed, self.ideal))
                rise = start + offset
                position = horn.pulse(rise + us / 1e6 - self.t0, us)
                if self.pulses:
                    print(f"PULSE {self.sim_us(rise)} {pin} {us:.4f}")
                    print(f"HORN {self.sim_us(rise + us / 1e6)} {pin} {position:.4f}")
                offset += us / 1e6
            self.next_frame = start + max(REFRESH_INTERVAL_US / 1e6, offset)
            if now - self.next_frame > 1.0:  # a suspended process: no burst of old frames
                self.next_frame = now
        sys.stdout.flush()

    def _due(self, now: float) -> float:
        due = math.inf
        if self.sketch is not None:
            due = min(due, self.next_frame - now)
        for queue in (self.rx, self.tx):
            if queue:
                due = min(due, queue[0][0] - now)
        return due

    def _heard(self, data: bytes, now: float) -> None:
        if self.sketch is not None:  # the bootloader hears nothing
            for byte in data:
                self.rx_end = max(self.rx_end, now) + BYTE_S
                self.rx.append((self.rx_end, byte))

    def _step(self, now: float) -> None:
        """The servo frames up to ``now``, the host's bytes that have crossed the wire handled,
        the board's that have crossed it ready for the pty."""
        self._frames(now)
        arrived = bytearray()
        while self.rx and self.rx[0][0] <= now:
            arrived.append(self.rx.popleft()[1])
        if arrived and self.sketch is not None:
            for message in self.parser.feed(bytes(arrived)):
                self._send(self.sketch.handle(message), now)
            sys.stdout.flush()
        while self.tx and self.tx[0][0] <= now:
            self.out.append(self.tx.popleft()[1])
