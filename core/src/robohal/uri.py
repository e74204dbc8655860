"""Robot URIs: one string picks the backend, the address and the model.

``franka://172.16.0.2?model=franka.fr3``, ``abb-egm://0.0.0.0:6510?model=abb.irb1410``,
``arduino-planar:///dev/ttyACM0?baud=115200``, ``sim://?model=abb.irb2400``.

The host ``sim`` is reserved: ``franka://sim?model=franka.fr3`` starts the
backend's bundled simulator on loopback and connects the same backend class to it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import numpy as np

from .errors import UriError

SIMULATOR_HOST = "sim"


@dataclass(frozen=True)
class RobotUri:
    """A parsed robot URI. ``params`` holds the query string, one value per key."""

    scheme: str
    host: str = ""
    port: int | None = None
    path: str = ""
    params: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    @property
    def model(self) -> str | None:
        return self.params.get("model")

    @property
    def wants_simulator(self) -> bool:
        """True for the reserved form that starts the bundled simulator."""
        return self.host == SIMULATOR_HOST

    def with_params(self, **params: str | None) -> RobotUri:
        """A copy with query parameters set (or removed when given None)."""
        merged = dict(self.params)
        for key, value in params.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = str(value)
        return replace(self, params=merged)

    def with_address(self, host: str, port: int | None = None, path: str | None = None) -> RobotUri:
        return replace(self, host=host, port=port, path=self.path if path is None else path)

    # Typed parameter access with clear errors --------------------------------

    def get_float(self, key: str, default: float, *, minimum: float | None = None) -> float:
        raw = self.params.get(key)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise UriError(f"{self}: parameter {key}={raw!r} is not a number") from None
        if not math.isfinite(value) or (minimum is not None and value < minimum):
            bound = f" >= {minimum}" if minimum is not None else ""
            raise UriError(f"{self}: parameter {key}={raw!r} must be a finite number{bound}")
        return value

    def get_int(self, key: str, default: int, *, minimum: int | None = None) -> int:
        raw = self.params.get(key)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise UriError(f"{self}: parameter {key}={raw!r} is not an integer") from None
        if minimum is not None and value < minimum:
            raise UriError(f"{self}: parameter {key}={raw!r} must be >= {minimum}")
        return value

    def get_vector(self, key: str, length: int) -> np.ndarray | None:
        """A comma-separated list of ``length`` finite numbers (``q0=0.1,0.2``), or None when absent."""
        raw = self.params.get(key)
        if raw is None:
            return None
        try:
            values = np.array([float(v) for v in raw.split(",")])
        except ValueError:
            raise UriError(f"{self}: {key} must be {length} comma-separated numbers") from None
        if values.shape != (length,) or not np.isfinite(values).all():
            raise UriError(f"{self}: {key} must be {length} finite comma-separated numbers")
        return values

    def get_bool(self, key: str, default: bool) -> bool:
        raw = self.params.get(key)
        if raw is None:
            return default
        lowered = raw.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise UriError(f"{self}: parameter {key}={raw!r} is not a boolean (use 1/0, true/false)")

    def __str__(self) -> str:
        netloc = self.host
        if ":" in self.host:  # an IPv6 literal
            netloc = f"[{self.host}]"
        if self.port is not None:
            netloc += f":{self.port}"
        # ':' and '/' may stand in a query (RFC 3986): rws=https://HOST reads as written
        query = f"?{urlencode(sorted((k, _redacted(v)) for k, v in self.params.items()), safe=':/')}" \
            if self.params else ""
        return f"{self.scheme}://{netloc}{quote(self.path)}{query}"


#: a URL with a password in it (``http://user:secret@host``), as a parameter's value
_PASSWORD_IN_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://[^/@:]*):[^/@]*@")


def _redacted(value: str) -> str:
    """A parameter's value as shown: a password in a URL is never repeated (URIs are logged and
    shown; backends refuse such a URL, and their refusal must not show it either)."""
    return _PASSWORD_IN_URL.sub(r"\1:***@", value)


def parse_uri(text: str) -> RobotUri:
    """Parse a robot URI, raising :class:`UriError` with the reason when malformed."""
    if not isinstance(text, str) or not text.strip():
        raise UriError("a robot URI must be a non-empty string like 'sim://?model=abb.irb2400'")
    text = text.strip()
    if "://" not in text:
        raise UriError(f"{text!r} is not a robot URI: expected SCHEME://[HOST[:PORT]][/PATH][?model=NAME], such as"
                       " sim://?model=generic.planar2 (`robohal plugins` lists the schemes the plugins add)")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise UriError(f"{text!r} is not a valid robot URI: {exc}") from None
    if not parts.scheme:
        raise UriError(f"{text!r} has no scheme")
    if parts.fragment:
        raise UriError(f"{text!r}: fragments (#...) are not used in robot URIs")
    params: dict[str, str] = {}
    try:
        pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError:
        raise UriError(f"{text!r}: malformed query string {parts.query!r}") from None
    for key, value in pairs:
        if key in params:
            raise UriError(f"{text!r}: parameter {key!r} is given twice")
        params[key] = value
    return RobotUri(
        scheme=parts.scheme.lower(),
        host=parts.hostname or "",
        port=port,
        path=parts.path,
        params=params,
    )
