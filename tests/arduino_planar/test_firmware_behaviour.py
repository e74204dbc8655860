"""Behaviour of the planar-arm firmware over its serial line, run twice: against the real firmware
in simavr (through the C harness) and against the Python emulator. Passing both is what makes the
emulator a faithful stand-in."""

from __future__ import annotations

import random
import statistics
import time
from itertools import pairwise

import pytest
from robohal_arduino_planar import wire as p

TOLERANCE_US = 8.0


def assert_widths_settle(sim, mark: int, old: tuple[int, int], new: tuple[int, int]) -> None:
    """After `mark`, each pin shows only old widths, then only new ones, at least 5 of them."""
    sim.wait_for(lambda: all(
        sum(1 for _, pn, w in sim.pulses[mark:] if pn == pin and abs(w - target) <= TOLERANCE_US) >= 5
        for pin, target in zip(p.SERVO_PINS, new, strict=True)), timeout=10)
    for pin, before, target in zip(p.SERVO_PINS, old, new, strict=True):
        widths = sim.pulses_since(mark, pin)
        first_new = next((i for i, w in enumerate(widths) if abs(w - target) <= TOLERANCE_US), None)
        assert first_new is not None, f"pin {pin}: never {target} us; saw {widths[:10]}"
        assert len(widths) - first_new >= 5, f"pin {pin}: too few pulses at {target} us"
        assert all(abs(w - before) <= TOLERANCE_US for w in widths[:first_new]), (pin, widths[:first_new])
        assert all(abs(w - target) <= TOLERANCE_US for w in widths[first_new:]), (pin, widths[first_new:])


def test_hello_reports_version_and_settings(host):
    reply = host.request(p.Hello(host.next_seq()))
    assert isinstance(reply, p.HelloReply)
    assert reply.protocol == p.PROTOCOL_VERSION
    assert (reply.firmware, reply.version, reply.servos) == ("robohal_planar", p.FIRMWARE_VERSION, 3)
    assert reply.limits == (p.DEFAULT_LIMITS_US, p.DEFAULT_LIMITS_US)
    assert (reply.watchdog_ms, reply.watchdog_action) == (p.DEFAULT_WATCHDOG_MS, p.DEFAULT_WATCHDOG_ACTION)


def test_boot_state_is_detached_without_pulses(sim, host):
    state = host.get()
    assert state.setpoints_us == (0, 0) and state.attached == (False, False)
    assert sim.wait_quiet(0.3)
    assert sim.pulse_mark() == 0, "a servo pulsed before the first SET"


def test_set_pulse_widths_match_commanded(sim, host):
    host.request(p.Limits(host.next_seq(), ((500, 2500), (500, 2500))))
    previous = (0, 0)
    for widths in [(1500, 1500), (1000, 2000), (2400, 600), (1234, 1789), (500, 2500)]:
        mark = sim.pulse_mark()
        reply = host.set(*widths)
        assert reply == p.Ack(host.seq, widths)
        assert_widths_settle(sim, mark, previous, widths)
        previous = widths
    state = host.get()
    assert state.setpoints_us == (500, 2500) and state.attached == (True, True)


def test_out_of_limits_set_is_refused_and_changes_nothing(sim, host):
    assert host.set(1200, 1800) == p.Ack(host.seq, (1200, 1800))
    for bad in [(999, 1500), (1500, 2001), (400, 1500), (65535, 1500)]:
        reply = host.set(*bad)
        assert reply == p.ErrorReply(host.seq, p.ErrorCode.OUT_OF_LIMITS, "OUT_OF_LIMITS")
    mark = sim.pulse_mark()
    widths = sim.wait_pulses(mark, 5)
    for pin, target in zip(p.SERVO_PINS, (1200, 1800), strict=True):
        assert all(abs(w - target) <= TOLERANCE_US for w in widths[pin]), widths[pin]
    state = host.get()
    assert state.setpoints_us == (1200, 1800)
    assert state.rejected == 4


