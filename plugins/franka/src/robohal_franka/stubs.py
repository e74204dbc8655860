"""A pure-Python stand-in for the part of pylibfranka's API the backend uses.

Same names and behaviour as pylibfranka 0.21 (``Robot``, ``RobotState``,
``JointPositions``, ``JointVelocities``, ``CartesianPose``,
``CartesianVelocities``, ``Torques``, the dynamics ``Model``, the active control's
``readOnce``/``writeOnce``, ``Errors`` with libfranka's error names, the
exception classes and enums), running the same :class:`SimulatedRobot` and
limit checker as the FCI simulator, in-process: commands and states go through
the same wire records, only the UDP socket is missing. The robot's clock is
the wall clock (1 ms per state), so a late client misses command cycles exactly
as it would on the wire.

Select it with ``franka://sim?model=franka.fr3&impl=stubs``; use it where the
pylibfranka wheel cannot be installed and in fast unit tests.
"""

from __future__ import annotations

import enum
import os
import time
import weakref

import numpy as np

from . import wire
from .simulated_robot import COMMAND_WAIT, DEFAULT_MAX_MISSED, GRAVITY, HOLD_COMMAND, PERIOD, SimulatedRobot
from .wire import ERROR_NAMES, MoveController, MoveGenerator, MoveStatus

# Our choice: ticks due at once beyond which the process was descheduled rather than the client slow: the
# robot and the client share this process, so the robot's clock slips over such a gap (as the FCI
# simulator's does when it runs late) rather than counting it as missed or lost.
CATCH_UP_LIMIT = 5
UDP_TIMEOUT = 1.0  # s, as libfranka's UDP receive (measured with pylibfranka 0.21.3: ~1 s, then NetworkException)


# Exceptions (the same hierarchy as pylibfranka's) --------------------------------------------


class FrankaException(Exception):
    pass


class CommandException(RuntimeError):
    pass


class ControlException(RuntimeError):
    pass


class NetworkException(RuntimeError):
    pass


class RealtimeException(RuntimeError):
    pass


class InvalidOperationException(RuntimeError):
    pass


# Enums ------------------------------------------------------------------------------------


class RobotMode(enum.IntEnum):
    Other = 0
    Idle = 1
    Move = 2
    Guiding = 3
    Reflex = 4
    UserStopped = 5
    AutomaticErrorRecovery = 6


class ControllerMode(enum.IntEnum):
    JointImpedance = 0
    CartesianImpedance = 1


class RealtimeConfig(enum.IntEnum):
    kEnforce = 0
    kIgnore = 1


# Values -------------------------------------------------------------------------------------


class Duration:
    def __init__(self, milliseconds: int = 0) -> None:
        self._ms = int(milliseconds)

    def to_sec(self) -> float:
        return self._ms / 1000.0

    def to_msec(self) -> int:
        return self._ms


class Errors:
    """Boolean flags named like libfranka's errors; ``str()`` lists the set ones."""

    __slots__ = ("_set",)

    def __init__(self, bits=()) -> None:
        self._set = tuple(name for name, bit in zip(ERROR_NAMES, bits, strict=False) if bit)

    def __bool__(self) -> bool:
        return bool(self._set)

    def __str__(self) -> str:
        return "[" + ", ".join(f'"{name}"' for name in self._set) + "]"

    __repr__ = __str__


for _name in ERROR_NAMES:  # one boolean property per libfranka error, as pylibfranka's
    setattr(Errors, _name, property(lambda self, name=_name: name in self._set))


class RobotState:
    """The decoded state datagram: arrays as lists, as pylibfranka returns them
    (decoded when first read)."""

    def __init__(self, record: np.ndarray) -> None:
        self._record = record.copy()
        self._message_id = int(record["message_id"])
        self.time = Duration(self._message_id)
        self.robot_mode = RobotMode(int(record["robot_mode"]))
        self.control_command_success_rate = float(record["control_command_success_rate"])

    def __getattr__(self, name: str):
        if name in wire.STATE_FLOATS:
            value = wire.get_floats(self._record, name).tolist()
            value = value[0] if len(value) == 1 else value
        elif name == "current_errors":
            value = Errors(self._record["errors"])
        elif name == "last_motion_errors":
            value = Errors(self._record["reflex_reason"])
        elif name == "m_total":
            value = self.m_ee + self.m_load
        else:
            raise AttributeError(name)
        setattr(self, name, value)
        return value


