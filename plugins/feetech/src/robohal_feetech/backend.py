"""The ``feetech`` backend: an arm of Feetech serial-bus servos on one half-duplex line (pyserial).

``feetech:///dev/ttyACM0?arm=so101&calibration=~/so101.json``

URI parameters (all optional):

================  =========  ================================================================
``arm``           so101      the arm file: which servo drives which joint, the gripper, the bounds
                             (:mod:`robohal.plugins.arm_files`, found by its name)
``calibration``   see below  the calibration file (robohal's, or LeRobot's SO-101 JSON as it is);
                             default ``~/.config/robohal/feetech/<arm>.json``
``baud``          the arm's  the line's speed (the servos' Baud_Rate must match)
``rate``          see below  control cycles per second: one sync write of goals and one sync
                             read of every servo each; default half what the wire carries, at
                             most 250 Hz; more than 90 % of the wire is refused
``timeout``       0.05       s of slack past the wire time before a status packet counts missing
``retries``       3          times a missing or corrupt status packet is asked for again
``poll``          0.02       s: while no motion runs, the servos are still read this often, so the
                             watch (stalls, voltage, temperature) and the gripper go on
================  =========  ================================================================

**Connect.** Every servo of the arm file is pinged at the arm's baud rate; when none answers
the other baud rates are tried, and a bus found at another speed is named (``baud=`` or
``robohal feetech baud``); a servo that does not answer is named by id and joint. Each servo's
model number and firmware are checked against the arm file. The calibration file must match
what the servos hold (their homing offsets and position limits): a mismatch is refused with
the fix. Then the return delay goes to its minimum, the torque limits of the arm file are set
(the gripper's lower, with its current limit), every goal is set where the servo stands, and
the torque goes on: the arm holds where it is.

**Each cycle** is one write (the sync write of goals, then the sync read of registers 56..70)
and the status packets of every servo, retried as :mod:`.bus` says. Every goal has passed the
guard and the calibrated range first. Each servo's reading is decoded, turned into its joint's
angle and speed and watched as its answer arrives, while the others' are still on the wire
(:mod:`.protection`), so that little is left to do after the last answer: a stall
holds or releases the servo as the arm file says and is a fault on an arm joint (the gripper's
stall is its grasp); a voltage or temperature past its fault bound is a fault; past a warning
bound, a warning. ``recover()`` clears a fault whose cause is gone and holds where the arm is.
"""

from __future__ import annotations

import logging
import math
import statistics
import struct
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from robohal.control.backend import Backend, start_link_thread
from robohal.control.pacing import Pacer
from robohal.errors import ConnectFailed, ConnectionLost, HardwareFault, InvalidArgument, ProtocolError, UriError
from robohal.kinematics import Kinematics
from robohal.state import Array, RobotMode, RobotState
from robohal.uri import RobotUri

from . import wire
from .arm import DEFAULT_ARM, load_arm
from .bus import DEFAULT_RETRIES, DEFAULT_TIMEOUT, ServoBus, Status
from .calibration import GRIPPER, Calibration, CalibrationError, read_calibration
from .protection import BoundWatch, StallTimer
from .registers import (
    BAUD_CODES,
    CURRENT_UNIT_A,
    LOAD_FULL_SCALE,
    REGISTERS,
    RETURN_DELAY_UNIT_S,
    TELEMETRY_LENGTH,
    TELEMETRY_START,
)
from .telemetry import RAD_PER_TICK, Reading, Telemetry

log = logging.getLogger("robohal.feetech")

RATE_CAP = 250.0  # Hz: the default rate's ceiling (a host's Python loop, not the wire)
WIRE_SHARE = 0.5  # the default rate leaves half the wire free (retries, a busy host)
MAX_WIRE_SHARE = 0.9  # a rate= that fills more of the wire is refused
DEFAULT_POLL = 0.02
FASTEST_ANSWER = 2e-6  # s: Return_Delay_Time 0 is the servo's fastest answer
CONFIG_DIR = Path("~/.config/robohal/feetech")


def default_calibration_path(arm_name: str) -> Path:
    return CONFIG_DIR.expanduser() / f"{arm_name}.json"


