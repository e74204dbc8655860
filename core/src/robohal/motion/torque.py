"""Torque motions: joint and Cartesian impedance, applied torques and wrenches, hand guiding.

On a robot that takes joint torques (a backend whose ``command_interfaces`` hold
``"joint_torque"``), each of these gives, every control cycle, the joint torques (Nm) to add to
the robot's own gravity compensation. A Franka compensates gravity itself: a torque controller
sends the torques *without* gravity, and adds the Coriolis and centrifugal torques, as
libfranka's examples do. They are stepped by the
:class:`~robohal.control.torque_executor.TorqueExecutor`, whose
:class:`~robohal.control.torque_guard.TorqueGuard` checks every torque before it leaves.

What they are given each cycle: the measured state (``q``, ``dq``, the external wrench) and the
robot's dynamics there (:class:`ModelTerms`: Coriolis, gravity, mass matrix), which the backend's
control loop takes from the robot's own model (on a Franka, pylibfranka's ``Model``). The flange's
pose and Jacobian come from robohal's model, the one every pose a user gives is expressed in.

Every law here shapes its own output, as controllers for these arms do: its torque changes by at
most :data:`RATE_SHARE` of the arm's rate limit per cycle, and for the impedances and hand guiding a
spring that would pull harder than a drive can is scaled back as a whole, its direction kept,
inside the torque limits. :class:`AppliedTorque` and :class:`AppliedWrench` are ramped but never
scaled: what they are asked for is applied, or refused past a limit. Their per-cycle arithmetic
runs in the kinematics kernels (:mod:`robohal.kinematics.kernels`, compiled where the install
found a compiler), as the position motions' does.

The impedances follow a stream (``robot.servo`` / ``robot.servo_pose`` while one runs, as a
learned policy drives an arm): each new target is the equilibrium's, which a first-order filter
(``smoothing``, s) carries there. None of them ends on its own unless given a ``duration``: stop
it, take it over, or end it with a reaction (``until=``). Everything here is picklable data.
"""

from __future__ import annotations

import math
import threading
from array import array
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument, LimitViolation
from ..kinematics import Kinematics, TorqueLimits
from ..kinematics.kernels import torque as _kernels
from ..state import Array, RobotState
from .motions import JOINT_TORQUE

#: share of the arm's torque-rate limit a law lets its torque change by per cycle (libfranka's
#: examples saturate at 1 Nm per ms, the limit itself; a share below it leaves room for round-off)
RATE_SHARE = 0.95
#: share of each joint's torque limit a saturated spring is scaled back to
TORQUE_SHARE = 0.98
#: Nm/rad: joint stiffness by default (the gains of libfranka's joint impedance example)
JOINT_STIFFNESS = (600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0)
#: N/m and Nm/rad: Cartesian stiffness by default (our choice: firm enough to hold a pose against
#: a hand, soft enough to press on a surface with a few newtons per centimetre)
TRANSLATIONAL_STIFFNESS = 500.0
ROTATIONAL_STIFFNESS = 50.0
#: Nm/rad: how firmly a Cartesian impedance keeps its nullspace posture by default (our choice)
NULLSPACE_STIFFNESS = 10.0
#: s: time constant of the filter that carries an equilibrium to a new target (our choice: a
#: 10 Hz policy's target is 86 % reached before the next arrives)
SMOOTHING = 0.05
#: m and rad: the spring's stretch is capped here (a target further off pulls no harder)
MAX_POSE_ERROR = (0.1, 0.3)
#: N/m and Nm/rad: how stiffly hand guiding holds a locked axis (our choice)
LOCK_STIFFNESS = (2000.0, 150.0)
#: the axes hand guiding can lock: the flange's translation and rotation along the base axes
AXES = ("x", "y", "z", "rx", "ry", "rz")
#: kg m^2 (kg along a translation): the least inertia a damping is scaled with. A robot's model may
#: leave its drives' reflected inertia out (pylibfranka's does: 0.07-0.2 kg m^2 per joint on an FR3,
#: MuJoCo Menagerie's identification), which weighs most on the wrist joints and the flange's
#: rotations; and near a singular pose the flange's inertia along an axis vanishes
MIN_INERTIA = 0.05


