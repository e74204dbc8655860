"""Who may talk to the simulated RWS: HTTP authentication and the controller's sessions.

- RobotWare 6 (RWS 1.0): HTTP Digest (RFC 7616 with MD5 and ``qop=auth``, as the IRC5 challenges:
  ``Digest realm="validusers@robapi.abb", domain="/", qop="auth", nonce=..., opaque=..., algorithm="MD5",
  stale="FALSE"``, recorded from a controller in a public capture). Basic is refused (RW6 ships with
  Basic off, a public RW6 client notes).
- RobotWare 7 (RWS 2.0): HTTP Basic, ``realm="validusers@robapi.abb"``; Digest is refused (a public
  client measured an OmniCore answering Digest with 401 and a Basic challenge).
- Both: a request that authenticates gets a session, the cookies ``-http-session-`` and ``ABBCX``
  (ABB's RWS samples and abb-robot-client send both back, also on the subscription websocket); a
  request with a live session's cookies needs no credentials.

Bounded (our choice): at most :data:`MAX_SESSIONS` sessions (503 beyond, as abb-robot-client expects
a controller's "too many active connections"), each dropped after :data:`SESSION_IDLE` s unused, and
at most :data:`MAX_NONCES` outstanding Digest nonces, each valid for :data:`NONCE_LIFETIME` s.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

REALM = "validusers@robapi.abb"
SESSION_COOKIE = "-http-session-"
ABB_COOKIE = "ABBCX"
MAX_SESSIONS = 64  # our choice
SESSION_IDLE = 900.0  # s; our choice
MAX_NONCES = 256  # our choice
NONCE_LIFETIME = 300.0  # s; our choice


@dataclass
class Session:
    id: str  # the -http-session- cookie
    abbcx: str  # the ABBCX cookie
    user: str
    last_seen: float = field(default_factory=time.monotonic)


class Sessions:
    """The controller's sessions and the credentials that open them (see the module docstring).
    ``on_drop(session_id)`` is called for each session that ends (its mastership is released)."""

    def __init__(self, version: int, user: str, password: str, on_drop: Callable[[str], None] = lambda sid: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.version = version
        self.user = user
        self.password = password
        self.on_drop = on_drop
        self.clock = clock
        self.sessions: dict[str, Session] = {}
        self._nonces: OrderedDict[str, float] = OrderedDict()
        self._opaque = secrets.token_hex(4)

    # Credentials -------------------------------------------------------------------------------

    def challenge(self) -> str:
        """The WWW-Authenticate value of a 401."""
        if self.version == 7:
            return f'Basic realm="{REALM}"'
        nonce = base64.b64encode(secrets.token_bytes(24)).decode()
        self._nonces[nonce] = self.clock()
        while len(self._nonces) > MAX_NONCES:
            self._nonces.popitem(last=False)
        return (f'Digest realm="{REALM}", domain="/", qop="auth", nonce="{nonce}", opaque="{self._opaque}",'
                f' algorithm="MD5", stale="FALSE"')

    def check(self, header: str, method: str, target: str) -> str | None:
        """The user an Authorization header proves, or None. ``target`` is the request target (path and
        query as sent), which a Digest response must name."""
        scheme, _, rest = header.strip().partition(" ")
        if self.version == 7:
            return self._basic(rest) if scheme.lower() == "basic" else None
        return self._digest(rest, method, target) if scheme.lower() == "digest" else None

    def _basic(self, encoded: str) -> str | None:
        try:
            user, sep, password = base64.b64decode(encoded.strip(), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
        return user if sep and self._matches(user, password) else None

    def _matches(self, user: str, password: str) -> bool:
        return hmac.compare_digest(user.encode(), self.user.encode()) & \
            hmac.compare_digest(password.encode(), self.password.encode())

    def _digest(self, text: str, method: str, target: str) -> str | None:
        fields = parse_digest(text)
        if fields is None:
            return None
        nonce = fields.get("nonce", "")
        issued = self._nonces.get(nonce)
        if issued is None or self.clock() - issued > NONCE_LIFETIME:
            return None
        if fields.get("realm") != REALM or fields.get("uri") != target or fields.get("qop", "auth") != "auth" or \
                fields.get("algorithm", "MD5").upper() != "MD5" or not hmac.compare_digest(
                    fields.get("username", "").encode(), self.user.encode()):
            return None
        ha1 = _md5(f"{self.user}:{REALM}:{self.password}")
        ha2 = _md5(f"{method}:{fields['uri']}")
        if "qop" in fields:
            expected = _md5(f"{ha1}:{nonce}:{fields.get('nc', '')}:{fields.get('cnonce', '')}:auth:{ha2}")
        else:
            expected = _md5(f"{ha1}:{nonce}:{ha2}")  # RFC 2069 form, for older clients
        return self.user if hmac.compare_digest(expected.encode(), fields.get("response", "").encode()) else None

    # Sessions -----------------------------------------------------------------------------------

    def find(self, cookies: Mapping[str, str]) -> Session | None:
        """The live session the request's cookies name (both must match)."""
        self.expire()
        session = self.sessions.get(cookies.get(SESSION_COOKIE, ""))
        if session is None or not hmac.compare_digest(session.abbcx.encode(), cookies.get(ABB_COOKIE, "").encode()):
            return None
        session.last_seen = self.clock()
        return session

    def find_subscriber(self, cookies: Mapping[str, str]) -> Session | None:
        """The session of a subscription websocket: its cookies, or its ``ABBCX`` cookie alone
        (abb-robot-client's synchronous client sends only that one on the websocket)."""
        session = self.find(cookies)
        if session is None:
            abbcx = cookies.get(ABB_COOKIE, "")
            session = next((s for s in self.sessions.values() if abbcx and hmac.compare_digest(s.abbcx.encode(),
                                                                                              abbcx.encode())), None)
        if session is not None:
            session.last_seen = self.clock()
        return session

    def open(self, user: str) -> Session | None:
        """A new session, or None when the controller has :data:`MAX_SESSIONS` already."""
        self.expire()
        if len(self.sessions) >= MAX_SESSIONS:
            return None
        session = Session(secrets.token_urlsafe(24), str(secrets.randbelow(10**9)), user, self.clock())
        self.sessions[session.id] = session
        return session

    def drop(self, session_id: str) -> None:
        if self.sessions.pop(session_id, None) is not None:
            self.on_drop(session_id)

    def drop_all(self) -> None:
        for session_id in list(self.sessions):
            self.drop(session_id)

    def expire(self) -> None:
        now = self.clock()
        for session in [s for s in self.sessions.values() if now - s.last_seen > SESSION_IDLE]:
            self.drop(session.id)


def parse_digest(text: str) -> dict[str, str] | None:
    """The fields of a Digest Authorization header (``k=v`` or ``k="v"``, comma-separated); None if
    it does not read. Bounded: at most 32 fields of 1024 characters (our choice)."""
    fields: dict[str, str] = {}
    rest = text.strip()
    while rest:
        key, sep, rest = rest.partition("=")
        key = key.strip().lower()
        if not sep or not key or len(fields) >= 32:
            return None
        rest = rest.lstrip()
        if rest.startswith('"'):
            end = rest.find('"', 1)
            if end < 0:
                return None
            value, rest = rest[1:end], rest[end + 1:]
        else:
            value, _, rest = rest.partition(",")
            rest = "," + rest if rest else ""
        if len(value) > 1024:
            return None
        fields[key] = value.strip()
        rest = rest.strip()
        if rest.startswith(","):
            rest = rest[1:].strip()
        elif rest:
            return None
    return fields


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()
