"""The older Desk web session (Panda, earlier FR3 images): a login with Franka's encoded password
gives the ``authorization`` cookie; control calls carry ``X-Control-Token``. The paths and payloads
as franky-control's ``DeskWebSession``, panda-py's ``Desk`` and jk-ethz/franka_lock_unlock send them
(see :mod:`robohal_franka.simulated_desk` for the sources)."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any
from urllib.parse import urlencode

from robohal.errors import ConnectFailed, ProtocolError
from robohal.net.credentials import Credentials

from .records import ControlToken, DeskStatus
from .transport import Answer, DeskRefused, DeskTransport, refusal

NAME = "web"
#: the brakes' paths: the FR3's, then the Panda's (panda-py); a 404 from one means the other
BRAKES = {"franka.fr3": ("/desk/api/joints/unlock", "/desk/api/joints/lock"),
          "franka.panda": ("/desk/api/robot/open-brakes", "/desk/api/robot/close-brakes")}


def encode_password(user: str, password: str) -> str:
    """What Desk's login page sends as the password: base64 of the comma-joined decimal bytes of
    sha256("PASSWORD#USER@franka") (franky, panda-py)."""
    digest = hashlib.sha256(f"{password}#{user}@franka".encode()).digest()
    return base64.encodebytes(",".join(str(b) for b in digest).encode()).decode()


class WebDesk:
    """One robot's Desk through the older web session."""

    name = NAME

    def __init__(self, transport: DeskTransport, credentials: Credentials, model: str = "franka.fr3") -> None:
        self.transport = transport
        self.credentials = credentials
        self.model = model if model in BRAKES else "franka.fr3"
        self._cookie: str | None = None

    def __repr__(self) -> str:
        return f"WebDesk({self.transport.url!r}, user={self.credentials.user!r})"

    def login(self) -> None:
        body = json.dumps({"login": self.credentials.user,
                           "password": encode_password(self.credentials.user, self.credentials.password)}).encode()
        answer = self.transport.request("POST", "/admin/api/login", body=body,
                                        headers={"Content-Type": "application/json"})
        if answer.status in (401, 403):
            raise ConnectFailed(f"franka Desk at {self.transport.address} refused the credentials of {self.credentials}"
                                f" (HTTP {answer.status})", address=self.transport.address)
        if answer.status != 200:
            raise refusal(answer, "the login")
        cookie = answer.body.decode(errors="replace").strip()
        if not cookie or any(c in cookie for c in ";\r\n "):
            raise ProtocolError("franka Desk: the login answered no session")
        self._cookie = cookie

    def _call(self, method: str, path: str, what: str, *, body: dict | None = None, form: dict | None = None,
              token: ControlToken | None = None, timeout: float | None = None, missing_ok: bool = False) -> Answer:
        if self._cookie is None:
            self.login()
        headers = {"Cookie": f"authorization={self._cookie}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        elif form is not None:
            data = urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if token is not None:
            headers["X-Control-Token"] = token.secret
        answer = self.transport.request(method, path, body=data, headers=headers, timeout=timeout)
        if answer.status == 401:
            self._cookie = None
            raise ConnectFailed(f"franka Desk at {self.transport.address} refused the session of {self.credentials}"
                                " (HTTP 401)", address=self.transport.address)
        if missing_ok and answer.status == 404:
            return answer
        if not 200 <= answer.status < 300:
            raise refusal(answer, what)
        return answer

    def _get(self, path: str, what: str) -> dict:
        value = self._call("GET", path, what).json()
        if not isinstance(value, dict):
            raise ProtocolError(f"franka Desk: {what} answered no JSON object: {str(value)[:80]}")
        return value

    # Reading -------------------------------------------------------------------------------

    def _system(self) -> dict:
        return self._get("/admin/api/system-status", "reading the system status")

    def holder(self) -> tuple[str | None, str | None]:
        token = self._system().get("controlToken")
        active = token.get("activeToken") if isinstance(token, dict) else None
        if not isinstance(active, dict):
            return None, None
        return str(active.get("ownedBy")), str(active.get("id"))

    def status(self) -> DeskStatus:
        system = self._system()
        token = system.get("controlToken")
        safety = system.get("safety")
        derived = system.get("derived")
        if not all(isinstance(part, dict) for part in (token, safety, derived)):
            raise ProtocolError("franka Desk: the system status lacks controlToken, safety or derived")
        active = token.get("activeToken")
        brakes = safety.get("brakeState")
        states = {str(b) for b in brakes} if isinstance(brakes, list) else {"?"}
        errors = safety.get("recoverableErrors")
        pending = tuple(sorted(name for name, on in errors.items() if on)) if isinstance(errors, dict) else ()
        controller = str(safety.get("safetyControllerStatus", ""))
        self_test = {"SelfTest": "Running", "Work": "OK"}.get(controller, controller)
        return DeskStatus(NAME, str(active.get("ownedBy")) if isinstance(active, dict) else None,
                          str(active.get("id")) if isinstance(active, dict) else None, bool(token.get("fciActive")),
                          states.pop() if len(states) == 1 else "Mixed", str(derived.get("operatingMode", "")),
                          self_test, pending)

    def holds(self, token: ControlToken) -> bool:
        return self.holder()[1] == token.id

    def force_timeout(self) -> float:
        """How long a forced request waits for the Pilot's circle button (``tokenForceTimeout``)."""
        value = self._get("/admin/api/safety", "reading the safety settings").get("tokenForceTimeout")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 3600:
            raise ProtocolError(f"franka Desk: tokenForceTimeout is {value!r}")
        return float(value)

    # Control -------------------------------------------------------------------------------

    def request(self, owner: str, force: bool) -> ControlToken:
        """A request for control: a token that is active at once when nobody holds control, else
        once the holder releases it (or, forced, once the Pilot's circle button confirms it)."""
        data = self._call("POST", "/admin/api/control-token/request" + ("?force" if force else ""),
                          "requesting control", body={"requestedBy": owner}).json()
        if not isinstance(data, dict) or not isinstance(data.get("token"), str) or data.get("id") is None:
            raise ProtocolError("franka Desk answered a control request without id and token")
        return ControlToken(str(data["id"]), owner, data["token"])

    def release(self, token: ControlToken) -> None:
        self._call("DELETE", "/admin/api/control-token", "releasing control", body={"token": token.secret})

    def _brakes(self, index: int, token: ControlToken | None, what: str) -> None:
        """The model's brake path first; on a 404 the other generation's (as panda-py does)."""
        order = [self.model] + [m for m in BRAKES if m != self.model]
        for model in order:
            answer = self._call("POST", BRAKES[model][index], what, token=token, timeout=60.0, missing_ok=True)
            if answer.status != 404:
                self.model = model
                return
        raise DeskRefused(f"franka Desk serves neither the FR3's nor the Panda's brake paths ({what})", status=404)

    def unlock(self, token: ControlToken) -> None:
        self._brakes(0, token, "unlocking the joints")

    def lock(self, token: ControlToken | None) -> None:
        self._brakes(1, token, "locking the joints")

    def fci(self, token: ControlToken, on: bool) -> None:
        self._call("POST" if on else "DELETE", "/admin/api/control-token/fci",
                   "activating FCI" if on else "deactivating FCI", body={"token": token.secret}, token=token)

    def start_self_test(self, token: ControlToken) -> None:
        answer = self._call("POST", "/admin/api/safety/td2-tests/execute", "starting the safety self-tests",
                            token=token)
        data: Any = answer.json() if answer.body else None
        if isinstance(data, dict) and data.get("code") not in (None, "SuccessResponse"):
            raise DeskRefused(f"franka Desk did not start the self-tests: {data.get('code')}", status=answer.status,
                              code=str(data.get("code")))

    def recovery(self) -> dict | None:
        pending = self.status().safety_errors
        return {"type": "RecoverableErrors", "errors": list(pending)} if pending else None

    def confirm(self, token: ControlToken | None, recovery: dict) -> None:
        """Acknowledge each recoverable safety error (franky acknowledges TD2Timeout this way)."""
        for error in recovery.get("errors", []):
            self._call("POST", "/admin/api/safety/recoverable-safety-errors/acknowledge?" + urlencode({"error_id": error}),
                       f"acknowledging {error}", token=token)

    def close(self) -> None:
        if self._cookie is not None:
            try:
                self._call("POST", "/admin/api/logout", "logging out")
            except Exception:  # a session that ends anyway
                pass
            self._cookie = None
        self.transport.close()
