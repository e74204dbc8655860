"""The Python emulator: its firmware model on a fake clock, line-for-line agreement with the real
firmware in simavr, and its process behaviour (CLI options, control lines, shutdown)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from robohal_arduino_planar import firmware
from robohal_arduino_planar import wire as p
from robohal_arduino_planar.emulator import FirmwareModel


class FakeClock:
    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> int:
        return self.ms


def decode_all(data: bytes) -> list[p.Reply]:
    return [p.decode_reply(line) for line in data.splitlines()]


def test_model_splits_lines_across_reads_and_ignores_cr():
    model = FirmwareModel(FakeClock())
    wire = p.Ping(3).encode().replace(b"\n", b"\r\n")
    out = b"".join(model.receive(wire[i:i + 1]) for i in range(len(wire)))
    assert decode_all(out) == [p.Pong(3)]
    assert model.receive(b"\n\n\r\n") == b""          # empty lines are a silent resync


def test_model_watchdog_trips_at_the_timeout_and_rearms_on_a_valid_frame():
    clock = FakeClock()
    model = FirmwareModel(clock, watchdog_ms=200, watchdog_action="detach")
    assert model.poll() == b""                       # nothing attached: nothing to guard
    model.receive(p.Set(1, 1500, 1500).encode())
    clock.ms = 199
    assert model.poll() == b"" and model.pin_widths() == (1500, 1500)
    clock.ms = 200
    assert decode_all(model.poll()) == [p.Event("WDT", "detach")]
    assert model.pin_widths() == (0, 0)
    clock.ms = 10_000
    assert model.poll() == b""                       # latched: one event per silence
    model.receive(p.Attach(2).encode())
    clock.ms = 10_199
    assert model.poll() == b""
    clock.ms = 10_200
    assert model.poll() != b"" and model.counts["watchdog_trips"] == 2


def test_model_watchdog_hold_keeps_outputs_and_survives_millis_wrap():
    clock = FakeClock()
    clock.ms = 2**32 - 50                            # millis() wraps after 49.7 days
    model = FirmwareModel(clock, watchdog_ms=100, watchdog_action="hold")
    model.receive(p.Set(1, 1200, 1800).encode())
    clock.ms = 2**32 + 49 - 2**32                    # 99 ms later, after the wrap
    assert model.poll() == b""
    clock.ms = 50
    assert decode_all(model.poll()) == [p.Event("WDT", "hold")]
    assert model.pin_widths() == (1200, 1800)


def test_model_counters_wrap_at_32_bits():
    model = FirmwareModel(FakeClock())
    model.counts["ok"] = 2**32 - 1
    state = decode_all(model.receive(p.Get(1).encode()))[0]
    assert state.frames_ok == 0


def test_model_overlong_line_counts_once():
    model = FirmwareModel(FakeClock())
    out = model.receive(b"X" * 500 + b"\n")
    assert decode_all(out) == [p.ErrorReply(None, 5, "LINE_TOO_LONG")]
    assert model.counts["overflow"] == 1


# ---------------------------------------------------------------- emulator == firmware, line by line


def scripted_lines(seed: int, count: int) -> list[bytes]:
    """A mix of valid, refused, corrupt and junk lines; every one draws exactly one reply."""
    rng = random.Random(seed)
    lines = [p.Watchdog(1, 0, "detach").encode(),     # timing-driven events would interleave
             p.Attach(2).encode()]                    # NO_SETPOINT before any SET
    widths = lambda: rng.choice([rng.randrange(400, 2600), 1000, 2000, 999, 2001, 500, 2500])  # noqa: E731
    for i in range(count):
        seq = rng.randrange(65536)
        kind = rng.randrange(12)
        if kind == 0:
            line = p.Set(seq, widths(), widths()).encode()
        elif kind == 1:
            lo1, lo2 = rng.randrange(300, 2000), rng.randrange(300, 2000)
            line = p.encode_frame("LIMITS", seq, lo1, lo1 + rng.randrange(-10, 900), lo2, lo2 + rng.randrange(1, 900))
        elif kind == 2:
            line = p.encode_frame("WDOG", seq, rng.choice([0, 30000, 60000, 60001, 10]),
                                  rng.choice(["hold", "detach", "nap"]))
        elif kind == 3:
            line = rng.choice([p.Attach(seq), p.Detach(seq), p.Ping(seq), p.Hello(seq), p.Get(seq)]).encode()
        elif kind == 4:                               # corrupted byte
            wire = bytearray(p.Set(seq, 1500, 1500).encode())
            i = rng.randrange(len(wire) - 1)
            wire[i] ^= rng.randrange(1, 256)
            if wire[i] in b"\r\n":
                wire[i] = ord("?")
            line = bytes(wire)
        elif kind == 5:                               # random junk
            line = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 45)))
            line = line.replace(b"\n", b"").replace(b"\r", b"") or b"?"
            line += b"\n"
        elif kind == 6:
            line = b"Z" * rng.randrange(49, 60) + b"\n"
        elif kind == 7:
            args = rng.sample(["1", "x", "-2", "70000", "12"], rng.randrange(0, 4))
            line = p.encode_frame(rng.choice(["SET", "PING", "GET", "FOO"]), *args)
        else:
            line = p.Set(seq, rng.randrange(1000, 2001), rng.randrange(1000, 2001)).encode()
        lines.append(line)
    return lines


def normalise(reply: p.Reply) -> p.Reply:
    return replace(reply, uptime_ms=0) if isinstance(reply, p.State) else reply


def test_emulator_model_answers_exactly_like_the_firmware(sim_factory, connect):
    sim = sim_factory("firmware")
    host = connect(sim)
    model = FirmwareModel(FakeClock())
    model.counts["ok"] = host.get().frames_ok        # the handshake's frames reached only the firmware

    mismatches = []
    for line in scripted_lines(seed=2024, count=250):
        host.send_raw(line)
        got = host.read_line()
        assert got.endswith(b"\n"), f"no reply to {line!r}"
        expected = model.receive(line)
        if normalise(p.decode_reply(got)) != normalise(p.decode_reply(expected)):
            mismatches.append((line, got, expected))
    assert not mismatches, mismatches[:5]
    final = host.get()
    assert normalise(final) == normalise(p.decode_reply(model.receive(p.Get(final.seq).encode())))


# ---------------------------------------------------------------- the emulator process


def test_emulator_cli_sets_power_up_watchdog(sim_factory, connect):
    sim = sim_factory("emulator", extra=("--watchdog-ms", "300", "--watchdog-action", "hold"))
    host = connect(sim)
    hello = host.request(p.Hello(host.next_seq()))
    assert (hello.watchdog_ms, hello.watchdog_action) == (300, "hold")


def _emulator(*args: str) -> subprocess.Popen:
    src = str(Path(firmware.__file__).resolve().parents[1])
    return subprocess.Popen([sys.executable, "-m", "robohal_arduino_planar.simulator", "--firmware", "emulator", *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")])),
                                 "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("how", ["eof", "quit", "sigterm"])
def test_emulator_process_exits_when_told(how):
    proc = _emulator("--boot-ms", "10")
    try:
        assert proc.stdout.readline().startswith(b"READY arduino-planar:///dev/")
        if how == "eof":
            proc.stdin.close()
        elif how == "quit":
            proc.stdin.write(b"QUIT\n")
            proc.stdin.flush()
        else:
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
