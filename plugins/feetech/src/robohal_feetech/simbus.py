"""The simulated servo bus: instructions in, status packets out, each at the time the wire allows.

No I/O here (the program, :mod:`.simulator`, moves the bytes): :meth:`SimBus.receive` takes the
bytes the host sent and returns the status packets to give it, each with the moment its last
byte would arrive. Its rules, sourced or marked as our choice:

- **The wire** (STS protocol, 8N1): a byte takes 10 bit times (10 us at 1 Mbps). The host's bytes
  go out from the moment they arrive, or once the wire is free (our choice: a host that talks
  while servos answer is queued, not garbled, and counted in ``collisions``).
- **Answers** (Feetech's manual): a servo answers ``Return_Delay_Time`` x 2 us after the packet
  that asks (500 us from the factory, 2 us at 0); in a sync read the servos answer in the
  packet's order, each once the previous answer is over (our choice for a missing one: the next
  servo answers after its own delay). A broadcast is never answered except by PING and
  SYNC_READ; WRITE, REG_WRITE and ACTION are answered only at ``Response_Status_Level`` 1.
- **Baud rate**: a servo whose ``Baud_Rate`` is not the host's line speed hears noise and
  says nothing.
- **Faults** (ours, for tests): status packets dropped or corrupted (``DROP``, ``CORRUPT``), a
  silent servo, a supply voltage, a temperature.
- **Supply** (our choice): the supply sags 0.1 V per ampere the servos draw together.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import wire
from .registers import RETURN_DELAY_UNIT_S
from .servo import SimServo
from .wire import Instruction

SUPPLY_RESISTANCE = 0.1  # ohm (our choice)
MAX_STEP = 0.002  # s: the physics' longest step
# per advance: a long idle spell is crossed in at most this many (longer) steps, so the first
# packet after it is not answered late (the model stays stable at any step)
MAX_STEPS = 20


@dataclass
class FaultPlan:
    """Status packets still to drop and to corrupt, by servo id (None: whichever comes next)."""

    drop: Counter = field(default_factory=Counter)
    corrupt: Counter = field(default_factory=Counter)

    def take(self, kind: Counter, servo_id: int) -> bool:
        for key in (servo_id, None):
            if kind[key] > 0:
                kind[key] -= 1
                return True
        return False


class SimBus:
    """Servos on one half-duplex line (see the module docstring). Times are the caller's clock (s)."""

    def __init__(self, servos: Iterable[SimServo], supply: float, now: float = 0.0) -> None:
        self.servos = list(servos)
        self.supply = supply
        self.parser = wire.FrameParser()
        self.free_at = now  # when the wire is next free
        self.clock = now  # the servos' physics are advanced to here
        self.faults = FaultPlan()
        self.counts: Counter[str] = Counter()

    def servo(self, servo_id: int) -> SimServo | None:
        for servo in self.servos:
            if servo.id == servo_id:
                return servo
        return None

    # ------------------------------------------------------------------ time

    def advance(self, until: float) -> None:
        """Move every servo on to ``until``."""
        span = until - self.clock
        if span <= 0:
            return
        steps = min(MAX_STEPS, max(1, math.ceil(span / MAX_STEP)))
        dt = span / steps
        for _ in range(steps):
            drawn = sum(servo.current for servo in self.servos)
            volts = max(0.0, self.supply - SUPPLY_RESISTANCE * drawn)
            for servo in self.servos:
                servo.advance(dt, volts)
        self.clock = until

    # ------------------------------------------------------------------ the wire

    def receive(self, data: bytes, now: float, baud: int) -> list[tuple[float, bytes]]:
        """The host sent ``data`` at ``now`` at ``baud``: the status packets it gets back, each
        with the time its last byte arrives, in order. ``baud`` 0 is a line speed no servo takes."""
        if baud <= 0:
            self.counts["noise_in"] += 1
            return []
        byte_time = wire.byte_time(baud)
        start = self.free_at if self.free_at > now else now
        if self.free_at > now + byte_time:
            self.counts["collisions"] += 1
        self.free_at = start + len(data) * byte_time
        replies: list[tuple[float, bytes]] = []
        for item in self.parser.feed(data):
            if isinstance(item, wire.Corrupt):
                self.counts["noise_in"] += 1
                continue
            self.counts["packets_in"] += 1
            replies += self._handle(item, baud, byte_time)
        return replies

    def _listeners(self, servo_id: int, baud: int) -> list[SimServo]:
        return [s for s in self.servos if not s.silent and s.baud == baud
                and (servo_id == wire.BROADCAST_ID or s.id == servo_id)]

    def _answer(self, servo: SimServo, params: bytes, byte_time: float) -> list[tuple[float, bytes]]:
        """One status packet from ``servo``, timed after the wire is free and its return delay."""
        start = self.free_at + servo.get("Return_Delay_Time") * RETURN_DELAY_UNIT_S
        if self.faults.take(self.faults.drop, servo.id):
            self.counts["dropped"] += 1
            return []
        packet = bytearray(wire.status(servo.id, servo.error_byte(), params))
        if self.faults.take(self.faults.corrupt, servo.id):
            self.counts["corrupted"] += 1
            packet[-1] ^= 0x5A  # the checksum no longer matches
        self.free_at = start + len(packet) * byte_time
        self.counts["status_out"] += 1
        return [(self.free_at, bytes(packet))]

    def _handle(self, frame: wire.Frame, baud: int, byte_time: float) -> list[tuple[float, bytes]]:
        self.advance(self.free_at)
        code, params = frame.code, frame.params
        broadcast = frame.servo_id == wire.BROADCAST_ID
        out: list[tuple[float, bytes]] = []
        if code == Instruction.SYNC_READ and broadcast and len(params) >= 2:
            address, length = params[0], params[1]
            for servo_id in params[2:]:
                listeners = self._listeners(servo_id, baud)
                if listeners:  # (each reads what the packet found: our choice, within 0.2 ms per servo)
                    out += self._answer(listeners[0], listeners[0].read(address, length), byte_time)
            return out
        if code == Instruction.SYNC_WRITE and broadcast and len(params) >= 2:
            address, length = params[0], params[1]
            chunk = length + 1
            for at in range(2, len(params) - chunk + 1, chunk):
                for servo in self._listeners(params[at], baud):
                    servo.write(address, bytes(params[at + 1:at + chunk]))
            return out
        for servo in sorted(self._listeners(frame.servo_id, baud), key=lambda s: s.id):
            answers = servo.get("Response_Status_Level") >= 1
            if code == Instruction.PING:
                out += self._answer(servo, b"", byte_time)
            elif code == Instruction.READ and not broadcast and len(params) == 2:
                out += self._answer(servo, servo.read(params[0], params[1]), byte_time)
            elif code in (Instruction.WRITE, Instruction.REG_WRITE) and len(params) >= 1:
                if not broadcast and answers:  # answered before an ID or baud change takes effect
                    out += self._answer(servo, b"", byte_time)
                if code == Instruction.WRITE:
                    servo.write(params[0], bytes(params[1:]))
                else:
                    servo.pending = (params[0], bytes(params[1:]))
            elif code == Instruction.ACTION:
                if servo.pending is not None:
                    servo.write(*servo.pending)
                    servo.pending = None
                if not broadcast and answers:
                    out += self._answer(servo, b"", byte_time)
        return out
