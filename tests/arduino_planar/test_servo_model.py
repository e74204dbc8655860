"""The servos behind the pins: the horn slews toward each pulse's target at the rated speed, in the
Python model (on a fake clock), in the emulator and in the simavr harness (the same figures from
both), with --servo-speed, --ideal, DETACH and a reset; and the URI options that choose it."""

from __future__ import annotations

import math
import subprocess
import threading
import time

import pytest
import robohal
from robohal.errors import UriError
from robohal.sim.process import python_module
from robohal_arduino_planar import wire as p
from robohal_arduino_planar.servo import DRIVE_AFTER_PULSE_S, SG90_SPEED, US_PER_RAD, ServoHorn

FRAME_S = 0.020
SG90_US_PER_S = SG90_SPEED * US_PER_RAD        # 3333 us of pulse per second

#: us: one cycle of the ATmega328P's 16 MHz clock, the resolution of a pulse measured in simavr
CLOCK_US = 1 / 16


# ---------------------------------------------------------------- the model on a fake clock


def test_sg90_rating_is_60_degrees_in_a_tenth_of_a_second():
    assert SG90_SPEED == pytest.approx(math.radians(60) / 0.1)
    assert SG90_US_PER_S == pytest.approx(1000 / 3 / 0.1)   # 60 deg = 1000/3 us of a 180-deg span


def test_horn_slews_at_the_rated_speed_and_stops_on_the_target():
    horn = ServoHorn()
    t = 0.0
    assert horn.pulse(t, 2000) == 1500.0            # the horn starts in the middle and has not moved yet
    positions = []
    for _ in range(12):
        t += FRAME_S
        positions.append(horn.pulse(t, 2000))
    steps = [b - a for a, b in zip([1500.0, *positions], positions, strict=False)]
    assert steps[0] == pytest.approx(SG90_US_PER_S * FRAME_S)
    assert all(s <= SG90_US_PER_S * FRAME_S + 1e-9 for s in steps)
    assert positions[-1] == 2000.0 and max(positions) == 2000.0   # reaches it, never past it
    # 500 us at 3333 us/s: 0.15 s, i.e. on the eighth frame
    assert positions.index(2000.0) == 7


def test_horn_without_pulses_goes_limp_after_one_frame():
    horn = ServoHorn(speed=1.0)
    horn.pulse(0.0, 2500)
    assert horn.advance(10.0) == pytest.approx(1500 + US_PER_RAD * DRIVE_AFTER_PULSE_S)
    assert not horn.moving
    horn.pulse(20.0, 2500)
    horn.unpowered(20.005)                           # the MCU went into reset
    assert horn.advance(30.0) == pytest.approx(1500 + US_PER_RAD * (DRIVE_AFTER_PULSE_S + 0.005))


def test_ideal_horn_follows_each_pulse_at_once():
    horn = ServoHorn(ideal=True)
    assert horn.pulse(0.0, 1000) == 1000.0
    assert horn.pulse(0.02, 2400) == 2400.0 and horn.advance(0.03) == 2400.0


@pytest.mark.parametrize("speed", [0.0, -1.0, math.inf, math.nan])
def test_horn_refuses_a_speed_that_is_not_a_rate(speed):
    with pytest.raises(ValueError, match="rad/s"):
        ServoHorn(speed=speed)


# ---------------------------------------------------------------- the simulators


def _start(sim_factory, connect, kind, *extra):
    sim = sim_factory(kind, extra=extra)
    host = connect(sim)
    host.request(p.Limits(host.next_seq(), ((500, 2500), (500, 2500))))
    return sim, host


