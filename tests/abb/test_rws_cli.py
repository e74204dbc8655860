"""``robohal abb ...`` end to end on the simulated controller (``--rws 6|7``): status, setup,
start, io, elog, motors, stop; errors as one line; the command itself as a user runs it."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest
from click.testing import CliRunner
from robohal.cli.main import main

BOTH = pytest.mark.parametrize("version", [6, 7])


def robohal_abb(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["abb", *args])
    return result.exit_code, result.output


@BOTH
def test_a_cell_brought_up_and_down_from_the_command_line(rws_cell, rws_template, tmp_path, version):
    sim = rws_cell(version)
    uri = str(sim.process.uri)
    module = tmp_path / "RobohalEgm.mod"
    module.write_bytes(rws_template())

    code, output = robohal_abb("status", uri)
    assert code == 0 and "motors      motoroff" in output and "RobohalEgm not loaded" in output
    assert f"run `robohal abb setup {shlex.quote(uri)}`" in output, "the fix, ready to paste"
    code, output = robohal_abb("setup", uri, "--module", str(module))
    assert code == 0 and "$HOME/RobohalEgm.mod loaded into T_ROB1" in output, output
    code, output = robohal_abb("start", uri)
    assert (code, output) == (0, "started: motors on, RAPID running\n")
    sim.wait_stream(flowing=True)
    status = json.loads(robohal_abb("status", uri, "--json")[1])
    assert status["ready"] and status["rapid"] == "running" and status["robotware"] == version

    assert robohal_abb("io", uri, "DO1", "1") == (0, "DO1 (DO) = 1\n")
    assert robohal_abb("io", uri, "Local/DRV_1/aoFlow", "2.5") == (0, "Local/DRV_1/aoFlow (AO) = 2.5\n")
    assert robohal_abb("io", uri, "Local/DRV_1/DO1") == (0, "Local/DRV_1/DO1 (DO) = 1\n")

    code, output = robohal_abb("stop", uri, "--motors-off")
    assert (code, output) == (0, "stopped: RAPID stopped, motors off\n")
    sim.wait_stream(flowing=False)
    code, output = robohal_abb("elog", uri, "--limit", "3")
    lines = output.splitlines()
    assert code == 0 and len(lines) == 3 and "10010" in lines[-1] and "Motors OFF" in lines[-1]
    entries = json.loads(robohal_abb("elog", uri, "--json", "--since", "0")[1])
    assert [entry["seqnum"] for entry in entries] == sorted(entry["seqnum"] for entry in entries)
    assert robohal_abb("motors", "on", uri) == (0, "motors on\n")
    assert robohal_abb("motors", "off", uri) == (0, "motors off\n")


def test_errors_are_one_line_with_the_controller_s_words(rws_cell):
    sim = rws_cell(6)
    code, output = robohal_abb("start", str(sim.process.uri))
    assert code == 2 and output.startswith("robohal: error: RobohalEgm is not loaded") and output.count("\n") == 1
    assert f"run `robohal abb setup {shlex.quote(str(sim.process.uri))}` first" in output
    code, output = robohal_abb("io", str(sim.process.uri), "noSuchSignal")
    assert code == 2 and "no I/O signal named 'noSuchSignal'" in output
    code, output = robohal_abb("status", "abb-egm://127.0.0.1:6510?model=abb.irb1410")
    assert code == 2 and "names no controller RWS" in output


def test_the_robohal_command_runs_it_on_a_simulator_of_its_own():
    result = subprocess.run([sys.executable, "-m", "robohal.cli.main", "abb", "status", "abb-egm://sim?sim_rws=7",
                             "--json"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["robotware"] == 7 and status["rws"].startswith("https://127.0.0.1:")
    assert status["controller_state"] == "motoroff" and not status["ready"]
