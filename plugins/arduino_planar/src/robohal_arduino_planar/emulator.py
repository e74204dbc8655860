"""Pure-Python stand-in for the planar-arm firmware on a pseudo-terminal: the emulated MCU.

``python -m robohal_arduino_planar.simulator --firmware emulator`` runs it (see :mod:`.simulator`).

Behaves like the simavr harness running the real firmware, for machines without the AVR toolchain:
the pty is announced in the ready line; the port resets when the host opens it (held for
``boot_ms``, then a BOOT banner); it speaks protocol version 3 with the firmware's replies, error
codes, limits, counters and watchdog, and with the board's serial timing (:class:`SerialTiming`),
so a host that bursts commands loses bytes here too; stdout carries ``RESET <sim_us> <open|stdin>`` and,
with ``pulses``, one ``PULSE <sim_us> <pin> <width_us>`` line per attached servo (D9, D10, the tool's D6,
or each attached channel's pin, one after the other as servo_channels.h times them) per 20 ms frame, each followed by ``HORN <sim_us> <pin> <position_us>``: where the servo's horn is as that pulse ends, by
the slew model of :mod:`.servo` (``servo_speed`` rad/s, default the SG90's rated 10.47; ``ideal``: the
horn jumps to each pulse at once); stdin takes the harness's control lines ``RESET``,
``INJECT_RX <hex>``, ``INJECT_TX <hex>``, ``DROP_RX <n>``, ``STATS`` (answered with
``STATS {json}``: the horns now) and ``QUIT``. :meth:`Emulator.run` returns on QUIT, the end of a pipe or
when ``stop`` is set (the program's SIGTERM and SIGINT handlers set it).

:class:`FirmwareModel` is the firmware's logic without I/O, so it can be tested on its own.
"""

from __future__ import annotations

import collections
import json
import math
import sys
import time
from collections.abc import Callable

from . import wire as p
from .board_process import BoardProcess
from .servo import SG90_SPEED, ServoHorn

# Every servo pin, the arm's and the tool's, in the harness's order.
PINS = (*p.SERVO_PINS, p.TOOL_PIN)
# And every other pin a channel may take, as the harness watches them.
ALL_PINS = (*PINS, *(pin for pin in p.CHANNEL_PINS if pin not in PINS))
# servo_timer1.h: ICR1 = 39999 at 0.5 us per tick (prescaler 8, 16 MHz): a 20 ms pulse frame.
FRAME_US = 20000
# servo_channels.h: the channels' first pulse starts at 0.5 ms into a frame; after the last, at
# least CHANNEL_GAP_TICKS (0.5 ms) pass before the next frame.
CHANNEL_START_US = 500
CHANNEL_GAP_US = 500
# servo_timer1.h: SERVO_SAFE_FROM_TICK / SERVO_SAFE_UNTIL_TICK; outputs change only between them.
SAFE_FROM_S = 5200 * 0.5e-6
SAFE_UNTIL_S = 39600 * 0.5e-6
# Our choice for the process loop, not a firmware rule: how long one select() may sleep while the
# MCU runs (bounds the jitter of its timing against the wire model's events, well under one 20 ms
# frame).
RUN_WAIT_S = 0.005
# Our choice: a loop late by up to this many frames (1 s) still puts out every frame's pulses, as
# the timer would; a process stopped for longer starts a fresh frame instead of a burst.
MAX_CATCH_UP_FRAMES = 50
# Our choice: the boot hold after an open. A real Uno's bootloader takes 1-2 s (research notes);
# tests want it shorter, the backend's boot budget (2 s) covers the real one.
DEFAULT_BOOT_MS = 300


