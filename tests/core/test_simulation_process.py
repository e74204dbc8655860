"""SimulatorProcess: a simulator program in its own process, and its stderr log."""

from __future__ import annotations

import os
import sys

import pytest
from robohal.sim.process import SimulatorError, SimulatorProcess
from robohal.uri import parse_uri


def _start(code: str) -> SimulatorProcess:
    return SimulatorProcess([sys.executable, "-c", code], lambda line: parse_uri("sim://?model=generic.planar2"),
                            timeout=20)


def test_a_stopped_simulator_leaves_no_log_behind():
    process = _start("import sys; print('READY', flush=True); sys.stderr.write('chatter\\n'); sys.stdin.read()")
    assert os.path.exists(process.log_path)
    process.stop()
    assert not os.path.exists(process.log_path)
    process.stop()                                       # idempotent


def test_a_simulator_that_failed_by_itself_keeps_its_log():
    process = _start("import sys; print('READY', flush=True); sys.stderr.write('it broke\\n'); sys.exit(3)")
    try:
        process.process.wait(timeout=20)
        assert process.stop() == 3
        with open(process.log_path) as log:
            assert "it broke" in log.read()
    finally:
        os.unlink(process.log_path)


def test_a_silent_failure_leaves_no_empty_log():
    process = _start("import sys; print('READY', flush=True); sys.exit(3)")
    process.process.wait(timeout=20)
    assert process.stop() == 3
    assert not os.path.exists(process.log_path)


def test_a_failed_start_shows_the_log_tail_and_removes_the_log(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)        # tempfile reads TMPDIR again
    with pytest.raises(SimulatorError, match=r"(?s)exited with code 2.*\nno such robot") as error:
        _start("import sys; sys.stderr.write('no such ' + 'robot\\n'); sys.exit(2)")  # (not the argv)
    assert error.value.args[0].endswith("no such robot\n")
    assert not list(tmp_path.glob("robohal-sim-*.log"))


STATS_PEER = """
import sys
print('READY', flush=True)
for line in sys.stdin:
    if line.strip() == 'STATS':
        print('noise before the answer', flush=True)
        print('STATS {"cycles": 42}', flush=True)
"""


def test_stats_asks_and_skips_other_lines():
    process = _start(STATS_PEER)
    try:
        assert process.stats() == {"cycles": 42}
        assert process.stats() == {"cycles": 42}  # again: nothing left over from the first answer
    finally:
        process.stop()


def test_stats_from_a_simulator_that_never_answers_is_an_error_not_a_hang():
    process = _start("import sys; print('READY', flush=True); sys.stdin.read()")
    try:
        with pytest.raises(SimulatorError, match="did not answer STATS"):
            process.stats(timeout=0.5)
    finally:
        process.stop()
