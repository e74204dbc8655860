"""The simavr harness as a process: arguments, pulse reports, free-running mode and shutdown."""

from __future__ import annotations

import signal
import statistics
import subprocess
from itertools import pairwise

import pytest
import robohal
from robohal_arduino_planar import wire as p


def _run(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()


@pytest.mark.parametrize("how", ["eof", "quit", "sigterm"])
def test_harness_exits_when_told(firmware_build, how):
    elf, harness = firmware_build
    proc = _run([str(harness), str(elf)])
    try:
        assert proc.stdout.readline().startswith(b"READY arduino-planar:///dev/pts/")
        if how == "eof":
            proc.stdin.close()
        elif how == "quit":
            proc.stdin.write(b"QUIT\n")
            proc.stdin.flush()
        else:
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        _finish(proc)


@pytest.mark.parametrize("stdin", [subprocess.DEVNULL, "closed"], ids=["dev-null", "closed"])
def test_harness_without_a_pipe_on_stdin_runs_until_terminated(firmware_build, stdin):
    # nohup, `&` in a script, a service: no launcher holds its stdin, so its end means nothing
    elf, harness = firmware_build
    argv = [str(harness), str(elf), "--boot-ms", "50"]
    if stdin == "closed":  # (then the pty would be its descriptor 0, were it not careful)
        argv, stdin = ["sh", "-c", 'exec "$0" "$@" <&-', *argv], None
    proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = proc.stdout.readline().decode()
        assert first.startswith("READY arduino-planar:///dev/pts/"), (first, proc.stderr.read1(4000))
        with robohal.connect(first.split(" ", 1)[1].strip()) as robot:  # the firmware answers the backend
            assert robot.state.q is not None
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.parametrize("args, code", [([], 2), (["--boot-ms", "x"], 2), (["--bogus"], 2),
                                        (["--ideal", "maybe"], 2), (["--pulses"], 2), (["/nonexistent.elf"], 1)])
def test_harness_refuses_bad_arguments(firmware_build, args, code):
    _, harness = firmware_build
    proc = _run([str(harness), *args])
    try:
        assert proc.wait(10) == code
        assert proc.stdout.read() == b""                 # no ready line
    finally:
        _finish(proc)


def test_pulses_are_exact_to_the_timer_tick(sim_factory, connect):
    sim = sim_factory("firmware")
    host = connect(sim)
    host.request(p.Limits(host.next_seq(), ((500, 2500), (500, 2500))))
    assert host.set(777, 2222) == p.Ack(host.seq, (777, 2222))
    mark = sim.pulse_mark()
    widths = sim.wait_pulses(mark, 20)
    for pin, target in ((9, 777), (10, 2222)):
        settled = widths[pin][2:]
        assert all(abs(w * 16 - round(w * 16)) < 1e-6 for w in settled)   # 1/16 us resolution
        assert abs(statistics.median(settled) - target) <= 0.25           # OCR1x + 1 ticks, no drift
        assert all(abs(w - target) <= 8 for w in settled)
    # one pulse per 20 ms frame (in simulated time) on each pin
    periods = [b - a for a, b in pairwise(sim.pulse_times_since(mark, 9)[2:])]
    assert periods and all(abs(d - 20000) <= 2 for d in periods), periods


def test_free_running_mode_works(sim_factory, connect):
    sim = sim_factory("firmware", extra=("--fast", "1"))
    host = connect(sim)
    assert host.set(1500, 1500) == p.Ack(host.seq, (1500, 1500))
    for _ in range(50):
        assert host.request(p.Ping(host.next_seq())) == p.Pong(host.seq)
    assert sim.wait_pulses(sim.pulse_mark(), 5)
