"""A quicker yes for :class:`robohal.guard.SetpointGuard`, for the 250 Hz EGM loop.

Every EGM cycle sits on the robot's critical path (robot message in -> reply
out), and the core guard spends tens of microseconds in small numpy steps. This
subclass first asks one question in plain floats, joint by joint: is the setpoint
finite, inside the position limits and, with its finite differences, well
inside the velocity/acceleration/jerk bounds? Only a clear yes takes the fast
path; anything else goes to the core's own :meth:`check`, which decides and
words the :class:`~robohal.errors.LimitViolation`. The fast test uses bounds a
hair tighter than the core's, so it never accepts what the core would refuse.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike
from robohal.guard import RELATIVE_SLACK, SetpointGuard
from robohal.kinematics.limits import TOLERANCE, JointLimits
from robohal.state import Array


class FastSetpointGuard(SetpointGuard):
    def __init__(self, limits: JointLimits, period: float, checks: Iterable[str] = ("position", "velocity")) -> None:
        super().__init__(limits, period, checks)
        dt = self.period
        self._scales = (1.0 / dt, 1.0 / dt**2, 1.0 / dt**3)
        tighter = 1.0 + RELATIVE_SLACK / 2  # strictly inside the core's bound (limit * (1 + slack) + 1e-9)
        unbounded = [math.inf] * limits.dof

        def bound(quantity: str) -> list[float]:
            return (getattr(limits, quantity) * tighter).tolist() if quantity in self.checks else unbounded

        # one row per joint: lower, upper, |velocity|, |acceleration|, |jerk| bounds
        lower = (limits.lower - TOLERANCE).tolist() if "position" in self.checks else [-math.inf] * limits.dof
        upper = (limits.upper + TOLERANCE).tolist() if "position" in self.checks else unbounded
        self._rows = list(zip(lower, upper, bound("velocity"), bound("acceleration"), bound("jerk"), strict=True))
        self._recent: list[list[float]] = []  # the last three setpoints as floats, oldest first

    def reset(self, q: ArrayLike) -> None:
        super().reset(q)
        self._recent = [h.tolist() for h in self._history[-3:]]

    def commit(self, q: Array) -> None:
        super().commit(q)
        recent = self._recent
        if len(recent) == 3 and len(self._history) >= 3:
            self._recent = [recent[1], recent[2], self._history[-1].tolist()]
        else:
            self._recent = [h.tolist() for h in self._history[-3:]]

    def check(self, setpoint: ArrayLike) -> Array:
        try:
            q = np.array(setpoint, dtype=np.float64)
        except (TypeError, ValueError):
            return super().check(setpoint)
        recent = self._recent
        if q.shape != (len(self._rows),) or len(recent) < 3:
            return super().check(setpoint)
        inv_dt, inv_dt2, inv_dt3 = self._scales
        for x, a, b, c, (low, high, v_max, a_max, j_max) in zip(q.tolist(), *recent, self._rows, strict=True):
            # a, b, c: the setpoints three, two and one cycles back; x - x is NaN for NaN and inf
            if (x - x != 0.0 or not low <= x <= high
                    or abs(x - c) * inv_dt > v_max
                    or abs(x - 2.0 * c + b) * inv_dt2 > a_max
                    or abs(x - 3.0 * c + 3.0 * b - a) * inv_dt3 > j_max):
                return super().check(setpoint)
        return q
