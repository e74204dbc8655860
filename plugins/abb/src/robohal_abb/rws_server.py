"""The simulated controller's Robot Web Services: HTTP for RobotWare 6, HTTPS for RobotWare 7.

One aiohttp server on a loopback port, in an asyncio loop of its own thread inside the EGM
simulator's process; the controller is :class:`.controller_model.ControllerModel` (its lock
keeps the EGM loop and this server consistent). Per request, in order:

1. fault injection: a restart in progress answers 503; a stall holds the request (at most
   :data:`STALL_LIMIT` s, then drops the connection unanswered); a slow controller waits first;
2. the dialect's media types: RWS 1.0 answers XHTML, or JSON with ``?json=1``; RWS 2.0 wants
   ``Accept: application/hal+json;v=2.0`` or ``application/xhtml+xml;v=2.0`` (406 for any other
   type; no Accept or ``*/*`` is answered in XHTML) and a body's ``Content-Type`` with ``;v=2.0``
   (415 otherwise; research notes, public OmniCore clients);
3. authentication and the session (:mod:`.rws_auth`): 401 with the dialect's challenge;
4. the route (:mod:`.rws_routes`), the file service, subscriptions, or 404
   (SYS_CTRL_E_UNRESOLVED_URL) for what this dialect does not serve.

Bodies are limited to :data:`MAX_BODY` bytes (413 beyond, our choice; aiohttp refuses over-long
header lines with 400). Subscriptions (``POST /subscription``, form ``resources=1&1=URI&1-p=PRIO``)
send XHTML events on a websocket ``/poll/ID`` (subprotocol ``robapi2_subscription`` on RWS 1.0,
``rws_subscription`` on RWS 2.0, whose URL comes in the ``Location`` header; ABB's samples).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote

from aiohttp import WSMsgType, web
from robohal.sim.web_server import ThreadedWebServer, loopback_socket, self_signed_certificate, server_context

from .controller_model import (
    E_FILE_NOT_FOUND,
    E_INVALID_PATH,
    E_INVALIDARG,
    E_MAX_LIMIT,
    E_UNRESOLVED_URL,
    ControllerModel,
    Refusal,
)
from .file_store import PathRefused
from .rws_auth import ABB_COOKIE, SESSION_COOKIE, Session, Sessions
from .rws_render import HAL, JSON, XHTML, Answer, event_page, render, render_error
from .rws_routes import Call, event_item, find_route, subscription_target

log = logging.getLogger("robohal.abb.rws")

VERSIONS = (6, 7)
MAX_BODY = 1024 * 1024  # bytes; our choice: four times the largest module a cell loads, far below memory
STALL_LIMIT = 30.0  # s a stalled request is held at most (our choice: longer than any client's timeout)
MAX_GROUPS = 64  # subscription groups at once; our choice
MAX_RESOURCES = 64  # resources in one group; our choice (a public client notes a controller's 1000)
MAX_SOCKETS = 4  # websockets on one group; our choice
SUBPROTOCOLS = {6: "robapi2_subscription", 7: "rws_subscription"}  # ABB's samples; abb-robot-client; abb_librws
MEDIA_7 = {"application/hal+json;v=2.0": HAL, "application/xhtml+xml;v=2.0": XHTML}
CERTIFICATE_NAME = "robohal simulated OmniCore"


@dataclass
class Group:
    """A subscription group: its session, its resources (kind, key, link as subscribed), its sockets."""

    id: int
    session: str
    entries: list[tuple[str, str | None, str]]
    sockets: dict[web.WebSocketResponse, web.Request] = field(default_factory=dict)


class RwsServer(ThreadedWebServer):
    """The RWS of one simulated controller (see the module docstring); :meth:`start`, :meth:`stop`,
    and the fault-injection methods, which are safe to call from another thread."""

    thread_name = "robohal-rws"

    def __init__(self, model: ControllerModel, version: int, host: str = "127.0.0.1", port: int = 0,
                 user: str = "Default User", password: str = "robotics",
                 joints: Callable[[], list[float]] | None = None) -> None:
        if version not in VERSIONS:
            raise ValueError("the RWS dialects are 6 (RobotWare 6, RWS 1.0) and 7 (RobotWare 7, RWS 2.0)")
        self.model = model
        self.version = version
        self.host = host
        self.joints = joints
        self.sessions = Sessions(version, user, password, on_drop=model.drop_session)
        self.fingerprint: str | None = None
        tls = None
        if version == 7:
            certificate, key, self.fingerprint = self_signed_certificate(CERTIFICATE_NAME, host)
            tls = server_context(certificate, key)
            self.certificate_pem = certificate
        super().__init__(loopback_socket(host, port, backlog=32), tls)
        self._groups: dict[int, Group] = {}
        self._group_ids = itertools.count(1)
        self.counters: dict[str, int] = {"requests": 0, "errors_500": 0, "events_sent": 0}
        # fault injection (changed on the loop's thread only, through call())
        self.slow = 0.0
        self.restart_until = 0.0
        self._released: asyncio.Event | None = None
        model.listeners.append(self._on_change)

    @property
    def url(self) -> str:
        return f"{'https' if self.version == 7 else 'http'}://{self.host}:{self.port}"

    @property
    def origin(self) -> str:
        return self.url

    # Lifecycle ----------------------------------------------------------------------------------

    def _application(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_route("*", "/{path:.*}", self._handle)
        return app

    def _before_serving(self) -> None:
        self._released = asyncio.Event()
        self._released.set()

    def _after_serving(self) -> None:
        self._abort_sockets()

    # Fault injection (call these through call()) ----------------------------------------------------

    def set_slow(self, seconds: float) -> None:
        self.slow = max(0.0, seconds)

    def restart(self, seconds: float) -> None:
        """A controller restart: 503 for ``seconds``, every session and subscription gone, and the
        controller back in motors off with RAPID stopped (:meth:`ControllerModel.restart`)."""
        self.restart_until = self.loop.time() + max(0.0, seconds)
        self.model.restart()
        self.sessions.drop_all()
        self._abort_sockets()
        self._groups.clear()

    def stall(self, on: bool) -> None:
        assert self._released is not None
        if on:
            self._released.clear()
        else:
            self._released.set()

    def drop_websockets(self) -> int:
        """Cut every subscription websocket without a close frame, as a broken link does."""
        return self._abort_sockets()

    def websocket_count(self) -> int:
        return sum(len(group.sockets) for group in list(self._groups.values()))

    def _abort_sockets(self) -> int:
        count = 0
        for group in self._groups.values():
            for request in list(group.sockets.values()):
                transport = request.transport
                if transport is not None:
                    transport.abort()
                    count += 1
            group.sockets.clear()
        return count

    # Requests -----------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.counters["requests"] += 1
        media = XHTML
        try:
            held = await self._faults(request)
            if held is not None:
                return held
            raw = request.raw_path
            raw_path, _, raw_query = raw.partition("?")
            query = self._query(raw_query)
            media = self._media(request, query, raw_path)
            session, fresh = self._authenticate(request, raw)
            response = await self._route(request, session, raw_path, query, media)
            if fresh:
                response.set_cookie(SESSION_COOKIE, session.id, path="/", httponly=True)
                response.set_cookie(ABB_COOKIE, session.abbcx, path="/", httponly=True)
            return response
        except Refusal as refusal:
            return self._error(refusal, media)
        except web.HTTPRequestEntityTooLarge:
            return self._error(Refusal(413, E_INVALIDARG, f"the body is larger than {MAX_BODY} bytes"), media)
        except (ConnectionError, asyncio.CancelledError):
            raise
        except Exception:  # never a crash: a 500, counted and logged (the fuzz tests assert none)
            self.counters["errors_500"] += 1
            log.exception("simulated RWS: unexpected error on %s %s", request.method, request.raw_path[:200])
            return self._error(Refusal(500, E_INVALIDARG, "internal error of the simulated controller"), media)

    async def _faults(self, request: web.Request) -> web.StreamResponse | None:
        if self.loop.time() < self.restart_until:
            # our choice of body: a controller's web server answers 503 while it restarts
            return web.Response(status=503, text="the controller is restarting", headers={"Retry-After": "1"})
        assert self._released is not None
        if not self._released.is_set():
            try:
                await asyncio.wait_for(self._released.wait(), STALL_LIMIT)
            except asyncio.TimeoutError:
                if request.transport is not None:
                    request.transport.abort()  # a controller that stopped answering: never an answer
                return web.Response(status=503)
        if self.slow > 0:
            await asyncio.sleep(self.slow)
        return None

    @staticmethod
    def _query(raw_query: str) -> dict[str, str]:
        try:
            pairs = parse_qsl(raw_query, keep_blank_values=True, max_num_fields=64, errors="strict")
        except (ValueError, UnicodeDecodeError):
            raise Refusal(400, E_INVALIDARG, "the query does not read") from None
        query: dict[str, str] = {}
        for key, value in pairs:
            query.setdefault(key, value)
        return query

    def _media(self, request: web.Request, query: dict[str, str], raw_path: str) -> str:
        if self.version == 6:
            return JSON if query.get("json") == "1" else XHTML
        if raw_path.startswith("/poll/"):
            return XHTML  # a websocket upgrade names no media type
        offered = {part.strip().replace(" ", "").lower().split(";q=")[0]
                   for part in request.headers.get("Accept", "").split(",")}
        for media_type, media in MEDIA_7.items():
            if media_type in offered:
                return media
        if offered == {""} or "*/*" in offered:
            # no Accept, or any type: served. A public RobotWare 7 client (rwswrap, written against an
            # OmniCore) posts its commands with its HTTP library's "*/*". The answer's type then is
            # our choice: XHTML, RWS's default representation since RWS 1.0
            return XHTML
        raise Refusal(406, E_UNRESOLVED_URL, "Not acceptable: RWS 2.0 answers application/hal+json;v=2.0 or"
                                             " application/xhtml+xml;v=2.0")

    def _authenticate(self, request: web.Request, target: str) -> tuple[Session, bool]:
        if target.startswith("/poll/"):
            session = self.sessions.find_subscriber(request.cookies)
        else:
            session = self.sessions.find(request.cookies)
        if session is not None:
            return session, False
        user = self.sessions.check(request.headers.get("Authorization", ""), request.method, target)
        if user is None:
            raise _Unauthorized()
        session = self.sessions.open(user)
        if session is None:
            raise Refusal(503, E_MAX_LIMIT, "too many sessions; log out of one first")
        return session, True

    def _error(self, refusal: Refusal, media: str) -> web.Response:
        body, content_type = render_error(refusal.status, refusal.code, refusal.message, self.version, media, self.origin)
        headers = {"Content-Type": content_type}
        if isinstance(refusal, _Unauthorized):
            headers["WWW-Authenticate"] = self.sessions.challenge()
        return web.Response(status=refusal.status, body=body, headers=headers)

    async def _body(self, request: web.Request, form: bool) -> tuple[bytes, dict[str, str], list[tuple[str, str]]]:
        body = await request.read() if request.can_read_body else b""
        content_type = request.headers.get("Content-Type", "")
        if self.version == 7 and (body or content_type) and "v=2.0" not in content_type.replace(" ", "").lower():
            raise Refusal(415, E_INVALIDARG, "Unsupported media type: RWS 2.0 bodies carry ;v=2.0 in Content-Type")
        if not form or not body:
            return body, {}, []
        if not content_type.lower().startswith("application/x-www-form-urlencoded"):
            raise Refusal(415, E_INVALIDARG, "Unsupported media type: a form is application/x-www-form-urlencoded")
        try:
            pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=256, errors="strict")
        except (ValueError, UnicodeDecodeError):
            raise Refusal(400, E_INVALIDARG, "Invalid input form data") from None
        fields: dict[str, str] = {}
        for key, value in pairs:
            fields.setdefault(key, value)
        return body, fields, pairs

    async def _route(self, request: web.Request, session: Session, raw_path: str, query: dict[str, str],
                     media: str) -> web.StreamResponse:
        method = request.method
        path = raw_path.rstrip("/") or "/"  # clients write /rw/elog/0/ (abb-robot-client)
        if path.startswith("/fileservice/") or path == "/fileservice":
            return await self._files(request, raw_path, media)
        if path == "/logout" and method == "GET":
            self.sessions.drop(session.id)
            return web.Response(status=204)
        if path == "/subscription" and method == "POST":
            return await self._subscribe(request, session, media)
        if path.startswith("/subscription/") and method == "DELETE":
            return self._unsubscribe(session, path[len("/subscription/"):])
        if path.startswith("/poll/") and method == "GET":
            return await self._websocket(request, session, path[len("/poll/"):])
        found = find_route(self.version, method, path, query.get("action"))
        if found is None:
            raise Refusal(404, E_UNRESOLVED_URL, f"{method} {raw_path[:120]} is not a resource of RWS"
                                                 f" {'1.0' if self.version == 6 else '2.0'}")
        _, form, _ = await self._body(request, form=True) if method in ("POST", "PUT") else (b"", {}, [])
        handler, arguments = found
        call = Call(self.model, self.version, session.id, query, form, origin=self.origin, joints=self.joints)
        return self._answer(handler(call, *arguments), media)

    def _answer(self, answer: Answer, media: str) -> web.Response:
        body, content_type = render(answer, self.version, media, self.origin)
        headers = dict(answer.headers)
        if content_type is not None:
            headers["Content-Type"] = content_type
        return web.Response(status=answer.status, body=body or None, headers=headers)

    # The file service ------------------------------------------------------------------------------

    async def _files(self, request: web.Request, raw_path: str, media: str) -> web.StreamResponse:
        """``GET|PUT|DELETE /fileservice/$HOME/...`` (both dialects; RWS manual, abb-robot-client,
        abb_librws). Each segment is percent-decoded on its own, so an encoded ``/`` or ``..`` is
        checked like a written one (:mod:`.file_store`)."""
        segments = [unquote(segment, errors="strict") for segment in raw_path.split("/")[2:]]
        path = "/".join(segments)
        files = self.model.files
        try:
            if request.method == "GET":
                if files.resolve(path).is_dir():
                    items = [{"_type": "fs-dir" if folder else "fs-file", "_title": name, "fs-size": str(size)}
                             for name, folder, size in files.listing(path)]
                    return self._answer(Answer(items=items, listing=True, base="/fileservice/", title="fileservice"),
                                        media)
                return web.Response(body=files.read(path), content_type="text/plain", charset="utf-8")
            if request.method == "PUT":
                body, _, _ = await self._body(request, form=False)
                return web.Response(status=201 if files.write(path, body) else 200)
            if request.method == "DELETE":
                files.delete(path)
                return web.Response(status=204)
        except PathRefused as refused:
            raise Refusal(404 if refused.missing else 400, E_FILE_NOT_FOUND if refused.missing else E_INVALID_PATH,
                          str(refused)) from None
        except UnicodeDecodeError:
            raise Refusal(400, E_INVALID_PATH, "the path does not read") from None
        raise Refusal(405, E_UNRESOLVED_URL, f"{request.method} is not a file service verb")

    # Subscriptions ---------------------------------------------------------------------------------

    async def _subscribe(self, request: web.Request, session: Session, media: str) -> web.StreamResponse:
        _, form, pairs = await self._body(request, form=True)
        names = [value for key, value in pairs if key == "resources"]
        if not names or len(names) > MAX_RESOURCES:
            raise Refusal(400, E_INVALIDARG, f"name 1 to {MAX_RESOURCES} resources")
        if len(self._groups) >= MAX_GROUPS:
            raise Refusal(503, E_MAX_LIMIT, "too many subscriptions; delete one first")
        entries = []
        for name in names:
            uri = form.get(name)
            if uri is None:
                raise Refusal(400, E_INVALIDARG, f"resource {name[:20]} has no URI")
            kind, key = subscription_target(self.model, self.version, uri)
            priority = form.get(f"{name}-p", "1")
            # RWS manual: high priority (2) for signals and RAPID data only, low (0) and medium (1) for the rest
            if priority not in ("0", "1", "2") or (priority == "2" and kind not in ("signal", "symbol")):
                raise Refusal(400, E_INVALIDARG, f"priority {priority[:8]} is not allowed on {uri[:80]}")
            entries.append((kind, key, uri.split(";")[0] if kind == "elog" else uri))
        group = Group(next(self._group_ids), session.id, entries)
        self._groups[group.id] = group
        websocket = f"{'wss' if self.version == 7 else 'ws'}://{self.host}:{self.port}/poll/{group.id}"
        current = [(item, link) for kind, key, link in entries if kind != "elog"
                   for item in [event_item(self.model, kind, key)] if item is not None]
        headers = {"Location": websocket}
        if self.version == 6 or media == XHTML:
            # RWS 1.0 answers the subscription in XHTML even to ?json=1 (abb-robot-client reads it so)
            page = event_page(current, group.id, self.origin, websocket)
            content_type = "application/xhtml+xml;v=2.0" if self.version == 7 else "application/xhtml+xml;charset=utf-8"
            return web.Response(status=201, body=page.encode(), headers={**headers, "Content-Type": content_type})
        answer = Answer(status=201, items=[item for item, _ in current], base="/subscription/", title="subscription",
                        headers=headers)
        return self._answer(answer, media)

    def _unsubscribe(self, session: Session, ident: str) -> web.Response:
        group = self._groups.get(int(ident)) if ident.isdigit() and len(ident) < 10 else None
        if group is None or group.session != session.id:
            raise Refusal(404, E_INVALIDARG, f"no subscription {ident[:20]}")
        for request in group.sockets.values():
            if request.transport is not None:
                request.transport.close()
        del self._groups[group.id]
        return web.Response(status=200)

    async def _websocket(self, request: web.Request, session: Session, ident: str) -> web.StreamResponse:
        group = self._groups.get(int(ident)) if ident.isdigit() and len(ident) < 10 else None
        if group is None or group.session != session.id:
            raise Refusal(404, E_INVALIDARG, f"no subscription {ident[:20]} of this session")
        if len(group.sockets) >= MAX_SOCKETS:
            raise Refusal(503, E_MAX_LIMIT, "too many websockets on this subscription")
        protocol = SUBPROTOCOLS[self.version]
        websocket = web.WebSocketResponse(protocols=(protocol,), heartbeat=None, max_msg_size=4096)
        ready = websocket.can_prepare(request)
        if not ready.ok or ready.protocol != protocol:
            raise Refusal(400, E_INVALIDARG, f"a subscription websocket speaks the {protocol} subprotocol")
        await websocket.prepare(request)
        group.sockets[websocket] = request
        try:
            async for message in websocket:
                if message.type in (WSMsgType.ERROR, WSMsgType.CLOSE):
                    break  # the controller sends; what a client says is ignored (our choice)
        finally:
            group.sockets.pop(websocket, None)
        return websocket

    def _on_change(self, kind: str, key: Any) -> None:
        """The model's listener (any thread, under its lock): the event goes out on the loop."""
        if self._groups:
            self.call(self._publish, kind, key)

    def _publish(self, kind: str, key: Any) -> None:
        item = None
        for group in list(self._groups.values()):
            for entry_kind, entry_key, link in group.entries:
                if entry_kind != kind or (entry_key is not None and entry_key != key) or not group.sockets:
                    continue
                item = item or event_item(self.model, kind, key)
                if item is None:
                    return
                shown = f"{link}/{key}" if kind == "elog" else link
                page = event_page([(item, shown)], group.id, self.origin)
                for websocket in list(group.sockets):
                    if not websocket.closed:
                        self.counters["events_sent"] += 1
                        self.loop.create_task(_send(websocket, page))


async def _send(websocket: web.WebSocketResponse, page: str) -> None:
    try:
        await websocket.send_str(page)
    except (ConnectionError, RuntimeError):
        pass  # the socket went away meanwhile


class _Unauthorized(Refusal):
    def __init__(self) -> None:
        super().__init__(401, E_INVALIDARG, "Unauthorized: wrong user name or password")
