"""The firmware's channels (protocol 3: SERVO, MOVE, SERVOS): up to 12 servos on any pins, timed one
after the other on Timer1 as Arduino's Servo library times them. Run against the real firmware in
simavr (every pulse measured on its pin) and against the emulator, as the planar arm's tests are."""

from __future__ import annotations

import random
import statistics
from dataclasses import replace
from itertools import pairwise

import pytest
from robohal_arduino_planar import wire as p
from robohal_arduino_planar.emulator import FirmwareModel

from .test_emulator import FakeClock, normalise

# Every pin a channel may take but D13 (the Uno's LED, fine too) and A5: twelve of them.
PINS = (11, 10, 9, 6, 5, 3, 2, 4, 7, 8, 12, 14)
# The figure: every pulse within 1 us of its command, whatever else the MCU does.
TOLERANCE_US = 1.0


def request(host, *tokens) -> p.Reply:
    seq = host.next_seq()
    return host.request(p.decode_command(p.encode_frame(tokens[0], seq, *tokens[1:])))


def configure(host, pins=PINS, limits=(500, 2500)) -> None:
    for channel, pin in enumerate(pins, start=1):
        assert request(host, "SERVO", channel, pin, *limits) == p.ServoReply(host.seq, channel, pin, limits)


def move(host, first: int, widths) -> p.Reply:
    replies = []
    for start in range(0, len(widths), p.MOVE_WIDTHS):
        chunk = tuple(widths[start:start + p.MOVE_WIDTHS])
        replies.append(host.request(p.Move(host.next_seq(), first + start, chunk)))
    return replies[-1] if len(replies) == 1 else replies


def settled(sim, mark: int, pin: int, count: int = 6) -> list[float]:
    """The pin's pulses after `mark` once `count` came, less the first two (a frame may have begun
    with the old widths)."""
    assert sim.wait_for(lambda: len(sim.pulses_since(mark, pin)) >= count), f"too few pulses on pin {pin}"
    return sim.pulses_since(mark, pin)[2:]


def test_hello_says_protocol_3_with_12_channels(host):
    hello = host.request(p.Hello(host.next_seq()))
    assert (hello.protocol, hello.servos, hello.channels) == (3, 3, p.MAX_CHANNELS)


def test_twelve_servos_on_any_pins_pulse_their_widths(sim, host, sim_kind):
    configure(host)
    widths = [850 + 150 * i for i in range(len(PINS))]  # 20.1 ms of pulses
    mark = sim.pulse_mark()
    assert [r.widths_us for r in move(host, 1, widths)] == [tuple(widths[:5]), tuple(widths[5:10]), tuple(widths[10:])]
    for pin, width in zip(PINS, widths, strict=True):
        got = settled(sim, mark, pin)
        assert all(abs(w - width) <= TOLERANCE_US for w in got), (pin, width, min(got), max(got))
    times = sim.pulse_times_since(mark, PINS[0])[2:]
    frame = max(20000, sum(widths) + 500)  # the frame stretches when the widths add up to more than 19.5 ms
    assert all(abs((b - a) - frame) <= 2 for a, b in pairwise(times)), "one pulse per frame"
    state = host.request(p.Servos(host.next_seq()))
    assert state == p.ServosReply(host.seq, 2**12 - 1, tuple(widths))


def test_pulses_stay_within_1_us_under_serial_traffic(sim_factory, connect):
    """Each edge is written after waiting with interrupts off for its timer tick
    (servo_channels.h), so the core's serial and millis() interrupts do not move it."""
    sim = sim_factory("firmware")
    host = connect(sim)
    pins = (11, 10, 9, 6)
    configure(host, pins)
    widths = (544, 1234, 2400, 1500)
    assert move(host, 1, widths) == p.MoveReply(host.seq, 1, widths)
    mark = sim.pulse_mark()
    while len(sim.pulses_since(mark, pins[-1])) < 40:
        host.get()  # replies and receptions keep the serial interrupts busy meanwhile
    for pin, width in zip(pins, widths, strict=True):
        got = sim.pulses_since(mark, pin)[2:]
        assert all(abs(w - width) <= TOLERANCE_US for w in got), (pin, width, min(got), max(got))
        assert abs(statistics.median(got) - width) <= 0.5


