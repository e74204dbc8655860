"""The EGM backend with the cell's RWS in its URI (``rws=``), against the simulated controller: a
cell that cannot stream is refused at once with the reason; ``rws_start=1`` brings EGM up at
connect and close() stops it; a stream that ends is explained from the controller's event log."""

from __future__ import annotations

import time

import numpy as np
import pytest
import robohal
from robohal.errors import ConnectFailed, ConnectionLost, HardwareFault, UriError
from robohal_abb.cell import AbbCell

BOTH = pytest.mark.parametrize("version", [6, 7])


def set_up(sim, template: bytes, tmp_path) -> None:
    sim.sensor.close()  # robohal's backend listens there instead of the fixture's counting socket
    module = tmp_path / "RobohalEgm.mod"
    module.write_bytes(template)
    with AbbCell.from_uri(sim.process.uri) as cell:
        cell.setup(module)


def uri(sim, **params: str) -> str:
    return str(sim.process.uri.with_params(**params))


def fail_within(robot, timeout: float = 10.0) -> BaseException:
    """The error a streaming robot meets once its stream ends (HardwareFault or ConnectionLost)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            robot.backend.cycle()
        except (HardwareFault, ConnectionLost) as error:
            return error
    raise AssertionError(f"the stream went on for {timeout} s")


@BOTH
def test_rws_start_brings_egm_up_and_close_stops_it(rws_cell, rws_template, tmp_path, version):
    sim = rws_cell(version)
    set_up(sim, rws_template(), tmp_path)
    with robohal.connect(uri(sim, rws_start="1")) as robot:
        assert robot.state.info["motor_state"] == "on"
        robot.move_joints(robot.q + np.radians([5, 0, 0, 0, 0, 0]), speed=0.5)
        state = sim.state()
        assert (state["ctrlstate"], state["execution"], state["egm_active"]) == ("motoron", "running", True)
    state = sim.state()  # left as found: RAPID stopped, motors off again, no EGM
    assert (state["ctrlstate"], state["execution"], state["egm_active"]) == ("motoroff", "stopped", False)


@BOTH
def test_a_cell_that_cannot_stream_is_refused_at_once_with_the_reason(rws_cell, rws_template, tmp_path, version):
    sim = rws_cell(version)
    sim.sensor.close()
    with pytest.raises(ConnectFailed, match="RobohalEgm is not loaded") as caught:
        robohal.connect(uri(sim, connect_timeout="60"))  # would wait a minute for EGM without RWS
    assert "rws_start=1" in str(caught.value)
    with pytest.raises(ConnectFailed, match="robohal abb setup"):
        robohal.connect(uri(sim, rws_start="1"))
    set_up(sim, rws_template(), tmp_path)
    with pytest.raises(ConnectFailed, match="motors are not on"):
        robohal.connect(uri(sim))
    assert sim.state()["ctrlstate"] == "motoroff"  # checking changed nothing


@BOTH
def test_an_emergency_stop_ends_the_stream_and_the_event_log_says_so(rws_cell, rws_template, tmp_path, version):
    sim = rws_cell(version)
    set_up(sim, rws_template(), tmp_path)
    with robohal.connect(uri(sim, rws_start="1", timeout="0.5")) as robot:
        sim.process.send("RWS ESTOP")
        error = fail_within(robot)
        assert "emergency stop (event 10013" in str(error)


def test_motors_off_at_the_cell_is_explained(rws_cell, rws_template, tmp_path):
    sim = rws_cell(6)
    set_up(sim, rws_template(), tmp_path)
    with robohal.connect(uri(sim, rws_start="1", timeout="0.5")) as robot:
        sim.process.send("MOTORS OFF")
        error = fail_within(robot)
        assert "the controller's event log says: motors off (event 10010" in str(error)


def test_recover_starts_the_cell_again_with_rws_start(rws_cell, rws_template, tmp_path):
    sim = rws_cell(7)
    set_up(sim, rws_template(), tmp_path)
    with robohal.connect(uri(sim, rws_start="1", timeout="0.5")) as robot:
        sim.process.send("MOTORS OFF")
        fail_within(robot)
        robot.recover()  # motors on and RAPID started again over RWS
        assert robot.state.info["motor_state"] == "on" and sim.state()["execution"] == "running"
        robot.move_joints(robot.q + np.radians([0, 0, 0, 0, 0, 5]), speed=0.5)


@pytest.mark.parametrize(("params", "message"), [
    ({"rws": "http://operator:s3cret@127.0.0.1"}, "credentials do not go in an RWS address"),
    ({"rws_start": "1"}, "need rws=http"),
    ({"rws": "ftp://127.0.0.1"}, "is not an RWS address"),
    ({"rws": "http://127.0.0.1", "rws_dialect": "8"}, "rws_dialect is 6"),
])
def test_malformed_rws_parameters_are_refused_before_anything_is_sent(params, message):
    query = "&".join(f"{key}={value}" for key, value in params.items())
    with pytest.raises(UriError, match=message) as caught:
        robohal.connect(f"abb-egm://127.0.0.1:0?model=abb.irb1410&{query}", connect=False)
    assert "s3cret" not in str(caught.value)


LAB_SUITE = """
def test_the_cell_was_brought_up(robot):
    assert robot.state.info["motor_state"] == "on" and robot.state.info["rapid_state"] == "running"
"""


def test_robohal_hil_brings_a_cell_up_before_its_suites_and_leaves_it_stopped(rws_cell, rws_template, tmp_path):
    import subprocess
    import sys

    sim = rws_cell(7)
    set_up(sim, rws_template(), tmp_path)
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "test_cell.py").write_text(LAB_SUITE)
    # the simulated controller started by hand is, on the wire, a cell: robohal hil treats it as one
    # (bringup = true: its backend starts it before the suites and stops RAPID after)
    (tmp_path / "cells.toml").write_text(f'[cells.abb]\nuri = "{sim.process.uri}"\nsuites = ["suite"]\nbringup = true\n')
    done = subprocess.run([sys.executable, "-m", "robohal.cli.main", "hil", "--cells", "cells.toml", "--cell", "abb",
                           "--yes"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "cell abb: bringing the robot up" in done.stderr and "cell abb: robot left safe" in done.stderr
    state = sim.state()
    assert (state["execution"], state["egm_active"]) == ("stopped", False)
