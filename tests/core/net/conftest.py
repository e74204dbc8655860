"""Self-signed certificates and a TLS server on loopback, for the pinning tests."""

from __future__ import annotations

import datetime
import socket
import ssl
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def self_signed(name: str = "controller", *, days: int = 365, start_days: int = -1) -> tuple[bytes, bytes]:
    """A self-signed certificate and its key (PEM), as a controller makes its own."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now + datetime.timedelta(days=start_days))
            .not_valid_after(now + datetime.timedelta(days=days))
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


class TlsServer:
    """A TLS server on a loopback port that answers each connection's first line with ``ok``; its
    certificate can be swapped (a reinstalled controller, or someone in between)."""

    def __init__(self, cert: tuple[bytes, bytes]) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="robohal-tls-")
        self.use(cert)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)  # so that close() is seen at once
        self._closing = threading.Event()
        self.port = self.sock.getsockname()[1]
        self.requests: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def use(self, cert: tuple[bytes, bytes]) -> None:
        folder = Path(self._folder.name)
        (folder / "cert.pem").write_bytes(cert[0])
        (folder / "key.pem").write_bytes(cert[1])
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
        self.context = context

    def _serve(self) -> None:
        while not self._closing.is_set():
            try:
                raw, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            raw.settimeout(None)
            try:
                with self.context.wrap_socket(raw, server_side=True) as tls:
                    tls.settimeout(2.0)
                    data = tls.recv(1024)
                    if data:
                        self.requests.append(data)
                        tls.sendall(b"ok\n")
            except (OSError, ssl.SSLError):
                raw.close()

    def close(self) -> None:
        self._closing.set()
        self._thread.join(timeout=5)
        self.sock.close()
        self._folder.cleanup()


@pytest.fixture
def tls_server() -> Iterator[Callable[[tuple[bytes, bytes]], TlsServer]]:
    started: list[TlsServer] = []

    def start(cert: tuple[bytes, bytes]) -> TlsServer:
        server = TlsServer(cert)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


def talk(context: ssl.SSLContext, port: int, message: bytes = b"hello\n") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.sendall(message)
        return tls.recv(1024)