class FirmwareModel:
    """The firmware's state machine: bytes in, reply bytes out, pin widths readable.

    ``clock_ms`` plays millis(): milliseconds since this MCU reset. Every rule here is the
    firmware's (avr/robohal_planar/robohal_planar.ino, functions named in the comments) and
    test_emulator.py checks the two line for line.
    """

    def __init__(self, clock_ms: Callable[[], int], watchdog_ms: int = p.DEFAULT_WATCHDOG_MS,
                 watchdog_action: str = p.DEFAULT_WATCHDOG_ACTION) -> None:
        self._clock_ms = clock_ms
        self._line = bytearray()
        self._too_long = False
        self._binary = False
        self.setpoints = [0, 0]                  # 0 = never commanded since reset
        self.attached = [False, False]
        self.limits = [list(p.DEFAULT_LIMITS_US), list(p.DEFAULT_LIMITS_US)]
        self.tool_setpoint = 0                   # 0 = never commanded since reset
        self.tool_attached = False
        self.tool_limits = list(p.DEFAULT_LIMITS_US)
        # The channels (servo mode, servo_channels.h): pin 0 = not configured.
        self.servo_mode = False
        self.channel_pins = [0] * p.MAX_CHANNELS
        self.channel_limits = [(0, 0)] * p.MAX_CHANNELS
        self.channel_setpoints = [0] * p.MAX_CHANNELS
        self.channel_attached = [False] * p.MAX_CHANNELS
        self.power: tuple[int, bool] | None = None  # (pin, on) of POWER, None: never
        self.watchdog_ms = watchdog_ms
        self.watchdog_action = watchdog_action
        self._watchdog_tripped = False
        self._last_valid_ms = clock_ms()
        self.counts = dict(ok=0, bad_checksum=0, overflow=0, garbage=0, rejected=0, watchdog_trips=0)
        # Called where the firmware changes its pin outputs (and first waits for the PWM frame's
        # safe window); lets a timed host model that wait.
        self.on_apply_outputs: Callable[[], None] | None = None

    # ---- outputs
    def boot_banner(self) -> bytes:
        return p.Boot(p.PROTOCOL_VERSION, p.FIRMWARE_NAME, p.FIRMWARE_VERSION).encode()

    def pin_widths(self) -> tuple[int, int]:
        """Pulse widths on D9 and D10 now; 0 = no pulses."""
        return tuple(w if a else 0 for w, a in zip(self.setpoints, self.attached, strict=True))  # type: ignore[return-value]

    def tool_width(self) -> int:
        """The tool's pulse width on D6 now; 0 = no pulses."""
        return self.tool_setpoint if self.tool_attached else 0

    def channel_widths(self) -> list[tuple[int, int]]:
        """(pin, width) of every channel with pulses, in channel order."""
        return [(pin, w) for pin, w, on in zip(self.channel_pins, self.channel_setpoints, self.channel_attached,
                                               strict=True) if on]

    # ---- input
    def receive(self, data: bytes) -> bytes:
        """Feeds received bytes; returns the reply bytes, as the firmware's loop() would send them
        (receiveByte(): CR ignored, LF ends a line, overlong and binary lines refused whole)."""
        out = bytearray()
        for c in data:
            if c == 0x0D:
                continue
            if c == 0x0A:
                if self._too_long:
                    self._count("overflow")
                    out += p.error_reply(None, p.ErrorCode.LINE_TOO_LONG).encode()
                elif self._binary:
                    self._count("garbage")
                    out += p.error_reply(None, p.ErrorCode.BAD_FRAME).encode()
                elif self._line:
                    out += self._handle_line(bytes(self._line))
                self._line.clear()
                self._too_long = self._binary = False
                continue
            if len(self._line) >= p.MAX_COMMAND_LINE:
                self._too_long = True
                continue
            if c < 0x20 or c > 0x7E:
                self._binary = True
            self._line.append(c)
        return bytes(out)

    def poll(self) -> bytes:
        """The watchdog check of loop() (checkWatchdog(): trips at >= the timeout with a servo
        attached, latched until the next valid frame); returns an EVT line when it trips."""
        if self.watchdog_ms == 0 or self._watchdog_tripped or not (any(self.attached) or self.tool_attached
                                                                    or any(self.channel_attached)):
            return b""
        if (self._clock_ms() - self._last_valid_ms) % 2**32 < self.watchdog_ms:
            return b""
        self._watchdog_tripped = True
        self._count("watchdog_trips")
        if self.watchdog_action == "detach":
            self._detach_all()
        return p.Event("WDT", self.watchdog_action).encode()

    # ---- internals
    def _apply_outputs(self) -> None:
        if self.on_apply_outputs is not None:
            self.on_apply_outputs()

    def _count(self, name: str) -> None:
        self.counts[name] = (self.counts[name] + 1) % 2**32   # uint32_t on the MCU

    def _reject(self, seq: int | None, code: p.ErrorCode) -> bytes:
        self._count("rejected")
        return p.error_reply(seq, code).encode()

    def _detach_all(self) -> None:
        """detachAll(): every output stops, the channels' too; setpoints are kept."""
        self.attached = [False, False]
        self.tool_attached = False
        self.channel_attached = [False] * p.MAX_CHANNELS
        if not self.servo_mode:
            self._apply_outputs()

    def _ack(self, seq: int) -> bytes:
        return p.Ack(seq, self.pin_widths()).encode()

    def _handle_line(self, line: bytes) -> bytes:
        # handleLine(): trailer and checksum first; any checksum-valid frame feeds the watchdog.
        try:
            p.split_frame(line)
        except p.FrameError as exc:
            self._count("garbage" if exc.code == p.ErrorCode.BAD_FRAME else "bad_checksum")
            return p.error_reply(None, exc.code).encode()
        # A checksum-valid frame proves the host is alive, even if the command is then refused.
        self._count("ok")
        self._last_valid_ms = self._clock_ms()
        self._watchdog_tripped = False
        try:
            cmd = p.decode_command(line)
        except p.FrameError as exc:
            return self._reject(exc.seq, exc.code)
        return self._execute(cmd)

    def _execute(self, cmd: p.Command) -> bytes:
        seq = cmd.seq
        if isinstance(cmd, p.Hello):
            return p.HelloReply(seq, p.PROTOCOL_VERSION, p.FIRMWARE_NAME, p.FIRMWARE_VERSION, p.SERVO_COUNT,
                                (tuple(self.limits[0]), tuple(self.limits[1])),  # type: ignore[arg-type]
                                tuple(self.tool_limits), self.watchdog_ms, self.watchdog_action,
                                p.MAX_CHANNELS).encode()
        if self.servo_mode and isinstance(cmd, (p.Set, p.Attach, p.Limits, p.Tool, p.ToolLimits)):
            return self._reject(seq, p.ErrorCode.WRONG_MODE)
        if isinstance(cmd, (p.Servo, p.Move, p.Servos, p.Power)):
            return self._channels(cmd)
        if isinstance(cmd, p.Ping):
            return p.Pong(seq).encode()
        if isinstance(cmd, p.Set):
            widths = (cmd.width1_us, cmd.width2_us)
            for w, (lo, hi) in zip(widths, self.limits, strict=True):
                if not lo <= w <= hi:
                    return self._reject(seq, p.ErrorCode.OUT_OF_LIMITS)
            self.setpoints = list(widths)
            self.attached = [True, True]
            self._apply_outputs()
            return self._ack(seq)
        if isinstance(cmd, p.Get):
            c = self.counts
            return p.State(seq, tuple(self.setpoints), self.tool_setpoint,  # type: ignore[arg-type]
                           tuple(self.attached), self.tool_attached, self.watchdog_ms, self.watchdog_action, c["watchdog_trips"], c["ok"],
                           c["bad_checksum"], c["overflow"], c["garbage"], c["rejected"],
                           self._clock_ms() % 2**32).encode()
        if isinstance(cmd, p.Watchdog):
            self.watchdog_ms, self.watchdog_action = cmd.timeout_ms, cmd.action
            return p.WatchdogReply(seq, cmd.timeout_ms, cmd.action).encode()
        if isinstance(cmd, p.Limits):
            for (lo, hi), sp in zip(cmd.limits, self.setpoints, strict=True):
                if lo < p.ENVELOPE_US[0] or hi > p.ENVELOPE_US[1]:
                    return self._reject(seq, p.ErrorCode.OUT_OF_LIMITS)
                if sp and not lo <= sp <= hi:   # ATTACH would otherwise output an illegal width
                    return self._reject(seq, p.ErrorCode.OUT_OF_LIMITS)
            self.limits = [list(cmd.limits[0]), list(cmd.limits[1])]
            return p.LimitsReply(seq, cmd.limits).encode()
        if isinstance(cmd, p.Attach):
            if not all(self.setpoints):
                return self._reject(seq, p.ErrorCode.NO_SETPOINT)
            self.attached = [True, True]
            self._apply_outputs()
            return self._ack(seq)
        if isinstance(cmd, p.Detach):
            self._detach_all()               # every servo, the tool and the channels too
            return self._ack(seq)
        if isinstance(cmd, p.Tool):          # cmdTool(): 0 = no pulses, else within the tool's limits
            lo, hi = self.tool_limits
            if cmd.width_us and not lo <= cmd.width_us <= hi:
                return self._reject(seq, p.ErrorCode.OUT_OF_LIMITS)
            if cmd.width_us:
                self.tool_setpoint = cmd.width_us
            self.tool_attached = bool(cmd.width_us)
            return p.ToolReply(seq, self.tool_width()).encode()
        if isinstance(cmd, p.ToolLimits):    # cmdToolLimits(): as LIMITS for the arm
            lo, hi = cmd.limits
            sp = self.tool_setpoint
            if lo < p.ENVELOPE_US[0] or hi > p.ENVELOPE_US[1] or (sp and not lo <= sp <= hi):
                return self._reject(seq, p.ErrorCode.OUT_OF_LIMITS)
            self.tool_limits = [lo, hi]
            return p.ToolLimitsReply(seq, cmd.limits).encode()
        raise AssertionError(f"unhandled command {cmd!r}")

    def _channels(self, cmd: p.Servo | p.Move | p.Servos | p.Power) -> bytes:
        """cmdServo(), cmdMove(), cmdServos(), cmdPower()."""
        seq = cmd.seq
        if isinstance(cmd, p.Power):
            servo_pins = self.channel_pins if self.servo_mode else (*p.SERVO_PINS, p.TOOL_PIN)
            if cmd.pin in servo_pins or (self.power is not None and self.power[0] != cmd.pin):
                return self._reject(seq, p.ErrorCode.BAD_ARGS)
            self.power = (cmd.pin, cmd.on)  # a soft start's ramp is the firmware's alone: not modelled here
            return p.PowerReply(seq, cmd.pin, cmd.on, cmd.soft_start).encode()
        if isinstance(cmd, p.Servo):
            i, (lo, hi) = cmd.channel - 1, cmd.limits
            if any(pin == cmd.pin for j, pin in enumerate(self.channel_pins) if j != i):
                return self._reject(seq, p.ErrorCode.BAD_ARGS)       # one pin, one servo
            if self.power is not None and self.power[0] == cmd.pin:
                return self._reject(seq, p.ErrorCode.BAD_ARGS)
            same_pin, sp = self.channel_pins[i] == cmd.pin, self.channel_setpoints[i]
            if lo < p.ENVELOPE_US[0] or hi > p.ENVELOPE_US[1] or (same_pin and sp and not lo <= sp <= hi):
                return self._reject(seq, p.ErrorCode.OUT_OF_LIMITS)
            if not self.servo_mode:          # enterServoMode(): the planar outputs stop until reset
                self.attached = [False, False]
                self.tool_attached = False
                self.setpoints = [0, 0]
                self.tool_setpoint = 0
                self._apply_outputs()
                self.servo_mode = True
            if not same_pin:
                self.channel_pins[i] = cmd.pin
                self.channel_setpoints[i] = 0
                self.channel_attached[i] = False
            self.channel_limits[i] = (lo, hi)
            return p.ServoReply(seq, cmd.channel, cmd.pin, cmd.limits).encode()
        if isinstance(cmd, p.Move):
            span = range(cmd.first - 1, cmd.first - 1 + len(cmd.widths_us))
            if not all(self.channel_pins[i] for i in span):
                return self._reject(seq, p.ErrorCode.NO_SERVO)
            for i, w in zip(span, cmd.widths_us, strict=True):
                lo, hi = self.channel_limits[i]
                if w and not lo <= w <= hi:
                    return self._reject(seq, p.ErrorCode.OUT_OF_LIMITS)
            for i, w in zip(span, cmd.widths_us, strict=True):
                if w:
                    self.channel_setpoints[i] = w
                self.channel_attached[i] = bool(w)
            return p.MoveReply(seq, cmd.first, tuple(self.channel_setpoints[i] if self.channel_attached[i] else 0
                                                     for i in span)).encode()
        count = max((i + 1 for i, pin in enumerate(self.channel_pins) if pin), default=0)
        mask = sum(1 << i for i, on in enumerate(self.channel_attached) if on)
        return p.ServosReply(seq, mask, tuple(self.channel_setpoints[:count])).encode()


