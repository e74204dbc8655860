"""Differential inverse kinematics: one control cycle at a time.

Every cycle starts from the previous joint goal and takes up to
``IkOptions.iterations`` damped-least-squares steps toward the target pose,

    dq = J~^T (J~ J~^T + damping^2 I)^-1 e~,    J~ = W J,  e~ = W e,

with W scaling the rotation rows by ``rotation_weight`` (metres per radian),
plus a pull toward a posture projected into the task's nullspace (at most
:data:`MAX_POSTURE_RATE` per joint). Each step is clipped to the cycle's joint
box (:func:`cycle_box`): the goals the joints can take next without breaking a
position, velocity, acceleration or jerk limit, now or while braking later.
Within that box each joint approaches its goal no faster than it could stop
there, measured relative to the target's own motion (estimated from the last
two targets), so a step target does not overshoot and a moving one is followed
without a braking-distance lag. Coupled limits (a parallelogram's linkage angle,
``Kinematics.linkage_limits``) are kept too: a goal is moved back toward
the box edge that turns the linkage away until, braking from there, the linkage
stays inside its range.

The hot path works on plain floats, one 6 x 6 system per cycle (the Jacobian of
the cycle's start serves its iterations) and the models' scalar
:meth:`~robohal.kinematics.Kinematics.frame_and_jacobian_lists`. The pose error, the
target's motion, the damped steps, the box and the goal clipped into it are kernels
(``robohal.kinematics.kernels.cycle``, one source, compiled where a C compiler was at install;
:data:`COMPILED` says whether they run compiled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidArgument
from ..spatial import as_finite
from .base import Array, Kinematics, pose_rows
from .kernels import COMPILED  # noqa: F401 (diffik.COMPILED: whether the cycle's kernels run compiled)
from .kernels import cycle as _cycle
from .limits import JointLimits

#: rad/s: the fastest any joint moves because of the nullspace posture pull
MAX_POSTURE_RATE = 0.5
#: the box keeps velocity, acceleration and jerk this fraction inside their limits
SAFETY = 0.98
# Damping of the nullspace projector (tiny: only guards a rank-deficient Jacobian).
NULLSPACE_DAMPING = 1e-5
#: the damping the cycle applies is IkOptions.damping kept within these bounds: below the
#: lower one a singular Jacobian's system is singular in floating point (NaN steps), above
#: the upper one its square overflows; both ends mean the same motion as the bound
DAMPING_RANGE = (NULLSPACE_DAMPING, 1e6)
#: s: the shortest and longest cycle periods the IK accepts
PERIOD_RANGE = (1e-6, 10.0)
# Targets moving faster than this (m/s, rad/s) are jumps: no feed-forward is taken from them.
MAX_TARGET_SPEED = 5.0
MAX_TARGET_TURN_RATE = 20.0
# An iteration that removes less than half the residual means the box decides this cycle.
STALLED = 0.5
#: braking is planned with this fraction of the (already reduced) acceleration limit
BRAKING = 0.9
# Halvings of the share of a step kept when a linkage limit binds (2^-12 of one cycle's move).
LINKAGE_BISECTIONS = 12
# Relative accuracy (of 1 + |s|) of the accelerations the bound searches return: rad/s^2,
# so at 1 kHz a position within 1e-9 rad of the exact bound, always on its safe side.
NEWTON_TOLERANCE = 1e-4
# Toward an end-of-travel speed curve sqrt(2 d (limit - q)) - c (JointLimits.velocity_bounds)
# the box brakes at END_SHARE d and stops c^2 / (2 d (1 - END_SHARE)) short of the limit: its
# own braking curve then stays under the arm's everywhere (10% margin on that distance).
END_SHARE = 0.5


def _is_number(value: object) -> bool:
    """A real number, not a bool (True is an int to Python, never a damping to us)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _check_period(period: object) -> float:
    low, high = PERIOD_RANGE
    if not (_is_number(period) and low <= period <= high):  # type: ignore[operator]
        raise InvalidArgument(f"period must be a number of seconds within [{low:g}, {high:g}], got {period!r}")
    return float(period)  # type: ignore[arg-type]