def test_error_replies_carry_codes(host):
    seq = host.next_seq()
    assert host.request(p.Attach(seq)) == p.ErrorReply(seq, 7, "NO_SETPOINT")
    host.send_raw(p.encode_frame("JUMP", 77))
    assert host.read_reply() == p.ErrorReply(77, 2, "UNKNOWN_CMD")
    host.send_raw(p.encode_frame("SET", 78, 1500))
    assert host.read_reply() == p.ErrorReply(78, 3, "BAD_ARGS")
    host.send_raw(p.encode_frame("SET", 79, "+1500", 1500))
    assert host.read_reply() == p.ErrorReply(79, 3, "BAD_ARGS")
    host.send_raw(p.encode_frame("PING"))
    assert host.read_reply() == p.ErrorReply(None, 3, "BAD_ARGS")
    host.send_raw(p.encode_frame("WDOG", 80, 10, "hold"))
    assert host.read_reply() == p.ErrorReply(80, 3, "BAD_ARGS")
    host.send_raw(p.encode_frame("WDOG", 81, 500, "explode"))
    assert host.read_reply() == p.ErrorReply(81, 3, "BAD_ARGS")
    host.send_raw(p.encode_frame("LIMITS", 82, 2000, 1000, 1000, 2000))
    assert host.read_reply() == p.ErrorReply(82, 3, "BAD_ARGS")
    host.send_raw(p.encode_frame("LIMITS", 83, 400, 2000, 1000, 2000))
    assert host.read_reply() == p.ErrorReply(83, 4, "OUT_OF_LIMITS")
    host.send_raw(b"PING 84 *00\n")
    assert host.read_reply() == p.ErrorReply(None, 1, "BAD_CHECKSUM")
    host.send_raw(b"PING 85\n")
    assert host.read_reply() == p.ErrorReply(None, 6, "BAD_FRAME")
    host.send_raw(b"PING " + b"9" * 60 + b"\n")
    assert host.read_reply() == p.ErrorReply(None, 5, "LINE_TOO_LONG")
    state = host.get()
    assert (state.bad_checksum, state.garbage, state.overflow) == (1, 1, 1)
    assert state.rejected == 9


def test_limits_configure_and_protect_setpoint(host):
    assert host.set(1500, 1500) == p.Ack(host.seq, (1500, 1500))
    seq = host.next_seq()
    assert host.request(p.Limits(seq, ((1600, 2500), (500, 2500)))) == p.ErrorReply(seq, 4, "OUT_OF_LIMITS")
    seq = host.next_seq()
    assert host.request(p.Limits(seq, ((600, 2400), (700, 2300)))) == p.LimitsReply(seq, ((600, 2400), (700, 2300)))
    assert host.set(600, 2300) == p.Ack(host.seq, (600, 2300))
    assert host.set(599, 2300).code == p.ErrorCode.OUT_OF_LIMITS
    hello = host.request(p.Hello(host.next_seq()))
    assert hello.limits == ((600, 2400), (700, 2300))


def test_detach_stops_pulses_and_attach_resumes(sim, host):
    assert host.set(1300, 1700) == p.Ack(host.seq, (1300, 1700))
    sim.wait_pulses(sim.pulse_mark(), 2)
    assert host.request(p.Detach(host.next_seq())) == p.Ack(host.seq, (0, 0))
    assert sim.wait_quiet(0.3)
    assert host.get().attached == (False, False)
    mark = sim.pulse_mark()
    assert host.request(p.Attach(host.next_seq())) == p.Ack(host.seq, (1300, 1700))
    widths = sim.wait_pulses(mark, 3)
    assert all(abs(w - 1300) <= TOLERANCE_US for w in widths[9])
    assert all(abs(w - 1700) <= TOLERANCE_US for w in widths[10])


def test_garbage_is_counted_and_the_stream_resyncs(sim, host):
    rng = random.Random(4)
    for _ in range(20):
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))).replace(b"\n", b"").replace(b"\r", b"") or b"?"
        host.send_raw(junk + b"\n")
        time.sleep(0.01)          # paced: stay below the 64-byte receive buffer
    # Every junk line is answered with one ERR (garbage, bad frame, too long, or bad checksum).
    errors = []
    while len(errors) < 20:
        reply = host.read_reply()
        assert reply is not None, f"only {len(errors)} error replies"
        errors.append(reply)
    assert all(isinstance(e, p.ErrorReply) and e.seq is None for e in errors)
    assert host.request(p.Ping(host.next_seq())) == p.Pong(host.seq)
    state = host.get()
    assert state.garbage + state.overflow + state.bad_checksum == 20
    assert host.set(1500, 1500) == p.Ack(host.seq, (1500, 1500))


