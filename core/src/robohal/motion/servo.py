"""Streaming targets: a motion that follows the newest target of a stream.

A :class:`Servo` follows joint positions (through the online generator: time-optimal,
jerk-limited; a position may come with the velocity to pass it at, a feed-forward that keeps a
stream of path samples closer to the path than samples each approached to rest: reached, the
joints go on at that velocity until the next target), joint velocities (the same, by velocity) or flange poses (one differential-IK
cycle per control cycle, inside the cycle's joint box: the IkOptions cycle). New targets arrive
from any thread at any rate through :meth:`Servo.update`; the motion picks up the newest at
its next cycle. When none arrives for ``timeout`` seconds (of the robot's clock) it brakes to
rest (ruckig, to zero velocity) and ends. A target that arrives while it brakes resumes it.

Targets outside the limits are made safe, never refused mid-stream: joint positions are
clamped into the joint ranges, velocities into the velocity limits (a joint clamped onto an end of
its range passes it at no speed), and a pose the arm cannot
reach is approached as closely as the joint box allows. NaN, inf and wrong shapes are refused
when the target is made (:class:`ServoTarget`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument, LimitViolation
from ..kinematics import Kinematics
from ..kinematics.base import pose_rows
from ..kinematics.diffik import DifferentialIk, IkOptions
from ..state import Array, RobotState
from .online import OnlineGenerator

KINDS = ("joints", "velocity", "pose")
#: s: the default time without a new target after which the arm brakes to rest (our choice:
#: five frames of a 30 Hz camera, twenty cycles of a 100 Hz gamepad)
DEFAULT_TIMEOUT = 0.2


@dataclass(frozen=True)
class ServoTarget:
    """One target of a stream: ``kind`` is ``"joints"`` (rad), ``"velocity"`` (rad/s) or
    ``"pose"`` (a (4, 4) flange pose in the base frame, metres). A ``"joints"`` target may carry
    the ``velocity`` (rad/s) and ``acceleration`` (rad/s^2, with a velocity) to pass it at
    (None: come to rest there), and the ``duration`` (s) to take at least to reach it (None: as
    soon as the limits allow)."""

    kind: str
    value: Array
    velocity: Array | None = None
    acceleration: Array | None = None
    duration: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidArgument(f"a servo target is one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind == "pose":
            value = spatial.as_pose(self.value, "servo pose")
        else:
            value = _per_joint(self.value, f"servo {self.kind}")
        object.__setattr__(self, "value", value)
        if self.velocity is not None:
            if self.kind != "joints":
                raise InvalidArgument(f"only a joints target passes at a velocity, not a {self.kind} target")
            object.__setattr__(self, "velocity", _per_joint(self.velocity, "servo joints velocity"))
        if self.acceleration is not None:
            if self.velocity is None:
                raise InvalidArgument("a servo acceleration needs the velocity to go with it")
            object.__setattr__(self, "acceleration", _per_joint(self.acceleration, "servo joints acceleration"))
        if self.duration is not None:
            if self.kind != "joints":
                raise InvalidArgument(f"only a joints target is reached in a duration, not a {self.kind} target")
            duration = spatial.as_number(self.duration, "servo duration")
            if not duration > 0:
                raise InvalidArgument(f"a servo duration is a positive number of seconds, got {self.duration!r}")
            object.__setattr__(self, "duration", float(duration))

    def check(self, dof: int) -> ServoTarget:
        for what, value in ((self.kind, None if self.kind == "pose" else self.value),
                            ("joints velocity", self.velocity), ("joints acceleration", self.acceleration)):
            if value is not None and value.shape != (dof,):
                raise InvalidArgument(f"servo {what} must have {dof} values, got {value.shape[0]}")
        return self


def _per_joint(value: ArrayLike, what: str) -> Array:
    array = spatial.as_finite(value, what)
    if array.ndim != 1:
        raise InvalidArgument(f"{what} must be one value per joint, got shape {array.shape}")
    return array


class Servo:
    """Follow the newest target of a stream (see the module docstring)."""

    def __init__(self, target: ServoTarget, *, timeout: float = DEFAULT_TIMEOUT, dynamics: float = 1.0,
                 options: IkOptions | None = None) -> None:
        if not isinstance(target, ServoTarget):
            raise InvalidArgument(f"expected a ServoTarget, got {type(target).__name__}")
        if not spatial.as_number(timeout, "timeout") > 0:
            raise InvalidArgument(f"the servo timeout must be a positive number of seconds, got {timeout!r}")
        self.timeout = float(timeout)
        self.dynamics = float(dynamics)
        self.options = options or IkOptions()
        self.targets = 0  # targets taken in
        self.clamped = 0  # of them, made safe (outside a joint range or velocity limit)
        self._pending: ServoTarget | None = target
        self._lock = threading.Lock()
        self._ended = False
        self._kind: str | None = None  # of the target being followed
        self._pose: list[list[float]] | None = None  # the pose target's rows (validated once, steered to each cycle)
        self._last_target_time = 0.0
        self._braking = False
        self._recent: list[Array] = []  # the last three setpoints, oldest first
        self._passing: Array | None = None  # the velocity the joints target is passed at, if not at rest

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # Anyone's calls -----------------------------------------------------------------------

    def update(self, target: ServoTarget) -> bool:
        """The newest target (safe from any thread); False once the motion has ended (then the
        target was not taken: start a new servo motion)."""
        with self._lock:
            if self._ended:
                return False
            self._pending = target
            return True

    # The executor's calls -----------------------------------------------------------------------

    def start(self, state: RobotState, commanded: Array, model: Kinematics, period: float) -> None:
        self.start_moving(state, commanded, None, None, model, period)

    def start_moving(self, state: RobotState, q: Array, v: Array | None, a: Array | None,
                     model: Kinematics, period: float, *, history: Array | None = None) -> None:
        self._model, self._period = model, period
        self._pending = self._pending.check(model.dof) if self._pending is not None else None
        self._generator = OnlineGenerator(model.limits, period, factor=self.dynamics, synchronization="time")
        self._generator.reset(q, v, a)
        self._ik = DifferentialIk(model, self.options, period)
        self._ik.reset(q)
        if history is not None:  # the setpoints really sent: the IK's cycle box is judged on them
            self._recent = [np.array(row, dtype=np.float64) for row in history]
        else:
            v = np.zeros(model.dof) if v is None else np.asarray(v, dtype=np.float64)
            a = np.zeros(model.dof) if a is None else np.asarray(a, dtype=np.float64)
            previous = q - v * period
            self._recent = [2 * previous - q + a * period**2, previous, np.array(q, dtype=np.float64)]
        self._last_target_time = state.time

    def step(self, state: RobotState) -> Array | None:
        with self._lock:
            target, self._pending = self._pending, None
            if target is None and self._braking and self._generator.finished:
                self._ended = True  # at rest after the stream stopped: over
                return None
        if target is not None:
            self._take(target, state)
        elif not self._braking and state.time - self._last_target_time > self.timeout:
            self._brake()
        if self._kind == "pose" and not self._braking:
            q = self._ik.step_rows(self._pose)
        else:
            q = self._generator.step()
            if self._passing is not None and self._generator.finished:
                # passed the target at its velocity before the next came: go on at it (a stream
                # that stops is braked by the timeout; an end of travel stops the joints before it)
                self._generator.velocity_target(self._passing)
                self._passing = None
        self._recent = [*self._recent[1:], q]
        return q

    def go_on_from(self, history: Array) -> None:
        """The robot filled cycles that no setpoint of ours reached (see
        :meth:`~robohal.control.executor.MotionExecutor.robot_filled`): ``history`` (3, dof) is
        its account of the last three setpoints, oldest first. The stream goes on from there,
        planned anew: the next setpoints of the old plan would jump against it (a cycle the robot
        filled at constant acceleration is off a jerk-limited plan by its jerk)."""
        h2, h1, h0 = (np.array(row, dtype=np.float64) for row in history)
        self._recent = [h2, h1, h0]
        if self._kind == "pose" and not self._braking:
            self._ik.history = np.array(self._recent)  # the IK's cycle box is judged on them
            return
        # velocity and acceleration at the newest setpoint of the parabola through the three:
        # the plan's first step then lies within its own jerk of what the robot extrapolates
        # (the backward differences of setpoint_state() are half a cycle old, and their
        # velocity starts the plan off by a * dt / 2: a jerk of a / (2 dt))
        dt = self._period
        self._generator.resume(h0, (3 * h0 - 4 * h1 + h2) / (2 * dt), (h0 - 2 * h1 + h2) / dt**2)

    def setpoint_state(self) -> tuple[Array, Array, Array]:
        """Position, velocity and acceleration of the last setpoint, for a take-over."""
        h2, h1, h0 = self._recent
        dt = self._period
        return h0.copy(), (h0 - h1) / dt, (h0 - 2 * h1 + h2) / dt**2

    # Internals ---------------------------------------------------------------------------------

    def _take(self, target: ServoTarget, state: RobotState) -> None:
        target.check(self._model.dof)
        self.targets += 1
        self._last_target_time = state.time
        limits = self._model.limits
        was_pose = self._kind == "pose" and not self._braking
        self._braking = False
        self._passing = None
        if target.kind == "pose":
            if not was_pose:  # from the generator's setpoints to the IK's cycles: hand the history over
                self._ik.history = np.array(self._recent)
            self._pose = pose_rows(target.value, "servo pose")
        else:
            if was_pose:  # and back: the generator goes on from the IK's last setpoints
                self._generator.reset(*self.setpoint_state())
            if target.kind == "joints":
                q = limits.clip(target.value)
                clamped = not np.array_equal(q, target.value)
                v = a = None
                if target.velocity is not None:
                    v = self._clip_velocity(target.velocity)
                    clamped |= not np.array_equal(v, target.velocity)
                    v[q != target.value] = 0.0  # clamped onto an end: it cannot pass on
                if target.acceleration is not None:
                    bound = limits.acceleration * self.dynamics
                    a = np.clip(target.acceleration, -bound, bound)
                    clamped |= not np.array_equal(a, target.acceleration)
                    a[q != target.value] = 0.0
                # passed at a velocity or an acceleration, the joints go on from the target (at
                # its velocity, braking any acceleration) rather than stopping dead on it
                self._passing = v if v is not None and (v.any() or (a is not None and a.any())) else None
                self.clamped += int(clamped)
                try:
                    self._generator.target(q, v, a, duration=target.duration)
                except LimitViolation:  # inside an end-of-travel zone it may not move toward: stop
                    self.clamped += 1
                    self._passing = None
                    self._generator.hold()
            else:
                v = self._clip_velocity(target.value)
                self.clamped += int(not np.array_equal(v, target.value))
                self._generator.velocity_target(v)
        self._kind = target.kind

    def _clip_velocity(self, v: Array) -> Array:
        bound = self._model.limits.velocity * self.dynamics
        return np.clip(v, -bound, bound)

    def _brake(self) -> None:
        """The stream stopped: come to rest (ruckig, to zero velocity)."""
        if self._kind == "pose":
            self._generator.reset(*self.setpoint_state())
        self._generator.hold()
        self._braking = True
        self._passing = None


def servo_target(kind: str, value: ArrayLike, dof: int, velocity: ArrayLike | None = None,
                 acceleration: ArrayLike | None = None, duration: float | None = None) -> ServoTarget:
    """A checked target for a robot of ``dof`` joints (raises on NaN, inf or a wrong shape)."""
    return ServoTarget(kind, value, velocity, acceleration, duration).check(dof)  # type: ignore[arg-type]