class ModelTerms(Protocol):
    """The robot's dynamics at this cycle's state, from its own model (each computed on demand)."""

    def coriolis(self) -> Array:
        """Nm: the Coriolis and centrifugal torques, C(q, dq) dq."""

    def gravity(self) -> Array:
        """Nm: the gravity torques g(q) (which the robot compensates itself)."""

    def mass(self) -> Array:
        """The joint-space inertia matrix M(q) (dof, dof), kg m^2."""


class KnownTerms:
    """:class:`ModelTerms` given as arrays (for tests, and for backends that compute them up front)."""

    def __init__(self, coriolis: ArrayLike, mass: ArrayLike, gravity: ArrayLike | None = None) -> None:
        self._coriolis = np.asarray(coriolis, dtype=np.float64)
        self._mass = np.asarray(mass, dtype=np.float64)
        self._gravity = np.zeros_like(self._coriolis) if gravity is None else np.asarray(gravity, dtype=np.float64)

    def coriolis(self) -> Array:
        return self._coriolis

    def gravity(self) -> Array:
        return self._gravity

    def mass(self) -> Array:
        return self._mass


# Shaping ----------------------------------------------------------------------------------------


def within_torque_limits(tau: Array, limits: TorqueLimits, share: float = TORQUE_SHARE) -> Array:
    """``tau`` scaled back as a whole (its direction kept) so that no joint passes ``share`` of its
    torque limit; ``tau`` itself when none does."""
    worst = float(np.max(np.abs(tau) / (limits.torque * share)))
    return tau / worst if worst > 1.0 else tau


def rate_limited(tau: Array, last: Array, limits: TorqueLimits, period: float, share: float = RATE_SHARE) -> Array:
    """``tau`` reached from ``last`` no faster than ``share`` of the rate limit allows in one cycle."""
    step = limits.rate * (period * share)
    return last + np.clip(tau - last, -step, step)


def filter_share(smoothing: float, period: float) -> float:
    """The share of the gap to its target an equilibrium closes each cycle: a first-order filter
    of time constant ``smoothing`` (s) sampled at ``period`` (the whole gap with no smoothing)."""
    return 1.0 if smoothing == 0 else 1.0 - math.exp(-period / smoothing)


def pose_and_jacobian(model: Kinematics, q: Array) -> tuple[Array, Array]:
    """The flange pose (4, 4) and geometric Jacobian (6, dof) at ``q``, in one call where the
    model offers it."""
    both = getattr(model, "pose_and_jacobian", None)
    if callable(both):
        return both(q)
    return model.forward(q), model.jacobian(q)


def cartesian_inertia(jacobian: Array, mass: Array) -> Array:
    """The flange's inertia along each base axis (6,): the diagonal of (J M^-1 J^T)^-1, bounded
    below by :data:`MIN_INERTIA`."""
    mobility = jacobian @ np.linalg.solve(mass, jacobian.T)
    try:
        inertia = np.diag(np.linalg.inv(mobility))
    except np.linalg.LinAlgError:  # singular: every axis gets the bound
        return np.full(6, MIN_INERTIA)
    return np.maximum(np.nan_to_num(inertia, nan=MIN_INERTIA), MIN_INERTIA)


def _per(value: ArrayLike, count: int, what: str, *, positive: bool = False) -> Array:
    """One value for each of ``count`` (a scalar broadcasts), finite and not negative."""
    values = spatial.as_finite(value, what)
    if values.ndim > 1 or (values.ndim == 1 and values.shape[0] != count):
        raise InvalidArgument(f"{what} is one number or {count} numbers, got shape {values.shape}")
    if (values < 0).any() or (positive and (values <= 0).any()):
        raise InvalidArgument(f"{what} must be {'positive' if positive else 'zero or more'}, got {values.tolist()}")
    return np.array(np.broadcast_to(values, (count,)))


