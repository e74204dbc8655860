"""robohal: one Python API for robot arms, from hobby servos to industrial cells.

    import robohal
    with robohal.connect("sim://?model=generic.planar2") as robot:
        robot.move_joints([0.5, -0.3])

Models (kinematics) and backends (hardware drivers) come from plugins; see
``robohal plugins`` and ``robohal models``.
"""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .control.backend import Backend
from .control.handle import MotionHandle
from .control.lifecycle import LifecycleState
from .control.tools import Gripper, GripperBusy, GripperLimits, GripperState, IoPorts, Signal, SignalGripper
from .errors import (
    ConnectFailed,
    ConnectionLost,
    HardwareFault,
    InvalidArgument,
    LimitViolation,
    PluginConflictError,
    PluginError,
    ProtocolError,
    RobohalError,
    UnknownNameError,
    UnreachableError,
    Unsupported,
    UriError,
)
from .kinematics import JointLimits, Kinematics, Solutions
from .motion import Motion, MotionResult
from .payload import Payload
from .plugins.hookspecs import hookimpl
from .plugins.records import BackendSpec, CommandSpec, DemoSpec, ModelSpec, SimulatorSpec, ToolSpec
from .plugins.registry import Registry, default_registry, use_registry
from .robot import Robot
from .state import RobotMode, RobotState
from .uri import RobotUri, parse_uri

# Events (connect, close, faults, lost links, the first of each kind of bad datagram) go to
# the "robohal" loggers; shown once the application configures logging (logging.basicConfig()).
logging.getLogger(__name__).addHandler(logging.NullHandler())

try:
    __version__ = version("robohal")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0"


def connect(uri: str | RobotUri, *, registry: Registry | None = None, **model_options: Any) -> Robot:
    """Connect to the robot a URI names and return a :class:`Robot`.

    ``sim://?model=NAME`` is an in-process simulated robot; ``SCHEME://sim?...``
    starts the backend's bundled simulator (its own process, loopback only).
    """
    from .connection import open_robot

    return open_robot(uri, registry=registry, **model_options)


def get_model(name: str, *, registry: Registry | None = None, **options: Any) -> Kinematics:
    """Build a registered robot model by name (``abb.irb1410``, ``franka.fr3``, ...)."""
    return (registry or default_registry()).get_model(name, **options)


def models(*, registry: Registry | None = None) -> list[ModelSpec]:
    """Every registered model's record, sorted by name."""
    return (registry or default_registry()).models()


def backends(*, registry: Registry | None = None) -> list[BackendSpec]:
    """Every registered backend's record, sorted by scheme."""
    return (registry or default_registry()).backends()


__all__ = [
    "Backend", "BackendSpec", "CommandSpec", "ConnectFailed", "ConnectionLost", "DemoSpec", "Gripper", "GripperBusy", "GripperLimits",
    "GripperState", "HardwareFault", "InvalidArgument", "IoPorts", "JointLimits", "Kinematics", "LifecycleState",
    "LimitViolation", "ModelSpec", "Motion", "MotionHandle", "MotionResult", "Payload", "PluginConflictError", "PluginError", "ProtocolError",
    "Registry", "RobohalError", "Robot", "RobotMode", "RobotState", "RobotUri", "Signal", "SignalGripper", "SimulatorSpec",
    "Solutions", "ToolSpec", "UnknownNameError", "UnreachableError", "Unsupported", "UriError", "__version__", "backends",
    "connect", "default_registry", "get_model", "hookimpl", "models", "parse_uri", "use_registry",
]
