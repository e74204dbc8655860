"""`robohal sim SCHEME [ARGS...]`: any plugin's simulator program in the foreground, the same for
every scheme: its ready line first, its own options (and --help) passed through, and Ctrl-C stops
it and exits 0, whether the Ctrl-C reaches robohal alone or, as at a terminal, the whole group."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from robohal.sim.process import free_loopback_host, free_port, parse_ready_line

ROBOHAL = Path(sys.executable).with_name("robohal")


def _arguments(scheme: str) -> list[str]:
    if scheme == "abb-egm":
        return ["--sensor", f"127.0.0.1:{free_port()}"]
    if scheme == "franka":
        return ["--address", free_loopback_host(1337), "--no-realtime", "1"]
    return ["--firmware", "emulator", "--boot-ms", "50"]


def _first_line(proc: subprocess.Popen, timeout: float) -> str:
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    if not selector.select(timeout):
        return ""
    return proc.stdout.readline().decode().strip()


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as listing:
        return [int(child) for child in listing.read().split()]


def _running(pid: int) -> bool:
    """True while ``pid`` is a live process (neither gone nor a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("whole_group", [False, True], ids=["robohal-alone", "terminal-ctrl-c"])
@pytest.mark.parametrize("scheme", ["abb-egm", "franka", "arduino-planar"])
def test_robohal_sim_prints_the_ready_line_and_stops_on_ctrl_c(scheme: str, whole_group: bool) -> None:
    proc = subprocess.Popen([str(ROBOHAL), "sim", scheme, *_arguments(scheme)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        first = _first_line(proc, 60.0)
        assert first.startswith(f"READY {scheme}://"), (first, proc.stderr.read1(4000) if proc.poll() else b"")
        assert parse_ready_line(first).scheme == scheme
        (simulator,) = _children(proc.pid)  # the program runs in robohal's child process
        assert _running(simulator)
        started = time.monotonic()
        if whole_group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) == 0
        assert time.monotonic() - started < 10.0
        assert not _running(simulator)  # stopped and reaped, not left behind
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()


@pytest.mark.parametrize("scheme, option", [("abb-egm", "--retry-after"), ("franka", "--max-missed"),
                                            ("arduino-planar", "--firmware")])
def test_help_is_the_simulator_program_s_own(scheme: str, option: str) -> None:
    shown = subprocess.run([str(ROBOHAL), "sim", scheme, "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and option in shown.stdout and "robohal_" in shown.stdout


def test_without_a_scheme_it_lists_the_simulators() -> None:
    listed = subprocess.run([str(ROBOHAL), "sim"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    assert [row[:2] for row in rows] == [["abb-egm", "python -m robohal_abb.simulator"],
                                         ["arduino-planar", "python -m robohal_arduino_planar.simulator"],
                                         ["franka", "python -m robohal_franka.simulator"]]


def test_an_unknown_scheme_is_an_error_naming_the_known_ones() -> None:
    refused = subprocess.run([str(ROBOHAL), "sim", "frnka"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert "frnka" in refused.stderr and "franka" in refused.stderr and "Traceback" not in refused.stderr


def test_a_program_that_fails_passes_its_exit_code_on() -> None:
    failed = subprocess.run([str(ROBOHAL), "sim", "franka", "--address", "192.0.2.1"], capture_output=True, text=True,
                            timeout=60, stdin=subprocess.DEVNULL)
    assert failed.returncode != 0 and "loopback" in failed.stderr
