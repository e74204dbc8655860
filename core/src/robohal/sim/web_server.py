"""A simulated controller's web server: an aiohttp application served from a thread of its own, on
a loopback socket, over TLS with a certificate made at start (as a controller makes its own).

The simulated RWS of an OmniCore and the simulated Desk of a Franka are built on it. aiohttp and
cryptography come with those plugins: they are imported here when used, so the core does not
need them.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import ipaddress
import socket
import ssl
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiohttp import web

START_TIMEOUT = 10.0  # s: a server whose loop is not serving by then is reported as failed
STOP_TIMEOUT = 5.0  # s: how long stop() waits for the server's thread


def self_signed_certificate(common_name: str, address: str, dns_names: Sequence[str] = ()) -> tuple[bytes, bytes, str]:
    """A certificate for ``address`` (and ``dns_names``) made now, with a new key, as a freshly
    set-up controller makes its own: (certificate PEM, key PEM, SHA-256 fingerprint of its DER
    form, hex)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    names: list[x509.GeneralName] = [x509.DNSName(dns) for dns in dns_names]
    names.append(x509.IPAddress(ipaddress.ip_address(address)))
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(key, hashes.SHA256())
    )
    der = certificate.public_bytes(serialization.Encoding.DER)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem, hashlib.sha256(der).hexdigest()


def server_context(certificate_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """A server's TLS context serving this certificate and key."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as folder:  # load_cert_chain reads files only
        certificate, key = Path(folder, "server.crt"), Path(folder, "server.key")
        certificate.write_bytes(certificate_pem)
        key.write_bytes(key_pem)
        key.chmod(0o600)
        context.load_cert_chain(str(certificate), str(key))
    return context


def loopback_socket(address: str, port: int, backlog: int) -> socket.socket:
    """A listening, non-blocking TCP socket on ``address``: ``port``; ValueError for an address
    that is not loopback (a simulator never serves a network)."""
    if not ipaddress.ip_address(address).is_loopback:
        raise ValueError(f"a simulator serves loopback addresses only (127.0.0.0/8), not {address}")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError:
        sock.close()
        raise
    sock.listen(backlog)
    sock.setblocking(False)
    return sock


class ThreadedWebServer:
    """An aiohttp application on ``sock``, served by an event loop in a thread of its own
    (:meth:`start`, :meth:`stop`); ``tls`` None serves plain HTTP. Subclasses build the
    application (:meth:`_application`) and may prepare the loop before it serves
    (:meth:`_before_serving`) and close what is open once it stopped (:meth:`_after_serving`)."""

    thread_name = "robohal-web"

    def __init__(self, sock: socket.socket, tls: ssl.SSLContext | None) -> None:
        self.sock = sock
        self.port: int = sock.getsockname()[1]
        self.loop = asyncio.new_event_loop()
        self._tls = tls
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()

    def _application(self) -> web.Application:
        raise NotImplementedError

    def _before_serving(self) -> None:
        """On the server's loop, before the application serves."""

    def _after_serving(self) -> None:
        """On the server's loop, once it stopped and before the application is cleaned up."""

    def start(self) -> None:
        self._thread = threading.Thread(target=self._serve, name=self.thread_name, daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT):
            raise RuntimeError(f"the simulated server ({self.thread_name}) did not start")

    def _serve(self) -> None:
        from aiohttp import web

        asyncio.set_event_loop(self.loop)
        self._before_serving()
        self._runner = web.AppRunner(self._application(), access_log=None, handle_signals=False)
        self.loop.run_until_complete(self._runner.setup())
        self.loop.run_until_complete(web.SockSite(self._runner, self.sock, ssl_context=self._tls).start())
        self._ready.set()
        self.loop.run_forever()
        self._after_serving()
        self.loop.run_until_complete(self._runner.cleanup())
        self.loop.close()

    def stop(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(STOP_TIMEOUT)
        self.sock.close()

    def call(self, function: Callable[..., Any], *args: Any) -> None:
        """Run ``function(*args)`` on the server's loop (from another thread)."""
        try:
            self.loop.call_soon_threadsafe(function, *args)
        except RuntimeError:  # the loop has closed: the server is stopping
            pass

    def run(self, function: Callable[..., Any], *args: Any, timeout: float = 10.0) -> Any:
        """Run ``function(*args)`` on the server's loop and wait for its result (from another thread)."""

        async def call() -> Any:
            return function(*args)

        return asyncio.run_coroutine_threadsafe(call(), self.loop).result(timeout)
