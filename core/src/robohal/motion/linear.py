"""Cartesian straight lines planned up front: joint setpoints through the model's IK."""

from __future__ import annotations

import numpy as np

from .. import spatial
from ..errors import InvalidArgument, UnreachableError
from ..kinematics import Kinematics
from ..state import Array
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
