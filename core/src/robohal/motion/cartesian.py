"""Pose paths tracked inside the control loop.

:class:`CartesianPath` is a :class:`~robohal.motion.Motion`: a pose path
(poses sampled in time, or a straight line from the current pose to an end
pose on a jerk-limited time profile) tracked by differential IK *inside* the
backend's control loop. It is plain picklable data, so a backend that runs
motions in its own control process (Franka, at 1 kHz) runs the IK there too.
:class:`~robohal.cartesian.CartesianBackend` runs these paths on any backend.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument
from ..kinematics import Kinematics
from ..kinematics.diffik import DifferentialIk, IkOptions
from ..state import Array, RobotState
from .trajectory import DoubleS

# The rest-to-rest shape of a straight-line path: a DoubleS of s in [0, 1] with
# these bounds lasts UNIT_DURATION s; it is stretched to the duration asked for.
_SHAPE = DoubleS(2.0, 8.0, 64.0)
UNIT_DURATION = _SHAPE.duration
SETTLE_TIME = 0.5  # s the path may hold its end pose for the joints to come to rest on it
ERROR_EVERY = 10  # cycles between exact pose-error checks (a forward kinematics each)
REST_STEP = 1e-8  # rad per cycle: joints moving less than this rest on the end pose
END_RESIDUAL = 1e-4  # weighted pose error (m) under which the end pose counts as reached
DEFAULT_OPTIONS = IkOptions()


def profile_for(duration: float) -> DoubleS:
    """A rest-to-rest jerk-limited profile of s from 0 to 1 lasting ``duration`` s."""
    if not (math.isfinite(duration) and duration > 0):
        raise InvalidArgument(f"duration must be a positive number of seconds, got {duration!r}")
    c = UNIT_DURATION / duration
    return DoubleS(_SHAPE.velocity * c, _SHAPE.acceleration * c**2, _SHAPE.jerk * c**3)


class CartesianPath:
    """A flange pose path, tracked by one differential-IK cycle per control cycle.

    Either ``poses`` (N, 4, 4) reached at ``times`` (N,) seconds after the start
    (the path moves linearly, with the shortest rotation, between samples, from the
    start pose), or ``end`` (4, 4) reached on a straight line from ``start`` (default:
    the pose of the commanded joints when the motion starts) in ``duration`` s (default:
    from ``speed`` m/s and ``angular_speed`` rad/s) on a jerk-limited profile.
    The motion ends once the joints rest on the end pose, or ``settle`` s after the
    path's end. :meth:`summary` reports how closely it tracked.
    """

    def __init__(self, poses: ArrayLike | None = None, times: ArrayLike | None = None, *,
                 end: ArrayLike | None = None, start: ArrayLike | None = None, duration: float | None = None,
                 speed: float = 0.1, angular_speed: float = 0.5, options: IkOptions = DEFAULT_OPTIONS,
                 posture: ArrayLike | None = None, settle: float = SETTLE_TIME) -> None:
        options.validate()
        if (poses is None) == (end is None):
            raise InvalidArgument("give either poses and times, or an end pose (with a duration or speeds)")
        if poses is not None:
            poses = spatial.as_pose(poses, "path poses")
            if poses.ndim == 2:
                poses = poses[None]
            times = spatial.as_finite(times if times is not None else [], "times")
            if times.shape != (poses.shape[0],) or (np.diff(np.concatenate([[0.0], times])) <= 0).any():
                raise InvalidArgument("times must hold one rising time (s, after the start) per pose")
        else:
            end = spatial.as_pose(end, "end pose")
            if start is not None:
                start = spatial.as_pose(start, "start pose")
            if duration is not None and not (math.isfinite(duration) and duration > 0):
                raise InvalidArgument(f"duration must be positive, got {duration!r}")
            if not (speed > 0 and angular_speed > 0):
                raise InvalidArgument("speed and angular_speed must be positive")
        if not (math.isfinite(settle) and settle >= 0):
            raise InvalidArgument("settle must be a non-negative number of seconds")
        self.poses = poses
        self.times = times
        self.end = end
        self.start_pose = start
        self.duration = duration
        self.speed = float(speed)
        self.angular_speed = float(angular_speed)
        self.options = options
        self.posture = None if posture is None else spatial.as_finite(posture, "posture")
        self.settle = float(settle)
        self._ik: DifferentialIk | None = None

    # The Motion protocol ---------------------------------------------------------------

    def start(self, state: RobotState, commanded: Array, model: Kinematics, period: float) -> None:
        self.start_from(commanded, None, None, model, period)

    def start_from(self, commanded: Array, v: Array | None, a: Array | None, model: Kinematics,
                   period: float, *, history: Array | None = None) -> None:
        """Start tracking from setpoints at ``commanded`` moving at ``v`` with acceleration ``a``
        (None: at rest), or from the last three setpoints sent (``history``, oldest first): the
        differential IK's history goes on from them."""
        self._model = model
        self._period = period
        self._ik = DifferentialIk(model, self.options, period, self.posture)
        self._ik.reset(commanded)
        if history is not None:
            self._ik.history = history
        elif v is not None and a is not None:
            previous = commanded - v * period
            self._ik.history = np.array([2 * previous - commanded + a * period**2, previous, commanded])
        origin = model.forward(commanded) if self.start_pose is None else self.start_pose
        if self.end is not None:
            length, angle = (float(x) for x in spatial.distance(self.end, origin))
            duration = self.duration
            if duration is None:  # peak speeds as asked: the shape peaks at velocity * UNIT_DURATION / duration
                duration = max(length / self.speed, angle / self.angular_speed) * _SHAPE.velocity * UNIT_DURATION
                duration = max(duration, 0.1)
            self._profile: DoubleS | None = profile_for(duration)
            self._knot_times = np.array([0.0, duration])
            self._knot_poses = np.stack([origin, self.end])
        else:
            assert self.poses is not None and self.times is not None
            self._profile = None
            self._knot_times = np.concatenate([[0.0], self.times])
            self._knot_poses = np.concatenate([origin[None], self.poses])
        self._total = float(self._knot_times[-1])
        self._cycles = max(math.ceil(self._total / period - 1e-9), 1)
        # Every cycle's target at once (vectorized), so a cycle costs one IK step.
        self._targets = self.targets(np.arange(1, self._cycles + 1) * period)
        self._k = 0
        self._settle_left = round(self.settle / period)
        self._max_position_error = 0.0
        self._max_rotation_error = 0.0
        self._max_residual = 0.0
        self._settled = False

    def targets(self, t: ArrayLike) -> Array:
        """The path's poses (N, 4, 4) at times ``t`` (N,) s after the start."""
        t = np.clip(np.asarray(t, dtype=np.float64), 0.0, self._total)
        if self._profile is not None:
            s = self._profile.sample(t)[0]
            return spatial.interpolate(self._knot_poses[0], self._knot_poses[1], s)
        times = self._knot_times
        segment = np.clip(np.searchsorted(times, t, side="right"), 1, len(times) - 1)
        t0, t1 = times[segment - 1], times[segment]
        return spatial.interpolate(self._knot_poses[segment - 1], self._knot_poses[segment], (t - t0) / (t1 - t0))

    def step(self, state: RobotState) -> Array | None:
        ik = self._ik
        assert ik is not None, "start() first"
        if self._k < self._cycles:
            target = self._targets[self._k]
            self._k += 1
            on_path = True
        else:
            h = ik.history
            resting = np.abs(h[2] - h[1]).max() < REST_STEP and np.abs(h[1] - h[0]).max() < REST_STEP
            if self._settle_left <= 0 or (resting and ik.last_residual < END_RESIDUAL):
                self._settled = resting
                return None
            self._settle_left -= 1
            target = self._knot_poses[-1]
            on_path = False
        # Once on the end pose, the joints come to rest: no more self-motion toward the posture.
        q = ik.step(target, posture_pull=on_path)
        self._max_residual = max(self._max_residual, ik.last_residual) if on_path else self._max_residual
        if on_path and (self._k % ERROR_EVERY == 0 or self._k == self._cycles):
            position, rotation = spatial.distance(target, self._model.forward(q))
            self._max_position_error = max(self._max_position_error, float(position))
            self._max_rotation_error = max(self._max_rotation_error, float(rotation))
        return q

    def summary(self) -> dict[str, Any]:
        """How closely the commanded joints tracked the path (m, rad), checked every
        :data:`ERROR_EVERY` cycles and at its end."""
        final_position = final_rotation = math.nan
        if self._ik is not None and self._k:
            final_position, final_rotation = (
                float(x) for x in spatial.distance(self._knot_poses[-1], self._model.forward(self._ik.history[2])))
        return {
            "path_cycles": getattr(self, "_cycles", 0),
            "max_position_error": getattr(self, "_max_position_error", math.nan),
            "max_rotation_error": getattr(self, "_max_rotation_error", math.nan),
            "max_residual": getattr(self, "_max_residual", math.nan),
            "final_position_error": final_position,
            "final_rotation_error": final_rotation,
            "settled": getattr(self, "_settled", False),
        }
