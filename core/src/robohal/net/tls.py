"""TLS to a robot controller: its own certificate pinned, or a CA bundle.

Controllers (ABB OmniCore, a Franka's Desk) serve HTTPS with a self-signed certificate that no CA
vouches for. robohal treats it as ssh treats a host key: the first time it meets a controller at
``HOST:PORT`` it records the certificate (its SHA-256 fingerprint and the certificate itself) in
the known-certificates file and says so in a warning; every later connection trusts that
certificate and nothing else; a controller that shows another one is refused with both
fingerprints and how to forget the old one (``robohal certificates forget HOST:PORT``) once you
know why it changed. A lab with its own CA gives a CA bundle instead (normal verification, host
name included), and an expected fingerprint can be named up front (no first-use trust at all).

The check happens on the very connection that carries the request: the TLS context trusts the
pinned certificate alone, so nothing (no password) is sent to a server that cannot show it.

The known-certificates file is ``$ROBOHAL_KNOWN_CERTIFICATES`` or ``known_certificates.toml`` in
robohal's config folder, written readable and writable by its owner only; a file others can
change is refused (it decides whom robohal trusts).
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import socket
import ssl
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConnectFailed
from .private_files import PrivateFileError, check_private, config_path, locked, write_private

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

log = logging.getLogger(__name__)

FILE_VARIABLE = "ROBOHAL_KNOWN_CERTIFICATES"
FILE_NAME = "known_certificates.toml"
#: OpenSSL's X509_V_FLAG_NO_CHECK_TIME (Python names no constant for it): a pinned certificate is
#: trusted for being that certificate, not for its dates; controllers' self-signed certificates
#: outlive them, and their clocks are often wrong
_NO_CHECK_TIME = 0x200000


class CertificateChanged(ConnectFailed):
    """The controller showed another certificate than the one pinned for it (or than the
    fingerprint named); nothing was sent to it. The message names both fingerprints."""

    def __init__(self, message: str, *, address: str, expected: str, seen: str) -> None:
        super().__init__(message, address=address)
        self.expected = expected
        self.seen = seen


def fingerprint(der: bytes) -> str:
    """The SHA-256 fingerprint of a DER certificate, as browsers and ``openssl x509 -fingerprint
    -sha256`` show it: upper-case hex pairs joined by colons."""
    digest = hashlib.sha256(der).hexdigest().upper()
    return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))


def normalise_fingerprint(text: str) -> str:
    """A fingerprint as given by a person (any case, with or without colons or a ``sha256:``
    prefix) in :func:`fingerprint`'s form; ValueError if it is not 32 bytes of hex."""
    cleaned = text.strip()
    if cleaned.lower().startswith("sha256"):
        cleaned = cleaned[6:].lstrip(":= ")
    digits = cleaned.replace(":", "").replace(" ", "").upper()
    if len(digits) != 64 or any(c not in "0123456789ABCDEF" for c in digits):
        raise ValueError(f"{text!r} is not a SHA-256 fingerprint (64 hex digits, colons allowed)")
    return ":".join(digits[i:i + 2] for i in range(0, 64, 2))


def address_key(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def peer_certificate(host: str, port: int, timeout: float) -> bytes:
    """The certificate (DER) the server at ``host:port`` shows, read in a handshake that sends
    nothing else; :class:`ConnectFailed` when nothing answers there."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False  # only looking: whether to trust it is decided by the caller
    context.verify_mode = ssl.CERT_NONE
    where = address_key(host, port)
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw, \
                context.wrap_socket(raw, server_hostname=host) as tls:
            der = tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError) as exc:
        raise ConnectFailed(f"no TLS server answered at {where}: {exc}", address=where) from None
    if not der:
        raise ConnectFailed(f"the TLS server at {where} showed no certificate", address=where)
    return der


def pinned_context(der: bytes) -> ssl.SSLContext:
    """A client context that trusts exactly this certificate (and what its key signs): the
    controller's own, not a CA's, so its host name is not checked (it names the controller
    as its maker chose, often ``localhost``)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cadata=der)
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | _NO_CHECK_TIME
    return context


def ca_context(ca_bundle: str | Path) -> ssl.SSLContext:
    """A client context that verifies the server against a lab's CA bundle, host name included."""
    try:
        return ssl.create_default_context(cafile=str(ca_bundle))
    except (OSError, ssl.SSLError) as exc:
        raise ConnectFailed(f"the CA bundle {ca_bundle} cannot be used: {exc}") from None