def test_channel_commands_are_checked_and_refusals_change_nothing(sim, host):
    assert request(host, "MOVE", 1, 1500) == p.ErrorReply(host.seq, 9, "NO_SERVO")  # nothing configured yet
    configure(host, (11, 10), (1000, 2000))
    for bad in ((0, 9, 1000, 2000), (13, 9, 1000, 2000), (3, 1, 1000, 2000), (3, 20, 1000, 2000),
                (3, 9, 1500, 1500), (3, 11, 1000, 2000)):  # channel, pin, min >= max, another channel's pin
        host.send_raw(p.encode_frame("SERVO", 90, *bad))
        assert host.read_reply() == p.ErrorReply(90, 3, "BAD_ARGS"), bad
    assert request(host, "SERVO", 3, 9, 400, 2000) == p.ErrorReply(host.seq, 4, "OUT_OF_LIMITS")
    assert move(host, 1, (1200, 1800)) == p.MoveReply(host.seq, 1, (1200, 1800))
    assert move(host, 1, (1200, 2001)) == p.ErrorReply(host.seq, 4, "OUT_OF_LIMITS")
    assert move(host, 2, (1500, 1500)) == p.ErrorReply(host.seq, 9, "NO_SERVO")  # channel 3 is not configured
    assert request(host, "SERVO", 1, 11, 1300, 2000) == p.ErrorReply(host.seq, 4, "OUT_OF_LIMITS")  # holds 1200
    for word, args in (("SET", (1500, 1500)), ("LIMITS", (1000, 2000, 1000, 2000)), ("TOOL", (1500,)),
                       ("TLIMITS", (1000, 2000)), ("ATTACH", ())):
        assert request(host, word, *args) == p.ErrorReply(host.seq, 8, "WRONG_MODE"), word
    host.send_raw(p.encode_frame("MOVE", 91, 11, 1500, 1500, 1500))  # channels 11..13
    assert host.read_reply() == p.ErrorReply(91, 3, "BAD_ARGS")
    mark = sim.pulse_mark()
    assert all(abs(w - 1200) <= TOLERANCE_US for w in settled(sim, mark, 11))
    assert all(abs(w - 1800) <= TOLERANCE_US for w in settled(sim, mark, 10))
    assert host.request(p.Servos(host.next_seq())) == p.ServosReply(host.seq, 0b11, (1200, 1800))
    assert host.get().rejected == 17


def test_zero_detach_and_the_watchdog_stop_channels(sim, host):
    configure(host, (3, 4))
    assert move(host, 1, (1100, 1900)) == p.MoveReply(host.seq, 1, (1100, 1900))
    assert move(host, 2, (0,)) == p.MoveReply(host.seq, 2, (0,))  # pin 4 stops, keeps its setpoint
    mark = sim.pulse_mark()
    assert settled(sim, mark, 3)
    assert len(sim.pulses_since(mark, 4)) <= 1, "at most the frame under way when MOVE came"
    assert host.request(p.Servos(host.next_seq())) == p.ServosReply(host.seq, 0b01, (1100, 1900))
    assert host.request(p.Detach(host.next_seq())) == p.Ack(host.seq, (0, 0))
    assert sim.wait_quiet(0.3), "DETACH stops every channel"
    seq = host.next_seq()
    assert host.request(p.Watchdog(seq, 300, "detach")) == p.WatchdogReply(seq, 300, "detach")
    assert move(host, 1, (1500,)) == p.MoveReply(host.seq, 1, (1500,))  # a channel alone arms the watchdog
    assert host.read_reply(timeout=5) == p.Event("WDT", "detach")
    assert sim.wait_quiet(0.3)
    assert host.request(p.Servos(host.next_seq())) == p.ServosReply(host.seq, 0, (1500, 1900))