def _three(value: ArrayLike, what: str) -> Array:
    return _per(value, 3, what)


# The motions ------------------------------------------------------------------------------------


class TorqueMotion:
    """What every torque motion shares: its interface, a duration, its output's shaping, and a
    stream of targets for those that take one (:meth:`update`). A subclass gives :meth:`_begin`
    (at the start) and :meth:`_law` (the torque each cycle, before shaping)."""

    command_interface = JOINT_TORQUE
    #: the stream targets this motion takes (kinds of :class:`~robohal.motion.servo.ServoTarget`)
    takes: tuple[str, ...] = ()
    #: whether a torque past a joint's limit is scaled back (a spring's) rather than refused (one asked for)
    saturates = True

    def __init__(self, duration: float | None) -> None:
        if duration is not None:
            duration = spatial.as_number(duration, "duration")
            if not (math.isfinite(duration) and duration > 0):
                raise InvalidArgument(f"duration is a positive number of seconds (or None: until stopped), got {duration!r}")
        self.duration = duration
        self._lock = threading.Lock()
        self._pending = None
        self._ended = False

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # At the call --------------------------------------------------------------------------------

    def check(self, model: Kinematics, limits: TorqueLimits) -> None:
        """Raise if this motion cannot run on a robot of ``model`` with ``limits`` (at the call,
        before anything is sent)."""
        if limits.dof != model.dof:
            raise InvalidArgument(f"the robot's torque limits are for {limits.dof} joints, its model has {model.dof}")

    # Anyone's calls -----------------------------------------------------------------------------

    def update(self, target) -> bool:
        """A stream's newest target (a :class:`~robohal.motion.servo.ServoTarget`), taken at the next
        cycle; safe from any thread. False once the motion has ended, or when it follows no stream
        (then the stream's own motion takes over from it). Raises
        :class:`~robohal.errors.InvalidArgument` for a target of a kind it cannot follow."""
        if not self.takes:
            return False
        if target.kind not in self.takes:
            raise InvalidArgument(f"{type(self).__name__} follows no {target.kind} stream; it takes"
                                  f" {' and '.join(self.takes)} targets")
        if target.velocity is not None or target.duration is not None:
            raise InvalidArgument(f"{type(self).__name__} follows positions alone: its equilibrium moves to each"
                                  " through its smoothing filter (no velocity, acceleration or duration)")
        with self._lock:
            if self._ended:
                return False
            self._pending = target
            return True

    # The executor's calls -------------------------------------------------------------------------

    def start(self, state: RobotState, torque: Array, model: Kinematics, period: float, *,
              terms: ModelTerms, limits: TorqueLimits) -> None:
        """Called once, with the measured state and the torque last sent (Nm: the law starts
        from it, so its torque is continuous across a take-over)."""
        self.check(model, limits)
        self._model, self._period, self._limits = model, float(period), limits
        self._last = np.array(torque, dtype=np.float64)
        self._left = None if self.duration is None else max(round(self.duration / period), 1)
        # per joint, as the shaping kernel reads them: the cap a spring is scaled to, the most a cycle may change
        self._caps = array("d", (limits.torque * TORQUE_SHARE).tolist())
        self._steps = array("d", (limits.rate * (period * RATE_SHARE)).tolist())
        self._begin(state, terms)

    def step(self, state: RobotState, terms: ModelTerms, torque: Array | None = None) -> Array | None:
        """The joint torques (Nm) for this cycle, or None when the motion is over. ``torque``: the
        torque the robot applies now, which this cycle's is ramped from (None: this motion's last)."""
        if self._left is not None:
            if self._left <= 0:
                self.end()
                return None
            self._left -= 1
        if self._pending is not None:
            with self._lock:
                target, self._pending = self._pending, None
            if target is not None:
                self._take(target)
        last = self._last if torque is None else torque
        tau = np.array(_kernels.shaped_torque(self._law(state, terms), last, self._caps, self._steps, self.saturates))
        self._last = tau
        return tau

    def end(self) -> None:
        """Take no more stream targets (the motion is over, or its executor ends it)."""
        with self._lock:
            self._ended = True

    def reference(self) -> Array | None:
        """The joints (rad) the motion pulls toward, recorded as its commanded joints; None: none."""
        return None

    # Subclasses ---------------------------------------------------------------------------------

    def _begin(self, state: RobotState, terms: ModelTerms) -> None:
        pass

    def _law(self, state: RobotState, terms: ModelTerms) -> list[float]:
        raise NotImplementedError

    def _take(self, target) -> None:
        pass

    def _flange(self, q: list[float]) -> tuple[tuple, list]:
        """The flange frame as (x, y, z, p) columns and its Jacobian as 6 rows (the kernels' form)."""
        lists = getattr(self._model, "frame_and_jacobian_lists", None)
        if callable(lists):
            return lists(q)
        pose, jacobian = pose_and_jacobian(self._model, np.array(q))
        return tuple(pose[:3, k].tolist() for k in range(4)), jacobian.tolist()


