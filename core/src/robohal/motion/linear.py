"""Cartesian straight lines: planned up front through the model's IK from rest, or bent in
from a moving flange when they take over from another motion (:class:`LinearMove`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import spatial
from ..errors import InvalidArgument, UnreachableError
from ..kinematics import Kinematics
from ..state import Array, RobotState
from .cartesian import CartesianPath
from .motions import end_of_travel_ratio
from .trajectory import DoubleS, sample_times


def plan_linear(
    model: Kinematics,
    start_q: Array,
    target: Array,
    period: float,
    speed: float = 0.25,
    angular_speed: float = 1.0,
    joint_speed: float = 1.0,
    dynamics: float = 1.0,
) -> Array:
    """Setpoints along the straight line from FK(start_q) to ``target``.

    Position moves linearly, orientation along the shortest rotation, timed by a
    jerk-limited profile at ``speed`` (m/s) and ``angular_speed`` (rad/s). Each
    sample is solved by the model's IK next to the previous one; the timing
    stretches until every joint stays inside its velocity, acceleration and jerk
    limits (``joint_speed`` stretches them in time; ``dynamics`` scales velocity,
    acceleration and jerk alike, the robot-wide factor). Raises :class:`UnreachableError`
    (nothing moves) when the line leaves the workspace or crosses a joint limit.
    """
    target = spatial.as_pose(target, "target pose")
    for value, name in ((speed, "speed (m/s)"), (angular_speed, "angular_speed (rad/s)"), (joint_speed, "joint_speed")):
        if not spatial.as_number(value, name) > 0:
            raise InvalidArgument(f"{name} must be positive, got {value!r}")
    if not 0.0 < spatial.as_number(dynamics, "dynamics") <= 1.0:
        raise InvalidArgument(f"dynamics is a fraction in (0, 1], got {dynamics!r}")
    speed, angular_speed = speed * dynamics, angular_speed * dynamics
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
            (np.abs(velocity) / (limits.velocity * joint_speed * dynamics)).max(),
            end_of_travel_ratio(limits, start_q, joints, period),
            np.sqrt((np.abs(acceleration) / (limits.acceleration * joint_speed**2 * dynamics)).max()),
            np.cbrt((np.abs(jerk) / (limits.jerk * joint_speed**3 * dynamics)).max()),
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


#: s: how long a straight line takes to reach its speed, and to reach its acceleration (as
#: plan_linear shapes it: accelerate in 0.25 s, with a jerk ramp of 0.05 s)
LINEAR_RAMP, LINEAR_JERK_RAMP = 0.25, 0.05
#: the least share of the speed limit an axis of the line keeps, so that a take-over can brake
#: a velocity the line itself does not have
AXIS_FLOOR = 0.1


class LinearMove:
    """The flange to ``target`` on a straight line (see :func:`plan_linear`), or, taking over from
    a motion that moves, from where the flange goes without a stop.

    From rest this plays :func:`plan_linear`'s setpoints: a straight line through the model's
    IK, timed so every joint stays inside its limits. Taking over (:meth:`start_moving`), the
    flange's position and rotation (a rotation vector from the start) go on from their present
    velocity along a time-optimal jerk-limited Cartesian trajectory (ruckig, phase synchronised)
    that bends into the line toward the target; one differential-IK cycle per control cycle
    tracks it inside the joint limits (the IkOptions cycle), and the motion ends resting on the
    target."""

    def __init__(self, target: Array, speed: float = 0.25, angular_speed: float = 1.0, joint_speed: float = 1.0,
                 dynamics: float = 1.0) -> None:
        self.target = spatial.as_pose(target, "target pose")
        for value, name in ((speed, "speed (m/s)"), (angular_speed, "angular_speed (rad/s)"), (joint_speed, "joint_speed")):
            if not spatial.as_number(value, name) > 0:
                raise InvalidArgument(f"{name} must be positive, got {value!r}")
        if not 0.0 < spatial.as_number(dynamics, "dynamics") <= 1.0:
            raise InvalidArgument(f"dynamics is a fraction in (0, 1], got {dynamics!r}")
        self.speed, self.angular_speed = float(speed), float(angular_speed)
        self.joint_speed, self.dynamics = float(joint_speed), float(dynamics)
        self._planned: tuple[Array, Array] | None = None  # (from, setpoints), planned ahead
        self._setpoints: Array | None = None
        self._path: Any = None
        self._index = 0

    def plan(self, start: Array, model: Kinematics, period: float) -> Array:
        """The line from rest at ``start`` (kept: :meth:`start` from there uses it); raises
        :class:`UnreachableError` when there is none."""
        setpoints = plan_linear(model, start, self.target, period, self.speed, self.angular_speed, self.joint_speed,
                                dynamics=self.dynamics)
        self._planned = (np.array(start, dtype=np.float64), setpoints)
        return setpoints

    def start(self, state: RobotState | None, commanded: Array, model: Kinematics, period: float) -> None:
        planned = self._planned
        if planned is not None and np.array_equal(planned[0], commanded):
            self._setpoints = planned[1]
        else:
            self._setpoints = self.plan(commanded, model, period)
        self._index = 0

    def start_moving(self, state: RobotState | None, q: Array, v: Array | None, a: Array | None,
                     model: Kinematics, period: float, *, history: Array | None = None) -> None:
        if v is None or a is None or (np.abs(v).max() < REST_SPEED and np.abs(a).max() < REST_SPEED):
            self.start(state, q, model, period)
            return
        start = model.forward(q)
        jacobian = model.jacobian(q)
        twist, accel = jacobian @ v, jacobian @ a  # (the Jacobian's own rate is left out: one cycle's worth)
        goal = np.concatenate([self.target[:3, 3], spatial.matrix_to_rotvec(self.target[:3, :3] @ start[:3, :3].T)])
        here = np.concatenate([start[:3, 3], np.zeros(3)])
        times, coordinates = cartesian_trajectory(here, twist, accel, goal, self._limits(goal - here), period)
        poses = np.repeat(start[None], len(times), axis=0)
        poses[:, :3, 3] = coordinates[:, :3]
        poses[:, :3, :3] = spatial.rotvec_to_matrix(coordinates[:, 3:]) @ start[:3, :3]
        self._path = CartesianPath(poses, times)
        self._path.start_from(q, v, a, model, period, history=history)

    def step(self, state: RobotState | None) -> Array | None:
        if self._path is not None:
            return self._path.step(state)
        assert self._setpoints is not None, "start() first"
        if self._index >= len(self._setpoints):
            return None
        q = self._setpoints[self._index]
        self._index += 1
        return q

    def summary(self) -> dict[str, Any]:
        return self._path.summary() if self._path is not None else {}

    def _limits(self, delta: Array) -> tuple[Array, Array, Array]:
        """Per-axis velocity, acceleration and jerk bounds: the line's speeds shared out by its
        direction (so that from rest it moves at ``speed`` along the line), each kept above
        :data:`AXIS_FLOOR` of them."""
        linear, angular = np.abs(delta[:3]), np.abs(delta[3:])
        shares = np.concatenate([
            np.maximum(linear / max(np.linalg.norm(linear), 1e-12), AXIS_FLOOR) * self.speed,
            np.maximum(angular / max(np.linalg.norm(angular), 1e-12), AXIS_FLOOR) * self.angular_speed,
        ]) * self.dynamics
        acceleration = shares / LINEAR_RAMP
        return shares, acceleration, acceleration / LINEAR_JERK_RAMP


#: rad/s (and rad/s^2): setpoints slower than this take a line from rest
REST_SPEED = 1e-6


def cartesian_trajectory(here: Array, velocity: Array, acceleration: Array, goal: Array,
                         limits: tuple[Array, Array, Array], period: float) -> tuple[Array, Array]:
    """Times (s, one per cycle) and coordinates (N, 6) of ruckig's phase-synchronised
    trajectory from ``here`` moving at ``velocity`` with ``acceleration`` to rest at ``goal``
    (per-axis ``limits``: velocity, acceleration, jerk)."""
    from ruckig import InputParameter, Ruckig, Synchronization, Trajectory

    v_max, a_max, j_max = limits
    inp = InputParameter(6)
    inp.current_position, inp.target_position = here.tolist(), goal.tolist()
    inp.current_velocity = np.clip(velocity, -v_max, v_max).tolist()  # (ruckig brakes any excess itself)
    inp.current_acceleration = np.clip(acceleration, -a_max, a_max).tolist()
    inp.max_velocity, inp.max_acceleration, inp.max_jerk = v_max.tolist(), a_max.tolist(), j_max.tolist()
    inp.synchronization = Synchronization.Phase
    trajectory = Trajectory(6)
    Ruckig(6, period).calculate(inp, trajectory)
    times = np.arange(1, max(math.ceil(trajectory.duration / period), 1) + 1) * period
    coordinates = np.array([trajectory.at_time(min(t, trajectory.duration))[0] for t in times])
    return times, coordinates
