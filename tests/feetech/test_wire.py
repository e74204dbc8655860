"""The STS codec: packets and checksums, sign-magnitude numbers both ways, and the frame parser
under noise (a hypothesis fuzz: it never raises, and finds every whole frame)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from robohal_feetech import registers, telemetry, wire


def test_packets_carry_the_checksum_of_their_body() -> None:
    assert wire.ping(1) == bytes.fromhex("ffff010201fb")  # ~(1 + 2 + 1) & 0xFF
    assert wire.read(3, 56, 2) == bytes.fromhex("ffff0304023802bc")  # ~(3+4+2+56+2) = ~67
    assert wire.status(1) == bytes.fromhex("ffff010200fc")
    body = wire.sync_write(42, 2, {1: b"\x00\x08", 2: b"\x01\x08"})[2:-1]
    assert wire.checksum(body) == wire.sync_write(42, 2, {1: b"\x00\x08", 2: b"\x01\x08"})[-1]
    assert wire.sync_read(56, 15, [1, 2, 3]) == bytes.fromhex("fffffe078238" + "0f010203") + bytes(
        [wire.checksum(bytes.fromhex("fe0782380f010203"))])


def test_sign_magnitude_both_ways() -> None:
    assert wire.encode_sign_magnitude(-5, 11) == 0x805
    assert wire.decode_sign_magnitude(0x805, 11) == -5
    assert wire.encode_sign_magnitude(2047, 11) == 2047
    assert wire.decode_sign_magnitude(0x8000 | 300, 15) == -300
    for value in range(-2047, 2048):
        assert wire.decode_sign_magnitude(wire.encode_sign_magnitude(value, 11), 11) == value


def test_a_magnitude_the_register_cannot_carry_is_refused_with_the_reason() -> None:
    with pytest.raises(wire.EncodingError, match=r"magnitude 2114 exceeds 2047: the sign is bit 11"):
        wire.encode_sign_magnitude(-2114, 11)
    with pytest.raises(wire.EncodingError, match="Homing_Offset = 2048"):
        registers.register("Homing_Offset").encode(2048)


def test_the_telemetry_block_decodes_as_the_control_table_says() -> None:
    table = registers.REGISTERS
    block = bytearray(registers.TELEMETRY_LENGTH)
    values = {"Present_Position": 4000, "Present_Velocity": -120, "Present_Load": -530, "Present_Voltage": 74,
              "Present_Temperature": 41, "Moving": 1, "Present_Current": -200}
    for name, value in values.items():
        reg = table[name]
        at = reg.address - registers.TELEMETRY_START
        block[at:at + reg.size] = reg.encode(value)
    assert registers.unpack(bytes(block), registers.TELEMETRY_START, tuple(values)) == values
    found = telemetry.reading(bytes(block), error=wire.ErrorBit.OVERLOAD | wire.ErrorBit.VOLTAGE)
    assert found.position == 4000 and found.moving
    assert found.velocity == pytest.approx(-120 * telemetry.RAD_PER_TICK)
    assert found.load == pytest.approx(-0.53) and found.voltage == pytest.approx(7.4)
    assert found.current == pytest.approx(-200 * 6.5e-3) and found.temperature == 41
    assert set(found.errors) == {"OVERLOAD", "VOLTAGE"}


def test_the_parser_finds_frames_between_noise_and_drops_a_corrupt_one() -> None:
    parser = wire.FrameParser()
    good = wire.status(2, 0, b"\x10\x20")
    bad = bytearray(wire.status(3, 0, b"\x01"))
    bad[-1] ^= 0xFF
    found = parser.feed(b"\x00\x13" + good[:4]) + parser.feed(good[4:] + bytes(bad) + wire.status(4))
    frames = [item for item in found if isinstance(item, wire.Frame)]
    assert [(f.servo_id, f.params) for f in frames] == [(2, b"\x10\x20"), (4, b"")]
    assert any(isinstance(item, wire.Corrupt) and item.reason == "checksum mismatch" for item in found)


frames = st.builds(lambda i, e, p: wire.status(i, e, p), st.integers(0, 0xFD), st.integers(0, 0x7F),
                   st.binary(max_size=20))


@settings(max_examples=400, deadline=None)
@given(noise=st.lists(st.binary(max_size=12), min_size=1, max_size=6), packets=st.lists(frames, max_size=5),
       cuts=st.lists(st.integers(1, 7), max_size=20))
def test_fuzz_the_parser_never_raises_and_finds_every_frame_after_clean_noise(noise, packets, cuts) -> None:
    stream = b"".join(noise[k % len(noise)] + packet for k, packet in enumerate(packets)) + noise[-1]
    parser = wire.FrameParser()
    found, at = [], 0
    for cut in cuts:  # in any slicing
        found += parser.feed(stream[at:at + cut])
        at += cut
    found += parser.feed(stream[at:])
    got = [item.encode() for item in found if isinstance(item, wire.Frame)]
    # noise without FF bytes cannot hide a frame: then every packet comes out, in order
    if not any(0xFF in n for n in noise):
        assert got == packets
    assert parser.pending <= len(stream)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_the_parser_takes_any_bytes(data) -> None:
    parser = wire.FrameParser()
    for item in parser.feed(data):
        assert isinstance(item, (wire.Frame, wire.Corrupt))
        if isinstance(item, wire.Frame):
            assert item.encode() in data
