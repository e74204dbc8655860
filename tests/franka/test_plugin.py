"""The plugin's registration: the backend record, the sim URIs, the simulator program, fault options."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import robohal
from robohal.motion import PointToPoint
from robohal.plugins.registry import default_registry
from robohal.sim.process import simulator_options
from robohal.uri import parse_uri
from robohal_franka.simulation import InProcessStubs, simulator_args, start_simulator

ROBOHAL = Path(sys.executable).with_name("robohal")


def test_backend_record():
    spec = default_registry().backend_spec("franka")
    assert spec.plugin == "franka"
    assert spec.hil_targets == ("franka://sim?model=franka.fr3", "franka://sim?model=franka.fr3&sim_hold=measured",
                                "franka://sim?model=franka.fr3&impl=stubs")
    assert spec.simulator is not None and spec.simulator.default_model == "franka.fr3"
    assert spec.simulator.program == "robohal_franka.simulator"
    assert spec.factory.text == "robohal_franka.backend:FrankaBackend"
    assert spec.simulator.start.text == "robohal_franka.simulation:start_simulator"
    result = subprocess.run([str(ROBOHAL), "sim", "franka", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "--stall-after" in result.stdout and "--loss" in result.stdout


def test_sim_uris():
    stub = start_simulator(parse_uri("franka://sim?model=franka.fr3&impl=stubs"))
    assert isinstance(stub, InProcessStubs) and stub.uri.params["impl"] == "stubs"
    uri = parse_uri("franka://sim?model=franka.panda&sim_loss=0.1&sim_stall_after=2&sim_max_missed=5")
    assert simulator_args(uri, "127.0.0.9") == ["--address", "127.0.0.9", "--model", "franka.panda"]
    assert simulator_options(uri) == ["--loss", "0.1", "--stall-after", "2", "--max-missed", "5"]
    with pytest.raises(robohal.RobohalError):
        simulator_args(parse_uri("franka://sim?model=abb.irb1410"), "127.0.0.9")
    with pytest.raises(robohal.UriError, match="sim_loss is a probability below 1"):
        start_simulator(parse_uri("franka://sim?model=franka.fr3&sim_loss=1"))
    with pytest.raises(robohal.UriError, match="sim_max_missed"):
        start_simulator(parse_uri("franka://sim?model=franka.fr3&impl=stubs&sim_max_missed=0"))


def test_a_started_simulator_gets_the_uri_s_options_and_announces_where_it_is():
    simulator = start_simulator(parse_uri("franka://sim?model=franka.panda&realtime=ignore&sim_seed=3&sim_ideal=1"))
    try:
        host = simulator.uri.host
        assert simulator.argv[1:] == ["-m", "robohal_franka.simulator", "--address", host, "--model", "franka.panda",
                                      "--seed", "3", "--ideal", "1"]
        assert simulator.first_line == f"READY franka://{host}?model=franka.panda"
        # no sim_*; the simulator serves a Franka Hand, so its robots carry one
        assert simulator.uri == parse_uri(f"franka://{host}?model=franka.panda&realtime=ignore&gripper=1")
        assert simulator.stats()["robot_seed"] == 3
    finally:
        simulator.stop()


def test_lossy_link_is_tolerated_like_the_robot():
    """2 % of the state datagrams lost: libfranka skips to the next state; no reflex."""
    pytest.importorskip("pylibfranka")
    with robohal.connect("franka://sim?model=franka.fr3&sim_loss=0.02") as robot:
        target = robot.backend.commanded + np.radians([6, 0, 0, 6, 0, 0, 0])
        result = robot.backend.run(PointToPoint(target, speed=0.4))
        assert result.completed
        assert np.allclose(robot.state.info["q_d"], target, atol=1e-6)  # held there (float32 on the wire)
        assert np.abs(robot.state.q - target).max() < 1e-3  # measured: off by the arm's tracking
        print(f"lossy link: {robot.backend.figures}")


def test_robohal_sim_franka_takes_the_simulators_own_flags() -> None:
    """The documented `robohal sim franka ... --no-realtime 1 --seed N` runs and exits at stdin's end
    (a bare boolean flag still works)."""
    for no_realtime in (["--no-realtime", "1"], ["--no-realtime"]):
        out = subprocess.run([str(ROBOHAL), "sim", "franka", "--address", "127.0.0.9", *no_realtime, "--seed", "3"],
                             input="", capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("READY franka://127.0.0.9?model=franka.fr3\n")