class JointImpedance(TorqueMotion):
    """A spring and damper per joint toward an equilibrium:
    ``tau = K (q_eq - q) + D (dq_eq - dq) + C(q, dq) dq + torque``.

    ``stiffness`` (Nm/rad) and ``damping`` (Nm s/rad) are one number or one per joint; without
    ``damping`` each joint is critically damped for its own inertia at the start
    (``2 sqrt(K_i M_ii)``). ``target``: the equilibrium (rad), else where the arm is measured at
    the start; :meth:`robohal.Robot.servo` moves it while the motion runs. ``torque``: a constant
    joint torque (Nm) on top. ``smoothing`` (s): see the module docstring. ``duration`` (s):
    None runs until stopped, taken over or ended by a reaction."""

    takes = ("joints",)

    def __init__(self, stiffness: ArrayLike = JOINT_STIFFNESS, damping: ArrayLike | None = None, *,
                 target: ArrayLike | None = None, torque: ArrayLike | None = None, smoothing: float = SMOOTHING,
                 duration: float | None = None) -> None:
        super().__init__(duration)
        self.stiffness = spatial.as_finite(stiffness, "stiffness")
        self.damping = None if damping is None else spatial.as_finite(damping, "damping")
        self.target = None if target is None else spatial.as_finite(target, "target joints")
        self.torque = None if torque is None else spatial.as_finite(torque, "torque")
        self.smoothing = _smoothing(smoothing)

    def check(self, model: Kinematics, limits: TorqueLimits) -> None:
        super().check(model, limits)
        dof = model.dof
        _per(self.stiffness, dof, "stiffness")
        if self.damping is not None:
            _per(self.damping, dof, "damping")
        if self.target is not None:
            if self.target.shape != (dof,):
                raise InvalidArgument(f"target must have {dof} joints, got shape {self.target.shape}")
            model.check_joints(self.target, "target")
        if self.torque is not None:
            _applied_within(self.torque, limits, "torque")

    def _begin(self, state: RobotState, terms: ModelTerms) -> None:
        dof = self._model.dof
        stiffness = _per(self.stiffness, dof, "stiffness")
        if self.damping is None:
            damping = 2.0 * np.sqrt(stiffness * np.maximum(np.diag(terms.mass()), MIN_INERTIA))
        else:
            damping = _per(self.damping, dof, "damping")
        self._k, self._d = array("d", stiffness.tolist()), array("d", damping.tolist())
        # from where the arm is, filtered to the target: no spring torque jumps at the start
        self._q_eq = state.q.tolist()  # (lists: the kernel moves it in place)
        self._goal = list(self._q_eq) if self.target is None else self.target.tolist()
        self._share = filter_share(self.smoothing, self._period)
        self._bias = self.torque

    def _take(self, target) -> None:
        self._goal = self._model.limits.clip(target.check(self._model.dof).value).tolist()

    def _law(self, state: RobotState, terms: ModelTerms) -> list[float]:
        extra = terms.coriolis() if self._bias is None else terms.coriolis() + self._bias
        # one cycle of the equilibrium's filter, and the spring and damper toward it (damping the
        # joints toward the velocity it moves at: a jump without smoothing has none)
        return _kernels.joint_impedance(self._k, self._d, self._q_eq, self._goal, self._share, self._period,
                                        state.q, state.dq, extra)

    def reference(self) -> Array | None:
        return np.array(self._q_eq)


