"""The RWS client where a simulated controller cannot take it: a controller that stops answering in
the middle of a call, one that asks for Basic authentication over plain HTTP, a wrong address.
(The client against the simulated controller, both dialects: test_rws_client.py.)"""

from __future__ import annotations

import socket

import pytest
from robohal.errors import ConnectFailed, ConnectionLost
from robohal.net.credentials import Credentials
from robohal.net.tls import KnownCertificates
from robohal_abb.rws import RwsAuthError, RwsClient, RwsTimeout, RwsUnreachable, RwsUnsupported
from robohal_abb.rws.client import endpoint

from .rws_stub import stub_server  # noqa: F401  (the fixture)

SECRET = "n0t-the-default"
SYSTEM6 = (b'{"_embedded":{"_state":[{"_type":"sys-system","_title":"system","name":"stub",'
           b'"rwversion":"6.15.00"}]}}')
DIGEST = 'Digest realm="validusers@robapi.abb", nonce="abc123", qop="auth", opaque="xyz"'


def rw6(handler) -> None:
    """A RobotWare 6 stand-in: Digest challenge without credentials, the system once given any."""
    if not handler.headers.get("Authorization", "").startswith("Digest"):
        handler.answer(401, b"", headers={"WWW-Authenticate": DIGEST})
    elif handler.path.startswith("/rw/system"):
        handler.answer(200, SYSTEM6)
    elif handler.path.startswith("/rw/panel/ctrlstate"):
        handler.server.release.wait(30)  # stops answering: no status line, nothing
    elif handler.path.startswith("/rw/panel/opmode"):
        handler.send_response(200)  # starts its answer, then stops answering
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "500")
        handler.end_headers()
        handler.wfile.write(b'{"_embedded": {"_state": [')
        handler.wfile.flush()
        handler.server.release.wait(30)
    else:
        handler.answer(204)


def credentials() -> Credentials:
    return Credentials("operator", SECRET, "from the test")


@pytest.mark.parametrize("path", ["ctrlstate", "opmode"])
def test_a_controller_that_stops_answering_mid_call_times_out(stub_server, path):  # noqa: F811
    server = stub_server(rw6)
    with RwsClient(server.url, credentials=credentials(), timeout=0.5) as rws:
        assert rws.dialect.robotware == 6  # found from the Digest challenge
        call = rws.controller_state if path == "ctrlstate" else rws.operation_mode
        with pytest.raises(RwsTimeout, match=r"did not answer within 0\.5 s") as caught:
            call()
    assert isinstance(caught.value, ConnectionLost)
    assert caught.value.path.endswith(path)


def test_basic_authentication_over_plain_http_gets_no_credentials(stub_server):  # noqa: F811
    def rw7_on_http(handler) -> None:
        handler.answer(401, b"", headers={"WWW-Authenticate": 'Basic realm="validusers@robapi.abb"'})

    server = stub_server(rw7_on_http)
    with pytest.raises(RwsUnsupported, match="no credentials over plain HTTP"):
        RwsClient(server.url, credentials=credentials()).open()
    assert all("Authorization" not in headers for _, _, headers, _ in server.requests)


def test_a_named_robotware_7_over_plain_http_is_refused_before_anything_is_sent(stub_server):  # noqa: F811
    server = stub_server(rw6)
    with pytest.raises(RwsUnsupported, match=r"https://127\.0\.0\.1"):
        RwsClient(server.url, robotware=7, credentials=credentials()).open()
    assert server.requests == []


def test_a_refused_login_names_the_user_never_the_password(stub_server):  # noqa: F811
    def refuses(handler) -> None:
        handler.answer(401, b"", headers={"WWW-Authenticate": DIGEST})

    server = stub_server(refuses)
    with pytest.raises(RwsAuthError) as caught:
        RwsClient(server.url, credentials=credentials()).open()
    message = str(caught.value)
    assert "'operator'" in message and SECRET not in message and "nothing was changed" in message
    assert isinstance(caught.value, ConnectFailed) and caught.value.user == "operator"


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_nothing_at_the_address_is_a_connect_failure(scheme, tmp_path):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(RwsUnreachable, match=f"127.0.0.1:{port}.*is the controller on") as caught:
        RwsClient(f"{scheme}://127.0.0.1:{port}", credentials=credentials(), timeout=2,
                  known=KnownCertificates(tmp_path / "known.toml")).open()
    assert isinstance(caught.value, ConnectFailed)


@pytest.mark.parametrize("url", [f"http://user:{SECRET}@10.0.0.1", f"https://u:{SECRET}@10.0.0.1:443"])
def test_credentials_in_an_address_are_refused_without_repeating_them(url):
    with pytest.raises(ValueError, match="credentials do not go in an RWS address") as caught:
        endpoint(url)
    assert SECRET not in str(caught.value)


def test_the_client_shows_its_user_not_its_password():
    rws = RwsClient("http://10.0.0.1", credentials=credentials())
    assert "operator" in repr(rws) and SECRET not in repr(rws)
