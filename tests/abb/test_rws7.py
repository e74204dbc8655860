"""The simulated RobotWare 7 controller (RWS 2.0) driven by requests written here from ABB's RWS 2.0
reference (no robohal client): HTTPS with the certificate it made, Basic authentication, the
``;v=2.0`` media types, the verbs as path segments, edit mastership, and the EGM stream with RAPID."""

from __future__ import annotations

import hashlib
import time

import httpx
import pytest

HAL = "application/hal+json;v=2.0"
FORM = "application/x-www-form-urlencoded;v=2.0"
AUTH = ("Default User", "robotics")


def client(url: str, auth=AUTH) -> httpx.Client:
    # the certificate is the controller's own, made at start: pinned by its fingerprint below, not by a CA
    return httpx.Client(base_url=url, auth=auth, verify=False, timeout=10.0,
                        headers={"Accept": HAL, "Content-Type": FORM})


def post(session: httpx.Client, path: str, **form: str) -> httpx.Response:
    return session.post(path, content="&".join(f"{k}={v}" for k, v in form.items()))


def test_https_with_the_certificate_made_at_start(rws_cell):
    cell = rws_cell(7)
    assert cell.url.startswith("https://127.0.0.1:")
    with client(cell.url) as session:
        response = session.get("/rw/panel/ctrl-state")
        peer = response.extensions["network_stream"].get_extra_info("ssl_object").getpeercert(True)
    assert hashlib.sha256(peer).hexdigest() == cell.process.uri.params["rws_fingerprint"]
    assert response.status_code == 200 and response.headers["content-type"] == HAL
    assert response.json()["state"][0] == {"_type": "pnl-ctrlstate", "_title": "ctrl-state", "ctrlstate": "motoroff"}
    assert "-http-session-" in response.cookies and "ABBCX" in response.cookies


