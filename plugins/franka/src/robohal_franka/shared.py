"""The shared-memory block between the backend (parent) and its control process.

One float64 array: the latest robot state (written by the control process under
a sequence lock), the setpoint mailbox (written by the parent) and counters.
Everything else (commands, replies, errors) goes through a pipe.
"""

from __future__ import annotations

import os
import select
import time

import numpy as np

from .wire import ERROR_NAMES

DOF = 7


class Layout:
    """Offsets into the shared array."""

    STATE_SEQ = 0  # odd while the control process writes the state
    TIME = 1
    Q = slice(2, 9)
    DQ = slice(9, 16)
    Q_D = slice(16, 23)
    ROBOT_MODE = 23  # libfranka's RobotMode value
    SUCCESS_RATE = 24
    ERRORS = slice(25, 25 + len(ERROR_NAMES))  # current_errors bits
    STATE_COUNT = 66  # states published
    SESSION = 67  # 0 none, 1 streaming, 2 motion, 3 torque motion
    COMMANDED = slice(68, 75)  # the last setpoint written to the robot
    # counters
    WRITES = 75  # every command written
    MOTION_SETPOINTS = 76  # setpoints from motions run in the control process
    STARVED = 77  # streaming cycles without a fresh setpoint while moving
    LATE = 78  # readOnce returned a state more than one period after the previous one
    LOST = 79  # robot cycles between consecutive states beyond the first (sum)
    CONSUMED = 80  # mailbox sequence number consumed by the control process
    # the mailbox
    SETPOINT_SEQ = 81
    SETPOINT = slice(82, 89)
    PARENT_WAITING = 89  # 1 while the parent waits for a state: ring its doorbell
    CONSUMED_AT = 90  # STATE_COUNT when the last mailbox setpoint was consumed
    DROPPED = 91  # the last mailbox sequence number refused because no stream session was open
    WRENCH = slice(92, 98)  # O_F_ext_hat_K: the estimated external wrench on the flange, base frame
    SIZE = 98


SESSION_NONE, SESSION_STREAM, SESSION_MOTION, SESSION_TORQUE = 0, 1, 2, 3


class SharedBlock:
    """A numpy view of the shared array, with the state's sequence lock."""

    def __init__(self, buffer) -> None:
        self.buffer = buffer
        self.array = np.frombuffer(buffer, dtype=np.float64, count=Layout.SIZE)

    def publish(self, time_s: float, q, dq, q_d, robot_mode: int, success_rate: float, errors_bits,
                wrench) -> None:
        """Write a state (control process side)."""
        a = self.array
        a[Layout.STATE_SEQ] += 1
        a[Layout.TIME] = time_s
        a[Layout.Q] = q
        a[Layout.DQ] = dq
        a[Layout.Q_D] = q_d
        a[Layout.WRENCH] = wrench
        a[Layout.ROBOT_MODE] = robot_mode
        a[Layout.SUCCESS_RATE] = success_rate
        a[Layout.ERRORS] = errors_bits
        a[Layout.STATE_COUNT] += 1
        a[Layout.STATE_SEQ] += 1

    def snapshot(self, timeout: float = 0.1) -> np.ndarray:
        """A consistent copy of the array (parent side)."""
        deadline = time.monotonic() + timeout
        while True:
            before = self.array[Layout.STATE_SEQ]
            copy = self.array.copy()
            if before % 2 == 0 and self.array[Layout.STATE_SEQ] == before:
                return copy
            if time.monotonic() > deadline:
                return copy
            time.sleep(0)

    def post_setpoint(self, q) -> int:
        """Put a setpoint in the mailbox (parent side); returns its sequence number."""
        a = self.array
        a[Layout.SETPOINT] = q
        a[Layout.SETPOINT_SEQ] += 1
        return int(a[Layout.SETPOINT_SEQ])

    def take_setpoint(self) -> tuple[int, np.ndarray] | None:
        """The mailbox's setpoint if it is new (control process side)."""
        a = self.array
        seq = a[Layout.SETPOINT_SEQ]
        if seq <= a[Layout.CONSUMED]:
            return None
        q = a[Layout.SETPOINT].copy()
        return int(seq), q

    def get(self, index) -> float:
        return float(self.array[index])

    def set(self, index, value) -> None:
        self.array[index] = value

    def add(self, index, value: float = 1.0) -> None:
        self.array[index] += value


class Doorbell:
    """A pipe that wakes a waiting process at once (polling with sleeps would add
    100 us or more per wait, a tenth of a cycle)."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        for fd in (read_fd, write_fd):
            if fd >= 0:
                os.set_blocking(fd, False)

    @classmethod
    def create(cls) -> Doorbell:
        return cls(*os.pipe())

    def ring(self) -> None:
        try:
            os.write(self.write_fd, b"!")
        except (BlockingIOError, OSError):
            pass  # full (nobody listening) or closed: a ring is only a hint

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for a ring; drain the pipe. True if rung."""
        ready, _, _ = select.select([self.read_fd], [], [], max(timeout, 0.0))
        if not ready:
            return False
        try:
            os.read(self.read_fd, 4096)
        except (BlockingIOError, OSError):
            pass
        return True

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.read_fd = self.write_fd = -1
