"""The FCI wire format as libfranka (protocol version 10) speaks it.

TCP port 1337 carries commands, each message a header of three little-endian
u32 (command, command_id, size including the header) and a body. UDP carries
one :data:`STATE` datagram per millisecond robot -> client and one
:data:`COMMAND` datagram per state client -> robot. Field offsets were
confirmed against pylibfranka 0.21.3 (every float and error bit probed).
"""

from __future__ import annotations

import struct
from enum import IntEnum

import numpy as np

PROTOCOL_VERSION = 10
TCP_PORT = 1337
HEADER = struct.Struct("<III")


class Command(IntEnum):
    CONNECT = 0
    MOVE = 1
    STOP_MOVE = 2
    SET_COLLISION_BEHAVIOR = 3
    SET_JOINT_IMPEDANCE = 4
    SET_CARTESIAN_IMPEDANCE = 5
    SET_GUIDING_MODE = 6
    SET_EE_TO_K = 7
    SET_NE_TO_EE = 8
    SET_LOAD = 9
    AUTOMATIC_ERROR_RECOVERY = 10
    GET_ROBOT_MODEL = 11


class MoveStatus(IntEnum):
    SUCCESS = 0
    MOTION_STARTED = 1
    PREEMPTED = 2
    PREEMPTED_DUE_TO_ACTIVATED_SAFETY_FUNCTIONS = 3
    COMMAND_REJECTED_DUE_TO_ACTIVATED_SAFETY_FUNCTIONS = 4
    COMMAND_NOT_POSSIBLE_REJECTED = 5
    START_AT_SINGULAR_POSE_REJECTED = 6
    INVALID_ARGUMENT_REJECTED = 7
    REFLEX_ABORTED = 8
    EMERGENCY_ABORTED = 9
    INPUT_ERROR_ABORTED = 10
    ABORTED = 11


class MoveController(IntEnum):
    """Controller mode in a Move request."""

    JOINT_IMPEDANCE = 0
    CARTESIAN_IMPEDANCE = 1
    EXTERNAL = 2


class MoveGenerator(IntEnum):
    """Motion generator mode in a Move request."""

    JOINT_POSITION = 0
    JOINT_VELOCITY = 1
    CARTESIAN_POSITION = 2
    CARTESIAN_VELOCITY = 3
    NONE = 4


class StateGenerator(IntEnum):
    """Motion generator mode as the state datagram reports it."""

    IDLE = 0
    JOINT_POSITION = 1
    JOINT_VELOCITY = 2
    CARTESIAN_POSITION = 3
    CARTESIAN_VELOCITY = 4
    NONE = 5


class StateController(IntEnum):
    """Controller mode as the state datagram reports it."""

    JOINT_IMPEDANCE = 0
    CARTESIAN_IMPEDANCE = 1
    EXTERNAL = 2
    OTHER = 3


class RobotMode(IntEnum):
    OTHER = 0
    IDLE = 1
    MOVE = 2
    GUIDING = 3
    REFLEX = 4
    USER_STOPPED = 5
    AUTOMATIC_ERROR_RECOVERY = 6


# libfranka's error names, in the order of the 41 error bits on the wire.
ERROR_NAMES: tuple[str, ...] = (
    "joint_position_limits_violation",
    "cartesian_position_limits_violation",
    "self_collision_avoidance_violation",
    "joint_velocity_violation",
    "cartesian_velocity_violation",
    "force_control_safety_violation",
    "joint_reflex",
    "cartesian_reflex",
    "max_goal_pose_deviation_violation",
    "max_path_pose_deviation_violation",
    "cartesian_velocity_profile_safety_violation",
    "joint_position_motion_generator_start_pose_invalid",
    "joint_motion_generator_position_limits_violation",
    "joint_motion_generator_velocity_limits_violation",
    "joint_motion_generator_velocity_discontinuity",
    "joint_motion_generator_acceleration_discontinuity",
    "cartesian_position_motion_generator_start_pose_invalid",
    "cartesian_motion_generator_elbow_limit_violation",
    "cartesian_motion_generator_velocity_limits_violation",
    "cartesian_motion_generator_velocity_discontinuity",
    "cartesian_motion_generator_acceleration_discontinuity",
    "cartesian_motion_generator_elbow_sign_inconsistent",
    "cartesian_motion_generator_start_elbow_invalid",
    "force_controller_desired_force_tolerance_violation",
    "start_elbow_sign_inconsistent",
    "communication_constraints_violation",
    "power_limit_violation",
    "cartesian_motion_generator_joint_position_limits_violation",
    "cartesian_motion_generator_joint_velocity_limits_violation",
    "cartesian_motion_generator_joint_velocity_discontinuity",
    "cartesian_motion_generator_joint_acceleration_discontinuity",
    "cartesian_position_motion_generator_invalid_frame",
    "controller_torque_discontinuity",
    "joint_p2p_insufficient_torque_for_planning",
    "tau_j_range_violation",
    "instability_detected",
    "joint_move_in_wrong_direction",
    "cartesian_spline_motion_generator_violation",
    "joint_via_motion_generator_planning_joint_limit_violation",
    "base_acceleration_initialization_timeout",
    "base_acceleration_invalid_reading",
)
ERROR_INDEX = {name: i for i, name in enumerate(ERROR_NAMES)}

