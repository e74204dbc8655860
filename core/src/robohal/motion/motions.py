"""Motions: small objects the backend's control loop steps once per cycle
(:class:`Motion`). They are plain picklable data, so a backend may run them in
another thread or process (Franka's 1 kHz loop does).

Each motion commands one interface of the robot (:func:`interface_of`): joint positions, as
every motion here, or joint torques (:mod:`.torque`). A backend says which it takes
(``Backend.command_interfaces``) and refuses a motion that needs another at the call.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument
from ..kinematics import JointLimits, Kinematics
from ..state import Array, RobotState
from .online import OnlineGenerator

#: s: the longest waypoint time follow() plans (a day; the setpoints are sampled up front)
MAX_FOLLOW_TIME = 86400.0

#: what a motion commands: joint positions (every robot) or joint torques (Franka's torque interface)
JOINT_POSITION = "joint_position"
JOINT_TORQUE = "joint_torque"


def interface_of(motion: object) -> str:
    """The interface ``motion`` commands: its ``command_interface``, else joint positions."""
    return getattr(motion, "command_interface", JOINT_POSITION)


def interfaces_needed(motion: object) -> frozenset[str]:
    """Every interface ``motion`` may command: its own and those of the motions its reactions
    hand over to (:mod:`.reactions`), so that a robot refuses the whole before anything moves."""
    needed, pending, seen = set(), [motion], set()
    while pending:
        item = pending.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        needed.add(interface_of(item))
        pending += [reaction.then for reaction in getattr(item, "reactions", ())]
    return frozenset(needed)


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
    """A jerk-limited, time-optimal move in joint space to ``target`` (ruckig, through
    :class:`~robohal.motion.online.OnlineGenerator`). From rest it is a straight line in joint
    space on which all joints arrive together; taking over from a motion that moves, it goes on
    from the setpoints' velocity and acceleration without a stop, on a smooth curve.

    ``speed`` in (0, 1] stretches it in time: velocity, acceleration and jerk limits scaled by
    ``speed``, ``speed**2`` and ``speed**3``. ``dynamics`` in (0, 1] scales all three alike (the
    robot-wide factor, :attr:`robohal.Robot.speed`).
    """

    def __init__(self, target: ArrayLike, speed: float = 1.0, *, dynamics: float = 1.0) -> None:
        self.target = spatial.as_finite(target, "target joints")
        for value, name in ((speed, "speed"), (dynamics, "dynamics")):
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                    or not 0 < value <= 1:
                raise InvalidArgument(f"{name} is a fraction of the joint limits in (0, 1], got {value!r}")
        self.speed = float(speed)
        self.dynamics = float(dynamics)
        self._generator: OnlineGenerator | None = None
        self._at_target = False

    def plan(self, start: Array, model: Kinematics, period: float) -> Array:
        """Every setpoint of the move from rest at ``start`` (one per ``period``)."""
        self.start_moving(None, start, None, None, model, period)
        setpoints = []
        while (q := self.step(None)) is not None:
            setpoints.append(q)
        return np.array(setpoints)

    def start(self, state: RobotState | None, commanded: Array, model: Kinematics, period: float) -> None:
        self.start_moving(state, commanded, None, None, model, period)

    def start_moving(self, state: RobotState | None, q: Array, v: Array | None, a: Array | None,
                     model: Kinematics, period: float, *, history: Array | None = None) -> None:
        """Start from setpoints at ``q`` moving at ``v`` with acceleration ``a`` (None: at rest)."""
        if self.target.shape != (model.dof,):
            raise InvalidArgument(f"target must have {model.dof} joints, got shape {self.target.shape}")
        model.check_joints(self.target, "target")
        self._generator = OnlineGenerator(model.limits.scaled(self.speed), period, factor=self.dynamics)
        self._generator.reset(q, v, a)
        self._generator.target(self.target)
        self._at_target = self._generator.finished

    def step(self, state: RobotState | None) -> Array | None:
        generator = self._generator
        assert generator is not None, "start() first"
        if generator.finished:
            if self._at_target:  # already there: one setpoint, the target
                self._at_target = False
                return self.target.copy()
            return None
        return generator.step()

    def setpoint_state(self) -> tuple[Array, Array, Array]:
        """Position, velocity and acceleration of the last setpoint (exact, for a take-over)."""
        generator = self._generator
        assert generator is not None, "start() first"
        return generator.position, generator.velocity, generator.acceleration


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
