"""Jerk-limited time profiles.

:class:`DoubleS` is the classic seven-phase ("double S") rest-to-rest profile
for a path parameter ``s`` from 0 to 1 under bounds on its velocity,
acceleration and jerk. Joint moves scale it by each joint's distance, so all
joints start and arrive together on a straight line in joint space, and the
bounds are chosen so that no joint exceeds its own limits.

Sampled at the control period, a profile whose jerk is bounded keeps its
finite-difference velocity, acceleration and jerk within the same bounds: what
a robot like Franka checks on every command.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidArgument

Array = NDArray[np.float64]


@dataclass(frozen=True)
class DoubleS:
    """Rest-to-rest profile of ``s`` from 0 to ``distance`` (default 1)."""

    velocity: float
    acceleration: float
    jerk: float
    distance: float = 1.0

    def __post_init__(self) -> None:
        for name in ("velocity", "acceleration", "jerk", "distance"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise InvalidArgument(f"profile {name} must be finite and non-negative, got {value}")
        if self.distance > 0 and min(self.velocity, self.acceleration, self.jerk) <= 0:
            raise InvalidArgument("profile bounds must be positive for a non-zero distance")
        peak, t_jerk, t_acc = self._plan()
        object.__setattr__(self, "_peak", peak)
        object.__setattr__(self, "_tj", t_jerk)
        object.__setattr__(self, "_ta", t_acc)

    def _ramp(self, peak: float) -> tuple[float, float]:
        """Jerk time and total acceleration time to reach ``peak`` velocity from rest."""
        if peak * self.jerk >= self.acceleration**2:
            t_jerk = self.acceleration / self.jerk
            return t_jerk, t_jerk + peak / self.acceleration
        t_jerk = math.sqrt(peak / self.jerk)
        return t_jerk, 2 * t_jerk

    def _plan(self) -> tuple[float, float, float]:
        if self.distance == 0:
            return 0.0, 0.0, 0.0
        # Largest peak velocity whose acceleration and deceleration fit the distance.
        peak = self.velocity
        if peak * self._ramp(peak)[1] > self.distance:
            low, high = 0.0, peak
            for _ in range(100):
                mid = 0.5 * (low + high)
                if mid * self._ramp(mid)[1] > self.distance:
                    high = mid
                else:
                    low = mid
            peak = low
        t_jerk, t_acc = self._ramp(peak)
        return peak, t_jerk, t_acc

    @property
    def peak_velocity(self) -> float:
        return self._peak  # type: ignore[attr-defined]

    @property
    def duration(self) -> float:
        if self.distance == 0:
            return 0.0
        cruise = (self.distance - self._peak * self._ta) / self._peak  # type: ignore[attr-defined]
        return 2 * self._ta + max(cruise, 0.0)  # type: ignore[attr-defined]

    def _accelerating(self, t: Array) -> tuple[Array, Array, Array]:
        """Position, velocity and acceleration during the acceleration phase, 0 <= t <= ta."""
        tj, ta, jerk = self._tj, self._ta, self.jerk  # type: ignore[attr-defined]
        a_max = jerk * tj
        t1 = np.minimum(t, tj)  # jerk +J
        s = jerk * t1**3 / 6
        v = jerk * t1**2 / 2
        a = jerk * t1
        t2 = np.clip(t - tj, 0.0, max(ta - 2 * tj, 0.0))  # constant acceleration
        s = s + v * t2 + a_max * t2**2 / 2
        v = v + a_max * t2
        t3 = np.clip(t - (ta - tj), 0.0, tj)  # jerk -J
        s = s + v * t3 + a_max * t3**2 / 2 - jerk * t3**3 / 6
        v = v + a_max * t3 - jerk * t3**2 / 2
        a = np.where(t <= tj, a, np.where(t <= ta - tj, a_max, a_max - jerk * t3))
        return s, v, a

    def sample(self, t: ArrayLike) -> tuple[Array, Array, Array]:
        """Position, velocity and acceleration of ``s`` at times ``t`` (clamped to [0, T])."""
        t = np.clip(np.asarray(t, dtype=np.float64), 0.0, self.duration)
        if self.distance == 0:
            zero = np.zeros_like(t)
            return zero, zero, zero
        ta, total, peak = self._ta, self.duration, self._peak  # type: ignore[attr-defined]
        s_up, v_up, a_up = self._accelerating(np.minimum(t, ta))
        s_acc_end = peak * ta / 2
        # cruise
        s = np.where(t <= ta, s_up, s_acc_end + peak * (t - ta))
        v = np.where(t <= ta, v_up, peak)
        a = np.where(t <= ta, a_up, 0.0)
        # deceleration mirrors acceleration
        back = total - t
        s_dn, v_dn, a_dn = self._accelerating(np.clip(back, 0.0, ta))
        decelerating = t >= total - ta
        s = np.where(decelerating, self.distance - s_dn, s)
        v = np.where(decelerating, v_dn, v)
        a = np.where(decelerating, -a_dn, a)
        return s, v, a


def sample_times(duration: float, period: float) -> Array:
    """Control-cycle times period, 2 period, ... covering ``duration`` (the last
    sample is the end of the profile)."""
    count = max(math.ceil(duration / period - 1e-9), 1)
    return np.arange(1, count + 1) * period


def joint_profile(delta: ArrayLike, velocity: ArrayLike, acceleration: ArrayLike, jerk: ArrayLike) -> DoubleS:
    """The fastest synchronized profile (of s in [0, 1]) moving every joint by
    ``delta`` on a straight line in joint space within its own limits."""
    delta = np.abs(np.asarray(delta, dtype=np.float64))
    moving = delta > 0
    if not moving.any():
        return DoubleS(1.0, 1.0, 1.0, distance=0.0)
    d = delta[moving]
    return DoubleS(
        velocity=float(np.min(np.asarray(velocity, float)[moving] / d)) if np.ndim(velocity) else float(velocity / d.max()),
        acceleration=float(np.min(np.asarray(acceleration, float)[moving] / d)) if np.ndim(acceleration) else float(acceleration / d.max()),
        jerk=float(np.min(np.asarray(jerk, float)[moving] / d)) if np.ndim(jerk) else float(jerk / d.max()),
    )


#: Stops brake with this share of the acceleration and jerk limits: the planners' own
#: headroom, so a stop is never softer than the motion it interrupts (a softer one can
#: run past a position limit the motion was about to stop short of).
STOP_SHARE = 0.98


def braking_step(q: Array, v: Array, a: Array, acceleration: Array, jerk: Array, period: float) -> tuple[Array, Array, Array]:
    """One control cycle of a jerk-limited stop, every joint on its own; returns the
    next q, v, a.

    It works in the terms a setpoint guard measures: ``v`` and ``a`` are the finite
    differences of the setpoints sent (velocity, acceleration), and so are the values
    returned. Each step keeps |a| within ``acceleration`` and its change within
    ``jerk * period``, and brakes as hard as still lets the acceleration ramp back to
    zero (in equal steps) by the time the velocity does: the stop ends at rest, with
    no last-cycle snap of the acceleration to zero.
    """
    q = np.asarray(q, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    dt = period
    step = np.asarray(jerk, dtype=np.float64) * dt  # the most the acceleration changes in a cycle
    # In each joint's direction of motion (of its acceleration when it is at rest): speed u >= 0, acceleration b.
    direction = np.where(v != 0.0, np.sign(v), np.sign(a))
    u, b = direction * v, direction * a
    # Braking at -x, then back to 0 in n equal steps of at most `step`, sheds the speed
    # dt * x * (n + 1) / 2. The hardest braking that sheds no more than u: x = 2 W / (n + 1),
    # W = u / dt, with n the fewest steps that ramp allows.
    w = u / dt
    n = np.maximum(np.ceil((np.sqrt(1.0 + 8.0 * w / step) - 1.0) / 2.0), 1.0)
    hardest = np.minimum(2.0 * w / (n + 1.0), n * step)
    lowest = np.maximum(b - step, -np.asarray(acceleration, dtype=np.float64))
    b_next = np.minimum(np.maximum(-hardest, lowest), b + step)
    u_next = u + b_next * dt
    v_next = direction * u_next
    return q + v_next * dt, v_next, direction * b_next