def test_reset_mid_stream_reboots_with_defaults(sim, host):
    assert host.set(1400, 1600) == p.Ack(host.seq, (1400, 1600))
    host.send_raw(b"\x00junk\n")
    assert host.read_reply() == p.ErrorReply(None, 6, "BAD_FRAME")
    before = host.get()
    assert before.frames_ok >= 2 and before.garbage == 1
    resets = len(sim.resets())
    sim.control("RESET")
    # The port stays open, so the banner of the restarted firmware is seen.
    boot = None
    deadline = time.monotonic() + 10
    while boot is None and time.monotonic() < deadline:
        reply = host.read_reply(1.0)
        if isinstance(reply, p.Boot):
            boot = reply
    assert boot == p.Boot(p.PROTOCOL_VERSION, "robohal_planar", p.FIRMWARE_VERSION)
    assert sim.wait_for(lambda: len(sim.resets()) == resets + 1)
    assert sim.resets()[-1].endswith(" stdin")
    after = host.get()
    assert (after.frames_ok, after.garbage, after.rejected) == (1, 0, 0)
    assert after.setpoints_us == (0, 0) and after.attached == (False, False)
    assert after.uptime_ms < before.uptime_ms + 60000
    assert sim.wait_quiet(0.3)


def test_watchdog_detach_stops_pulses_after_host_silence(sim, host):
    seq = host.next_seq()
    assert host.request(p.Watchdog(seq, 500, "detach")) == p.WatchdogReply(seq, 500, "detach")
    assert host.set(1500, 1500) == p.Ack(host.seq, (1500, 1500))
    # Frames ten times more often than the timeout keep it fed: no trip.
    for _ in range(12):
        assert host.request(p.Ping(host.next_seq())) == p.Pong(host.seq)
        time.sleep(0.05)
    assert host.get().watchdog_trips == 0
    assert sim.wait_pulses(sim.pulse_mark(), 3)
    # Silence: the firmware trips, says so, and the pins go quiet.
    event = host.read_reply(timeout=5)
    assert event == p.Event("WDT", "detach")
    assert sim.wait_quiet(0.3)
    state = host.get()
    assert state.attached == (False, False) and state.watchdog_trips == 1
    assert state.setpoints_us == (1500, 1500)
    # The next SET brings the servos back.
    mark = sim.pulse_mark()
    assert host.set(1600, 1600) == p.Ack(host.seq, (1600, 1600))
    assert sim.wait_pulses(mark, 3)


def test_watchdog_hold_keeps_pulsing(sim, host):
    seq = host.next_seq()
    assert host.request(p.Watchdog(seq, 100, "hold")) == p.WatchdogReply(seq, 100, "hold")
    assert host.set(1100, 1900) == p.Ack(host.seq, (1100, 1900))
    assert host.read_reply(timeout=5) == p.Event("WDT", "hold")
    mark = sim.pulse_mark()
    widths = sim.wait_pulses(mark, 10)
    assert all(abs(w - 1100) <= TOLERANCE_US for w in widths[9])
    assert all(abs(w - 1900) <= TOLERANCE_US for w in widths[10])
    state = host.get()
    assert state.attached == (True, True) and state.watchdog_trips == 1


def test_watchdog_off_never_trips(sim, host):
    seq = host.next_seq()
    assert host.request(p.Watchdog(seq, 0, "detach")) == p.WatchdogReply(seq, 0, "detach")
    assert host.set(1500, 1500) == p.Ack(host.seq, (1500, 1500))
    assert host.read_reply(timeout=1.5) is None
    assert host.get().attached == (True, True)


def test_burst_of_200_paced_commands_all_acknowledged(sim, host):
    host.request(p.Limits(host.next_seq(), ((500, 2500), (500, 2500))))
    start = host.get().frames_ok
    for i in range(200):
        widths = (500 + (i * 37) % 2001, 2500 - (i * 53) % 2001)
        reply = host.set(*widths)
        assert reply == p.Ack(host.seq, widths), (i, reply)
    state = host.get()
    assert state.frames_ok == start + 201
    assert (state.bad_checksum, state.garbage, state.overflow, state.rejected) == (0, 0, 0, 0)


def test_sequence_numbers_wrap(host):
    for seq in (65534, 65535, 0):
        assert host.request(p.Ping(seq)) == p.Pong(seq)


