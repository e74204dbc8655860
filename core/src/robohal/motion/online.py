"""Online, jerk-limited motion toward a target that may change every cycle.

:class:`OnlineGenerator` wraps ruckig (the community edition: the online generator behind
MoveIt 2 and franky): from any current position, velocity and acceleration, each
:meth:`~OnlineGenerator.step` gives the next setpoint of the time-optimal jerk-limited
trajectory to the newest target (a position with a velocity to pass it at, or a velocity).

ruckig's community edition leaves position limits to its user, so robohal keeps them here:

- targets must lie inside the joint ranges (and, on an arm with end-of-travel curves, outside
  the zone next to an end where the arm allows no speed toward it);
- the arm's own end-of-travel curve (:meth:`~robohal.kinematics.JointLimits.velocity_bounds`,
  the FR3's position-based velocity limits) bounds each joint's speed, judged where the joint
  will be once braking has built up;
- where the joints would otherwise leave their ranges (a velocity target, or a new position
  target the joints are moving too fast to reach without overshooting an end), each joint's
  speed toward an end is bounded by the speed from which it can still stop before it.

Those bounds are set per cycle, from the joints' current positions.
"""

from __future__ import annotations

import math
from array import array

import numpy as np
from numpy.typing import ArrayLike
from ruckig import ControlInterface, InputParameter, OutputParameter, Result, Ruckig, RuckigError, Synchronization

from ..errors import InvalidArgument, LimitViolation
from ..kinematics import JointLimits
from ..kinematics.kernels import bounds as _kernels
from ..kinematics.limits import TOLERANCE
from ..state import Array

#: share of the velocity, acceleration and jerk limits the generator plans with, so that the
#: finite differences of the sampled setpoints stay inside the guard's limits after round-off
HEADROOM = 0.98
#: share of the acceleration a joint is assumed to brake with when its speed toward an end of
#: travel is bounded: the rest is left for the jerk-limited turn from accelerating to braking
STOP_SHARE = 0.5
#: rad: how far before an end of its range a joint driven toward it by a velocity comes to rest
#: (our choice: above the 6e-5 rad by which the bounds' per-cycle chase was seen to overshoot)
END_MARGIN = 1e-3
#: what is tried when ruckig's calculation fails (see OnlineGenerator._update): the share of the
#: target velocity, and the synchronisation (None: the generator's own)
RETRIES = ((1.0 - 1e-9, None), (1.0 - 1e-6, None), (1.0, Synchronization.No), (1.0 - 1e-6, Synchronization.No),
           (0.0, None), (0.0, Synchronization.No))
#: cycles between a bound being computed and the joint obeying it (its setpoint is sent one cycle
#: later, and the generator reacts to a shrinking bound one cycle late), with one to spare
LEAD_CYCLES = 3


#: a trajectory longer than this share of a target's asked duration is taken as ruckig's answer to
#: a duration inside a blocked interval (see OnlineGenerator.step); our choice: durations asked for
#: by streamed path samples are met within a percent when feasible, and the next feasible ones seen
#: were 5-7 times longer
DURATION_SLACK = 1.5


SYNCHRONIZATION = {"phase": Synchronization.Phase, "time": Synchronization.Time, "none": Synchronization.No}


#: The highest speed (rad/s) from which a joint with no acceleration stops within ``distance``
#: (rad) braking jerk-limited at ``acceleration`` and ``jerk``; 0 where there is no room. A
#: kernel: the velocity bounds call it for every joint near an end on every cycle.
stopping_speed = _kernels.stopping_speed


def stopping_distance(speed: float, acceleration: float, jerk: float) -> float:
    """The distance (rad) a joint moving at ``speed`` with no acceleration needs to stop
    (the inverse of :func:`stopping_speed`)."""
    a, j = acceleration, jerk
    if speed < a * a / j:
        return speed ** 1.5 / math.sqrt(j)
    return speed * speed / (2.0 * a) + speed * a / (2.0 * j)


