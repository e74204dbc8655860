"""The simulated Franka arm: state integration, forward kinematics and the
robot's own checks on the command stream, with libfranka's error names.

One module serves both the FCI protocol server (:mod:`.simulator`) and the
pylibfranka-compatible stubs (:mod:`.stubs`): both feed it command records in
the wire format and send out the state record it fills, once per millisecond.

What the robot checks (as Franka's FCI documentation describes it):

* joint-position interface: the commanded positions and their finite-difference
  velocity, acceleration and jerk at 1 ms stay inside the limits, the velocity
  also under the FR3's position-based curve near the ends of travel
  (``joint_motion_generator_position_limits_violation``,
  ``..._velocity_limits_violation``, ``..._velocity_discontinuity`` for the
  acceleration and ``..._acceleration_discontinuity`` for the jerk); the first
  command equals the measured position (``..._start_pose_invalid``); a finished
  motion ends at rest.
* joint-velocity interface: the same on the commanded velocities.
* torque interface: torque range and rate (``tau_j_range_violation``,
  ``controller_torque_discontinuity``).
* communication: more than ``max_missed`` command cycles in a row without a
  command is ``communication_constraints_violation``; the success rate over the
  last 100 cycles is reported as ``control_command_success_rate``.

A violation puts the robot in Reflex: the motion ends, the errors are reported,
and only automatic error recovery returns it to Idle.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np

from . import wire
from .facts import READY_Q, ArmFacts, arm_facts, dh_forward, joint_limits
from .wire import MoveController, MoveGenerator, MoveStatus, RobotMode, StateController, StateGenerator

PERIOD = 0.001  # s: the robot's control cycle
# Relative slack on the limits: the robot is checked in float64 like the client
# computes, so a profile planned exactly at a limit passes.
SLACK = 1e-3
END_TOLERANCE = 1e-3  # rad/s: where the end-of-travel curve allows no speed at all, round-off still passes
START_POSE_TOLERANCE = 1e-3  # rad: the first command must equal the measured position
FINISH_VELOCITY = 0.02  # rad/s: a finished motion must end (nearly) at rest
FINISH_ACCELERATION = 2.0  # rad/s^2
DEFAULT_MAX_MISSED = 20  # command cycles in a row before communication_constraints_violation
SUCCESS_WINDOW = 100
GRAVITY = (0.0, 0.0, -9.81)
# Torque interface dynamics (a gravity-compensated arm): per-joint inertia and damping.
INERTIA = np.array([0.8, 0.8, 0.5, 0.5, 0.1, 0.1, 0.05])
DAMPING = np.array([2.0, 2.0, 1.5, 1.5, 0.3, 0.3, 0.1])


class CommandChecker:
    """Finite-difference checks on a stream of joint positions or velocities."""

    def __init__(self, arm: ArmFacts, period: float = PERIOD) -> None:
        self.limits = joint_limits(arm)
        self.lower = np.array(arm.lower)
        self.upper = np.array(arm.upper)
        self.acceleration = np.array(arm.acceleration) * (1 + SLACK)
        self.jerk = np.array(arm.jerk) * (1 + SLACK)
        self.period = period
        self.history: list[np.ndarray] = []

    def reset(self, value: np.ndarray) -> None:
        """Start from rest at ``value`` (the measured position, or zero velocity)."""
        self.history = [value.copy(), value.copy(), value.copy()]

    def derivatives(self) -> tuple[np.ndarray, np.ndarray]:
        h, dt = self.history, self.period
        return (h[-1] - h[-2]) / dt, (h[-1] - 2 * h[-2] + h[-3]) / dt**2

    def check_position(self, q_c: np.ndarray) -> str | None:
        """The error name a joint-position command raises, or None (then it is recorded)."""
        if not np.isfinite(q_c).all() or (q_c < self.lower - 1e-9).any() or (q_c > self.upper + 1e-9).any():
            return "joint_motion_generator_position_limits_violation"
        h, dt = self.history, self.period
        v = (q_c - h[-1]) / dt
        a = (q_c - 2 * h[-1] + h[-2]) / dt**2
        j = (q_c - 3 * h[-1] + 3 * h[-2] - h[-3]) / dt**3
        if self._too_fast(v, q_c):
            return "joint_motion_generator_velocity_limits_violation"
        if (np.abs(a) > self.acceleration + 1e-6).any():
            return "joint_motion_generator_velocity_discontinuity"
        if (np.abs(j) > self.jerk + 1e-3).any():
            return "joint_motion_generator_acceleration_discontinuity"
        self.history = [*self.history[-2:], q_c.copy()]
        return None

    def _too_fast(self, v: np.ndarray, q: np.ndarray) -> bool:
        """Whether a velocity breaks the limits at position ``q``: the rectangular ones, and
        near the ends of travel the arm's position-based curve (within libfranka's 1e-3 rad/s)."""
        low, high = self.limits.velocity_bounds(q)
        return bool(((v > high * (1 + SLACK) + END_TOLERANCE) | (v < low * (1 + SLACK) - END_TOLERANCE)).any())

    def check_velocity(self, dq_c: np.ndarray, q: np.ndarray) -> str | None:
        """The error name a joint-velocity command at position ``q`` raises, or None (then it is recorded)."""
        if not np.isfinite(dq_c).all() or self._too_fast(dq_c, q):
            return "joint_motion_generator_velocity_limits_violation"
        h, dt = self.history, self.period
        a = (dq_c - h[-1]) / dt
        j = (dq_c - 2 * h[-1] + h[-2]) / dt**2
        if (np.abs(a) > self.acceleration + 1e-6).any():
            return "joint_motion_generator_velocity_discontinuity"
        if (np.abs(j) > self.jerk + 1e-3).any():
            return "joint_motion_generator_acceleration_discontinuity"
        self.history = [*self.history[-2:], dq_c.copy()]
        return None


class SimulatedRobot:
    """One simulated arm, advanced one millisecond per :meth:`tick`."""

    def __init__(
        self,
        model_name: str = "franka.fr3",
        forward: Callable[[np.ndarray], np.ndarray] | None = None,
        q0=READY_Q,
        max_missed: int = DEFAULT_MAX_MISSED,
    ) -> None:
        self.model_name = model_name
        self.arm = arm_facts(model_name)
        self.forward = forward or dh_forward
        self.max_missed = int(max_missed)
        self.q = np.array(q0, dtype=np.float32).astype(np.float64)  # representable on the wire
        self.dq = np.zeros(7)
        self.q_d = self.q.copy()
        self.dq_d = np.zeros(7)
        self.ddq_d = np.zeros(7)
        self.tau_J_d = np.zeros(7)
        self.dtau_J = np.zeros(7)
        self.mode = RobotMode.IDLE
        self.generator = StateGenerator.IDLE
        self.controller = StateController.JOINT_IMPEDANCE
        self.errors: tuple[str, ...] = ()
        self.last_motion_errors: tuple[str, ...] = ()
        self.message_id = 0
        self.collision_thresholds = np.zeros(52)
        self.checker = CommandChecker(self.arm)
        self._pending: list[np.ndarray] = []
        self._missed = 0
        self._successes: deque[bool] = deque(maxlen=SUCCESS_WINDOW)
        self._first_command = False
        self._injected: str | None = None
        self._reported_errors: tuple | None = None  # what the record last carried
        self._pose_cache: dict[bytes, np.ndarray] = {}
        self.stats = {"ticks": 0, "move_ticks": 0, "commands": 0, "missed": 0, "reflexes": 0}

    # Requests (from TCP or the stubs' API) -----------------------------------------

    @property
    def moving(self) -> bool:
        return self.mode is RobotMode.MOVE

    def start_motion(self, controller: int, generator: int) -> MoveStatus:
        """A Move request: MOTION_STARTED, or why it is rejected."""
        if self.mode is RobotMode.REFLEX:
            return MoveStatus.COMMAND_REJECTED_DUE_TO_ACTIVATED_SAFETY_FUNCTIONS
        if self.mode is not RobotMode.IDLE:
            return MoveStatus.COMMAND_NOT_POSSIBLE_REJECTED
        try:
            controller, generator = MoveController(controller), MoveGenerator(generator)
        except ValueError:
            return MoveStatus.INVALID_ARGUMENT_REJECTED
        torque = generator is MoveGenerator.NONE and controller is MoveController.EXTERNAL
        if generator not in (MoveGenerator.JOINT_POSITION, MoveGenerator.JOINT_VELOCITY) and not torque:
            return MoveStatus.COMMAND_NOT_POSSIBLE_REJECTED  # Cartesian generators are not simulated
        self.mode = RobotMode.MOVE
        self.generator = {
            MoveGenerator.JOINT_POSITION: StateGenerator.JOINT_POSITION,
            MoveGenerator.JOINT_VELOCITY: StateGenerator.JOINT_VELOCITY,
            MoveGenerator.NONE: StateGenerator.NONE,
        }[generator]
        self.controller = {
            MoveController.JOINT_IMPEDANCE: StateController.JOINT_IMPEDANCE,
            MoveController.CARTESIAN_IMPEDANCE: StateController.CARTESIAN_IMPEDANCE,
            MoveController.EXTERNAL: StateController.EXTERNAL,
        }[controller]
        self.last_motion_errors = ()
        self.checker.reset(self.q if generator is MoveGenerator.JOINT_POSITION else np.zeros(7))
        self.tau_J_d = np.zeros(7)
        self._pending.clear()
        self._missed = 0
        self._first_command = True
        return MoveStatus.MOTION_STARTED

    def stop_motion(self) -> bool:
        """StopMove: end the running motion where it is (True if one was running)."""
        if not self.moving:
            return False
        self._to_idle()
        return True

    def recover(self) -> None:
        """Automatic error recovery: from Reflex back to Idle, holding."""
        self.errors = ()
        self._to_idle()

    def inject_reflex(self, name: str) -> None:
        """Make the next tick raise a reflex with libfranka's error ``name`` (fault injection)."""
        if name not in wire.ERROR_INDEX:
            raise ValueError(f"{name!r} is not a libfranka error name")
        self._injected = name

    def receive(self, command: np.ndarray) -> None:
        """A command record arrived (it is applied on the next tick)."""
        if self.moving:
            self._pending.append(command)

    # The 1 ms cycle ------------------------------------------------------------------

    def tick(self) -> str | None:
        """Advance one millisecond. Returns ``"finished"`` when the client ended
        its motion, ``"reflex"`` when a check failed, else None."""
        self.message_id += 1
        self.stats["ticks"] += 1
        event = None
        q_before = self.q.copy()
        injected, self._injected = self._injected, None
        if injected is not None:
            event = self._reflex(injected)
        if self.moving:
            self.stats["move_ticks"] += 1
            pending, self._pending = self._pending, []
            if pending:
                self._missed = 0
                self._successes.append(True)
            else:
                self._missed += 1
                self.stats["missed"] += 1
                self._successes.append(False)
                if self._missed > self.max_missed:
                    event = self._reflex("communication_constraints_violation")
            for command in pending:
                if event is not None:
                    break
                self.stats["commands"] += 1
                event = self._apply(command)
            if self.moving and self.generator is StateGenerator.NONE:
                self._integrate_torque()
        self.dq = (self.q - q_before) / PERIOD
        return event

    def _apply(self, command: np.ndarray) -> str | None:
        if self.generator is StateGenerator.JOINT_POSITION:
            q_c = np.array(command["q_c"], dtype=np.float64)
            if self._first_command and np.abs(q_c - self.q).max() > START_POSE_TOLERANCE:
                return self._reflex("joint_position_motion_generator_start_pose_invalid")
            self._first_command = False
            error = self.checker.check_position(q_c)
            if error:
                return self._reflex(error)
            self.q = q_c
            self.q_d = q_c
            self.dq_d, self.ddq_d = self.checker.derivatives()
            finished = bool(command["motion_generation_finished"])
        elif self.generator is StateGenerator.JOINT_VELOCITY:
            dq_c = np.array(command["dq_c"], dtype=np.float64)
            error = self.checker.check_velocity(dq_c, self.q)
            if error:
                return self._reflex(error)
            q_next = self.q + dq_c * PERIOD
            if (q_next < np.array(self.arm.lower)).any() or (q_next > np.array(self.arm.upper)).any():
                return self._reflex("joint_motion_generator_position_limits_violation")
            self.q = q_next
            self.q_d = q_next
            self.dq_d = dq_c
            self.ddq_d = self.checker.derivatives()[1] * PERIOD  # the velocity history's first difference
            finished = bool(command["motion_generation_finished"])
        else:
            tau = np.array(command["tau_J_d"], dtype=np.float64)
            if not np.isfinite(tau).all() or (np.abs(tau) > np.array(self.arm.torque)).any():
                return self._reflex("tau_j_range_violation")
            rate = (tau - self.tau_J_d) / PERIOD
            if (np.abs(rate) > self.arm.torque_rate * (1 + SLACK)).any():
                return self._reflex("controller_torque_discontinuity")
            self.dtau_J = rate
            self.tau_J_d = tau
            finished = bool(command["torque_command_finished"])
        if finished:
            return self._finish()
        return None

    def _integrate_torque(self) -> None:
        ddq = (self.tau_J_d - DAMPING * self.dq) / INERTIA
        dq = self.dq + ddq * PERIOD
        q = self.q + dq * PERIOD
        if (q < np.array(self.arm.lower)).any() or (q > np.array(self.arm.upper)).any():
            self._reflex("joint_position_limits_violation")
            return
        if (np.abs(dq) > np.array(self.arm.velocity)).any():
            self._reflex("joint_velocity_violation")
            return
        self.q = q
        self.q_d = q

    def _finish(self) -> str | None:
        if self.generator in (StateGenerator.JOINT_POSITION, StateGenerator.JOINT_VELOCITY):
            v, a = self.checker.derivatives()
            if self.generator is StateGenerator.JOINT_VELOCITY:
                v, a = self.checker.history[-1], v
            if np.abs(v).max() > FINISH_VELOCITY or np.abs(a).max() > FINISH_ACCELERATION:
                return self._reflex("joint_motion_generator_velocity_discontinuity")
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
        """The brakes hold the arm where it is (on a float32-representable position)."""
        self.q = self.q.astype(np.float32).astype(np.float64)
        self.q_d = self.q.copy()
        self.dq_d = np.zeros(7)
        self.ddq_d = np.zeros(7)
        self.tau_J_d = np.zeros(7)
        self.dtau_J = np.zeros(7)
        self._pending.clear()

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
        pose = self._pose(self.q)
        pose_d = self._pose(self.q_d)
        for name, value in (("O_T_EE", pose), ("O_T_EE_d", pose_d), ("O_T_EE_c", pose_d), ("q", self.q),
                            ("q_d", self.q_d), ("dq", self.dq), ("dq_d", self.dq_d), ("ddq_d", self.ddq_d),
                            ("tau_J", self.tau_J_d), ("tau_J_d", self.tau_J_d), ("dtau_J", self.dtau_J),
                            ("theta", self.q), ("dtheta", self.dq)):
            values[_SLICES[name]] = value
        values[_ELBOW] = (self.q[2], 1.0 if self.q[3] >= 0 else -1.0)
        record["motion_generator_mode"] = int(self.generator)
        record["controller_mode"] = int(self.controller)
        if self._reported_errors != (self.errors, self.last_motion_errors):
            record["errors"] = wire.error_bits(self.errors)
            record["reflex_reason"] = wire.error_bits(self.last_motion_errors)
            self._reported_errors = (self.errors, self.last_motion_errors)
        record["robot_mode"] = int(self.mode)
        record["control_command_success_rate"] = self.success_rate
        return record


_SLICES = {name: slice(start, start + count) for name, (start, count) in wire.STATE_FLOATS.items()}
_F_T_EE = wire.STATE_FLOATS["F_T_EE"][0]
_ELBOW = _SLICES["elbow"]
