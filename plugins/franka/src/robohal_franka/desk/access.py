"""A ``franka://`` URI's Desk: where it is, whose credentials, which certificate to trust.

URI parameters (``franka://HOST?...``):

- ``desk=https://HOST[:PORT]``: the Desk's address (default ``https://HOST``, as on a robot);
- ``desk_fingerprint=SHA256``: the certificate to trust (the simulator announces its own);
  without it the certificate is pinned on first use and a changed one refused
  (:mod:`robohal.net.tls`; ``robohal certificates list|forget``);
- ``desk_credentials=SERVICE``: whose credentials (default ``franka-desk``): the environment's
  ``ROBOHAL_<SERVICE>_USER`` and ``ROBOHAL_<SERVICE>_PASSWORD``, else the ``[SERVICE."HOST"]``
  (or ``[SERVICE."*"]``) table of the owner-only credentials file (:mod:`robohal.net.credentials`),
  else, for ``franka-desk``, the documented defaults (``franka``/``franka``, the simulated Desk's).
  A name, never the credentials: a URI shows up in logs and in the shell's history.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from robohal.errors import UriError
from robohal.net.credentials import Credentials, credentials_for
from robohal.net.tls import trusted_context
from robohal.uri import RobotUri

from .. import DEFAULT_MODEL
from ..simulated_desk import DEFAULT_DESK_PASSWORD, DEFAULT_DESK_USER
from .session import DeskSession
from .transport import TIMEOUT, TlsContext

SERVICE = "franka-desk"


def desk_url(uri: RobotUri) -> str:
    if uri.wants_simulator:
        raise UriError(f"{uri}: franka://sim names no robot yet; its Desk is on the simulator's address (the URI"
                       " its ready line gives, e.g. robohal sim franka --desk v1 --locked 1)")
    url = uri.params.get("desk") or f"https://{uri.host}"
    if not url.startswith("https://") or not urlsplit(url).hostname:
        raise UriError(f"{uri}: desk is https://HOST[:PORT], got {url!r}")
    return url


def desk_credentials(uri: RobotUri) -> Credentials:
    service = uri.params.get("desk_credentials", SERVICE)
    parts = urlsplit(desk_url(uri))
    defaults = (DEFAULT_DESK_USER, DEFAULT_DESK_PASSWORD) if service == SERVICE else None
    return credentials_for(service, str(parts.hostname), parts.port or 443, defaults=defaults)


def desk_tls(url: str, fingerprint: str | None = None) -> TlsContext:
    """The Desk's TLS context, made when first needed: pinned to ``fingerprint``, else trusted on
    first use (a changed certificate refused)."""
    parts = urlsplit(url)
    return lambda: trusted_context(str(parts.hostname), parts.port or 443, timeout=TIMEOUT, expected=fingerprint)


def open_desk(uri: RobotUri) -> DeskSession:
    """An opened session with the Desk of the robot ``uri`` names."""
    url = desk_url(uri)
    session = DeskSession(url, desk_credentials(uri), tls=desk_tls(url, uri.params.get("desk_fingerprint")),
                          model=uri.model or DEFAULT_MODEL)
    return session.open()
