"""Our simulated controller with a sensor-side peer nobody here wrote: abb-robot-client's EGM client."""

from __future__ import annotations

import time

import numpy as np
import pytest

egm_client = pytest.importorskip("abb_robot_client.egm", reason="pip install -e './plugins/abb[test]'")


@pytest.fixture
def client_on(egm_sim):
    made = []

    def start(*args: str):
        sim = egm_sim(*args)
        client = egm_client.EGM(port=sim.sensor_port)
        made.append(client)
        return sim, client

    yield start
    for client in made:
        client.socket.close()


def test_peer_receives_every_state_at_the_robots_rate(client_on) -> None:
    _sim, client = client_on("--comm-timeout", "0")
    states = []
    deadline = time.monotonic() + 20.0
    while len(states) < 250 and time.monotonic() < deadline:
        ok, state = client.receive_from_robot(timeout=1.0)
        if ok:
            states.append(state)
    assert len(states) == 250
    seqnos = [s.robot_message.header.seqno for s in states]
    # the peer reads one datagram per call, so it sees every message the robot sent, in order
    assert seqnos == list(range(seqnos[0], seqnos[0] + 250))
    tm = np.array([s.robot_message.header.tm for s in states])
    rate = 1000.0 * (len(tm) - 1) / (tm[-1] - tm[0])  # on the robot's own clock
    assert rate > 200.0
    first = states[0]
    assert first.motors_on and first.rapid_running
    assert first.joint_angles.shape == (6,) and first.cartesian is not None
    assert first.robot_message.mciConvergenceMet


def test_peer_joint_targets_move_the_simulated_robot(client_on) -> None:
    sim, client = client_on("--comm-timeout", "0.5")
    ok, state = False, None
    while not ok:
        ok, state = client.receive_from_robot(timeout=2.0)
    target = state.joint_angles + np.array([10.0, -5.0, 5.0, 0.0, 15.0, 30.0])  # degrees: the peer's unit
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        ok, state = client.receive_from_robot(timeout=1.0)
        if ok:
            assert client.send_to_robot(target)
    assert np.allclose(state.joint_angles, target, atol=0.05)
    assert np.allclose(state.joint_angles_planned, target, atol=1e-9)
    counters = sim.stats()["counters"]
    assert counters["targets_applied"] > 200 and counters.get("comm_timeouts", 0) == 0
