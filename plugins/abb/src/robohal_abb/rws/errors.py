"""What can go wrong talking to a controller's Robot Web Services, in robohal's error classes.

Every error carries what the controller said: the HTTP status, the controller's own return code
(``-1073445879``...) and its message, and which call it answered. A refused login names the user
(never the password) and is a :class:`~robohal.errors.ConnectFailed`, as is a controller nothing
answers at; a controller that stops answering in the middle of a call is a
:class:`~robohal.errors.ConnectionLost` (:class:`RwsTimeout`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from robohal.errors import ConnectFailed, ConnectionLost, ProtocolError, RobohalError, Unsupported

if TYPE_CHECKING:
    from .values import BuildError


class RwsError(RobohalError):
    """A call the controller refused or did not answer. ``status`` is the HTTP status (None when
    no answer came), ``code`` and ``detail`` the controller's own return code and message."""

    def __init__(self, message: str, *, status: int | None = None, code: int | None = None, detail: str = "",
                 method: str = "", path: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.detail = detail
        self.method = method
        self.path = path


class RwsAuthError(RwsError, ConnectFailed):
    """The controller refused the user (HTTP 401): nothing was changed. Names the user."""

    def __init__(self, message: str, *, user: str, address: str = "", **fields) -> None:
        super().__init__(message, **fields)
        self.user = user
        self.address = address


class RwsUnreachable(RwsError, ConnectFailed):
    """Nothing answered at the controller's address (refused, no route, or a name that does not resolve)."""

    def __init__(self, message: str, *, address: str = "", **fields) -> None:
        super().__init__(message, **fields)
        self.address = address


class RwsTimeout(RwsError, ConnectionLost):
    """The controller did not answer a call within its deadline."""


class RwsDisconnected(RwsError, ConnectionLost):
    """The connection to the controller broke in the middle of a call."""


class RwsNotFound(RwsError, LookupError):
    """The controller has no such resource (a signal, a task, a module, a file; HTTP 404)."""

    def __str__(self) -> str:  # LookupError would otherwise show the message's repr
        return str(self.args[0])


class RwsProtocolError(RwsError, ProtocolError):
    """The controller's answer is not what Robot Web Services sends (malformed or unexpected)."""


class RwsUnsupported(RwsError, Unsupported):
    """The controller or its RobotWare cannot do this (a dialect without the call, a manual mode
    step only the pendant can take)."""


class RapidBuildError(RwsError):
    """A RAPID module loaded with errors, or the task's program does not build; ``errors`` lists
    each (module, row, column, the controller's words)."""

    def __init__(self, message: str, *, errors: Sequence[BuildError] = (), **fields) -> None:
        super().__init__(message, **fields)
        self.errors = tuple(errors)
