"""The planar-arm protocol codec: round trips, the wire bytes the firmware really sends, checksum
strength, and robustness against arbitrary bytes."""

from __future__ import annotations

import random

import pytest
from robohal_arduino_planar import wire as p

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # the seeded fuzz tests below still run
    given = None

COMMANDS = [
    p.Hello(0), p.Ping(65535), p.Set(7, 1500, 1200), p.Get(8), p.Watchdog(9, 0, "detach"),
    p.Watchdog(10, 60000, "hold"), p.Limits(11, ((500, 2500), (600, 2400))), p.Attach(12), p.Detach(13),
    p.Tool(14, 1234), p.Tool(15, 0), p.ToolLimits(16, (600, 2400)),
]
REPLIES = [
    p.HelloReply(1, 2, "robohal_planar", "2.0.0", 3, ((1000, 2000), (1000, 2000)), (900, 2100), 1000, "detach"),
    p.Pong(2), p.Ack(3, (1500, 0)),
    p.State(4, (1500, 1200), 1100, (True, False), True, 200, "hold", 1, 2**32 - 1, 0, 3, 4, 5, 123456),
    p.ToolReply(8, 1234), p.ToolReply(9, 0), p.ToolLimitsReply(10, (600, 2400)),
    p.WatchdogReply(5, 250, "detach"), p.LimitsReply(6, ((500, 2500), (700, 2300))),
    p.ErrorReply(7, 4, "OUT_OF_LIMITS"), p.ErrorReply(None, 1, "BAD_CHECKSUM"),
    p.Boot(2, "robohal_planar", "2.0.0"), p.Event("WDT", "detach"),
]
# Lines captured from the firmware running in simavr.
FIRMWARE_LINES = {
    b"BOOT - 2 robohal_planar 2.0.0 *AB\n": p.Boot(2, "robohal_planar", "2.0.0"),
    b"HELLO 1 2 robohal_planar 2.0.0 3 1000 2000 1000 2000 1000 2000 1000 detach *56\n":
        p.HelloReply(1, 2, "robohal_planar", "2.0.0", 3, ((1000, 2000), (1000, 2000)), (1000, 2000), 1000, "detach"),
    b"TOOL 2 1234 *FB\n": p.ToolReply(2, 1234),
    b"TOOL 7 0 *95\n": p.ToolReply(7, 0),
    b"TLIMITS 4 600 2400 *4D\n": p.ToolLimitsReply(4, (600, 2400)),
    b"PONG 2 *63\n": p.Pong(2),
    b"ACK 3 1500 1200 *1B\n": p.Ack(3, (1500, 1200)),
    b"ERR 5 4 OUT_OF_LIMITS *03\n": p.ErrorReply(5, 4, "OUT_OF_LIMITS"),
    b"LIMITS 6 500 2500 600 2400 *DC\n": p.LimitsReply(6, ((500, 2500), (600, 2400))),
    b"WDOG 7 200 hold *59\n": p.WatchdogReply(7, 200, "hold"),
    b"EVT - WDT hold *C0\n": p.Event("WDT", "hold"),
    b"ERR - 6 BAD_FRAME *C6\n": p.ErrorReply(None, 6, "BAD_FRAME"),
    b"STATE 6 1500 1200 1234 1 1 1 1000 detach 0 6 0 0 0 1 30 *B1\n":
        p.State(6, (1500, 1200), 1234, (True, True), True, 1000, "detach", 0, 6, 0, 0, 0, 1, 30),
}


def test_crc8_is_crc8_smbus():
    assert p.crc8(b"123456789") == 0xF4      # the catalogued check value
    assert p.crc8(b"") == 0


def test_frame_layout():
    assert p.Set(3, 1500, 1200).encode() == b"SET 3 1500 1200 *7A\n"
    assert p.encode_frame("PING", 1) == b"PING 1 *%02X\n" % p.crc8(b"PING 1 ")