def exchange_bytes(servos: int, telemetry: int = TELEMETRY_LENGTH) -> int:
    """Bytes on the wire in one control cycle: the sync write of goals, the sync read, the answers."""
    sync_write = 8 + servos * 3 - 1  # FF FF FE LEN 83 ADDR 2 [ID L H]... SUM
    sync_read = 8 + servos  # FF FF FE LEN 82 ADDR LEN IDS... SUM
    return sync_write + sync_read + servos * wire.status_size(telemetry)


def wire_limit(servos: int, baud: int, return_delay: float = FASTEST_ANSWER) -> float:
    """Control cycles per second the wire carries at most (bytes and return delays, nothing else)."""
    return 1.0 / (exchange_bytes(servos) * wire.byte_time(baud) + servos * return_delay)


class FeetechBackend(Backend):
    """An arm of Feetech bus servos (see the module docstring)."""

    checks = ("position", "velocity")

    def __init__(self, uri: RobotUri, model: Kinematics) -> None:
        self.arm = load_arm(uri.params.get("arm", DEFAULT_ARM))
        names = getattr(model, "joint_names", None)
        if model.dof != len(self.arm.joints):
            raise InvalidArgument(f"{uri}: arm {self.arm.name} has {len(self.arm.joints)} joints; model has {model.dof}")
        self.names = tuple(joint.name for joint in self.arm.joints)
        if names is not None and tuple(names) != self.names:
            raise InvalidArgument(f"{uri}: arm {self.arm.name} drives {', '.join(self.names)}; the model has"
                                  f" {', '.join(names)}")
        self.arm_ids = tuple(joint.id for joint in self.arm.joints)
        self.directions = tuple(joint.direction for joint in self.arm.joints)
        self.baud = uri.get_int("baud", self.arm.baud)
        if self.baud not in BAUD_CODES:
            raise UriError(f"{uri}: baud={self.baud} is not a rate the servos take: {', '.join(map(str, BAUD_CODES))}")
        self.wire_limit = wire_limit(len(self.arm.ids), self.baud)
        rate = uri.get_float("rate", min(RATE_CAP, math.floor(WIRE_SHARE * self.wire_limit)), minimum=1.0)
        if rate > MAX_WIRE_SHARE * self.wire_limit:
            raise UriError(f"{uri}: rate={rate:g} Hz is more than the bus carries: {len(self.arm.ids)} servos at"
                           f" {self.baud} baud take {1e3 / self.wire_limit:.2f} ms a cycle (at most"
                           f" {MAX_WIRE_SHARE * self.wire_limit:.0f} Hz)")
        super().__init__(uri, model, 1.0 / rate)
        if uri.wants_simulator:
            self.device = ""  # built, never opened: robohal.connect starts the simulator first
        elif not uri.path or uri.host:
            raise UriError(f"{uri}: give the serial device as the path: feetech:///dev/ttyACM0?arm=so101")
        else:
            self.device = uri.path
        self.timeout = uri.get_float("timeout", DEFAULT_TIMEOUT, minimum=0.001)
        self.retries = uri.get_int("retries", DEFAULT_RETRIES, minimum=0)
        self.poll = uri.get_float("poll", DEFAULT_POLL, minimum=0.0)
        named = uri.params.get("calibration")
        path = Path(named).expanduser() if named else default_calibration_path(self.arm.name)
        self.calibration: Calibration | None = None
        self.calibration_problem = ""
        if named or path.is_file():
            self.calibration = read_calibration(path)  # a named file that cannot be read: refused now
            self.calibration.check(self.names + ((GRIPPER,) if self.arm.gripper else ()), self._ids_by_name())
        elif not uri.wants_simulator:
            self.calibration_problem = (f"no calibration for arm {self.arm.name} ({path} does not exist): run"
                                        f" `robohal feetech calibrate '{uri}'`, or name a file with calibration=FILE"
                                        " (LeRobot's SO-101 calibration files are read as they are)")
        # per joint (its row in the telemetry, sign, zero ticks, rad per tick with the sign): the
        # state's conversion, as the calibration's: q = (ticks - zero) * gain, dq = sign * velocity
        self._rows = {servo_id: row for row, servo_id in enumerate(self.arm.ids)}  # the telemetry's order
        self._conversion = tuple(
            (self._rows[servo_id], sign * self.calibration[name].direction, self.calibration[name].zero,
             sign * self.calibration[name].direction * RAD_PER_TICK)
            for name, servo_id, sign in zip(self.names, self.arm_ids, self.directions, strict=True)
        ) if self.calibration else ()
        # the same per telemetry row, with the joint's index (None: the jaw, no joint)
        self._joint_of_row: list[tuple[int, int, int, float] | None] = [None] * len(self.arm.ids)
        for index, (row, sign, zero, gain) in enumerate(self._conversion):
            self._joint_of_row[row] = (index, sign, zero, gain)
        gripper = self.arm.gripper
        self.jaw_id = gripper.id if gripper else None
        self.bus: ServoBus | None = None
        self.telemetry: Telemetry | None = None
        self.firmware: dict[int, tuple[int, int]] = {}
        self.jaw_goal: int | None = None  # the jaw's goal (ticks), set by the gripper
        self.jaw_stalled = False  # the jaw stalled since its goal was last set (on a part, usually)
        self.exchange_time = 0.0  # s: the median exchange measured at connect
        self._arm_goals: list[int] = []
        self._queued: list[bytes] = []  # one-off sync writes for the next exchange
        self._lock = threading.RLock()  # one transaction on the line at a time
        self._faults: dict[str, str] = {}
        self._torque_limits = [1.0] * len(self.arm.ids)  # per servo (arm.ids), as a share of the stall torque
        self._link_error: ConnectionLost | None = None
        self._stalls = [StallTimer(gripper.stall if gripper is not None and servo_id == gripper.id else self.arm.stall)
                        for servo_id in self.arm.ids]  # per servo (arm.ids)
        self._voltage = BoundWatch(self.arm.voltage)
        self._temperature = BoundWatch(self.arm.temperature)
        # per servo, its raw (voltage, temperature) last judged
        self._judged: list[tuple[int, int] | None] = [None] * len(self.arm.ids)
        # the goals' sync write: address, length, then (id, goal) per servo, the arm's then the jaw's
        self._goal_params = struct.Struct("<BB" + "BH" * len(self.arm.ids))
        self._goal_sent: tuple[tuple[int | None, ...], bytes] = ((), b"")  # the goals last encoded, and their packet
        self._poll_stop = threading.Event()
        self._poll_thread: threading.Thread | None = None
        self._t0 = time.monotonic()
        self._pacer = Pacer(self.period)  # the link keeps no time: the host paces the cycles
        self._last_exchange = 0.0
        self._pending: list[int] | None = None
        self._state: RobotState | None = None  # the last exchange's
        # the exchange under way (see _prepare): its telemetry, each servo's goal, the joints' q and dq
        self._incoming = Telemetry(())
        self._targets: list[int | None] = []
        self._q = self._dq = np.empty(0)
        self._commanded: Array | None = None
        self._ticks: list[int] = []
        self._moving = False  # a joint moves

    def _ids_by_name(self) -> dict[str, int]:
        found = {joint.name: joint.id for joint in self.arm.joints}
        if self.arm.gripper is not None:
            found[GRIPPER] = self.arm.gripper.id
        return found

    @property
    def readings(self) -> dict[int, Reading]:
        """The last report of each servo, by id (empty before the first)."""
        return self.telemetry.readings if self.telemetry is not None else {}

    @property
    def identity(self) -> str:
        if not self.firmware:
            return ""
        versions = sorted({f"{major}.{minor}" for major, minor in self.firmware.values()})
        return (f"{len(self.firmware)} Feetech servos (model {self.arm.model_number}), firmware {', '.join(versions)},"
                f" on {self.device} at {self.baud} baud")

    @property
    def figures(self) -> dict[str, Any]:
        """The bus's own figures, for the live view and reports."""
        return {"control rate": f"{1.0 / self.period:.0f} Hz", "exchange": f"{self.exchange_time * 1e3:.2f} ms",
                "retries": self.counters["retries"], "missing status": self.counters["missing_status"],
                "corrupt status": self.counters["corrupt_status"]}

    def check_setpoints(self, q: Array) -> None:
        """Refuse (:class:`~robohal.errors.LimitViolation`) any setpoint outside the calibrated ranges."""
        if self.calibration is None:
            return
        for row in np.atleast_2d(q):
            self.calibration.to_ticks(self.names, row, self.directions)

    # ------------------------------------------------------------------ lifecycle

    def _open(self) -> RobotState:
        if not self.device:
            raise ConnectFailed(f"{self.uri}: the host 'sim' names the bundled simulator, which robohal.connect starts;"
                                " this backend has no serial device to open")
        self.bus = ServoBus(self.device, self.baud, timeout=self.timeout, retries=self.retries,
                            counters=self.counters, anomaly=self._anomaly, label=self.arm.label)
        try:
            self.bus.open()
        except ConnectionLost as missing:
            self.bus = None
            raise ConnectFailed(str(missing), address=self.device) from None
        if self.calibration is None:  # after the port: calibrating needs it too, so a missing one is told first
            self.bus.close()
            self.bus = None
            raise ConnectFailed(f"feetech: {self.calibration_problem}", address=self.device)
        try:
            with self._lock:
                self._find_servos()
                self._check_identity()
                self._check_calibration()
                self._configure()
                state = self._hold_where_it_stands()
                self._measure_exchange()
        except BaseException:
            self.bus.close()
            self.bus = None
            raise
        self._link_error = None
        self._clear_faults()
        self._t0 = time.monotonic()
        self._pacer.restart(self._t0)
        if self.poll:
            self._poll_stop.clear()
            self._poll_thread = start_link_thread(self, type(self)._poll_step, self._poll_stop,
                                                  f"robohal-feetech-poll-{self.device}")
        return state

    def _close(self) -> None:
        self._poll_stop.set()
        if self._poll_thread is not None and self._poll_thread is not threading.current_thread():
            self._poll_thread.join(timeout=2.0)
        self._poll_thread = None
        with self._lock:
            if self.bus is not None:
                self.bus.close()
                self.bus = None

    def _find_servos(self) -> None:
        """Ping every servo; name what is missing, and a bus that speaks at another baud rate."""
        assert self.bus is not None
        ids = self.arm.ids
        answered = [servo_id for servo_id in ids if self.bus.ping(servo_id) is not None]
        if len(answered) == len(ids):
            return
        if answered:
            missing = ", ".join(self.arm.label(i) for i in ids if i not in answered)
            raise ConnectFailed(f"feetech: {missing} does not answer on {self.device} at {self.baud} baud (servos"
                                f" {', '.join(map(str, answered))} do): check its cable and its id (`robohal feetech"
                                f" scan {self.device}` lists the ids on the bus)", address=self.device)
        found = None
        for baud in BAUD_CODES:
            if baud == self.baud:
                continue
            self.bus.set_baud(baud)
            if any(self.bus.ping(servo_id, retries=False) is not None for servo_id in ids[:2]):
                found = baud
                break
        self.bus.set_baud(self.baud)
        if found is not None:
            raise ConnectFailed(f"feetech: the servos on {self.device} answer at {found} baud, not {self.baud}: add"
                                f" baud={found} to the URI, or set them to {self.baud} with `robohal feetech baud"
                                f" {self.device} {self.baud} --from {found}`", address=self.device)
        raise ConnectFailed(f"feetech: no servo answers on {self.device} at any baud rate: is the servos' supply on"
                            " (the USB cable powers the adapter only), the bus cable in, and this the adapter's port?",
                            address=self.device)

    def _check_identity(self) -> None:
        """Every servo's model number and firmware against the arm file."""
        assert self.bus is not None
        wrong = []
        for servo_id in self.arm.ids:
            data = self.bus.read(servo_id, 0, 5).data
            firmware, model = (data[0], data[1]), data[3] | data[4] << 8
            self.firmware[servo_id] = firmware
            if model != self.arm.model_number:
                wrong.append(f"{self.arm.label(servo_id)} is model {model}, not {self.arm.model_number}")
            elif firmware < self.arm.min_firmware:
                wrong.append(f"{self.arm.label(servo_id)} runs firmware {firmware[0]}.{firmware[1]}; this arm needs"
                             f" {self.arm.min_firmware[0]}.{self.arm.min_firmware[1]} or newer")
        if wrong:
            raise ProtocolError(f"feetech: {'; '.join(wrong)} (arm file {self.arm.file.path}; update firmware with"
                                " Feetech's FD software)")
        versions = set(self.firmware.values())
        if len(versions) > 1:
            log.warning("%s: the servos run different firmware (%s): update them to one version", self.uri,
                        ", ".join(f"{self.arm.label(i)} {v[0]}.{v[1]}" for i, v in self.firmware.items()))

    def _check_calibration(self) -> None:
        """The servos must hold the calibration's homing offsets and position limits."""
        assert self.bus is not None and self.calibration is not None
        offset, low, high = (REGISTERS[n] for n in ("Homing_Offset", "Min_Position_Limit", "Max_Position_Limit"))
        wrong = []
        for name, servo_id in self._ids_by_name().items():
            joint = self.calibration[name]
            held = self.bus.read_register(servo_id, offset)
            limits = self.bus.read(servo_id, low.address, 4).data
            held_low, held_high = low.decode(limits[:2]), high.decode(limits[2:4])
            if held != joint.homing_offset:
                wrong.append(f"{self.arm.label(servo_id)} holds homing offset {held}, the calibration {joint.homing_offset}")
            elif (held_low, held_high) != (joint.range_min, joint.range_max):
                wrong.append(f"{self.arm.label(servo_id)} limits its position to {held_low}..{held_high}, the"
                             f" calibration to {joint.range_min}..{joint.range_max}")
        if wrong:
            source = self.calibration.source or "the calibration"
            raise CalibrationError(f"feetech: the servos do not hold {source}: {'; '.join(wrong)}. Write it to them"
                                   f" with `robohal feetech calibrate '{self.uri}' --apply {source}`, or calibrate"
                                   " again")

    def _configure(self) -> None:
        """Fastest answers, the arm file's torque limits, full speed (the guard shapes motions)."""
        assert self.bus is not None
        ids = self.arm.ids
        reg = REGISTERS
        self.bus.sync_write(reg["Return_Delay_Time"], {i: 0 for i in ids})
        limits = {i: round(self.arm.torque_limit * LOAD_FULL_SCALE) for i in self.arm_ids}
        if self.arm.gripper is not None:
            limits[self.arm.gripper.id] = round(self.arm.gripper.torque_limit * LOAD_FULL_SCALE)
            self.bus.sync_write(reg["Protection_Current"],
                                {self.arm.gripper.id: round(self.arm.gripper.current_limit / CURRENT_UNIT_A)})
        self.bus.sync_write(reg["Torque_Limit"], limits)
        for servo_id, value in limits.items():
            self._torque_limits[self._rows[servo_id]] = value / LOAD_FULL_SCALE
        self.bus.sync_write(reg["Goal_Velocity"], {i: 0 for i in ids})
        self.bus.sync_write(reg["Acceleration"], {i: 0 for i in ids})
        # the transactions' timing from here on: the slowest servo's return delay, as it reads back
        delay = max(self.bus.read_register(i, reg["Return_Delay_Time"]) for i in ids)
        self.bus.return_delay = max(delay * RETURN_DELAY_UNIT_S, FASTEST_ANSWER)

    def _hold_where_it_stands(self) -> RobotState:
        """Goals where the servos are, then torque on: the arm holds still."""
        assert self.bus is not None
        statuses = self.bus.sync_read(TELEMETRY_START, TELEMETRY_LENGTH, self.arm.ids, what="the first read")
        found = Telemetry(self.arm.ids)
        for servo_id, status in statuses.items():
            found.take(self._rows[servo_id], status.data, status.error)
        self.telemetry = found
        positions = found.position
        self._arm_goals = [positions[self._rows[i]] for i in self.arm_ids]
        goals = dict(zip(self.arm_ids, self._arm_goals, strict=True))
        if self.jaw_id is not None:
            self.jaw_goal = positions[self._rows[self.jaw_id]]
            goals[self.jaw_id] = self.jaw_goal
        self.bus.sync_write(REGISTERS["Goal_Position"], goals)
        self.bus.sync_write(REGISTERS["Torque_Enable"], {i: 1 for i in self.arm.ids})
        for timer in self._stalls:
            timer.clear()
        self.jaw_stalled = False
        return self._exchange(None)

    def _measure_exchange(self) -> None:
        """How long one exchange takes here; warn when the rate cannot be kept."""
        times = []
        for _ in range(9):
            began = time.monotonic()
            self._exchange(None)
            times.append(time.monotonic() - began)
        self.exchange_time = statistics.median(times)
        if self.exchange_time > self.period:
            log.warning("%s: one exchange with the servos takes %.1f ms, longer than the %.1f ms period: lower rate=,"
                        " or the adapter's latency (an FTDI adapter's latency timer: 1 ms)", self.uri,
                        self.exchange_time * 1e3, self.period * 1e3)

    # ------------------------------------------------------------------ the exchange

    def _exchange(self, goals: list[int] | None) -> RobotState:
        """One transaction: queued writes, the goals, the telemetry of every servo, each servo's
        answer watched as it arrives (while the others' are still on the wire)."""
        with self._lock:
            if self._link_error is not None:
                raise self._link_error
            if self.bus is None:
                raise ConnectionLost(f"feetech: {self.device} is not open")
            if goals is not None:
                self._arm_goals = list(goals)
            before = self._goal_packet(self._arm_goals)
            if self._queued:
                before = b"".join(self._queued) + before
                self._queued.clear()
            self.bus.sync_read(TELEMETRY_START, TELEMETRY_LENGTH, self.arm.ids, before=before, each=self._take,
                               sent=self._prepare)
            now = self._last_exchange = time.monotonic()
            self.telemetry = self._incoming
            state = self._state = self._snapshot(now, self._q, self._dq, self._commanded, tuple(self._ticks),
                                                 self._moving)
            return state

    def _prepare(self) -> None:
        """What the exchange fills as the answers arrive, made while its bytes are on the wire."""
        self._incoming = Telemetry(self.arm.ids)
        self._targets = self._goal_rows()
        self._q, self._dq = np.empty(len(self.names)), np.empty(len(self.names))
        self._commanded = self.guard.last  # (a copy: the guard's target for this cycle is set)
        self._ticks = [0] * len(self.names)
        self._moving = False

    def _goal_packet(self, arm_goals: list[int]) -> bytes:
        """The sync write of every goal: the arm's, then the jaw's once the gripper set one (built
        again only when a goal changed: a held arm sends the same bytes each cycle)."""
        jaw_goal = self.jaw_goal  # (the gripper sets it from another thread: read once)
        key = (*arm_goals, jaw_goal)
        sent = self._goal_sent
        if key != sent[0]:
            sent = self._goal_sent = (key, self._encode_goals(arm_goals, jaw_goal))
        return sent[1]

    def _encode_goals(self, arm_goals: list[int], jaw_goal: int | None) -> bytes:
        ids, goals = self.arm_ids, arm_goals
        if self.jaw_id is not None and jaw_goal is not None:
            ids, goals = (*ids, self.jaw_id), [*goals, jaw_goal]
        reg = REGISTERS["Goal_Position"]
        if len(ids) == len(self.arm.ids) and 0 <= min(goals) and max(goals) < 1 << reg.sign_bit:
            # the common case in one pack: positive goals are their own sign-magnitude encoding
            pairs = [value for pair in zip(ids, goals, strict=True) for value in pair]
            return wire.Frame(wire.BROADCAST_ID, wire.Instruction.SYNC_WRITE,
                              self._goal_params.pack(reg.address, reg.size, *pairs)).encode()
        return wire.sync_write(reg.address, reg.size, {i: reg.encode(v) for i, v in zip(ids, goals, strict=True)})

    def _goal_rows(self) -> list[int | None]:
        """Each servo's goal (ticks) in the telemetry's order; None: it has none (the jaw before its first)."""
        goals: list[int | None] = [None] * len(self.arm.ids)
        for (row, *_), goal in zip(self._conversion, self._arm_goals, strict=True):
            goals[row] = goal
        if self.jaw_id is not None:
            goals[self._rows[self.jaw_id]] = self.jaw_goal
        return goals

    def _queue(self, name: str, values: dict[int, int]) -> None:
        if name == "Torque_Limit":
            for servo_id, value in values.items():
                self._torque_limits[self._rows[servo_id]] = value / LOAD_FULL_SCALE
        reg = REGISTERS[name]
        self._queued.append(wire.sync_write(reg.address, reg.size, {i: reg.encode(v) for i, v in values.items()}))

    def _take(self, servo_id: int, status: Status) -> None:
        """One servo's answer: into the telemetry and its joint's q and dq, then watched (see
        :mod:`.protection`): its stall, its voltage and temperature, its own error bits."""
        row, found = self._rows[servo_id], self._incoming
        found.take(row, status.data, status.error)
        goal, position = self._targets[row], found.position[row]
        joint = self._joint_of_row[row]
        if joint is not None:
            index, sign, zero, gain = joint
            self._q[index] = (position - zero) * gain
            self._dq[index] = sign * found.velocity[row]
            self._ticks[index] = position
            self._moving = self._moving or found.moving[row]
        error = 0.0 if goal is None else (goal - position) * RAD_PER_TICK
        if self._stalls[row].update(time.monotonic(), found.current[row], error, found.velocity[row], found.load[row],
                                    self._torque_limits[row]):
            self._on_stall(found, row, error)
        if found.slow[row] != self._judged[row]:
            # voltage and temperature change on a seconds scale (in 0.1 V and 1 degC steps): judged
            # again only when one of them changed, since the same values give the same verdicts
            self._judged[row] = found.slow[row]
            self._judge_bounds(servo_id, found.voltage[row], found.temperature[row])
        if status.error:
            errors = wire.error_names(status.error)
            label = self.arm.label(servo_id)
            self._anomaly("servo_errors", f"{label} reports {', '.join(errors)}")
            if "ANGLE" in errors:
                self._fault("SENSOR", f"{label} reports a fault of its magnetic encoder (ANGLE)")
            if "OVERHEAT" in errors:
                self._fault("OVERHEAT", f"{label} reports overheating and cut its torque")

    def _judge_bounds(self, servo_id: int, voltage: float, temperature: float) -> None:
        """A servo's voltage and temperature against the arm file's bounds: a warning, a fault."""
        for quantity, watch, value, unit, name in (
                ("voltage", self._voltage, voltage, "V", "VOLTAGE"),
                ("temperature", self._temperature, temperature, "degC", "OVERHEAT")):
            verdict = watch.judge(servo_id, value)
            if verdict is None:
                continue
            bounds, label = watch.bounds, self.arm.label(servo_id)
            if verdict == "warn":
                self.counters[f"{quantity}_warnings"] += 1
                log.warning("%s: %s measures %g %s, past the arm file's warning bound (%s)", self.uri, label,
                            value, unit, f"{bounds.warn_below}..{bounds.warn_above}")
            elif verdict == "fault":
                low = bounds.fault_below is not None and value < bounds.fault_below
                fault = ("UNDER" if low else "OVER") + "VOLTAGE" if name == "VOLTAGE" else name
                self._fault(fault, f"{label} measures {value:g} {unit}, past the arm file's fault bound"
                                   f" ({bounds.fault_below}..{bounds.fault_above} {unit})")

    def _on_stall(self, found: Telemetry, row: int, error: float) -> None:
        servo_id, position = found.ids[row], found.position[row]
        rule = self._stalls[row].rule
        label = self.arm.label(servo_id)
        what = (f"{label} stalled: {abs(found.current[row]):.2f} A, {abs(error):.3f} rad from its goal for"
                f" {rule.time:g} s")
        self.counters["stalls"] += 1
        if rule.action == "release":
            self._queue("Torque_Enable", {servo_id: 0})
            what += "; released (torque off)"
        else:
            self._queue("Torque_Limit", {servo_id: round(rule.hold_torque * LOAD_FULL_SCALE)})
            what += f"; holding where it is at {rule.hold_torque:.0%} torque"
        if servo_id == self.jaw_id:
            self.jaw_goal = position
            self.jaw_stalled = True
            log.info("%s: %s", self.uri, what)
            return
        self._arm_goals[self.arm_ids.index(servo_id)] = position
        self._fault("STALL", what)

    def _clear_faults(self) -> None:
        self._faults.clear()
        self._judged = [None] * len(self.arm.ids)  # a voltage or temperature still out of bounds faults again

    def _fault(self, name: str, text: str) -> None:
        if name not in self._faults:
            self._faults[name] = text
            log.warning("%s: %s", self.uri, text)

    def _fault_of(self, state: RobotState) -> HardwareFault:
        texts = "; ".join(self._faults.values()) or ", ".join(state.faults)
        return HardwareFault(f"feetech: {texts} (recover() clears it once its cause is gone)", names=state.faults,
                             recoverable=True)

    def command_jaw(self, goal: int, velocity: int, torque: float | None = None) -> None:
        """A new gripper command: the jaw's goal (ticks) at ``velocity`` (ticks/s), its torque limit
        back to the arm file's (or ``torque``, a share of the stall torque, at most the arm file's)
        and its torque on, its stall forgotten. They go out with the next exchange."""
        if self.arm.gripper is None or self.jaw_id is None:
            return
        limit = self.arm.gripper.torque_limit if torque is None else min(torque, self.arm.gripper.torque_limit)
        with self._lock:
            self._queue("Torque_Limit", {self.jaw_id: round(limit * LOAD_FULL_SCALE)})
            self._queue("Torque_Enable", {self.jaw_id: 1})
            self._queue("Goal_Velocity", {self.jaw_id: velocity})
            self._stalls[self._rows[self.jaw_id]].clear()
            self.jaw_stalled = False
            self.jaw_goal = goal

    def exchange_now(self) -> RobotState:
        """One exchange with the servos now, holding the goals (the gripper waits on it)."""
        return self._exchange(None)

    # ------------------------------------------------------------------ the poll thread

    def _poll_step(self) -> float | None:
        """Read the servos while no cycle does (one step of the poll thread)."""
        if time.monotonic() - self._last_exchange < self.poll:
            return self.poll / 2
        if not self._lock.acquire(timeout=0):
            return self.poll / 2
        try:
            if self.bus is not None and self._link_error is None:
                self._exchange(None)
        except ConnectionLost as lost:
            self._link_error = lost  # the next cycle raises it
        finally:
            self._lock.release()
        return self.poll / 2

    # ------------------------------------------------------------------ backend hooks

    def _send(self, q: Array) -> None:
        assert self.calibration is not None
        ticks = self.calibration.to_ticks(self.names, q, self.directions)  # LimitViolation: nothing sent
        self._goal_packet(ticks)  # built now, before the wait for the cycle's time, not after it
        self._pacer.wait()
        self._pending = ticks

    def _receive(self, timeout: float | None) -> RobotState:
        goals, self._pending = self._pending, None
        return self._exchange(goals)

    def _read_now(self) -> RobotState | None:
        with self._lock:
            state, found = self._state, self.telemetry  # (its faults may have changed since: built again)
            if state is None or found is None:
                return None
            moving = any(found.moving[row] for row, *_ in self._conversion)  # (the same exchange's)
            return self._snapshot(time.monotonic(), state.q, state.dq, state.q_commanded, state.info["position_ticks"],
                                  moving)

    def _recover(self) -> RobotState:
        """Clear the faults whose cause is gone and hold where the arm stands."""
        with self._lock:
            if self._link_error is not None or self.bus is None:
                raise ConnectionLost(f"feetech: the link to {self.device} was lost: close() and connect again")
            self._clear_faults()
            self._queue("Torque_Limit", {i: round(self.arm.torque_limit * LOAD_FULL_SCALE) for i in self.arm_ids})
            state = self._hold_where_it_stands()
            if self._faults:
                raise HardwareFault(f"feetech: {'; '.join(self._faults.values())}: not recovered, the cause persists",
                                    names=tuple(self._faults), recoverable=True)
            return state

    # ------------------------------------------------------------------ state

    def _snapshot(self, now: float, q: Array, dq: Array, commanded: Array | None, ticks: tuple[int, ...],
                  moving: bool) -> RobotState:
        """The state at ``now`` (monotonic s) of the last exchange, whose joints' ``q``, ``dq``,
        ``ticks`` and ``moving`` were taken as the answers came (``commanded``: the guard's target
        then)."""
        assert self.telemetry is not None
        found = self.telemetry
        faults = tuple(self._faults)
        mode = RobotMode.FAULT if faults else RobotMode.MOVING if moving else RobotMode.IDLE
        info: dict[str, Any] = {
            "current_A": tuple(found.current),
            "load": tuple(found.load),
            "voltage_V": tuple(found.voltage),
            "temperature_C": tuple(found.temperature),
            "servo_ids": self.arm.ids,
            "goal_ticks": tuple(self._arm_goals),
            "position_ticks": ticks,
            "fault_text": tuple(self._faults.values()),
            "retries": self.counters["retries"],
            "recoverable": True,
        }
        if self.jaw_id is not None:
            info["jaw_ticks"] = found.position[self._rows[self.jaw_id]]
        return RobotState.handed_over(now - self._t0, q, dq, mode, faults, commanded, info)
