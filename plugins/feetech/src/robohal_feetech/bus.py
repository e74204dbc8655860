"""The host's side of a Feetech servo bus: one serial port, transactions that are retried.

Every transaction writes its packets in one go and waits for the status packets it expects,
until a deadline: the time the bytes take on the wire (both ways, at the line's byte time), the
servos' return delays, and ``timeout`` seconds of slack for the USB adapter and the host. A
status packet that does not come, or comes corrupted, is asked for again, up to ``retries``
times, from the servos still missing only; each is counted in ``counters``
(``missing_status``, ``corrupt_status``, ``retries``), the first of each kind logged. A servo
still silent after the retries is a :class:`ServoSilent` naming it.

While the answers are on the wire the host sleeps, and looks for them without sleeping only
from shortly before the wire can have carried them (``EARLY_WAKE``) to shortly after (``SPIN``).

Where the vendor's SDK (feetech-servo-sdk 1.0.0) falls short, and why this module does not use
it for the control loop: its port reads busy-wait (``timeout=0``), burning a core while it waits
for every packet; its deadline is wall-clock time (``time.time``), which jumps; one missing
status packet fails a whole sync read and says nothing of which servo; a late answer stays in
the input buffer and is taken for the next one; its endianness is a global of the module; and
it has no retries. The tests drive the simulated bus with the SDK, as a client we did not write.
"""

from __future__ import annotations

import array
import fcntl
import logging
import os
import select
import termios
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

import serial
from robohal.errors import ConnectionLost

from . import wire
from .registers import Register

log = logging.getLogger("robohal.feetech")

DEFAULT_TIMEOUT = 0.05  # s of slack past the wire time: a USB adapter's latency (16 ms on an FTDI by default), a busy host
DEFAULT_RETRIES = 3
# when a transaction looks for its answers without sleeping (our choice, from a measurement): from
# EARLY_WAKE s before the wire can have carried them all (the earlier answers are taken then) to
# SPIN s after it; on the simulated bus the last answer comes 100-250 us after the wire's time
# (the simulator's and the pty's own latency), and a USB adapter's can be longer: past SPIN, the
# host sleeps in select() until the answers come (a core is busy for at most 0.4 ms a transaction)
EARLY_WAKE = 100e-6
SPIN = 300e-6


class ServoSilent(ConnectionLost):
    """Servos that gave no valid status packet after every retry (``ids``)."""

    def __init__(self, message: str, ids: Iterable[int]) -> None:
        super().__init__(message)
        self.ids = tuple(ids)


class Status(NamedTuple):  # (a tuple: one per servo every cycle, built cheaply)
    """A servo's answer: its error byte and the data it carried."""

    error: int
    data: bytes