def test_a_reset_forgets_the_channels_and_brings_back_the_planar_arm(sim, host):
    configure(host, (5,))
    assert move(host, 1, (1500,)) == p.MoveReply(host.seq, 1, (1500,))
    sim.control("RESET")
    deadline = 50
    while not isinstance(host.read_reply(1.0), p.Boot) and deadline:
        deadline -= 1
    assert host.request(p.Servos(host.next_seq())) == p.ServosReply(host.seq, 0, ())
    assert move(host, 1, (1500,)) == p.ErrorReply(host.seq, 9, "NO_SERVO")
    assert host.set(1500, 1500) == p.Ack(host.seq, (1500, 1500))  # the planar arm's commands work again


def test_power_switches_a_pin_that_no_servo_uses(host):
    assert request(host, "POWER", 9, 1) == p.ErrorReply(host.seq, 3, "BAD_ARGS")  # the planar arm's servo pin
    assert request(host, "POWER", 12, 1) == p.PowerReply(host.seq, 12, True)
    assert request(host, "POWER", 13, 1) == p.ErrorReply(host.seq, 3, "BAD_ARGS")  # one power pin
    assert request(host, "SERVO", 1, 12, 1000, 2000) == p.ErrorReply(host.seq, 3, "BAD_ARGS")
    configure(host, (9,))  # servo mode: D9 is a channel's now
    assert request(host, "POWER", 9, 1) == p.ErrorReply(host.seq, 3, "BAD_ARGS")
    assert request(host, "POWER", 12, 0) == p.PowerReply(host.seq, 12, False)


def channel_script(seed: int, count: int) -> list[bytes]:
    """Channel commands, valid and not, for the emulator to answer as the firmware does."""
    rng = random.Random(seed)
    lines = [p.Watchdog(1, 0, "detach").encode()]
    for _ in range(count):
        seq = rng.randrange(65536)
        kind = rng.randrange(6)
        if kind == 0:
            low = rng.randrange(300, 2400)
            line = p.encode_frame("SERVO", seq, rng.randrange(0, 14), rng.randrange(0, 21), low,
                                  low + rng.randrange(-10, 1200))
        elif kind == 1:
            widths = [rng.choice([0, 500, 2500, rng.randrange(400, 2600)]) for _ in range(rng.randrange(1, 6))]
            line = p.encode_frame("MOVE", seq, rng.randrange(0, 13), *widths)
        elif kind == 2:
            line = rng.choice([p.Servos(seq), p.Detach(seq), p.Get(seq), p.Set(seq, 1500, 1500)]).encode()
        elif kind == 3:
            line = p.encode_frame(rng.choice(["MOVE", "SERVO", "SERVOS"]),
                                  *rng.sample(["1", "x", "70000", "12", "3"], rng.randrange(0, 5)))
        elif kind == 4:
            line = p.encode_frame("POWER", seq, rng.choice([1, 6, 9, 12, 13, 20]), rng.choice([0, 1, 2]))
        else:
            line = p.encode_frame("MOVE", seq, 1, *(rng.randrange(500, 2501) for _ in range(rng.randrange(1, 6))))
        lines.append(line)
    return lines


def test_the_emulator_answers_channel_commands_as_the_firmware(sim_factory, connect):
    sim = sim_factory("firmware")
    host = connect(sim)
    model = FirmwareModel(FakeClock())
    model.counts["ok"] = host.get().frames_ok
    mismatches = []
    for line in channel_script(seed=33, count=250):
        host.send_raw(line)
        got = host.read_line()
        assert got.endswith(b"\n"), f"no reply to {line!r}"
        expected = model.receive(line)
        if normalise(p.decode_reply(got)) != normalise(p.decode_reply(expected)):
            mismatches.append((line, got, expected))
    assert not mismatches, mismatches[:5]
    final = host.get()
    assert replace(final, uptime_ms=0) == replace(p.decode_reply(model.receive(p.Get(final.seq).encode())), uptime_ms=0)


@pytest.mark.parametrize("command", [p.Servo(1, 12, 19, (500, 2500)), p.Move(2, 8, (2500,) * 5), p.Servos(3),
                                     p.Power(4, 12, True)])
def test_channel_commands_fit_the_line(command):
    wire = command.encode()
    assert len(wire) <= p.MAX_COMMAND_LINE + 1 and len(wire.split()) <= p.MAX_TOKENS + 1  # the trailer is a token
    assert p.decode_command(wire) == command
