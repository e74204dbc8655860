"""The simulated Franka arm: its joint controller, forward and inverse kinematics,
and the robot's own checks on the command stream, with libfranka's error names.

One module serves both the FCI protocol server (:mod:`.simulator`) and the
pylibfranka-compatible stubs (:mod:`.stubs`): both feed it command records in
the wire format and send out the state record it fills, once per millisecond.

What the robot reports: ``q_d``, ``dq_d``, ``ddq_d`` and ``O_T_EE_d`` are the
desired motion taken from the commands (in Idle and after a reflex the robot
holds the last desired position); ``q``, ``dq`` and ``O_T_EE`` are measured on a
joint-controller model that follows ``q_d`` with a small lag, a residual static
error and measurement noise, as a real arm does (``ideal=True`` makes it track
perfectly, for tests that need exact figures).

What the robot checks (Franka's FCI documentation, "Control Interface
Specification and Robot Limits", and the meaning of each error in libfranka's
``include/franka/errors.h``):

* joint position / velocity generators: the commanded positions (or velocities)
  and their finite-difference velocity, acceleration and jerk at 1 ms inside the
  limits, the velocity also under the FR3's position-based curve.
* Cartesian pose / velocity generators: a proper transformation matrix; the
  flange's translational and rotational velocity, acceleration and jerk; the
  elbow (joint 3 and the side of joint 4); and, through the robot's own inverse
  kinematics, the joint limits, as the ``cartesian_motion_generator_joint_*``
  errors.
* torque interface: the rate of the commanded torque, and the measured torque's range (see
  :meth:`SimulatedRobot._apply`); the arm moves under the commanded torque on its rigid-body
  dynamics with friction (:mod:`.dynamics`), the robot compensating gravity itself.
* collisions: the external torques and wrench the robot estimates against the thresholds a client
  set (:mod:`.collision`): ``joint_reflex`` and ``cartesian_reflex``.
* a motion starts where the robot stands and ends at rest (checked through the
  documented limits, see :meth:`SimulatedRobot._finish`).
* communication: more than ``max_missed`` cycles in a row without a command. A
  cycle whose command does not come in time is filled by the robot at constant
  acceleration, as the FCI does (see :meth:`SimulatedRobot._fill`).

A violation puts the robot in Reflex with every error the command violated (the
robot reports a set of errors); only automatic error recovery returns it to Idle.

What it measures of torques: ``tau_J`` is the link-side torque (in torque control what the drives
pass to the links, :mod:`.dynamics`; under the robot's own joint controller the torque that moves
the links along the tracked motion), ``tau_J_d`` the desired torque without gravity (the client's
command in torque control), ``dtau_J`` the change of ``tau_J`` per second, and the external torques
``tau_ext_hat_filtered`` and wrench ``O_F_ext_hat_K`` / ``K_F_ext_hat_K`` the flange meets (see
:data:`ESTIMATE_SIGN`), with the contact and collision flags (:mod:`.collision`).

Contact (``contact=(height, stiffness)``, the simulator's ``--contact``): a plane that pushes
back on the flange below it (see :class:`Contact`); :meth:`SimulatedRobot.push` puts a hand on
the flange. In torque control both move the arm.
"""

from __future__ import annotations

import math
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import wire
from .async_motion import AsyncJointMotion
from .collision import CollisionBehavior
from .dynamics import ArmDynamics, Cycle
from .facts import ELBOW_FLIP, READY_Q, ArmFacts, arm_facts, dh_forward, dh_pose_and_jacobian, joint_limits
from .wire import MoveController, MoveGenerator, MoveStatus, RobotMode, StateController, StateGenerator

PERIOD = 0.001  # s: the robot's control cycle (FCI documentation: 1 kHz)
# Our choice: relative slack on every rate limit. The robot is checked in float64 as the client
# computes, and a profile planned exactly at a limit must pass despite round-off.
SLACK = 1e-3
# rad/s: where the end-of-travel curve allows no speed at all, round-off still passes
# (libfranka's rate_limiting.h kLimitEps, the margin its own limiter keeps from the limits).
END_TOLERANCE = 1e-3
# libfranka's control_tools.h isHomogeneousTransformation (kOrthonormalThreshold): how far a row or
# column norm of the rotation may sit from 1; its bottom row must be exactly (0, 0, 0, 1).
ORTHONORMAL_THRESHOLD = 1e-5
# Our choice (no public figure): command cycles in a row without a command before
# communication_constraints_violation; tolerant enough for a loaded CI machine.
DEFAULT_MAX_MISSED = 20
# s: how long past its time a tick waits for the command of a client that has the state to answer.
# Our choice. The robot's clock never waits, but this host is no real-time machine: it runs the
# client and the simulator on a general-purpose kernel, where either wakes late now and then
# (measured on an idle two-core machine: 2-3 % of ticks more than 0.5 ms late; a CI run here met a
# control process held up for over 5 ms), which a real-time client beside a real robot does not.
# Waiting keeps that jitter out of the robot. A command later than this, a state lost on the way
# (--loss), a command injected as late (LATE N) or a client that stopped answering is a lost
# cycle, which the robot fills as the FCI does (SimulatedRobot._fill); the stubs keep the same rule.
COMMAND_WAIT = 0.02
# How far a motion's first command may lie from what the robot holds (q_d, O_T_EE_d) and be
# taken as its start. Franka publishes no figure (errors.h: start_pose_invalid means "too far from
# the initial one"). The examples Franka ships for real arms start from the *measured* pose:
# libfranka's C++ examples from robot_state.q and O_T_EE (through the 100 Hz low-pass filter of
# robot.control, which keeps 39 % of the offset), its Python examples from q and O_T_EE unfiltered
# (pylibfranka 0.21, example_common.MotionGenerator, cartesian_pose_example.py). So a real arm takes
# a first command off q_d by its rest error; franka_ros2 #122 reports one refusing a first command
# at the measured q, an arm whose rest error then passed the tolerance. Our choice: five times the
# simulated arm's largest rest error (about 1e-4 rad per joint: STATIC_ERROR plus noise), and at
# the flange what that error makes over the arm's reach (about 2e-4 m and rad). Further off is a
# step no robot takes from rest: start_pose_invalid. A first command within it is the motion's
# start: the robot holds it from rest, and the limits apply from there.
START_POSE_TOLERANCE = 5e-4  # rad per joint
START_POSE_TOLERANCE_CARTESIAN = (1e-3, 1e-3)  # m, rad at the flange
SUCCESS_WINDOW = 100  # our choice: cycles over which control_command_success_rate is reported
# What the robot reports as q_d once a motion has ended (finished, stopped, a reflex) and at rest
# after start: Franka documents none (libfranka's robot_state.h: q_d is the "Desired joint
# position"; its examples start each motion from the measured q). HOLD_COMMAND: the last desired
# position, as this simulator always did; HOLD_MEASURED: the robot holds the arm where it measures
# it and reports that, as one third-party FCI simulator does. Both are faithful to what is
# documented; `--hold` picks one, so that clients are tested against both.
HOLD_COMMAND = "command"
HOLD_MEASURED = "measured"
HOLDS = (HOLD_COMMAND, HOLD_MEASURED)
GRAVITY = (0.0, 0.0, -9.81)
# The sign of the reported external torques and wrench (tau_ext_hat_filtered, O_F_ext_hat_K,
# K_F_ext_hat_K): libfranka's robot_state.h documents "Forces applied by the robot to the
# environment are positive, while forces applied by the environment on the robot are negative"
# (libfranka issue 26 shows it on a real arm), so the robot reports minus what the world applies
# to the flange; robohal's backend turns it back (control.py: RobotState.wrench is the force on
# the flange).
ESTIMATE_SIGN = -1.0
# Our choice: the power the client's torques put into the arm is not checked. errors.h has
# power_limit_violation ("commanded values would result in exceeding the power limit") but Franka
# publishes no figure; the torque range and rate and the joint velocity limits bound each joint's.

