"""Over HTTP, both dialects: a module that does not build lists its errors at
``/rw/rapid/tasks/T_ROB1/program/builderror``; RMMP in manual mode (request, poll, the operator's
grant, mastership, cancel); RobotWare 7 serves a request that accepts any media type."""

from __future__ import annotations

import time

import httpx
import pytest

AUTH = ("Default User", "robotics")
HAL = "application/hal+json;v=2.0"
FORM7 = {"Content-Type": "application/x-www-form-urlencoded;v=2.0"}
FORM6 = {"Content-Type": "application/x-www-form-urlencoded"}


def session(cell, version: int) -> httpx.Client:
    """A client of the dialect; RWS 1.0 answers JSON when a request's query has json=1."""
    if version == 6:
        return httpx.Client(base_url=cell.url, auth=httpx.DigestAuth(*AUTH), timeout=10,
                            event_hooks={"request": [_json_please]})
    return httpx.Client(base_url=cell.url, auth=AUTH, verify=False, timeout=10, headers={"Accept": HAL})


def _json_please(request: httpx.Request) -> None:
    request.url = request.url.copy_merge_params({"json": "1"})


def items(answer: httpx.Response, version: int) -> list[dict]:
    body = answer.json()
    if version == 6:
        return body["_embedded"]["_state"]
    return body["_embedded"]["resources"] if "_embedded" in body else body["state"]


@pytest.mark.parametrize("version", [6, 7])
def test_a_module_that_does_not_build_lists_its_errors(rws_cell, rws_template, version):
    cell = rws_cell(version)
    broken = rws_template(broken=True)
    with session(cell, version) as http:
        form = FORM6 if version == 6 else FORM7
        assert http.put("/fileservice/$HOME/RobohalEgm.mod", content=broken,
                        headers={"Content-Type": "text/plain" + (";v=2.0" if version == 7 else "")}).status_code == 201
        if version == 6:
            assert http.post("/rw/mastership?action=request").status_code == 204
            loaded = http.post("/rw/rapid/tasks/T_ROB1?action=loadmod", content="modulepath=$HOME/RobohalEgm.mod",
                               headers=form)
        else:
            loaded = http.post("/rw/rapid/tasks/T_ROB1/loadmod", params={"mastership": "implicit"},
                               content="modulepath=$HOME/RobohalEgm.mod", headers=form)
        assert loaded.status_code == 200  # loaded, with SYS_CTRL_S_RAPID_SYNTAX_ERROR
        errors = items(http.get("/rw/rapid/tasks/T_ROB1/program/builderror"), version)
    assert errors and {error["_type"] for error in errors} == {"rap-builderrs"}
    assert {error["ModuleName"] for error in errors} == {"RobohalEgm"}
    lines = broken.decode().splitlines()
    for error in errors:
        row, column = int(error["row"]), int(error["column"])
        assert lines[row - 1][column - 1:].strip(), "each error points at text in the module"
    assert any("ENDIF" in error["error"] for error in errors)


def test_an_empty_build_error_list_and_an_unknown_task(rws_cell):
    cell = rws_cell(7)
    with session(cell, 7) as http:
        assert items(http.get("/rw/rapid/tasks/T_ROB1/program/builderror"), 7) == []
        unknown = http.get("/rw/rapid/tasks/T_NOPE/program/builderror")
    assert unknown.status_code == 404 and unknown.json()["status"]["code"] == -1073445879


def _until(condition, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, "not within the deadline"
        time.sleep(0.02)
    return found


@pytest.mark.parametrize("version", [6, 7])
def test_rmmp_in_manual_mode(rws_cell, version):
    cell = rws_cell(version, "--opmode", "manr")
    form = FORM6 if version == 6 else FORM7
    request_edit = "/rw/mastership/rapid?action=request" if version == 6 else "/rw/mastership/edit/request"
    cancel = "/users/rmmp?action=cancel" if version == 6 else "/users/rmmp/cancel"

    def poll(http: httpx.Client) -> dict:
        return items(http.get("/users/rmmp/poll"), version)[0]

    with session(cell, version) as http:
        none = poll(http)
        assert none["status"] == "NO SUCH REQUEST" and none["code"] == "-1073445870"  # the RWS manual's example
        assert http.post(request_edit).status_code == 403  # manual mode: mastership needs RMMP
        assert http.post("/users/rmmp", content="privilege=modify", headers=form).status_code == 202
        assert items(http.get("/users/rmmp"), version)[0]["privilege"] == "pending modify"
        assert poll(http)["status"] == "PENDING"
        cell.process.send("RWS RMMP GRANT")  # the operator at the FlexPendant
        _until(lambda: poll(http)["status"] == "GRANTED")
        state = items(http.get("/users/rmmp"), version)[0]
        assert state["privilege"] == "modify" and state["rmmpheldbyme"] == "true"
        assert http.post(request_edit).status_code == 204
        assert http.post(cancel).status_code == 204
        assert poll(http)["status"] == "NO SUCH REQUEST"


def test_rws_2_serves_a_request_that_accepts_any_type(rws_cell):
    cell = rws_cell(7)
    with httpx.Client(base_url=cell.url, auth=AUTH, verify=False, timeout=10) as http:
        for accept in ("*/*", "application/hal+json, */*;q=0.1"):  # any type, as requests sends by default
            answer = http.get("/rw/panel/opmode", headers={"Accept": accept})
            assert answer.status_code == 200, accept
            assert answer.headers["content-type"] == "application/xhtml+xml;v=2.0"
            assert '<span class="opmode">AUTO</span>' in answer.text
        # named types without ;v=2.0 only: refused
        assert http.get("/rw/panel/opmode", headers={"Accept": "text/html, application/hal+json"}).status_code == 406