@pytest.mark.parametrize("command", COMMANDS, ids=repr)
def test_command_round_trip(command):
    wire = command.encode()
    assert len(wire) <= p.MAX_COMMAND_LINE + 1 < 64
    assert p.decode_command(wire) == command


@pytest.mark.parametrize("reply", REPLIES, ids=repr)
def test_reply_round_trip(reply):
    assert p.decode_reply(reply.encode()) == reply


@pytest.mark.parametrize("wire", list(FIRMWARE_LINES), ids=lambda w: w[:12].decode())
def test_decodes_and_reproduces_firmware_lines(wire):
    assert p.decode_reply(wire) == FIRMWARE_LINES[wire]
    assert FIRMWARE_LINES[wire].encode() == wire


def test_longest_command_fits_the_receive_buffer():
    longest = p.Limits(65535, ((2500, 2500), (2500, 2500))).encode()
    assert len(longest) <= p.MAX_COMMAND_LINE + 1


@pytest.mark.parametrize("wire, decode", [(c.encode(), p.decode_command) for c in COMMANDS]
                         + [(r.encode(), p.decode_reply) for r in REPLIES])
def test_every_single_byte_corruption_of_the_body_is_rejected(wire, decode):
    # CRC-8 catches every error burst of up to 8 bits, so any change to one byte is caught.
    body_len = wire.rindex(b"*")
    for i in range(body_len):
        for flip in (0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x03, 0x5A, 0xFF):
            bad = bytearray(wire)
            bad[i] ^= flip
            with pytest.raises(p.FrameError) as info:
                decode(bytes(bad))
            assert info.value.code in (p.ErrorCode.BAD_CHECKSUM, p.ErrorCode.BAD_FRAME)


def test_checksum_trailer_corruption_is_rejected():
    wire = p.Ping(5).encode()
    star = wire.rindex(b"*")
    for i in (star + 1, star + 2):
        for c in b"0123456789ABCDEFGZ*-":
            if c == wire[i]:
                continue
            bad = bytearray(wire)
            bad[i] = c
            with pytest.raises(p.FrameError):
                p.decode_command(bytes(bad))
    with pytest.raises(p.FrameError) as info:
        p.decode_command(b"PING 5\n")
    assert info.value.code == p.ErrorCode.BAD_FRAME


def test_lowercase_checksum_is_accepted():
    assert p.decode_command(p.Ping(5).encode().lower().replace(b"ping", b"PING")) == p.Ping(5)


@pytest.mark.parametrize("tokens, code, seq", [
    (("JUMP", 1), p.ErrorCode.UNKNOWN_CMD, 1),
    (("PING",), p.ErrorCode.BAD_ARGS, None),
    (("PING", "x"), p.ErrorCode.BAD_ARGS, None),
    (("PING", 65536), p.ErrorCode.BAD_ARGS, None),
    (("PING", 1, 2), p.ErrorCode.BAD_ARGS, 1),
    (("SET", 2, 1500), p.ErrorCode.BAD_ARGS, 2),
    (("SET", 2, "-1", 1500), p.ErrorCode.BAD_ARGS, 2),
    (("SET", 2, "1500.0", 1500), p.ErrorCode.BAD_ARGS, 2),
    (("WDOG", 3, 49, "hold"), p.ErrorCode.BAD_ARGS, 3),
    (("WDOG", 3, 60001, "hold"), p.ErrorCode.BAD_ARGS, 3),
    (("WDOG", 3, 100, "HOLD"), p.ErrorCode.BAD_ARGS, 3),
    (("LIMITS", 4, 1500, 1500, 1000, 2000), p.ErrorCode.BAD_ARGS, 4),
    (("GET", 5, *range(7)), p.ErrorCode.BAD_ARGS, None),
])
def test_decode_command_refuses_like_the_firmware(tokens, code, seq):
    with pytest.raises(p.FrameError) as info:
        p.decode_command(p.encode_frame(*tokens))
    assert (info.value.code, info.value.seq) == (code, seq)