class OnlineGenerator:
    """The next setpoint toward a target, from wherever the setpoints are (see the module docstring).

    ``limits`` are the robot's; ``factor`` scales velocity, acceleration and jerk alike (a
    dynamics factor in (0, 1], as franky's). Joint positions are in rad, velocities in rad/s.
    """

    def __init__(self, limits: JointLimits, period: float, *, factor: float = 1.0,
                 synchronization: str = "phase") -> None:
        self.limits = limits
        self.period = float(period)
        self.dof = limits.dof
        if synchronization not in SYNCHRONIZATION:
            raise InvalidArgument(f"synchronization is one of {', '.join(SYNCHRONIZATION)}, got {synchronization!r}")
        self.synchronization = synchronization
        self._make_ruckig()
        self._q = limits.clip(np.zeros(self.dof))
        self._v = np.zeros(self.dof)
        self._a = np.zeros(self.dof)
        self._target_q = self._q.copy()
        self._target_v = np.zeros(self.dof)
        self._target_v_zero = True  # _target_v is np.zeros: its every clip into the bounds is 0.0
        self._target_a: list[float] | None = None  # the acceleration to pass the target at, if not 0
        self._velocity_mode = False
        self._duration: float | None = None  # s: the position target's minimum duration, if any
        self._finished = True
        self._segment_bounds: tuple[list[float], list[float]] | None = None
        self._zeros = [0.0] * self.dof
        self.retries = 0  # steps that needed a nudged target velocity (see _update)
        self.set_factor(factor)

    def _make_ruckig(self) -> None:
        self._otg = Ruckig(self.dof, self.period)
        self._input = InputParameter(self.dof)
        self._output = OutputParameter(self.dof)
        self._input.synchronization = SYNCHRONIZATION[self.synchronization]

    def __getstate__(self) -> dict:
        # ruckig's objects do not pickle; every step hands ruckig the whole current state, so
        # new ones go on from where these were
        state = dict(self.__dict__)
        for name in ("_otg", "_input", "_output"):
            del state[name]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._make_ruckig()
        self.set_factor(self.factor)
        self._finished = state["_finished"]

    # Settings ------------------------------------------------------------------------------

    def set_factor(self, factor: float) -> None:
        """Scale velocity, acceleration and jerk by ``factor`` in (0, 1] from the next step on."""
        if isinstance(factor, bool) or not isinstance(factor, (int, float, np.integer, np.floating)) \
                or not 0.0 < factor <= 1.0:
            raise InvalidArgument(f"the dynamics factor is a fraction in (0, 1], got {factor!r}")
        self.factor = float(factor)
        self._v_max = self.limits.velocity * HEADROOM * self.factor
        self._a_max = self.limits.acceleration * HEADROOM * self.factor
        self._j_max = self.limits.jerk * HEADROOM * self.factor
        self._input.max_acceleration = self._a_max.tolist()
        self._input.max_jerk = self._j_max.tolist()
        limits = self.limits
        a_stop = self._a_max * STOP_SHARE
        ends = [None] * self.dof if limits.end_deceleration is None else \
            list(zip((2.0 * limits.end_deceleration).tolist(), limits.end_offset.tolist(), strict=True))
        # per joint, flat for the kernel (_kernels.velocity_bounds): lower, upper, v_max, braking
        # acceleration, jerk, distance from an end beyond which nothing narrows the speed, then the
        # end-of-travel curve as (1, 2 d, offset), or zeros
        rows = [(lo, hi, v, a, j, self._far(v, a, j, end), *((0.0, 0.0, 0.0) if end is None else (1.0, *end)))
                for lo, hi, v, a, j, end in zip(limits.lower.tolist(), limits.upper.tolist(), self._v_max.tolist(),
                                                a_stop.tolist(), self._j_max.tolist(), ends, strict=True)]
        self._bounds_packed = array("d", [value for row in rows for value in row])
        self._finished = False

    def reset(self, q: ArrayLike, v: ArrayLike | None = None, a: ArrayLike | None = None) -> None:
        """Start from position ``q`` with velocity ``v`` and acceleration ``a`` (default: at rest),
        holding there until a target is given."""
        self._q = self._vector(q, "position").copy()
        self._v = np.zeros(self.dof) if v is None else self._vector(v, "velocity").copy()
        self._a = np.zeros(self.dof) if a is None else self._vector(a, "acceleration").copy()
        self.hold()

    def resume(self, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> None:
        """Go on toward the same target from position ``q``, velocity ``v`` and acceleration
        ``a``: where the joints really are when that is not where the last step led (a robot
        that filled cycles no setpoint reached). ruckig plans anew from there."""
        self._q = self._vector(q, "position").copy()
        self._v = self._vector(v, "velocity").copy()
        self._a = self._vector(a, "acceleration").copy()
        self._finished = self._finished and not (self._v.any() or self._a.any())

    def hold(self) -> None:
        """Target: come to rest (where the joints stop, braking within the limits)."""
        self._duration = None
        self._velocity_mode = True
        self._segment_bounds = None
        self._target_v = np.zeros(self.dof)
        self._target_v_zero = True
        self._target_a = None
        self._finished = not (self._v.any() or self._a.any())

    def target(self, q: ArrayLike, v: ArrayLike | None = None, a: ArrayLike | None = None, *,
               duration: float | None = None) -> None:
        """Target: reach position ``q`` (inside the joint ranges, else :class:`LimitViolation`)
        moving at velocity ``v`` with acceleration ``a`` there (default: at rest; ``a`` is clipped
        into the acceleration limits and needs ``v``), and no sooner than ``duration`` seconds
        from now (ruckig's minimum duration; default: as soon as the limits allow)."""
        q = self._vector(q, "target position")
        self.limits.check_position(q, "target")
        low, high = self.limits.velocity_bounds(q)
        toward_end = ((q > self._q) & (high <= 0.0)) | ((q < self._q) & (low >= 0.0))
        if toward_end.any():
            joint = int(np.argmax(toward_end))
            raise LimitViolation(f"target: joint {joint + 1} would move toward a position limit it is too close to"
                                 " (the arm allows no speed toward it there); stop further from the limit",
                                 joint=joint, quantity="velocity", value=float(q[joint]), limit=0.0)
        if duration is not None and not (math.isfinite(duration) and duration > 0):
            raise InvalidArgument(f"a target's duration is a positive number of seconds, got {duration!r}")
        self._duration = None if duration is None else float(duration)
        self._target_q = q.copy()
        self._target_v = np.zeros(self.dof) if v is None else self._vector(v, "target velocity").copy()
        self._target_v_zero = v is None
        if a is not None and v is None:
            raise InvalidArgument("a target acceleration needs a target velocity to go with it")
        a = None if a is None else np.clip(self._vector(a, "target acceleration"), -self._a_max, self._a_max)
        self._target_a = None if a is None or not a.any() else a.tolist()
        self._velocity_mode = False
        self._finished = False
        # Passing the target at a velocity, the bounds are those at the target, fixed for the
        # segment: bounds that change every cycle make ruckig plan anew every cycle, and a plan
        # toward a moving velocity target was seen to overshoot and circle back without end.
        self._segment_bounds = self._velocity_bounds(False, at=q) if self._target_v.any() else None

    def velocity_target(self, v: ArrayLike) -> None:
        """Target: move at velocity ``v`` (rad/s; inside the velocity limits, else
        :class:`LimitViolation`), which the joints keep until an end of travel stops them."""
        v = self._vector(v, "target velocity")
        over = np.abs(v) > self.limits.velocity * self.factor * (1 + 1e-9)
        if over.any():
            joint = int(np.argmax(over))
            raise LimitViolation(f"target velocity of joint {joint + 1} is {v[joint]:.4g} rad/s, beyond its limit of"
                                 f" {self.limits.velocity[joint] * self.factor:.4g} rad/s",
                                 joint=joint, quantity="velocity", value=float(v[joint]),
                                 limit=float(self.limits.velocity[joint] * self.factor))
        self._duration = None
        self._target_v = v.copy()
        self._target_v_zero = False
        self._target_a = None
        self._velocity_mode = True
        self._segment_bounds = None
        self._finished = False

    # Stepping --------------------------------------------------------------------------------

    @property
    def position(self) -> Array:
        return self._q.copy()

    @property
    def velocity(self) -> Array:
        return self._v.copy()

    @property
    def acceleration(self) -> Array:
        return self._a.copy()

    @property
    def finished(self) -> bool:
        """Whether the target is reached (a position target at its velocity, or the joints at
        rest after :meth:`hold`); a velocity target is never finished."""
        return self._finished

    def remaining(self) -> float:
        """Seconds left to the target on the trajectory last planned (0 once finished)."""
        if self._finished:
            return 0.0
        return max(float(self._output.trajectory.duration) - float(self._output.time), 0.0)

    def step(self) -> Array:
        """The next setpoint (rad), one period on."""
        if self._finished:
            return self._q.copy()
        # A velocity may drive a joint into an end: bound its speed so it stops before. A position
        # target inside the range is reached without that, unless the joints move too fast toward
        # an end to reach it without passing the end (a target changed while moving): then too.
        stop_bounds = self._velocity_mode
        result = self._update(self._plan_input(stop_bounds))
        out = self._output
        if self._duration is not None and out.new_calculation and out.trajectory.duration > DURATION_SLACK * self._duration:
            # the asked duration fell in a joint's blocked interval (durations its target velocity
            # and acceleration rule out): ruckig then takes the next feasible one, often many
            # times longer; arriving as early as the limits allow is the nearer miss
            self._duration = None
            result = self._update(self._plan_input(stop_bounds))
        if not stop_bounds and out.new_calculation and self._leaves_range(out.trajectory):
            result = self._update(self._plan_input(True))
        if result not in (Result.Working, Result.Finished):
            raise LimitViolation(f"the online trajectory generator refused the target ({result.name})")
        self._q = np.array(out.new_position)
        self._v = np.array(out.new_velocity)
        self._a = np.array(out.new_acceleration)
        if result == Result.Finished:
            self._finished = not self._velocity_mode or not self._target_v.any()
            if self._finished and not self._velocity_mode and not self._target_v.any() and self._target_a is None:
                self._q = self._target_q.copy()  # on the target, not round-off away from it
                self._v[:] = 0.0
                self._a[:] = 0.0
        return self._q.copy()

    # Internals --------------------------------------------------------------------------------

    def _plan_input(self, stop_bounds: bool) -> InputParameter:
        inp = self._input
        inp.current_position = self._q.tolist()
        inp.current_velocity = self._v.tolist()
        inp.current_acceleration = self._a.tolist()
        if self._segment_bounds is not None and not stop_bounds:
            low, high = self._segment_bounds
        else:
            low, high = self._velocity_bounds(stop_bounds)
        inp.max_velocity = high
        inp.min_velocity = low
        if self._target_v_zero:  # (the bounds always let 0 through)
            inp.target_velocity = self._zeros
        else:
            inp.target_velocity = [min(max(v, lo), hi) for v, lo, hi in zip(self._target_v.tolist(), low, high, strict=True)]
        inp.target_acceleration = self._zeros if self._target_a is None or self._velocity_mode else self._target_a
        inp.minimum_duration = self._duration
        if self._velocity_mode:
            inp.control_interface = ControlInterface.Velocity
        else:
            inp.control_interface = ControlInterface.Position
            inp.target_position = self._target_q.tolist()
        return inp

    def _update(self, inp: InputParameter) -> Result:
        """ruckig's step. Its calculation fails on rare inputs: a pass-through target velocity met
        with an acceleration near the limit (then a target velocity a hair lower went through), or
        a synchronisation it cannot meet within a narrowed velocity bound (then one without
        synchronisation did). So retry with those, and last with no target velocity (nor acceleration)."""
        try:
            return self._otg.update(inp, self._output)
        except RuckigError as error:
            wanted, synchronization = list(inp.target_velocity), inp.synchronization
            wanted_a = list(inp.target_acceleration)
            for share, sync in RETRIES:
                inp.target_velocity = [v * share for v in wanted]
                inp.target_acceleration = [a * share for a in wanted_a]
                inp.synchronization = sync if sync is not None else synchronization
                try:
                    result = self._otg.update(inp, self._output)
                except RuckigError:
                    continue
                finally:
                    inp.synchronization = synchronization
                self.retries += 1
                return result
            raise LimitViolation(f"the online trajectory generator found no trajectory to the target: {error}") from None

    def _leaves_range(self, trajectory) -> bool:
        """Whether the planned trajectory passes an end of a joint's range."""
        return any(extrema.min < lower - TOLERANCE or extrema.max > upper + TOLERANCE
                   for extrema, lower, upper in zip(trajectory.position_extrema, self.limits.lower.tolist(),
                                                     self.limits.upper.tolist(), strict=True))

    def _velocity_bounds(self, stop_bounds: bool, at: Array | None = None) -> tuple[list[float], list[float]]:
        """Per joint, the lowest and highest velocity allowed at the current position (or ``at``):
        the (scaled) limit, narrowed by the arm's end-of-travel curve and, with ``stop_bounds``,
        toward each end so the joint can still stop before it. This runs every cycle: a
        kernel, joint by joint (most joints are far from both ends)."""
        position = self._q if at is None else at
        # Where each joint is heading. Only the bound toward that end is narrowed: a bound behind a
        # joint does not bind, and changing it every cycle would only make ruckig plan anew (which
        # was seen to lose a pass-through target). A joint moving against its heading gets both.
        heading = (self._target_v if self._velocity_mode else self._target_q - self._q).tolist()
        # Per joint, in a kernel: where the joint is far from both ends nothing narrows its speed.
        # Else, with stop_bounds a cycle may not pass the end either (a long period, a slow
        # approach) and the joint must stop before it (stopping_speed); the arm's own end-of-travel
        # curve bounds it too (JointLimits.velocity_bounds). Both are judged where the joint will be
        # once braking has built up: the cycles before a new bound takes effect, and the
        # jerk-limited ramp to full deceleration.
        return _kernels.velocity_bounds(position.tolist(), self._v.tolist(), heading, self._bounds_packed, stop_bounds,
                                        self.period, END_MARGIN, float(LEAD_CYCLES), HEADROOM, self.factor)

    def _far(self, v_max: float, a_stop: float, j_max: float, end: tuple[float, float] | None) -> float:
        """The distance from an end of travel (rad) beyond which a joint may move at full speed."""
        far = stopping_distance(v_max, a_stop, j_max)
        if end is not None:  # where the end curve allows v_max: sqrt(2 d x) - c >= v_max
            twice_d, offset = end
            far = max(far, (v_max / (HEADROOM * self.factor) + offset) ** 2 / twice_d)
        return far + END_MARGIN + v_max * (a_stop / j_max + LEAD_CYCLES * self.period)

    def _vector(self, value: ArrayLike, what: str) -> Array:
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidArgument(f"{what} must be numeric, got {value!r:.60}") from None
        if array.shape != (self.dof,):
            raise InvalidArgument(f"{what} must have {self.dof} values, got shape {array.shape}")
        if not np.isfinite(array).all():
            raise InvalidArgument(f"{what} contains NaN or inf")
        return array

