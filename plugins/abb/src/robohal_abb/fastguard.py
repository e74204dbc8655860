"""A quicker yes for :class:`robohal.guard.SetpointGuard`, for the 250 Hz EGM loop.

Every EGM cycle sits on the robot's critical path (robot message in -> reply
out), and the core guard spends tens of microseconds in small numpy steps. This
subclass first asks one question with a few array operations: is the setpoint
finite, inside the position limits and, with its finite differences, well
inside the velocity/acceleration/jerk bounds? Only a clear yes takes the fast
path; anything else goes to the core's own :meth:`check`, which decides and
words the :class:`~robohal.errors.LimitViolation`. The fast test uses bounds a
hair tighter than the core's, so it never accepts what the core would refuse.
"""

from __future__ import annotations

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
        # rows: velocity, acceleration, jerk as combinations of the last four setpoints (oldest first)
        self._differences = np.array([
            [0.0, 0.0, -1.0, 1.0],
            [0.0, 1.0, -2.0, 1.0],
            [-1.0, 3.0, -3.0, 1.0],
        ]) / np.array([[dt], [dt**2], [dt**3]])
        tighter = 1.0 + RELATIVE_SLACK / 2  # strictly inside the core's bound (limit * (1 + slack) + 1e-9)
        self._bounds = np.array([
            limits.velocity * tighter if "velocity" in self.checks else np.full(limits.dof, np.inf),
            limits.acceleration * tighter if "acceleration" in self.checks else np.full(limits.dof, np.inf),
            limits.jerk * tighter if "jerk" in self.checks else np.full(limits.dof, np.inf),
        ])
        check_position = "position" in self.checks
        self._lower = limits.lower - TOLERANCE if check_position else np.full(limits.dof, -np.inf)
        self._upper = limits.upper + TOLERANCE if check_position else np.full(limits.dof, np.inf)

    def check(self, setpoint: ArrayLike) -> Array:
        try:
            q = np.array(setpoint, dtype=np.float64)
        except (TypeError, ValueError):
            return super().check(setpoint)
        history = self._history
        if q.shape != self._lower.shape or len(history) < 3:
            return super().check(setpoint)
        # NaN fails every comparison and inf fails the finite bounds; both go to the core check
        if not (np.isfinite(q).all() and (q >= self._lower).all() and (q <= self._upper).all()):
            return super().check(setpoint)
        values = self._differences @ np.array((history[-3], history[-2], history[-1], q))
        if not (np.abs(values) <= self._bounds).all():
            return super().check(setpoint)
        return q
