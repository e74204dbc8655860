"""A controller's certificate is trusted on first use and pinned; the same one passes, a changed
one is refused with both fingerprints; an expected fingerprint or a CA bundle can be named."""

from __future__ import annotations

import logging
import os
import ssl

import pytest
from robohal.errors import ConnectFailed
from robohal.net.private_files import PrivateFileError
from robohal.net.tls import (
    CertificateChanged,
    KnownCertificates,
    fingerprint,
    normalise_fingerprint,
    pinned_context,
    trusted_context,
)

from .conftest import self_signed, talk


@pytest.fixture
def known(tmp_path) -> KnownCertificates:
    return KnownCertificates(tmp_path / "config" / "known_certificates.toml")


def der_of(cert: tuple[bytes, bytes]) -> bytes:
    return ssl.PEM_cert_to_DER_cert(cert[0].decode())


def test_first_use_pins_the_certificate_owner_only_and_says_so(tls_server, known, caplog):
    cert = self_signed()
    server = tls_server(cert)
    with caplog.at_level(logging.WARNING, logger="robohal"):
        context = trusted_context("127.0.0.1", server.port, timeout=5, known=known)
    assert talk(context, server.port) == b"ok\n"
    pin = known.get(f"127.0.0.1:{server.port}")
    assert pin is not None and pin.fingerprint == fingerprint(der_of(cert)) and pin.der == der_of(cert)
    assert os.stat(known.path).st_mode & 0o777 == 0o600
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "first use" in warning and pin.fingerprint in warning


def test_the_same_certificate_passes_again(tls_server, known):
    server = tls_server(self_signed())
    trusted_context("127.0.0.1", server.port, timeout=5, known=known)
    again = trusted_context("127.0.0.1", server.port, timeout=5, known=known)
    assert talk(again, server.port) == b"ok\n"
    assert len(known.entries()) == 1


def test_a_changed_certificate_is_refused_with_both_fingerprints(tls_server, known):
    first, second = self_signed(), self_signed()
    server = tls_server(first)
    trusted_context("127.0.0.1", server.port, timeout=5, known=known)
    server.use(second)
    with pytest.raises(CertificateChanged) as caught:
        trusted_context("127.0.0.1", server.port, timeout=5, known=known)
    message = str(caught.value)
    assert fingerprint(der_of(first)) in message and fingerprint(der_of(second)) in message
    assert f"robohal certificates forget 127.0.0.1:{server.port}" in message
    assert isinstance(caught.value, ConnectFailed)  # never reached: a reconnect loop must not spin on it
    assert known.get(f"127.0.0.1:{server.port}").fingerprint == fingerprint(der_of(first))  # not replaced
    assert known.forget(f"127.0.0.1:{server.port}")
    trusted_context("127.0.0.1", server.port, timeout=5, known=known)  # pinned anew
    assert known.get(f"127.0.0.1:{server.port}").fingerprint == fingerprint(der_of(second))


def test_the_pinned_context_itself_refuses_another_certificate(tls_server):
    """The check holds on the connection that carries the request, not only in a look beforehand."""
    first, second = self_signed(), self_signed()
    server = tls_server(second)
    with pytest.raises(ssl.SSLCertVerificationError):
        talk(pinned_context(der_of(first)), server.port)
    assert server.requests == []  # nothing was sent


def test_an_expired_pinned_certificate_still_passes(tls_server):
    cert = self_signed(days=-1, start_days=-30)  # a controller's old self-signed certificate
    server = tls_server(cert)
    assert talk(pinned_context(der_of(cert)), server.port) == b"ok\n"


def test_an_expected_fingerprint_needs_no_first_use(tls_server, known):
    cert, other = self_signed(), self_signed()
    server = tls_server(cert)
    expected = fingerprint(der_of(cert)).replace(":", "").lower()
    context = trusted_context("127.0.0.1", server.port, timeout=5, expected=expected, known=known)
    assert talk(context, server.port) == b"ok\n"
    assert known.entries() == {}
    with pytest.raises(CertificateChanged, match=fingerprint(der_of(other))):
        trusted_context("127.0.0.1", server.port, timeout=5, expected=fingerprint(der_of(other)), known=known)


def test_a_ca_bundle_verifies_as_usual(tls_server, tmp_path):
    cert = self_signed("127.0.0.1")
    server = tls_server(cert)
    (tmp_path / "ca.pem").write_bytes(self_signed("lab CA")[0])
    context = trusted_context("127.0.0.1", server.port, timeout=5, ca_bundle=tmp_path / "ca.pem")
    with pytest.raises(ssl.SSLCertVerificationError):  # that CA signed nothing of this server's
        talk(context, server.port)


def test_fingerprints_are_accepted_in_any_usual_spelling():
    hexed = "ab" * 32
    assert normalise_fingerprint(f"sha256:{hexed}") == normalise_fingerprint(":".join(["AB"] * 32))
    with pytest.raises(ValueError):
        normalise_fingerprint("AB:CD")


def test_a_known_file_others_can_change_is_refused(tls_server, known):
    server = tls_server(self_signed())
    trusted_context("127.0.0.1", server.port, timeout=5, known=known)
    os.chmod(known.path, 0o666)
    with pytest.raises(PrivateFileError, match="can be changed by other users"):
        trusted_context("127.0.0.1", server.port, timeout=5, known=known)


def test_nothing_answering_is_a_connect_failure(known):
    import socket

    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(ConnectFailed, match=f"127.0.0.1:{port}"):
        trusted_context("127.0.0.1", port, timeout=2, known=known)


def test_robohal_certificates_lists_and_forgets(tls_server, known, monkeypatch):
    from click.testing import CliRunner
    from robohal.cli.main import main

    server = tls_server(self_signed())
    trusted_context("127.0.0.1", server.port, timeout=5, known=known)
    monkeypatch.setenv("ROBOHAL_KNOWN_CERTIFICATES", str(known.path))
    runner = CliRunner()
    listed = runner.invoke(main, ["certificates", "list"])
    assert listed.exit_code == 0 and f"127.0.0.1:{server.port}" in listed.output
    assert known.get(f"127.0.0.1:{server.port}").fingerprint in listed.output
    assert runner.invoke(main, ["certificates", "forget", f"127.0.0.1:{server.port}"]).exit_code == 0
    assert known.entries() == {}
    again = runner.invoke(main, ["certificates", "forget", f"127.0.0.1:{server.port}"])
    assert again.exit_code == 2 and "no certificate is pinned" in again.output
