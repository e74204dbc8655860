"""Per-joint limits: position, velocity, acceleration and jerk (SI units, radians), and what
a torque-controlled arm's drives take (:class:`TorqueLimits`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidArgument, LimitViolation

Array = NDArray[np.float64]

# Margin for float round-off when checking a value against a limit.
TOLERANCE = 1e-9


def _real(value: ArrayLike, name: str) -> Array:
    """A scalar or one value per joint, as real numbers."""
    array = np.asarray(value) if not isinstance(value, str) else np.array([], dtype=object)
    if array.dtype.kind not in "iuf" or array.ndim > 1 or array.size == 0:
        raise InvalidArgument(f"joint limits: {name} must be a number or one number per joint, got {value!r:.80}")
    return array.astype(np.float64)


def _vector(value: ArrayLike, dof: int, name: str) -> Array:
    array = _real(value, name)
    if array.ndim == 1 and array.shape[0] != dof:
        raise InvalidArgument(f"joint limits: {name} has {array.shape[0]} values, the other limits {dof}")
    array = np.array(np.broadcast_to(array, (dof,)))
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class JointLimits:
    """Limits of each joint.

    ``lower``/``upper`` in rad (or m for a prismatic joint); ``velocity``,
    ``acceleration`` and ``jerk`` are symmetric magnitudes per joint. Scalars
    broadcast to every joint.

    Some arms also cap the speed toward the end of travel (Franka's FR3): with
    ``end_deceleration`` d and ``end_offset`` c per joint, a joint at q may move
    toward its upper limit at no more than ``sqrt(2 d (upper - q)) - c`` (and
    symmetrically toward the lower one): :meth:`velocity_bounds`.
    """

    lower: Array
    upper: Array
    velocity: Array
    acceleration: Array
    jerk: Array
    end_deceleration: Array | None = None
    end_offset: Array | None = None

    def __post_init__(self) -> None:
        # The joint count comes from whichever field is a vector (scalars broadcast).
        dof = max(np.atleast_1d(_real(getattr(self, n), n)).shape[-1]
                  for n in ("lower", "upper", "velocity", "acceleration", "jerk"))
        for name in ("lower", "upper", "velocity", "acceleration", "jerk"):
            value = _vector(getattr(self, name), dof, name)
            if np.isnan(value).any():
                raise InvalidArgument(f"joint limits: {name} contains NaN")
            # infinite positions are open ranges; an infinite rate would let a planner jump
            if name in ("velocity", "acceleration", "jerk") and not (np.isfinite(value) & (value > 0)).all():
                raise InvalidArgument(f"joint limits: {name} must be finite and positive")
            object.__setattr__(self, name, value)
        if (self.end_deceleration is None) != (self.end_offset is None):
            raise InvalidArgument("joint limits: give end_deceleration and end_offset together")
        if self.end_deceleration is not None:
            deceleration = _vector(self.end_deceleration, dof, "end_deceleration")
            offset = _vector(self.end_offset, dof, "end_offset")
            if not ((deceleration > 0).all() and (offset >= 0).all() and np.isfinite(offset).all()):
                raise InvalidArgument("joint limits: end_deceleration must be positive, end_offset finite and >= 0")
            object.__setattr__(self, "end_deceleration", deceleration)
            object.__setattr__(self, "end_offset", offset)
        if not (self.lower <= self.upper).all():
            bad = int(np.argmax(self.lower > self.upper))
            raise InvalidArgument(f"joint limits: joint {bad + 1} has lower > upper")
        # plain-float bounds for the per-cycle checks of one configuration
        object.__setattr__(self, "_bounds", list(zip((self.lower - TOLERANCE).tolist(),
                                                     (self.upper + TOLERANCE).tolist(), strict=True)))

    def contains_values(self, values: list[float]) -> bool:
        """Whether one configuration, as a list of floats, is finite and inside the
        position limits: the fast yes of the per-cycle checks (no reasons given)."""
        if len(values) != len(self._bounds):  # type: ignore[attr-defined]
            return False
        for x, (low, high) in zip(values, self._bounds, strict=True):  # type: ignore[attr-defined]
            if not low <= x <= high:  # also false for NaN
                return False
        return True

    @classmethod
    def from_degrees(
        cls,
        lower: ArrayLike,
        upper: ArrayLike,
        velocity: ArrayLike,
        acceleration: ArrayLike | None = None,
        jerk: ArrayLike | None = None,
    ) -> JointLimits:
        """Limits given in degrees (and deg/s, ...), as datasheets print them.

        Without published acceleration or jerk limits, conservative defaults are
        derived from the velocity: reach full speed in 0.2 s, full acceleration
        in 0.05 s.
        """
        velocity_rad = np.radians(_real(velocity, "velocity"))
        acc = np.radians(_real(acceleration, "acceleration")) if acceleration is not None else velocity_rad / 0.2
        jrk = np.radians(_real(jerk, "jerk")) if jerk is not None else acc / 0.05
        return cls(np.radians(_real(lower, "lower")), np.radians(_real(upper, "upper")), velocity_rad, acc, jrk)

    def velocity_bounds(self, q: ArrayLike) -> tuple[Array, Array]:
        """The lowest and highest velocity (rad/s) of each joint at ``q`` (..., dof):
        the velocity limit, narrowed toward the end of travel where the arm has an
        end curve (never past zero: a joint may always stop)."""
        q = np.asarray(q, dtype=np.float64)
        low, high = np.broadcast_to(-self.velocity, q.shape), np.broadcast_to(self.velocity, q.shape)
        if self.end_deceleration is None:
            return low.copy(), high.copy()
        twice_d, offset = 2.0 * self.end_deceleration, self.end_offset
        up = np.sqrt(np.maximum(twice_d * (self.upper - q), 0.0)) - offset
        down = np.sqrt(np.maximum(twice_d * (q - self.lower), 0.0)) - offset
        return np.maximum(low, -np.maximum(down, 0.0)), np.minimum(high, np.maximum(up, 0.0))

    @property
    def dof(self) -> int:
        return int(self.lower.shape[0])

    @property
    def centre(self) -> Array:
        return 0.5 * (self.lower + self.upper)

    def within(self, q: ArrayLike, tolerance: float = TOLERANCE) -> NDArray[np.bool_]:
        """Whether each configuration in ``q`` (..., dof) lies inside the position limits."""
        q = np.asarray(q, dtype=np.float64)
        return ((q >= self.lower - tolerance) & (q <= self.upper + tolerance)).all(axis=-1)

    def margin(self, q: ArrayLike) -> Array:
        """Smallest distance (rad) of any joint to its position limit; negative outside."""
        q = np.asarray(q, dtype=np.float64)
        return np.minimum(q - self.lower, self.upper - q).min(axis=-1)

    def clip(self, q: ArrayLike) -> Array:
        return np.clip(np.asarray(q, dtype=np.float64), self.lower, self.upper)

    def check_position(self, q: ArrayLike, what: str = "command") -> None:
        """Raise :class:`LimitViolation` naming the first joint outside its range."""
        if type(q) is np.ndarray and q.ndim == 1 and q.dtype == np.float64 and self.contains_values(q.tolist()):
            return
        given = q
        try:
            q = np.asarray(given)
            if q.dtype.kind not in "iuf":
                raise TypeError
            q = q.astype(np.float64, copy=False)
        except (TypeError, ValueError):
            raise InvalidArgument(f"{what} must be an array of real numbers, got {given!r:.80}") from None
        if q.shape[-1:] != (self.dof,):
            raise InvalidArgument(f"{what} has {q.shape[-1] if q.ndim else 0} joints, the model has {self.dof}")
        if not np.isfinite(q).all():
            raise InvalidArgument(f"{what} contains NaN or inf")
        low = q < self.lower - TOLERANCE
        high = q > self.upper + TOLERANCE
        if low.any() or high.any():
            flat_q = q.reshape(-1, self.dof)
            row, joint = np.argwhere((low | high).reshape(-1, self.dof))[0]
            value = float(flat_q[row, joint])
            bound = float(self.lower[joint] if value < self.lower[joint] else self.upper[joint])
            # a value that fits once read as degrees was most likely given in degrees
            as_degrees = self.lower[joint] <= np.radians(value) <= self.upper[joint]
            raise LimitViolation(
                f"{what}: joint {joint + 1} at {value:.6g} rad ({np.degrees(value):.6g} deg) is outside"
                f" [{self.lower[joint]:.6g}, {self.upper[joint]:.6g}] rad"
                + (" (joints are in radians: np.radians() if these were degrees)" if as_degrees else ""),
                joint=int(joint), quantity="position", value=value, limit=bound,
            )

    def scaled(self, speed: float) -> JointLimits:
        """Velocity, acceleration and jerk scaled for a speed fraction in (0, 1].

        Acceleration scales with speed^2 and jerk with speed^3, so a profile
        stretched in time by 1/speed stays inside the scaled limits.
        """
        if isinstance(speed, bool) or not isinstance(speed, (int, float, np.integer, np.floating)) or not 0.0 < speed <= 1.0:
            raise InvalidArgument(f"speed must be a fraction in (0, 1], got {speed!r}")
        return JointLimits(self.lower, self.upper, self.velocity * speed,
                           self.acceleration * speed**2, self.jerk * speed**3, self.end_deceleration, self.end_offset)

    def with_dynamics(self, factor: float) -> JointLimits:
        """Velocity, acceleration and jerk all scaled by ``factor`` in (0, 1] (a dynamics factor,
        as franky's: unlike :meth:`scaled`, not a stretch in time)."""
        if isinstance(factor, bool) or not isinstance(factor, (int, float, np.integer, np.floating)) \
                or not 0.0 < factor <= 1.0:
            raise InvalidArgument(f"the dynamics factor is a fraction in (0, 1], got {factor!r}")
        return JointLimits(self.lower, self.upper, self.velocity * factor, self.acceleration * factor,
                           self.jerk * factor, self.end_deceleration, self.end_offset)

    def __repr__(self) -> str:
        return (
            f"JointLimits(lower={np.round(self.lower, 4).tolist()}, upper={np.round(self.upper, 4).tolist()},"
            f" velocity={np.round(self.velocity, 4).tolist()}, acceleration={np.round(self.acceleration, 3).tolist()},"
            f" jerk={np.round(self.jerk, 1).tolist()})"
        )


@dataclass(frozen=True, eq=False)
class TorqueLimits:
    """What a torque-controlled arm's drives take: ``torque``, the largest joint torque (Nm, a
    magnitude per joint or one for all), and ``rate``, the fastest it may change (Nm/s, the same
    for every joint or one per joint). A backend that takes joint torques declares them
    (:attr:`robohal.control.backend.Backend.torque_limits`)."""

    torque: Array
    rate: Array

    def __post_init__(self) -> None:
        torque = _real(self.torque, "torque")
        dof = torque.shape[-1] if torque.ndim else _real(self.rate, "rate").reshape(-1).shape[0]
        for name in ("torque", "rate"):
            value = _vector(getattr(self, name), dof, name)
            if not (np.isfinite(value) & (value > 0)).all():
                raise InvalidArgument(f"torque limits: {name} must be finite and positive")
            object.__setattr__(self, name, value)

    @property
    def dof(self) -> int:
        return int(self.torque.shape[0])

    def __repr__(self) -> str:
        return f"TorqueLimits(torque={self.torque.tolist()} Nm, rate={self.rate.tolist()} Nm/s)"
