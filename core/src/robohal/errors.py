"""The robohal error hierarchy.

Every error a user can meet derives from :class:`RobohalError`. Errors that
reject bad input also derive from :class:`ValueError` (or :class:`LookupError`),
so generic ``except ValueError`` handlers keep working.
"""

from __future__ import annotations

from collections.abc import Sequence


class RobohalError(Exception):
    """Base class of every robohal error."""


class ConnectionLost(RobohalError):
    """The robot stopped answering, or the link to it broke: a link that was up went down."""


class ConnectFailed(RobohalError):
    """``connect()`` never reached the robot: nothing answered at the address (a refused or
    silent TCP port, no EGM message, no serial port or no firmware hello), or it refused us
    (wrong credentials). Not a :class:`ConnectionLost`: a loop that reconnects after a lost
    link must not spin on a wrong address. The message names the address and the next step."""

    def __init__(self, message: str, *, address: str = "") -> None:
        super().__init__(message)
        self.address = address


class Unsupported(RobohalError):
    """The robot or its backend cannot do what was asked (a payload on a servo arm, say);
    the message says what it can do instead."""


class ProtocolError(RobohalError):
    """The peer sent something the wire protocol does not allow."""


class HardwareFault(RobohalError):
    """The robot reports a fault (a reflex, motors off, an e-stop, ...).

    ``names`` keeps the hardware's own error names (libfranka's, ABB's, ...);
    ``recoverable`` says whether :meth:`Backend.recover` can clear it.
    """

    def __init__(self, message: str, *, names: Sequence[str] = (), recoverable: bool = True) -> None:
        super().__init__(message)
        self.names = tuple(names)
        self.recoverable = recoverable


class LimitViolation(RobohalError, ValueError):
    """A command would leave the robot's limits; it was refused before reaching a wire."""

    def __init__(
        self,
        message: str,
        *,
        joint: int | None = None,
        quantity: str | None = None,
        value: float | None = None,
        limit: float | None = None,
    ) -> None:
        super().__init__(message)
        self.joint = joint
        self.quantity = quantity
        self.value = value
        self.limit = limit


class InvalidArgument(RobohalError, ValueError):
    """An argument is malformed: wrong shape, NaN or inf, out of its domain."""


class UnreachableError(RobohalError, ValueError):
    """A target pose or path cannot be reached within the robot's limits."""


class UriError(RobohalError, ValueError):
    """A robot URI is malformed or names an unknown scheme."""


class UnknownNameError(RobohalError, LookupError):
    """A model, backend scheme or plugin name is not registered."""

    def __init__(self, kind: str, name: str, known: Sequence[str], advice: str = "") -> None:
        """``advice``: what to do about it, after the suggestions."""
        import difflib

        self.kind = kind
        self.name = name
        self.suggestions = tuple(difflib.get_close_matches(name, list(known), n=3, cutoff=0.5))
        hint = f"; did you mean {', '.join(self.suggestions)}?" if self.suggestions else ""
        if not known:
            hint = f"; no {kind}s are registered (is a plugin installed?)"
        super().__init__(f"unknown {kind} {name!r}{hint}" + (f" {advice}" if advice else ""))

    def __str__(self) -> str:  # LookupError would otherwise repr() the message
        return str(self.args[0])


class PluginError(RobohalError):
    """A plugin is broken or two plugins disagree."""


class PluginConflictError(PluginError):
    """Two plugins claim the same model name or URI scheme."""
