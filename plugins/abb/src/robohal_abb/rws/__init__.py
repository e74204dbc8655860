"""ABB Robot Web Services: one client for RobotWare 6 (RWS 1.0) and RobotWare 7 (RWS 2.0).

- :mod:`.client`: :class:`RwsClient`, every call the cell needs, with a deadline each
- :mod:`.dialects`: how each dialect spells a call (paths, verbs, media types, authentication)
- :mod:`.parse`: answers to Python values, hardened against whatever comes back
- :mod:`.subscriptions`: the controller's websocket events (execution, I/O, event log)
- :mod:`.values`: the value types; :mod:`.errors`: the errors, in robohal's classes
"""

from __future__ import annotations

from .client import RwsClient
from .errors import (
    RapidBuildError,
    RwsAuthError,
    RwsDisconnected,
    RwsError,
    RwsNotFound,
    RwsProtocolError,
    RwsTimeout,
    RwsUnreachable,
    RwsUnsupported,
)
from .values import BuildError, ElogEntry, Event, ExecutionState, Signal, SystemInfo

__all__ = [
    "BuildError", "ElogEntry", "Event", "ExecutionState", "RapidBuildError", "RwsAuthError", "RwsClient",
    "RwsDisconnected", "RwsError", "RwsNotFound", "RwsProtocolError", "RwsTimeout", "RwsUnreachable",
    "RwsUnsupported", "Signal", "SystemInfo",
]
