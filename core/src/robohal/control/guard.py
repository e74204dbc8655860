"""The last check between a setpoint and the wire.

Every backend passes each joint-position setpoint through a
:class:`SetpointGuard` before sending it: NaN/inf, joint count, position limits
and, from the finite differences over the last setpoints at the control
period, velocity, acceleration and jerk. A setpoint that fails raises
:class:`~robohal.errors.LimitViolation` and is never sent.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidArgument, LimitViolation
from ..kinematics.kernels import bounds as _kernels
from ..kinematics.limits import TOLERANCE, JointLimits
from ..motion.trajectory import STOP_SHARE, braking_step
from ..state import Array

ALL_CHECKS = frozenset({"position", "velocity", "acceleration", "jerk"})
# Finite differences of a profile planned exactly at a limit land on it up to round-off.
RELATIVE_SLACK = 1e-6
# Below these the sent setpoints are at rest (rad/s, rad/s^2): round-off of a finished stop.
REST_VELOCITY = 1e-9
REST_ACCELERATION = 1e-6

#: A check of a user's own on each new setpoint ``q``, given the guard (its :attr:`last`
#: setpoint, :meth:`derivatives`, limits and period): raises
#: :class:`~robohal.errors.LimitViolation` to refuse it (a cell's workspace box, say).
Fence = Callable[[np.ndarray, "SetpointGuard"], None]


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
        if not 1e-6 <= period <= 10.0:  # finite differences over less than a microsecond overflow
            raise InvalidArgument(f"the control period must be within [1e-6, 10] s, got {period!r}")
        self.limits = limits
        self.period = float(period)
        self.checks = checks
        self._history: list[Array] = []  # newest last, at most 4
        # The hot path's view: per joint (lower, upper, |v|, |a|, |j|) bounds a hair
        # inside the thorough check's, so it never accepts what that would refuse.
        dt = self.period
        self._scales = (1.0 / dt, 1.0 / dt**2, 1.0 / dt**3)
        tighter = 1.0 + RELATIVE_SLACK / 2
        unbounded = [math.inf] * limits.dof

        def bound(quantity: str) -> list[float]:
            return (getattr(limits, quantity) * tighter).tolist() if quantity in checks else unbounded

        lower = (limits.lower - TOLERANCE).tolist() if "position" in checks else [-math.inf] * limits.dof
        upper = (limits.upper + TOLERANCE).tolist() if "position" in checks else unbounded
        rows = zip(lower, upper, bound("velocity"), bound("acceleration"), bound("jerk"), strict=True)
        # The end-of-travel curve per joint, (1, 2 d, offset, lower, upper), or zeros where it has none.
        ends = [(0.0,) * 5] * limits.dof
        if "velocity" in checks and limits.end_deceleration is not None:
            ends = list(zip([1.0] * limits.dof, (2.0 * limits.end_deceleration).tolist(), limits.end_offset.tolist(),
                            limits.lower.tolist(), limits.upper.tolist(), strict=True))
        # both per joint, in the one flat array the kernel reads (_kernels.within_bounds)
        self._packed = array("d", [value for row, end in zip(rows, ends, strict=True) for value in (*row, *end)])
        self._recent: list[list[float]] = []  # the last three setpoints as floats, oldest first
        #: checks of the user's own after the limits (:data:`Fence`); the guard's brake passes them
        #: by (a fence judges a setpoint by where a brake from it would end)
        self.fences: list[Fence] = []

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
        self._recent = [q.tolist()] * 3

    def fill(self, cycles: int) -> None:
        """Record ``cycles`` control cycles that no setpoint of ours reached, which the robot
        filled by continuing at constant acceleration (the FCI's model of a lost command): the
        next setpoints are judged against that continuation, as the robot judges them."""
        for _ in range(cycles if self._history else 0):
            self._remember(self.continuation(1))

    def continuation(self, cycles: int, *, without_newest: bool = False) -> Array:
        """Where ``cycles`` cycles at constant acceleration lead from the newest setpoint (or,
        ``without_newest``, from the one before it), as the robot would fill them."""
        h = self._history[:-1] if without_newest and len(self._history) > 3 else list(self._history)
        for _ in range(cycles):
            h.append(3 * h[-1] - 3 * h[-2] + h[-3])
        return h[-1].copy()

    def drop_newest(self) -> None:
        """Forget the newest setpoint: it never reached the robot (it came after its cycle)."""
        if len(self._history) > 3:
            self._history = self._history[:-1]
            self._recent = [q.tolist() for q in self._history[-3:]]

    def at_rest(self) -> bool:
        """Whether the setpoints sent have come to rest (the one test every backend uses)."""
        v, a = self.derivatives()
        return bool(np.abs(v).max() < REST_VELOCITY and np.abs(a).max() < REST_ACCELERATION)

    def brake(self) -> tuple[Array, bool]:
        """The next setpoint of a jerk-limited stop from what was sent (``STOP_SHARE`` of the
        acceleration and jerk limits, inside the position limits), and whether the setpoints
        are already at rest (then it is the last setpoint again). The one way every backend
        brakes to rest; the caller checks, sends and commits the setpoint as any other."""
        last = self.last
        if last is None:
            raise InvalidArgument("no setpoint has been sent yet")
        if self.at_rest():
            return last, True
        v, a = self.derivatives()
        limits = self.limits
        q, _, _ = braking_step(last, v, a, limits.acceleration * STOP_SHARE, limits.jerk * STOP_SHARE, self.period)
        return limits.clip(q), False

    def recent(self) -> Array:
        """The last three setpoints sent (3, dof), oldest first."""
        if not self._history:
            raise InvalidArgument("no setpoint has been sent yet")
        h = [self._history[0]] * (3 - len(self._history)) + self._history[-3:]
        return np.array(h)

    def derivatives(self) -> tuple[Array, Array]:
        """Velocity and acceleration of the sent setpoints (finite differences)."""
        if not self._history:
            raise InvalidArgument("no setpoint has been sent yet")
        h = [self._history[0]] * (3 - len(self._history)) + self._history[-3:]
        dt = self.period
        return (h[-1] - h[-2]) / dt, (h[-1] - 2 * h[-2] + h[-3]) / dt**2

    def check(self, setpoint: ArrayLike, *, fenced: bool = True) -> Array:
        """Validate ``setpoint`` against the limits, then (``fenced``) the :attr:`fences`;
        return it as a float array or raise."""
        q = self.check_limits(setpoint)
        if fenced and self.fences:
            for fence in self.fences:
                fence(q, self)
        return q

    def check_limits(self, setpoint: ArrayLike) -> Array:
        """Validate ``setpoint`` against the limits; return it as a float array or raise.

        Hot path: one pass over the joints (a kernel, ``_kernels.within_bounds``) against
        bounds a hair tighter than the real ones answers a clear yes in about a
        microsecond (this runs on every control cycle, on the robot's critical path).
        Anything else goes to :meth:`check_thoroughly`, which decides and words the refusal.
        """
        recent = self._recent
        if (len(recent) == 3 and type(setpoint) is np.ndarray and setpoint.shape == (self.limits.dof,)
                and setpoint.dtype == np.float64
                and _kernels.within_bounds(setpoint.tolist(), *recent, self._packed, *self._scales)):
            return setpoint.copy()
        return self.check_thoroughly(setpoint)

    def check_static(self, setpoint: ArrayLike) -> Array:
        """The checks that need no history: numbers, joint count, position limits."""
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
        return q

    def check_thoroughly(self, setpoint: ArrayLike) -> Array:
        """The reference check, numpy throughout, with the reason for a refusal."""
        q = self.check_static(setpoint)
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
            if quantity == "velocity":  # at the new setpoint's position (the end curve narrows it there)
                low, high = self.limits.velocity_bounds(q)
            else:
                high = getattr(self.limits, quantity)
                low = -high
            over = np.maximum(value - (high * (1 + RELATIVE_SLACK) + 1e-9), (low * (1 + RELATIVE_SLACK) - 1e-9) - value)
            if (over > 0).any():
                joint = int(np.argmax(over))
                limit = float(high[joint] if value[joint] > 0 else low[joint])
                narrowed = quantity == "velocity" and abs(limit) < self.limits.velocity[joint]
                where = " at this position (end of travel)" if narrowed else ""
                raise LimitViolation(
                    f"setpoint refused: joint {joint + 1} would move at {value[joint]:.4g} {units[quantity]}"
                    f" ({quantity}), limit {limit:.4g} {units[quantity]}{where}",
                    joint=joint, quantity=quantity, value=float(value[joint]), limit=limit,
                )
        return q

    def commit(self, q: Array) -> None:
        """Record ``q`` as sent."""
        if not self._history:
            self.reset(q)
            return
        self._remember(np.array(q, dtype=np.float64))

    def _remember(self, q: Array) -> None:
        """The robot's newest setpoint, one cycle on."""
        self._history = [*self._history, q][-4:]
        self._recent = [*self._recent[1:], q.tolist()]
