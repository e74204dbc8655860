"""StandardFirmata without reflashing: the Firmata codec, the simulated board's Servo-library rules,
pyfirmata2 (a client no one here wrote) driving the simulated board as a real one, and the
arduino-firmata backend's checks at connect."""

from __future__ import annotations

import itertools
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import robohal
from robohal.errors import ConnectFailed, InvalidArgument, ProtocolError
from robohal.sim.process import parse_ready_line
from robohal_arduino_planar import firmata_wire as fw
from robohal_arduino_planar.arms import ARMS
from robohal_arduino_planar.firmata_backend import representable_range
from robohal_arduino_planar.firmata_board import StandardFirmata

from .conftest import SimProcess, _src_env

MEARM = (ARMS / "mearm.toml").read_text()


def board_command(*extra: str) -> list[str]:
    return [sys.executable, "-m", "robohal_arduino_planar.simulator", "--firmware", "firmata", "--boot-ms", "50",
            "--pulses", "1", *extra]


@pytest.fixture
def board(request) -> SimProcess:
    sim = SimProcess(board_command(), env=_src_env())
    request.addfinalizer(sim.stop)
    return sim


# The codec ----------------------------------------------------------------------------------------


def test_messages_have_their_documented_bytes():
    assert fw.set_pin_mode(9, fw.MODE_SERVO) == bytes([0xF4, 9, 4])
    assert fw.servo_config(9, 544, 2400) == bytes([0xF0, 0x70, 9, 544 & 0x7F, 544 >> 7, 2400 & 0x7F, 2400 >> 7, 0xF7])
    assert fw.servo_write(9, 1500) == bytes([0xE9, 1500 & 0x7F, 1500 >> 7])
    assert fw.servo_write(16, 1500) == bytes([0xF0, 0x6F, 16, 1500 & 0x7F, 1500 >> 7, 0xF7])  # above pin 15
    assert fw.sampling_interval(19) == bytes([0xF0, 0x7A, 19, 0, 0xF7])
    assert (fw.firmware_query(), fw.capability_query(), fw.version_query()) == (b"\xf0\x79\xf7", b"\xf0\x6b\xf7", b"\xf9")


def test_the_parser_splits_a_stream_either_way_and_drops_stray_bytes():
    board_side = fw.Parser(from_host=True)
    messages = board_side.feed(b"\x05" + fw.version_query() + fw.servo_write(9, 1234) + fw.servo_write(17, 2000)
                               + fw.servo_config(3, 600, 2300))
    assert [(m.kind, m.pin, m.value) for m in messages[:3]] == [("version", None, None), ("analog", 9, 1234),
                                                               ("analog", 17, 2000)]
    assert fw.decode_servo_config(messages[3]) == (3, 600, 2300) and board_side.dropped == 1
    host_side = fw.Parser()
    sketch = StandardFirmata()
    found = host_side.feed(sketch.banner() + sketch.capabilities())
    assert found[0].data == bytes([2, 6]) and fw.decode_firmware(found[1]) == (2, 5, "StandardFirmata.ino")
    pins = fw.decode_capabilities(found[2])
    assert len(pins) == 20 and pins[0] == {} and pins[1] == {}  # the serial port's pins
    assert pins[9][fw.MODE_SERVO] == 14 and pins[14][fw.MODE_ANALOG] == 10


# The Servo library, as StandardFirmata drives it ----------------------------------------------------


def sketch_with_servo(pin: int, config: tuple[int, int] | None = None) -> StandardFirmata:
    sketch = StandardFirmata()
    message = fw.Parser(from_host=True).feed(fw.servo_config(pin, *config) if config else fw.set_pin_mode(pin, 4))[0]
    sketch.handle(message)
    return sketch


def write(sketch: StandardFirmata, pin: int, value: int) -> int:
    sketch.handle(fw.Parser(from_host=True).feed(fw.servo_write(pin, value))[0])
    return dict(sketch.pulses())[pin]


def test_an_attached_servo_pulses_1500_us_until_written_and_values_below_544_are_degrees():
    sketch = sketch_with_servo(9)
    assert sketch.pulses() == [(9, 1500)]
    assert write(sketch, 9, 0) == 544 and write(sketch, 9, 180) == 2400 and write(sketch, 9, 90) == 1472
    assert write(sketch, 9, 543) == 2400  # 543 is "degrees", clamped to 180
    assert write(sketch, 9, 544) == 544 and write(sketch, 9, 1234) == 1234 and write(sketch, 9, 3000) == 2400


def test_a_servo_config_range_is_kept_in_4_us_steps_and_wraps_outside_a_signed_byte():
    sketch = sketch_with_servo(10, (1001, 2000))
    assert write(sketch, 10, 600) == 1000  # min rounded to 1000 (544 + 4 * 114), microseconds clamped to it
    wrapped = sketch_with_servo(10, (1100, 2000))  # (544 - 1100) / 4 = -139: no signed byte holds it
    assert write(wrapped, 10, 800) == 800, "the wrapped minimum lets 800 us through"
    assert representable_range(1100, 1950) == (1052, 1952) and representable_range(760, 2400) == (760, 2400)


