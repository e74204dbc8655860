"""The arduino-planar backend against the simulators (real processes on real ptys) and against
scripted peers on a pty: handshake through the boot delay, calibration on the wire, limits
refused before the wire, exclusive port, no firmware -> ConnectFailed, silence -> ConnectionLost, lost bytes resent, keepalive,
a firmware it does not know refused, and the sim URIs."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
import robohal
from robohal.errors import ConnectFailed, ConnectionLost, LimitViolation, ProtocolError, UriError
from robohal.plugins.registry import default_registry
from robohal.uri import RobotUri, parse_uri
from robohal_arduino_planar import firmware
from robohal_arduino_planar import wire as p
from robohal_arduino_planar.backend import ArduinoPlanarBackend
from robohal_arduino_planar.simulation import ArduinoSimulator, start_simulator

MODEL = "arduino.planar2"


@pytest.fixture
def model():
    return default_registry().get_model(MODEL)


@pytest.fixture
def emulator_factory() -> Iterator:
    """start(boot_ms=50) -> a running emulator, stopped when the test ends."""
    started: list[ArduinoSimulator] = []

    def make(boot_ms: int = 50, kind: str = "emulator") -> ArduinoSimulator:
        if kind == "simavr" and firmware.toolchain_missing():
            pytest.skip(firmware.toolchain_missing())
        sim = start_simulator(parse_uri(f"arduino-planar://sim?model={MODEL}&firmware={kind}&sim_boot_ms={boot_ms}"))
        started.append(sim)
        return sim

    yield make
    for sim in started:
        sim.stop()


def backend_for(sim: ArduinoSimulator, model, **params: str) -> ArduinoPlanarBackend:
    uri = RobotUri("arduino-planar", path=sim.pty_path, params={"model": MODEL, **params})
    return ArduinoPlanarBackend(uri, model)


def test_uri_errors_are_clear(model) -> None:
    for text, needle in [
        ("arduino-planar://?model=arduino.planar2", "serial device"),
        ("arduino-planar:///dev/x?rate=1000", "rate"),
        ("arduino-planar:///dev/x?watchdog_ms=20", "watchdog_ms"),
        ("arduino-planar:///dev/x?watchdog_action=explode", "watchdog_action"),
        ("arduino-planar:///dev/x?q0=0.1", "q0"),
    ]:
        with pytest.raises(UriError, match=needle):
            ArduinoPlanarBackend(parse_uri(text), model)
    with pytest.raises(UriError, match=r"simavr .* or emulator"):
        robohal.connect("arduino-planar://sim?firmware=qemu")


def test_a_backend_for_the_sim_uri_serves_a_plan_and_never_opens(model) -> None:
    """Built from `arduino-planar://sim` as written (a dry run's), it reads its rate, calibration
    and tool from the URI; connect() starts no simulator, so it has nothing to open."""
    with pytest.warns(RuntimeWarning, match="pulse limits do not cover"):
        backend = ArduinoPlanarBackend(parse_uri("arduino-planar://sim?rate=25&s1_min_us=1400&tool=pen"), model)
    assert backend.period == pytest.approx(0.04) and backend.tool == "pen"
    with pytest.raises(LimitViolation):
        backend.check_setpoints([[-0.5, 0.0]])  # below servo 1's 1400 us
    with pytest.raises(ConnectFailed, match=r"bundled simulator, which robohal\.connect starts"):
        backend.connect()


@pytest.mark.parametrize("kind", ["emulator", "simavr"])
def test_handshake_waits_out_the_boot_delay(emulator_factory, model, kind: str) -> None:
    sim = emulator_factory(boot_ms=800, kind=kind)
    backend = backend_for(sim, model, boot="3")
    began = time.monotonic()
    with backend:
        assert time.monotonic() - began >= 0.7  # it really waited for the board to boot
        assert backend.firmware is not None and backend.firmware.firmware == "robohal_planar"
        state = backend.read()
        assert np.allclose(state.q, 0.0) and state.info["attached"] == (False, False)
        state = backend.cycle([0.0, 0.0])
        assert state.info["pulses_us"] == (1500, 1500)


def test_boot_longer_than_the_budget_fails_the_connect(emulator_factory, model) -> None:
    sim = emulator_factory(boot_ms=3000)
    backend = backend_for(sim, model, boot="0.3", timeout="0.1")
    began = time.monotonic()
    with pytest.raises(ConnectFailed, match="boot="):
        backend.connect()
    assert time.monotonic() - began < 2.0
    assert not backend.connected


def test_calibration_reaches_the_wire_and_q_comes_back_from_the_acks(emulator_factory, model) -> None:
    sim = emulator_factory()
    # servo 1 centred at 1400 us needs the firmware's lower limit at 900: sent on connect
    backend = backend_for(sim, model, s1_offset_us="1400", s1_min_us="900", s2_dir="-1")
    with backend:
        q = backend.read().q
        for _ in range(60):  # towards (-pi/2, 0.3) within the velocity limit
            q = q + np.clip(np.array([-np.pi / 2, 0.3]) - q, -0.05, 0.05)
            state = backend.cycle(q)
        assert state.info["pulses_us"] == (900, 1500 - 95)
        assert np.allclose(state.q, [-np.pi / 2, 0.3], atol=backend.calibration.resolution / 2)
        assert backend.firmware_counters["rejected"] == 0


def test_width_outside_the_pulse_limits_never_reaches_the_wire(emulator_factory, model) -> None:
    sim = emulator_factory()
    with pytest.warns(RuntimeWarning, match="do not cover"):
        backend = backend_for(sim, model, s1_max_us="1550")
    with backend:
        for q1 in (0.0, 0.05, 0.1, 0.15):
            backend.cycle([q1, 0.0])
        sent = backend.counters["bytes_sent"]
        with pytest.raises(LimitViolation, match="1550"):
            backend.cycle([0.16, 0.0])  # inside the model's limits, outside the servo's pulse limits
        assert backend.counters["bytes_sent"] == sent
        assert backend.cycle().info["pulses_us"] == (1548, 1500)


def test_port_is_exclusive(emulator_factory, model) -> None:
    sim = emulator_factory()
    with backend_for(sim, model):
        with pytest.raises(ConnectFailed, match="cannot open"):
            backend_for(sim, model).connect()


def test_silence_is_connection_lost_and_recover_reconnects(emulator_factory, model) -> None:
    sim = emulator_factory()
    backend = backend_for(sim, model, timeout="0.2", retries="1", boot="0.3")
    with backend:
        backend.cycle([0.0, 0.0])
        sim.control("DROP_RX 200")  # the board hears nothing for a while
        began = time.monotonic()
        with pytest.raises(ConnectionLost, match="stopped answering"):
            for _ in range(5):
                backend.cycle()
        assert time.monotonic() - began < 5.0
        for _attempt in range(10):  # the line comes back: recover() reconnects
            try:
                state = backend.recover()
                break
            except ConnectionLost:
                continue
        else:
            pytest.fail("recover() never reconnected")
        assert np.allclose(state.q, 0.0, atol=backend.calibration.resolution)
        assert backend.cycle().info["pulses_us"] == (1500, 1500)


def test_lost_bytes_are_resent_without_an_error(emulator_factory, model) -> None:
    sim = emulator_factory()
    with backend_for(sim, model, timeout="0.2") as backend:
        backend.cycle([0.0, 0.0])
        sim.control("DROP_RX 5")  # part of the next command is lost on the line
        time.sleep(0.1)
        q = np.array([0.0, 0.0])
        for _ in range(10):
            q = q + 0.01
            state = backend.cycle(q)
        assert backend.counters["resends"] >= 1
        assert np.allclose(state.q, q, atol=backend.calibration.resolution)


def test_keepalive_holds_off_the_watchdog_while_idle(emulator_factory, model) -> None:
    sim = emulator_factory()
    with backend_for(sim, model, watchdog_ms="200", poll="1") as backend:
        backend.cycle([0.05, 0.05])
        time.sleep(1.0)  # idle host, alive process
        state = backend.cycle()
        assert backend.counters["keepalive_pings"] >= 3
        assert backend.firmware_counters["watchdog_trips"] == 0
        assert state.info["attached"] == (True, True)


class ScriptedBoard:
    """A peer on a real pty that answers HELLO with a given reply line after some noise."""

    def __init__(self, hello_fields: str) -> None:
        self.master, slave = os.openpty()
        self.path = os.ttyname(slave)
        self._slave = slave
        self.hello_fields = hello_fields
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        splitter = p.LineSplitter()
        os.set_blocking(self.master, False)
        while not self._stop.wait(0.005):
            try:
                data = os.read(self.master, 1024)
            except BlockingIOError:
                continue
            except OSError:
                return
            for line in splitter.feed(data):
                try:
                    command = p.decode_command(line)
                except p.FrameError:
                    continue
                if isinstance(command, p.Hello):
                    os.write(self.master, b"\xff\x00noise\n" + p.encode_frame("HELLO", command.seq, *self.hello_fields.split()))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        os.close(self.master)
        os.close(self._slave)


def test_unknown_firmware_is_refused(model, caplog) -> None:
    board = ScriptedBoard("1 grbl 1.1 2 1000 2000 1000 2000 1000 detach")
    try:
        backend = ArduinoPlanarBackend(RobotUri("arduino-planar", path=board.path, params={"model": MODEL}), model)
        with caplog.at_level(logging.WARNING, logger="robohal"), pytest.raises(ProtocolError, match="grbl"):
            backend.connect()
        assert backend.counters["garbage_lines"] >= 1
        told = [r.getMessage() for r in caplog.records if "not a frame" in r.getMessage()]
        assert len(told) == 1 and "noise" in told[0]  # the first is said, the rest counted
        assert not backend.connected
    finally:
        board.close()


def test_firmware_of_protocol_1_is_refused_by_name(model) -> None:
    board = ScriptedBoard("1 robohal_planar 1.0.0 2 1000 2000 1000 2000 1000 detach")
    try:
        backend = ArduinoPlanarBackend(RobotUri("arduino-planar", path=board.path, params={"model": MODEL}), model)
        with pytest.raises(ProtocolError, match=r"robohal_planar 1.0.0 \(protocol 1, 2 servos\).*protocol 2 with 3"):
            backend.connect()
    finally:
        board.close()


def test_sim_uri_runs_the_emulator_and_passes_backend_parameters() -> None:
    with robohal.connect("arduino-planar://sim?firmware=emulator&s2_dir=-1&sim_boot_ms=100") as robot:
        assert robot.backend.device.startswith("/dev/")
        assert robot.backend.calibration.servos[1].direction == -1
        assert robot.simulator.kind == "emulator"
        # the program's option from sim_boot_ms; the concrete URI keeps neither firmware= nor sim_*
        assert robot.simulator.argv[1:] == ["-m", "robohal_arduino_planar.simulator", "--firmware", "emulator",
                                            "--pulses", "1", "--boot-ms", "100"]
        assert robot.simulator.uri == RobotUri("arduino-planar", path=robot.backend.device,
                                               params={"model": MODEL, "s2_dir": "-1", "tool": "gripper"})
        assert robot.move_joints([0.2, 0.2], speed=1.0).completed
        assert robot.state.info["pulses_us"] == (1564, 1436)


def test_without_the_toolchain_hil_defaults_to_the_emulator_and_simavr_names_the_fix(monkeypatch) -> None:
    import robohal_arduino_planar as plugin
    from robohal.sim.process import SimulatorError

    monkeypatch.setenv("PATH", "/nonexistent")  # no avr-gcc, no make, no cc
    plugin.toolchain_present.cache_clear()
    try:
        assert plugin.hil_targets() == (plugin.EMULATOR_TARGET,)
        with pytest.raises(SimulatorError, match="make avr-deps"):
            start_simulator(parse_uri(plugin.SIMAVR_TARGET))
    finally:
        monkeypatch.undo()
        plugin.toolchain_present.cache_clear()
    if firmware.toolchain_missing() is None:
        assert plugin.hil_targets() == (plugin.SIMAVR_TARGET, plugin.EMULATOR_TARGET)


def test_an_ack_with_other_widths_than_the_set_is_not_a_measurement(emulator_factory, model) -> None:
    """The firmware applies a SET exactly or refuses it. An ACK for the SET in flight that
    echoes other widths (here forged on the line, CRC and seq right, widths out of the
    servo limits) is refused, never taken as the measured position."""
    sim = emulator_factory()
    with backend_for(sim, model) as backend:
        q = backend.read().q
        with pytest.raises(ProtocolError, match="acknowledged with widths"):
            for _ in range(200):
                forged = p.Ack((backend._seq + 1) % p.SEQ_MODULO, (2400, 600))
                sim.control("INJECT_TX " + forged.encode().hex())
                state = backend.cycle(q)
                assert model.limits.within(state.q), "a forged echo became the measured position"
        assert backend.counters["ack_mismatches"] >= 1
        assert model.limits.within(backend.read().q)