# The joint controller (our model; Franka publishes no tracking figures). Per joint a damped
# second-order loop on q_d with desired-velocity feed-forward:
#     ddq = w^2 (q_d + bias - q) + 2 zeta w (dq_d - dq)
# The feed-forward keeps a constant-speed motion on its path, so the lag is the acceleration's
# ddq_d / w^2 (1.4 mrad at 5 rad/s^2), which is the 1e-5..1e-3 rad seen on franky-sim after a
# motion; zeta 0.8 overshoots a step by 1.5%, and a jerk-limited profile by far less. The loop
# settles in 4 / (zeta w) = 80 ms. ``bias`` is the residual static error of an impedance
# controller against friction and model error (franky-sim: ~3e-5 rad at rest after connect):
# a seeded constant per joint. Noise is white, seeded, of the order of a link-side encoder.
TRACKING_BANDWIDTH = 60.0  # rad/s (w)
TRACKING_DAMPING = 0.8  # zeta
STATIC_ERROR = (2e-5, 8e-5)  # rad: range of |bias| per joint
POSITION_NOISE = 5e-6  # rad, standard deviation of measured q
VELOCITY_NOISE = 2e-4  # rad/s, standard deviation of measured dq

# The robot's inverse kinematics (our choice: damped least squares on the simulator's own DH model,
# independent of any client's model and of robohal's solvers, started from the last q_d; Newton
# steps converge quadratically from one cycle's motion, so a few iterations reach round-off).
IK_DAMPING = 1e-4  # lambda: regularises only near singularities
IK_ITERATIONS = 6
IK_TOLERANCE = 1e-10  # m and rad: residual at which a cycle stops iterating
IK_UNREACHABLE = 1e-6  # m and rad: residual above which the pose cannot be followed from here

JOINT_NAMES = {
    "position": "joint_motion_generator_position_limits_violation",
    "velocity": "joint_motion_generator_velocity_limits_violation",
    "acceleration": "joint_motion_generator_velocity_discontinuity",  # errors.h: the velocity jumps
    "jerk": "joint_motion_generator_acceleration_discontinuity",  # errors.h: the acceleration jumps
}
IK_NAMES = {  # the same checks on the joint motion the robot's IK makes of a Cartesian command
    "position": "cartesian_motion_generator_joint_position_limits_violation",
    "velocity": "cartesian_motion_generator_joint_velocity_limits_violation",
    "acceleration": "cartesian_motion_generator_joint_velocity_discontinuity",
    "jerk": "cartesian_motion_generator_joint_acceleration_discontinuity",
}
CARTESIAN_NAMES = {
    "velocity": "cartesian_motion_generator_velocity_limits_violation",
    "acceleration": "cartesian_motion_generator_velocity_discontinuity",
    "jerk": "cartesian_motion_generator_acceleration_discontinuity",
}
INVALID_FRAME = "cartesian_position_motion_generator_invalid_frame"
ELBOW_LIMIT = "cartesian_motion_generator_elbow_limit_violation"
ELBOW_SIGN = "cartesian_motion_generator_elbow_sign_inconsistent"
START_ELBOW = "cartesian_motion_generator_start_elbow_invalid"


def rates(values: list, period: float) -> list:
    """The finite-difference derivatives (first, second, ...) at the newest of values one cycle
    apart, as many as the values allow."""
    level, out = values, []
    for _ in range(len(values) - 1):
        level = [(level[i + 1] - level[i]) / period for i in range(len(level) - 1)]
        out.append(level[-1])
    return out


class CommandHistory:
    """A command stream as the robot executes it: one value per cycle, the cycles it filled
    included (see :meth:`SimulatedRobot._fill`); the last three, newest last."""

    def __init__(self, value, period: float = PERIOD) -> None:
        self.period = period
        self.reset(value)

    def reset(self, value) -> None:
        self.executed = [value] * 3

    def rates(self, value, samples: int = 4) -> list:
        """The derivatives with ``value`` next, over the last ``samples`` values."""
        return rates([*self.executed[1 - samples:], value], self.period)

    def record(self, value) -> None:
        self.executed = [*self.executed[-2:], value]

    def derivatives(self) -> list:
        """The first two derivatives at the newest value."""
        return rates(self.executed, self.period)

    def continued(self, order: int):
        """The next value at constant acceleration: for positions (``order`` 3) a zero third
        difference, for velocities (``order`` 2) a zero second difference."""
        h = self.executed
        return 3 * h[-1] - 3 * h[-2] + h[-3] if order == 3 else 2 * h[-1] - h[-2]


class CommandChecker:
    """Finite-difference checks on a stream of joint positions or velocities (1 ms apart).

    ``names`` maps each check (position, velocity, acceleration, jerk) to its libfranka error.
    """

    def __init__(self, arm: ArmFacts, period: float = PERIOD, names: dict[str, str] = JOINT_NAMES) -> None:
        self.limits = joint_limits(arm)
        self.lower = np.array(arm.lower)
        self.upper = np.array(arm.upper)
        self.acceleration = np.array(arm.acceleration) * (1 + SLACK)
        self.jerk = np.array(arm.jerk) * (1 + SLACK)
        self.period = period
        self.names = names
        self.history = CommandHistory(np.zeros(7), period)

    def reset(self, value: np.ndarray) -> None:
        """Start from rest at ``value`` (the desired position the robot holds, or zero velocity)."""
        self.history.reset(value.copy())

    def derivatives(self) -> list[np.ndarray]:
        return self.history.derivatives()

    def _too_fast(self, v: np.ndarray, q: np.ndarray) -> bool:
        """Whether a velocity breaks the limits at position ``q``: the rectangular ones, and
        near the ends of travel the arm's position-based curve (FCI documentation)."""
        low, high = self.limits.velocity_bounds(np.clip(q, self.lower, self.upper))
        return bool(((v > high * (1 + SLACK) + END_TOLERANCE) | (v < low * (1 + SLACK) - END_TOLERANCE)).any())

    def _rates(self, v: np.ndarray | None, a: np.ndarray, j: np.ndarray, q: np.ndarray) -> list[str]:
        # The absolute margins here and on positions (1e-9 rad) are our choice: round-off only.
        errors = []
        if v is not None and self._too_fast(v, q):
            errors.append(self.names["velocity"])
        if (np.abs(a) > self.acceleration + 1e-6).any():
            errors.append(self.names["acceleration"])
        if (np.abs(j) > self.jerk + 1e-3).any():
            errors.append(self.names["jerk"])
        return errors

    def _outside(self, q: np.ndarray) -> bool:
        return bool((q < self.lower - 1e-9).any() or (q > self.upper + 1e-9).any())

    def position_errors(self, q_c: np.ndarray) -> list[str]:
        """Every error a joint-position command violates (nothing is recorded)."""
        if not np.isfinite(q_c).all():
            return [self.names["position"]]
        errors = [self.names["position"]] if self._outside(q_c) else []
        v, a, j = self.history.rates(q_c)
        return errors + self._rates(v, a, j, q_c)

    def check_position(self, q_c: np.ndarray) -> tuple[str, ...]:
        """The errors a joint-position command raises; none: it is recorded."""
        errors = self.position_errors(q_c)
        if not errors:
            self.history.record(q_c.copy())
        return tuple(errors)

    def check_velocity(self, dq_c: np.ndarray, q: np.ndarray) -> tuple[str, ...]:
        """The errors a joint-velocity command at position ``q`` raises; none: it is recorded."""
        if not np.isfinite(dq_c).all():
            return (self.names["velocity"],)
        a, j = self.history.rates(dq_c, samples=3)
        errors = self._rates(dq_c, a, j, q)
        if not errors:
            self.history.record(dq_c.copy())
        return tuple(errors)

    def check_filled(self, value: np.ndarray, q: np.ndarray, velocity: np.ndarray) -> tuple[str, ...]:
        """The errors of a value the robot filled in (position and velocity: a constant-acceleration
        continuation changes nothing else); none: it is recorded."""
        errors = [self.names["position"]] if self._outside(q) else []
        if self._too_fast(velocity, q):
            errors.append(self.names["velocity"])
        if not errors:
            self.history.record(value.copy())
        return tuple(errors)