def test_media_types_without_v2_are_refused_and_rws1_spellings_are_not_served(rws_cell):
    cell = rws_cell(7)
    with client(cell.url) as session:
        assert session.get("/rw/panel/ctrl-state", headers={"Accept": "application/json"}).status_code == 406
        assert session.get("/rw/panel/ctrl-state", headers={"Accept": "application/hal+json"}).status_code == 406
        refused = session.post("/rw/panel/ctrl-state", content="ctrl-state=motoron",
                               headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert refused.status_code == 415
        for method, path in (("POST", "/rw/panel/ctrlstate?action=setctrlstate"),
                             ("POST", "/rw/rapid/execution?action=start"),
                             ("GET", "/rw/rapid/symbol/data/RAPID/T_ROB1/reg1"),
                             ("POST", "/rw/mastership?action=request")):
            answer = session.request(method, path, content="ctrl-state=motoron")
            assert answer.status_code == 404, path
            assert answer.json()["status"]["code"] == -1073445866  # SYS_CTRL_E_UNRESOLVED_URL
        assert session.get("/rw/panel/ctrl-state").json()["state"][0]["ctrlstate"] == "motoroff"
        # XHTML is the other RWS 2.0 media type
        page = session.get("/rw/panel/ctrl-state", headers={"Accept": "application/xhtml+xml;v=2.0"})
        assert page.headers["content-type"] == "application/xhtml+xml;v=2.0"
        assert '<span class="ctrlstate">motoroff</span>' in page.text


def test_basic_authentication_only(rws_cell):
    cell = rws_cell(7)
    with client(cell.url, auth=("Default User", "wrong")) as session:
        refused = session.get("/rw/panel/ctrl-state")
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == 'Basic realm="validusers@robapi.abb"'
    with client(cell.url, auth=httpx.DigestAuth(*AUTH)) as session:
        assert session.get("/rw/panel/ctrl-state").status_code == 401  # RWS 2.0 refuses Digest


def test_a_second_sessions_edit_mastership_is_refused(rws_cell):
    cell = rws_cell(7)
    with client(cell.url) as first, client(cell.url) as second:
        assert post(first, "/rw/mastership/edit/request").status_code == 204
        refused = post(second, "/rw/mastership/edit/request")
        assert refused.status_code == 403 and refused.json()["status"]["code"] < 0
        # edits need it: refused to the second session, even implicitly
        assert post(second, "/rw/rapid/execution/resetpp?mastership=implicit").status_code == 403
        assert post(first, "/rw/mastership/edit/release").status_code == 204
        assert post(second, "/rw/mastership/edit/request").status_code == 204


def test_bring_up_run_egm_and_stop_over_rws_2(rws_cell, rws_template):
    cell = rws_cell(7)
    with client(cell.url) as session:
        upload = session.put("/fileservice/$HOME/RobohalEgm.mod", content=rws_template(),
                             headers={"Content-Type": "text/plain;v=2.0"})
        assert upload.status_code in (200, 201)
        # without edit mastership RWS 2.0 refuses loadmod and resetpp
        assert post(session, "/rw/rapid/tasks/T_ROB1/loadmod", modulepath="$HOME/RobohalEgm.mod").status_code == 403
        assert post(session, "/rw/mastership/edit/request").status_code == 204
        assert post(session, "/rw/rapid/tasks/T_ROB1/loadmod", modulepath="$HOME/RobohalEgm.mod",
                    replace="true").status_code == 204
        modules = session.get("/rw/rapid/tasks/T_ROB1/modules").json()["state"]
        assert {"_type": "rap-module-info-li", "_title": "T_ROB1/RobohalEgm", "name": "RobohalEgm",
                "type": "ProgMod"} in modules
        assert post(session, "/rw/panel/ctrl-state", **{"ctrl-state": "motoron"}).status_code == 204
        assert post(session, "/rw/rapid/execution/resetpp").status_code == 204
        assert cell.datagrams(0.3) == 0  # motors on, PP at main: still no EGM before RAPID runs
        start = post(session, "/rw/rapid/execution/start", regain="continue", execmode="continue", cycle="forever",
                     condition="none", stopatbp="disabled", alltaskbytsp="false")
        assert start.status_code == 204
        assert session.get("/rw/rapid/execution").json()["state"][0]["ctrlexecstate"] == "running"
        cell.wait_stream(flowing=True)

        assert post(session, "/rw/iosystem/signals/Local/DRV_1/doVacuum/set-value", lvalue="1").status_code == 204
        signal = session.get("/rw/iosystem/signals/Local/DRV_1/doVacuum").json()["state"][0]
        assert signal["lvalue"] == "1" and signal["type"] == "DO"
        datum = session.get("/rw/rapid/symbol/RAPID/T_ROB1/RobohalEgm/COMM_TIMEOUT/data").json()["state"][0]
        assert datum["value"] == "1"
        assert post(session, "/rw/rapid/symbol/RAPID/T_ROB1/user/reg1/data", value="42").status_code == 204
        assert session.get("/rw/rapid/symbol/RAPID/T_ROB1/user/reg1/data").json()["state"][0]["value"] == "42"

        assert post(session, "/rw/panel/ctrl-state", **{"ctrl-state": "motoroff"}).status_code == 204
        cell.wait_stream(flowing=False)  # motors off: RAPID stops and the stream ends
        assert session.get("/rw/rapid/execution").json()["state"][0]["ctrlexecstate"] == "stopped"

        # the event log, paged the HAL way
        page = session.get("/rw/elog/0?lang=en&start=0&limit=3").json()
        assert len(page["_embedded"]["resources"]) == 3 and "next" in page["_links"]
        everything = session.get("/rw/elog/0?lang=en&limit=1000").json()["_embedded"]["resources"]
        seqnums = [int(entry["_title"].rsplit("/", 1)[1]) for entry in everything]
        assert seqnums == sorted(seqnums)
        codes = [int(entry["code"]) for entry in everything]
        assert codes.index(10011) < codes.index(10002) < codes.index(10010, codes.index(10011))


@pytest.mark.parametrize("path, code", [
    ("/rw/iosystem/signals/Local/DRV_1/noSuchSignal", -1073445879),
    ("/rw/rapid/tasks/T_NOPE/modules", -1073445879),
    ("/rw/rapid/symbol/RAPID/T_ROB1/NoSuchModule/reg1/data", -1073442816),
    ("/rw/rapid/symbol/RAPID/T_ROB1/user/noSuchDatum/data", -1073442816),
])
def test_unknown_signals_tasks_modules_and_data_are_404_with_the_controllers_code(rws_cell, path, code):
    cell = rws_cell(7)
    with client(cell.url) as session:
        answer = session.get(path)
    assert answer.status_code == 404
    assert answer.json()["status"]["code"] == code


def test_a_controller_that_stops_answering_mid_call(rws_cell):
    cell = rws_cell(7)
    with client(cell.url) as session:
        assert session.get("/rw/panel/opmode").status_code == 200
        cell.process.send("RWS STALL")
        deadline = time.monotonic() + 10
        while True:  # the control line takes effect on the server's loop: wait until a call hangs
            try:
                session.get("/rw/panel/opmode", timeout=0.5)
            except httpx.TimeoutException:
                break
            assert time.monotonic() < deadline, "the controller kept answering"
        cell.process.send("RWS RESUME")
        assert session.get("/rw/panel/opmode", timeout=10).status_code == 200


def test_the_event_log_pages_through_its_next_links(rws_cell):
    import html
    from urllib.parse import urljoin

    cell = rws_cell(7)
    with client(cell.url) as session:
        for state in ("motoron", "motoroff", "motoron", "motoroff"):  # a few more entries
            assert post(session, "/rw/panel/ctrl-state", **{"ctrl-state": state}).status_code == 204
        everything = [entry["_title"] for entry in session.get("/rw/elog/0?lang=en&limit=1000").json()["_embedded"]["resources"]]
        paged, url, pages = [], "/rw/elog/0?lang=en&start=0&limit=2", 0
        while url is not None and pages < 50:
            page = session.get(url).json()
            paged += [entry["_title"] for entry in page["_embedded"]["resources"]]
            following = page["_links"].get("next")
            # the controller escapes "&" in its HAL links; a link is relative to the base
            url = urljoin(page["_links"]["base"]["href"], html.unescape(following["href"])) if following else None
            pages += 1
    assert len(everything) >= 6 and paged == everything
