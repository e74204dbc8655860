"""The simulated EGM controller, seen through a bare UDP socket (no robohal backend involved)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import robohal
from robohal.sim.process import free_port
from robohal.uri import parse_uri
from robohal_abb import wire
from robohal_abb.simulator import TOOL_PARAMS

MODEL = robohal.get_model("abb.irb1410")


def test_messages_are_complete_and_numbered_from_zero(egm_sim, raw_sensor) -> None:
    sim = egm_sim("--comm-timeout", "0", "--q0", "10,5,15,0,20,30")
    sensor = raw_sensor(sim.sensor_port)
    messages = sensor.collect(0.4)  # decode_robot is the strict check: every field a careful peer needs
    assert len(messages) >= 20
    seqnos = [m.seqno for m in messages]
    assert seqnos[0] <= 3, "a fresh session counts from 0 (the first few may precede our bind)"
    assert seqnos == list(range(seqnos[0], seqnos[0] + len(seqnos))), "no gaps, no repeats on a clean link"
    tms = np.array([m.tm for m in messages])
    times = np.array([m.time for m in messages])
    assert (np.diff(tms) >= 0).all() and (np.diff(times) > 0).all()
    first = messages[0]
    assert np.allclose(first.q, np.radians([10, 5, 15, 0, 20, 30]))
    assert np.allclose(first.pose, MODEL.forward(first.q), atol=1e-9), "feedback pose is the model's tool0"
    assert first.active and first.converged


def test_joint3_is_the_controllers_parallelogram_angle(egm_sim, raw_sensor) -> None:
    """IRB 1410: axis 3 is measured from the horizontal, so with J3 fixed a J2 move keeps the
    flange orientation (the forearm stays parallel to itself)."""
    sim = egm_sim("--comm-timeout", "0", "--lag", "0", "--q0", "0,0,0,0,0,0")
    sensor = raw_sensor(sim.sensor_port)
    start = sensor.receive()
    assert np.allclose(start.position, [0.955, 0.0, 1.195], atol=1e-6)
    target = np.radians([0.0, 20.0, 0.0, 0.0, 0.0, 0.0])
    moved = sensor.collect(1.0, reply=lambda m: wire.encode_sensor_joints(1, 0, target))[-1]
    assert np.allclose(moved.q, target, atol=1e-6)
    assert np.allclose(moved.pose[:3, :3], start.pose[:3, :3], atol=1e-9)
    assert moved.position[2] < start.position[2] - 0.01


def test_follows_targets_with_lag_inside_the_speed_limits(egm_sim, raw_sensor) -> None:
    sim = egm_sim("--comm-timeout", "0", "--lag", "15")
    sensor = raw_sensor(sim.sensor_port)
    start = sensor.receive()
    target = np.array(start.q) + np.radians([20.0, -10.0, 10.0, 30.0, -30.0, 60.0])
    messages = sensor.collect(1.5, reply=lambda m: wire.encode_sensor_joints(1, 0, target))
    q = np.array([m.q for m in messages])
    t = np.array([m.time for m in messages])
    assert (np.diff(t) > 0).all()
    # one 4 ms model step between consecutive messages: never faster than the joint speed limits
    steps = np.abs(np.diff(q, axis=0)).max(axis=0)
    assert (steps <= MODEL.limits.velocity * 0.004 + 1e-9).all()
    assert (steps > 0).all()
    assert np.allclose(q[-1], target, atol=np.radians(0.05))
    assert messages[-1].converged and not messages[len(messages) // 20].converged
    assert np.allclose(messages[-1].q_planned, target, atol=1e-12)


def test_feedback_lags_the_planned_position_like_a_real_controller(egm_sim, raw_sensor) -> None:
    """ABB's EGM manual gives 10-20 ms of control lag: with a target moving at constant speed,
    the feedback trails the planned position (the target the controller follows) by about speed
    x lag, and the two are never equal while the robot moves."""
    sim = egm_sim("--comm-timeout", "0")  # the default lag
    sensor = raw_sensor(sim.sensor_port)
    start = np.array(sensor.receive().q)
    speed = 0.2  # rad/s, joint 1: well inside its limits
    answered = [0]

    def ramp(message):
        answered[0] += 1
        target = start.copy()
        target[0] += speed * 0.004 * answered[0]
        return wire.encode_sensor_joints(1, 0, target)

    messages = sensor.collect(0.8, reply=ramp)
    moving = messages[len(messages) // 2:]  # past the start of the ramp
    assert len(moving) > 30
    trail = np.array([m.q_planned[0] - m.q[0] for m in moving])
    assert (trail > 1e-6).all(), "the feedback is not the planned position while moving"
    assert 0.010 <= np.median(trail) / speed <= 0.020


@pytest.mark.parametrize("cap_deg", [None, 100.0])
def test_max_speed_deviation_caps_the_axis_speed(egm_sim, raw_sensor, cap_deg) -> None:
    """\\MaxSpeedDeviation (the RAPID template's 250 deg/s by default) caps EGM's axis speed where
    it is below the axis's rated speed: the IRB 1410's wrist is rated 280 deg/s."""
    args = ("--max-speed-deviation", str(cap_deg)) if cap_deg is not None else ()
    sim = egm_sim("--comm-timeout", "0", *args)
    sensor = raw_sensor(sim.sensor_port)
    start = sensor.receive()
    target = np.array(start.q) + np.radians([0.0, 0.0, 0.0, 90.0, 0.0, 0.0])
    messages = sensor.collect(0.5, reply=lambda m: wire.encode_sensor_joints(1, 0, target))
    q = np.array([m.q for m in messages])
    fastest = np.degrees(np.abs(np.diff(q[:, 3])).max()) / 0.004  # deg/s, one model step per message
    assert fastest == pytest.approx(250.0 if cap_deg is None else cap_deg, rel=1e-6)


def test_comm_timeout_stops_the_run_and_the_rapid_loop_restarts_it(egm_sim, raw_sensor) -> None:
    sim = egm_sim("--comm-timeout", "0.3", "--retry-after", "0.3")
    sensor = raw_sensor(sim.sensor_port)
    messages = sensor.collect(1.2)  # never answer
    assert sim.wait_line("EVENT comm_timeout")
    stopped = [m for m in messages if m.mci_state == "error"]
    assert stopped and all(m.rapid_state == "stopped" and not m.active for m in stopped)
    restarted = [i for i in range(1, len(messages)) if messages[i].seqno < messages[i - 1].seqno]
    assert restarted, "the template's error handler starts a new session"
    assert messages[restarted[0]].seqno == 0 and messages[restarted[0]].active


def test_answered_run_never_times_out(egm_sim, raw_sensor) -> None:
    sim = egm_sim("--comm-timeout", "0.2")
    sensor = raw_sensor(sim.sensor_port)
    first = sensor.receive()
    messages = sensor.collect(0.8, reply=lambda m: wire.encode_sensor_joints(1, 0, first.q))
    assert all(m.active for m in messages)
    assert sim.stats()["counters"].get("comm_timeouts", 0) == 0


def test_cond_time_ends_the_run(egm_sim, raw_sensor) -> None:
    sim = egm_sim("--comm-timeout", "0", "--cond-time", "0.3")
    sensor = raw_sensor(sim.sensor_port)
    first = sensor.receive()
    messages = sensor.collect(0.8, reply=lambda m: wire.encode_sensor_joints(1, 0, first.q))
    assert sim.wait_line("EVENT cond_time")
    assert messages[-1].mci_state == "stopped" and messages[-1].rapid_state == "running"
    assert messages[-1].faults() == ("mci_stopped",)


def test_motors_off_and_stall(egm_sim, raw_sensor) -> None:
    sim = egm_sim("--comm-timeout", "0", "--motors-off-after", "0.2", "--stall-after", "0.5")
    sensor = raw_sensor(sim.sensor_port)
    messages = sensor.collect(1.0)
    assert messages[-1].motor_state == "off" and messages[-1].rapid_state == "stopped"
    assert messages[0].motor_state == "on"
    sim.wait_line("EVENT stall")
    sensor.collect(0.2)  # whatever was in flight
    with pytest.raises(TimeoutError):
        sensor.receive(0.3)


def test_restart_command_starts_a_new_session_at_the_given_joints(egm_sim, raw_sensor) -> None:
    sim = egm_sim("--comm-timeout", "0")
    sensor = raw_sensor(sim.sensor_port)
    sensor.collect(0.1)
    sim.send("RESTART 5 10 15 20 25 30")
    sim.wait_line("EVENT restart")
    messages = sensor.collect(0.2)
    zero = next(i for i, m in enumerate(messages) if m.seqno == 0)
    assert np.allclose(messages[zero].q, np.radians([5, 10, 15, 20, 25, 30]))


def test_seeded_fault_injection(egm_sim, raw_sensor) -> None:
    def lost_seqnos(seed: str) -> set[int]:
        sim = egm_sim("--comm-timeout", "0", "--loss", "0.3", "--seed", seed, "--duration", "0.8")
        sensor = raw_sensor(sim.sensor_port)
        seqnos = [m.seqno for m in sensor.collect(1.2)]
        window = set(range(50, 150))  # well after our socket is bound, before the simulator exits
        return window - set(seqnos)

    first, again, other = lost_seqnos("11"), lost_seqnos("11"), lost_seqnos("12")
    assert 0.15 < len(first) / 100 < 0.45
    assert first == again, "the same seed loses the same messages"
    assert first != other


def test_duplicates_and_reordering(egm_sim, raw_sensor) -> None:
    sim = egm_sim("--comm-timeout", "0", "--duplicate", "1.0", "--seed", "1")
    seqnos = [m.seqno for m in raw_sensor(sim.sensor_port).collect(0.3)]
    assert len(seqnos) >= 20 and all(seqnos.count(s) == 2 for s in set(seqnos[2:-2]))
    sim = egm_sim("--comm-timeout", "0", "--reorder", "0.3", "--seed", "2")
    seqnos = [m.seqno for m in raw_sensor(sim.sensor_port).collect(0.5)]
    assert any(b < a for a, b in itertools.pairwise(seqnos)), "some messages arrive out of order"


def test_targets_are_checked_by_the_controller(egm_sim, raw_sensor) -> None:
    sim = egm_sim("--comm-timeout", "0")
    sensor = raw_sensor(sim.sensor_port)
    start = sensor.receive()
    outside = np.array(start.q)
    outside[0] = MODEL.limits.upper[0] + 0.1
    messages = sensor.collect(0.3, reply=lambda m: wire.encode_sensor_joints(1, 0, outside))
    assert np.allclose(messages[-1].q, start.q)
    counters = sim.stats()["counters"]
    assert counters["targets_out_of_limits"] >= 10 and counters.get("targets_applied", 0) == 0
    sensor.collect(0.1, reply=lambda m: b"\x08\x01garbage")
    assert any(k.startswith("bad_sensor_") for k in sim.stats()["counters"])


def test_pose_mode_follows_pose_targets(egm_sim, raw_sensor) -> None:
    sim = egm_sim("--comm-timeout", "0", mode="pose")
    sensor = raw_sensor(sim.sensor_port)
    start = sensor.receive()
    goal = start.pose.copy()
    goal[2, 3] -= 0.05
    messages = sensor.collect(1.0, reply=lambda m: wire.encode_sensor_pose(1, 0, goal))
    assert np.allclose(messages[-1].pose, goal, atol=1e-5)
    counters = sim.stats()["counters"]
    sensor.collect(0.1, reply=lambda m: wire.encode_sensor_joints(1, 0, start.q))
    assert sim.stats()["counters"]["targets_wrong_mode"] > counters.get("targets_wrong_mode", 0)


def test_pacing_statistics_on_exit(egm_sim) -> None:
    sim = egm_sim("--comm-timeout", "0", "--duration", "0.5")
    stats = json.loads(sim.wait_line("STATS ")[6:])
    assert stats["counters"]["robot_messages_sent"] > 0
    assert {"p50_ms", "p99_ms", "max_ms", "late_ticks"} <= set(stats["period"])
    assert stats["period"]["p50_ms"] > 0 and stats["rate_hz"] > 0


def test_the_controller_keeps_its_sample_period(egm_sim) -> None:
    """A real controller sends every 4 ms; its simulation must not wake on a coarser clock.
    epoll waits whole milliseconds: with it, even the best tenth of the ticks strayed 37-157 us
    from the period (measured, five runs). Held: the best tenth within 20 us (measured with
    select: 0.5-2.6 us, also beside two busy processes). Not the median: a loaded host delays
    many ticks (once half of them by 0.74 ms while other tests ran), but not nine in ten."""
    sim = egm_sim("--comm-timeout", "0", "--duration", "1.0")
    stats = json.loads(sim.wait_line("STATS ")[6:])
    assert stats["period"]["jitter_p10_ms"] < 0.020, stats["period"]


def test_round_trips_are_the_sensors_answer_time(egm_sim, raw_sensor) -> None:
    """The round trip ends at the kernel's stamp on the answer: the sensor's own delay, not
    when the controller got round to reading it (at its next cycle, 4 ms after the message)."""
    sim = egm_sim("--comm-timeout", "0")
    sensor = raw_sensor(sim.sensor_port)

    def slow_answer(message):
        time.sleep(0.0015)
        return wire.encode_sensor_joints(message.seqno, 0, np.array(message.q))

    sensor.collect(0.4, reply=slow_answer)
    stamped = sim.stats()["round_trip"]
    assert 1.5 <= stamped["p50_ms"] < 3.5, "the answer's arrival, before the controller's next cycle reads it"
    assert stamped["max_ms"] < 1000.0, "same clock at both ends"


def test_robohal_sim_command_runs_the_same_simulator() -> None:
    robohal_cli = Path(sys.executable).with_name("robohal")
    port = free_port()
    out = subprocess.run([str(robohal_cli), "sim", "abb-egm", "--sensor", f"127.0.0.1:{port}", "--duration", "0.3"],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    expected = parse_uri(f"abb-egm://127.0.0.1:{port}?model=abb.irb1410&robot=127.0.0.1").with_params(**TOOL_PARAMS)
    assert lines[0].startswith("READY ") and parse_uri(lines[0][6:]) == expected
    assert lines[-1].startswith("STATS ")


def test_delay_holds_messages_back(egm_sim, raw_sensor) -> None:
    sim = egm_sim("--comm-timeout", "0", "--delay", "150")
    sensor = raw_sensor(sim.sensor_port)
    ages = []
    for _ in range(20):
        message = sensor.receive(5.0)
        ages.append(time.time() - message.time)  # the same machine's clock on both ends
    assert min(ages) >= 0.15


def test_a_late_controller_does_not_burst_to_catch_up(egm_sim, raw_sensor) -> None:
    """Pacing is sleep-based: after the process was held up, it carries on at 4 ms steps
    instead of sending every missed message back to back."""
    sim = egm_sim("--comm-timeout", "0")
    sensor = raw_sensor(sim.sensor_port)
    sensor.collect(0.2)
    os.kill(sim.process.pid, signal.SIGSTOP)
    try:
        time.sleep(0.3)
    finally:
        os.kill(sim.process.pid, signal.SIGCONT)
    messages = sensor.collect(0.3)
    times = np.array([m.time for m in messages])
    close = int((np.diff(times) < 0.001).sum())
    assert len(messages) >= 20
    assert close <= 10, f"{close} messages went out back to back after the stall (a burst would be ~75)"
    assert sim.stats()["period"]["late_ticks"] >= 1
