"""A cell's safety settings, enforced on every setpoint the HIL suites command there.

A lab runs the suites on a real cell slower than the robot could go (a speed factor) and inside
a box of free space (the workspace box, in the robot's base frame, metres). :meth:`CellSafety.apply`
sets the factor as the robot's ``speed`` (every motion is planned within it) and adds two fences
to the backend's :class:`~robohal.control.guard.SetpointGuard`, so a setpoint that goes faster, or
from which the arm could not stop inside the box, is refused before it reaches the wire, whatever
a test asked for.
:meth:`CellSafety.preflight` refuses a run whose motions could not stay in the box, before any
of them starts.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..control.guard import SetpointGuard
from ..errors import InvalidArgument, LimitViolation
from ..kinematics import Kinematics
from ..kinematics.limits import JointLimits
from ..motion.trajectory import STOP_SHARE
from ..robot import Robot
from ..state import Array

#: rad: the largest joint move the contract suite makes from where the arm starts (its
#: ``small_target(robot, size=10 deg)``); the preflight checks the box holds that much
SUITE_JOINT_REACH = math.radians(10.0)
# Finite differences of a profile planned at the scaled limit land on it up to round-off.
RELATIVE_SLACK = 1e-6


@dataclass(frozen=True)
class Workspace:
    """An axis-aligned box in the robot's base frame: ``lower`` and ``upper`` corners (3,), m."""

    lower: Array
    upper: Array

    def __post_init__(self) -> None:
        for name in ("lower", "upper"):
            value = np.asarray(getattr(self, name), dtype=np.float64)
            if value.shape != (3,) or not np.isfinite(value).all():
                raise InvalidArgument(f"workspace {name} corner must be three finite numbers (x, y, z m),"
                                      f" got {getattr(self, name)!r}")
            object.__setattr__(self, name, value)
        if not (self.lower < self.upper).all():
            raise InvalidArgument(f"workspace box is empty: min {self.lower.tolist()} must be below max"
                                  f" {self.upper.tolist()} on every axis")

    @classmethod
    def parse(cls, text: str) -> Workspace:
        """From ``"xmin,ymin,zmin,xmax,ymax,zmax"`` (m), as ``--hil-workspace`` takes it."""
        try:
            values = [float(part) for part in text.split(",")]
        except ValueError:
            raise InvalidArgument(f"workspace box must be six numbers xmin,ymin,zmin,xmax,ymax,zmax (m),"
                                  f" got {text!r}") from None
        if len(values) != 6:
            raise InvalidArgument(f"workspace box must be six numbers xmin,ymin,zmin,xmax,ymax,zmax (m), got {text!r}")
        return cls(np.array(values[:3]), np.array(values[3:]))

    def contains(self, points: ArrayLike) -> np.ndarray:
        """Whether each point (..., 3) lies inside the box (borders included)."""
        points = np.asarray(points, dtype=np.float64)
        return ((points >= self.lower) & (points <= self.upper)).all(axis=-1)

    def as_text(self) -> str:
        return ",".join(f"{v:g}" for v in (*self.lower, *self.upper))

    def __str__(self) -> str:
        return f"[{', '.join(f'{v:g}' for v in self.lower)}]..[{', '.join(f'{v:g}' for v in self.upper)}] m"


def stopping_distance(v: Array, a: Array, limits: JointLimits) -> Array:
    """A bound (rad, per joint, >= 0) on how far the guard's brake carries each joint that moves
    at ``v`` rad/s and accelerates at ``a`` rad/s^2: the speed still grows while the acceleration
    ramps down at the jerk limit, then the deceleration ramps up to the stop's share of the
    acceleration limit and holds (:func:`~robohal.motion.trajectory.braking_step`)."""
    deceleration = limits.acceleration * STOP_SHARE
    jerk = limits.jerk * STOP_SHARE
    speed = np.abs(v)
    pushing = np.maximum(np.where(v >= 0.0, a, -a), 0.0)  # acceleration along the motion
    peak = speed + pushing**2 / (2.0 * jerk)
    return peak * (pushing + deceleration) / jerk + peak**2 / (2.0 * deceleration)