def test_overlong_command_line():
    with pytest.raises(p.FrameError) as info:
        p.decode_command(p.encode_frame("SET", 1, "0" * 40 + "1500", 1500))
    assert info.value.code == p.ErrorCode.LINE_TOO_LONG


@pytest.mark.parametrize("bad", [
    b"", b"\n", b"*00", b"PONG *", b"PONG - *%02X" % p.crc8(b"PONG - "), b"ACK 1 1500 *%02X" % p.crc8(b"ACK 1 1500 "),
    b"STATE 1 *%02X" % p.crc8(b"STATE 1 "), b"HELLO 1 x *%02X" % p.crc8(b"HELLO 1 x "),
    b"WOW 1 *%02X" % p.crc8(b"WOW 1 "), b"\xff\xfe*00", b"A" * 500,
])
def test_decode_reply_rejects_malformed(bad):
    with pytest.raises(p.FrameError):
        p.decode_reply(bad)


def test_encoders_refuse_bad_seq():
    with pytest.raises(ValueError):
        p.Ping(65536).encode()
    with pytest.raises(ValueError):
        p.Set(-1, 1500, 1500).encode()


def _decode_any(data: bytes) -> None:
    for decode in (p.decode_reply, p.decode_command):
        try:
            result = decode(data)
        except p.FrameError:
            continue
        assert result is not None


def test_seeded_random_bytes_never_crash_the_decoders():
    rng = random.Random(1234)
    alphabet = b"0123456789ABCDEF *-\nSETPINGACKHELLOSTATE\x00\xff"
    for _ in range(5000):
        n = rng.randrange(0, 80)
        if rng.random() < 0.5:
            data = bytes(rng.randrange(256) for _ in range(n))
        else:
            data = bytes(rng.choice(alphabet) for _ in range(n))
        _decode_any(data)
        # and the same bytes wrapped in a valid checksum, to reach the field parsers
        body = bytes(b for b in data if 0x20 <= b <= 0x7E)
        _decode_any(body + b"*%02X\n" % p.crc8(body))


def test_line_splitter():
    s = p.LineSplitter(max_len=10)
    assert s.feed(b"PONG 1 *") == []
    assert s.feed(b"63\nPO") == [b"PONG 1 *63"]
    assert s.feed(b"NG 2\n\n") == [b"PONG 2"]
    assert s.feed(b"X" * 50 + b"\nOK\n") == [b"X" * 10 + b"~", b"OK"]


def test_command_line_tool(capsys):
    assert p._main(["PING", "1"]) == 0
    assert capsys.readouterr().out.encode() == p.Ping(1).encode()


if given is not None:
    @settings(max_examples=300, deadline=None)
    @given(st.binary(max_size=200))
    def test_hypothesis_random_bytes_never_crash(data):
        _decode_any(data)

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=60))
    def test_hypothesis_checksummed_garbage_never_crashes(body):
        raw = body.encode()
        _decode_any(raw + b"*%02X\n" % p.crc8(raw))

    @settings(max_examples=200, deadline=None)
    @given(st.integers(0, 65535), st.integers(0, 65535), st.integers(0, 65535))
    def test_hypothesis_set_round_trip(seq, a, b):
        assert p.decode_command(p.Set(seq, a, b).encode()) == p.Set(seq, a, b)

    @settings(max_examples=200, deadline=None)
    @given(st.integers(0, 65535), st.integers(0, 255), st.integers(1, 255))
    def test_hypothesis_byte_corruption_detected(seq, position, flip):
        wire = bytearray(p.Set(seq, 1500, 1500).encode())
        i = position % wire.rindex(b"*")
        wire[i] ^= flip
        with pytest.raises(p.FrameError):
            p.decode_command(bytes(wire))
else:
    def test_hypothesis_available():
        pytest.skip("hypothesis is not installed; the seeded fuzz tests cover the decoders")