class CartesianImpedance(TorqueMotion):
    """A spring and damper at the flange toward an equilibrium pose, through the Jacobian, with a
    joint posture held in its nullspace:
    ``tau = J^T (K e - D v + wrench) + N (k_n (posture - q) - d_n dq) + C(q, dq) dq``,
    ``e`` the pose error (m, and a rotation vector in rad, base frame), ``v = J dq`` the flange's
    twist, ``N`` the projection onto the joint motions that leave the flange still.

    ``translational_stiffness`` (N/m) and ``rotational_stiffness`` (Nm/rad) are one number or one
    per base axis; ``damping_ratio`` sets the damping along each axis from the flange's inertia
    there at the start (1: critical). ``nullspace_stiffness`` (Nm/rad) pulls the redundant joints
    toward ``posture`` (rad; else the joints at the start). ``target``: the equilibrium pose
    ((4, 4), base frame), else where the flange is measured at the start;
    :meth:`robohal.Robot.servo_pose` moves it while the motion runs (and :meth:`robohal.Robot.servo`
    too: joints set the pose through the model, and the posture). ``wrench`` (N, Nm, base frame):
    a constant wrench the flange applies on top, to press or to carry. The spring's stretch is
    capped at ``max_error`` (m, rad). ``smoothing`` and ``duration`` as for :class:`JointImpedance`."""

    takes = ("pose", "joints")

    def __init__(self, translational_stiffness: ArrayLike = TRANSLATIONAL_STIFFNESS,
                 rotational_stiffness: ArrayLike = ROTATIONAL_STIFFNESS, *, damping_ratio: float = 1.0,
                 nullspace_stiffness: float = NULLSPACE_STIFFNESS, posture: ArrayLike | None = None,
                 target: ArrayLike | None = None, wrench: ArrayLike | None = None, max_error: tuple[float, float] = MAX_POSE_ERROR,
                 smoothing: float = SMOOTHING, duration: float | None = None) -> None:
        super().__init__(duration)
        self.stiffness = np.concatenate([_three(translational_stiffness, "translational_stiffness"),
                                         _three(rotational_stiffness, "rotational_stiffness")])
        self.damping_ratio = float(_per(damping_ratio, 1, "damping_ratio")[0])
        self.nullspace_stiffness = float(_per(nullspace_stiffness, 1, "nullspace_stiffness")[0])
        self.posture = None if posture is None else spatial.as_finite(posture, "posture")
        self.target = None if target is None else spatial.as_pose(target, "target pose")
        self.wrench = None if wrench is None else spatial.as_finite(wrench, "wrench", last=(6,))
        self.max_error = tuple(_per(max_error, 2, "max_error", positive=True).tolist())
        self.smoothing = _smoothing(smoothing)

    def check(self, model: Kinematics, limits: TorqueLimits) -> None:
        super().check(model, limits)
        if self.posture is not None:
            if self.posture.shape != (model.dof,):
                raise InvalidArgument(f"posture must have {model.dof} joints, got shape {self.posture.shape}")
            model.check_joints(self.posture, "posture")

    def _begin(self, state: RobotState, terms: ModelTerms) -> None:
        pose, jacobian = pose_and_jacobian(self._model, state.q)
        mass = terms.mass()
        damping = 2.0 * self.damping_ratio * np.sqrt(self.stiffness * cartesian_inertia(jacobian, mass))
        push = np.zeros(6) if self.wrench is None else self.wrench
        self._gains = array("d", np.concatenate([self.stiffness, damping, push]).tolist())
        self._null_damping = array("d", (2.0 * np.sqrt(self.nullspace_stiffness * np.maximum(np.diag(mass), MIN_INERTIA))).tolist())
        # the equilibrium's rows and its goal's, as the kernels read them: from where the flange is,
        # filtered to the target (as for joints)
        self._rows = pose.tolist()
        self._goal_rows = self._rows if self.target is None else self.target.tolist()
        self._moving = self.target is not None  # whether the equilibrium is on its way to a new target
        self._twist = [0.0] * 6
        self._posture = np.array(state.q if self.posture is None else self.posture, dtype=np.float64).tolist()
        self._share = filter_share(self.smoothing, self._period)

    def _take(self, target) -> None:
        self._moving = True
        if target.kind == "pose":
            self._goal_rows = target.value.tolist()
            return
        q = self._model.limits.clip(target.check(self._model.dof).value)
        self._goal_rows = self._model.forward(q).tolist()
        self._posture = q.tolist()

    def reference_pose(self) -> Array:
        """The equilibrium pose the flange is pulled toward now ((4, 4), base frame)."""
        return np.array(self._rows)

    def _law(self, state: RobotState, terms: ModelTerms) -> list[float]:
        if self._moving:
            self._follow()
        q = state.q.tolist()
        frame, jacobian = self._flange(q)
        return _kernels.cartesian_impedance(frame, jacobian, q, state.dq, self._rows, self._twist, self._gains,
                                            self.max_error[0], self.max_error[1], terms.coriolis(),
                                            self._posture, self.nullspace_stiffness, self._null_damping)

    def _follow(self) -> None:
        """One cycle of the equilibrium's filter toward the newest target, with its twist (a kernel)."""
        self._rows, self._twist, arrived = _kernels.pose_filter(self._goal_rows, self._rows, self._share, self._period)
        self._moving = not arrived


