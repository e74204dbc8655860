"""A ``franka://`` URI's Desk: where it is, whose credentials, which certificate to trust.

URI parameters (``franka://HOST?...``):

- ``desk=https://HOST[:PORT]``: the Desk's address (default ``https://HOST``, as on a robot);
- ``desk_fingerprint=HEX``: the SHA-256 of the certificate to trust (the simulator announces
  its own); without it the certificate is pinned on first use and a changed one refused;
- ``desk_credentials=NAME``: where the credentials come from (default ``franka_desk``): the
  environment's ``ROBOHAL_<NAME>_USER`` and ``ROBOHAL_<NAME>_PASSWORD``, else the ``[NAME]``
  table of the owner-only credentials file, else the documented defaults. Never the URI itself:
  a URI shows up in logs and in the shell's history.
"""

from __future__ import annotations

from robohal.errors import UriError
from robohal.uri import RobotUri

from .. import DEFAULT_MODEL
from .records import Credentials
from .session import DeskSession
from .transport import PinCheck, fingerprint_check

DEFAULT_SOURCE = "franka_desk"


def desk_url(uri: RobotUri) -> str:
    if uri.wants_simulator:
        raise UriError(f"{uri}: franka://sim names no robot yet; its Desk is on the simulator's address (the URI"
                       " its ready line gives, e.g. robohal sim franka --desk v1 --locked 1)")
    url = uri.params.get("desk") or f"https://{uri.host}"
    if not url.startswith("https://"):
        raise UriError(f"{uri}: desk is https://HOST[:PORT], got {url!r}")
    return url


def desk_credentials(uri: RobotUri) -> Credentials:
    from robohal.net.credentials import lookup  # robohal's credential sources, shared by every plugin

    source = uri.params.get("desk_credentials", DEFAULT_SOURCE)
    found = lookup(source)
    return Credentials(found.user, found.password, source=found.source)


def desk_pin_check(uri: RobotUri) -> PinCheck:
    fingerprint = uri.params.get("desk_fingerprint")
    if fingerprint:
        return fingerprint_check(fingerprint)
    from robohal.net.tls import pin_check  # trust on first use, a changed certificate refused

    return pin_check("franka-desk")


def open_desk(uri: RobotUri) -> DeskSession:
    """An opened session with the Desk of the robot ``uri`` names."""
    session = DeskSession(desk_url(uri), desk_credentials(uri), pin_check=desk_pin_check(uri),
                          model=uri.model or DEFAULT_MODEL)
    return session.open()
