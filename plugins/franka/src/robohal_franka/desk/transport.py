"""HTTPS to a robot's Desk: one connection, the robot's certificate checked against its pin before
anything (credentials above all) is sent, JSON in and out, and errors as robohal's.

A robot's Desk certificate is self-signed, so no authority vouches for it: the connection is
trusted by its fingerprint (SHA-256 of the certificate's DER form) instead, given with the URI
(``desk_fingerprint=``, as the simulator announces it) or pinned on first use by ``pin_check``.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from robohal.errors import ConnectFailed, ProtocolError, RobohalError

TIMEOUT = 10.0  # s for a connection and an ordinary answer (our choice)

#: ``check(address, der)``: raises unless the certificate ``der`` is the one trusted for ``address``
PinCheck = Callable[[str, bytes], None]


class DeskRefused(RobohalError):
    """Desk answered a request with an error: ``status`` (HTTP), ``code`` (Desk's, when it gives
    one) and its message."""

    def __init__(self, message: str, *, status: int, code: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class CertificateRefused(ConnectFailed):
    """The robot's certificate is not the one pinned for its address: nothing was sent."""


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


def fingerprint_check(expected: str) -> PinCheck:
    """A pin check against one known fingerprint (hex, colons allowed)."""
    want = expected.replace(":", "").strip().lower()

    def check(address: str, der: bytes) -> None:
        got = hashlib.sha256(der).hexdigest()
        if not hmac.compare_digest(got, want):
            raise CertificateRefused(
                f"franka Desk at {address}: its certificate (SHA-256 {got}) is not the one given ({want});"
                " nothing was sent. A robot set up again has a new certificate: give the new fingerprint"
                " only once you know it is the robot's.", address=address)

    return check


class DeskTransport:
    """HTTPS requests to ``url`` (``https://HOST[:PORT]``), one kept-alive connection."""

    def __init__(self, url: str, pin_check: PinCheck, timeout: float = TIMEOUT) -> None:
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise ConnectFailed(f"franka Desk: {url!r} is not https://HOST[:PORT]", address=url)
        self.url = url
        self.host = parts.hostname
        self.port = parts.port or 443
        self.address = f"{self.host}:{self.port}"
        self.pin_check = pin_check
        self.timeout = timeout
        self._connection: http.client.HTTPSConnection | None = None
        # The certificate is checked against the pin, not against an authority (a robot's is self-signed).
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self._tls.check_hostname = False
        self._tls.verify_mode = ssl.CERT_NONE

    def __repr__(self) -> str:
        return f"DeskTransport({self.url!r})"

    def _connect(self, timeout: float) -> http.client.HTTPSConnection:
        connection = http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self._tls)
        try:
            connection.connect()
        except (OSError, ssl.SSLError) as exc:
            connection.close()
            raise ConnectFailed(f"franka Desk: nothing answered at https://{self.address} ({exc}). Is this the"
                                " robot's address, and is the robot on?", address=self.address) from None
        assert connection.sock is not None
        der = connection.sock.getpeercert(binary_form=True)
        if der is None:
            connection.close()
            raise CertificateRefused(f"franka Desk at {self.address} showed no certificate", address=self.address)
        try:
            self.pin_check(self.address, der)
        except BaseException:
            connection.close()
            raise
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