@dataclass(frozen=True)
class Pin:
    """A pinned certificate: its fingerprint, when it was first seen, the certificate (DER)."""

    fingerprint: str
    first_seen: str
    der: bytes


class KnownCertificates:
    """The known-certificates file: one pinned certificate per ``HOST:PORT``."""

    def __init__(self, path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> None:
        self.path = Path(path) if path is not None else config_path(FILE_NAME, FILE_VARIABLE, environ)

    def _load(self) -> dict[str, Pin]:
        try:
            check_private(self.path, "the known-certificates file", secret=False)
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise PrivateFileError(f"the known-certificates file {self.path}: {exc.strerror or exc}") from None
        try:
            data = tomllib.loads(text)
            return {key: Pin(entry["sha256"], entry.get("first_seen", ""),
                             ssl.PEM_cert_to_DER_cert(entry["certificate"].strip() + "\n"))
                    for key, entry in data.items()}
        except (tomllib.TOMLDecodeError, KeyError, TypeError, AttributeError, ValueError) as exc:
            raise PrivateFileError(f"the known-certificates file {self.path} is damaged ({exc}): fix or delete"
                                   " it (every controller is then trusted anew on first use)") from None

    def entries(self) -> dict[str, Pin]:
        return self._load()

    def get(self, key: str) -> Pin | None:
        return self._load().get(key)

    def add(self, key: str, der: bytes) -> Pin:
        with locked(self.path):
            pins = self._load()
            now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            pins[key] = Pin(fingerprint(der), now, der)
            self._save(pins)
        return pins[key]

    def forget(self, key: str) -> bool:
        """Remove ``key``'s pin; False if there was none."""
        with locked(self.path):
            pins = self._load()
            if pins.pop(key, None) is None:
                return False
            self._save(pins)
        return True

    def _save(self, pins: dict[str, Pin]) -> None:
        lines = ["# robohal's known controller certificates (trusted on first use, refused when changed).",
                 "# Forget one with: robohal certificates forget HOST:PORT", ""]
        for key, pin in sorted(pins.items()):
            pem = ssl.DER_cert_to_PEM_cert(pin.der).strip()
            lines += [f'["{key}"]', f'sha256 = "{pin.fingerprint}"', f'first_seen = "{pin.first_seen}"',
                      f'certificate = """\n{pem}\n"""', ""]
        write_private(self.path, "\n".join(lines))


def trusted_context(host: str, port: int, *, timeout: float, ca_bundle: str | Path | None = None,
                    expected: str | None = None, known: KnownCertificates | None = None) -> ssl.SSLContext:
    """The TLS context for the controller at ``host:port``: verified with ``ca_bundle`` if given;
    else pinned to the ``expected`` fingerprint if given; else trusted on first use and pinned in
    the known-certificates file. :class:`CertificateChanged` when the controller shows another
    certificate than the pinned or expected one."""
    if ca_bundle is not None:
        return ca_context(ca_bundle)
    where = address_key(host, port)
    der = peer_certificate(host, port, timeout)
    seen = fingerprint(der)
    if expected is not None:
        wanted = normalise_fingerprint(expected)
        if seen != wanted:
            raise CertificateChanged(
                f"the controller at {where} shows certificate SHA256 {seen}, not the {wanted} named in its URI:"
                " refused, nothing was sent. If the controller got a new certificate, name the new fingerprint",
                address=where, expected=wanted, seen=seen)
        return pinned_context(der)
    known = known or KnownCertificates()
    pin = known.get(where)
    if pin is None:
        pin = known.add(where, der)
        log.warning("trusting the certificate of %s on first use: SHA256 %s (pinned in %s; compare it with the"
                    " controller's own)", where, seen, known.path)
    elif pin.fingerprint != seen:
        raise CertificateChanged(
            f"the controller at {where} shows a certificate other than the one pinned for it on {pin.first_seen}:"
            f" pinned SHA256 {pin.fingerprint}, now SHA256 {seen}. Refused: nothing was sent. A controller's"
            " certificate changes when it is reinstalled or reconfigured, and also when someone sits between you"
            f" and it. Once you know which, forget the old one: robohal certificates forget {where}"
            f" (or delete its entry in {known.path})", address=where, expected=pin.fingerprint, seen=seen)
    return pinned_context(pin.der)