def test_twelve_servos_at_most():
    sketch = StandardFirmata()
    parser = fw.Parser(from_host=True)
    replies = [sketch.handle(parser.feed(fw.set_pin_mode(pin, 4))[0]) for pin in range(2, 15)]
    assert len(sketch.pulses()) == 12
    assert fw.decode_string(fw.Parser().feed(replies[-1])[0]) == "Max servos attached"


# pyfirmata2 ---------------------------------------------------------------------------------------------


def test_pyfirmata2_drives_the_simulated_board_as_a_real_one(board):
    pyfirmata2 = pytest.importorskip("pyfirmata2")
    arduino = pyfirmata2.Arduino(board.pty_path)  # the fixed Uno layout, after its 5 s wait for the reset
    try:
        assert arduino.firmware == "StandardFirmata.ino" and arduino.get_firmata_version() == (2, 6)
        servo = arduino.get_pin("d:9:s")  # servo config with the library's range, then 0 deg
        for value, width in ((90, 1472), (1234, 1234), (10, 647)):
            mark = board.pulse_mark()
            servo.write(value)
            assert board.wait_for(lambda w=width, m=mark: [x for t, pin, x in board.pulses[m:] if pin == 9][-3:]
                                  == [w] * 3), f"{value} never became {width} us on D9"
    finally:
        arduino.exit()


# The backend --------------------------------------------------------------------------------------------


def arm_uri(tmp_path: Path, monkeypatch, text: str, scheme_uri: str) -> str:
    (tmp_path / "myarm.toml").write_text(text.replace('name = "mearm"', 'name = "myarm"'))
    monkeypatch.setenv("ROBOHAL_MODEL_PATH", str(tmp_path))
    from robohal.plugins.registry import set_default_registry

    set_default_registry(None)  # the new arm file's model
    return scheme_uri


def test_a_pin_without_servo_capability_is_refused_at_connect(board, tmp_path, monkeypatch):
    uri = arm_uri(tmp_path, monkeypatch, MEARM.replace("pin = 9 ", "pin = 1 "),
                  f"arduino-firmata://{board.pty_path}?arm=myarm&boot=1")
    try:
        with pytest.raises(ProtocolError, match=r"pin 1 \(elbow in myarm.toml\) has no servo capability"):
            robohal.connect(uri)
    finally:
        from robohal.plugins.registry import set_default_registry

        set_default_registry(None)


def test_pulses_below_544_us_are_refused_before_anything_opens(tmp_path, monkeypatch):
    uri = arm_uri(tmp_path, monkeypatch, MEARM.replace("min_us = 760", "min_us = 520"),
                  "arduino-firmata:///dev/null?arm=myarm")
    try:
        with pytest.raises(InvalidArgument, match="taken as an angle in degrees"):
            robohal.connect(uri)
    finally:
        from robohal.plugins.registry import set_default_registry

        set_default_registry(None)


def test_a_board_that_answers_nothing_is_no_firmata_board(request):
    # the robohal firmware's emulator speaks text at 115200: no Firmata answer comes
    sim = SimProcess([sys.executable, "-m", "robohal_arduino_planar.simulator", "--firmware", "emulator",
                      "--boot-ms", "50"], env=_src_env())
    request.addfinalizer(sim.stop)
    with pytest.raises(ConnectFailed, match="no Firmata answer"):
        robohal.connect(f"arduino-firmata://{sim.pty_path}?arm=mearm&boot=0.3")


def test_the_arm_moves_on_the_simulated_board_and_every_pin_pulses_its_calibrated_width():
    with robohal.connect("arduino-firmata://sim?arm=mearm") as robot:
        sim = robot.simulator
        target = np.radians([25.0, -20.0, -30.0])
        assert robot.move_joints(target, speed=1.0).completed
        calibration = robot.backend.calibration
        mark = sim.mark()
        for _ in range(5):
            robot.backend.cycle()
        for joint, pin in enumerate(robot.backend.pins):
            expected = calibration.servos[joint].to_us(target[joint])
            widths = [p.width_us for p in sim.wait_pulses(mark, 3, pin)]
            assert widths and all(abs(w - expected) <= 1.0 for w in widths[-3:]), (pin, expected, widths)
        assert robot.state.info["acknowledged"] is False
        assert robot.gripper.grasp(0.01) is True