@dataclass(frozen=True)
class IkOptions:
    """Options of one differential-IK cycle (see the module docstring).

    ``damping``: lambda of the damped least squares (applied within
    :data:`DAMPING_RANGE`). ``nullspace_gain`` (1/s): gain of the pull toward
    the posture. ``iterations``: steps per cycle.
    ``tolerance``: weighted residual under which a cycle stops iterating.
    ``rotation_weight`` (m/rad, within (0, 1]): at 0.1, 1 mm costs as much as 10 mrad.
    """

    damping: float = 0.05
    nullspace_gain: float = 1.0
    iterations: int = 3
    tolerance: float = 1e-6
    rotation_weight: float = 0.1

    def validate(self) -> None:
        """Raise :class:`~robohal.errors.InvalidArgument` unless damping is finite and
        positive, nullspace_gain and tolerance finite and non-negative,
        rotation_weight within (0, 1] and iterations at least 1."""
        if not (_is_number(self.damping) and math.isfinite(self.damping) and self.damping > 0):
            raise InvalidArgument(f"IkOptions.damping must be finite and positive, got {self.damping!r}")
        if not (_is_number(self.nullspace_gain) and math.isfinite(self.nullspace_gain)
                and self.nullspace_gain >= 0):
            raise InvalidArgument(f"IkOptions.nullspace_gain must be finite and non-negative, got {self.nullspace_gain!r}")
        if not (_is_number(self.tolerance) and math.isfinite(self.tolerance) and self.tolerance >= 0):
            raise InvalidArgument(f"IkOptions.tolerance must be finite and non-negative, got {self.tolerance!r}")
        if not (_is_number(self.rotation_weight) and 0 < self.rotation_weight <= 1):
            raise InvalidArgument(f"IkOptions.rotation_weight must be within (0, 1], got {self.rotation_weight!r}")
        if isinstance(self.iterations, bool) or not isinstance(self.iterations, (int, np.integer)) or self.iterations < 1:
            raise InvalidArgument(f"IkOptions.iterations must be an integer of at least 1, got {self.iterations!r}")


# The cycle's joint box ----------------------------------------------------------------------


# The travel of a joint at (position, velocity, acceleration) after a cycle: an upper bound
# of the furthest position (in the + direction) it reaches when it brakes: release any
# positive acceleration at the jerk limit, ramp to -braking, hold until at rest; one extra
# cycle of travel covers the sampling. With release = max(acceleration, 0) and the fastest
# it will go, peak = velocity + release**2 / (2 jerk):
#     position                                                                  if peak <= 0,
#     position + peak (release / jerk + braking / jerk + period) + peak**2 / (2 braking)  else.
# The box (in _kernels/cycle.py) writes it out inline where it runs every cycle.


def _joint_constants(limits: tuple[list[float], ...], period: float) -> tuple[tuple[float, ...], ...]:
    """Per joint what the box (``_cycle.box``) needs, computed once from :func:`_limit_lists`:
    (lower, upper, velocity, acceleration, jerk, jerk * period, braking deceleration,
    braking deceleration toward the position limits, velocity room, position room).
    The position limits and the braking toward them are those the box works with
    (inside an end-of-travel curve, see :data:`END_SHARE`). With more
    velocity room than its own, a joint's acceleration is not capped by the velocity
    limit this cycle; further than its position room from a limit, a joint moving
    within its speed limit can always brake before it."""
    t = period
    joints = []
    for low, high, vel, acc, jrk, end_deceleration, end_offset in zip(*limits, strict=True):
        jt, braking = jrk * t, BRAKING * acc
        end_braking = braking
        if end_deceleration < math.inf:
            end_braking = min(braking, END_SHARE * end_deceleration)
            short = 1.1 * end_offset**2 / (2.0 * end_deceleration * (1.0 - END_SHARE))
            low, high = low + short, high - short
        velocity_room = max(acc * (acc + 2.0 * jt) / (2.0 * jrk), acc * t)
        peak = vel + t * acc + acc * acc / (2.0 * jrk)  # the fastest a joint within its limits gets
        position_room = t * t * acc + peak * (acc / jrk + end_braking / jrk + t) + peak * peak / (2.0 * end_braking)
        joints.append((low, high, vel, acc, jrk, jt, braking, end_braking, velocity_room, position_room * (1.0 + 1e-9)))
    return tuple(joints)


