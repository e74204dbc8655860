"""The built-in ``sim`` backend: an in-process simulated joint-position robot
for any registered model.

``sim://?model=abb.irb2400&rate=250&lag=0.01&realtime=1&q0=0,0,0,0,0,0``

Each cycle the measured joints follow the setpoint with a first-order lag
(``lag`` seconds) and never faster than the model's velocity limits. With
``realtime=1`` (the default) cycles are paced by the wall clock at ``rate`` Hz;
with ``realtime=0`` the simulation runs as fast as the caller cycles, on its own
virtual clock (handy in tests). ``inject_fault()`` makes the next cycle report a
fault, to exercise error paths.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np

from ..control.backend import Backend
from ..errors import ConnectionLost
from ..kinematics import Kinematics
from ..state import Array, RobotMode, RobotState
from ..uri import RobotUri

#: s: the most simulated time a read catches up on (the arm has long settled by then)
CATCH_UP = 5.0


class SimBackend(Backend):
    checks = ("position", "velocity", "acceleration", "jerk")
    in_process_simulation = True

    def __init__(self, uri: RobotUri, model: Kinematics) -> None:
        rate = uri.get_float("rate", 250.0, minimum=1.0)
        super().__init__(uri, model, 1.0 / rate)
        self.lag = uri.get_float("lag", 0.01, minimum=0.0)
        self.realtime = uri.get_bool("realtime", True)
        self.q0 = self._initial_joints(uri, model)
        self._q = self.q0.copy()
        self._dq = np.zeros(model.dof)
        self._target = self.q0.copy()
        self._time = 0.0
        self._next_tick = 0.0
        self._faults: tuple[str, ...] = ()
        self._fault_recoverable = True
        self._stepping = threading.Lock()  # a motion's cycles and a reader's catch-up move the arm

    @staticmethod
    def _initial_joints(uri: RobotUri, model: Kinematics) -> Array:
        q0 = uri.get_vector("q0", model.dof)  # rad
        if q0 is None:
            return model.limits.clip(np.zeros(model.dof))
        model.check_joints(q0, "q0")
        return q0

    # The simulated robot ----------------------------------------------------------

    def _snapshot(self) -> RobotState:
        mode = RobotMode.FAULT if self._faults else (RobotMode.MOVING if np.abs(self._dq).max() > 1e-9 else RobotMode.IDLE)
        return RobotState(
            time=self._time, q=self._q, dq=self._dq, mode=mode, faults=self._faults,
            q_commanded=self._target, info={"recoverable": self._fault_recoverable},
        )

    def _advance(self) -> None:
        dt = self.period
        alpha = 1.0 if self.lag == 0 else 1.0 - math.exp(-dt / self.lag)
        step = np.clip((self._target - self._q) * alpha, -self.model.limits.velocity * dt, self.model.limits.velocity * dt)
        self._q = self._q + step
        self._dq = step / dt
        self._time += dt

    def inject_fault(self, name: str = "simulated_fault", recoverable: bool = True) -> None:
        """Make the robot report a fault from its next cycle on."""
        self._faults = (name,)
        self._fault_recoverable = recoverable

    # The wire ----------------------------------------------------------------------

    def _open(self) -> RobotState:
        self._next_tick = time.monotonic()
        self._target = self._q.copy()
        return self._snapshot()

    def _close(self) -> None:
        pass

    def _send(self, q: Array) -> None:
        if not self.connected:
            raise ConnectionLost("sim: not connected")
        self._target = q.copy()

    def _receive(self, timeout: float | None) -> RobotState:
        if self.realtime:
            with self._stepping:  # a reader may move the tick on too
                self._next_tick += self.period
                delay = self._next_tick - time.monotonic()
                if delay < -self.period:  # late: do not burst to catch up
                    self._next_tick = time.monotonic()
            if delay > 0:
                time.sleep(delay)
        with self._stepping:
            if not self._faults:
                self._advance()
            return self._snapshot()

    def _read_now(self) -> RobotState:
        """In real time the arm keeps following its last target between cycles, as a real
        one does: a read catches up on the ticks nobody cycled (at most CATCH_UP s of them)."""
        with self._stepping:
            if self.realtime and self.connected:
                overdue = int((time.monotonic() - self._next_tick) / self.period)
                if overdue > 1:  # more than a period behind: no motion is cycling
                    for _ in range(min(overdue, int(CATCH_UP / self.period))):
                        if not self._faults:
                            self._advance()
                    self._next_tick += overdue * self.period
            return self._snapshot()

    def _recover(self) -> RobotState:
        self._faults = ()
        self._dq = np.zeros(self.model.dof)
        self._target = self._q.copy()
        return self._snapshot()
