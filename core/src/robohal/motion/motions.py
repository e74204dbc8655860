"""Motions: small objects the backend's control loop steps once per cycle
(:class:`Motion`). They are plain picklable data, so a backend may run them in
another thread or process (Franka's 1 kHz loop does).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument, LimitViolation
from ..kinematics import JointLimits, Kinematics
from ..state import Array, RobotState
from .trajectory import joint_profile, sample_times

#: s: the longest waypoint time follow() plans (a day; the setpoints are sampled up front)
MAX_FOLLOW_TIME = 86400.0


@runtime_checkable
class Motion(Protocol):
    """A motion, stepped by the backend's control loop."""

    def start(self, state: RobotState, commanded: Array, model: Kinematics, period: float) -> None:
        """Called once, with the measured state and the last commanded setpoint."""

    def step(self, state: RobotState) -> Array | None:
        """The next joint-position setpoint, or None when the motion is over."""


# Joint-space motions -------------------------------------------------------------------


class JointTrajectory:
    """Play precomputed setpoints, one per cycle (sampled at the backend's period)."""

    def __init__(self, setpoints: ArrayLike) -> None:
        self.setpoints = spatial.as_finite(setpoints, "setpoints")
        if self.setpoints.ndim != 2:
            raise InvalidArgument("setpoints must be an (N, dof) array")
        self._index = 0

    def start(self, state: RobotState, commanded: Array, model: Kinematics, period: float) -> None:
        self._index = 0

    def step(self, state: RobotState) -> Array | None:
        if self._index >= len(self.setpoints):
            return None
        q = self.setpoints[self._index]
        self._index += 1
        return q


def end_of_travel_ratio(limits: JointLimits, start: Array, setpoints: Array, period: float) -> float:
    """The largest share of the end-of-travel speed curve (JointLimits.velocity_bounds)
    that ``setpoints`` (after ``start``) use: above 1 they break it, inf where a joint
    moves toward an end it may not approach at all; 0 for an arm without the curves."""
    if limits.end_deceleration is None or len(setpoints) == 0:
        return 0.0
    velocity = np.diff(np.vstack([start, setpoints]), axis=0) / period
    low, high = limits.velocity_bounds(setpoints)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(velocity > 0, velocity / high, np.where(velocity < 0, velocity / low, 0.0))
    return float(share.max())


class PointToPoint:
    """A jerk-limited straight line in joint space from the commanded position to
    ``target``, synchronized so all joints arrive together."""

    def __init__(self, target: ArrayLike, speed: float = 1.0) -> None:
        self.target = spatial.as_finite(target, "target joints")
        if isinstance(speed, bool) or not isinstance(speed, (int, float, np.integer, np.floating)) or not 0 < speed <= 1:
            raise InvalidArgument(f"speed is a fraction of the joint limits in (0, 1], got {speed!r}")
        self.speed = float(speed)
        self._setpoints: Array | None = None
        self._index = 0

    def plan(self, start: Array, model: Kinematics, period: float) -> Array:
        if self.target.shape != (model.dof,):
            raise InvalidArgument(f"target must have {model.dof} joints, got shape {self.target.shape}")
        model.check_joints(self.target, "target")
        delta = self.target - start
        speed = self.speed
        for _attempt in range(8):  # slower until the end-of-travel speed curves hold too
            limits = model.limits.scaled(speed)
            # 0.98: headroom so finite differences stay inside the limits after round-off
            profile = joint_profile(delta, limits.velocity * 0.98, limits.acceleration * 0.98, limits.jerk * 0.98)
            if profile.distance == 0:
                return self.target[None].copy()
            s, _, _ = profile.sample(sample_times(profile.duration, period))
            setpoints = start + s[:, None] * delta
            share = end_of_travel_ratio(model.limits, start, setpoints, period)
            if share <= 0.98:
                return setpoints
            if share == np.inf:
                break
            speed *= 0.95 / share
        raise LimitViolation("target joints: a joint would move toward a position limit it is too close to"
                             " (the arm allows no speed toward it there); stop further from the limit",
                             quantity="velocity")

    def start(self, state: RobotState, commanded: Array, model: Kinematics, period: float) -> None:
        self._setpoints = self.plan(commanded, model, period)
        self._index = 0

    def step(self, state: RobotState) -> Array | None:
        assert self._setpoints is not None, "start() first"
        if self._index >= len(self._setpoints):
            return None
        q = self._setpoints[self._index]
        self._index += 1
        return q


class Hold:
    """Hold the commanded position for ``duration`` seconds."""

    def __init__(self, duration: float) -> None:
        self.duration = float(duration)

    def start(self, state: RobotState, commanded: Array, model: Kinematics, period: float) -> None:
        self._q = commanded.copy()
        self._left = round(self.duration / period)

    def step(self, state: RobotState) -> Array | None:
        if self._left <= 0:
            return None
        self._left -= 1
        return self._q
