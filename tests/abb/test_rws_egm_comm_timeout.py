"""A sensor that never answers, with RWS: the RAPID side raises ERR_UDPUC_COMM after \\CommTimeout
(event 41822). The template's handler (TRYNEXT) starts a new EGM session and RAPID runs on; a
module without a handler stops RAPID (10125) and the stream ends for good."""

from __future__ import annotations

import time

import httpx

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
START = "regain=continue&execmode=continue&cycle=forever&condition=none&stopatbp=disabled&alltaskbytsp=false"
NO_HANDLER = b"""MODULE Bare
    VAR egmident egm_id;
    PROC main()
        EGMGetId egm_id;
        EGMRunJoint egm_id, EGM_STOP_HOLD \\J1 \\J2 \\J3 \\J4 \\J5 \\J6 \\CondTime:=86400;
    ENDPROC
ENDMODULE
"""


def run(session: httpx.Client, module: bytes, name: str) -> None:
    """Upload, load and start a module over RWS 1.0."""
    assert session.put(f"/fileservice/$HOME/{name}.mod", content=module).status_code in (200, 201)
    assert session.post("/rw/mastership?action=request").status_code == 204
    assert session.post("/rw/rapid/tasks/T_ROB1?action=loadmod", content=f"modulepath=$HOME/{name}.mod",
                        headers=FORM).status_code == 204
    assert session.post("/rw/mastership?action=release").status_code == 204
    assert session.post("/rw/panel/ctrlstate?action=setctrlstate", content="ctrl-state=motoron",
                        headers=FORM).status_code == 204
    assert session.post("/rw/rapid/execution?action=resetpp").status_code == 204
    assert session.post("/rw/rapid/execution?action=start", content=START, headers=FORM).status_code == 204


def codes(session: httpx.Client) -> list[int]:
    return [int(entry["code"]) for entry in session.get("/rw/elog/0?json=1").json()["_embedded"]["_state"]]


def execution(session: httpx.Client) -> str:
    return session.get("/rw/rapid/execution?json=1").json()["_embedded"]["_state"][0]["ctrlexecstate"]


def until(condition, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.05)


def new_session(cell, timeout: float = 10.0) -> None:
    """Until a robot message's seqno falls back to 0 after a higher one: a new EGM session."""
    from robohal_abb import egm_pb2

    deadline, highest = time.monotonic() + timeout, -1
    while (left := deadline - time.monotonic()) > 0:
        cell.sensor.settimeout(left)
        try:
            message = egm_pb2.EgmRobot.FromString(cell.sensor.recv(65536))
        except TimeoutError:
            break
        if message.header.seqno < highest:
            return
        highest = max(highest, message.header.seqno)
    raise AssertionError(f"no new EGM session within {timeout} s")


def test_the_templates_handler_starts_a_new_session_after_a_comm_timeout(rws_cell, rws_template):
    cell = rws_cell(6, "--comm-timeout", "0.3")  # nothing answers the stream
    with httpx.Client(base_url=cell.url, auth=httpx.DigestAuth("Default User", "robotics"), timeout=10) as session:
        run(session, rws_template(), "RobohalEgm")
        new_session(cell)  # the first session timed out, the handler's TRYNEXT started another
        assert 41822 in codes(session)
        assert execution(session) == "running"  # RAPID goes on
        assert 10125 not in codes(session)


def test_without_a_handler_rapid_stops_and_the_stream_ends(rws_cell):
    cell = rws_cell(6, "--comm-timeout", "0.3")
    with httpx.Client(base_url=cell.url, auth=httpx.DigestAuth("Default User", "robotics"), timeout=10) as session:
        run(session, NO_HANDLER, "Bare")
        cell.wait_stream(flowing=True)
        until(lambda: execution(session) == "stopped", "RAPID stopping on ERR_UDPUC_COMM")
        logged = codes(session)
        assert logged.index(41822) < logged.index(10125)
        cell.wait_stream(flowing=False)
