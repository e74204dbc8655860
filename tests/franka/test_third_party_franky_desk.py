"""franky-control's Desk clients (its own, a third party's reading of Desk) drive the simulated
Desk: ``Desk`` the API v1, ``DeskWebSession`` the older web session. Each takes control, unlocks
the joints and activates FCI on a robot that started locked, hears a Pilot button pressed on the
simulator's stdin, then franky moves the arm through FCI, and the Desk locks it again."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

PASSWORD = "franky-Desk-1"
JOINT_TOLERANCE = 5e-3  # rad: as in test_third_party_franky.py


@pytest.fixture(scope="module")
def franky(third_party):
    reason = third_party.missing_reason("franky.desk")
    if reason:
        pytest.skip(reason)
    return third_party


@pytest.mark.parametrize("dialect", ["v1", "web"])
def test_franky_desk_brings_the_robot_up_and_franky_moves_it(franky, start_simulator, dialect):
    simulator = start_simulator("--desk", dialect, "--locked", "1", "--desk-password", PASSWORD)
    desk_host = simulator.uri.params["desk"].removeprefix("https://")  # franky takes HOST[:PORT]
    client = subprocess.Popen([str(franky.venv_python()), franky.__file__, "desk", dialect, simulator.host, desk_host,
                               PASSWORD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert client.stdout is not None
        first = client.stdout.readline()  # LISTENING: its websocket is open (the read's deadline is the timeout below)
        assert first.strip() == "LISTENING", f"{first}{client.stdout.read()}{client.stderr.read()}"
        simulator.send("PILOT check")
        out, err = client.communicate(timeout=120)
    finally:
        if client.poll() is None:
            client.kill()
            client.communicate()
    result = json.loads(out.strip().splitlines()[-1])
    assert result["error"] is None, f"{result['error']}\n{err}"
    assert result["brakes_before"] == "Locked" and result["has_control"] and result["brakes_unlocked"] == "Unlocked"
    assert result["buttons"] == [["check", True], ["check", False]]
    assert result["robot_mode"] == "RobotMode.Idle"
    assert np.abs(np.array(result["q_end"]) - result["q"]).max() < JOINT_TOLERANCE
    assert result["brakes_after"] == "Locked"
    state = simulator.desk_state()
    assert state["holder"] is None and not state["fci"] and not state["unlocked"]  # franky released control
    assert simulator.stats()["robot_reflexes"] == 0
