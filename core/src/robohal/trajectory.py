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

from .errors import InvalidArgument

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


def braking_step(q: Array, v: Array, a: Array, acceleration: Array, jerk: Array, period: float) -> tuple[Array, Array, Array]:
    """One control cycle of a jerk-limited stop from velocity ``v`` and
    acceleration ``a``, every joint on its own; returns the next q, v, a."""
    # The acceleration from which ramping to zero at full jerk ends exactly at v = 0.
    wanted = -np.sign(v) * np.minimum(acceleration, np.sqrt(2 * jerk * np.abs(v)))
    a_next = np.clip(wanted, a - jerk * period, a + jerk * period)
    a_next = np.clip(a_next, -acceleration, acceleration)
    v_next = v + a_next * period
    crossed = np.sign(v_next) != np.sign(v)
    v_next = np.where(crossed | (v == 0), 0.0, v_next)
    a_next = np.where(crossed | (v == 0), 0.0, a_next)
    q_next = q + 0.5 * (v + v_next) * period
    return q_next, v_next, a_next
