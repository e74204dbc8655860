"""The tool servo on D6 (protocol 2: TOOL, TLIMITS) over the serial line, run against the real
firmware in simavr and against the emulator, as test_firmware_behaviour.py runs the arm's servos."""

from __future__ import annotations

import statistics
from itertools import pairwise

from robohal_arduino_planar import wire as p

TOOL = p.TOOL_PIN
TOLERANCE_US = 8.0


def tool(host, width: int) -> p.Reply:
    return host.request(p.Tool(host.next_seq(), width))


def settled_widths(sim, mark: int, count: int = 8) -> list[float]:
    """The tool's pulses after `mark`, once `count` of them came (the first may still be the old width)."""
    assert sim.wait_for(lambda: len(sim.pulses_since(mark, TOOL)) >= count), "too few pulses on D6"
    return sim.pulses_since(mark, TOOL)[2:]


def test_tool_widths_reach_d6_acknowledged_and_alone(sim, host):
    assert host.request(p.ToolLimits(host.next_seq(), (500, 2500))) == p.ToolLimitsReply(host.seq, (500, 2500))
    for width in (1500, 500, 2500, 1234):
        mark = sim.pulse_mark()
        assert tool(host, width) == p.ToolReply(host.seq, width)
        widths = settled_widths(sim, mark)
        assert all(abs(w - width) <= TOLERANCE_US for w in widths), (width, widths)
    assert not any(pin in p.SERVO_PINS for _, pin, _ in sim.pulses), "the arm's servos stayed detached"
    state = host.get()
    assert (state.tool_setpoint_us, state.tool_attached) == (1234, True)
    assert state.setpoints_us == (0, 0) and state.attached == (False, False)


def test_out_of_limits_tool_width_is_refused_and_changes_nothing(sim, host):
    assert tool(host, 1200) == p.ToolReply(host.seq, 1200)
    for bad in (999, 2001, 400, 65535):
        assert tool(host, bad) == p.ErrorReply(host.seq, p.ErrorCode.OUT_OF_LIMITS, "OUT_OF_LIMITS")
    widths = settled_widths(sim, sim.pulse_mark(), 5)
    assert all(abs(w - 1200) <= TOLERANCE_US for w in widths), widths
    state = host.get()
    assert state.tool_setpoint_us == 1200 and state.rejected == 4


def test_tool_limits_are_checked_like_the_arms(host):
    seq = host.next_seq()
    assert host.request(p.ToolLimits(seq, (400, 2000))) == p.ErrorReply(seq, 4, "OUT_OF_LIMITS")
    host.send_raw(p.encode_frame("TLIMITS", 90, 1500, 1500))
    assert host.read_reply() == p.ErrorReply(90, 3, "BAD_ARGS")
    host.send_raw(p.encode_frame("TOOL", 91))
    assert host.read_reply() == p.ErrorReply(91, 3, "BAD_ARGS")
    host.send_raw(p.encode_frame("TOOL", 92, "-5"))
    assert host.read_reply() == p.ErrorReply(92, 3, "BAD_ARGS")
    assert tool(host, 1800) == p.ToolReply(host.seq, 1800)
    seq = host.next_seq()  # the held width must stay legal
    assert host.request(p.ToolLimits(seq, (1000, 1700))) == p.ErrorReply(seq, 4, "OUT_OF_LIMITS")
    seq = host.next_seq()
    assert host.request(p.ToolLimits(seq, (1700, 1900))) == p.ToolLimitsReply(seq, (1700, 1900))
    assert tool(host, 1600) == p.ErrorReply(host.seq, 4, "OUT_OF_LIMITS")
    hello = host.request(p.Hello(host.next_seq()))
    assert hello.tool_limits == (1700, 1900) and hello.servos == 3


def test_tool_zero_and_detach_stop_its_pulses(sim, host):
    assert tool(host, 1300) == p.ToolReply(host.seq, 1300)
    assert settled_widths(sim, sim.pulse_mark(), 3)
    assert tool(host, 0) == p.ToolReply(host.seq, 0)
    assert sim.wait_quiet(0.3)
    state = host.get()
    assert (state.tool_setpoint_us, state.tool_attached) == (1300, False)  # remembered, not output
    assert tool(host, 1400) == p.ToolReply(host.seq, 1400)
    assert host.set(1500, 1500) == p.Ack(host.seq, (1500, 1500))
    assert host.request(p.Detach(host.next_seq())) == p.Ack(host.seq, (0, 0))
    assert sim.wait_quiet(0.3), "DETACH stops every servo, the tool too"
    assert host.get().tool_attached is False


def test_watchdog_detach_stops_the_tool_too(sim, host):
    seq = host.next_seq()
    assert host.request(p.Watchdog(seq, 300, "detach")) == p.WatchdogReply(seq, 300, "detach")
    assert tool(host, 1700) == p.ToolReply(host.seq, 1700)  # the tool alone arms the watchdog
    assert host.read_reply(timeout=5) == p.Event("WDT", "detach")
    assert sim.wait_quiet(0.3)
    state = host.get()
    assert state.tool_attached is False and state.watchdog_trips == 1


def test_tool_pulses_are_precise_beside_the_arm_and_the_serial_traffic(sim_factory, connect):
    """The tool's pulse is timed by interrupts (servo_tool.h), so another interrupt running when an
    edge is due delays that edge by its own length: the Arduino core's (Timer0, the serial port)
    take a few microseconds. Measured here against the arm's hardware pulses and while the host
    keeps the line busy: within 10 us always, within 1 us in the median, one per 20 ms frame."""
    sim = sim_factory("firmware")
    host = connect(sim)
    host.request(p.ToolLimits(host.next_seq(), (500, 2500)))
    assert host.set(1100, 1900) == p.Ack(host.seq, (1100, 1900))
    for width in (600, 1234, 2400):
        mark = sim.pulse_mark()
        assert tool(host, width) == p.ToolReply(host.seq, width)
        while len(sim.pulses_since(mark, TOOL)) < 30:
            host.get()  # serial interrupts both ways meanwhile
        widths = sim.pulses_since(mark, TOOL)[2:]
        assert all(width - 1 <= w <= width + 10 for w in widths), (width, sorted(widths)[:3], sorted(widths)[-3:])
        assert abs(statistics.median(widths) - width) <= 1.0, statistics.median(widths)
        times = sim.pulse_times_since(mark, TOOL)[2:]
        assert all(abs((b - a) - 20000) <= 12 for a, b in pairwise(times)), "one pulse per frame"
        # the arm's hardware pulses are untouched by the tool's interrupts
        for pin, target in zip(p.SERVO_PINS, (1100, 1900), strict=True):
            assert all(abs(w - target) <= 0.25 for w in sim.pulses_since(mark, pin)[2:])
