"""The ``arduino-arm`` backend: an arm file's servos on the robohal firmware (protocol 3 channels).

``arduino-arm:///dev/ttyACM0?arm=mearm`` (``&boot=2.0&timeout=0.5&retries=2&rate=50&poll=25``
``&watchdog_ms=1000&watchdog_action=detach&keepalive=1&q0=...``)

The same firmware as the planar arm's (``robohal_planar`` 3.0.0 or later), the same framed link
(:mod:`.link`: one command in flight, checksums, resends, reset detection, the keep-alive), the
same host-silence watchdog; what differs is that the arm file says which pins the servos are on.
At connect the backend configures one channel per joint, in the file's order, and the gripper
as the next (``SERVO <ch> <pin> <min_us> <max_us>``: the file's pulse limits, which the firmware
then enforces too), and the watchdog. Each control cycle sends the joints' widths in ``MOVE``
commands of up to five channels (one for an arm of five joints or fewer) and waits for each
acknowledgement: the measured ``q`` is the acknowledged widths, as on the planar arm. The gripper
is its own ``MOVE`` of one channel (0 stops its pulses).

A board that resets (its ``BOOT`` banner, counters that went back, or a ``MOVE`` refused with
``NO_SERVO``: it forgot its channels) is configured again, re-holds the last acknowledged widths
(never the newer target in flight) and reports the recoverable fault ``MCU_RESET``.

What it refuses before anything opens: more than 12 servos (the firmware's channels, as Arduino's
Servo library on an Uno), a pin outside D2..D13 and A0..A5 (2..19; D0 and D1 are the serial
port's), pulse limits outside the firmware's 500..2500 us envelope. The arm file's power pin (the
Braccio shield's D12) is switched on at connect (``POWER``), before any servo has a pulse; with
``soft_start = true`` the firmware (3.1.0 and later) ramps it in as the Braccio library's begin()
does, 6 s of software PWM and then held high, while the link keeps running (commands in those
6 s reach servos whose supply is still coming up, as the library's first pulses do). An older
firmware refuses the ramp: the pin is then switched on at once, with a warning.
"""

from __future__ import annotations

import logging
from typing import Any

from robohal.errors import ConnectionLost, InvalidArgument, ProtocolError
from robohal.kinematics import Kinematics
from robohal.state import RobotState
from robohal.uri import RobotUri

from . import wire as p
from .arm_backend import ServoArmBackend
from .link import FIRMWARE_NAME, FirmwareLink, _Silent

log = logging.getLogger("robohal.arduino_arm")