def test_a_cycle_builds_its_bytes_before_its_tick_and_then_writes_only_the_widths_that_changed(monkeypatch):
    with robohal.connect("arduino-firmata://sim?arm=mearm&poll=1000") as robot:
        backend = robot.backend
        backend.cycle()  # every joint attached and written
        events: list[tuple] = []

        def spy(name, call):
            return lambda *args: (events.append((name,)), call(*args))[1]

        monkeypatch.setattr(fw, "servo_write", spy("encode", fw.servo_write))
        monkeypatch.setattr(backend._pacer, "wait", spy("tick", backend._pacer.wait))
        write = backend._write
        monkeypatch.setattr(backend, "_write", lambda data: (events.append(("write", bytes(data))), write(data))[1])
        q = backend.guard.last.copy()
        q[1] += 0.01
        backend.cycle(q)
        width = backend.calibration.servos[1].to_us(q[1])
        assert events == [("encode",), ("tick",), ("write", bytes((0xE0 | backend.pins[1], width & 0x7F, width >> 7)))]


def test_a_silent_board_is_a_lost_link():
    with robohal.connect("arduino-firmata://sim?arm=mearm&poll=1&timeout=0.2") as robot:
        robot.simulator.control("RESET")  # held in reset: it answers nothing until it boots again
        with pytest.raises(robohal.errors.ConnectionLost, match="stopped answering"):
            for _ in range(100):
                robot.backend.cycle()


def test_robohal_sim_announces_a_firmata_board():
    proc = subprocess.Popen([sys.executable, "-m", "robohal_arduino_planar.simulator", "--firmware", "firmata"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_src_env())
    try:
        uri = parse_ready_line(proc.stdout.readline())
        assert uri is not None and uri.scheme == "arduino-firmata" and uri.path.startswith("/dev/pts/")
    finally:
        proc.stdin.close()
        proc.wait(10)
        proc.stdout.close()


def test_a_reset_mid_session_is_a_fault_naming_it_and_the_widths_are_held_again():
    """StandardFirmata's setup() reports its version and firmware unasked: a board that sends them
    mid-session has reset (a brownout) and forgot its servos."""
    with robohal.connect("arduino-firmata://sim?arm=mearm&sim_boot_ms=50") as robot:
        target = np.radians([20.0, -10.0, -20.0])
        assert robot.move_joints(target, speed=1.0).completed
        held = robot.state.info["pulses_us"]
        robot.simulator.control("RESET")
        with pytest.raises(robohal.HardwareFault, match=r"reset \(it sent StandardFirmata's start-up version and firmware report unasked\)") as fault:
            deadline = time.monotonic() + 10.0
            while time.monotonic() < deadline:  # streaming stops at the fault, never carries on
                robot.backend.cycle()
        assert fault.value.names == ("MCU_RESET",) and robot.backend.counters["resets"] == 1
        assert robot.recover().info["pulses_us"] == held
        mark = robot.simulator.mark()
        for pin, width in zip(robot.backend.pins, held, strict=True):
            widths = [pulse.width_us for pulse in robot.simulator.wait_pulses(mark, 3, pin)]
            assert widths and all(abs(w - width) <= 1.0 for w in widths), (pin, width, widths)
        for _ in range(30):
            robot.backend.cycle()  # one reset, counted once (its version and firmware report together)
        assert robot.backend.counters["resets"] == 1


def test_the_braccio_s_supply_is_ramped_in_before_any_servo_is_attached():
    """The Braccio library's soft start over Firmata: the pin's writes, 6 s of pulses at the
    library's duty (each one pin message long), then high; then the servos."""
    with robohal.connect("arduino-firmata://sim?arm=braccio") as robot:
        sim = robot.simulator
        assert robot.move_joints(np.radians([10.0, 0.0, 0.0, 0.0, 0.0]), speed=1.0).completed
        deadline = time.monotonic() + 5.0
        while not sim.writes and time.monotonic() < deadline:
            sim.wait_pulses(sim.mark(), 1, robot.backend.pins[0], timeout=0.5)
        writes = [(t, level) for t, pin, level in sim.pin_writes if pin == 12]
        levels = [level for _, level in writes]
        assert levels[0] == 0 and levels[-1] == 1 and all(a != b for a, b in itertools.pairwise(levels))
        rises = [t for t, level in writes if level == 1]
        falls = [t for t, level in writes[1:] if level == 0]
        assert 5.9 < rises[-1] - rises[0] < 6.5, "the ramp lasts the library's 6 s"
        high = np.array(falls) - np.array(rises[:len(falls)])
        low = np.array(rises[1:len(falls) + 1]) - np.array(falls)
        # medians, not sums: a host that preempts the board between a pulse's two writes
        # stretches that one pulse (once to a duty of 0.22 over the whole ramp)
        duty = np.median(high) / np.median(high + low)
        assert 0.10 < duty < 0.16, duty  # the library's 15 %, or softer where the host ran late
        first_servo = min(float(line.split()[1]) for line in sim.writes)
        assert first_servo > rises[-1]  # held high before any servo is attached
