"""The feetech backend at connect and on its link: a bus at another baud rate, a wrong firmware,
a servo that does not answer, a calibration the servos do not hold are each refused with the
reason; lost and corrupted status packets are asked for again and counted; a servo that stops
answering is named; a status packet of the wrong length counts as corrupt; the state filled as
the answers come stays whole when an exchange fails half way; the rate is bounded by what the
wire carries."""

from __future__ import annotations

import json
import os
import select

import numpy as np
import pytest
import robohal
from robohal import ConnectFailed, ConnectionLost, ProtocolError, UriError
from robohal_feetech import wire
from robohal_feetech.backend import exchange_bytes, wire_limit
from robohal_feetech.bus import ServoBus, ServoSilent
from robohal_feetech.calibration import CalibrationError

from .conftest import wait_for


def connect(simulator, **params: str):
    query = "".join(f"&{key}={value}" for key, value in params.items())
    return robohal.connect(f"{simulator.uri}{query}")


def test_a_bus_at_another_baud_rate_is_named(simulators) -> None:
    simulator = simulators(baud="115200")
    uri = str(simulator.uri).replace("&baud=115200", "")
    with pytest.raises(ConnectFailed, match=r"answer at 115200 baud, not 1000000: add baud=115200 to the URI"):
        robohal.connect(uri)
    with robohal.connect(str(simulator.uri)) as robot:  # and at its own rate it connects
        assert robot.backend.baud == 115_200


def test_a_firmware_too_old_is_refused_naming_the_servo(simulators) -> None:
    simulator = simulators(firmware="3:2.9")
    with pytest.raises(ProtocolError, match=r"servo 3 \(elbow_flex\) runs firmware 2\.9; this arm needs 3\.0 or newer"):
        connect(simulator)


def test_a_servo_that_does_not_answer_at_connect_is_named(simulator) -> None:
    simulator.control("SILENT 4")
    with pytest.raises(ConnectFailed, match=r"servo 4 \(wrist_flex\) does not answer .* \(servos 1, 2, 3, 5, 6 do\)"):
        connect(simulator, retries="1")


def test_a_calibration_the_servos_do_not_hold_is_refused_with_the_fix(simulator, tmp_path) -> None:
    data = json.loads(open(simulator.uri.params["calibration"], encoding="utf-8").read())
    data["wrist_roll"]["homing_offset"] += 10
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data), encoding="utf-8")
    uri = str(simulator.uri).replace(simulator.uri.params["calibration"], str(other))
    with pytest.raises(CalibrationError, match=r"servo 5 \(wrist_roll\) holds homing offset .*robohal feetech"
                                               r" calibrate .* --apply"):
        robohal.connect(uri)


def test_no_calibration_names_the_command_that_makes_one(simulator, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    uri = str(simulator.uri).split("&calibration=")[0]
    with pytest.raises(ConnectFailed, match=r"no calibration for arm so101 .*robohal feetech calibrate"):
        robohal.connect(uri)


def test_a_missing_adapter_is_told_before_a_missing_calibration(tmp_path, monkeypatch) -> None:
    # calibrating needs the adapter too: sending a newcomer to calibrate first only fails there
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConnectFailed, match=r"cannot open .*no-adapter") as refused:
        robohal.connect(f"feetech://{tmp_path}/no-adapter?arm=so101")
    assert "calibration" not in str(refused.value)


def test_a_bad_parameter_is_told_of_the_uri_as_written() -> None:
    # not of the simulator's pty and calibration file, which the user never wrote
    with pytest.raises(UriError, match=r"^feetech://sim\?arm=so101&rate=abc: parameter rate='abc' is not a number$"):
        robohal.connect("feetech://sim?arm=so101&rate=abc")
    # nor of the model connect adds to it
    with pytest.raises(UriError, match=r"^feetech://dev/ttyACM0\?arm=so101: give the serial device as the path"):
        robohal.connect("feetech://dev/ttyACM0?arm=so101")


def test_lost_and_corrupted_status_packets_are_asked_again_and_counted(simulator) -> None:
    with connect(simulator) as robot:
        counters = robot.backend.counters
        simulator.control("DROP 1 2")
        simulator.control("CORRUPT 1 5")
        assert wait_for(lambda: counters["missing_status"] >= 1 and counters["corrupt_status"] >= 1,
                        step=robot.backend.cycle)
        assert counters["retries"] >= 1
        state = robot.backend.cycle()
        assert np.isfinite(state.q).all()


