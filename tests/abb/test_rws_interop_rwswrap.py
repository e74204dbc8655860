"""rwswrap (PyPI), a RobotWare 7 client written against an OmniCore by someone else, drives the
simulated RobotWare 7 controller: motors, program pointer, start (EGM flows) and stop (EGM ends),
RAPID data and modules. It posts its commands with requests' default ``Accept: */*`` and asks for
HAL JSON on reads, as it did on the real controller."""

from __future__ import annotations

import contextlib
import io

import httpx
import pytest

rwswrap = pytest.importorskip("rwswrap.RWS", reason="rwswrap is in the abb plugin's test extra")

USER, PASSWORD = "Default User", "robotics"


def quietly(call, *args, **kwargs):
    """rwswrap prints what it does; keep the test's output for the test."""
    with contextlib.redirect_stdout(io.StringIO()):
        return call(*args, **kwargs)


# its requests skip certificate checks (verify=False, its default); the certificate is pinned elsewhere
@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_rwswrap_runs_the_template_and_egm_follows_rapid(rws_cell, rws_template):
    cell = rws_cell(7)
    # rwswrap has no upload: the file goes up as any RWS 2.0 client sends it
    with httpx.Client(base_url=cell.url, auth=(USER, PASSWORD), verify=False, timeout=10) as http:
        put = http.put("/fileservice/$HOME/RobohalEgm.modx", content=rws_template(),
                       headers={"Content-Type": "text/plain;v=2.0", "Accept": "application/xhtml+xml;v=2.0"})
        assert put.status_code in (200, 201)

    robot = rwswrap.RWS(cell.url, username=USER, password=PASSWORD, module="RobohalEgm")
    try:
        # its load_module unloads first (a 404 here, which it only prints), then loads with mastership
        assert quietly(robot.load_module, "RobohalEgm").status_code == 204
        assert "RobohalEgm" in robot.get_modules()
        assert quietly(robot.toggle_motors, 1).status_code == 204
        assert cell.datagrams(0.3) == 0  # motors on, RAPID stopped: no EGM yet
        assert quietly(robot.start_RAPID).status_code == 204  # resetpp with mastership, start implicitly
        assert robot.get_exec_state() == "running"
        cell.wait_stream(flowing=True)

        assert robot.get_rapid_variable("COMM_TIMEOUT", module="RobohalEgm") == "1"
        assert quietly(robot.set_rapid_variable, "reg1", 7, module="user").status_code == 204
        assert robot.get_rapid_variable("reg1", module="user") == "7"

        assert robot.stop_RAPID().status_code == 204
        assert robot.get_exec_state() == "stopped"
        cell.wait_stream(flowing=False)
        assert quietly(robot.toggle_motors, 0).status_code == 204
    finally:
        robot.session.close()
    state = cell.state()
    assert state["ctrlstate"] == "motoroff" and state["errors_500"] == 0
    assert state["masters"] == {}  # it released every mastership it took