def rotation_vector(rotation: np.ndarray) -> np.ndarray:
    """The rotation vector (axis * angle) of a rotation matrix, accurate for small angles."""
    s = 0.5 * np.array([rotation[2, 1] - rotation[1, 2], rotation[0, 2] - rotation[2, 0],
                        rotation[1, 0] - rotation[0, 1]])
    c = 0.5 * (rotation[0, 0] + rotation[1, 1] + rotation[2, 2] - 1.0)
    norm = math.sqrt(s @ s)
    if norm < 1e-12:
        return s  # angle ~ norm: the first-order term is exact to round-off
    return s * (np.arctan2(norm, c) / norm)


def rotation_from_vector(vector: np.ndarray) -> np.ndarray:
    """Rodrigues' formula: the rotation matrix of a rotation vector."""
    angle = float(np.linalg.norm(vector))
    k = np.array([[0.0, -vector[2], vector[1]], [vector[2], 0.0, -vector[0]], [-vector[1], vector[0], 0.0]])
    if angle < 1e-12:
        return np.eye(3) + k
    k /= angle
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * (k @ k)


def pose_error(target: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """(translation, rotation vector) taking ``pose`` to ``target``, in the base frame."""
    return np.concatenate((target[:3, 3] - pose[:3, 3], rotation_vector(target[:3, :3] @ pose[:3, :3].T)))


def proper_transform(matrix: np.ndarray) -> bool:
    """libfranka's isHomogeneousTransformation (control_tools.h): bottom row exactly (0, 0, 0, 1),
    rows and columns of the rotation unit-norm within :data:`ORTHONORMAL_THRESHOLD`."""
    if not np.isfinite(matrix).all() or not (matrix[3] == (0.0, 0.0, 0.0, 1.0)).all():
        return False
    rotation = matrix[:3, :3]
    squares = rotation * rotation
    norms = np.sqrt(np.concatenate((squares.sum(axis=0), squares.sum(axis=1))))
    # A mirror passes libfranka's norm test; the FCI documentation asks for a *proper* transform.
    return bool((np.abs(norms - 1.0) <= ORTHONORMAL_THRESHOLD).all()) and np.linalg.det(rotation) > 0


def nearest_rotation(rotation: np.ndarray) -> np.ndarray:
    """The rotation nearest a nearly orthonormal ``rotation`` (a client's float32 round trip
    leaves ~1e-7): two Newton steps of the polar decomposition, each squaring the error."""
    for _ in range(2):
        rotation = 1.5 * rotation - 0.5 * rotation @ rotation.T @ rotation
    return rotation


def elbow_sign(q: np.ndarray) -> float:
    """elbow[1]: on which side of the stretched arm joint 4 is (FCI documentation, q_elbow-flip)."""
    return 1.0 if q[3] > ELBOW_FLIP else -1.0


class CartesianChecker:
    """Finite-difference checks on the flange's twist (1 ms apart): the norms of its translational
    and rotational velocity, acceleration and jerk against the Cartesian limits (FCI
    documentation); norms, as libfranka's rate_limiting.h limits the Cartesian rates."""

    def __init__(self, arm: ArmFacts, period: float = PERIOD) -> None:
        self.limits = np.array([arm.translation, arm.rotation]) * (1 + SLACK)  # rows: translation, rotation
        self._limits = {name: self.limits[:, i] + 1e-6 for i, name in enumerate(("velocity", "acceleration", "jerk"))}
        self.history = CommandHistory(np.zeros(6), period)

    def reset(self) -> None:
        self.history.reset(np.zeros(6))

    def _errors(self, twist: np.ndarray, acceleration: np.ndarray, jerk: np.ndarray) -> list[str]:
        errors = []
        for name, value in (("velocity", twist), ("acceleration", acceleration), ("jerk", jerk)):
            limit = self._limits[name]
            if math.sqrt(value[:3] @ value[:3]) > limit[0] or math.sqrt(value[3:] @ value[3:]) > limit[1]:
                errors.append(CARTESIAN_NAMES[name])
        return errors

    def errors(self, twist: np.ndarray) -> list[str]:
        """Every Cartesian rate error of the next twist (nothing is recorded)."""
        if not np.isfinite(twist).all():
            return [CARTESIAN_NAMES["velocity"]]
        return self._errors(twist, *self.history.rates(twist, samples=3))

    def record(self, twist: np.ndarray) -> None:
        self.history.record(twist.copy())

    def continued(self) -> np.ndarray:
        """The next twist at constant acceleration."""
        return self.history.continued(2)


class ElbowChecker:
    """The elbow's joint-3 position stream: its range and its rates under the elbow limits (FCI
    documentation, "Elbow" column). libfranka has one error for all of them (errors.h: "would
    move into an elbow limit"): :data:`ELBOW_LIMIT`."""

    def __init__(self, arm: ArmFacts, period: float = PERIOD) -> None:
        self.lower, self.upper = arm.lower[2], arm.upper[2]
        self.velocity, self.acceleration, self.jerk = (np.array(arm.elbow) * (1 + SLACK)).tolist()
        self.history = CommandHistory(0.0, period)

    def reset(self, value: float) -> None:
        self.history.reset(value)

    def errors(self, value: float) -> list[str]:
        if not self.lower - 1e-9 <= value <= self.upper + 1e-9:
            return [ELBOW_LIMIT]
        v, a, j = self.history.rates(value)
        if abs(v) <= self.velocity + END_TOLERANCE and abs(a) <= self.acceleration + 1e-6 and abs(j) <= self.jerk + 1e-3:
            return []
        return [ELBOW_LIMIT]

    def record(self, value: float) -> None:
        self.history.record(float(value))


class JointTracking:
    """The measured side of the arm: the joint-controller model that follows ``q_d``
    (see :data:`TRACKING_BANDWIDTH`), its residual static error and measurement noise."""

    def __init__(self, q_d: np.ndarray, rng: np.random.Generator, ideal: bool) -> None:
        self.ideal = ideal
        self.rng = rng
        low, high = STATIC_ERROR
        self.bias = np.zeros(7) if ideal else rng.uniform(low, high, 7) * rng.choice((-1.0, 1.0), 7)
        self.position = q_d + self.bias  # the arm has been standing: settled on its static error
        self.velocity = np.zeros(7)
        self.acceleration = np.zeros(7)
        self.offset = np.zeros(7)  # see hold_in_place

    def hold_in_place(self, q_d: np.ndarray) -> None:
        """The robot made ``q_d`` its hold where the arm stands (HOLD_MEASURED): friction keeps the
        joints there, so the controller's rest is where they are, not ``q_d`` plus the static error
        (which would creep the arm on by that error at every hold). Our model, until the next motion."""
        self.offset = self.position - q_d - self.bias

    def release(self) -> None:
        """A motion starts: the joints move again, against friction, toward q_d plus the static error."""
        self.offset = np.zeros(7)

    def step(self, q_d: np.ndarray, dq_d: np.ndarray, ddq_d: np.ndarray) -> None:
        """One control cycle toward ``q_d`` (semi-implicit Euler: stable at w dt = 0.06)."""
        if self.ideal:
            self.position, self.velocity, self.acceleration = q_d.copy(), dq_d.copy(), ddq_d.copy()
            return
        w, zeta = TRACKING_BANDWIDTH, TRACKING_DAMPING
        rest = q_d + self.bias + self.offset
        self.acceleration = w * w * (rest - self.position) + 2 * zeta * w * (dq_d - self.velocity)
        self.velocity = self.velocity + self.acceleration * PERIOD
        self.position = self.position + self.velocity * PERIOD

    def follow(self, position: np.ndarray, velocity: np.ndarray, acceleration: np.ndarray) -> None:
        """Torque control moved the arm (:mod:`.dynamics`): the joint controller takes over from there."""
        self.position, self.velocity, self.acceleration = position, velocity, acceleration

    def measured(self) -> tuple[np.ndarray, np.ndarray]:
        if self.ideal:
            return self.position.copy(), self.velocity.copy()
        return (self.position + self.rng.normal(0.0, POSITION_NOISE, 7),
                self.velocity + self.rng.normal(0.0, VELOCITY_NOISE, 7))


def parse_contact(text: str) -> tuple[float, ...]:
    """``"HEIGHT,STIFFNESS[,FRICTION]"`` (m, N/m, friction coefficient) as the simulator's
    ``--contact`` and ``sim_contact=`` take it."""
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        values = ()
    if len(values) not in (2, 3):
        raise ValueError(f"contact is HEIGHT,STIFFNESS[,FRICTION] in m, N/m and a friction coefficient"
                         f" (e.g. 0.3,3000 or 0.3,3000,1), got {text!r}")
    if not (all(math.isfinite(v) for v in values) and values[1] > 0 and (len(values) == 2 or values[2] >= 0)):
        raise ValueError(f"contact needs a finite height, a positive stiffness and a friction coefficient"
                         f" not below 0, got {text!r}")
    return values


SLIDING = 1e-3  # m/s: see Contact.wrench


@dataclass(frozen=True)
class Contact:
    """A plane at ``height`` (m, base frame z) that pushes back on the flange below it with
    ``stiffness`` (N/m) and holds it from sliding with ``friction`` times that force (Coulomb; 0:
    frictionless): the force the robot estimates as its external wrench. Under the robot's own
    joint controller the plane does not stop the arm (its joints keep tracking their command); in
    torque control it does, the arm's dynamics meeting it. A force above the collision behaviour's
    upper threshold stops the robot as a reflex (:mod:`.collision`)."""

    height: float
    stiffness: float
    friction: float = 0.0

    def wrench(self, pose: np.ndarray, twist: np.ndarray | None = None) -> np.ndarray:
        """What the plane pushes on a flange the joint controller holds at ``pose``: its spring, and
        while the flange slides along it (``twist``), friction against the sliding. Our choice: below
        :data:`SLIDING` the friction grows with the speed, so a flange at rest feels none."""
        depth = self.height - float(pose[2, 3])
        wrench = np.zeros(6)
        if depth > 0.0:
            wrench[2] = self.stiffness * depth  # pushing the flange up, along base z
            if self.friction and twist is not None:
                speed = math.hypot(twist[0], twist[1])
                wrench[:2] = -self.friction * wrench[2] * twist[:2] / max(speed, SLIDING)
        return wrench

    def on_arm(self, pose: np.ndarray, twist: np.ndarray, mobility: np.ndarray) -> tuple[np.ndarray, float]:
        """What the plane pushes on an arm that moves (torque control): its spring and a damper that
        makes the arm come to rest on it without bouncing (our choice: critical damping for the arm's
        effective mass along z at the flange, 1 / (J M^-1 J^T)_zz; the plane only pushes, never
        pulls), and the friction force with which it holds the flange (:mod:`.dynamics` solves it)."""
        wrench = self.wrench(pose)
        if wrench[2] > 0.0:
            damping = 2.0 * math.sqrt(self.stiffness / max(float(mobility[2, 2]), 1e-9))
            wrench[2] = max(0.0, wrench[2] - damping * float(twist[2]))
        return wrench, self.friction * wrench[2]


class SimulatedRobot:
    """One simulated arm, advanced one millisecond per :meth:`tick`."""

    def __init__(
        self,
        model_name: str = "franka.fr3",
        forward: Callable[[np.ndarray], np.ndarray] | None = None,
        q0=READY_Q,
        max_missed: int = DEFAULT_MAX_MISSED,
        *,
        ideal: bool = False,
        seed: int | None = None,
        contact: tuple[float, ...] | None = None,
        hold: str = HOLD_COMMAND,
    ) -> None:
        if hold not in HOLDS:
            raise ValueError(f"hold is one of {', '.join(HOLDS)}, not {hold!r}")
        self.hold = hold
        self.model_name = model_name
        self.contact = None if contact is None else Contact(*contact)
        self.hand = np.zeros(6)  # what push() puts on the flange (force, torque; base frame)
        self.arm = arm_facts(model_name)
        self.dynamics = ArmDynamics(model_name)
        self.collision = CollisionBehavior()
        self.forward = forward or dh_forward
        self.max_missed = int(max_missed)
        self.ideal = bool(ideal)
        self.seed = secrets.randbits(32) if seed is None else int(seed)
        self.q_d = np.array(q0, dtype=np.float32).astype(np.float64)  # representable on the wire
        self.dq_d = np.zeros(7)
        self.ddq_d = np.zeros(7)
        self.tracking = JointTracking(self.q_d, np.random.default_rng(self.seed), self.ideal)
        self.q, self.dq = self.tracking.measured()
        if hold == HOLD_MEASURED:  # at rest after start too: the hold is where the arm is measured
            self._hold_measured()
        # What the robot measures of torques (see the module docstring), updated every cycle.
        self.tau_J_d = np.zeros(7)  # in torque control: the client's command in force
        self.tau_ext = np.zeros(7)  # external torque on the joints (J^T wrench)
        self.wrench = np.zeros(6)  # external wrench on the flange, base frame
        self.tau_J = self.dynamics.gravity(self.tracking.position)  # at rest the links hold their weight
        self.dtau_J = np.zeros(7)
        self.pose_c: np.ndarray | None = None  # the Cartesian pose command in force (Cartesian motions)
        self.twist_c = np.zeros(6)
        self.elbow_c: np.ndarray | None = None
        self.mode = RobotMode.IDLE
        self.generator = StateGenerator.IDLE
        self.controller = StateController.JOINT_IMPEDANCE
        self.errors: tuple[str, ...] = ()
        self.last_motion_errors: tuple[str, ...] = ()
        self.message_id = 0
        self.checker = CommandChecker(self.arm)
        self.ik_checker = CommandChecker(self.arm, names=IK_NAMES)
        self.cartesian = CartesianChecker(self.arm)
        self.elbow = ElbowChecker(self.arm)
        self._pending: list[np.ndarray] = []
        self._started = False  # whether the running motion has had its first command
        self._late = 0  # fault injection: commands still to be taken as too late
        self._missed = 0
        self._successes: deque[bool] = deque(maxlen=SUCCESS_WINDOW)
        self._first_command = False
        self._start_sign = -1.0
        self._injected: str | None = None
        self._reported_errors: tuple | None = None  # what the record last carried
        self._pose_cache: dict[bytes, np.ndarray] = {}
        self.async_motion: AsyncJointMotion | None = None  # the robot's own generator, when asked for
        self._ik_last: tuple[bytes, np.ndarray, np.ndarray] | None = None
        self.stats = {"ticks": 0, "move_ticks": 0, "commands": 0, "missed": 0, "filled": 0,
                      "stale": 0, "reflexes": 0, "seed": self.seed}

    # Requests (from TCP or the stubs' API) -----------------------------------------

    @property
    def moving(self) -> bool:
        return self.mode is RobotMode.MOVE

    @property
    def load(self) -> tuple[float, np.ndarray, np.ndarray]:
        """What setLoad said the flange carries: m_load (kg), F_x_Cload (m), I_load (column-major)."""
        return self.dynamics.load

    @load.setter
    def load(self, load) -> None:
        """setLoad: the payload becomes part of the simulated arm, and of the gravity the robot
        compensates (a simulated arm carries what it is told it carries)."""
        mass, center, inertia = float(load[0]), np.asarray(load[1], dtype=np.float64), np.asarray(load[2], dtype=np.float64)
        if not (math.isfinite(mass) and mass >= 0 and np.isfinite(center).all() and np.isfinite(inertia).all()):
            raise ValueError("a load is a mass of at least 0 kg, a centre and an inertia, all finite")
        self.dynamics.set_load(mass, center, inertia)

    @property
    def collision_thresholds(self) -> np.ndarray:
        """setCollisionBehavior's 52 values (:mod:`.collision`)."""
        return self.collision.thresholds

    @collision_thresholds.setter
    def collision_thresholds(self, values) -> None:
        self.collision.set(values)

    def push(self, wrench) -> None:
        """A hand on the flange: the wrench (fx, fy, fz in N, tx, ty, tz in Nm; base frame) it
        applies from the next cycle on, until pushed again (zeros: let go). In torque control it
        moves the arm; under the robot's joint controller the arm holds and the robot feels it."""
        wrench = np.asarray(wrench, dtype=np.float64).reshape(6)
        if not np.isfinite(wrench).all():
            raise ValueError("a push is six finite numbers: fx fy fz (N), tx ty tz (Nm)")
        self.hand = wrench

    def start_motion(self, controller: int, generator: int, asynchronous: bool = False,
                     maximum_velocities=None) -> MoveStatus:
        """A Move request: MOTION_STARTED, or why it is rejected. ``asynchronous``: the robot's own
        generator plans to each joint target the client sends (:mod:`.async_motion`)."""
        if self.mode is RobotMode.REFLEX:
            return MoveStatus.COMMAND_REJECTED_DUE_TO_ACTIVATED_SAFETY_FUNCTIONS
        if self.mode is not RobotMode.IDLE:
            return MoveStatus.COMMAND_NOT_POSSIBLE_REJECTED
        try:
            controller, generator = MoveController(controller), MoveGenerator(generator)
        except ValueError:
            return MoveStatus.INVALID_ARGUMENT_REJECTED
        if generator is MoveGenerator.NONE and controller is not MoveController.EXTERNAL:
            return MoveStatus.COMMAND_NOT_POSSIBLE_REJECTED  # no generator: the client's torques drive
        if asynchronous and generator is not MoveGenerator.JOINT_POSITION:
            # libfranka starts it for joint positions only (Robot::startAsyncJointPositionControl)
            return MoveStatus.INVALID_ARGUMENT_REJECTED
        self.mode = RobotMode.MOVE
        self.generator = {
            MoveGenerator.JOINT_POSITION: StateGenerator.JOINT_POSITION,
            MoveGenerator.JOINT_VELOCITY: StateGenerator.JOINT_VELOCITY,
            MoveGenerator.CARTESIAN_POSITION: StateGenerator.CARTESIAN_POSITION,
            MoveGenerator.CARTESIAN_VELOCITY: StateGenerator.CARTESIAN_VELOCITY,
            MoveGenerator.NONE: StateGenerator.NONE,
        }[generator]
        self.controller = {
            MoveController.JOINT_IMPEDANCE: StateController.JOINT_IMPEDANCE,
            MoveController.CARTESIAN_IMPEDANCE: StateController.CARTESIAN_IMPEDANCE,
            MoveController.EXTERNAL: StateController.EXTERNAL,
        }[controller]
        self.last_motion_errors = ()
        # Every history starts at rest on what the robot holds: q_d (libfranka's examples and
        # franky start their motions from q_d / O_T_EE_c, as the FCI documentation asks).
        self.checker.reset(self.q_d if generator is MoveGenerator.JOINT_POSITION else np.zeros(7))
        self.ik_checker.reset(self.q_d)
        self.cartesian.reset()
        self.elbow.reset(float(self.q_d[2]))
        self._start_sign = elbow_sign(self.q_d)
        cartesian = generator in (MoveGenerator.CARTESIAN_POSITION, MoveGenerator.CARTESIAN_VELOCITY)
        self.pose_c = self._pose(self.q_d).reshape(4, 4, order="F").copy() if cartesian else None
        self.twist_c = np.zeros(6)
        self.elbow_c = None
        self.tau_J_d = np.zeros(7)
        self._pending.clear()
        self._started = False
        self._missed = 0
        self._first_command = True
        self.tracking.release()
        self.async_motion = AsyncJointMotion(self.arm, self.q_d, maximum_velocities) if asynchronous else None
        return MoveStatus.MOTION_STARTED

    def stop_motion(self) -> bool:
        """StopMove: end the running motion where it is (True if one was running)."""
        if not self.moving:
            return False
        self._to_idle()
        return True

    def recover(self) -> None:
        """Automatic error recovery: from Reflex back to Idle, holding (with its brakes shut, the arm
        stays held by them: our choice)."""
        self.errors = ()
        self.collision.reset()
        if self.mode is not RobotMode.OTHER:
            self._to_idle()

    def set_brakes(self, held: bool) -> bool:
        """Desk's gate on the arm (:mod:`.simulated_desk`): with its brakes shut (joints locked, a
        self-test, a safety error) the robot reports the mode Other and refuses a Move as "command
        not possible in the current mode", to which libfranka adds "Did you open the brakes?"
        (libfranka's robot_impl.h commandNotPossibleMsg for kOther; libfranka issue 133). Shutting
        them ends a running motion (our choice: the caller answers its Move Aborted); opening them
        leaves the robot Idle, a reflex's errors cleared with the brakes' cycle (our choice).
        Returns whether a motion was ended."""
        if held == (self.mode is RobotMode.OTHER):
            return False
        moving = self.moving
        if held:
            self._halt()
            self.mode = RobotMode.OTHER
            self.generator = StateGenerator.IDLE
        else:
            self.errors = ()
            self._to_idle()
        return moving

    def inject_late(self, commands: int) -> None:
        """Take the next ``commands`` commands of a running motion as too late (fault injection):
        each is dropped and its cycle filled, as if it had come after its cycle."""
        self._late = max(0, int(commands))

    def inject_reflex(self, name: str) -> None:
        """Make the next tick raise a reflex with libfranka's error ``name`` (fault injection)."""
        if name not in wire.ERROR_INDEX:
            raise ValueError(f"{name!r} is not a libfranka error name")
        self._injected = name

    def receive(self, command: np.ndarray) -> None:
        """A command record arrived (it is applied on the next tick)."""
        if self.moving:
            self._pending.append(command)

    def awaits_command(self) -> bool:
        """Whether a running motion's command for the next cycle (the answer to the last state)
        has yet to come."""
        if self.async_motion is not None:  # targets come at the client's own rate: none is awaited
            return False
        return self.moving and not any(int(c["message_id"]) >= self.message_id for c in self._pending)

    def answer(self, command: np.ndarray) -> None:
        """Receive ``command`` as the answer to the state of this cycle (an in-process client)."""
        command["message_id"] = self.message_id
        self.receive(command)

    # The 1 ms cycle ------------------------------------------------------------------

    def tick(self) -> str | None:
        """Advance one millisecond. Returns ``"finished"`` when the client ended
        its motion, ``"reflex"`` when a check failed, else None."""
        self.message_id += 1
        self.stats["ticks"] += 1
        event = None
        injected, self._injected = self._injected, None
        if injected is not None:
            event = self._reflex(injected)
        torque = False
        if self.moving:
            self.stats["move_ticks"] += 1
            if event is None:
                event = self._async_cycle() if self.async_motion is not None else self._cycle_command()
            torque = self.moving and self.generator is StateGenerator.NONE
        if torque:
            event = self._integrate_torque()
        if not torque or event is not None:
            self.tracking.step(self.q_d, self.dq_d, self.ddq_d)
            self._sense_tracked()
        self.q, self.dq = self.tracking.measured()
        reflexes = self.collision.observe(self.tau_ext, self.wrench)
        if reflexes and event is None and self.moving:
            event = self._reflex(*reflexes)
        return event

    def _cycle_command(self) -> str | None:
        """This cycle's command: the one answering the state of the cycle before. Commands that
        answer older states came too late (their cycles are past) and are dropped; with none in
        time, the robot fills the cycle (see :meth:`_fill`)."""
        pending, self._pending = self._pending, []
        command = None
        for candidate in pending:
            if command is None and int(candidate["message_id"]) >= self.message_id - 1:
                command = candidate
            else:
                self.stats["stale"] += 1
        if command is not None and self._started and self._late:
            self._late -= 1
            self.stats["stale"] += 1
            command = None
        self._successes.append(command is not None)
        if command is None:
            self._missed += 1
            self.stats["missed"] += 1
            if self._missed > self.max_missed:
                return self._reflex("communication_constraints_violation")
            if self._started:
                self.stats["filled"] += 1
                errors = self._fill()
                return self._reflex(*errors) if errors else None
            return None
        self._missed = 0
        self._started = True
        self.stats["commands"] += 1
        return self._apply(command)

    def _async_cycle(self) -> str | None:
        """A cycle of the robot's own generator (:mod:`.async_motion`): the newest command, if any,
        is the target (a client writes them at its own rate, so a cycle without one is no loss);
        one with ``motion_finished`` brakes to rest and ends the motion there."""
        motion = self.async_motion
        assert motion is not None
        pending, self._pending = self._pending, []
        self._successes.append(bool(pending))
        if pending and not motion.stopping:
            command = pending[-1]
            self.stats["commands"] += 1
            if bool(command["motion_generation_finished"]):
                motion.stop()
            elif not motion.target(np.array(command["q_c"], dtype=np.float64)):
                # our choice of name: the robot's own planner cannot take the target
                return self._reflex("joint_via_motion_generator_planning_joint_limit_violation")
        try:
            self.q_d, self.dq_d, self.ddq_d, resting = motion.step()
        except ValueError:
            return self._reflex("joint_via_motion_generator_planning_joint_limit_violation")
        if motion.stopping and resting:
            self._to_idle()
            return "finished"
        return None

    def _fill(self) -> tuple[str, ...]:
        """A cycle no command answers in time; returns the errors of the robot's continuation.

        "When a packet is lost, FCI assumes a constant acceleration model" (libfranka's
        rate_limiting.h, kTolNumberPacketsLost): the robot continues the desired motion at
        constant acceleration. A command belongs to the cycle after the state it answers (it
        carries that state's message_id: libfranka's robot_impl.cpp); a cycle is lost when no
        such command has arrived when the robot takes the cycle's command. The client was
        late (its late command is dropped), or it skipped a state (readOnce returns the
        newest). This simulator reads every datagram that has arrived before each tick, so its
        own lateness on a busy machine loses nothing.

        The filled cycle is part of the desired motion the robot executes and reports (q_d).
        It is checked for position and velocity, the only allowance libfranka makes for a lost
        packet (kJointVelocityLimitsTolerance): a constant-acceleration continuation changes
        nothing else.

        The commands after it are judged against the motion the robot executes, the filled
        cycle in it, as every command is: libfranka's rate limiter limits a command against
        the robot's last commanded values, which after a lost packet are the filled ones, and
        franky plans each cycle from the reported desired state. A client that rejoins its own
        plan instead meets the jump between its plan and the filled cycle (up to four times the
        plan's jerk after one lost cycle), as on the robot, where libfranka's documentation
        names lost packets among the causes of discontinuity errors.
        """
        generator = self.generator
        if generator is StateGenerator.JOINT_POSITION:
            q = self.checker.history.continued(3)
            errors = self.checker.check_filled(q, q, (q - self.q_d) / PERIOD)
            if not errors:
                self.q_d = q
                self.dq_d, self.ddq_d = self.checker.derivatives()
        elif generator is StateGenerator.JOINT_VELOCITY:
            dq = self.checker.history.continued(2)
            q = self.q_d + dq * PERIOD
            errors = self.checker.check_filled(dq, q, dq)
            if not errors:
                self.q_d, self.dq_d = q, dq
        elif generator in (StateGenerator.CARTESIAN_POSITION, StateGenerator.CARTESIAN_VELOCITY):
            q = self.ik_checker.history.continued(3)
            errors = self.ik_checker.check_filled(q, q, (q - self.q_d) / PERIOD)
            if not errors:
                twist = self.cartesian.continued()
                self.cartesian.record(twist)
                self.elbow.record(float(q[2]))
                assert self.pose_c is not None
                pose = self.pose_c.copy()
                pose[:3, 3] += twist[:3] * PERIOD
                pose[:3, :3] = rotation_from_vector(twist[3:] * PERIOD) @ pose[:3, :3]
                self.pose_c, self.twist_c = pose, twist
                self.q_d = q
                self.dq_d, self.ddq_d = self.ik_checker.derivatives()
        else:
            errors = ()  # our choice: the torque interface holds its last torque
        return errors

    def _apply(self, command: np.ndarray) -> str | None:
        generator = self.generator
        if generator is StateGenerator.JOINT_POSITION:
            q_c = np.array(command["q_c"], dtype=np.float64)
            if self._first_command:  # the motion's start (see START_POSE_TOLERANCE)
                self._first_command = False
                offset = np.abs(q_c - self.q_d)
                if not np.isfinite(q_c).all() or (offset > START_POSE_TOLERANCE).any():
                    return self._reflex("joint_position_motion_generator_start_pose_invalid")
                if (offset > self.checker.acceleration * PERIOD**2).any():  # not a step from rest: a start there
                    self.checker.reset(q_c)
            errors = self.checker.check_position(q_c)
            if errors:
                return self._reflex(*errors)
            self.q_d = q_c
            self.dq_d, self.ddq_d = self.checker.derivatives()
            finished = bool(command["motion_generation_finished"])
        elif generator is StateGenerator.JOINT_VELOCITY:
            dq_c = np.array(command["dq_c"], dtype=np.float64)
            errors = list(self.checker.check_velocity(dq_c, self.q_d))
            q_next = self.q_d + dq_c * PERIOD
            if (q_next < self.checker.lower).any() or (q_next > self.checker.upper).any():
                errors.insert(0, JOINT_NAMES["position"])
            if errors:
                return self._reflex(*dict.fromkeys(errors))
            self.q_d = q_next
            self.dq_d = dq_c
            self.ddq_d = self.checker.derivatives()[0]  # the velocity stream's rate of change
            finished = bool(command["motion_generation_finished"])
        elif generator in (StateGenerator.CARTESIAN_POSITION, StateGenerator.CARTESIAN_VELOCITY):
            errors = self._apply_cartesian(command)
            if errors:
                return self._reflex(*errors)
            finished = bool(command["motion_generation_finished"])
        else:
            tau = np.array(command["tau_J_d"], dtype=np.float64)
            errors = []
            # tau_J_d + g(q) is the torque the drives must pass to the links (the robot adds gravity:
            # libfranka's robot_state.h, tau_J_d is "without gravity"), what the link-side sensors
            # then measure. errors.h: tau_j_range_violation, "the measured torque signal is out of
            # the safe range" (mc_franka issue 5 meets it at joint 5's 12 Nm). The FCI
            # documentation makes tau_max a recommended condition, which the robot enforces by
            # adjusting the command; how, it does not say, so a command beyond it is refused here
            # (our choice) rather than silently changed.
            drive = tau + self.dynamics.gravity(self.tracking.position)
            if not np.isfinite(tau).all() or (np.abs(drive) > np.array(self.arm.torque)).any():
                errors.append("tau_j_range_violation")
            rate = (tau - self.tau_J_d) / PERIOD
            # A necessary condition in the FCI documentation ("Torque Control Requirements"), checked
            # with the slack every rate check here has: libfranka's own limiter stays kLimitEps under
            # 1000 Nm/s (rate_limiting.h kMaxTorqueRate).
            if not np.isfinite(rate).all() or (np.abs(rate) > self.arm.torque_rate * (1 + SLACK)).any():
                errors.append("controller_torque_discontinuity")
            if errors:
                return self._reflex(*errors)
            self.tau_J_d = tau
            finished = bool(command["torque_command_finished"])
        if finished:
            return self._finish()
        return None

    def _apply_cartesian(self, command: np.ndarray) -> list[str]:
        """A Cartesian pose or velocity command: checked, then followed through the IK."""
        first, self._first_command = self._first_command, False
        restart = False  # a first pose off the held one, within START_POSE_TOLERANCE: the motion starts there
        held = self.pose_c
        assert held is not None
        if self.generator is StateGenerator.CARTESIAN_POSITION:
            matrix = np.array(command["O_T_EE_c"], dtype=np.float64).reshape(4, 4, order="F")
            if not proper_transform(matrix):
                return [INVALID_FRAME]
            target = matrix.copy()
            target[:3, :3] = nearest_rotation(matrix[:3, :3])
            twist = pose_error(target, held) / PERIOD
            if first:  # as for joints: the motion's start (see START_POSE_TOLERANCE)
                step = np.array([np.linalg.norm(twist[:3]), np.linalg.norm(twist[3:])]) * PERIOD
                if (step > START_POSE_TOLERANCE_CARTESIAN).any():
                    return ["cartesian_position_motion_generator_start_pose_invalid"]
                restart = bool((step > self.cartesian.limits[:, 1] * PERIOD**2).any())  # not a step from rest
                if restart:
                    twist = np.zeros(6)
        else:
            twist = np.array(command["O_dP_EE_c"], dtype=np.float64)
            target = held.copy()
            if np.isfinite(twist).all():  # the desired pose moves with the commanded twist
                target[:3, 3] += twist[:3] * PERIOD
                target[:3, :3] = rotation_from_vector(twist[3:] * PERIOD) @ held[:3, :3]
        # Our choice: a command refused on its Cartesian checks is not taken through the IK (its joint
        # errors would restate the same jump); the ones that pass are checked in joint space as well.
        errors = self.cartesian.errors(twist)
        elbow = None
        if bool(command["valid_elbow"]):
            elbow = np.array(command["elbow_c"], dtype=np.float64)
            errors += self._elbow_errors(elbow, first)
        if errors:
            return errors
        q_d, residual = self._inverse(target, None if elbow is None else float(elbow[0]))
        if residual > IK_UNREACHABLE:
            # Our choice: a pose the IK cannot reach from here is where the joints' limits (of
            # range, or of speed at a singularity) stop the arm.
            return [IK_NAMES["position"]]
        if restart:
            self.ik_checker.reset(q_d)  # the motion starts here, from rest (START_POSE_TOLERANCE)
            self.cartesian.reset()
        errors = self.ik_checker.check_position(q_d)
        if errors:
            return list(errors)
        self.cartesian.record(twist)
        self.elbow.record(float(q_d[2]))
        self.pose_c, self.twist_c, self.elbow_c = target, twist, elbow
        self.q_d = q_d
        self.dq_d, self.ddq_d = self.ik_checker.derivatives()
        return []

    def _elbow_errors(self, elbow: np.ndarray, first: bool) -> list[str]:
        if not np.isfinite(elbow).all():
            return [ELBOW_LIMIT]
        if elbow[1] not in (-1.0, 1.0):  # libfranka's isValidElbow (control_tools.h)
            return [ELBOW_SIGN]
        if first:
            # errors.h: "the first elbow value ... too far from initial one": as for the start pose,
            # off by more than one cycle at the elbow's acceleration limit from rest, or the other side.
            if abs(elbow[0] - self.elbow.history.executed[-1]) > self.elbow.acceleration * PERIOD**2 or elbow[1] != self._start_sign:
                return [START_ELBOW]
        if elbow[1] != self._start_sign:  # the elbow cannot flip within a motion
            return [ELBOW_SIGN]
        return self.elbow.errors(float(elbow[0]))

    def _inverse(self, target: np.ndarray, elbow: float | None) -> tuple[np.ndarray, float]:
        """Damped least squares from q_d (see :data:`IK_DAMPING`). With an elbow, joint 3 is set to
        it and the other six solve the pose; without, all seven move by the least-norm step."""
        q = self.q_d.copy()
        columns = _ALL_JOINTS
        if elbow is not None:
            q[2] = elbow
            columns = _BUT_JOINT_3
        key = q.tobytes()
        if self._ik_last is not None and self._ik_last[0] == key:  # where the last cycle ended
            pose, jacobian = self._ik_last[1:]
        else:
            pose, jacobian = dh_pose_and_jacobian(q)
        for _ in range(IK_ITERATIONS):
            error = pose_error(target, pose)
            residual = math.sqrt(error @ error)
            if residual < IK_TOLERANCE:
                break
            j = jacobian[:, columns]
            q[columns] += j.T @ np.linalg.solve(j @ j.T + _IK_REGULARISER, error)
            pose, jacobian = dh_pose_and_jacobian(q)
        else:
            error = pose_error(target, pose)
            residual = math.sqrt(error @ error)
        self._ik_last = (q.tobytes(), pose, jacobian)
        return q, residual

    def _integrate_torque(self) -> str | None:
        """Torque control: the arm moves on its dynamics (:mod:`.dynamics`) under the client's
        torque plus the robot's own gravity compensation (libfranka: the robot compensates gravity;
        its examples add only the Coriolis torque), the plane and the hand pushing on it. The
        robot's joint-limit and velocity supervision (errors.h) ends the motion."""
        tracking = self.tracking
        q = tracking.position
        drive = self.tau_J_d + self.dynamics.gravity(q)
        cycle = self.dynamics.step(q, tracking.velocity, drive, PERIOD, self._external_on_arm)
        if (cycle.q < self.checker.lower).any() or (cycle.q > self.checker.upper).any():
            return self._reflex("joint_position_limits_violation")
        if (np.abs(cycle.dq) > np.array(self.arm.velocity)).any():
            return self._reflex("joint_velocity_violation")
        tracking.follow(cycle.q, cycle.dq, cycle.ddq)
        self.q_d = cycle.q - tracking.bias  # the controller is the client's: the robot desires where it is
        self.dq_d = cycle.dq
        self.ddq_d = cycle.ddq
        self._measure(cycle)
        return None

    def _external_on_arm(self, pose: np.ndarray, twist: np.ndarray, mobility: np.ndarray) -> tuple[np.ndarray, float]:
        """What the world pushes on the flange of a moving arm: the plane and the hand."""
        if self.contact is None:
            return self.hand, 0.0
        wrench, holding = self.contact.on_arm(pose, twist, mobility)
        return wrench + self.hand, holding

    def _sense_tracked(self) -> None:
        """The torques under the robot's own joint controller: the link-side torque that moves the
        links along the tracked motion against what the plane and the hand push; the desired torque
        is that without gravity."""
        tracking = self.tracking
        if self.contact is None and not self.hand.any():
            wrench, tau_ext = _NO_WRENCH, _NO_TORQUE
        else:
            pose, jacobian = self.dynamics.flange(tracking.position)
            wrench = self.hand if self.contact is None else self.contact.wrench(pose, jacobian @ tracking.velocity) + self.hand
            tau_ext = jacobian.T @ wrench
        tau_J = self.dynamics.link_torque(tracking.position, tracking.velocity, tracking.acceleration, tau_ext)
        self.tau_J_d = tau_J - self.dynamics.gravity(tracking.position)
        self._measure(Cycle(tracking.position, tracking.velocity, tracking.acceleration, tau_J, tau_ext, wrench))

    def _measure(self, cycle: Cycle) -> None:
        self.dtau_J = (cycle.tau_J - self.tau_J) / PERIOD
        self.tau_J, self.tau_ext, self.wrench = cycle.tau_J, cycle.tau_ext, cycle.wrench

    def _finish(self) -> str | None:
        """motion_finished: the robot then holds the last command. Its limits apply to that hold as
        to any command (the FCI documentation asks for a last command at rest but gives no
        tolerance), so the two cycles to rest are checked as ordinary commands."""
        errors: list[str] = []
        if self.generator is StateGenerator.JOINT_POSITION:
            for _ in range(2):
                errors += self.checker.check_position(self.q_d)
        elif self.generator is StateGenerator.JOINT_VELOCITY:
            for _ in range(2):
                errors += self.checker.check_velocity(np.zeros(7), self.q_d)
        elif self.generator in (StateGenerator.CARTESIAN_POSITION, StateGenerator.CARTESIAN_VELOCITY):
            for _ in range(2):  # as for a command: the joint checks only when the Cartesian ones pass
                step = self.cartesian.errors(np.zeros(6))
                errors += step
                if not step:
                    self.cartesian.record(np.zeros(6))
                    errors += self.ik_checker.check_position(self.q_d)
        if errors:
            return self._reflex(*dict.fromkeys(errors))
        self._to_idle()
        return "finished"

    def _reflex(self, *names: str) -> str:
        self.errors = tuple(names)
        self.last_motion_errors = tuple(names)
        self.mode = RobotMode.REFLEX
        self.generator = StateGenerator.IDLE
        self.controller = StateController.JOINT_IMPEDANCE
        self.stats["reflexes"] += 1
        self._halt()
        return "reflex"

    def _to_idle(self) -> None:
        self.mode = RobotMode.IDLE
        self.generator = StateGenerator.IDLE
        self.controller = StateController.JOINT_IMPEDANCE
        self._halt()

    def _halt(self) -> None:
        """Hold the last desired position, or with HOLD_MEASURED where the arm is measured (on a
        float32-representable value, so that a client's next motion can start exactly on the q_d
        it reads); the controller brings the arm to rest there."""
        if self.hold == HOLD_MEASURED:
            self._hold_measured()
        self.q_d = self.q_d.astype(np.float32).astype(np.float64)
        self.dq_d = np.zeros(7)
        self.ddq_d = np.zeros(7)
        self.tau_J_d = np.zeros(7)
        self.pose_c = None
        self.twist_c = np.zeros(6)
        self.elbow_c = None
        self.async_motion = None
        self._pending.clear()

    def _hold_measured(self) -> None:
        """HOLD_MEASURED: the hold becomes the measured position (see :data:`HOLD_MEASURED`)."""
        self.q_d = self.q.astype(np.float32).astype(np.float64)
        self.tracking.hold_in_place(self.q_d)

    # The state datagram ----------------------------------------------------------------

    @property
    def success_rate(self) -> float:
        return float(np.mean(self._successes)) if self._successes else 0.0

    def _pose(self, q: np.ndarray) -> np.ndarray:
        """Forward kinematics, column-major as on the wire; cached while the arm holds still."""
        key = q.tobytes()
        cached = self._pose_cache.get(key)
        if cached is None:
            if len(self._pose_cache) > 4:
                self._pose_cache.clear()
            cached = self._pose_cache[key] = self.forward(q).ravel(order="F")
        return cached

    def fill(self, record: np.ndarray) -> np.ndarray:
        """Write the current state into a wire state record and return it."""
        record["message_id"] = self.message_id
        values = record["values"]
        if values[_F_T_EE] == 0.0:  # a fresh record: the constant fields
            for name in ("F_T_EE", "EE_T_K", "F_T_NE", "NE_T_EE"):
                wire.set_floats(record, name, np.eye(4).ravel(order="F"))
            wire.set_floats(record, "O_ddP_O", GRAVITY)
        measured = self.forward(self.q)  # new every cycle
        pose = measured.ravel(order="F")
        pose_d = self._pose(self.q_d)
        pose_c = pose_d if self.pose_c is None else self.pose_c.ravel(order="F")
        elbow_d = (self.q_d[2], elbow_sign(self.q_d))
        wrench = ESTIMATE_SIGN * self.wrench
        rotation = measured[:3, :3]  # K is the flange here: EE_T_K and F_T_EE are identities
        load = self.load
        for name, value in (("O_T_EE", pose), ("O_T_EE_d", pose_d), ("O_T_EE_c", pose_c), ("q", self.q),
                            ("q_d", self.q_d), ("dq", self.dq), ("dq_d", self.dq_d), ("ddq_d", self.ddq_d),
                            ("tau_J", self.tau_J), ("tau_J_d", self.tau_J_d), ("dtau_J", self.dtau_J),
                            ("theta", self.q), ("dtheta", self.dq), ("O_dP_EE_c", self.twist_c),
                            ("O_dP_EE_d", self.twist_c), ("elbow", (self.q[2], elbow_sign(self.q))),
                            ("elbow_d", elbow_d), ("elbow_c", elbow_d if self.elbow_c is None else self.elbow_c),
                            ("tau_ext_hat_filtered", ESTIMATE_SIGN * self.tau_ext), ("O_F_ext_hat_K", wrench),
                            ("K_F_ext_hat_K", np.concatenate((wrench[:3] @ rotation, wrench[3:] @ rotation))),
                            ("joint_contact", self.collision.joint_contact),
                            ("cartesian_contact", self.collision.cartesian_contact),
                            ("joint_collision", self.collision.joint_collision),
                            ("cartesian_collision", self.collision.cartesian_collision),
                            ("m_load", load[0]), ("F_x_Cload", load[1]), ("I_load", load[2])):
            values[_SLICES[name]] = value
        record["motion_generator_mode"] = int(self.generator)
        record["controller_mode"] = int(self.controller)
        if self._reported_errors != (self.errors, self.last_motion_errors):
            record["errors"] = wire.error_bits(self.errors)
            record["reflex_reason"] = wire.error_bits(self.last_motion_errors)
            self._reported_errors = (self.errors, self.last_motion_errors)
        record["robot_mode"] = int(self.mode)
        record["control_command_success_rate"] = self.success_rate
        return record


_NO_WRENCH = np.zeros(6)
_NO_TORQUE = np.zeros(7)
_ALL_JOINTS = np.arange(7)
_BUT_JOINT_3 = np.array([0, 1, 3, 4, 5, 6])
_IK_REGULARISER = IK_DAMPING**2 * np.eye(6)
_SLICES = {name: slice(start, start + count) for name, (start, count) in wire.STATE_FLOATS.items()}
_F_T_EE = wire.STATE_FLOATS["F_T_EE"][0]