@pytest.mark.slow
def test_reset_on_open_holds_the_mcu_through_the_boot_delay(sim_kind, sim_factory, connect):
    boot_s = 1.0
    sim = sim_factory(sim_kind, boot_ms=int(boot_s * 1000))
    time.sleep(0.2)
    assert sim.resets() == [], "the MCU ran before the port was opened"
    opened = time.monotonic()
    host = connect(sim, handshake=False)
    host.send_raw(b"\n" + p.Ping(1).encode())      # lands in the boot delay: nobody hears it
    reply = host.read_reply(timeout=0.3)
    # A reply is only wrong if it came within the boot delay (a stalled test process may send late).
    assert reply is None or time.monotonic() - opened > boot_s, reply
    host.handshake()
    assert [r.split()[-1] for r in sim.resets()] == ["open"]
    assert host.set(1500, 1500) == p.Ack(host.seq, (1500, 1500))

    # Reopening the port resets the board again, as DTR does on an Uno.
    host.port.close()
    again = connect(sim)
    assert sim.wait_for(lambda: len(sim.resets()) == 2)
    state = again.get()
    assert state.setpoints_us == (0, 0) and state.attached == (False, False)


def test_fault_injection_control_lines(sim, host):
    # Noise toward the host arrives as an undecodable line; the link carries on.
    sim.control("INJECT_TX " + b"\x00\xffnoise\n".hex())
    with pytest.raises(p.FrameError):
        p.decode_reply(host.read_line())
    # Bytes injected toward the MCU are heard as if the host had sent them.
    sim.control("INJECT_RX " + p.Ping(4242).encode().hex())
    assert host.read_reply() == p.Pong(4242)
    # Lost host bytes corrupt the next frame, which is refused and counted.
    sim.control("DROP_RX 3")
    marker = p.Event("MARK", "1")                     # control lines run in order: once the marker
    sim.control("INJECT_TX " + marker.encode().hex())  # is here, DROP_RX is in force
    assert host.read_reply() == marker
    host.send_raw(p.Ping(7).encode())                 # "G 7 *.." reaches the MCU
    assert host.read_reply() == p.ErrorReply(None, 1, "BAD_CHECKSUM")
    assert host.request(p.Ping(8)) == p.Pong(8)
    assert host.get().bad_checksum == 1


def test_streaming_setpoints_keeps_the_50hz_frame(sim, host):
    host.request(p.Limits(host.next_seq(), ((500, 2500), (500, 2500))))
    mark = sim.pulse_mark()
    for i in range(100):
        w = 500 + (i * 97) % 2001
        assert host.set(w, 3000 - w) == p.Ack(host.seq, (w, 3000 - w))
    sim.wait_pulses(mark, 10)
    periods = [b - a for a, b in pairwise(sim.pulse_times_since(mark, 9))]
    # New widths never start an extra pulse: one pulse per 20 ms frame, however fast SETs come.
    assert len(periods) >= 5 and all(d >= 19_990 for d in periods), periods
    assert abs(statistics.median(periods) - 20_000) <= 5


@pytest.mark.slow
def test_a_burst_without_waiting_overruns_the_receive_buffer(sim, host):
    # One command in flight is the rule: 40 GETs at once outrun the 64-byte receive ring while the
    # long STATE replies drain at 115200 baud, so bytes are lost, as on the board.
    host.send_raw(b"".join(p.Get(i).encode() for i in range(1000, 1040)))
    replies = []
    while (reply := host.read_reply(timeout=3.0)) is not None:
        replies.append(reply)
        if getattr(reply, "seq", None) == 1039:
            break                                     # the last command's reply: nothing follows
    states = [r for r in replies if isinstance(r, p.State)]
    errors = [r for r in replies if isinstance(r, p.ErrorReply)]
    assert 0 < len(states) < 40 and errors
    assert {e.name for e in errors} <= {"BAD_CHECKSUM", "BAD_FRAME", "LINE_TOO_LONG", "BAD_ARGS", "UNKNOWN_CMD"}
    # The link recovers at the next newline (which may first end a half-received line: one ERR).
    seq = host.next_seq()
    host.send_raw(b"\n" + p.Ping(seq).encode())
    while (reply := host.read_reply(timeout=5.0)) != p.Pong(seq):
        if isinstance(reply, p.State) and 1000 <= reply.seq < 1040:
            continue  # a burst reply that came after the wait above gave up (a slow, loaded machine)
        assert isinstance(reply, p.ErrorReply), reply
        errors.append(reply)
    state = host.get()
    assert state.bad_checksum + state.garbage + state.overflow + state.rejected == len(errors)
