"""A session with a robot's Desk, in whichever of its two dialects the robot speaks (detected):
control taken and given back by robohal's rules, the joints, FCI, the safety self-tests and
recovery. :mod:`.bringup` builds on it; the dialects' wire is in :mod:`.v1` and :mod:`.web`.

Robohal's rules for control: a token this user left (in :mod:`.tokens`) is used again while Desk
still has it active; control held by someone else is reported with its owner and never taken
without ``force``. With ``force``, the Desk API v1 queues the request and asks the holder to
release it (``timeout`` s); the web session takes it once someone presses the circle button on
the robot's Pilot within the time the robot announces.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable

from robohal.errors import ConnectFailed, RobohalError
from robohal.net.credentials import Credentials

from .records import ControlHeld, ControlToken, DeskStatus
from .tokens import TokenStore
from .transport import TIMEOUT, DeskTransport, TlsContext
from .v1 import V1Desk
from .web import WebDesk

log = logging.getLogger("robohal.franka.desk")

TAKE_TIMEOUT = 30.0  # s a forced take waits by default (franky's default wait_timeout)
SELF_TEST_TIMEOUT = 600.0  # s: self-tests "can take a few minutes" (a third-party client's note)
POLL = 0.1  # s between looks while waiting on the robot (our choice)


def default_owner() -> str:
    """Who robohal asks for control as (Desk shows it to the others)."""
    return f"robohal@{socket.gethostname()}"


class DeskSession:
    """One session with the Desk at ``url`` (``https://ROBOT[:PORT]``). Use it as a context
    manager, or :meth:`open` and :meth:`close`. ``tls`` makes the context that trusts the robot's
    certificate (:func:`.access.desk_tls`); ``model`` picks the web dialect's brake paths first."""

    def __init__(self, url: str, credentials: Credentials, *, tls: TlsContext, model: str = "franka.fr3",
                 owner: str | None = None, tokens: TokenStore | None = None, timeout: float = TIMEOUT) -> None:
        self.transport = DeskTransport(url, tls, timeout)
        self.credentials = credentials
        self.model = model
        self.owner = owner or default_owner()
        self.tokens = tokens if tokens is not None else TokenStore()
        self.dialect: V1Desk | WebDesk | None = None
        self.token: ControlToken | None = None
        self.say: Callable[[str], None] = log.warning  # what a person near the robot must do (the Pilot)

    def __repr__(self) -> str:
        return f"DeskSession({self.transport.url!r}, user={self.credentials.user!r})"

    def __enter__(self) -> DeskSession:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def address(self) -> str:
        return self.transport.address

    # Session -------------------------------------------------------------------------------

    def open(self) -> DeskSession:
        """Connect and detect the dialect: the Desk API v1 answers ``/api/system`` (200, or 401 for
        wrong credentials); a robot with the older web session has no such path (404)."""
        v1 = V1Desk(self.transport, self.credentials)
        answer = self.transport.request("GET", "/api/system", headers=v1._auth)
        if answer.status == 401:
            raise ConnectFailed(f"franka Desk at {self.address} refused the credentials of {self.credentials}"
                                " (HTTP 401)", address=self.address)
        if 200 <= answer.status < 300:
            self.dialect = v1
        elif answer.status == 404:
            web = WebDesk(self.transport, self.credentials, self.model)
            web.login()
            self.dialect = web
        else:
            raise ConnectFailed(f"franka Desk at {self.address} answered HTTP {answer.status} to /api/system: no Desk"
                                " robohal knows", address=self.address)
        stored = self.tokens.load(self.address, self.credentials.user, self.dialect.name)
        if stored is not None:
            if self.dialect.holds(stored):
                self.token = stored
            else:
                self.tokens.forget(self.address, self.credentials.user)
        return self

    def _desk(self) -> V1Desk | WebDesk:
        if self.dialect is None:
            raise RobohalError("franka Desk: the session is not open")
        return self.dialect

    def close(self) -> None:
        """End the session; control stays taken (and stored) until :meth:`release_control`."""
        if self.dialect is not None:
            self.dialect.close()
        self.transport.close()

    def status(self) -> DeskStatus:
        return self._desk().status()

    # Control -------------------------------------------------------------------------------

    @property
    def has_control(self) -> bool:
        return self.token is not None and self._desk().holds(self.token)

    def take_control(self, *, force: bool = False, timeout: float = TAKE_TIMEOUT) -> ControlToken:
        """Control of the robot: the one held already, else Desk's grant (see the module's rules).
        :class:`ControlHeld` names the holder where someone else keeps it."""
        desk = self._desk()
        if self.token is not None and desk.holds(self.token):
            return self.token
        owner, _ = desk.holder()
        if owner is not None and not force:
            raise ControlHeld(
                f"franka Desk: {owner} holds control of the robot at {self.address}; robohal does not take it from"
                f" them. Ask them to release it, or take it anyway with --force (force=True): "
                + ("Desk then asks them to release it." if desk.name == "v1"
                   else "someone at the robot then confirms by pressing the circle button on its Pilot."), owner=owner)
        if isinstance(desk, V1Desk):
            token = desk.take(self.owner, timeout if owner is not None else min(timeout, 10.0))
        else:
            token = self._request_web(desk, force and owner is not None)
        self.token = token
        self.tokens.save(self.address, self.credentials.user, desk.name, token)
        return token

    def _request_web(self, desk: WebDesk, force: bool) -> ControlToken:
        token = desk.request(self.owner, force)
        if desk.holds(token):
            return token
        wait = desk.force_timeout() if force else 0.0
        if force:
            self.say(f"franka Desk at {self.address}: press the circle button on the robot's Pilot within {wait:g} s"
                     " to confirm that robohal takes control")
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            time.sleep(POLL)
            if desk.holds(token):
                return token
        owner, _ = desk.holder()
        try:
            desk.release(token)  # withdraw the request: it must not be granted later, unseen
        except RobohalError:
            pass
        raise ControlHeld(f"franka Desk: {owner or 'another user'} kept control"
                          + (f"; nobody pressed the Pilot's circle button within {wait:g} s" if force else ""),
                          owner=owner)

    def release_control(self) -> None:
        """Give control back (FCI ends with it) and forget the stored token."""
        token, self.token = self.token, None
        self.tokens.forget(self.address, self.credentials.user)
        if token is not None:
            self._desk().release(token)

    def _control(self) -> ControlToken:
        if self.token is None:
            raise RobohalError("franka Desk: take control first (take_control)")
        return self.token

    # The arm -------------------------------------------------------------------------------

    def unlock(self) -> None:
        """Open the joints' brakes (blocks until they are open)."""
        self._desk().unlock(self._control())

    def lock(self) -> None:
        """Close the joints' brakes; with control or without (Desk lets anyone lock)."""
        self._desk().lock(self.token)

    def fci(self, on: bool) -> None:
        self._desk().fci(self._control(), on)

    def self_test(self, timeout: float = SELF_TEST_TIMEOUT) -> DeskStatus:
        """Run the safety self-tests and wait for their end; :class:`RobohalError` if they failed."""
        desk = self._desk()
        desk.start_self_test(self._control())
        deadline = time.monotonic() + timeout
        status = desk.status()
        while status.self_test == "Running":
            if time.monotonic() > deadline:
                raise RobohalError(f"franka Desk: the self-tests still ran after {timeout:g} s")
            time.sleep(POLL)
            status = desk.status()
        if status.self_test not in ("OK", ""):
            raise RobohalError(f"franka Desk: the safety self-tests ended {status.self_test}; safety errors:"
                               f" {', '.join(status.safety_errors) or 'none'}. Confirm them (robohal franka recover)"
                               " and run the self-tests again.")
        return status

    def recover(self) -> list[str]:
        """Confirm the pending safety recovery, if any; the errors it cleared."""
        desk = self._desk()
        pending = desk.recovery()
        if pending is None:
            return []
        desk.confirm(self.token, pending)
        return [str(e) for e in pending.get("safetyErrors", pending.get("errors", [pending.get("type")]))]