def _stats_after(sim, sim_us: float, timeout: float = 10.0) -> dict:
    """The first STATS answer at or after simulated time ``sim_us`` (polled, with a deadline)."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while True:
        stats = sim.stats()
        if stats["sim_us"] >= sim_us or time.monotonic() >= deadline:
            return stats
        pause.wait(0.02)


def _reach_index(positions, target, tolerance=0.5):
    return next(i for i, x in enumerate(positions) if abs(x - target) <= tolerance)


@pytest.mark.parametrize("speed", [None, 2.0])
def test_simulated_horns_slew_at_the_servo_speed(sim_factory, connect, sim_kind, speed):
    extra = () if speed is None else ("--servo-speed", str(speed))
    rate_us_per_s = (SG90_SPEED if speed is None else speed) * US_PER_RAD
    sim, host = _start(sim_factory, connect, sim_kind, *extra)
    mark = sim.horn_mark()
    assert host.set(1000, 2000) == p.Ack(host.seq, (1000, 2000))
    frames = math.ceil(500 / (rate_us_per_s * FRAME_S))          # frames to travel 500 us
    horns = sim.wait_horns(mark, frames + 4, timeout=30.0)
    for pin, target in ((9, 1000), (10, 2000)):
        times = [t for t, _ in horns[pin]]
        positions = [x for _, x in horns[pin]]
        assert positions[0] == pytest.approx(1500, abs=0.2)      # the first pulse found it in the middle
        reached = _reach_index(positions, target)
        assert reached in (frames, frames + 1), positions       # no sooner than the rating allows
        for (t0, x0), (t1, x1) in zip(horns[pin][:reached], horns[pin][1:reached + 1], strict=True):
            step = abs(x1 - x0)
            assert step <= rate_us_per_s * (t1 - t0) * 1e-6 + 0.2, (pin, positions)
            assert abs(x1 - target) < abs(x0 - target)             # always toward the target
        assert all(abs(x - target) <= 0.5 for x in positions[reached:])  # and it stays there
        assert len(set(times)) == len(times)


def test_pulse_lines_are_printed_only_when_asked(sim_factory, connect, sim_kind):
    """--pulses 0, the default at a terminal: no PULSE or HORN lines, and the servos move all the same."""
    sim, host = _start(sim_factory, connect, sim_kind, "--pulses", "0", "--ideal", "1")
    assert host.set(1200, 1800) == p.Ack(host.seq, (1200, 1800))

    def there() -> bool:  # within a cycle of the 16 MHz clock: a pulse measured in simavr ends on either side
        return sim.stats()["horn_us"][:2] == pytest.approx([1200.0, 1800.0], abs=CLOCK_US)

    deadline = time.monotonic() + 10.0
    while not there() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert there()
    assert sim.pulse_mark() == 0 and sim.horn_mark() == 0


def test_ideal_horns_are_the_pulses(sim_factory, connect, sim_kind):
    sim, host = _start(sim_factory, connect, sim_kind, "--ideal", "1")
    mark, horn_mark = sim.pulse_mark(), sim.horn_mark()
    assert host.set(800, 2200) == p.Ack(host.seq, (800, 2200))
    horns = sim.wait_horns(horn_mark, 6)
    for pin in p.SERVO_PINS:
        widths = sim.pulses_since(mark, pin)
        positions = [x for _, x in horns[pin]]
        count = min(len(widths), len(positions))
        assert count >= 6 and positions[:count] == widths[:count]
    assert sim.stats()["ideal"] is True


def test_detach_leaves_the_horn_where_it_got_to(sim_factory, connect, sim_kind):
    sim, host = _start(sim_factory, connect, sim_kind, "--servo-speed", "1.0")   # 6.4 us per frame
    mark = sim.horn_mark()
    host.set(1000, 2000)
    sim.wait_horns(mark, 5)
    assert host.request(p.Detach(host.next_seq())) == p.Ack(host.seq, (0, 0))
    first = sim.stats()
    # within a frame of the last pulse it stops for good; compare two answers far apart in sim time
    later = _stats_after(sim, first["sim_us"] + 200_000)
    assert later["sim_us"] - first["sim_us"] >= 200_000
    assert later["moving"] == [False, False, False]
    left, right, _tool = later["horn_us"]
    assert 1000 < left < 1500 - 20 and 1500 + 20 < right < 2000     # stopped on the way
    again = sim.stats()
    assert again["horn_us"] == later["horn_us"]


def test_a_reset_does_not_move_the_horns(sim_factory, connect, sim_kind):
    sim, host = _start(sim_factory, connect, sim_kind, "--servo-speed", "1.0")
    mark = sim.horn_mark()
    host.set(1000, 2000)
    sim.wait_horns(mark, 5)
    resets = len(sim.resets())
    answers = len(sim.stats_lines)
    sim.control("STATS\nRESET")                                 # one write: the horns just before
    assert sim.wait_for(lambda: len(sim.resets()) > resets)      # the MCU is running again
    during = sim.stats_lines[answers]
    assert during["moving"] == [True, True, False]
    after = sim.stats()
    assert after["moving"] == [False, False, False]              # a held MCU sends no pulses
    for was, now, start in zip(during["horn_us"][:2], after["horn_us"][:2], (1500, 1500), strict=True):
        assert abs(now - was) <= 3.0 and abs(now - start) > 20   # stopped where it was, on the way
    host.handshake()
    state = host.get()
    assert state.attached == (False, False) and state.setpoints_us == (0, 0)   # the firmware forgot
    assert sim.stats()["horn_us"] == after["horn_us"]           # the servos did not


def test_stats_before_any_pulse(sim_factory, sim_kind):
    sim = sim_factory(sim_kind)
    stats = sim.stats()
    assert stats["horn_us"] == [1500.0, 1500.0, 1500.0] and stats["target_us"] == [None, None, None]
    assert stats["servo_speed"] == pytest.approx(SG90_SPEED, rel=1e-6) and stats["ideal"] is False


# ---------------------------------------------------------------- the URI options


def test_sim_uri_runs_the_rated_servo_by_default_and_ideal_on_request():
    with robohal.connect("arduino-planar://sim?firmware=emulator&sim_boot_ms=50") as robot:
        assert robot.simulator.ideal is False
        assert robot.simulator.stats()["servo_speed"] == pytest.approx(SG90_SPEED)
    with robohal.connect("arduino-planar://sim?firmware=emulator&sim_boot_ms=50&sim_ideal=1") as robot:
        assert robot.simulator.ideal is True and robot.simulator.stats()["ideal"] is True
        assert "sim_ideal" not in robot.backend.uri.params
    with robohal.connect("arduino-planar://sim?firmware=emulator&sim_boot_ms=50&sim_servo_speed=3") as robot:
        assert robot.simulator.stats()["servo_speed"] == 3.0


@pytest.mark.parametrize("value", ["0", "-2", "fast", "inf"])
def test_sim_servo_speed_must_be_a_rate(value):
    with pytest.raises(UriError, match="sim_servo_speed"):
        robohal.connect(f"arduino-planar://sim?firmware=emulator&sim_servo_speed={value}")


@pytest.mark.parametrize("args", [("--servo-speed", "0"), ("--servo-speed", "x"), ("--servo-speed", "nan")])
def test_simulators_refuse_a_bad_servo_speed(request, sim_kind, args):
    if sim_kind == "firmware":
        elf, harness = request.getfixturevalue("firmware_build")
        argv = [str(harness), str(elf)]
    else:
        argv = python_module("robohal_arduino_planar.simulator", "--firmware", "emulator", "--boot-ms", "10")
    proc = subprocess.run([*argv, *args], input=b"", capture_output=True, timeout=30)
    assert proc.returncode == 2 and not proc.stdout, proc