class AppliedTorque(TorqueMotion):
    """Joint torques (Nm) on top of the robot's gravity compensation, with the Coriolis torques
    and an optional joint ``damping`` (Nm s/rad): ``tau = torque + C(q, dq) dq - damping dq``. The
    torque ramps up at the rate limit from what was sent before; a torque past a joint's limit is
    refused at the call, and one the damping would push past it when it would be sent."""

    saturates = False

    def __init__(self, torque: ArrayLike, *, damping: ArrayLike = 0.0, duration: float | None = None) -> None:
        super().__init__(duration)
        self.torque = spatial.as_finite(torque, "torque")
        self.damping = spatial.as_finite(damping, "damping")

    def check(self, model: Kinematics, limits: TorqueLimits) -> None:
        super().check(model, limits)
        _applied_within(self.torque, limits, "torque")
        _per(self.damping, model.dof, "damping")

    def _begin(self, state: RobotState, terms: ModelTerms) -> None:
        self._d = _per(self.damping, self._model.dof, "damping")

    def _law(self, state: RobotState, terms: ModelTerms) -> list[float]:
        return (self.torque + terms.coriolis() - self._d * state.dq).tolist()


class AppliedWrench(TorqueMotion):
    """A wrench (fx, fy, fz, tx, ty, tz: N, Nm, base frame) the flange applies, through the
    Jacobian, on top of the robot's gravity compensation, with the Coriolis torques and an optional
    joint ``damping`` (Nm s/rad). It ramps up at the rate limit; a joint torque past its limit is
    refused when it would be sent."""

    saturates = False

    def __init__(self, wrench: ArrayLike, *, damping: ArrayLike = 0.0, duration: float | None = None) -> None:
        super().__init__(duration)
        self.wrench = spatial.as_finite(wrench, "wrench", last=(6,))
        self.damping = spatial.as_finite(damping, "damping")

    def check(self, model: Kinematics, limits: TorqueLimits) -> None:
        super().check(model, limits)
        _per(self.damping, model.dof, "damping")

    def _begin(self, state: RobotState, terms: ModelTerms) -> None:
        self._d = _per(self.damping, self._model.dof, "damping")
        self._gains = array("d", [0.0] * 12 + self.wrench.tolist())  # no spring, no damper: the wrench alone

    def _law(self, state: RobotState, terms: ModelTerms) -> list[float]:
        q = state.q.tolist()
        frame, jacobian = self._flange(q)
        extra = (terms.coriolis() - self._d * state.dq).tolist()
        return _kernels.cartesian_impedance(frame, jacobian, q, state.dq.tolist(), _NO_POSE, _STILL, self._gains,
                                            math.inf, math.inf, extra, q, 0.0, array("d", [0.0] * len(q)))