def test_a_servo_that_stops_answering_is_named_after_the_retries(simulator) -> None:
    with connect(simulator, retries="2") as robot:
        simulator.control("SILENT 2")
        with pytest.raises(ConnectionLost, match=r"servo 2 \(shoulder_lift\) stopped answering .* 3 attempts"):
            wait_for(lambda: False, timeout=5.0, step=robot.backend.cycle)
        assert robot.backend.counters["retries"] >= 2


def test_a_status_packet_of_the_wrong_length_is_dropped_as_corrupt() -> None:
    """A valid frame carrying fewer bytes than were asked for is not taken for the answer."""
    master, slave = os.openpty()
    bus = ServoBus(os.ttyname(slave), 1_000_000, timeout=0.5)
    try:
        bus.open()
        os.write(master, wire.status(1, 0, b"\x01\x02") + wire.status(1, 0, bytes(range(15))))
        answer = bus.read(1, 56, 15)
        assert answer.data == bytes(range(15))
        assert bus.counters["corrupt_status"] == 1 and bus.counters["retries"] == 0
    finally:
        bus.close()
        os.close(master)
        os.close(slave)


def test_the_preparation_runs_once_after_the_request_left() -> None:
    """``sent`` runs after the first write (the bytes are out when it runs), not again on a retry."""
    master, slave = os.openpty()
    bus = ServoBus(os.ttyname(slave), 1_000_000, timeout=0.01, retries=1)
    seen: list[bytes] = []

    def sent() -> None:
        ready, _, _ = select.select([master], [], [], 2.0)
        seen.append(os.read(master, 4096) if ready else b"")

    try:
        bus.open()
        with pytest.raises(ServoSilent):
            bus.sync_read(56, 15, [1, 2], sent=sent)
        assert seen == [wire.sync_read(56, 15, [1, 2])]
        assert bus.counters["retries"] == 1
    finally:
        bus.close()
        os.close(master)
        os.close(slave)


def test_a_failed_exchange_leaves_the_last_state_whole(simulator) -> None:
    """The state is filled as the answers come: an exchange that fails half way changes nothing read."""
    with connect(simulator, retries="0", poll="0") as robot:
        done = [robot.backend.cycle()]
        simulator.control("SILENT 4")  # servos 1 to 3 answer before it, 5 and 6 after
        with pytest.raises(ConnectionLost, match="servo 4"):
            wait_for(lambda: False, timeout=5.0, step=lambda: done.append(robot.backend.exchange_now()))
        before, after = done[-1], robot.backend.read()
        np.testing.assert_array_equal(after.q, before.q)
        np.testing.assert_array_equal(after.dq, before.dq)
        assert after.info["position_ticks"] == before.info["position_ticks"]


def test_the_goals_sync_write_is_the_control_tables_encoding(simulator) -> None:
    from robohal_feetech.registers import REGISTERS

    goal = REGISTERS["Goal_Position"]
    with connect(simulator) as robot:
        backend = robot.backend
        for arm_goals in ([2048, 1000, 3000, 2047, 4095], [0, 1, 2, 3, 4]):
            expected = {**dict(zip(backend.arm_ids, arm_goals, strict=True)), backend.jaw_id: backend.jaw_goal}
            assert backend._goal_packet(arm_goals) == wire.sync_write(
                goal.address, goal.size, {i: goal.encode(v) for i, v in expected.items()})


def test_the_rate_is_bounded_by_the_wire() -> None:
    assert exchange_bytes(6) == 165
    assert wire_limit(6, 1_000_000) == pytest.approx(1 / (165e-5 + 6 * 2e-6))
    with pytest.raises(UriError, match="more than the bus carries"):
        robohal.connect("feetech:///dev/null?arm=so101&rate=600")


def test_a_hand_moved_joint_is_measured(simulator) -> None:
    with connect(simulator) as robot:
        simulator.control("TORQUE_PROBE")  # an unknown control line changes nothing
        state = robot.backend.cycle()
        assert state.info["voltage_V"][0] == pytest.approx(7.4, abs=0.2)
        assert len(state.info["temperature_C"]) == 6
