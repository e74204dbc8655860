"""Bad input and faults against the simulated controller's RWS: wrong credentials change nothing,
oversized and malformed bodies, path traversal in the file service, modules with syntax errors,
and the injected faults (restart, slow controller, dropped websockets, a changed password)."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

AUTH = httpx.DigestAuth("Default User", "robotics")


def raw_request(url: str, target: str, method: str = "GET") -> tuple[int, bytes]:
    """One HTTP request with its target exactly as written (clients normalise ``..`` away); no
    credentials: a traversal must be refused before anyone logs in as well as after."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(f"{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data


def session_for(url: str, **kwargs) -> httpx.Client:
    return httpx.Client(base_url=url, auth=kwargs.pop("auth", AUTH), timeout=10.0, **kwargs)


def test_wrong_credentials_are_401_and_change_nothing(rws_cell):
    cell = rws_cell(6)
    before = cell.state()
    with session_for(cell.url, auth=httpx.DigestAuth("Default User", "wrong")) as wrong:
        for method, path, form in (("POST", "/rw/panel/ctrlstate?action=setctrlstate", "ctrl-state=motoron"),
                                   ("POST", "/rw/iosystem/signals/Local/DRV_1/DO1?action=set", "lvalue=1"),
                                   ("POST", "/rw/mastership?action=request", "")):
            answer = wrong.request(method, path, content=form,
                                   headers={"Content-Type": "application/x-www-form-urlencoded"})
            assert answer.status_code == 401
            assert answer.headers["www-authenticate"].startswith('Digest realm="validusers@robapi.abb"')
    with session_for(cell.url, auth=httpx.BasicAuth("Default User", "robotics")) as basic:
        assert basic.get("/rw/panel/ctrlstate").status_code == 401  # RWS 1.0: Digest only
    after = cell.state()
    for key in ("ctrlstate", "signals", "masters", "execution"):
        assert after[key] == before[key]


@pytest.mark.parametrize("target", [
    "/fileservice/$HOME/../../../../etc/passwd",
    "/fileservice/$HOME/..%2F..%2Fetc%2Fpasswd",
    "/fileservice/$HOME/%2e%2e/%2e%2e/etc/passwd",
    "/fileservice/$HOME/a/..%5C..%5Cx",
    "/fileservice/../../etc/passwd",
    "/fileservice//etc/passwd",
])
def test_path_traversal_in_the_file_service_is_refused(rws_cell, target):
    cell = rws_cell(6)
    status, data = raw_request(cell.url, target)
    assert status in (400, 401, 404)
    assert b"root:" not in data
    with session_for(cell.url) as session:
        session.get("/rw/panel/opmode")  # a session, so the refusal is the path's, not the login's
        answer = session.send(session.build_request("GET", cell.url + target))
        assert answer.status_code in (400, 404) and b"root:" not in answer.content
        put = session.send(session.build_request("PUT", cell.url + target, content=b"x"))
        assert put.status_code in (400, 404)


def test_oversized_and_malformed_bodies(rws_cell):
    cell = rws_cell(6)
    with session_for(cell.url) as session:
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        big = session.post("/rw/rapid/execution?action=start", content=b"regain=" + b"x" * (2 * 1024 * 1024), headers=form)
        assert big.status_code == 413
        assert session.post("/rw/panel/ctrlstate?action=setctrlstate", content=b"\xff\xfe=\x00", headers=form).status_code == 400
        assert session.post("/rw/panel/ctrlstate?action=setctrlstate", content=b'{"ctrl-state": "motoron"}',
                            headers={"Content-Type": "application/json"}).status_code == 415
        assert session.post("/rw/panel/ctrlstate?action=setctrlstate", content=b"ctrl-state=warp",
                            headers=form).status_code == 400
        assert session.post("/rw/rapid/execution?action=start", content=b"regain=continue",
                            headers=form).status_code == 400  # the start form's other fields are required
        huge_file = session.put("/fileservice/$HOME/big.mod", content=b"!" * (5 * 1024 * 1024))
        assert huge_file.status_code == 413
        assert session.get("/rw/panel/opmode").status_code == 200
    assert cell.state()["errors_500"] == 0


def test_a_module_with_a_syntax_error_loads_with_the_error_reported(rws_cell, rws_template):
    cell = rws_cell(6)
    with session_for(cell.url) as session:
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        assert session.put("/fileservice/$HOME/Broken.mod", content=rws_template(broken=True)).status_code == 201
        assert session.post("/rw/mastership?action=request").status_code == 204
        loaded = session.post("/rw/rapid/tasks/T_ROB1?action=loadmod&json=1", content="modulepath=$HOME/Broken.mod",
                              headers=form)
        assert loaded.status_code == 200
        status = loaded.json()["_embedded"]["status"]
        assert status["code"] == 299008 and "ENDIF" in status["msg"]  # SYS_CTRL_S_RAPID_SYNTAX_ERROR
        session.post("/rw/panel/ctrlstate?action=setctrlstate", content="ctrl-state=motoron", headers=form)
        refused = session.post("/rw/rapid/execution?action=resetpp&json=1")
        assert refused.status_code == 400
        assert refused.json()["_embedded"]["status"]["code"] == -1073442803  # SYS_CTRL_E_RAPID_SYNTAX_ERROR
        log = session.get("/rw/elog/0?json=1").json()["_embedded"]["_state"]
        assert any(entry["title"] == "RAPID syntax error" and "ENDIF" in entry["desc"] for entry in log)
        # unloading it and loading the good one makes the task runnable again
        session.post("/rw/rapid/tasks/T_ROB1?action=unloadmod", content="module=RobohalEgm", headers=form)
        assert session.post("/rw/rapid/tasks/T_ROB1?action=loadmod&json=1", content="modulepath=$HOME/Nope.mod",
                            headers=form).status_code == 404
        session.put("/fileservice/$HOME/Good.mod", content=rws_template())
        assert session.post("/rw/rapid/tasks/T_ROB1?action=loadmod", content="modulepath=$HOME/Good.mod",
                            headers=form).status_code == 204
        assert session.post("/rw/rapid/execution?action=resetpp").status_code == 204


def _until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within the deadline"
        time.sleep(0.02)


def test_injected_faults_restart_slow_password_and_dropped_websockets(rws_cell):
    cell = rws_cell(6)
    with session_for(cell.url) as session:
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        session.post("/rw/panel/ctrlstate?action=setctrlstate", content="ctrl-state=motoron", headers=form)
        subscribed = session.post("/subscription", content="resources=1&1=/rw/panel/ctrlstate&1-p=1", headers=form)
        assert subscribed.status_code == 201 and "/poll/" in subscribed.headers["location"]

        cell.process.send("RWS RESTART 1")
        _until(lambda: session.get("/rw/panel/ctrlstate").status_code == 503)
        _until(lambda: session.get("/rw/panel/ctrlstate").status_code != 503)
        # a warm start: the old session is gone (a new login happens), motors off again
        assert "motoroff" in session.get("/rw/panel/ctrlstate").text

        cell.process.send("RWS SLOW 0.3")
        with pytest.raises(httpx.TimeoutException):
            _until_raises(lambda: session.get("/rw/panel/opmode", timeout=0.1))
        cell.process.send("RWS SLOW 0")
        _until(lambda: _answers(session))

        cell.process.send("RWS PASSWORD changed")
        with session_for(cell.url) as fresh:
            _until(lambda: fresh.get("/rw/panel/opmode").status_code == 401)
        with session_for(cell.url, auth=httpx.DigestAuth("Default User", "changed")) as changed:
            assert changed.get("/rw/panel/opmode").status_code == 200
    cell.process.send("RWS DROP_WEBSOCKETS")
    assert cell.state()["errors_500"] == 0


def _until_raises(call, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        call()  # raises once the controller is slow
    raise AssertionError("the controller never got slow")


def _answers(session: httpx.Client) -> bool:
    try:
        return session.get("/rw/panel/opmode", timeout=0.2).status_code == 200
    except httpx.TimeoutException:
        return False


def test_dropped_websockets_end_without_a_close_frame(rws_cell):
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    cell = rws_cell(6)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    with session_for(cell.url) as session:
        subscribed = session.post("/subscription", content="resources=1&1=/rw/panel/ctrlstate&1-p=1", headers=form)
        assert subscribed.status_code == 201
        cookies = "; ".join(f"{name}={value}" for name, value in session.cookies.items())
        with connect(subscribed.headers["location"], subprotocols=["robapi2_subscription"], proxy=None,
                     additional_headers={"Cookie": cookies}, ping_interval=None) as websocket:
            _until(lambda: cell.state()["websockets"] == 1)
            session.post("/rw/panel/ctrlstate?action=setctrlstate", content="ctrl-state=motoron", headers=form)
            assert '<span class="ctrlstate">motoron</span>' in websocket.recv(timeout=10)
            cell.process.send("RWS DROP_WEBSOCKETS")
            with pytest.raises(ConnectionClosed) as closed:
                websocket.recv(timeout=10)
            assert closed.value.rcvd is None  # no close frame came: a broken link, not a goodbye
        _until(lambda: cell.state()["websockets"] == 0)
        # the subscription itself stays: a client may open its websocket again
        with connect(subscribed.headers["location"], subprotocols=["robapi2_subscription"], proxy=None,
                     additional_headers={"Cookie": cookies}, ping_interval=None):
            _until(lambda: cell.state()["websockets"] == 1)