# ---------------------------------------------------------------- the process around the model

class SerialTiming:
    """The Uno's serial path in time: 115200-baud wire both ways and HardwareSerial's 64-byte rings.

    Host bytes arrive one character time apart and land in the receive ring by interrupt, even
    while loop() is busy; a full ring loses them, as on the chip (core 1.8.7 HardwareSerial_private.h,
    _rx_complete_irq: a byte that finds the ring full is dropped). loop() takes bytes from the ring
    only while it is not blocked in Serial.write, which returns once all but a ring's worth of the
    reply has left on the wire (HardwareSerial::write waits while the TX ring is full). So a host
    that bursts commands loses bytes here as it would there (measured in simavr: research notes).
    """

    # 8N1 (PROTOCOL.md): start + 8 data + stop = 10 bit times per byte at 115200 baud.
    BYTE_S = 10 / p.BAUDRATE
    # Arduino core 1.8.7 HardwareSerial.h: SERIAL_RX_BUFFER_SIZE and SERIAL_TX_BUFFER_SIZE are 64
    # on a 2 KB-RAM chip, and a ring of N bytes holds N - 1 (head == tail means empty).
    RING = 63

    def __init__(self) -> None:
        self.rx_wire: collections.deque[tuple[float, int]] = collections.deque()  # (arrival, byte)
        self.rx_wire_end = 0.0
        self.rx_ring: collections.deque[int] = collections.deque()
        self.tx_wire: collections.deque[tuple[float, int]] = collections.deque()  # (departure, byte)
        self.tx_end = 0.0
        self.busy_until = 0.0

    def host_sent(self, data: bytes, now: float) -> None:
        for byte in data:
            self.rx_wire_end = max(self.rx_wire_end, now) + self.BYTE_S
            self.rx_wire.append((self.rx_wire_end, byte))

    def receive_interrupts(self, now: float) -> None:
        while self.rx_wire and self.rx_wire[0][0] <= now:
            byte = self.rx_wire.popleft()[1]
            if len(self.rx_ring) < self.RING:
                self.rx_ring.append(byte)        # else lost: ring full

    def loop_may_read(self, now: float) -> bool:
        return bool(self.rx_ring) and self.busy_until <= now

    def mcu_sent(self, data: bytes, now: float) -> None:
        for byte in data:
            self.tx_end = max(self.tx_end, now) + self.BYTE_S
            self.tx_wire.append((self.tx_end, byte))
        if data:
            self.busy_until = max(self.busy_until, self.tx_end - self.RING * self.BYTE_S)

    def delivered(self, now: float) -> bytes:
        out = bytearray()
        while self.tx_wire and self.tx_wire[0][0] <= now:
            out.append(self.tx_wire.popleft()[1])
        return bytes(out)

    def next_event(self, now: float) -> float:
        """Seconds until something on the wire or in loop() needs attention (inf if nothing)."""
        times = []
        if self.rx_wire:
            times.append(self.rx_wire[0][0])
        if self.tx_wire:
            times.append(self.tx_wire[0][0])
        if self.rx_ring:
            times.append(self.busy_until)
        return max(0.0, min(times) - now) if times else float("inf")


