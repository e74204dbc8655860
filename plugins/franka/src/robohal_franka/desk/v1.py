"""The Desk API v1 (current FR3 system images): HTTP Basic authentication on every request,
``X-Control-Token`` on control calls. The paths and payloads as franky-control's ``Desk`` and
other clients of real robots send them (see :mod:`robohal_franka.simulated_desk` for the sources)."""

from __future__ import annotations

import base64
import json
from typing import Any

from robohal.errors import ConnectFailed, ProtocolError
from robohal.net.credentials import Credentials

from .records import ControlHeld, ControlToken, DeskStatus
from .transport import Answer, DeskRefused, DeskTransport, refusal

NAME = "v1"


class V1Desk:
    """One robot's Desk API v1."""

    name = NAME

    def __init__(self, transport: DeskTransport, credentials: Credentials) -> None:
        self.transport = transport
        self.credentials = credentials
        basic = base64.b64encode(f"{credentials.user}:{credentials.password}".encode()).decode()
        self._auth = {"Authorization": f"Basic {basic}"}

    def __repr__(self) -> str:
        return f"V1Desk({self.transport.url!r}, user={self.credentials.user!r})"

    def _call(self, method: str, path: str, what: str, *, body: dict | None = None, token: ControlToken | None = None,
              timeout: float | None = None) -> Answer:
        headers = dict(self._auth)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if token is not None:
            headers["X-Control-Token"] = token.secret
        answer = self.transport.request(method, path, body=data, headers=headers, timeout=timeout)
        if answer.status == 401:
            raise ConnectFailed(f"franka Desk at {self.transport.address} refused the credentials of {self.credentials}"
                                " (HTTP 401)", address=self.transport.address)
        if not 200 <= answer.status < 300:
            raise refusal(answer, what)
        return answer

    def _get(self, path: str, what: str) -> Any:
        return self._call("GET", path, what).json()

    @staticmethod
    def _object(value: Any, what: str) -> dict:
        if not isinstance(value, dict):
            raise ProtocolError(f"franka Desk: {what} is not a JSON object: {str(value)[:80]}")
        return value

    # Reading -------------------------------------------------------------------------------

    def holder(self) -> tuple[str | None, str | None]:
        """(owner, token id) of whoever holds control, or (None, None)."""
        data = self._object(self._get("/api/system/control-token", "reading the control token"), "the control token")
        token_id = data.get("tokenId")
        return (None if data.get("owner") is None else str(data["owner"]),
                None if token_id is None else str(token_id))

    def status(self) -> DeskStatus:
        owner, token_id = self.holder()
        joints = self._get("/api/arm/joints", "reading the joints")
        if not isinstance(joints, list) or not all(isinstance(j, dict) for j in joints):
            raise ProtocolError(f"franka Desk: the joints are not a list of objects: {str(joints)[:80]}")
        brakes = {str(j.get("brakeStatus")) for j in joints}
        fci = self._object(self._get("/api/fci", "reading FCI"), "FCI").get("status")
        mode = self._object(self._get("/api/system/operating-mode", "reading the operating mode"), "the mode")
        tests = self._object(self._get("/api/safety/self-tests", "reading the self-tests"), "the self-tests")
        recovery = self._object(self._get("/api/safety/recovery", "reading the safety recovery"), "the recovery")
        pending = recovery.get("recovery")
        errors: tuple[str, ...] = ()
        if isinstance(pending, dict):
            listed = pending.get("safetyErrors")
            errors = tuple(str(e) for e in listed) if isinstance(listed, list) and listed else (str(pending.get("type")),)
        return DeskStatus(NAME, owner, token_id, fci == "Active", brakes.pop() if len(brakes) == 1 else "Mixed",
                          str(mode.get("status", "")), str(tests.get("status", "")), errors)

    def holds(self, token: ControlToken) -> bool:
        return self.holder()[1] == token.id

    # Control -------------------------------------------------------------------------------

    def take(self, owner: str, timeout: float) -> ControlToken:
        """Ask for control; Desk queues the request while another holds it (asking them to
        release) and answers 424 ``Timeout`` when ``timeout`` passes: :class:`ControlHeld`."""
        try:
            answer = self._call("POST", "/api/system/control-token:take", "taking control",
                                body={"owner": owner, "timeout": timeout}, timeout=timeout + 10.0)
        except DeskRefused as refused:
            if refused.status == 424:
                holder = self.holder()[0]
                raise ControlHeld(f"franka Desk: {holder or 'another user'} kept control for {timeout:g} s; Desk asked"
                                  " them to release it. Ask them, or wait longer.", owner=holder) from None
            raise
        data = self._object(answer.json(), "the granted control token")
        if not isinstance(data.get("token"), str):
            raise ProtocolError("franka Desk granted control without a token")
        return ControlToken(str(data.get("tokenId")), owner, data["token"])

    def release(self, token: ControlToken) -> None:
        self._call("POST", "/api/system/control-token:release", "releasing control", token=token)

    def unlock(self, token: ControlToken) -> None:
        self._call("POST", "/api/arm/joints:unlock", "unlocking the joints", token=token, timeout=60.0)

    def lock(self, token: ControlToken | None) -> None:
        self._call("POST", "/api/arm/joints:lock", "locking the joints", token=token, timeout=60.0)

    def fci(self, token: ControlToken, on: bool) -> None:
        self._call("POST", "/api/fci:activate" if on else "/api/fci:deactivate",
                   "activating FCI" if on else "deactivating FCI", token=token)

    def start_self_test(self, token: ControlToken) -> None:
        self._call("POST", "/api/safety/self-tests:execute", "starting the safety self-tests", token=token)

    def recovery(self) -> dict | None:
        pending = self._object(self._get("/api/safety/recovery", "reading the safety recovery"), "the recovery")
        value = pending.get("recovery")
        return value if isinstance(value, dict) else None

    def confirm(self, token: ControlToken | None, recovery: dict) -> None:
        """Confirm a pending recovery: its type, and for a SafetyError its list of errors (franky's
        ``Desk.recover``)."""
        body: dict[str, Any] = {"type": recovery.get("type")}
        for key in ("safetyErrors", "safeInputs"):
            if key in recovery:
                body[key] = recovery[key]
        self._call("POST", "/api/safety/recovery:confirm", "confirming the safety recovery", body=body, token=token)

    def close(self) -> None:
        self.transport.close()