class Teach(TorqueMotion):
    """Hand guiding: the arm floats under the robot's gravity compensation (with the Coriolis
    torques), so a hand moves it freely. ``damping`` (Nm s/rad, one number or one per joint) makes
    it feel viscous; ``locked`` names the flange's axes held where they were at the start (of
    ``"x"``, ``"y"``, ``"z"`` for its position along the base axes and ``"rx"``, ``"ry"``, ``"rz"``
    for its rotation about them), by a stiff spring (:data:`LOCK_STIFFNESS`), critically damped."""

    def __init__(self, *, damping: ArrayLike = 0.0, locked: str | tuple[str, ...] = (),
                 duration: float | None = None) -> None:
        super().__init__(duration)
        self.damping = spatial.as_finite(damping, "damping")
        names = (locked,) if isinstance(locked, str) else tuple(locked)
        unknown = [name for name in names if name not in AXES]
        if unknown:
            raise InvalidArgument(f"locked axes are among {', '.join(AXES)}, got {', '.join(map(repr, unknown))}")
        self.locked = tuple(dict.fromkeys(names))

    def check(self, model: Kinematics, limits: TorqueLimits) -> None:
        super().check(model, limits)
        _per(self.damping, model.dof, "damping")

    def _begin(self, state: RobotState, terms: ModelTerms) -> None:
        self._d = _per(self.damping, self._model.dof, "damping")
        if self.locked:
            pose, jacobian = pose_and_jacobian(self._model, state.q)
            mask = np.array([axis in self.locked for axis in AXES], dtype=np.float64)
            stiffness = np.repeat(LOCK_STIFFNESS, 3) * mask
            damping = 2.0 * np.sqrt(stiffness * cartesian_inertia(jacobian, terms.mass()))
            self._gains = array("d", np.concatenate([stiffness, damping, np.zeros(6)]).tolist())
            self._hold = pose.tolist()
            self._no_null = array("d", [0.0] * self._model.dof)

    def _law(self, state: RobotState, terms: ModelTerms) -> list[float]:
        extra = terms.coriolis() - self._d * state.dq
        if not self.locked:
            return extra.tolist()
        q = state.q.tolist()
        frame, jacobian = self._flange(q)
        return _kernels.cartesian_impedance(frame, jacobian, q, state.dq.tolist(), self._hold, _STILL, self._gains,
                                            math.inf, math.inf, extra.tolist(), q, 0.0, self._no_null)


#: an equilibrium and its twist for the laws that have no spring (the kernel reads them, the zero gains ignore them)
_NO_POSE = np.eye(4).tolist()
_STILL = [0.0] * 6


def _smoothing(value: float) -> float:
    smoothing = spatial.as_number(value, "smoothing")
    if not (math.isfinite(smoothing) and smoothing >= 0):
        raise InvalidArgument(f"smoothing is a time constant in seconds (0 or more), got {value!r}")
    return float(smoothing)


def _applied_within(torque: Array, limits: TorqueLimits, what: str) -> None:
    """Refuse an applied joint torque past a joint's limit (at the call)."""
    if torque.shape != (limits.dof,):
        raise InvalidArgument(f"{what} must have {limits.dof} values, got shape {torque.shape}")
    over = np.abs(torque) > limits.torque
    if over.any():
        joint = int(np.argmax(over))
        raise LimitViolation(f"{what}: joint {joint + 1} would be asked {torque[joint]:.4g} Nm, beyond its limit of"
                             f" {limits.torque[joint]:.4g} Nm; nothing was sent",
                             joint=joint, quantity="torque", value=float(torque[joint]),
                             limit=float(limits.torque[joint]))