class _Command:
    def __init__(self, values) -> None:
        values = [float(v) for v in values]
        if len(values) != self.size:
            raise TypeError(f"{type(self).__name__} needs {self.size} values")
        setattr(self, self.field, values)
        self.motion_finished = False

    size = 7
    field = ""


class JointPositions(_Command):
    field = "q"


class JointVelocities(_Command):
    field = "dq"


class Torques(_Command):
    field = "tau_J"


class CartesianPose(_Command):
    """O_T_EE (16, column-major); like pylibfranka's, it carries no elbow and checks nothing
    itself (the robot checks the frame)."""

    size = 16
    field = "O_T_EE"


class Model:
    """pylibfranka's dynamics ``Model``: ``coriolis``, ``gravity``, ``mass`` and ``zero_jacobian``
    (the flange: the simulated arm's end effector) of a ``RobotState``, as flat lists (matrices
    column-major), computed with pinocchio from the description the simulated robot serves, as
    libfranka builds its own from the one a robot serves. The state's load is not added (our
    simplification: libfranka adds the end effector's and the load's inertia; the stubs' arm
    carries none unless set_load is called)."""

    def __init__(self, model_name: str) -> None:
        import pinocchio  # here: the stubs import it only for a client that loads the model

        from .urdf import urdf_text

        self._pin = pinocchio
        self._model = pinocchio.buildModelFromXML(urdf_text(model_name))
        self._model.gravity.linear = np.array(GRAVITY)
        self._data = self._model.createData()
        self._flange = self._model.getFrameId("link8")

    def _joints(self, state: RobotState) -> tuple[np.ndarray, np.ndarray]:
        return np.array(state.q, dtype=np.float64), np.array(state.dq, dtype=np.float64)

    def coriolis(self, state: RobotState) -> list[float]:
        q, dq = self._joints(state)
        pin, model, data = self._pin, self._model, self._data
        return (pin.nonLinearEffects(model, data, q, dq) - pin.computeGeneralizedGravity(model, data, q)).tolist()

    def gravity(self, state: RobotState) -> list[float]:
        q, _ = self._joints(state)
        return self._pin.computeGeneralizedGravity(self._model, self._data, q).tolist()

    def mass(self, state: RobotState) -> list[float]:
        q, _ = self._joints(state)
        mass = self._pin.crba(self._model, self._data, q)
        mass = np.triu(mass) + np.triu(mass, 1).T  # pinocchio fills the upper triangle
        return mass.ravel(order="F").tolist()

    def zero_jacobian(self, state: RobotState) -> list[float]:
        q, _ = self._joints(state)
        pin = self._pin
        jacobian = pin.computeFrameJacobian(self._model, self._data, q, self._flange, pin.LOCAL_WORLD_ALIGNED)
        return np.asarray(jacobian).ravel(order="F").tolist()


class CartesianVelocities(_Command):
    """O_dP_EE: the flange's twist [vx, vy, vz, wx, wy, wz] in the base frame."""

    size = 6
    field = "O_dP_EE"


# The robot ------------------------------------------------------------------------------------


def _realtime_kernel() -> bool:
    try:
        with open("/sys/kernel/realtime") as handle:
            return handle.read().strip() == "1"
    except OSError:
        return "PREEMPT_RT" in os.uname().version


