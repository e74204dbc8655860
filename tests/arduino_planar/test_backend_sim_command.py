"""`robohal sim arduino-planar` (and arduino-arm, arduino-firmata): the ready line with the pty first,
naming the scheme it was started for; serves the protocol, stops on Ctrl-C."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time

import pytest
import serial
from robohal.sim.process import parse_ready_line
from robohal_arduino_planar import firmware
from robohal_arduino_planar import wire as p

ROBOHAL = [sys.executable, "-c", "from robohal.cli.main import main; main()"]


def _first_line(proc: subprocess.Popen, timeout: float) -> str:
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    if not selector.select(timeout):
        return ""
    return proc.stdout.readline().decode().strip()


@pytest.mark.parametrize("kind", ["emulator", "simavr"])
def test_sim_command_prints_the_pty_then_serves_until_ctrl_c(kind: str) -> None:
    if kind == "simavr" and firmware.toolchain_missing():
        pytest.skip(firmware.toolchain_missing())
    proc = subprocess.Popen([*ROBOHAL, "sim", "arduino-planar", "--firmware", kind, "--boot-ms", "50"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = _first_line(proc, 60.0)
        assert first.startswith("READY arduino-planar:///dev/"), (
            first, proc.stderr.read1(4000) if proc.poll() is not None else b"")
        uri = parse_ready_line(first)
        assert uri.scheme == "arduino-planar" and not uri.host and not uri.params
        path = uri.path
        with serial.Serial(path, p.BAUDRATE, timeout=0.2) as port:
            deadline = time.monotonic() + 10.0
            reply = None
            while time.monotonic() < deadline and reply is None:
                port.write(p.Ping(7).encode())
                line = port.readline()
                if line.startswith(b"PONG 7 "):
                    reply = p.decode_reply(line)
            assert reply == p.Pong(7)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) == 0
        assert not os.path.exists(path) or _pty_unused(path)
    finally:
        _reap(proc)


def _reap(proc: subprocess.Popen) -> None:
    """Kill ``proc`` if it still runs, and close its pipes."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()


def _pty_unused(path: str) -> bool:
    """True when nobody serves the pty any more (opening it fails or nothing answers)."""
    try:
        with serial.Serial(path, p.BAUDRATE, timeout=0.3) as port:
            port.write(p.Ping(8).encode())
            return not port.readline()
    except (serial.SerialException, OSError):
        return True


@pytest.mark.parametrize("scheme, args", [
    ("arduino-arm", ["--firmware", "emulator"]),
    ("arduino-arm", ["--firmware", "simavr"]),
    ("arduino-firmata", []),
])
def test_each_scheme_s_simulator_announces_that_scheme(scheme: str, args: list[str]) -> None:
    """The ready line is the URI to connect to: arduino-arm's simulator runs the planar arm's
    firmware, but a URI of arduino-planar:// would connect the planar arm's backend to it."""
    if "simavr" in args and firmware.toolchain_missing():
        pytest.skip(firmware.toolchain_missing())
    proc = subprocess.Popen([*ROBOHAL, "sim", scheme, *args, "--boot-ms", "50"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = _first_line(proc, 60.0)
        uri = parse_ready_line(first)
        assert uri.scheme == scheme and uri.path.startswith("/dev/"), (
            first, proc.stderr.read1(4000) if proc.poll() is not None else b"")
        proc.stdin.write(b"QUIT\n")
        proc.stdin.flush()
        assert proc.wait(timeout=15) == 0
    finally:
        _reap(proc)