class ArduinoArmBackend(FirmwareLink, ServoArmBackend):
    """An arm file's servos on the robohal firmware (see the module docstring)."""

    def __init__(self, uri: RobotUri, model: Kinematics) -> None:
        super().__init__(uri, model)
        self._init_link(uri)
        where = self.arm.path.name
        servos = [(j.name, j.pin, j.pulses.min_us, j.pulses.max_us) for j in self.arm.joints]
        if self.arm.gripper is not None:
            grip = self.arm.gripper
            servos.append(("gripper", grip.pin, grip.min_us, grip.max_us))
        if len(servos) > p.MAX_CHANNELS:
            raise InvalidArgument(f"{uri}: the robohal firmware drives at most {p.MAX_CHANNELS} servos (as Arduino's Servo"
                                  f" library on an Uno); the arm {self.arm.name} has {len(servos)}")
        low, high = p.ENVELOPE_US
        if self.arm.power is not None and self.arm.power.pin not in p.CHANNEL_PINS:
            raise InvalidArgument(f"{uri}: the power pin {self.arm.power.pin} in {where}: the robohal firmware"
                                  " switches one of pins 2..19")
        for name, pin, min_us, max_us in servos:
            if pin not in p.CHANNEL_PINS:
                raise InvalidArgument(f"{uri}: pin {pin} ({name} in {where}): the robohal firmware drives servos on"
                                      " D2..D13 and A0..A5 (pins 2..19); D0 and D1 are the serial port's")
            if not low <= min_us < max_us <= high:
                raise InvalidArgument(f"{uri}: {name} in {where} takes {min_us}..{max_us} us; the robohal firmware"
                                      f" puts out {low}..{high} us")
        self._channels = tuple((pin, (min_us, max_us)) for _, pin, min_us, max_us in servos)
        self._gripper_channel = len(self.arm.joints) + 1

    @property
    def identity(self) -> str:
        hello = self.firmware
        if hello is None:
            return ""
        return (f"{hello.firmware} {hello.version} (protocol {hello.protocol}, {len(self._channels)} of"
                f" {hello.channels} channels) on {self.device}")

    # The firmware ---------------------------------------------------------------------------------

    def _check_firmware(self, reply: p.HelloReply) -> None:
        if reply.firmware != FIRMWARE_NAME or reply.protocol < 3 or reply.channels < len(self._channels):
            raise ProtocolError(f"arduino-arm: {self.device} runs {reply.firmware} {reply.version} (protocol"
                                f" {reply.protocol}); an arm file's servos need {FIRMWARE_NAME} protocol 3 or later"
                                f" with {len(self._channels)} channels: flash it (python -m robohal_arduino_planar.firmware"
                                " prints the sketch), or use arduino-firmata:// on a board running StandardFirmata")

    def _configure(self) -> None:
        """Each servo's channel, pin and pulse limits, then the watchdog: the firmware forgets all
        of them on reset."""
        for channel, (pin, limits) in enumerate(self._channels, start=1):
            reply = self._transact(lambda seq, c=channel, n=pin, lim=limits: p.Servo(seq, c, n, lim))
            if not isinstance(reply, p.ServoReply) or (reply.channel, reply.pin, reply.limits) != (channel, pin, limits):
                raise ProtocolError(f"arduino-arm: SERVO {channel} on pin {pin} with {limits[0]}..{limits[1]} us"
                                    f" was answered with {reply!r} (a board still configured for another arm:"
                                    " reset it)")
        reply = self._transact(lambda seq: p.Watchdog(seq, self.watchdog_ms, self.watchdog_action))
        if not isinstance(reply, p.WatchdogReply):
            raise ProtocolError(f"arduino-arm: WDOG answered with {reply!r}")
        power = self.arm.power
        if power is not None:
            reply = self._transact(lambda seq: p.Power(seq, power.pin, True, power.soft_start))
            if power.soft_start and isinstance(reply, p.ErrorReply) and reply.code == p.ErrorCode.BAD_ARGS:
                log.warning("%s: %s %s has no soft start (3.1.0 and later): the servos' power (pin %d) is switched"
                            " on at once", self.uri, FIRMWARE_NAME, getattr(self.firmware, "version", "?"), power.pin)
                reply = self._transact(lambda seq: p.Power(seq, power.pin, True))
                power_ok = isinstance(reply, p.PowerReply) and (reply.pin, reply.on) == (power.pin, True)
            else:
                power_ok = isinstance(reply, p.PowerReply) and (reply.pin, reply.on, reply.soft_start) == (
                    power.pin, True, power.soft_start)
            if not power_ok:
                raise ProtocolError(f"arduino-arm: POWER {power.pin} on was answered with {reply!r}")

    def _forgot_setpoints(self, state: p.State) -> bool:
        if not any(self._pulses):
            return False
        reply = self._transact(p.Servos)
        return not isinstance(reply, p.ServosReply) or len(reply.setpoints_us) < len(self._channels)

    def _move(self, first: int, widths: tuple[int, ...]) -> tuple[int, ...] | None:
        """``MOVE`` these widths onto channels ``first``, ... in commands of up to five; the widths
        now on the pins, or None when the board reset meanwhile (``_boot_seen`` then says so)."""
        on_pins: list[int] = []
        for start in range(0, len(widths), p.MOVE_WIDTHS):
            chunk = widths[start:start + p.MOVE_WIDTHS]
            channel = first + start
            reply = self._transact(lambda seq, c=channel, w=chunk: p.Move(seq, c, w))
            if reply is None:
                return None
            if isinstance(reply, p.ErrorReply) and reply.code == p.ErrorCode.NO_SERVO:
                self._anomaly("config_forgotten", "the board refused a MOVE on its own channels: it forgot them (a reset)")
                self._boot_seen = True
                return None
            if isinstance(reply, p.ErrorReply):
                raise ProtocolError(f"arduino-arm: the firmware refused MOVE {channel} {chunk}: {reply.name}")
            if not isinstance(reply, p.MoveReply) or reply.first != channel or reply.widths_us != chunk:
                # the firmware applies a MOVE exactly or refuses it: any other echo is not to be trusted
                self._anomaly("ack_mismatches", f"MOVE {channel} {chunk} was answered with {reply!r}")
                raise ProtocolError(f"arduino-arm: MOVE {channel} {chunk} was answered with {reply!r}")
            on_pins += reply.widths_us
        return tuple(on_pins)

    def _rehold(self) -> None:
        if any(self._pulses):
            on_pins = self._move(1, self.calibration.to_pulses(self._measured))
            if on_pins is None:
                raise ConnectionLost(f"arduino-arm: {self.device} reset again while re-holding its position")
            self._pulses = on_pins
        if self.tool_pulse:
            self.tool_pulse = self._gripper_move(self.tool_pulse)

    # Writes ---------------------------------------------------------------------------------------

    def _write_widths(self, widths: tuple[int, ...]) -> tuple[int, ...]:
        with self._wire:
            try:
                on_pins = self._move(1, widths)
            except _Silent:
                raise ConnectionLost(f"arduino-arm: {self.device} did not answer MOVE") from None
        if on_pins is None:
            raise ConnectionLost(f"arduino-arm: {self.device} reset during a MOVE")
        return on_pins

    def _write_tool(self, width_us: int) -> int:
        if self.arm.gripper is None:
            raise InvalidArgument(f"{self.uri}: the arm {self.arm.name} has no gripper")
        with self._wire:
            if self._port is None:
                raise ConnectionLost(f"arduino-arm: {self.device} is not open")
            try:
                return self._gripper_move(width_us)
            except _Silent:
                raise ConnectionLost(f"arduino-arm: {self.device} did not answer the gripper's MOVE") from None

    def _gripper_move(self, width_us: int) -> int:
        on_pin = self._move(self._gripper_channel, (width_us,))
        if on_pin is None:  # the board reset meanwhile: the next arm cycle configures it again
            raise ConnectionLost(f"arduino-arm: {self.device} reset during a gripper command")
        self.tool_pulse = on_pin[0]
        return on_pin[0]

    # The cycle ------------------------------------------------------------------------------------

    def _receive(self, timeout: float | None) -> RobotState:
        widths, self._pending = self._pending, None
        with self._wire:
            if widths is not None and not self._boot_seen:
                try:
                    on_pins = self._move(1, widths)
                except _Silent:
                    self._after_silence()
                    on_pins = None
                if on_pins is not None:
                    self._pulses = on_pins
                    self._measured = self.calibration.to_joints(on_pins)
            self._end_cycle()
        return self._snapshot()

    def _info(self) -> dict[str, Any]:
        return {"acknowledged": True, "firmware_counters": dict(self.firmware_counters),
                "resets": self.counters["resets"], "garbage_lines": self.counters["garbage_lines"]}
