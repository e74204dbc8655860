"""Fuzzing both ends of Desk: the simulated Desk's server answers whatever it is sent with a
proper HTTP answer, never an internal error (500) and never a crash; robohal's Desk client meets
whatever a Desk answers with a robohal error, never another exception."""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import threading
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from robohal.errors import RobohalError
from robohal_franka.desk import Credentials, DeskSession
from robohal_franka.desk.tokens import TokenStore
from robohal_franka.desk.transport import Answer
from robohal_franka.desk.v1 import V1Desk
from robohal_franka.desk.web import WebDesk
from robohal_franka.desk_server import V1_ROUTES, DeskServer, web_routes
from robohal_franka.simulated_desk import SimulatedDesk, encode_password

PATHS = sorted({path for _, path in V1_ROUTES} | {path for _, path in web_routes("franka.fr3")})
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
# bodies with the keys Desk reads, holding anything; or any bytes
known_keys = st.fixed_dictionaries({}, optional={key: json_values for key in (
    "owner", "timeout", "desiredOperatingMode", "type", "safetyErrors", "token", "login", "password", "requestedBy")})
bodies = known_keys.map(lambda body: json.dumps(body).encode()) | st.binary(max_size=200)


@pytest.fixture(scope="module", params=["v1", "web"])
def server(request):
    """A simulated Desk served in this process (no simulator: nothing gates on it)."""
    desk = SimulatedDesk("franka", "franka", brake_time=0.0, self_test_time=0.0)
    served = DeskServer(desk, "127.0.0.1", dialect=request.param, port=0)
    served.start()
    yield served
    served.stop()


def ask(server: DeskServer, method: str, path: str, body: bytes, headers: dict) -> int:
    connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=ssl._create_unverified_context(),
                                             timeout=10)
    try:
        connection.request(method, path, body=body or None, headers=headers)
        reply = connection.getresponse()
        reply.read()
        return reply.status
    finally:
        connection.close()


def reset(server: DeskServer) -> None:
    """A fresh robot for the next example: control free (no take waits), brakes still."""
    done = threading.Event()

    def run() -> None:
        server.desk.reboot()
        server.desk.safety_errors.clear()
        done.set()

    server.call(run)
    assert done.wait(5.0)


@FUZZ
@given(method=st.sampled_from(["GET", "POST", "DELETE", "PUT"]),
       path=st.sampled_from(PATHS) | st.text(min_size=1, max_size=30).map(lambda text: "/" + quote(text, safe="/:")),
       query=st.sampled_from(["", "?force", "?error_id=SafetyError", "?x=%ff"]),
       body=bodies, authorised=st.booleans(), token=st.sampled_from([None, "", "made-up"]),
       content_type=st.sampled_from(["application/json", "application/x-www-form-urlencoded", "text/plain"]))
def test_the_simulated_desk_answers_anything_without_an_internal_error(server, method, path, query, body, authorised,
                                                                       token, content_type):
    reset(server)
    headers = {"Content-Type": content_type}
    if authorised and server.dialect == "v1":
        headers["Authorization"] = "Basic " + base64.b64encode(b"franka:franka").decode()
    elif authorised:
        cookie = server.desk.login("franka", encode_password("franka", "franka"))  # (a plain dict write)
        headers["Cookie"] = f"authorization={cookie}"
    if token is not None:
        headers["X-Control-Token"] = token
    if path.startswith("/desk/api/navigation"):
        return  # the websocket: no plain request (the franky test drives it)
    status = ask(server, method, path + query, body, headers)
    assert status < 500 or status == 501, f"{method} {path}{query} -> {status}"


class Replies:
    """A transport whose answers the test draws."""

    url = "https://127.0.0.1"
    address = "127.0.0.1:443"

    def __init__(self, draw) -> None:
        self.draw = draw

    def request(self, method, path, *, body=None, headers=None, timeout=None) -> Answer:
        return self.draw(answers)

    def close(self) -> None:
        pass


answers = st.builds(
    Answer,
    status=st.sampled_from([200, 204, 400, 401, 403, 404, 409, 423, 424, 500, 503]),
    body=json_values.map(lambda value: json.dumps(value).encode()) | st.binary(max_size=60)
    | st.fixed_dictionaries({}, optional={key: json_values for key in (
        "owner", "tokenId", "token", "id", "status", "recovery", "controlToken", "safety", "derived", "activeToken",
        "fciActive", "tokenForceTimeout", "code")}).map(lambda value: json.dumps(value).encode()),
    content_type=st.sampled_from(["application/json", "text/plain", ""]),
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), dialect=st.sampled_from(["v1", "web"]))
def test_the_client_meets_any_answer_with_a_robohal_error(data, dialect, tmp_path):
    transport = Replies(data.draw)
    credentials = Credentials("franka", "franka")
    desk = V1Desk(transport, credentials) if dialect == "v1" else WebDesk(transport, credentials)
    token_answers = [desk.holder, desk.status, lambda: desk.recovery()]
    if dialect == "v1":
        token_answers.append(lambda: desk.take("robohal", 1.0))
    else:
        token_answers += [desk.login, desk.force_timeout, lambda: desk.request("robohal", False)]
    session = DeskSession("https://127.0.0.1", credentials, tls=ssl.create_default_context, tokens=TokenStore(tmp_path))
    session.transport = transport
    for call in [*token_answers, session.open]:
        try:
            call()
        except RobohalError:
            pass
