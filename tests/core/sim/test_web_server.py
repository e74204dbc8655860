"""The simulated controllers' web server: it serves its application over TLS with the certificate it
made (the fingerprint it reports is the one a client sees), on loopback only, and stops cleanly."""

from __future__ import annotations

import hashlib
import http.client
import ssl

import pytest
from robohal.net.tls import pinned_context
from robohal.sim.web_server import ThreadedWebServer, loopback_socket, self_signed_certificate, server_context

pytest.importorskip("aiohttp")
pytest.importorskip("cryptography")


class Hello(ThreadedWebServer):
    thread_name = "robohal-test-web"

    def __init__(self) -> None:
        certificate, key, self.fingerprint = self_signed_certificate("test controller", "127.0.0.1",
                                                                     dns_names=("controller.test",))
        self.der = ssl.PEM_cert_to_DER_cert(certificate.decode())
        super().__init__(loopback_socket("127.0.0.1", 0, backlog=4), server_context(certificate, key))
        self.prepared = self.cleaned = False

    def _application(self):
        from aiohttp import web

        async def hello(request: web.Request) -> web.Response:
            return web.Response(text=f"hello {request.path}")

        app = web.Application()
        app.router.add_get("/{path:.*}", hello)
        return app

    def _before_serving(self) -> None:
        self.prepared = True

    def _after_serving(self) -> None:
        self.cleaned = True


def test_it_serves_over_tls_with_the_certificate_whose_fingerprint_it_reports():
    server = Hello()
    server.start()
    try:
        assert server.prepared
        connection = http.client.HTTPSConnection("127.0.0.1", server.port, timeout=5,
                                                 context=pinned_context(server.der))
        connection.request("GET", "/rw/system")
        answer = connection.getresponse()
        assert (answer.status, answer.read()) == (200, b"hello /rw/system")
        seen = connection.sock.getpeercert(binary_form=True)
        assert hashlib.sha256(seen).hexdigest() == server.fingerprint
        connection.close()
        assert server.run(lambda a, b: a + b, 2, 3) == 5  # on the server's loop, from this thread
    finally:
        server.stop()
    assert server.cleaned and not server._thread.is_alive()
    server.call(print, "nothing")  # after the stop: no error, nothing runs
    with pytest.raises(OSError):
        http.client.HTTPSConnection("127.0.0.1", server.port, timeout=5, context=pinned_context(server.der)).connect()


def test_its_certificate_names_the_address_and_the_host_names():
    from cryptography import x509

    certificate, _, fingerprint = self_signed_certificate("robot", "127.0.0.1", dns_names=("robot.example",))
    parsed = x509.load_pem_x509_certificate(certificate)
    names = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["robot.example"]
    assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert hashlib.sha256(ssl.PEM_cert_to_DER_cert(certificate.decode())).hexdigest() == fingerprint


@pytest.mark.parametrize("address", ["192.0.2.1", "0.0.0.0"])
def test_a_simulator_never_listens_beyond_loopback(address):
    with pytest.raises(ValueError, match="loopback addresses only"):
        loopback_socket(address, 0, backlog=1)
