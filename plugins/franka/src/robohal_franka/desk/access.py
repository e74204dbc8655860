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

import hashlib
import hmac
import json
import logging
import os
import sys
import tempfile
from pathlib import Path

from robohal.errors import ConnectFailed, UriError
from robohal.uri import RobotUri

from .. import DEFAULT_MODEL
from ..simulated_desk import DEFAULT_DESK_PASSWORD as DEFAULT_PASSWORD
from ..simulated_desk import DEFAULT_DESK_USER as DEFAULT_USER
from .records import Credentials
from .session import DeskSession
from .transport import CertificateRefused, PinCheck, fingerprint_check

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

log = logging.getLogger("robohal.franka.desk")
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
    """The credentials of the source the URI names (``desk_credentials=``, default ``franka_desk``)."""
    return lookup_credentials(uri.params.get("desk_credentials", DEFAULT_SOURCE))


def lookup_credentials(source: str) -> Credentials:
    """``ROBOHAL_<SOURCE>_USER`` and ``_PASSWORD`` from the environment; else the ``[SOURCE]`` table
    (``user``, ``password``) of ``$XDG_CONFIG_HOME/robohal/credentials.toml`` (``~/.config/...``),
    which must be readable by its owner only; else, for ``franka_desk``, the documented defaults
    (``franka``/``franka``, the simulated Desk's)."""
    if not source or not source.replace("_", "").isalnum():
        raise UriError(f"a credentials source is a name (letters, digits, '_'), not {source!r}")
    prefix = f"ROBOHAL_{source.upper()}_"
    user, password = os.environ.get(prefix + "USER"), os.environ.get(prefix + "PASSWORD")
    if user and password is not None:
        return Credentials(user, password, source=f"the environment ({prefix}USER)")
    path = config_folder() / "credentials.toml"
    if path.exists():
        info = path.stat()
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise ConnectFailed(f"{path} may be read or changed by others than its owner: robohal takes no credentials"
                                f" from it (chmod 600 {path})")
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8")).get(source)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConnectFailed(f"{path} is not readable TOML: {exc}") from None
        if isinstance(table, dict) and isinstance(table.get("user"), str) and isinstance(table.get("password"), str):
            return Credentials(table["user"], table["password"], source=f"{path} [{source}]")
    if source == DEFAULT_SOURCE:
        return Credentials(DEFAULT_USER, DEFAULT_PASSWORD, source="the defaults")
    raise ConnectFailed(f"no credentials for {source!r}: set {prefix}USER and {prefix}PASSWORD, or give a [{source}]"
                        f" table (user, password) in {path} (chmod 600)")


def config_folder() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base and os.path.isabs(base) else Path.home() / ".config") / "robohal"


def desk_pin_check(uri: RobotUri) -> PinCheck:
    """The URI's ``desk_fingerprint``, else the pin kept for the Desk's address (first use)."""
    fingerprint = uri.params.get("desk_fingerprint")
    return fingerprint_check(fingerprint) if fingerprint else first_use_check(config_folder() / "known_desks.json")


def first_use_check(path: Path) -> PinCheck:
    """Trust on first use: the first certificate an address shows is kept (in ``path``, owner-only)
    and every later one must be it; a changed one is refused with both fingerprints."""

    def check(address: str, der: bytes) -> None:
        got = hashlib.sha256(der).hexdigest()
        known: dict = {}
        if path.exists():
            try:
                known = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                raise CertificateRefused(f"{path} is unreadable: robohal trusts no certificate until it is mended",
                                         address=address) from None
        pinned = known.get(address)
        if pinned is None:
            known[address] = got
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".known-")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(known, out, indent=1, sort_keys=True)
            os.replace(temporary, path)
            log.warning("franka Desk at %s: trusting its certificate from now on (first use, SHA-256 %s)", address, got)
        elif not hmac.compare_digest(pinned, got):
            raise CertificateRefused(
                f"franka Desk at {address}: its certificate changed (SHA-256 {got}, pinned {pinned}); nothing was"
                f" sent. If the robot was set up again and you know this is its certificate, remove {address} from"
                f" {path}.", address=address)

    return check


def open_desk(uri: RobotUri) -> DeskSession:
    """An opened session with the Desk of the robot ``uri`` names."""
    session = DeskSession(desk_url(uri), desk_credentials(uri), pin_check=desk_pin_check(uri),
                          model=uri.model or DEFAULT_MODEL)
    return session.open()