class Robot:
    """A simulated robot behind pylibfranka's ``Robot`` API. ``robot_ip_address``
    only names it: nothing goes on a network."""

    def __init__(self, robot_ip_address: str, realtime_config: RealtimeConfig = RealtimeConfig.kEnforce, *,
                 model: str = "franka.fr3", max_missed: int = DEFAULT_MAX_MISSED, ideal: bool = False,
                 seed: int | None = None, contact: tuple[float, ...] | None = None,
                 hold: str = HOLD_COMMAND) -> None:
        if not robot_ip_address:
            raise NetworkException("libfranka: Connection error: empty address")
        if realtime_config == RealtimeConfig.kEnforce and not _realtime_kernel():
            raise RealtimeException("libfranka: Running kernel does not have realtime capabilities.")
        self.address = robot_ip_address
        self.robot = SimulatedRobot(model, max_missed=max_missed, ideal=ideal, seed=seed, contact=contact, hold=hold)
        self._record = wire.new_state()
        self._clock_start = time.monotonic()
        self._control: weakref.ref[_ActiveControl] | None = None
        self._last_read = 0
        self.skipped = 0  # robot ticks skipped because this process was not running
        self.stalled = False  # test hook: the state stream stops (reads time out like UDP)

    # The robot's clock: one tick per elapsed millisecond of wall time.
    def _advance(self) -> str | None:
        due = int((time.monotonic() - self._clock_start) / PERIOD)
        event = None
        behind = due - self.robot.message_id
        # The clock slips past ticks nobody could observe, and past those a client with its answer
        # in hand was late for by less than COMMAND_WAIT (the FCI simulator's rule: the host's jitter).
        waited = behind > 1 and behind * PERIOD <= COMMAND_WAIT and self.robot.moving and not self.robot.awaits_command()
        if behind > CATCH_UP_LIMIT or waited:
            self.skipped += behind - 1
            self._clock_start += (behind - 1) * PERIOD
            due = self.robot.message_id + 1
        while self.robot.message_id < due:
            event = self.robot.tick() or event
        return event

    def _next_state(self) -> tuple[RobotState, str | None]:
        """Wait for a state newer than the last one read."""
        if self.stalled:
            time.sleep(UDP_TIMEOUT)
            raise NetworkException("libfranka: UDP receive: Timeout")
        event = self._advance()
        if self.robot.message_id <= self._last_read:
            wake = self._clock_start + (self._last_read + 1) * PERIOD
            delay = wake - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            event = self._advance() or event
        self._last_read = self.robot.message_id
        return RobotState(self.robot.fill(self._record)), event

    def _check_idle(self) -> None:
        control = self._control() if self._control is not None else None
        if control is not None and control.active:
            raise InvalidOperationException(
                "libfranka robot: Cannot perform this operation while another control or read operation is running.")

    def read_once(self) -> RobotState:
        self._check_idle()
        return self._next_state()[0]

    def _start(self, controller: MoveController, generator: MoveGenerator) -> _ActiveControl:
        self._check_idle()
        self._advance()
        status = self.robot.start_motion(controller, generator)
        if status is not MoveStatus.MOTION_STARTED:
            reason = "command rejected due to activated safety function!" if self.robot.errors else "command not possible!"
            raise CommandException(f"libfranka: Move command rejected: {reason}")
        control = _ActiveControl(self, generator)
        self._control = weakref.ref(control)  # like libfranka's: dropping the control ends the motion
        return control

    def start_joint_position_control(self, control_type: ControllerMode) -> _ActiveControl:
        return self._start(MoveController(int(control_type)), MoveGenerator.JOINT_POSITION)

    def start_joint_velocity_control(self, control_type: ControllerMode) -> _ActiveControl:
        return self._start(MoveController(int(control_type)), MoveGenerator.JOINT_VELOCITY)

    def start_cartesian_pose_control(self, control_type: ControllerMode) -> _ActiveControl:
        return self._start(MoveController(int(control_type)), MoveGenerator.CARTESIAN_POSITION)

    def start_cartesian_velocity_control(self, control_type: ControllerMode) -> _ActiveControl:
        return self._start(MoveController(int(control_type)), MoveGenerator.CARTESIAN_VELOCITY)

    def start_torque_control(self) -> _ActiveControl:
        return self._start(MoveController.EXTERNAL, MoveGenerator.NONE)

    def load_model(self) -> Model:
        return Model(self.robot.model_name)

    def set_collision_behavior(self, lower_torque_thresholds, upper_torque_thresholds,
                               lower_force_thresholds, upper_force_thresholds) -> None:
        torque = [*lower_torque_thresholds, *upper_torque_thresholds]
        force = [*lower_force_thresholds, *upper_force_thresholds]
        if len(torque) != 14 or len(force) != 12:
            raise TypeError("set_collision_behavior needs 7, 7, 6 and 6 values")
        self._check_idle()
        # as libfranka sends this overload: the same thresholds for the acceleration and nominal phases
        self.robot.collision_thresholds = np.array(torque * 2 + force * 2)

    def set_joint_impedance(self, K_theta) -> None:
        self._check_idle()

    def set_load(self, load_mass, F_x_Cload, load_inertia) -> None:
        self._check_idle()
        if len(F_x_Cload) != 3 or len(load_inertia) != 9:
            raise TypeError("set_load needs a mass, 3 center-of-mass and 9 inertia values")
        try:
            self.robot.load = (float(load_mass), np.array(F_x_Cload, dtype=float), np.array(load_inertia, dtype=float))
        except ValueError:
            raise CommandException("libfranka: Set Load command rejected: invalid argument!") from None

    def automatic_error_recovery(self) -> None:
        self._check_idle()
        self._advance()
        self.robot.recover()

    def stop(self) -> None:
        self._advance()
        self.robot.stop_motion()
        control = self._control() if self._control is not None else None
        if control is not None:
            control.active = False


