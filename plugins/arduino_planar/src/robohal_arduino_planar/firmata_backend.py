"""The ``arduino-firmata`` backend: a servo arm on a board running stock StandardFirmata, no reflashing.

``arduino-firmata:///dev/ttyACM0?arm=mearm`` (``&boot=2.0&timeout=0.5&rate=50&poll=25&sampling_ms=100``)

It speaks Firmata (:mod:`.firmata_wire`) at 57600 baud over pyserial. At connect it waits out the
reset-on-open, then checks what can be checked on a board that acknowledges nothing: that it
answers the version and firmware queries, that its protocol is 2.2 or later (servo config and the
capability query), and, from the capability query, that every pin of the arm file can drive a
servo; that the arm needs at most 12 servos (the Servo library's count on an Uno), and no pulse
below 544 us (the Servo library takes a smaller value as degrees). A board that fails one is
refused at connect with the reason. A power pin is switched on as an output before any servo is
attached; with ``soft_start`` the host ramps it in as the Braccio library's begin() does (2 s at
80 us in 530, then 75 in 505 until 6 s, then held high) as closely as Firmata lets it: a pulse
cannot be shorter than one pin message on the wire (3 bytes at 57600 baud, 521 us), so each is
that long, sent with its low message in one write (the wire times it, not the host), and the low
time keeps the library's duty (15 %). A late host only lengthens a low time. Connect (and a reset's
re-configuration) takes those 6 s, as the library's begin() does.

Each servo is attached at its first setpoint (servo config with the file's pulse range, where the
Servo library can keep it; the limits are robohal's own anyway), then each control cycle writes
the widths that changed, one analog message each (extended analog above pin 15), in microseconds.
A cycle builds its bytes before it waits for its tick; at the tick it only writes them.

What Firmata costs, against the robohal firmware (``arduino-arm``):

- **No acknowledgement.** Nothing answers a write, so a write lost on the wire is never noticed;
  the measured ``q`` is what was sent, not what the board holds. robohal checks liveness instead:
  every ``poll`` cycles it asks the protocol version, and a board silent for ``timeout`` after the
  question is a :class:`~robohal.errors.ConnectionLost`.
- **No watchdog.** When the host dies or hangs, the board keeps pulsing the last widths it got,
  for ever: no detach, no hold-then-report, nothing the next connect can learn about it.
- A servo attached by Firmata pulses the Servo library's 1500 us until the write after its attach
  arrives (about 1 ms later): the first command can twitch a servo that was elsewhere.
- A board that resets (a brownout) announces itself: StandardFirmata's setup() sends its version
  and firmware report unasked. robohal takes either arriving unasked for a reset (feature
  ``mcu-reset``), attaches and re-holds the last widths and reports ``MCU_RESET``, naming the
  report, until ``recover()``.

The backend declares neither ``acknowledged-setpoints`` nor ``host-watchdog`` among its features.
``close()`` detaches the servos (their pins become outputs, low): they go limp, as the robohal
firmware's watchdog leaves them.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

import serial
from robohal.errors import ConnectFailed, ConnectionLost, HardwareFault, InvalidArgument, ProtocolError, UriError
from robohal.kinematics import Kinematics
from robohal.state import RobotState
from robohal.uri import RobotUri

from . import firmata_wire as fw
from .arm_backend import RESET_FAULT, ServoArmBackend

log = logging.getLogger("robohal.arduino_firmata")

QUERY_INTERVAL_S = 0.2  # between version queries while the board boots
READ_SLICE_S = 0.005  # pyserial's read timeout: how often a wait looks at its deadline
MIN_PROTOCOL = (2, 2)  # servo config, extended analog and the capability query (protocol.md)
MAX_SERVOS = 12  # Arduino's Servo library on an Uno (Servo.h: one 16-bit timer, 12 servos)
SERVO_DEGREES_BELOW = 544  # Servo::write takes a smaller value as degrees (Servo.cpp, MIN_PULSE_WIDTH)
# Servo::attach keeps min and max as (544 - min) / 4 and (2400 - max) / 4 in signed bytes
# (Servo.h, avr/Servo.cpp): the widest range it can keep, in whole 4 us steps.
SERVO_CONFIG_MIN_RANGE = (36, 1052)
SERVO_CONFIG_MAX_RANGE = (1892, 2908)
# The Braccio library's soft start (Braccio.h LOW_LIMIT_TIMEOUT, HIGH_LIMIT_TIMEOUT; Braccio.cpp
# _softStart at the default level): until each end (s), pulses of high_s in every high_s + low_s.
SOFT_START_PHASES = ((2.0, 80e-6, 450e-6), (6.0, 75e-6, 430e-6))


def representable_range(min_us: int, max_us: int) -> tuple[int, int]:
    """The servo config range that the Servo library keeps exactly and that covers min..max."""
    low = max(SERVO_CONFIG_MIN_RANGE[0], min(min_us, SERVO_CONFIG_MIN_RANGE[1]))
    high = min(SERVO_CONFIG_MAX_RANGE[1], max(max_us, SERVO_CONFIG_MAX_RANGE[0]))
    low = 544 - 4 * ((544 - low + 3) // 4)   # down to the 4 us grid from 544
    high = 2400 - 4 * ((2400 - high) // 4)   # up to the 4 us grid from 2400
    return low, high


class ArduinoFirmataBackend(ServoArmBackend):
    """An arm file's servos on StandardFirmata (see the module docstring)."""

    def __init__(self, uri: RobotUri, model: Kinematics) -> None:
        super().__init__(uri, model)
        self.poll_every = uri.get_int("poll", 25, minimum=1)
        self.sampling_ms = uri.get_int("sampling_ms", 100, minimum=1)
        if self.sampling_ms > fw.MAX_14_BITS:
            raise UriError(f"{uri}: sampling_ms is at most {fw.MAX_14_BITS}")
        low = [(j.name, j.pulses.min_us) for j in self.arm.joints]
        if self.arm.gripper is not None:
            low.append(("gripper", self.arm.gripper.min_us))
        below = [f"{name} ({us} us)" for name, us in low if us < SERVO_DEGREES_BELOW]
        if below:
            raise InvalidArgument(f"{uri}: under StandardFirmata a pulse below {SERVO_DEGREES_BELOW} us is taken as an"
                                  f" angle in degrees (Arduino's Servo library): raise min_us of {', '.join(below)}"
                                  f" in {self.arm.path} to {SERVO_DEGREES_BELOW} or more")
        if len(self.arm.pins) > MAX_SERVOS:
            raise InvalidArgument(f"{uri}: StandardFirmata drives at most {MAX_SERVOS} servos on an Uno;"
                                  f" the arm {self.arm.name} has {len(self.arm.pins)}")
        self.firmware: tuple[int, int, str] | None = None
        self.protocol: tuple[int, int] | None = None
        self.capabilities: list[dict[int, int]] = []
        self._port: serial.Serial | None = None
        self._parser = fw.Parser()
        self._attached: set[int] = set()
        self._written: dict[int, int] = {}
        self._cycles = 0
        self._asked_at: float | None = None
        self._banner_seen = False
        self._banner_open = False  # a start-up version report came; its firmware report is due
        self._wire = threading.Lock()  # a gripper command and the arm's cycle write whole messages

    @property
    def identity(self) -> str:
        if self.firmware is None or self.protocol is None:
            return ""
        major, minor, name = self.firmware
        return f"{name} {major}.{minor} (Firmata protocol {self.protocol[0]}.{self.protocol[1]}) on {self.device}"

    # The wire ----------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        if self._port is None:
            raise ConnectionLost(f"arduino-firmata: {self.device} is not open")
        try:
            with self._wire:
                # pyserial's write waits in select() after every write, even when all went out; its
                # descriptor is non-blocking, so write there first and leave pyserial (and its
                # write_timeout) only a remainder: a few bytes per cycle, against pyfirmata2's cost
                sent = os.write(self._port.fd, data)
                if sent < len(data):
                    self._port.write(data[sent:])
        except BlockingIOError:
            with self._wire:
                self._port.write(data)
        except (serial.SerialException, OSError) as exc:
            raise ConnectionLost(f"arduino-firmata: writing to {self.device} failed: {exc}") from None
        self.counters["bytes_sent"] += len(data)

    def _read(self, deadline: float | None = None) -> list[fw.Message]:
        """Messages that arrived (waiting until ``deadline`` for the first, None: what is there)."""
        if self._port is None:
            raise ConnectionLost(f"arduino-firmata: {self.device} is not open")
        out: list[fw.Message] = []
        while True:
            try:
                data = self._port.read(max(1, self._port.in_waiting)) if (deadline or self._port.in_waiting) else b""
            except (serial.SerialException, OSError) as exc:
                raise ConnectionLost(f"arduino-firmata: reading {self.device} failed: {exc}") from None
            if data:
                self.counters["bytes_received"] += len(data)
                out += self._parser.feed(data)
            if out or deadline is None or time.monotonic() >= deadline:
                return out

    def _await(self, kinds: set[str], budget: float, ask: bytes | None = None) -> dict[str, fw.Message]:
        """Messages of each kind in ``kinds`` (asking ``ask`` again every QUERY_INTERVAL_S)."""
        found: dict[str, fw.Message] = {}
        end = time.monotonic() + budget
        next_ask = 0.0
        while set(found) < kinds:
            now = time.monotonic()
            if now >= end:
                break
            if ask is not None and now >= next_ask:
                self._write(ask)
                next_ask = now + QUERY_INTERVAL_S
            for message in self._read(min(end, next_ask if ask is not None else end)):
                if message.kind in kinds:
                    found[message.kind] = message
                elif message.kind == "string":
                    log.warning("%s: the board says %r", self.uri, fw.decode_string(message))
        return found

    # Lifecycle ----------------------------------------------------------------------------------

    def _open(self) -> RobotState:
        if not self.device:
            raise ConnectFailed(f"{self.uri}: the host 'sim' names the bundled simulator, which robohal.connect starts")
        try:
            # Opening asserts DTR, which resets a real Uno: the queries wait out its bootloader.
            self._port = serial.Serial(self.device, fw.BAUDRATE, timeout=READ_SLICE_S,
                                       write_timeout=max(self.timeout, 0.1), exclusive=True)
            self._port.reset_input_buffer()
        except (serial.SerialException, OSError) as exc:
            self._port = None
            raise ConnectFailed(f"arduino-firmata: cannot open {self.device}: {exc} (is the board plugged in, is this"
                                " its port, may you use it (the dialout group), is no other program holding it?)",
                                address=self.device) from None
        try:
            self._identify()
            self._configure()
        except BaseException:
            self._close_port()
            raise
        self._t0 = time.monotonic()
        self._pacer.restart(self._t0)
        return self._snapshot()

    def _identify(self) -> None:
        """Version, firmware and capabilities, or a refusal that says which is missing."""
        self._parser = fw.Parser()
        found = self._await({"version", "firmware"}, self.boot + self.timeout, fw.version_query() + fw.firmware_query())
        if "version" not in found:
            raise ConnectFailed(f"arduino-firmata: no Firmata answer from {self.device} within {self.boot + self.timeout:.1f} s"
                                " (is StandardFirmata uploaded (Arduino IDE: File > Examples > Firmata), and boot= long"
                                " enough for its reset?)", address=self.device)
        version = found["version"].data
        self.protocol = (version[0], version[1])
        if "firmware" in found:
            self.firmware = fw.decode_firmware(found["firmware"])
        else:
            raise ProtocolError(f"arduino-firmata: {self.device} speaks Firmata {self.protocol[0]}.{self.protocol[1]}"
                                " but does not answer the firmware query")
        if self.protocol < MIN_PROTOCOL:
            raise ProtocolError(f"arduino-firmata: {self.identity} speaks protocol {self.protocol[0]}.{self.protocol[1]};"
                                f" servo config needs {MIN_PROTOCOL[0]}.{MIN_PROTOCOL[1]} or later: upload a newer"
                                " StandardFirmata")
        answer = self._await({"capabilities"}, self.timeout * 4, fw.capability_query())
        if "capabilities" not in answer:
            raise ProtocolError(f"arduino-firmata: {self.identity} did not answer the capability query")
        self.capabilities = fw.decode_capabilities(answer["capabilities"])
        self._banner_seen = self._banner_open = False
        wanted = [(j.name, j.pin) for j in self.arm.joints]
        if self.arm.gripper is not None:
            wanted.append(("gripper", self.arm.gripper.pin))
        for name, pin in wanted:
            modes = self.capabilities[pin] if pin < len(self.capabilities) else {}
            if fw.MODE_SERVO not in modes:
                have = ", ".join(fw.MODE_NAMES.get(m, str(m)) for m in modes) or "none"
                servo_pins = [i for i, m in enumerate(self.capabilities) if fw.MODE_SERVO in m]
                raise ProtocolError(f"arduino-firmata: pin {pin} ({name} in {self.arm.path.name}) has no servo capability"
                                    f" on {self.identity} (its modes: {have}); servo pins there:"
                                    f" {', '.join(map(str, servo_pins)) or 'none'}")
        power = self.arm.power
        if power is not None:
            modes = self.capabilities[power.pin] if power.pin < len(self.capabilities) else {}
            if fw.MODE_OUTPUT not in modes:
                raise ProtocolError(f"arduino-firmata: the power pin {power.pin} is no output on {self.identity}")

    def _configure(self) -> None:
        self._write(fw.sampling_interval(self.sampling_ms))
        power = self.arm.power
        if power is not None:
            if power.soft_start:
                self._write(fw.set_pin_mode(power.pin, fw.MODE_OUTPUT) + fw.digital_pin_value(power.pin, False))
                self._soft_start(power.pin)
            else:
                self._write(fw.set_pin_mode(power.pin, fw.MODE_OUTPUT) + fw.digital_pin_value(power.pin, True))
        self._attached.clear()
        self._written.clear()
        self._cycles = 0
        self._asked_at = None

    def _soft_start(self, pin: int) -> None:
        """Ramp the power pin in (see the module docstring), then hold it high."""
        high, low = fw.digital_pin_value(pin, True), fw.digital_pin_value(pin, False)
        pulse_s = len(high) * fw.BITS_PER_BYTE / fw.BAUDRATE  # the high message's time on the wire
        log.info("%s: soft start: pin %d ramps the servos' supply in over %g s", self.uri, pin, SOFT_START_PHASES[-1][0])
        start = time.monotonic()
        for end, high_s, low_s in SOFT_START_PHASES:
            period = pulse_s * (high_s + low_s) / high_s
            while (now := time.monotonic()) - start < end:
                self._write(high + low)
                time.sleep(max(0.0, now + period - time.monotonic()))
        self._write(high)
        self._read()  # whatever the board said meanwhile (nothing is asked)

    def _close(self) -> None:
        if self._port is not None:
            try:  # detach: the servos go limp, as the robohal firmware's watchdog leaves them
                for pin in sorted(self._attached):
                    self._write(fw.set_pin_mode(pin, fw.MODE_OUTPUT))
                self._port.flush()
            except (ConnectionLost, serial.SerialException, OSError):
                pass
        self._close_port()

    def _close_port(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            try:
                port.close()
            except (serial.SerialException, OSError):
                pass

    def _recover(self) -> RobotState:
        if self._port is None:
            self._open()
        else:
            self._reset_fault = False
        return self._snapshot()

    # Writes -------------------------------------------------------------------------------------

    @staticmethod
    def _servo_config(pin: int, min_us: int, max_us: int) -> bytes:
        return fw.servo_config(pin, *representable_range(min_us, max_us))

    def _attach(self, pin: int, min_us: int, max_us: int) -> None:
        self._write(self._servo_config(pin, min_us, max_us))
        self._attached.add(pin)
        self._written.pop(pin, None)

    def _prepare(self, widths: tuple[int, ...]) -> tuple[tuple[int, ...], bytes, tuple[int, ...]]:
        """The bytes that put ``widths`` on the pins (each pin not yet attached is attached first;
        only the widths that changed are written), and the pins they attach."""
        data = bytearray()
        attach = []
        for joint, (pin, width) in enumerate(zip(self.pins, widths, strict=True)):
            if pin not in self._attached:
                servo = self.calibration.servos[joint]
                data += self._servo_config(pin, servo.min_us, servo.max_us)
                attach.append(pin)
            elif self._written.get(pin) == width:
                continue
            data += fw.servo_write(pin, width)
        return widths, bytes(data), tuple(attach)

    def _put(self, prepared: tuple[tuple[int, ...], bytes, tuple[int, ...]]) -> tuple[int, ...]:
        widths, data, attach = prepared
        if data:
            self._write(data)
        self._attached.update(attach)
        self._written.update(zip(self.pins, widths, strict=True))
        return widths

    def _write_widths(self, widths: tuple[int, ...]) -> tuple[int, ...]:
        return self._put(self._prepare(widths))

    def _write_tool(self, width_us: int) -> int:
        grip = self.arm.gripper
        if grip is None:
            raise InvalidArgument(f"{self.uri}: the arm {self.arm.name} has no gripper")
        if not width_us:
            if grip.pin in self._attached:
                self._write(fw.set_pin_mode(grip.pin, fw.MODE_OUTPUT))
                self._attached.discard(grip.pin)
            return 0
        if grip.pin not in self._attached:
            self._attach(grip.pin, grip.min_us, grip.max_us)
        self._write(fw.servo_write(grip.pin, width_us))
        self._written[grip.pin] = width_us
        return width_us

    def _poll(self) -> None:
        """Liveness (a version query every ``poll`` cycles, answered within ``timeout``) and
        resets (the board's start-up report arriving unasked)."""
        self._cycles += 1
        for message in self._read():
            if message.kind == "version" and self._asked_at is not None:
                self._asked_at = None
            elif message.kind == "version":  # unasked: only a board that started sends it
                self._banner_seen = True
                self._banner_open = True  # and its firmware report follows: the same reset
            elif message.kind == "firmware":  # never asked after connect
                self._banner_seen = self._banner_seen or not self._banner_open
                self._banner_open = False
            elif message.kind == "string":
                log.warning("%s: the board says %r", self.uri, fw.decode_string(message))
        now = time.monotonic()
        if self._asked_at is not None and now - self._asked_at > self.timeout:
            raise ConnectionLost(f"arduino-firmata: {self.device} stopped answering (no reply to a version query"
                                 f" within {self.timeout:g} s)")
        if self._asked_at is None and self._cycles % self.poll_every == 0:
            self._write(fw.version_query())
            self._asked_at = now
        if self._banner_seen:
            self._banner_seen = False
            self._handle_reset()

    def _handle_reset(self) -> None:
        """The board restarted: it forgot every servo. Attach them again at the last widths."""
        self.counters["resets"] += 1
        log.warning("%s: the board reset (a brownout of the servo supply?): attaching the servos again at the last"
                    " widths", self.uri)
        held = {pin: width for pin, width in self._written.items()}
        self._configure()
        for joint, pin in enumerate(self.pins):
            if pin in held:
                servo = self.calibration.servos[joint]
                self._attach(pin, servo.min_us, servo.max_us)
                self._write(fw.servo_write(pin, held[pin]))
                self._written[pin] = held[pin]
        if self.tool_pulse:
            self._write_tool(self.tool_pulse)
        self._reset_fault = True

    def _fault_of(self, state: RobotState) -> HardwareFault:
        if state.faults != (RESET_FAULT,):
            return super()._fault_of(state)
        return HardwareFault(f"arduino-firmata: {self.device} reset (it sent StandardFirmata's start-up version and"
                             " firmware report unasked): its servos were attached again at the last widths; recover()"
                             " clears the fault", names=state.faults, recoverable=True)

    def _info(self) -> dict[str, Any]:
        return {"acknowledged": False, "resets": self.counters["resets"]}
