"""The plugin's registration: the backend record, the sim URIs, the CLI command, fault options."""

from __future__ import annotations

import numpy as np
import pytest
import robohal
from click.testing import CliRunner
from robohal.motion import PointToPoint
from robohal.uri import parse_uri
from robohal_franka.backends import InProcessStubs, backend_specs, simulator_args, start_simulator


def test_backend_record():
    (spec,) = backend_specs()
    assert spec.scheme == "franka"
    assert spec.hil_targets == ("franka://sim?model=franka.fr3", "franka://sim?model=franka.fr3&impl=stubs")
    assert spec.simulator is not None and spec.simulator.default_model == "franka.fr3"
    assert "franka" in {s.scheme for s in robohal.backends()}
    result = CliRunner().invoke(spec.simulator.command, ["--help"])
    assert result.exit_code == 0 and "--stall-after" in result.output and "--loss" in result.output


def test_sim_uris():
    stub = start_simulator(parse_uri("franka://sim?model=franka.fr3&impl=stubs"))
    assert isinstance(stub, InProcessStubs) and stub.uri.params["impl"] == "stubs"
    args = simulator_args(parse_uri("franka://sim?model=franka.panda&sim_loss=0.1&sim_stall_after=2&sim_max_missed=5"), "127.0.0.9")
    assert args == ["--address", "127.0.0.9", "--model", "franka.panda", "--loss", "0.1", "--stall-after", "2.0",
                    "--max-missed", "5"]
    with pytest.raises(robohal.RobohalError):
        simulator_args(parse_uri("franka://sim?model=abb.irb1410"), "127.0.0.9")


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
    """The documented `robohal sim franka ... --no-realtime --seed N` runs and exits at stdin's end."""
    import subprocess
    import sys
    from pathlib import Path

    cli = Path(sys.executable).with_name("robohal")
    out = subprocess.run([str(cli), "sim", "franka", "--address", "127.0.0.9", "--no-realtime", "--seed", "3"],
                         input="", capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("READY franka 127.0.0.9 ")
