"""The last check between a setpoint and the wire.

Every backend passes each joint-position setpoint through a
:class:`SetpointGuard` before sending it: NaN/inf, joint count, position limits
and, from the finite differences over the last setpoints at the control
period, velocity, acceleration and jerk. A setpoint that fails raises
:class:`~robohal.errors.LimitViolation` and is never sent.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

from .errors import InvalidArgument, LimitViolation
from .kinematics.limits import JointLimits
from .state import Array

ALL_CHECKS = frozenset({"position", "velocity", "acceleration", "jerk"})
# Finite differences of a profile planned exactly at a limit land on it up to round-off.
RELATIVE_SLACK = 1e-6


class SetpointGuard:
    def __init__(
        self,
        limits: JointLimits,
        period: float,
        checks: Iterable[str] = ("position", "velocity"),
    ) -> None:
        checks = frozenset(checks)
        unknown = checks - ALL_CHECKS
        if unknown:
            raise InvalidArgument(f"unknown setpoint checks {sorted(unknown)}; choose from {sorted(ALL_CHECKS)}")
        if not period > 0:
            raise InvalidArgument("the control period must be positive")
        self.limits = limits
        self.period = float(period)
        self.checks = checks
        self._history: list[Array] = []  # newest last, at most 3

    @property
    def active(self) -> bool:
        return bool(self._history)

    @property
    def last(self) -> Array | None:
        return self._history[-1].copy() if self._history else None

    def reset(self, q: ArrayLike) -> None:
        """Start from rest at ``q`` (the measured position on (re)activation)."""
        q = np.array(q, dtype=np.float64)
        self._history = [q.copy(), q.copy(), q.copy()]

    def derivatives(self) -> tuple[Array, Array]:
        """Velocity and acceleration of the sent setpoints (finite differences)."""
        if not self._history:
            raise InvalidArgument("no setpoint has been sent yet")
        h = [self._history[0]] * (3 - len(self._history)) + self._history[-3:]
        dt = self.period
        return (h[-1] - h[-2]) / dt, (h[-1] - 2 * h[-2] + h[-3]) / dt**2

    def check(self, setpoint: ArrayLike) -> Array:
        """Validate ``setpoint``; return it as a float array or raise."""
        try:
            q = np.array(setpoint, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidArgument(f"setpoint must be numeric, got {setpoint!r:.60}") from None
        if q.shape != (self.limits.dof,):
            raise InvalidArgument(f"setpoint must have {self.limits.dof} joints, got shape {q.shape}")
        if not np.isfinite(q).all():
            raise InvalidArgument("setpoint contains NaN or inf")
        if "position" in self.checks:
            self.limits.check_position(q, "setpoint")
        if not self._history:
            return q
        history = [*self._history, q]
        dt = self.period
        diffs = {
            "velocity": (history[-1] - history[-2]) / dt,
            "acceleration": (history[-1] - 2 * history[-2] + history[-3]) / dt**2,
            "jerk": (history[-1] - 3 * history[-2] + 3 * history[-3] - history[-4]) / dt**3
            if len(history) >= 4 else None,
        }
        units = {"velocity": "rad/s", "acceleration": "rad/s^2", "jerk": "rad/s^3"}
        for quantity in ("velocity", "acceleration", "jerk"):
            value = diffs[quantity]
            if quantity not in self.checks or value is None:
                continue
            bound = getattr(self.limits, quantity) * (1 + RELATIVE_SLACK) + 1e-9
            over = np.abs(value) > bound
            if over.any():
                joint = int(np.argmax(np.abs(value) / bound))
                raise LimitViolation(
                    f"setpoint refused: joint {joint + 1} would move at {value[joint]:.4g} {units[quantity]}"
                    f" ({quantity}), limit {getattr(self.limits, quantity)[joint]:.4g} {units[quantity]}",
                    joint=joint, quantity=quantity, value=float(value[joint]),
                    limit=float(getattr(self.limits, quantity)[joint]),
                )
        return q

    def commit(self, q: Array) -> None:
        """Record ``q`` as sent."""
        if not self._history:
            self.reset(q)
            return
        self._history = ([*self._history, np.array(q, dtype=np.float64)])[-4:]