class ServoBus:
    """One serial line of servos (see the module docstring). ``label(id)`` names a servo in
    messages; ``counters`` and ``anomaly(counter, what)`` are the backend's (count, log the first)."""

    def __init__(self, device: str, baud: int, *, timeout: float = DEFAULT_TIMEOUT, retries: int = DEFAULT_RETRIES,
                 return_delay: float = 500e-6, counters: Counter | None = None,
                 anomaly: Callable[[str, str], None] | None = None, label: Callable[[int], str] | None = None) -> None:
        self.device = device
        self.baud = baud
        self.timeout = timeout
        self.retries = retries
        self.return_delay = return_delay  # s per answer (the servos' Return_Delay_Time, once known)
        self.counters: Counter = counters if counters is not None else Counter()
        self._anomaly = anomaly or self._count
        self.label = label or (lambda servo_id: f"servo {servo_id}")
        self._port: serial.Serial | None = None
        self._fd = -1
        self._waiting = array.array("i", [0])  # the line's input count, as FIONREAD gives it
        self._parser = wire.FrameParser()
        self._sync_reads: dict[tuple[int, int, tuple[int, ...]], bytes] = {}  # the packets, built once each

    def _count(self, counter: str, what: str) -> None:
        self.counters[counter] += 1

    # ------------------------------------------------------------------ the port

    @property
    def is_open(self) -> bool:
        return self._port is not None

    def open(self) -> None:
        try:
            self._port = serial.Serial(self.device, self.baud, timeout=0, write_timeout=1.0, exclusive=True)
        except (serial.SerialException, OSError, ValueError) as exc:
            self._port = None
            raise ConnectionLost(f"feetech: cannot open {self.device}: {exc} (is the adapter plugged in, is this its port"
                                 " (ls /dev/ttyACM* /dev/ttyUSB*), may you use it (the dialout group), and is no other"
                                 " program holding it?)") from None
        self._fd = self._port.fileno()
        self._port.reset_input_buffer()
        self._parser.reset()

    def close(self) -> None:
        port, self._port = self._port, None
        self._fd = -1
        if port is not None:
            try:
                port.close()
            except (serial.SerialException, OSError):
                pass

    def set_baud(self, baud: int) -> None:
        """Speak at another baud rate (the servos' own is set in their Baud_Rate register)."""
        self.baud = baud
        if self._port is not None:
            self._port.baudrate = baud
            self.drain()

    def drain(self) -> None:
        """Forget whatever arrived unasked (late answers, noise)."""
        if self._port is not None:
            self._port.reset_input_buffer()
        self._parser.reset()

    def _write(self, data: bytes) -> None:
        if self._port is None:
            raise ConnectionLost(f"feetech: {self.device} is not open")
        try:
            written = os.write(self._fd, data)  # a packet is far below the line's buffer: one write
            if written < len(data):
                self._port.write(data[written:])
        except (serial.SerialException, OSError) as exc:
            raise ConnectionLost(f"feetech: writing to {self.device} failed: {exc}") from None
        self.counters["bytes_sent"] += len(data)

    def _read_until(self, deadline: float, spin_until: float = 0.0) -> bytes:
        """Bytes that arrive before ``deadline`` (empty when none); until ``spin_until`` it looks
        without sleeping (a wake-up from select costs more than the bytes take then)."""
        if self._fd < 0:
            return b""
        fd, waiting = self._fd, self._waiting
        try:
            while True:
                now = time.monotonic()
                if now >= deadline:
                    return b""
                if now < spin_until:
                    # it asks how many bytes wait (FIONREAD, pyserial's in_waiting) and reads only
                    # then: a read() of an empty tty in a loop delays the bytes being delivered to
                    # it (measured here: a six-servo cycle about 2 % longer than polling the count)
                    fcntl.ioctl(fd, termios.FIONREAD, waiting, True)
                    if not waiting[0]:
                        continue
                    try:
                        data = os.read(fd, 4096)
                    except BlockingIOError:
                        continue
                    if data:
                        break
                    continue
                ready, _, _ = select.select([fd], [], [], deadline - now)
                if not ready:
                    return b""
                data = os.read(fd, 4096)
                if data:
                    break
                # readable yet empty: a line just reconfigured, or one going away (an unplugged
                # adapter then fails the read itself); look again shortly, until the deadline
                time.sleep(0.001)
        except BlockingIOError:
            return b""
        except OSError as exc:
            raise ConnectionLost(f"feetech: reading {self.device} failed: {exc}") from None
        self.counters["bytes_received"] += len(data)
        return data

    # ------------------------------------------------------------------ transactions

    def wire_time(self, sent: int, answers: int, answer_size: int) -> float:
        """Seconds the wire needs: ``sent`` bytes out, ``answers`` status packets of ``answer_size`` bytes back."""
        return (sent + answers * answer_size) * wire.byte_time(self.baud) + answers * self.return_delay

    def transact(self, packets: bytes, ids: Iterable[int], answer_size: int, again: Callable[[list[int]], bytes] | None,
                 what: str, each: Callable[[int, Status], None] | None = None,
                 sent: Callable[[], None] | None = None) -> dict[int, Status]:
        """Write ``packets`` and collect one status packet from each of ``ids``; ``again(missing)``
        builds the packets that ask the missing ones again (None: ask nothing again). ``each(id,
        status)`` takes every answer as it arrives, while the others are still on the wire;
        ``sent()`` runs once, right after the first write (the caller's preparation for the
        answers, made while the wire carries the bytes instead of before they leave)."""
        wanted = tuple(ids)
        missing: list[int] | tuple[int, ...] = wanted
        found: dict[int, Status] = {}
        attempts = 1 + (self.retries if again is not None else 0)
        for attempt in range(attempts):
            if attempt:
                missing = [i for i in wanted if i not in found]
                self._anomaly("retries", f"asking {', '.join(self.label(i) for i in missing)} again ({what})")
                packets = again(missing)  # type: ignore[misc]
            # the write first, the bookkeeping while the wire carries it: whatever runs between
            # the last answer and this write lengthens every cycle
            began = time.monotonic()  # the bytes go on the wire as the write begins (it may take a while)
            self._write(packets)
            if sent is not None and not attempt:
                sent()
            self._parser.reset()  # (the bytes of an earlier transaction, left half read)
            needed = self.wire_time(len(packets), len(missing), answer_size)
            # nothing whole can come before the wire carried it: wake once, near then, not per packet
            early = began + needed - EARLY_WAKE - time.monotonic()
            if early > 0:
                time.sleep(early)
            self._collect(found, set(missing), answer_size, each, began + needed + self.timeout, began + needed + SPIN)
            if all(i in found for i in wanted):
                return found
            for servo_id in wanted:
                if servo_id not in found:
                    self._anomaly("missing_status", f"no status packet from {self.label(servo_id)} ({what})")
        silent = [i for i in wanted if i not in found]
        names = ", ".join(self.label(i) for i in silent)
        raise ServoSilent(f"feetech: {names} stopped answering on {self.device} ({what}; {attempts} attempt"
                          f"{'s' if attempts > 1 else ''}: check its cable, its power and its id)", silent)

    def _collect(self, found: dict[int, Status], missing: set[int], answer_size: int,
                 each: Callable[[int, Status], None] | None, deadline: float, spin_until: float) -> None:
        while missing:
            data = self._read_until(deadline, spin_until)
            if not data:
                return
            for item in self._parser.feed(data):
                if isinstance(item, wire.Corrupt):
                    self._anomaly("corrupt_status", f"dropped {len(item.data)} byte(s): {item.reason}")
                elif item.servo_id in missing and item.size != answer_size:
                    self._anomaly("corrupt_status", f"{self.label(item.servo_id)} answered {len(item.params)} data"
                                                    f" byte(s) where {wire.data_size(answer_size)} were asked for")
                elif item.servo_id in missing:
                    status = found[item.servo_id] = Status(item.code, item.params)
                    missing.discard(item.servo_id)
                    if each is not None:
                        each(item.servo_id, status)
                else:
                    self._anomaly("stale_status", f"ignored a status packet from servo {item.servo_id} that was not asked"
                                                  " for (a late answer)")

    def ping(self, servo_id: int, retries: bool = True) -> Status | None:
        """The servo's answer to PING, or None when it gives none."""
        try:
            return self.transact(wire.ping(servo_id), [servo_id], wire.status_size(0),
                                 (lambda _: wire.ping(servo_id)) if retries else None, f"ping {servo_id}")[servo_id]
        except ServoSilent:
            return None

    def read(self, servo_id: int, address: int, length: int) -> Status:
        packet = wire.read(servo_id, address, length)
        return self.transact(packet, [servo_id], wire.status_size(length), lambda _: packet,
                             f"read {length} at {address}")[servo_id]

    def read_register(self, servo_id: int, reg: Register) -> int:
        status = self.read(servo_id, reg.address, reg.size)
        return reg.decode(status.data[:reg.size])

    def write(self, servo_id: int, address: int, data: bytes) -> Status:
        """WRITE, answered by the servo (Response_Status_Level 1, the factory setting)."""
        packet = wire.write(servo_id, address, data)
        return self.transact(packet, [servo_id], wire.status_size(0), lambda _: packet,
                             f"write {len(data)} at {address}")[servo_id]

    def write_register(self, servo_id: int, reg: Register, value: int) -> None:
        self.write(servo_id, reg.address, reg.encode(value))

    def sync_write(self, reg: Register, values: Mapping[int, int]) -> None:
        """One register into many servos (nobody answers)."""
        self._write(wire.sync_write(reg.address, reg.size, {i: reg.encode(v) for i, v in values.items()}))

    def sync_read(self, address: int, length: int, ids: Iterable[int], before: bytes = b"",
                  what: str = "sync read", each: Callable[[int, Status], None] | None = None,
                  sent: Callable[[], None] | None = None) -> dict[int, Status]:
        """``length`` bytes at ``address`` from every servo in ``ids``; ``before`` goes out in the
        same write, first (a sync write of goals: one exchange per control cycle); ``each`` and
        ``sent`` as :meth:`transact`'s."""
        ids = tuple(ids)
        packet = self._sync_reads.get((address, length, ids))
        if packet is None:
            packet = self._sync_reads[address, length, ids] = wire.sync_read(address, length, ids)
        return self.transact(before + packet, ids, wire.status_size(length),
                             lambda missing: wire.sync_read(address, length, missing), what, each, sent)
