"""Waypoints passed without stopping: one online trajectory through a list of joint positions.

:class:`Waypoints` gives the online generator each point in turn with a velocity to pass it
at (ruckig's community edition plans to a target position *and* velocity; its intermediate
waypoints need a remote service, which a cell must never depend on). The last point is
reached at rest.

The pass-through velocity at a point (:func:`pass_velocities`): joints that turn back there
stop there; the others move along the bisector of the directions in and out, in units of each
joint's speed limit, as fast as lets each of them stop within the shorter of its two segments.
Collinear points are so passed at full speed.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument
from ..kinematics import JointLimits, Kinematics
from ..state import Array, RobotState
from .online import OnlineGenerator

#: share of the speed from which a joint could just stop within a segment that a pass-through
#: velocity may use (our choice: the rest is room for the jerk-limited ramps)
PASS_SHARE = 0.8


def pass_velocities(points: Array, limits: JointLimits, start: Array) -> Array:
    """The velocity (rad/s) to pass each of ``points`` ((k, dof), after ``start``) at; the last is 0."""
    path = np.vstack([start, points])
    velocities = np.zeros_like(points)
    v_max, a_max = limits.velocity, limits.acceleration
    for k in range(1, len(path) - 1):
        d_in, d_out = path[k] - path[k - 1], path[k + 1] - path[k]
        w_in, w_out = d_in / v_max, d_out / v_max  # in units of each joint's speed limit
        n_in, n_out = np.linalg.norm(w_in), np.linalg.norm(w_out)
        if n_in == 0.0 or n_out == 0.0:
            continue
        direction = w_in / n_in + w_out / n_out
        direction[d_in * d_out <= 0.0] = 0.0  # a joint that turns back (or rests) stops at the point
        norm = np.abs(direction).max()
        if norm == 0.0:
            continue
        direction /= norm
        room = np.minimum(np.abs(d_in), np.abs(d_out))
        bound = np.minimum(v_max, PASS_SHARE * np.sqrt(2.0 * a_max * room))
        moving = direction != 0.0
        scale = float(np.min(bound[moving] / (np.abs(direction[moving]) * v_max[moving])))
        velocity = min(scale, 1.0) * direction * v_max
        # and no faster than the arm's end-of-travel curve allows at the point (the FR3's)
        low, high = limits.velocity_bounds(path[k])
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(velocity > 0, velocity / high, np.where(velocity < 0, velocity / low, 0.0))
        worst = float(np.max(share))
        if worst > PASS_SHARE:
            velocity = velocity * (PASS_SHARE / worst) if np.isfinite(worst) else np.zeros_like(velocity)
        velocities[k - 1] = velocity
    return velocities


class Waypoints:
    """Through joint positions ``points`` ((k, dof), rad) without stopping, time-optimally and
    jerk-limited; at rest on the last. ``speed`` stretches it in time as
    :class:`~robohal.motion.motions.PointToPoint`'s does, ``dynamics`` scales the limits alike."""

    def __init__(self, points: ArrayLike, speed: float = 1.0, *, dynamics: float = 1.0) -> None:
        self.points = spatial.as_finite(points, "waypoints")
        if self.points.ndim != 2 or len(self.points) == 0:
            raise InvalidArgument("waypoints must be a (k, dof) array with k >= 1")
        for value, name in ((speed, "speed"), (dynamics, "dynamics")):
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                    or not 0 < value <= 1:
                raise InvalidArgument(f"{name} is a fraction of the joint limits in (0, 1], got {value!r}")
        self.speed, self.dynamics = float(speed), float(dynamics)
        self._generator: OnlineGenerator | None = None
        self._next = 0
        self.passed: list[float] = []  # the robot's clock as each point was reached

    def start(self, state: RobotState | None, commanded: Array, model: Kinematics, period: float) -> None:
        self.start_moving(state, commanded, None, None, model, period)

    def start_moving(self, state: RobotState | None, q: Array, v: Array | None, a: Array | None,
                     model: Kinematics, period: float, *, history: Array | None = None) -> None:
        if self.points.shape[1] != model.dof:
            raise InvalidArgument(f"waypoints must have {model.dof} joints, got shape {self.points.shape}")
        model.check_joints(self.points, "waypoint")
        limits = model.limits.scaled(self.speed)
        self._velocities = pass_velocities(self.points, limits.with_dynamics(self.dynamics), np.asarray(q))
        self._generator = OnlineGenerator(limits, period, factor=self.dynamics)
        self._generator.reset(q, v, a)
        self._next = 0
        self._aim()

    def _aim(self) -> None:
        assert self._generator is not None
        self._generator.target(self.points[self._next], self._velocities[self._next])

    def step(self, state: RobotState | None) -> Array | None:
        generator = self._generator
        assert generator is not None, "start() first"
        while generator.finished:
            self.passed.append(state.time if state is not None else float("nan"))
            self._next += 1
            if self._next >= len(self.points):
                return None
            self._aim()
        return generator.step()

    def setpoint_state(self) -> tuple[Array, Array, Array]:
        generator = self._generator
        assert generator is not None, "start() first"
        return generator.position, generator.velocity, generator.acceleration