def _limit_lists(limits: JointLimits) -> tuple[list[float], ...]:
    if limits.end_deceleration is None:
        end = [math.inf] * limits.dof, [0.0] * limits.dof
    else:
        end = limits.end_deceleration.tolist(), limits.end_offset.tolist()
    return (limits.lower.tolist(), limits.upper.tolist(), (limits.velocity * SAFETY).tolist(),
            (limits.acceleration * SAFETY).tolist(), (limits.jerk * SAFETY).tolist(), *end)


def cycle_box(limits: JointLimits, period: float, history: ArrayLike) -> tuple[Array, Array]:
    """The joint goals reachable in the next cycle: (lower, upper), each (dof,).

    ``history`` holds the last three goals, (3, dof), newest last. A goal inside
    the box keeps position, velocity, acceleration and jerk (finite differences
    over ``period``, as :class:`robohal.control.guard.SetpointGuard` computes them) within
    the limits (velocity, acceleration and jerk with the margin :data:`SAFETY`),
    and leaves a state from which the joint can still brake to rest before its
    position limits, so the next box is never empty.
    """
    if not isinstance(limits, JointLimits):
        raise InvalidArgument(f"expected JointLimits, got {type(limits).__name__}")
    history = as_finite(history, "history")
    if history.shape != (3, limits.dof):
        raise InvalidArgument(f"history must have shape (3, {limits.dof}), got {history.shape}")
    period = _check_period(period)
    lo, hi = _cycle.box(*history.tolist(), period, _joint_constants(_limit_lists(limits), period))
    return np.array(lo), np.array(hi)


# One cycle -----------------------------------------------------------------------------------


