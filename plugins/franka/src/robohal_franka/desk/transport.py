"""HTTPS to a robot's Desk: one connection, on a TLS context that trusts the robot's own
certificate alone (pinned on first use, or the fingerprint the URI names: :mod:`robohal.net.tls`),
so nothing, credentials above all, reaches a server that cannot show it; JSON in and out, and
errors as robohal's.
"""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from robohal.errors import ConnectFailed, ProtocolError, RobohalError

TIMEOUT = 10.0  # s for a connection and an ordinary answer (our choice)

#: the TLS context to reach the Desk with, made when the first connection needs it
TlsContext = Callable[[], ssl.SSLContext]


class DeskRefused(RobohalError):
    """Desk answered a request with an error: ``status`` (HTTP), ``code`` (Desk's, when it gives
    one) and its message."""

    def __init__(self, message: str, *, status: int, code: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass
class Answer:
    status: int
    body: bytes
    content_type: str

    def json(self) -> Any:
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            raise ProtocolError(f"franka Desk: expected JSON, got {self.body[:80]!r}") from None


class DeskTransport:
    """HTTPS requests to ``url`` (``https://HOST[:PORT]``), one kept-alive connection."""

    def __init__(self, url: str, tls: TlsContext, timeout: float = TIMEOUT) -> None:
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise ConnectFailed(f"franka Desk: {url!r} is not https://HOST[:PORT]", address=url)
        self.url = url
        self.host = parts.hostname
        self.port = parts.port or 443
        self.address = f"{self.host}:{self.port}"
        self.tls = tls
        self.timeout = timeout
        self._connection: http.client.HTTPSConnection | None = None
        self._context: ssl.SSLContext | None = None  # made once: its pin is checked by the first handshake

    def __repr__(self) -> str:
        return f"DeskTransport({self.url!r})"

    def _connect(self, timeout: float) -> http.client.HTTPSConnection:
        if self._context is None:
            try:
                self._context = self.tls()
            except ConnectFailed as exc:
                if "no TLS server answered" not in str(exc):
                    raise  # a changed certificate: refused, and nothing was sent
                raise ConnectFailed(f"franka Desk: nothing answered at https://{self.address} ({exc}). Is this the"
                                    " robot's address, and is the robot on?", address=self.address) from None
        connection = http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self._context)
        try:
            connection.connect()
        except ssl.SSLCertVerificationError as exc:  # another certificate than the one just pinned or named
            connection.close()
            raise ConnectFailed(f"franka Desk at {self.address} showed a certificate other than the trusted one"
                                f" ({exc.verify_message}); nothing was sent", address=self.address) from None
        except (OSError, ssl.SSLError) as exc:
            connection.close()
            raise ConnectFailed(f"franka Desk: nothing answered at https://{self.address} ({exc}). Is this the"
                                " robot's address, and is the robot on?", address=self.address) from None
        return connection

    def request(self, method: str, path: str, *, body: bytes | None = None, headers: dict[str, str] | None = None,
                timeout: float | None = None) -> Answer:
        """One request; a broken kept-alive connection is opened again once (a robot closes idle ones)."""
        wait = self.timeout if timeout is None else timeout
        for attempt in range(2):
            fresh = self._connection is None
            if fresh:
                self._connection = self._connect(wait)
            connection = self._connection
            assert connection is not None
            connection.timeout = wait
            if connection.sock is not None:
                connection.sock.settimeout(wait)
            try:
                connection.request(method, path, body=body, headers=headers or {})
                reply = connection.getresponse()
                data = reply.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
                    http.client.CannotSendRequest, http.client.ResponseNotReady):
                self.close()
                if fresh or attempt:
                    raise ConnectFailed(f"franka Desk at {self.address} closed the connection",
                                        address=self.address) from None
                continue
            except TimeoutError:
                self.close()
                raise ConnectFailed(f"franka Desk at {self.address}: no answer to {method} {path} within {wait:g} s",
                                    address=self.address) from None
            except OSError as exc:
                self.close()
                raise ConnectFailed(f"franka Desk at {self.address}: {exc}", address=self.address) from None
            if reply.getheader("Connection", "").lower() == "close":
                self.close()
            return Answer(reply.status, data, reply.getheader("Content-Type", ""))
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def refusal(answer: Answer, what: str) -> DeskRefused:
    """A :class:`DeskRefused` from an error answer: Desk's ``code`` and message when it sent JSON,
    else the first line of its text."""
    code, message = "", ""
    try:
        parsed = json.loads(answer.body)
        if isinstance(parsed, dict):
            code = str(parsed.get("code") or "")
            message = str(parsed.get("message") or "")
    except ValueError:
        pass
    if not message:
        text = answer.body.decode(errors="replace").strip()
        message = text.splitlines()[0][:200] if text else ""
    detail = f"{code}: {message}" if code and message else code or message or "no reason given"
    return DeskRefused(f"franka Desk refused {what} (HTTP {answer.status}, {detail})", status=answer.status, code=code)