class WorkspaceFence:
    """Refuses a setpoint whose flange, or the flange where a brake from that setpoint would
    stop (:func:`stopping_distance`), is outside ``workspace`` (a guard :data:`Fence`): a refusal
    brakes the arm, and that brake stays in the box too."""

    def __init__(self, model: Kinematics, workspace: Workspace) -> None:
        self.model = model
        self.workspace = workspace

    def __call__(self, q: Array, guard: SetpointGuard) -> None:
        self._inside(q, "be")
        last = guard.last
        if last is None:
            return
        v_before, _ = guard.derivatives()
        v = (q - last) / guard.period
        distance = stopping_distance(v, (v - v_before) / guard.period, guard.limits)
        if distance.max() > 0.0:
            self._inside(guard.limits.clip(q + np.sign(v) * distance), "stop (braking from there)")

    def _inside(self, q: Array, what: str) -> None:
        point = self.model.forward(q)[:3, 3]
        if self.workspace.contains(point):
            return
        outside = np.maximum(self.workspace.lower - point, point - self.workspace.upper)
        axis = int(np.argmax(outside))
        raise LimitViolation(
            f"setpoint refused: the flange would {what} at ({', '.join(f'{v:.4f}' for v in point)}) m,"
            f" {outside[axis]:.4f} m outside the cell's workspace box {self.workspace} along {'xyz'[axis]}",
            quantity="workspace", value=float(point[axis]),
            limit=float(self.workspace.lower[axis] if point[axis] < self.workspace.lower[axis]
                        else self.workspace.upper[axis]),
        )


class SpeedFence:
    """Refuses a setpoint that would move a joint faster than ``factor`` times its velocity
    limit (a guard :data:`Fence`): the speed factor holds for every setpoint, not only for the
    motions the robot plans with its ``speed``."""

    def __init__(self, limits: JointLimits, factor: float) -> None:
        self.bound = limits.velocity * factor * (1.0 + RELATIVE_SLACK) + 1e-9
        self.factor = factor

    def __call__(self, q: Array, guard: SetpointGuard) -> None:
        last = guard.last
        if last is None:
            return
        velocity = np.abs(q - last) / guard.period
        over = velocity - self.bound
        if (over > 0).any():
            joint = int(np.argmax(over))
            raise LimitViolation(
                f"setpoint refused: joint {joint + 1} would move at {velocity[joint]:.4g} rad/s, over the cell's"
                f" speed factor {self.factor:g} of its limit ({self.bound[joint]:.4g} rad/s)",
                joint=joint, quantity="velocity", value=float(velocity[joint]), limit=float(self.bound[joint]),
            )


@dataclass(frozen=True)
class CellSafety:
    """``speed``: a factor in (0, 1] on every joint's limits; ``workspace``: the box every
    flange position must stay in (None: no box)."""

    speed: float = 1.0
    workspace: Workspace | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.speed, (int, float)) and 0.0 < self.speed <= 1.0):
            raise InvalidArgument(f"speed factor must be a fraction in (0, 1], got {self.speed!r}")

    @property
    def restricts(self) -> bool:
        return self.speed < 1.0 or self.workspace is not None

    def apply(self, robot: Robot) -> Robot:
        """Hold ``robot`` to these settings (its speed, and fences in its backend's guard)."""
        robot.speed = self.speed
        guard = robot.backend.guard
        guard.fences = [f for f in guard.fences if not isinstance(f, (SpeedFence, WorkspaceFence))]
        if self.speed < 1.0:
            guard.fences.append(SpeedFence(robot.model.limits, self.speed))
        if self.workspace is not None:
            guard.fences.append(WorkspaceFence(robot.model, self.workspace))
        return robot

    def preflight(self, model: Kinematics, q: ArrayLike, points: ArrayLike = ()) -> None:
        """Raise :class:`InvalidArgument` unless the box holds the flange at ``q``, where joint
        moves of up to :data:`SUITE_JOINT_REACH` from ``q`` take it (the corners of that joint
        box, sampled), and ``points`` (m, (N, 3)) a scenario will visit."""
        if self.workspace is None:
            return
        q = np.asarray(q, dtype=np.float64)
        start = model.forward(q)[:3, 3]
        if not self.workspace.contains(start):
            raise InvalidArgument(f"the flange starts at ({', '.join(f'{v:.3f}' for v in start)}) m, outside the"
                                  f" workspace box {self.workspace}: move the arm into it or widen the box")
        offsets = np.array(list(itertools.product((-SUITE_JOINT_REACH, SUITE_JOINT_REACH), repeat=model.dof)))
        reached = model.forward(model.limits.clip(q + offsets))[:, :3, 3]
        outside = reached[~self.workspace.contains(reached)]
        if len(outside):
            worst = outside[np.argmax(np.abs(outside - start).sum(axis=1))]
            raise InvalidArgument(
                f"the suites' joint moves (up to {math.degrees(SUITE_JOINT_REACH):g} deg per joint from the start)"
                f" take the flange to ({', '.join(f'{v:.3f}' for v in worst)}) m, outside the workspace box"
                f" {self.workspace}: widen the box")
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        outside = points[~self.workspace.contains(points)]
        if len(outside):
            raise InvalidArgument(f"the scenario's point ({', '.join(f'{v:.3f}' for v in outside[0])}) m lies"
                                  f" outside the workspace box {self.workspace}")
