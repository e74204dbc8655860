"""The simulated servo bus driven by the vendor's SDK (feetech-servo-sdk), a client no one here
wrote, through its pty as it drives real servos: ping, read, write, sync read and sync write; the
control table's encodings, the EEPROM lock across a power cycle, the baud rate, and the wire's
timing (an answer never comes sooner than its bytes take at 1 Mbps)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from robohal_feetech import wire
from robohal_feetech.registers import MODEL_NUMBER_STS3215

from .conftest import servo_stats, wait_for

scs = pytest.importorskip("scservo_sdk", reason="the vendor SDK: pip install feetech-servo-sdk")


@pytest.fixture(autouse=True)
def _pty_latency(monkeypatch) -> None:
    """The SDK waits 2 x its adapter's USB latency timer (16 ms) + 2 ms for an answer. Our bus is
    a pty between two processes: its latency is the host's scheduling, and a loaded host once held
    the simulator past those 34 ms (the SDK's COMM_RX_TIMEOUT in 3 of 20 runs). The SDK is given
    the timeout of an adapter whose latency timer is set to 100 ms: a late answer is still checked
    for what it says, and a missing one still times out."""
    monkeypatch.setattr(scs.port_handler, "LATENCY_TIMER", 100)


@pytest.fixture
def sdk(simulator):
    port = scs.PortHandler(simulator.pty_path)
    assert port.openPort() and port.setBaudRate(1_000_000)
    yield port, scs.PacketHandler(0), simulator
    port.closePort()


def test_ping_and_read_identify_six_sts3215(sdk) -> None:
    port, handler, _ = sdk
    for servo_id in range(1, 7):
        model, result, error = handler.ping(port, servo_id)
        assert (model, result, error) == (MODEL_NUMBER_STS3215, scs.COMM_SUCCESS, 0)
    assert handler.ping(port, 7)[1] == scs.COMM_RX_TIMEOUT  # nobody has id 7
    major, result, _ = handler.read1ByteTxRx(port, 1, 0)
    assert result == scs.COMM_SUCCESS and major == 3


def test_write_then_sync_read_and_sync_write_move_the_servos(sdk) -> None:
    port, handler, simulator = sdk
    reader = scs.GroupSyncRead(port, handler, 56, 15)
    for servo_id in range(1, 7):
        reader.addParam(servo_id)
    assert reader.txRxPacket() == scs.COMM_SUCCESS
    start = {i: reader.getData(i, 56, 2) for i in range(1, 7)}
    assert all(0 < p < 4096 for p in start.values())
    assert handler.getRxPacketError(0) == ""
    writer = scs.GroupSyncWrite(port, handler, 42, 2)
    goals = {i: start[i] + 150 for i in range(1, 6)}
    for servo_id, goal in goals.items():
        writer.addParam(servo_id, [scs.SCS_LOBYTE(goal), scs.SCS_HIBYTE(goal)])
    assert writer.txPacket() == scs.COMM_SUCCESS
    for servo_id in range(1, 6):
        assert handler.write1ByteTxRx(port, servo_id, 40, 1) == (scs.COMM_SUCCESS, 0)  # torque on

    def arrived() -> bool:
        assert reader.txRxPacket() == scs.COMM_SUCCESS
        return all(abs(reader.getData(i, 56, 2) - goals[i]) <= 2 for i in goals)

    assert wait_for(arrived, timeout=10.0)
    assert reader.getData(6, 56, 2) == start[6], "the jaw had no goal written and its torque off: it stays"
    assert servo_stats(simulator, 1)["goal"] == goals[1]


def test_signed_registers_are_sign_magnitude(sdk) -> None:
    port, handler, simulator = sdk
    assert handler.write1ByteTxRx(port, 2, 55, 0) == (scs.COMM_SUCCESS, 0)  # unlock
    raw = wire.encode_sign_magnitude(-300, 11)
    assert handler.write2ByteTxRx(port, 2, 31, raw) == (scs.COMM_SUCCESS, 0)
    value, result, _ = handler.read2ByteTxRx(port, 2, 31)
    assert result == scs.COMM_SUCCESS and scs.SCS_TOHOST(value, 11) == -300
    assert servo_stats(simulator, 2)["homing_offset"] == -300


def test_eeprom_written_under_the_lock_is_lost_at_power_off(sdk) -> None:
    port, handler, simulator = sdk
    handler.write1ByteTxRx(port, 3, 55, 1)  # locked (as from the factory)
    held = handler.read2ByteTxRx(port, 3, 9)[0]
    assert handler.write2ByteTxRx(port, 3, 9, 100)[0] == scs.COMM_SUCCESS  # takes effect ...
    assert handler.read2ByteTxRx(port, 3, 9)[0] == 100
    handler.write1ByteTxRx(port, 4, 55, 0)
    assert handler.write2ByteTxRx(port, 4, 9, 111)[0] == scs.COMM_SUCCESS
    simulator.control("POWER")
    assert wait_for(lambda: handler.read2ByteTxRx(port, 3, 9) == (held, scs.COMM_SUCCESS, 0))  # ... not saved
    assert handler.read2ByteTxRx(port, 4, 9)[0] == 111  # unlocked: saved
    assert handler.read1ByteTxRx(port, 4, 55)[0] == 1  # and the lock is back on


def test_the_answer_takes_the_wire_time_and_the_return_delay(sdk) -> None:
    """A sync read of six servos cannot be answered sooner than its bytes take at 1 Mbps plus
    the factory return delay of 500 us each (the simulator's promise to every client)."""
    port, handler, _ = sdk
    reader = scs.GroupSyncRead(port, handler, 56, 15)
    for servo_id in range(1, 7):
        reader.addParam(servo_id)
    floor = (14 + 6 * 21) * 10e-6 + 6 * 500e-6
    shortest = float("inf")
    for _ in range(20):
        began = time.perf_counter()
        assert reader.txRxPacket() == scs.COMM_SUCCESS
        shortest = min(shortest, time.perf_counter() - began)
    assert shortest >= floor


def test_the_simulator_wakes_when_a_packet_is_due(simulator) -> None:
    """Its status packets leave when the wire allows, not up to Linux's default timer slack
    (50 us) later: the program asks for 1 us."""
    slack = Path(f"/proc/{simulator.pid}/timerslack_ns")
    try:
        asked = int(slack.read_text())
    except FileNotFoundError:
        pytest.skip("no per-process timer slack here (Linux >= 4.6)")
    except PermissionError:
        pytest.skip("this system does not let a process read its child's timer slack (Yama's ptrace_scope)")
    assert asked == 1000


def test_a_client_at_another_baud_rate_hears_nothing(simulators) -> None:
    simulator = simulators(baud="115200")
    port = scs.PortHandler(simulator.pty_path)
    assert port.openPort() and port.setBaudRate(1_000_000)
    handler = scs.PacketHandler(0)
    try:
        assert handler.ping(port, 1)[1] == scs.COMM_RX_TIMEOUT
        assert port.setBaudRate(115_200)
        assert handler.ping(port, 1)[:2] == (MODEL_NUMBER_STS3215, scs.COMM_SUCCESS)
    finally:
        port.closePort()