class Emulator(BoardProcess):
    """Runs a FirmwareModel behind a pty with reset-on-open, wire timing, pulse reports and
    control lines."""

    name = "emulator"

    def __init__(self, boot_ms: int, watchdog_ms: int, watchdog_action: str,
                 servo_speed: float = SG90_SPEED, ideal: bool = False, pulses: bool = False) -> None:
        super().__init__(p.BAUDRATE, boot_ms)
        self.pulses = pulses  # print the PULSE and HORN lines
        # The servos are physical: they keep their horns through MCU resets.
        self.horns = {pin: ServoHorn(servo_speed, ideal) for pin in ALL_PINS}
        self.servo_speed = servo_speed
        self.ideal = ideal
        self.watchdog_ms = watchdog_ms
        self.watchdog_action = watchdog_action
        self.model: FirmwareModel | None = None    # None: held in reset
        self.serial = SerialTiming()
        self.reset_at = 0.0
        self.next_frame = 0.0
        self.drop_rx = 0                           # host bytes still to lose (DROP_RX)
        self.output_wait_end = 0.0                 # loop() waits for the PWM safe window until then

    def _millis(self) -> int:
        return int((time.monotonic() - self.reset_at) * 1000)

    def _held(self, now: float) -> None:
        self._frames(now)                   # the pulses the MCU put out until now
        for horn in self.horns.values():    # a held MCU sends no pulses: the servos go limp
            horn.unpowered(now - self.t0)
        self.model = None
        self.serial = SerialTiming()
        self.output_wait_end = 0.0

    def _started(self, now: float) -> None:
        self.reset_at = now
        self.model = FirmwareModel(self._millis, self.watchdog_ms, self.watchdog_action)
        self.model.on_apply_outputs = self._wait_safe_window
        self.next_frame = now
        self.serial.mcu_sent(self.model.boot_banner(), now)

    def _control(self, word: str, arg: str) -> bool:
        """The harness's fault injection for tests."""
        if word == "INJECT_RX":              # as if the host had sent these bytes
            data = bytes.fromhex(arg)
            if self.model is not None:
                self.serial.host_sent(data, time.monotonic())
        elif word == "INJECT_TX":            # as if the MCU had sent them: line noise
            self.out += bytes.fromhex(arg)
        elif word == "DROP_RX":              # the next n host bytes are lost
            self.drop_rx += int(arg)
        elif word == "STATS":
            self._stats()
        else:
            return False
        return True

    def _stats(self) -> None:
        """``STATS {json}``: the horns now, as the harness reports them."""
        self._frames(time.monotonic())      # the pulses until now have reached the servos
        now = time.monotonic() - self.t0
        horns = {pin: round(horn.advance(now), 4) for pin, horn in self.horns.items()}
        stats = {"sim_us": self.sim_us(), "horn_us": [horns[pin] for pin in PINS],
                 "target_us": [self.horns[pin].target_us for pin in PINS],
                 "moving": [self.horns[pin].moving for pin in PINS],
                 "horn_by_pin": {str(pin): horns[pin] for pin in ALL_PINS if self.horns[pin].target_us is not None},
                 "servo_speed": None if self.ideal else self.servo_speed, "ideal": self.ideal}
        print("STATS " + json.dumps(stats), flush=True)

    def _wait_safe_window(self) -> None:
        """As servoWaitSafeWindow(): outputs change only while no pulse can be in progress."""
        now = time.monotonic()
        frame_start = self.next_frame - FRAME_US / 1e6
        phase = now - frame_start
        if phase < SAFE_FROM_S:
            self.output_wait_end = frame_start + SAFE_FROM_S
        elif phase > SAFE_UNTIL_S:
            self.output_wait_end = frame_start + FRAME_US / 1e6 + SAFE_FROM_S

    def _due(self, now: float) -> float:
        if self.model is None:
            return math.inf
        return min(RUN_WAIT_S, self.next_frame - now, self.serial.next_event(now))

    def _heard(self, data: bytes, now: float) -> None:
        if self.model is not None:     # a held MCU (bootloader) hears nothing
            lost = min(self.drop_rx, len(data))
            self.drop_rx -= lost
            self.serial.host_sent(data[lost:], now)

    def _step(self, now: float) -> None:
        """What the MCU does up to `now`: receive interrupts, then loop() while it is not blocked."""
        serial, model = self.serial, self.model
        if model is None:
            return
        self._frames(now)
        serial.receive_interrupts(now)
        while serial.loop_may_read(now):
            reply = model.receive(bytes([serial.rx_ring.popleft()]))
            start = max(now, self.output_wait_end)         # a safe-window wait delays the reply
            serial.busy_until = max(serial.busy_until, start)
            serial.mcu_sent(reply, start)
        if serial.busy_until <= now:
            serial.mcu_sent(model.poll(), now)
        self.out += serial.delivered(now)

    def _frames(self, now: float) -> None:
        """One PULSE line per attached servo per 20 ms frame, each with the HORN line of that
        servo as the pulse ends. The timer never skips a frame, so a late loop catches up on the
        frames it missed (at the widths now on the pins), up to MAX_CATCH_UP_FRAMES."""
        if now < self.next_frame:
            return
        model = self.model
        if model is None:
            pulses, frame_us = [], FRAME_US
        elif model.servo_mode:  # servo_channels.h: one after the other, the frame stretched to fit
            pulses, start = [], CHANNEL_START_US
            for pin, w in model.channel_widths():
                pulses.append((pin, start, w))
                start += w
            frame_us = max(FRAME_US, start - CHANNEL_START_US + CHANNEL_GAP_US)
        else:
            widths = (*model.pin_widths(), model.tool_width())
            pulses, frame_us = [(pin, 0, w) for pin, w in zip(PINS, widths, strict=True) if w], FRAME_US
        for _ in range(MAX_CATCH_UP_FRAMES):
            if now < self.next_frame:
                break
            for pin, offset_us, w in pulses:
                start = self.next_frame + offset_us / 1e6
                end = start - self.t0 + w / 1e6
                position = self.horns[pin].pulse(end, w)  # the servo moves whether or not anyone is told
                if self.pulses:
                    print(f"PULSE {self.sim_us(start)} {pin} {w:.4f}")
                    print(f"HORN {self.sim_us(self.t0 + end)} {pin} {position:.4f}")
            self.next_frame += frame_us / 1e6
        sys.stdout.flush()
        if self.next_frame < now:          # stopped for longer (a suspended process): start afresh
            self.next_frame = now + FRAME_US / 1e6

