"""The simulated Desk's web server: HTTPS on the robot's address (port 443, as a robot's Desk;
a free port where 443 cannot be bound), with a self-signed certificate made at start, in one of
Desk's two dialects, and the Pilot's navigation-events websocket. It runs an asyncio loop in a
thread of the FCI simulator; the state and its rules are :class:`.simulated_desk.SimulatedDesk`'s.

Dialects (what a client meets; the paths and payloads as the clients that drive real robots send
them, see :mod:`.simulated_desk`):

- ``v1``, the Desk API of current FR3 system images: HTTP Basic authentication on every request,
  ``/api/...`` paths, JSON, ``X-Control-Token`` on control calls, 204 for a control call done.
- ``web``, the older web session (Panda, earlier FR3 images): ``POST /admin/api/login`` gives the
  ``authorization`` cookie; ``/admin/api/...`` and ``/desk/api/...`` paths; brakes at
  ``/desk/api/joints/...`` on an FR3 and ``/desk/api/robot/...-brakes`` on a Panda.

A path the dialect does not serve is a 404 with the robot's own text: an FR3 (and the v1 API)
answers an HTML page ``No handler accepted "PATH"`` (PATH without its ``/desk`` part: panda-py
issue 18), a Panda ``File not found`` (panda-py's tests).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import socket
from collections.abc import Awaitable, Callable

from aiohttp import WSMsgType, web
from robohal.sim.web_server import ThreadedWebServer, loopback_socket, self_signed_certificate, server_context

from .simulated_desk import EXECUTION, PROGRAMMING, DeskRefusal, SimulatedDesk

DESK_PORT = 443  # a robot's Desk: https://ROBOT_IP (Franka's set-up instructions)
DIALECTS = ("v1", "web")
JOINTS = 7
#: s a v1 control-token:take waits when it names no ``timeout`` (franky sends 30 by default; our choice)
DEFAULT_TAKE_TIMEOUT = 30.0
MAX_TAKE_TIMEOUT = 600.0  # our choice: a bound on one request's wait
#: the name the robot's certificate carries (panda-py connects its websocket with this server name)
ROBOT_NAME = "robot.franka.de"
SYSTEM_VERSIONS = {"franka.fr3": '"5.4.0"', "franka.panda": '"4.2.2"'}  # web: /admin/api/system-version (our figures)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def bind_desk_socket(address: str, port: int = DESK_PORT) -> socket.socket:
    """A listening socket on ``address``: ``port``, or a free one where that is not permitted
    (443 needs root or CAP_NET_BIND_SERVICE; our choice: serve anyway, the ready line names it)."""
    try:
        return loopback_socket(address, port, backlog=16)
    except PermissionError:
        return loopback_socket(address, 0, backlog=16)


class DeskServer(ThreadedWebServer):
    """The Desk of one simulated robot, served from its own thread (:meth:`start`, :meth:`stop`).
    :meth:`call` runs a function on the server's loop (stdin's control lines use it)."""

    thread_name = "robohal-desk"

    def __init__(self, desk: SimulatedDesk, address: str, *, dialect: str = "v1", model: str = "franka.fr3",
                 port: int = DESK_PORT) -> None:
        if dialect not in DIALECTS:
            raise ValueError(f"the Desk dialects are {', '.join(DIALECTS)}, not {dialect!r}")
        if dialect == "v1" and model != "franka.fr3":
            # franky: Desk (v1) is for "FR3 on System 5+ firmware", DeskWebSession for "Panda and FR3 on
            # pre-v1 firmware"
            raise ValueError("the Desk API v1 comes with FR3 system images only; the Panda has the web dialect (web)")
        self.desk = desk
        self.address = address
        self.dialect = dialect
        self.model = model
        certificate, key, self.fingerprint = self_signed_certificate(ROBOT_NAME, address, dns_names=(ROBOT_NAME,))
        super().__init__(bind_desk_socket(address, port), server_context(certificate, key))
        self._changed: asyncio.Future | None = None
        self._sockets: set[web.WebSocketResponse] = set()
        self.requests = 0
        #: set by the FCI simulator once it has applied the desk's state (its change count) to the
        #: FCI; None: nothing gates on this desk
        self.applied: int | None = None
        desk.on_change = self._wake
        desk.on_pilot = self._broadcast
        routes = V1_ROUTES if dialect == "v1" else web_routes(model)
        self._routes = {key: getattr(self, name) for key, name in routes.items()}

    @property
    def url(self) -> str:
        return f"https://{self.address}" + ("" if self.port == DESK_PORT else f":{self.port}")

    # Lifecycle ---------------------------------------------------------------------------

    def _application(self) -> web.Application:
        app = web.Application(middlewares=[self._answer_refusals])
        app.router.add_route("*", "/{path:.*}", self._dispatch)
        return app

    def _before_serving(self) -> None:
        self._changed = self.loop.create_future()

    def _after_serving(self) -> None:
        for websocket in list(self._sockets):
            self.loop.run_until_complete(websocket.close())

    # Waiting for the desk --------------------------------------------------------------------

    def _wake(self) -> None:
        self.desk.changes += 1
        changed = self._changed
        if changed is not None and not changed.done():
            changed.set_result(None)
            self._changed = self.loop.create_future()

    async def _until_changed(self, timeout: float) -> None:
        assert self._changed is not None
        try:
            await asyncio.wait_for(asyncio.shield(self._changed), timeout)
        except asyncio.TimeoutError:
            pass

    def _broadcast(self, event: dict) -> None:
        for websocket in list(self._sockets):
            self.loop.create_task(websocket.send_str(json.dumps(event)))

    # Requests ----------------------------------------------------------------------------

    @web.middleware
    async def _answer_refusals(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except DeskRefusal as refusal:
            headers = {"WWW-Authenticate": 'Basic realm="Franka Desk"'} if refusal.status == 401 and \
                self.dialect == "v1" else None
            return web.json_response({"code": refusal.code, "message": refusal.message}, status=refusal.status,
                                     headers=headers)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        path = request.path
        handler = self._routes.get((request.method, path))
        # Our choice of order: the v1 API asks for credentials first, on any path; the web session
        # answers a path it does not serve with its 404 whether logged in or not.
        if self.dialect == "v1" or (handler is not None and path not in ("/admin/api/login", "/admin/api/system-version")):
            self._authenticate(request)
        if handler is None:
            return self._not_found(path)
        response = await handler(request)
        await self._applied()
        return response

    async def _applied(self) -> None:
        """Answer only once the FCI simulator has applied what the request changed: a client that
        activates FCI connects libfranka the moment the answer comes (franky does), and a robot's
        FCI is up by then. Bounded (our choice: 1 s) in case the simulator's loop is stuck."""
        deadline = self.loop.time() + 1.0
        while self.applied is not None and self.applied < self.desk.changes and self.loop.time() < deadline:
            await asyncio.sleep(0.0005)

    def _authenticate(self, request: web.Request) -> None:
        """v1: HTTP Basic on every request; web: the login's cookie (or, on the websocket, the
        ``authorization`` header that panda-py and franky send it in). 401 otherwise."""
        if self.dialect == "v1":
            header = request.headers.get("Authorization", "")
            scheme, _, encoded = header.partition(" ")
            try:
                user, _, password = base64.b64decode(encoded, validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                user = password = ""
            if scheme.lower() != "basic" or not self.desk.basic_ok(user, password):
                raise DeskRefusal(401, "Unauthorized", "wrong user name or password")
            return
        cookie = request.cookies.get("authorization") or request.headers.get("authorization")
        if self.desk.session_user(cookie) is None:
            raise DeskRefusal(401, "Unauthorized", "log in first (/admin/api/login)")

    def _not_found(self, path: str) -> web.Response:
        if self.dialect == "web" and self.model == "franka.panda":
            return web.Response(status=404, text="File not found")
        shown = path.removeprefix("/desk") if path.startswith("/desk/") else path
        page = (f'<!DOCTYPE html>\n<html>\n<head>\n<title>Not found</title>\n</head>\n<body>\n'
                f'<code>No handler accepted "{_html(shown)}"</code>\n</body></html>')
        return web.Response(status=404, text=page, content_type="text/html")

    @staticmethod
    async def _json(request: web.Request) -> dict:
        """A JSON object body (none: empty). Anything else is a 400 (our choice)."""
        if not request.can_read_body:
            return {}
        try:
            body = json.loads(await request.text() or "{}")
        except (ValueError, UnicodeDecodeError):
            raise DeskRefusal(400, "InvalidArgument", "the body is not JSON") from None
        if not isinstance(body, dict):
            raise DeskRefusal(400, "InvalidArgument", "the body is not a JSON object")
        return body

    @staticmethod
    def _token(request: web.Request) -> str | None:
        return request.headers.get("X-Control-Token")

    def _done(self) -> web.Response:
        return web.Response(status=204) if self.dialect == "v1" else web.Response(status=200)

    async def _brakes(self, unlocked: bool) -> None:
        """The brakes move for the desk's brake time; the call answers when they have."""
        await asyncio.sleep(self.desk.brake_time)
        self.desk.set_brakes(unlocked)

    # The v1 API --------------------------------------------------------------------------

    async def v1_system(self, request: web.Request) -> web.Response:
        desk = self.desk
        return web.json_response({"status": "Started", "operatingMode": {"status": desk.mode},
                                  "fci": {"status": "Active" if desk.fci else "Inactive"}})

    async def v1_operating_mode(self, request: web.Request) -> web.Response:
        return web.json_response({"status": self.desk.mode})

    async def v1_change_mode(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        self.desk.change_mode(self._token(request), str(body.get("desiredOperatingMode", "")))
        return self._done()

    async def v1_token(self, request: web.Request) -> web.Response:
        holder = self.desk.holder()
        return web.json_response({"owner": None if holder is None else holder.owner,
                                  "tokenId": None if holder is None else holder.id})

    async def v1_take(self, request: web.Request) -> web.Response:
        """Queued until granted, or 424 ``{"code": "Timeout"}`` after ``timeout`` s (franky)."""
        body = await self._json(request)
        try:
            timeout = float(body.get("timeout", DEFAULT_TAKE_TIMEOUT))
        except (TypeError, ValueError):
            raise DeskRefusal(400, "InvalidArgument", "timeout is seconds") from None
        if not 0.0 <= timeout <= MAX_TAKE_TIMEOUT:  # (NaN fails too)
            raise DeskRefusal(400, "InvalidArgument", f"timeout is 0 to {MAX_TAKE_TIMEOUT:g} s")
        token = self.desk.request_control(str(body.get("owner", "")))
        deadline = self.loop.time() + timeout
        try:
            while not self.desk.holds_control(token):
                left = deadline - self.loop.time()
                if left <= 0:
                    holder = self.desk.holder()
                    raise DeskRefusal(424, "Timeout", f"control stayed with {holder.owner if holder else 'nobody'}"
                                                      f" for {timeout:g} s")
                await self._until_changed(left)
        finally:
            self.desk.withdraw(token)  # a request that timed out, or whose client left
        return web.json_response({"token": token.secret, "tokenId": token.id})

    async def v1_release(self, request: web.Request) -> web.Response:
        self.desk.release_control(self._token(request))
        return self._done()

    async def v1_joints(self, request: web.Request) -> web.Response:
        state = "Unlocked" if self.desk.unlocked else "Locked"
        return web.json_response([{"name": f"joint{i + 1}", "brakeStatus": state} for i in range(JOINTS)])

    async def unlock(self, request: web.Request) -> web.Response:
        self.desk.unlock(self._token(request))
        await self._brakes(True)
        return self._done()

    async def lock(self, request: web.Request) -> web.Response:
        self.desk.lock()
        await self._brakes(False)
        return self._done()

    async def v1_fci(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "Active" if self.desk.fci else "Inactive"})

    async def fci_on(self, request: web.Request) -> web.Response:
        token = self._token(request)
        if token is None and self.dialect == "web":  # panda-py and franka_lock_unlock send it in the body
            token = (await self._json(request)).get("token")
        self.desk.activate_fci(token)
        return self._done()

    async def fci_off(self, request: web.Request) -> web.Response:
        token = self._token(request)
        if token is None and self.dialect == "web":
            token = (await self._json(request)).get("token")
        self.desk.deactivate_fci(token)
        return self._done()

    async def self_test_execute(self, request: web.Request) -> web.Response:
        duration = self.desk.execute_self_test(self._token(request))
        self.loop.call_later(duration, self.desk.finish_self_test)
        if self.dialect == "web":
            return web.json_response({"code": "SuccessResponse"})  # franky asserts this code
        return self._done()

    async def v1_self_tests(self, request: web.Request) -> web.Response:
        return web.json_response(self.desk.self_test())

    async def v1_recovery(self, request: web.Request) -> web.Response:
        return web.json_response({"recovery": self.desk.recovery()})

    async def v1_recovery_start(self, request: web.Request) -> web.Response:
        # a third-party client starts a recovery before confirming it; nothing to do here (our choice)
        return self._done()

    async def v1_recovery_confirm(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        errors = body.get("safetyErrors")
        if errors is not None and not (isinstance(errors, list) and all(isinstance(e, str) for e in errors)):
            raise DeskRefusal(400, "InvalidArgument", "safetyErrors is a list of names")
        self.desk.confirm_recovery(str(body.get("type", "")), errors)
        return self._done()

    async def reboot(self, request: web.Request) -> web.Response:
        self.desk.reboot()
        return self._done()

    async def shutdown(self, request: web.Request) -> web.Response:
        raise DeskRefusal(501, "NotSimulated", "the simulated robot does not shut down; stop the simulator")

    # The older web session ---------------------------------------------------------------

    async def web_login(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        cookie = self.desk.login(str(body.get("login", "")), str(body.get("password", "")))
        return web.Response(text=cookie, content_type="text/plain")  # franky reads it as text

    async def web_logout(self, request: web.Request) -> web.Response:
        self.desk.logout(request.cookies.get("authorization", ""))
        return self._done()

    async def web_system_version(self, request: web.Request) -> web.Response:
        return web.Response(text=SYSTEM_VERSIONS.get(self.model, '"5.4.0"'), content_type="application/json")

    def _active_token(self) -> dict | None:
        holder = self.desk.holder()
        return None if holder is None else {"id": holder.id, "ownedBy": holder.owner}

    def _safety(self) -> dict:
        desk = self.desk
        status = "SelfTest" if desk.self_test_running else "SafetyError" if desk.safety_errors else "Work"
        return {"brakeState": ["Unlocked" if desk.unlocked else "Locked"] * JOINTS,
                "safetyControllerStatus": status,
                "recoverableErrors": {"td2Timeout": False, **{name: True for name in desk.safety_errors}},
                # whole seconds, as the robot's; a fraction where the simulator was given one (tests)
                "tokenForceTimeout": int(desk.token_force_timeout) if desk.token_force_timeout.is_integer()
                else desk.token_force_timeout}

    async def web_system_status(self, request: web.Request) -> web.Response:
        return web.json_response({"controlToken": {"activeToken": self._active_token(), "fciActive": self.desk.fci},
                                  "derived": {"operatingMode": self.desk.mode}, "safety": self._safety()})

    async def web_token(self, request: web.Request) -> web.Response:
        return web.json_response({"activeToken": self._active_token(), "fciActive": self.desk.fci})

    async def web_request(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        token = self.desk.request_control(str(body.get("requestedBy", "")), force="force" in request.query)
        return web.json_response({"id": token.id, "token": token.secret})

    async def web_release(self, request: web.Request) -> web.Response:
        self.desk.release_control((await self._json(request)).get("token") or self._token(request))
        return self._done()

    async def web_fci_form(self, request: web.Request) -> web.Response:
        """``POST /desk/api/system/fci``: form ``token=`` base64 of the token (franky), which also
        sends it as X-Control-Token."""
        token = self._token(request)
        if token is None:
            form = await request.post()
            try:
                token = base64.b64decode(str(form.get("token", "")), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                token = None
        self.desk.activate_fci(token)
        return self._done()

    async def web_safety(self, request: web.Request) -> web.Response:
        return web.json_response(self._safety())

    async def web_mode(self, request: web.Request) -> web.Response:
        self.desk.change_mode(self._token(request), PROGRAMMING if request.path.endswith("programming") else EXECUTION)
        return self._done()

    async def web_acknowledge(self, request: web.Request) -> web.Response:
        self.desk.acknowledge(request.query.get("error_id", ""))
        return self._done()

    # The Pilot ------------------------------------------------------------------------------

    async def navigation_events(self, request: web.Request) -> web.StreamResponse:
        """The Pilot's buttons (``wss://ROBOT/desk/api/navigation/events``): one JSON object per
        press and per release (franky, panda-py)."""
        websocket = web.WebSocketResponse(heartbeat=None)
        await websocket.prepare(request)
        self._sockets.add(websocket)
        try:
            async for message in websocket:
                if message.type in (WSMsgType.ERROR, WSMsgType.CLOSE):
                    break  # the robot sends; what a client says is ignored (our choice)
        finally:
            self._sockets.discard(websocket)
        return websocket


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


V1_ROUTES = {
    ("GET", "/api/system"): "v1_system",
    ("GET", "/api/system/operating-mode"): "v1_operating_mode",
    ("POST", "/api/system/operating-mode:change"): "v1_change_mode",
    ("GET", "/api/system/control-token"): "v1_token",
    ("POST", "/api/system/control-token:take"): "v1_take",
    ("POST", "/api/system/control-token:release"): "v1_release",
    ("GET", "/api/arm/joints"): "v1_joints",
    ("POST", "/api/arm/joints:unlock"): "unlock",
    ("POST", "/api/arm/joints:lock"): "lock",
    ("GET", "/api/fci"): "v1_fci",
    ("POST", "/api/fci:activate"): "fci_on",
    ("POST", "/api/fci:deactivate"): "fci_off",
    ("POST", "/api/safety/self-tests:execute"): "self_test_execute",
    ("GET", "/api/safety/self-tests"): "v1_self_tests",
    ("GET", "/api/safety/recovery"): "v1_recovery",
    ("POST", "/api/safety/recovery:start"): "v1_recovery_start",
    ("POST", "/api/safety/recovery:confirm"): "v1_recovery_confirm",
    ("POST", "/api/system:reboot"): "reboot",
    ("POST", "/api/system:shutdown"): "shutdown",
    ("GET", "/desk/api/navigation/events"): "navigation_events",
}


def web_routes(model: str) -> dict[tuple[str, str], str]:
    """The web dialect's paths; the brakes' differ between the FR3 and the Panda (panda-py)."""
    brakes = ("/desk/api/robot/open-brakes", "/desk/api/robot/close-brakes") if model == "franka.panda" else \
        ("/desk/api/joints/unlock", "/desk/api/joints/lock")
    return {
        ("POST", "/admin/api/login"): "web_login",
        ("POST", "/admin/api/logout"): "web_logout",
        ("GET", "/admin/api/system-version"): "web_system_version",
        ("GET", "/admin/api/system-status"): "web_system_status",
        ("GET", "/admin/api/control-token"): "web_token",
        ("POST", "/admin/api/control-token/request"): "web_request",
        ("DELETE", "/admin/api/control-token"): "web_release",
        ("POST", "/admin/api/control-token/fci"): "fci_on",
        ("DELETE", "/admin/api/control-token/fci"): "fci_off",
        ("POST", "/desk/api/system/fci"): "web_fci_form",
        ("POST", brakes[0]): "unlock",
        ("POST", brakes[1]): "lock",
        ("POST", "/desk/api/operating-mode/execution"): "web_mode",
        ("POST", "/desk/api/operating-mode/programming"): "web_mode",
        ("GET", "/admin/api/safety"): "web_safety",
        ("POST", "/admin/api/safety/td2-tests/execute"): "self_test_execute",
        ("POST", "/admin/api/safety/recoverable-safety-errors/acknowledge"): "web_acknowledge",
        ("POST", "/admin/api/reboot"): "reboot",
        ("GET", "/desk/api/navigation/events"): "navigation_events",
    }