class _ActiveControl:
    """What ``Robot.start_*_control`` returns: one motion, stepped by readOnce/writeOnce."""

    def __init__(self, robot: Robot, generator: MoveGenerator) -> None:
        self._robot = robot
        self._generator = generator
        self.active = True
        self._last_time: int | None = None

    def __del__(self) -> None:
        if self.active:  # an unfinished control stops the motion as it goes (libfranka sends StopMove)
            self.active = False
            self._robot.robot.stop_motion()

    def readOnce(self) -> tuple[RobotState, Duration]:
        if not self.active:
            raise ControlException("libfranka: motion already finished")
        state, event = self._robot._next_state()
        self._raise_for(event)
        if self._robot.robot.mode is not wire.RobotMode.MOVE:
            self.active = False
            raise ControlException(f"libfranka: Move command aborted: motion aborted by reflex! {state.last_motion_errors}")
        step = 0 if self._last_time is None else state._message_id - self._last_time
        self._last_time = state._message_id
        return state, Duration(step)

    def writeOnce(self, command) -> None:
        if not self.active:
            raise ControlException("libfranka: motion already finished")
        record = np.zeros((), dtype=wire.COMMAND)
        record["message_id"] = self._robot._last_read
        if isinstance(command, JointPositions):
            record["q_c"] = command.q
            record["motion_generation_finished"] = command.motion_finished
        elif isinstance(command, JointVelocities):
            record["dq_c"] = command.dq
            record["motion_generation_finished"] = command.motion_finished
        elif isinstance(command, CartesianPose):
            record["O_T_EE_c"] = command.O_T_EE
            record["motion_generation_finished"] = command.motion_finished
        elif isinstance(command, CartesianVelocities):
            record["O_dP_EE_c"] = command.O_dP_EE
            record["motion_generation_finished"] = command.motion_finished
        elif isinstance(command, Torques):
            record["tau_J_d"] = command.tau_J
            record["torque_command_finished"] = command.motion_finished
        else:
            raise TypeError(f"unsupported command {type(command).__name__}")
        self._robot.robot.receive(record)
        if command.motion_finished:
            # libfranka waits for the robot to confirm the end of the motion.
            deadline = time.monotonic() + UDP_TIMEOUT
            while self._robot.robot.moving and time.monotonic() < deadline:
                time.sleep(PERIOD / 2)
                self._raise_for(self._robot._advance())
            self.active = False
            if self._robot.robot.mode is wire.RobotMode.REFLEX:
                raise ControlException("libfranka: Move command aborted: motion aborted by reflex! "
                                       f"{Errors(wire.error_bits(self._robot.robot.last_motion_errors))}")

    def _raise_for(self, event: str | None) -> None:
        if event == "reflex":
            self.active = False
            names = Errors(wire.error_bits(self._robot.robot.last_motion_errors))
            raise ControlException(f"libfranka: Move command aborted: motion aborted by reflex! {names}")
