"""`robohal sim SCHEME [ARGS...]`: any plugin's simulator program in the foreground, the same for
every scheme: its ready line first, its own options (and --help) passed through, and Ctrl-C stops
it and exits 0, whether the Ctrl-C reaches robohal alone or, as at a terminal, the whole group.
Started with /dev/null or no stdin (nohup, a script's `&`, a service) it runs until stopped; the
end of a launcher's pipe ends it."""

from __future__ import annotations

import ipaddress
import os
import selectors
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import robohal
from robohal.sim.process import free_loopback_host, free_port, parse_ready_line

ROBOHAL = Path(sys.executable).with_name("robohal")


def _arguments(scheme: str) -> list[str]:
    if scheme == "abb-egm":  # (no \\CommTimeout: it streams until stopped, whenever a backend connects)
        return ["--sensor", f"127.0.0.1:{free_port()}", "--comm-timeout", "0"]
    if scheme == "franka":
        return ["--address", free_loopback_host(1337), "--no-realtime", "1"]
    if scheme == "arduino-firmata":  # StandardFirmata is its only firmware
        return ["--boot-ms", "50"]
    return ["--firmware", "emulator", "--boot-ms", "50"]


def _avr_toolchain_missing() -> str | None:
    from robohal_arduino_planar import firmware

    return firmware.toolchain_missing()


# Each simulator as `robohal sim` runs it: its scheme and the options it gets here.
SIMULATORS = [
    pytest.param("abb-egm", None, id="abb-egm"),
    pytest.param("franka", None, id="franka"),
    pytest.param("arduino-planar", None, id="arduino-planar-emulator"),
    pytest.param("arduino-planar", ["--firmware", "simavr", "--boot-ms", "50"], id="arduino-planar-simavr"),
]
CLOSED_STDIN = ["sh", "-c", 'exec "$0" "$@" <&-']  # runs a command with its stdin closed


def _start(scheme: str, args: list[str] | None, stdin) -> subprocess.Popen:
    if args is not None and "simavr" in args and _avr_toolchain_missing():
        pytest.skip(f"the firmware simulator needs {_avr_toolchain_missing()} (make avr-deps)")
    argv = [str(ROBOHAL), "sim", scheme, *(_arguments(scheme) if args is None else args)]
    if stdin == "closed":
        argv, stdin = CLOSED_STDIN + argv, None
    return subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


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
@pytest.mark.parametrize("scheme", ["abb-egm", "franka", "arduino-planar", "arduino-arm", "arduino-firmata"])
def test_robohal_sim_prints_the_ready_line_and_stops_on_ctrl_c(scheme: str, whole_group: bool) -> None:
    proc = subprocess.Popen([str(ROBOHAL), "sim", scheme, *_arguments(scheme)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        first = _first_line(proc, 60.0)
        assert first.startswith(f"READY {scheme}://"), (first, proc.stderr.read1(4000) if proc.poll() else b"")
        assert parse_ready_line(first).scheme == scheme
        (simulator,) = _children(proc.pid)  # the program runs in robohal's child process
        assert _running(simulator)
        if whole_group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) == 0  # the deadline: a stop that hangs fails here
        assert not _running(simulator)  # stopped and reaped, not left behind
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()


@pytest.mark.parametrize("stdin", [subprocess.DEVNULL, "closed"], ids=["dev-null", "closed"])
@pytest.mark.parametrize("scheme, args", SIMULATORS)
def test_without_a_pipe_on_stdin_a_simulator_runs_until_stopped(scheme: str, args: list[str] | None, stdin) -> None:
    proc = _start(scheme, args, stdin)
    try:
        first = _first_line(proc, 120.0)  # (the firmware is built first where it is out of date)
        assert first.startswith(f"READY {scheme}://"), (first, proc.stderr.read1(4000) if proc.poll() else b"")
        (simulator,) = _children(proc.pid)
        with robohal.connect(first.split(" ", 1)[1]) as robot:  # its backend asks it over its own protocol
            assert robot.state.q is not None
        assert _running(simulator) and proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        assert not _running(simulator)
    finally:
        _end(proc)


@pytest.mark.parametrize("scheme, args", SIMULATORS)
def test_the_end_of_its_launcher_s_pipe_ends_a_simulator(scheme: str, args: list[str] | None) -> None:
    proc = _start(scheme, args, subprocess.PIPE)
    try:
        first = _first_line(proc, 120.0)
        assert first.startswith(f"READY {scheme}://"), (first, proc.stderr.read1(4000) if proc.poll() else b"")
        (simulator,) = _children(proc.pid)
        proc.stdin.close()  # the launcher is gone: no signal is sent
        assert proc.wait(timeout=15) == 0
        assert not _running(simulator)
    finally:
        _end(proc)


def test_franka_without_an_address_picks_a_free_loopback_one_of_its_own() -> None:
    both = [_start("franka", ["--no-realtime", "1"], subprocess.DEVNULL) for _ in range(2)]  # at the same time
    try:
        uris = [parse_ready_line(_first_line(proc, 60.0)) for proc in both]
        hosts = {uri.host for uri in uris}
        assert len(hosts) == 2 and all(ipaddress.ip_address(host).is_loopback for host in hosts)
        for uri in uris:
            assert uri.port is None  # the FCI's own port, 1337, on the address it picked
            socket.create_connection((uri.host, 1337), timeout=10).close()
    finally:
        for proc in both:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=15)
            _end(proc)


@pytest.mark.parametrize("scheme", ["abb-egm", "franka", "arduino-planar"])
def test_a_usage_error_names_the_command_the_user_typed(scheme: str) -> None:
    refused = subprocess.run([str(ROBOHAL), "sim", scheme, "--no-such-option"], capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL)
    assert refused.returncode == 2
    assert f"robohal sim {scheme}" in refused.stderr and "python -m" not in refused.stderr


@pytest.mark.parametrize("scheme, option", [("abb-egm", "--retry-after"), ("franka", "--max-missed"),
                                            ("arduino-planar", "--firmware")])
def test_help_is_the_simulator_program_s_own(scheme: str, option: str) -> None:
    shown = subprocess.run([str(ROBOHAL), "sim", scheme, "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and option in shown.stdout and f"robohal sim {scheme}" in shown.stdout


def test_without_a_scheme_it_lists_the_simulators() -> None:
    listed = subprocess.run([str(ROBOHAL), "sim"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    assert [row[:2] for row in rows] == [["abb-egm", "python -m robohal_abb.simulator"],
                                         ["arduino-arm", "python -m robohal_arduino_planar.arm_simulator"],
                                         ["arduino-firmata", "python -m robohal_arduino_planar.firmata_simulator"],
                                         ["arduino-planar", "python -m robohal_arduino_planar.simulator"],
                                         ["feetech", "python -m robohal_feetech.simulator"],
                                         ["franka", "python -m robohal_franka.simulator"]]


def test_an_unknown_scheme_is_an_error_naming_the_known_ones() -> None:
    refused = subprocess.run([str(ROBOHAL), "sim", "frnka"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert "frnka" in refused.stderr and "franka" in refused.stderr and "Traceback" not in refused.stderr


def test_a_program_that_fails_passes_its_exit_code_on() -> None:
    failed = subprocess.run([str(ROBOHAL), "sim", "franka", "--address", "192.0.2.1"], capture_output=True, text=True,
                            timeout=60, stdin=subprocess.DEVNULL)
    assert failed.returncode != 0 and "loopback" in failed.stderr
