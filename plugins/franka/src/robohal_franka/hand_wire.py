"""The Franka Hand's wire format, as libfranka's gripper research interface (version 3) speaks it.

TCP port 1338 carries commands: a packed little-endian header (u16 command, u32 command_id,
u32 size including the header) and a body; each request is answered once, when the command
ends, with the same header and a u16 status. The hand streams its state over UDP to the port
the client names in Connect. Layouts from libfranka-common's
``include/research_interface/gripper/types.h`` (``#pragma pack(1)``); the version and the
Connect layout were confirmed against pylibfranka 0.21.3.
"""

from __future__ import annotations

import struct
from enum import IntEnum

VERSION = 3
TCP_PORT = 1338
HEADER = struct.Struct("<HII")  # command, command_id, size


class Command(IntEnum):
    CONNECT = 0
    HOMING = 1
    GRASP = 2
    MOVE = 3
    STOP = 4


class Status(IntEnum):
    """The status of Homing, Grasp, Move and Stop; libfranka turns FAIL into
    ``CommandException("libfranka gripper: Command failed!")``, UNSUCCESSFUL into False and
    ABORTED into ``CommandException("libfranka gripper: Command aborted!")``."""

    SUCCESS = 0
    FAIL = 1
    UNSUCCESSFUL = 2
    ABORTED = 3


class ConnectStatus(IntEnum):
    SUCCESS = 0
    INCOMPATIBLE_LIBRARY_VERSION = 1


CONNECT_REQUEST = struct.Struct("<HH")  # version, udp_port
CONNECT_RESPONSE = struct.Struct("<HH")  # status, version
STATUS = struct.Struct("<H")
MOVE_REQUEST = struct.Struct("<2d")  # width, speed
GRASP_REQUEST = struct.Struct("<5d")  # width, epsilon inner, epsilon outer, speed, force
STATE = struct.Struct("<IddBH")  # message_id (ms), width, max_width, is_grasped, temperature (deg C)


def message(command: int, command_id: int, body: bytes = b"") -> bytes:
    return HEADER.pack(command, command_id, HEADER.size + len(body)) + body