class DifferentialIk:
    """Differential IK for one model, one cycle per :meth:`step`.

    ``posture`` is the configuration the nullspace pull leans toward (default:
    the configuration given to :meth:`reset`). The object is picklable.
    """

    def __init__(self, model: Kinematics, options: IkOptions = IkOptions(), period: float = 0.001,
                 posture: ArrayLike | None = None) -> None:
        if not isinstance(model, Kinematics):
            raise InvalidArgument(f"expected a Kinematics model, got {type(model).__name__}")
        if not isinstance(options, IkOptions):
            raise InvalidArgument(f"options must be IkOptions, got {type(options).__name__}")
        options.validate()
        self.model = model
        self.options = options
        self.period = _check_period(period)
        self.dof = model.dof
        self._joints = _joint_constants(_limit_lists(model.limits), self.period)
        self._posture = None if posture is None else self._check(posture, "posture")
        self._posture_from_reset = posture is None
        self._history = [[0.0] * self.dof] * 3  # the last three goals, newest last, as lists
        self.last_residual = math.inf
        self._ready = False
        rw = options.rotation_weight
        # A model that only positions a point (a planar arm) is steered by x and y alone.
        self._weights = [1.0, 1.0, 0.0, 0.0, 0.0, 0.0] if model.position_only else [1.0, 1.0, 1.0, rw, rw, rw]
        damping = min(max(options.damping, DAMPING_RANGE[0]), DAMPING_RANGE[1])
        self._damping2 = damping**2
        self._step_caps = (model.limits.velocity * SAFETY * self.period).tolist()
        self._last_goal: list | None = None
        self._cache: tuple | None = None  # (q, frame, Jacobian) where the last cycle ended
        # Coupled limits (a parallelogram's linkage angle): the joints they weigh, and how much.
        self._linkages = [([j for j, w in enumerate(weights) if w], [w for w in weights if w], lower, upper)
                          for weights, lower, upper in model.linkage_limits]

    @property
    def history(self) -> Array:
        """The last three joint goals, (3, dof), newest last."""
        return np.array(self._history)

    @history.setter
    def history(self, goals: ArrayLike) -> None:
        """Continue from these three goals (e.g. a backend's last setpoints) instead of rest."""
        array = as_finite(goals, "history")
        if array.shape != (3, self.dof):
            raise InvalidArgument(f"history must be (3, {self.dof}) finite joint values, got shape {array.shape}")
        self.model.limits.check_position(array, "history")
        self._history = array.tolist()

    def _check(self, q: ArrayLike, name: str) -> list[float]:
        array = as_finite(q, name)
        if array.shape != (self.dof,):
            raise InvalidArgument(f"{name} must be {self.dof} finite joint values, got {q!r:.80}")
        return array.tolist()

    def reset(self, q: ArrayLike) -> None:
        """Start at rest at ``q`` (the history becomes q, q, q)."""
        values = self._check(q, "joints")
        self.model.limits.check_position(np.array(values), "reset joints")
        self._history = [values, values, values]
        if self._posture_from_reset:
            self._posture = values
        self.last_residual = math.inf
        self._cache = None
        self._last_goal = None
        self._ready = True

    def _damped_steps(self, jac: list, error: list[float], motion: list[float] | None,
                      offset: list[float] | None) -> tuple[list[float], list[float] | None, list[float] | None]:
        """Joint steps for the (weighted) task ``error`` and target ``motion``, J~^T (J~ J~^T +
        damping^2 I)^-1 e~, and the joint ``offset`` less what the task sees of it, the part
        in the task's nullspace (through a barely damped projector: a damped one would leak the
        pull into the task). ``motion`` and ``offset`` may be None (then so is their result)."""
        return _cycle.steps(jac, self._weights, self._damping2, NULLSPACE_DAMPING * NULLSPACE_DAMPING, error, motion,
                              offset)

    def _frame_and_jacobian(self, q: list[float], with_jacobian: bool = True) -> tuple[tuple, list]:
        return self.model.frame_and_jacobian_lists(q, with_jacobian)

    def _error(self, target: list[list[float]], frame: tuple) -> tuple[list[float], float]:
        """The weighted error from ``frame`` to ``target`` (rows), and its length."""
        return _cycle.pose_error(target, frame, self._weights)

    def _target_motion(self, goal: list[list[float]]) -> list[float]:
        """The target's motion since the last cycle, weighted like the error; zero
        on the first cycle and for jumps no arm could follow."""
        last = self._last_goal
        if last is None:
            return [0.0] * 6
        return _cycle.target_motion(goal, last, self._weights, MAX_TARGET_SPEED * self.period,
                                      MAX_TARGET_TURN_RATE * self.period)

    def _linkage_extent(self, h2: list[float], h1: list[float], goals: list[float], joints: list[int],
                        weights: list[float]) -> tuple[float, float]:
        """The lowest and highest a linkage (sum of weights * q) gets if the joints, after
        reaching ``goals``, brake to rest each on its own (the box's travel bounds)."""
        t = self.period
        low = high = 0.0
        for j, w in zip(joints, weights, strict=True):
            jrk, braking = self._joints[j][4], self._joints[j][6]
            v = (h1[j] - h2[j]) / t
            base = h1[j] + t * v
            s = (goals[j] - base) / (t * t)
            furthest_up = _cycle.travel_and_slope(base, v, s, t, jrk, braking)[0]
            furthest_down = -_cycle.travel_and_slope(-base, -v, -s, t, jrk, braking)[0]
            if w > 0.0:
                low, high = low + w * furthest_down, high + w * furthest_up
            else:
                low, high = low + w * furthest_up, high + w * furthest_down
        return low, high

    def _inside_linkages(self, h2: list[float], h1: list[float], goals: list[float], lo: list[float],
                         hi: list[float]) -> list[float]:
        """``goals`` moved toward the box edge that turns a linkage back from its limit, just far
        enough that braking from there keeps it inside (the per-joint box knows only each
        joint's own range). Usually a check of four travel bounds and no change."""
        for joints, weights, lower, upper in self._linkages:
            low, high = self._linkage_extent(h2, h1, goals, joints, weights)
            if high > upper:  # toward the edge where the linkage rises least
                edge = [lo[j] if w > 0.0 else hi[j] for j, w in zip(joints, weights, strict=True)]
                inside = lambda g, j=joints, w=weights, b=upper: self._linkage_extent(h2, h1, g, j, w)[1] <= b  # noqa: E731
            elif low < lower:
                edge = [hi[j] if w > 0.0 else lo[j] for j, w in zip(joints, weights, strict=True)]
                inside = lambda g, j=joints, w=weights, b=lower: self._linkage_extent(h2, h1, g, j, w)[0] >= b  # noqa: E731
            else:
                continue
            wanted = [goals[j] for j in joints]
            goals = list(goals)
            for j, x in zip(joints, edge, strict=True):
                goals[j] = x
            if not inside(goals):  # even the edge cannot keep it: that is the hardest turn there is
                continue
            good, bad = 0.0, 1.0  # shares of the way from the edge back to the wanted goals
            for _ in range(LINKAGE_BISECTIONS):
                middle = 0.5 * (good + bad)
                trial = list(goals)
                for j, x, w in zip(joints, edge, wanted, strict=True):
                    trial[j] = x + middle * (w - x)
                if inside(trial):
                    good = middle
                else:
                    bad = middle
            for j, x, w in zip(joints, edge, wanted, strict=True):
                goals[j] = x + good * (w - x)
        return goals

    def step(self, target: ArrayLike, *, posture_pull: bool = True) -> Array:
        """One cycle toward the (4, 4) ``target``: the next joint goal (inside the
        cycle's box); the history advances. ``posture_pull=False`` leaves the
        nullspace alone this cycle (to come to rest on a pose)."""
        if not self._ready:
            raise InvalidArgument("call reset(q) with the current joints before step()")
        return self.step_rows(pose_rows(target, "target pose"), posture_pull=posture_pull)

    def step_rows(self, goal: list[list[float]], *, posture_pull: bool = True) -> Array:
        """:meth:`step` toward a target already validated into rows by
        :func:`~robohal.kinematics.base.pose_rows` (a stream's target, validated once as it
        arrives, then steered to every cycle until the next)."""
        if not self._ready:
            raise InvalidArgument("call reset(q) with the current joints before step()")
        options = self.options
        h3, h2, h1 = self._history
        q = h1
        # Toward the posture: its full offset now, the rate-limited share after projection.
        offset = None
        if posture_pull and self._posture is not None and options.nullspace_gain > 0.0:
            offset = [p - x for p, x in zip(self._posture, q, strict=False)]
            if max(map(abs, offset)) < 1e-12:
                offset = None
        cached = self._cache
        if cached is not None and cached[0] == q and cached[2] is not None:
            frame, jac = cached[1], cached[2]  # the last cycle ended here
        else:
            frame, jac = self._frame_and_jacobian(q, True)
        error, residual = self._error(goal, frame)
        start_jac = None
        for iteration in range(options.iterations):
            on_target = residual < options.tolerance
            if on_target and iteration > 0:
                break
            if iteration == 0:
                if on_target and offset is None:
                    # Nothing to correct: hold here, braking inside the box if the joints still move.
                    delta = motion = [0.0] * self.dof
                    null = None
                else:
                    # The joints move ~1 mrad in a cycle: the Jacobian of its start serves every iteration.
                    start_jac = jac
                    # The step toward the target, the joint motion that follows the target's own
                    # motion and the posture offset's nullspace part.
                    delta, motion, null = self._damped_steps(jac, error, self._target_motion(goal), offset)
                # The motion is capped at the speed limits and the nullspace part scaled (not clipped,
                # so it stays in the nullspace) by the gain and to the rate cap; the pull moves the
                # goal every cycle, so it is followed like a moving target. The goal approaches this
                # cycle's target no faster than the joints can stop there (no overshoot).
                clipped, free, lo, hi = _cycle.first_goal(
                    q, delta, motion, null, self._step_caps, options.nullspace_gain * self.period,
                    MAX_POSTURE_RATE * self.period, h3, h2, h1, self.period, self._joints)
            else:
                if start_jac is None:
                    start_jac = jac
                clipped, free = _cycle.next_goal(q, self._damped_steps(start_jac, error, None, None)[0], lo, hi)
            if self._linkages:
                clipped = self._inside_linkages(h2, h1, clipped, lo, hi)
            if clipped == q:  # at rest on the target: the frame and Jacobian stay valid
                break
            q = clipped
            # Frame and Jacobian in one pass: whichever iteration ends the cycle, the next
            # cycle starts here and reuses both.
            frame, jac = self._frame_and_jacobian(q, True)
            before = residual
            error, residual = self._error(goal, frame)
            # The box decides this cycle (every joint held at its edge, or little progress):
            # more steps would not help.
            if not free or residual > STALLED * before:
                break
        self.last_residual = residual
        self._cache = (q, frame, jac)
        self._last_goal = goal
        self._history = [h2, h1, q]
        return np.array(q)