# (first index, count) of each field among the state datagram's 320 float32 values.
STATE_FLOATS: dict[str, tuple[int, int]] = {}
_offset = 0
for _name, _count in (
    ("O_T_EE", 16), ("O_T_EE_d", 16), ("F_T_EE", 16), ("EE_T_K", 16), ("F_T_NE", 16), ("NE_T_EE", 16),
    ("m_ee", 1), ("I_ee", 9), ("F_x_Cee", 3), ("m_load", 1), ("I_load", 9), ("F_x_Cload", 3),
    ("elbow", 2), ("elbow_d", 2), ("tau_J", 7), ("tau_J_d", 7), ("dtau_J", 7), ("q", 7), ("q_d", 7),
    ("dq", 7), ("dq_d", 7), ("ddq_d", 7), ("joint_contact", 7), ("cartesian_contact", 6),
    ("joint_collision", 7), ("cartesian_collision", 6), ("tau_ext_hat_filtered", 7),
    ("O_F_ext_hat_K", 6), ("K_F_ext_hat_K", 6), ("O_dP_EE_d", 6), ("O_ddP_O", 3), ("elbow_c", 2),
    ("delbow_c", 2), ("ddelbow_c", 2), ("O_T_EE_c", 16), ("O_dP_EE_c", 6), ("O_ddP_EE_c", 6),
    ("theta", 7), ("dtheta", 7),
):
    STATE_FLOATS[_name] = (_offset, _count)
    _offset += _count
STATE_FLOAT_COUNT = 320  # the rest are reserved

STATE = np.dtype([
    ("message_id", "<u8"),
    ("values", "<f4", (STATE_FLOAT_COUNT,)),
    ("motion_generator_mode", "u1"),
    ("controller_mode", "u1"),
    ("errors", "u1", (len(ERROR_NAMES),)),
    ("reflex_reason", "u1", (len(ERROR_NAMES),)),
    ("robot_mode", "u1"),
    ("control_command_success_rate", "<f4"),
])
assert STATE.itemsize == 1377

COMMAND = np.dtype([
    ("message_id", "<u8"),
    ("q_c", "<f8", (7,)),
    ("dq_c", "<f8", (7,)),
    ("O_T_EE_c", "<f8", (16,)),
    ("O_dP_EE_c", "<f8", (6,)),
    ("elbow_c", "<f8", (2,)),
    ("valid_elbow", "u1"),
    ("motion_generation_finished", "u1"),
    ("tau_J_d", "<f8", (7,)),
    ("torque_command_finished", "u1"),
])
assert COMMAND.itemsize == 371

CONNECT_REQUEST = struct.Struct("<HH")  # version, udp_port
CONNECT_RESPONSE = struct.Struct("<BH")  # status, version
MOVE_REQUEST = struct.Struct("<II3d3dB7d")  # controller, generator, joint dev., cartesian dev., async, max velocity
STATUS = struct.Struct("<B")
COLLISION_BEHAVIOR = struct.Struct("<52d")
LOAD_REQUEST = struct.Struct("<13d")  # m_load (kg), F_x_Cload (3, m), I_load (9, kg m^2, column-major)


def message(command: int, command_id: int, body: bytes = b"") -> bytes:
    """A TCP message: header + body."""
    return HEADER.pack(command, command_id, HEADER.size + len(body)) + body


def new_state() -> np.ndarray:
    """A zeroed state record (a numpy scalar record, set fields then ``tobytes()``)."""
    return np.zeros((), dtype=STATE)


def set_floats(record: np.ndarray, name: str, values) -> None:
    start, count = STATE_FLOATS[name]
    record["values"][start:start + count] = values


def get_floats(record: np.ndarray, name: str) -> np.ndarray:
    start, count = STATE_FLOATS[name]
    return record["values"][start:start + count].astype(np.float64)


def decode_command(data: bytes) -> np.ndarray | None:
    """A command record, or None when the datagram has the wrong size."""
    if len(data) != COMMAND.itemsize:
        return None
    return np.frombuffer(data, dtype=COMMAND)[0]


def error_bits(names) -> np.ndarray:
    bits = np.zeros(len(ERROR_NAMES), dtype=np.uint8)
    for name in names:
        bits[ERROR_INDEX[name]] = 1
    return bits


def error_names(bits) -> tuple[str, ...]:
    return tuple(name for name, bit in zip(ERROR_NAMES, bits, strict=True) if bit)
