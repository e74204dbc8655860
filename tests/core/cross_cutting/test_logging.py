"""Events reach the "robohal" loggers: connect and close (info), faults, failed motions,
lost links and the first irregularity of each kind (warnings). Nothing per cycle."""

from __future__ import annotations

import logging
import subprocess
import sys

import numpy as np
import pytest
import robohal
from robohal.errors import HardwareFault
from robohal.testing.contract import FailingMotion, InjectedError

FAST = "sim://?model=generic.planar2&realtime=0&rate=250"


def messages(caplog, level: int) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno == level and record.name.startswith("robohal")]


def test_connect_and_close_are_logged(caplog):
    with caplog.at_level(logging.INFO, logger="robohal"):
        with robohal.connect(FAST) as robot:
            robot.move_joints(np.radians([10.0, 10.0]), speed=0.5)
    info = messages(caplog, logging.INFO)
    assert any("connected" in text and "250 Hz" in text and FAST.split("?")[0] in text for text in info)
    assert any(text.endswith(": closed") for text in info)
    assert len(caplog.records) == 2  # the motion's cycles log nothing


def test_a_fault_is_logged_once_and_its_recovery_too(caplog):
    with caplog.at_level(logging.INFO, logger="robohal"), robohal.connect(FAST) as robot:
        robot.backend.inject_fault("brake_test")
        for _ in range(3):
            with pytest.raises(HardwareFault):
                robot.backend.cycle()
        robot.recover()
    warnings = messages(caplog, logging.WARNING)
    assert len(warnings) == 1 and "brake_test" in warnings[0]
    assert any("recovered from brake_test" in text for text in messages(caplog, logging.INFO))


def test_a_failed_motion_is_logged_with_its_braking(caplog):
    with caplog.at_level(logging.WARNING, logger="robohal"), robohal.connect(FAST) as robot:
        with pytest.raises(InjectedError):
            robot.run(FailingMotion(cycles=3))
    [warning] = messages(caplog, logging.WARNING)
    assert "motion failed" in warning and "InjectedError" in warning and "braked to rest" in warning


def test_only_the_first_irregularity_of_a_kind_is_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="robohal"), robohal.connect(FAST) as robot:
        for _ in range(5):
            robot.backend._anomaly("bad_checksum", "a frame with a bad checksum")
        robot.backend._anomaly("resends", "no reply: resending")
        assert robot.backend.counters["bad_checksum"] == 5
    warnings = messages(caplog, logging.WARNING)
    assert len(warnings) == 2
    assert "a frame with a bad checksum" in warnings[0] and "counters['bad_checksum']" in warnings[0]


def test_the_command_shows_warnings_and_with_v_the_events(tmp_path):
    def run(*flags: str) -> str:
        command = [sys.executable, "-m", "robohal.cli.main", *flags, "draw", FAST, "circle", "--radius", "0.01", "--speed", "0.2"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        return result.stderr

    assert "INFO" not in run()
    verbose = run("-v")
    assert "robohal: INFO robohal.control.backend: sim://" in verbose and ": closed" in verbose


def test_the_command_logs_to_the_stderr_of_each_invocation():
    # (click's runner, like any embedding, swaps sys.stderr between invocations)
    from click.testing import CliRunner
    from robohal.cli.main import main

    args = ["-v", "draw", FAST, "circle", "--radius", "0.01", "--speed", "0.2"]
    for _ in range(2):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0 and "robohal: INFO robohal.control.backend" in result.output
