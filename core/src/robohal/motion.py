"""Motions: small objects the backend's control loop steps once per cycle
(:class:`Motion`). They are plain picklable data, so a backend may run them in
another thread or process (Franka's 1 kHz loop does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from . import spatial
from .errors import InvalidArgument, LimitViolation, UnreachableError
from .kinematics import JointLimits, Kinematics
from .state import Array, RobotState
from .trajectory import DoubleS, joint_profile, sample_times

#: s: the longest waypoint time follow() plans (a day; the setpoints are sampled up front)
MAX_FOLLOW_TIME = 86400.0


@runtime_checkable
class Motion(Protocol):
    """A motion, stepped by the backend's control loop."""

    def start(self, state: RobotState, commanded: Array, model: Kinematics, period: float) -> None:
        """Called once, with the measured state and the last commanded setpoint."""

    def step(self, state: RobotState) -> Array | None:
        """The next joint-position setpoint, or None when the motion is over."""


# Recording ---------------------------------------------------------------------------


@dataclass
class MotionResult:
    """What a motion did: per-cycle commanded and measured joints, and figures."""

    completed: bool
    stopped: bool
    times: Array
    commanded: Array
    measured: Array
    period: float
    target: Array | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def cycles(self) -> int:
        return len(self.times)

    @property
    def duration(self) -> float:
        return float(self.times[-1] - self.times[0]) if len(self.times) > 1 else 0.0

    @property
    def tracking_error(self) -> Array:
        """Largest joint deviation (rad) between command and measurement, per cycle."""
        if self.cycles == 0:
            return np.zeros(0)
        return np.abs(self.commanded - self.measured).max(axis=-1)

    def __repr__(self) -> str:
        worst = float(self.tracking_error.max()) if self.cycles else 0.0
        return (
            f"MotionResult(completed={self.completed}, cycles={self.cycles}, duration={self.duration:.3f} s,"
            f" max tracking error={np.degrees(worst):.3f} deg)"
        )


class MotionRecorder:
    def __init__(self, period: float, dof: int) -> None:
        self.period = period
        self.dof = dof
        self._times: list[float] = []
        self._commanded: list[Array] = []
        self._measured: list[Array] = []

    def add(self, state: RobotState, commanded: Array | None) -> None:
        self._times.append(state.time)
        self._measured.append(state.q)
        self._commanded.append(state.q if commanded is None else commanded)

    def result(self, *, completed: bool, stopped: bool = False) -> MotionResult:
        empty = np.zeros((0, self.dof))
        return MotionResult(
            completed=completed,
            stopped=stopped,
            times=np.array(self._times),
            commanded=np.array(self._commanded) if self._commanded else empty,
            measured=np.array(self._measured) if self._measured else empty,
            period=self.period,
        )


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


# Cartesian planning -------------------------------------------------------------------------


def plan_linear(
    model: Kinematics,
    start_q: Array,
    target: Array,
    period: float,
    speed: float = 0.25,
    angular_speed: float = 1.0,
    joint_speed: float = 1.0,
) -> Array:
    """Setpoints along the straight line from FK(start_q) to ``target``.

    Position moves linearly, orientation along the shortest rotation, timed by a
    jerk-limited profile at ``speed`` (m/s) and ``angular_speed`` (rad/s). Each
    sample is solved by the model's IK next to the previous one; the timing
    stretches until every joint stays inside its velocity, acceleration and jerk
    limits. Raises :class:`UnreachableError` (nothing moves) when the line leaves
    the workspace or crosses a joint limit.
    """
    target = spatial.as_pose(target, "target pose")
    for value, name in ((speed, "speed (m/s)"), (angular_speed, "angular_speed (rad/s)"), (joint_speed, "joint_speed")):
        if not spatial.as_number(value, name) > 0:
            raise InvalidArgument(f"{name} must be positive, got {value!r}")
    start_pose = model.forward(start_q)
    if model.position_only:
        target = target.copy()
        target[:3, :3] = start_pose[:3, :3]
        if model.inverse(target).shape[0] == 0:
            raise UnreachableError(f"target unreachable: {model.inverse(target).reason}")
    length, angle = spatial.distance(target, start_pose)
    length, angle = float(length), float(angle)
    if length < 1e-9 and angle < 1e-9:
        return start_q[None].copy()
    # Path parameter bounds from the Cartesian speed; accelerate to it in 0.25 s.
    rate = min(speed / max(length, 1e-12), angular_speed / max(angle, 1e-12))
    limits = model.limits
    for _attempt in range(8):
        profile = DoubleS(rate, rate / 0.25, rate / 0.25 / 0.05)
        s, _, _ = profile.sample(sample_times(profile.duration, period))
        poses = spatial.interpolate(start_pose, target, s)
        joints = np.empty((len(s), model.dof))
        previous = start_q
        for i, pose in enumerate(poses):
            found = model.inverse_continuing(pose, previous)
            if found.shape[0] == 0:
                raise UnreachableError(
                    f"the straight line leaves the reachable workspace at {100 * s[i]:.1f}% of the path"
                    f" ({found.reason or 'no IK solution'})"
                )
            joints[i] = found[0]
            previous = found[0]
        chain = np.vstack([start_q, start_q, start_q, joints])
        velocity = np.diff(chain, axis=0) / period
        acceleration = np.diff(chain, 2, axis=0) / period**2
        jerk = np.diff(chain, 3, axis=0) / period**3
        worst = max(
            (np.abs(velocity) / (limits.velocity * joint_speed)).max(),
            end_of_travel_ratio(limits, start_q, joints, period),
            np.sqrt((np.abs(acceleration) / (limits.acceleration * joint_speed**2)).max()),
            np.cbrt((np.abs(jerk) / (limits.jerk * joint_speed**3)).max()),
        )
        if np.abs(np.diff(joints, axis=0)).max(initial=0.0) > 0.5:
            raise UnreachableError("the straight line passes a singularity or a branch change (joint jump)")
        if worst <= 0.98:
            return joints
        if worst == np.inf:
            raise UnreachableError("the straight line moves a joint toward a position limit it is too close to"
                                   " (the arm allows no speed toward it there)")
        rate /= worst / 0.95
    raise UnreachableError("no timing of the straight line keeps every joint inside its limits")
