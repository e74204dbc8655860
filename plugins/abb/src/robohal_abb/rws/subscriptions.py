"""Subscriptions: the controller pushes changes over a websocket (``websockets``' sync client).

    with rws.subscribe([rws.dialect.watch_execution(), rws.dialect.watch_elog(0)]) as events:
        for event in events.wait(timeout=5.0):        # the events of one message, or [] after 5 s
            print(event.kind, event.value)

A subscription is made with ``POST /subscription`` (``resources=1&1=URI&1-p=PRIORITY``, one
triple per resource); the controller answers 201 with the websocket's address (RobotWare 7 in
the ``Location`` header, RobotWare 6 as a link in the body), which is opened with the dialect's
subprotocol and the HTTP session's cookies (RobotWare 6's websocket knows no Digest). Only a
path on the same controller is followed. Messages are XHTML in both dialects.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from robohal.net.shared_tls import open_tls

from . import parse
from .errors import RwsDisconnected, RwsError, RwsProtocolError, RwsTimeout
from .values import Event

if TYPE_CHECKING:
    from .client import RwsClient

log = logging.getLogger("robohal.abb.rws")


def poll_path(location: str) -> str:
    """The websocket path in a subscription answer's link (``ws://host/poll/4`` -> ``/poll/4``)."""
    parts = urlsplit(location.strip())
    path = parts.path if parts.path.startswith("/") else "/" + parts.path
    if "/poll/" not in path or ".." in path:
        raise RwsProtocolError(f"the subscription's websocket address {location[:80]!r} names no /poll/ID")
    return path


class Subscription:
    """An open subscription (see the module docstring); close it, or use ``with``."""

    def __init__(self, client: RwsClient, group: str, websocket) -> None:
        self.client = client
        self.group = group  # the subscription group the controller made: DELETE /subscription/GROUP ends it
        self._websocket = websocket

    @classmethod
    def open(cls, client: RwsClient, resources: Sequence[str], *, priority: int = 1) -> Subscription:
        if not resources:
            raise ValueError("a subscription needs at least one resource")
        if priority not in (0, 1, 2):
            raise ValueError(f"a subscription priority is 0 (low), 1 (medium) or 2 (high), got {priority!r}")
        fields: dict[str, list[str] | str] = {"resources": [str(i) for i in range(1, len(resources) + 1)]}
        for i, resource in enumerate(resources, 1):
            fields[str(i)] = resource
            fields[f"{i}-p"] = str(priority)
        dialect = client._dialect()
        answer = client._form("POST", dialect.subscription(), fields, ok=(201,))
        location = answer.headers.get("location") or ""
        if not location:
            links = parse.xhtml_links(parse._text(answer.body)) if not answer.body.lstrip().startswith(b"{") else {}
            location = links.get("self") or links.get("events") or ""
        path = poll_path(location)
        group = path.rstrip("/").rsplit("/", 1)[-1]
        http, context = client._session()
        netloc = f"[{client.host}]" if ":" in client.host else client.host
        headers = {}
        cookies = "; ".join(f"{name}={value}" for name, value in http.cookies.items())
        if cookies:
            headers["Cookie"] = cookies
        authorization = client._basic_authorization()
        if authorization:
            headers["Authorization"] = authorization
        from websockets.exceptions import InvalidHandshake, InvalidStatus
        from websockets.sync.client import connect

        try:
            # Over TLS the socket is opened here and handed over as if plain ("ws://"): the client reads
            # in a thread of its own while the caller writes, which a bare SSLSocket does not survive
            tls = open_tls(client.host, client.port, context, client.timeout) if client.scheme == "https" else None
            websocket = connect(f"ws://{netloc}:{client.port}{path}", sock=tls, subprotocols=[dialect.subprotocol],
                                additional_headers=headers, open_timeout=client.timeout,
                                close_timeout=min(client.timeout, 2.0), max_size=parse.MAX_BODY,
                                user_agent_header=None, proxy=None)  # no proxy from the environment sees the cookies
        except InvalidStatus as exc:
            cls._delete(client, group)
            raise RwsError(f"RWS {client.url}: the subscription's websocket {path} was refused:"
                           f" HTTP {exc.response.status_code}", status=exc.response.status_code) from None
        except (InvalidHandshake, OSError, TimeoutError) as exc:
            cls._delete(client, group)
            raise RwsDisconnected(f"RWS {client.url}: the subscription's websocket {path} did not open: {exc}") \
                from None
        except BaseException:  # whatever failed, the controller's subscription group is not left behind
            cls._delete(client, group)
            raise
        log.debug("RWS %s: subscribed to %s as group %s", client.url, ", ".join(resources), group)
        return cls(client, group, websocket)

    @staticmethod
    def _delete(client: RwsClient, group: str) -> None:
        try:
            client._call("DELETE", (f"/subscription/{group}", client._dialect().query()), ok=(200, 204, 404))
        except RwsError as exc:
            log.debug("RWS %s: ending subscription %s: %s", client.url, group, exc)

    def wait(self, timeout: float) -> list[Event]:
        """The events of the next message, or [] when none came within ``timeout`` s."""
        from websockets.exceptions import ConnectionClosed

        try:
            message = self._websocket.recv(timeout=timeout)
        except TimeoutError:
            return []
        except ConnectionClosed as exc:
            raise RwsDisconnected(f"RWS {self.client.url}: the subscription's websocket closed ({exc})") from None
        text = message if isinstance(message, str) else message.decode("utf-8", "replace")
        return parse.subscription_events(text)

    def wait_for(self, predicate, timeout: float) -> Event:
        """The first event ``predicate`` accepts; :class:`RwsTimeout` when none comes within ``timeout`` s."""
        import time

        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            for event in self.wait(left):
                if predicate(event):
                    return event
        raise RwsTimeout(f"RWS {self.client.url}: no such event within {timeout:g} s")

    def close(self) -> None:
        """Close the websocket and end the subscription on the controller; idempotent."""
        websocket, self._websocket = self._websocket, None
        if websocket is None:
            return
        websocket.close()
        if self.client.is_open:
            self._delete(self.client, self.group)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
