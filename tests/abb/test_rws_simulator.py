"""The simulated controller with RWS as one controller: ``abb-egm://sim?...&sim_rws=6`` starts it
with RWS, its ready URI names the endpoint, robohal's EGM backend connects once RAPID runs the
template, the I/O robohal sets over EGM is what RWS reads, and a RAPID stop ends the stream."""

from __future__ import annotations

import time

import httpx
import pytest
import robohal
from robohal import ConnectionLost, HardwareFault
from robohal.uri import parse_uri
from robohal_abb.simulation import start_simulator

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def bring_up(session: httpx.Client, module: bytes) -> None:
    """What a cell's bring-up does over RWS 1.0: upload, load, motors on, PP to main, start."""
    assert session.put("/fileservice/$HOME/RobohalEgm.mod", content=module).status_code in (200, 201)
    assert session.post("/rw/mastership?action=request").status_code == 204
    assert session.post("/rw/rapid/tasks/T_ROB1?action=loadmod", content="modulepath=$HOME/RobohalEgm.mod&replace=true",
                        headers=FORM).status_code == 204
    assert session.post("/rw/mastership?action=release").status_code == 204
    assert session.post("/rw/panel/ctrlstate?action=setctrlstate", content="ctrl-state=motoron",
                        headers=FORM).status_code == 204
    assert session.post("/rw/rapid/execution?action=resetpp").status_code == 204
    start = "regain=continue&execmode=continue&cycle=forever&condition=none&stopatbp=disabled&alltaskbytsp=false"
    assert session.post("/rw/rapid/execution?action=start", content=start, headers=FORM).status_code == 204


def test_sim_uri_starts_rws_and_robohal_drives_the_cell_it_brought_up(rws_template, monkeypatch):
    # the backend checks the cell over the rws= the URI names, as a user would: with the password
    # from the environment (never the URI)
    monkeypatch.setenv("ROBOHAL_ABB_RWS_PASSWORD", "secret")
    simulator = start_simulator(parse_uri("abb-egm://sim?model=abb.irb1410&sim_rws=6&sim_rws_password=secret"))
    try:
        endpoint = simulator.uri.params["rws"]
        assert endpoint.startswith("http://127.0.0.1:")
        with httpx.Client(base_url=endpoint, auth=httpx.DigestAuth("Default User", "secret"), timeout=10) as session:
            assert "motoroff" in session.get("/rw/panel/ctrlstate").text
            bring_up(session, rws_template())
            with robohal.connect(str(simulator.uri)) as robot:  # the launched URI, rws= and all
                robot.io["vacuum"] = True  # over EGM's RAPID data: the cell's doVacuum
                deadline = time.monotonic() + 10
                while '<span class="lvalue">1</span>' not in session.get("/rw/iosystem/signals/Local/DRV_1/doVacuum").text:
                    assert time.monotonic() < deadline, "the output set over EGM never reached the cell"
                    time.sleep(0.02)
                assert robot.io["vacuum_on"] in (0.0, 1.0)
                assert session.post("/rw/rapid/execution?action=stop", content="stopmode=stop",
                                    headers=FORM).status_code == 204
                with pytest.raises((HardwareFault, ConnectionLost)):
                    deadline = time.monotonic() + 10
                    while time.monotonic() < deadline:
                        robot.move_joints(robot.q, speed=0.1)
    finally:
        simulator.stop()


def test_without_rws_the_controller_streams_at_once_as_before(egm_sim, raw_sensor):
    sim = egm_sim("--comm-timeout", "0")
    assert "rws" not in sim.uri.params
    sensor = raw_sensor(sim.sensor_port)
    assert sensor.receive().motor_state == "on"  # streaming from power-up, as always without --rws
