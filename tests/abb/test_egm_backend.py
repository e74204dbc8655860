"""The abb-egm backend against the simulated controller: connect, move, hold, restarts,
faults, silence, pose mode, and the core's Cartesian layer on top."""

from __future__ import annotations

import itertools
import logging
import socket
import time
import warnings

import numpy as np
import pytest
import robohal
from robohal import ConnectFailed, ConnectionLost, HardwareFault, LimitViolation, RobotMode
from robohal.cartesian import CartesianBackend
from robohal.control.backend import wait_until
from robohal.sim.process import free_port
from robohal_abb.backend import SessionRestarted


def planned(robot) -> np.ndarray:
    """The target the controller follows, as it reports it (EgmRobot.planned)."""
    return np.array(robot.backend.cycle().info["q_planned"])


def record_targets(backend) -> list[np.ndarray]:
    """Every target the controller gets from now on, from the control loop or the hold thread."""
    sent: list[np.ndarray] = []
    reply = backend._reply

    def recording(received, target, *rest):
        sent.append(np.array(target))
        reply(received, target, *rest)

    backend._reply = recording
    return sent


def braked_to_rest(sent: list[np.ndarray], answers: int = 3) -> bool:
    """The hold thread's last ``answers`` targets are all one: the arm was braked to rest (a
    stalled loop's test waits for it, with a deadline, rather than sleeping a fixed time)."""
    last = sent[-answers:]
    return len(last) == answers and all(np.array_equal(last[0], q) for q in last)


def speed_up(backend, joint: int, until, cycles: int = 10_000) -> tuple[np.ndarray, float]:
    """Stream setpoints that speed ``joint`` up at 5 rad/s^2 to 0.5 rad/s, for ``cycles`` or
    until ``until(q)``; the last setpoint and speed."""
    q, speed = backend.commanded, 0.0
    for _ in range(cycles):
        if until(q):
            break
        speed = min(speed + 5.0 * backend.period, 0.5)
        q = q.copy()
        q[joint] += speed * backend.period
        backend.cycle(q)
    return q, speed


def test_connect_reports_the_controllers_state(egm_sim) -> None:
    sim = egm_sim("--comm-timeout", "0", "--q0", "10,5,15,0,20,30")
    with robohal.connect(sim.connect_uri()) as robot:
        state = robot.state
        assert np.allclose(state.q, np.radians([10, 5, 15, 0, 20, 30]), atol=1e-12)
        assert state.mode is RobotMode.IDLE and state.faults == ()
        info = state.info
        assert (info["motor_state"], info["rapid_state"], info["mci_state"]) == ("on", "running", "running")
        assert info["converged"] is True and info["utilization"] is not None
        assert info["session"] == 1 and info["seqno_gaps"] == 0 and info["bad_datagrams"] == 0
        assert "reply_latency_p99" in info and "rate_hz" in info
        assert np.allclose(robot.backend.commanded, state.q)


def test_a_short_first_motion_already_reports_its_timing(egm_sim) -> None:
    from robohal_abb.backend import FIRST_TIMING, TIMING_REFRESH

    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri()) as robot:
        assert robot.state.info["reply_latency_p50"] is None  # nothing answered by the loop yet
        q = robot.backend.commanded
        for _ in range(FIRST_TIMING + 5):
            state = robot.backend.cycle(q)
        assert FIRST_TIMING + 5 < TIMING_REFRESH
        assert state.info["reply_latency_p50"] > 0 and state.info["rate_hz"] > 0


@pytest.mark.parametrize("reply, delay", [("ahead", 1), ("fresh", 0)])
def test_reply_mode_decides_which_state_first_shows_a_setpoint(egm_sim, reply, delay) -> None:
    """reply=ahead answers the next robot message with the setpoint, so the controller's plan
    (EgmRobot.planned) shows it one state later; reply=fresh answers the message just returned,
    so the very next state shows it: one period less from a state to its command."""
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri(reply=reply)) as robot:
        backend = robot.backend
        start = backend.commanded.copy()
        sent, delays = [], []
        for n in range(40):  # a slow, smooth ramp: every setpoint distinct, well inside the limits
            q = start.copy()
            q[5] += 2e-6 * n * n
            sent.append(q)
            plan = np.array(backend.cycle(q).info["q_planned"])
            matches = [k for k, s in enumerate(sent) if np.allclose(s, plan, atol=1e-9, rtol=0)]
            if matches and n >= 5:  # after the hand-over from the hold thread
                delays.append(n - matches[-1])
        assert len(delays) >= 30
        assert np.median(delays) == delay, delays


@pytest.mark.parametrize("reply", ["ahead", "fresh"])
def test_joint_move_reaches_its_target_and_replies_once_per_message(egm_sim, reply) -> None:
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri(reply=reply)) as robot:
        target = robot.backend.commanded + np.radians([8.0, 5.0, -5.0, 10.0, 10.0, -20.0])
        result = robot.move_joints(target, speed=0.5)
        assert result.completed
        assert np.allclose(planned(robot), target, atol=1e-12), "the controller follows exactly what was sent"
        for _ in range(100):
            state = robot.backend.cycle()
        assert np.abs(state.q - target).max() < np.radians(0.05)
        assert state.info["converged"]
    stats = sim.stats()["counters"]
    assert stats["sensor_messages"] <= stats["robot_messages_sent"], "never more than one reply per robot message"
    assert stats.get("targets_out_of_limits", 0) == 0


def test_each_cycle_answers_with_its_own_setpoint(egm_sim) -> None:
    """cycle(q) encodes its answer before the robot message arrives: the answer must still be q
    itself, not the setpoint of the cycle before. The controller reports the target it follows as
    ``planned`` in its next message, so cycle k+1 sees setpoint k there (a reply that reaches the
    controller a period late, on a loaded machine, shows setpoint k-1: hence a majority, not all)."""
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri()) as robot:
        start = robot.backend.commanded
        direction = np.array([1.0, -1.0, 1.0, 0.5, 1.0, -1.0])
        sent: list[np.ndarray] = []
        own = 0
        for k in range(1, 61):
            q = start + np.radians(0.001) * k * k * direction  # a smooth start, within every limit
            state = robot.backend.cycle(q)
            if sent and np.allclose(state.info["q_planned"], sent[-1], rtol=0, atol=1e-12):
                own += 1
            sent.append(q)
    assert own > 30, f"only {own} of 59 cycles found their own setpoint followed by the controller"


def test_while_moving_the_state_shows_feedback_trailing_the_planned_position(egm_sim) -> None:
    """The controller tracks like a real one (10-20 ms control lag, ABB's EGM manual): in each
    state the measured q trails q_planned, the target it follows, instead of equalling it."""
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri()) as robot:
        backend = robot.backend
        q, speed = speed_up(backend, 0, until=lambda q: False, cycles=100)  # to 0.5 rad/s
        assert speed == 0.5
        states = []
        for _ in range(100):
            q = q.copy()
            q[0] += speed * backend.period
            states.append(backend.cycle(q))
        assert states[-1].mode is RobotMode.MOVING
        trail = np.array([s.info["q_planned"][0] - s.q[0] for s in states])
        assert (trail > 1e-6).all(), "the measured position equals the planned one while moving"
        # The lag, from consecutive samples (one controller tick apart): each tick closes the
        # fraction alpha = 1 - exp(-period / lag) of the gap to the target. Measured this way, not
        # as trail / speed: that ratio also counts ticks in which a late answer left the target
        # unchanged, so it reads 9-13 ms for a 15 ms lag depending on how the host runs the loop.
        lags = [
            -backend.period / np.log1p(-(now.q[0] - before.q[0]) / (now.info["q_planned"][0] - before.q[0]))
            for before, now in itertools.pairwise(states)
            if now.info["seqno"] == before.info["seqno"] + 1
        ]
        assert len(lags) >= 20, "too few consecutive controller samples to measure the lag"
        assert 0.010 <= np.median(lags) <= 0.020


def test_every_target_is_checked_before_the_wire(egm_sim) -> None:
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri()) as robot:
        upper = robot.model.limits.upper
        bad = robot.backend.commanded
        bad[1] = upper[1] + 0.01
        sent = robot.backend.counters["commands_sent"]
        with pytest.raises(LimitViolation):
            robot.backend.cycle(bad)
        with pytest.raises(LimitViolation):
            robot.backend.cycle(robot.backend.commanded + 0.2)  # a jump: velocity
        assert robot.backend.counters["commands_sent"] == sent
        assert np.allclose(planned(robot), robot.backend.commanded)
    assert sim.stats()["counters"].get("targets_out_of_limits", 0) == 0


def test_between_motions_the_backend_keeps_the_controller_fed(egm_sim) -> None:
    """No cycle() calls for longer than \\CommTimeout: the hold thread answers, the run goes on."""
    sim = egm_sim("--comm-timeout", "0.3")
    with robohal.connect(sim.connect_uri()) as robot:
        # 100 robot messages answered: 0.4 s of the controller's ticks, past its 0.3 s CommTimeout
        # (counted in ticks, not waited for in wall time: a loaded machine runs the controller late)
        assert wait_until(lambda: robot.backend.counters["hold_replies"] > 100, 10.0), dict(robot.backend.counters)
        state = robot.state
        assert state.mode is not RobotMode.FAULT and state.info["session"] == 1
        assert robot.move_joints(robot.backend.commanded + np.radians([3, 0, 0, 0, 0, 0])).completed
    assert sim.stats()["counters"].get("comm_timeouts", 0) == 0


def test_no_robot_gives_a_helpful_connection_error() -> None:
    port = free_port()
    started = time.monotonic()
    with pytest.raises(ConnectFailed) as lost:  # never reached: not a lost robot
        robohal.connect(f"abb-egm://127.0.0.1:{port}?model=abb.irb1410&timeout=0.3")
    assert time.monotonic() - started < 10.0
    message = str(lost.value)
    assert f"port {port}" in message and "EGMRunJoint" in message and "firewall" in message


def test_port_in_use_is_reported() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        with pytest.raises(ConnectFailed, match="cannot bind"):
            robohal.connect(f"abb-egm://127.0.0.1:{port}?model=abb.irb1410&timeout=0.3")


def test_the_controllers_address_given_as_the_host_is_explained() -> None:
    # 192.0.2.1 (TEST-NET-1) is no address of this computer: binding it fails, nothing is sent
    with pytest.raises(ConnectFailed, match=r"cannot bind UDP 192\.0\.2\.1:6510: .*not an address of this computer"
                                            r".*abb-egm://0\.0\.0\.0:6510\?robot=192\.0\.2\.1") as refused:
        robohal.connect("abb-egm://192.0.2.1:6510?model=abb.irb1410&timeout=0.3")
    assert "another program" not in str(refused.value)


def test_a_second_connection_to_the_same_port_is_refused(egm_sim) -> None:
    sim = egm_sim()
    with robohal.connect(sim.connect_uri()) as first:
        with pytest.raises(ConnectFailed, match=r"cannot bind.*another robohal connection"):
            robohal.connect(sim.connect_uri(connect_timeout="1"))
        assert first.move_joints(first.q + np.radians(1.0), speed=0.3).completed  # still the one in charge


def test_only_the_configured_robot_is_heard(egm_sim) -> None:
    sim = egm_sim("--comm-timeout", "0")
    with pytest.raises(ConnectFailed, match=r"[1-9]\d* from other addresses"):
        robohal.connect(sim.connect_uri(robot="127.0.0.2", timeout="0.3"))


def test_a_silent_robot_raises_connection_lost(egm_sim) -> None:
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri(timeout="0.4")) as robot:
        robot.backend.cycle()
        sim.send("STALL")
        sim.wait_line("EVENT stall")
        started = time.monotonic()
        with pytest.raises(ConnectionLost, match="silent"):
            for _ in range(10_000):
                robot.backend.cycle()
        assert time.monotonic() - started < 10.0, "bounded by the timeout, never a hang"
        with pytest.raises(ConnectionLost):
            robot.state


def test_restart_between_motions_holds_the_measured_position(egm_sim) -> None:
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri()) as robot:
        old_target = robot.backend.commanded + np.radians([10.0, 0, 0, 0, 0, 0])
        assert robot.move_joints(old_target, speed=0.5).completed
        sim.send("RESTART 0 5 10 0 15 0")  # RAPID moved the robot elsewhere before re-entering EGM
        sim.wait_line("EVENT restart")
        assert wait_until(lambda: robot.state.info["session"] == 2, 10.0), "the new session's messages come in"
        where = np.radians([0, 5, 10, 0, 15, 0])
        state = robot.state
        assert state.info["session"] == 2
        assert np.allclose(state.q, where, atol=1e-9)
        assert np.allclose(robot.backend.commanded, where), "hold the measured position"
        assert np.allclose(planned(robot), where, atol=1e-9), "the old target was never replayed"
        assert robot.move_joints(where + np.radians([0, 3, 0, 0, 0, 0])).completed


def test_restart_during_a_motion_aborts_it_and_holds(egm_sim) -> None:
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri()) as robot:
        far = robot.backend.commanded + np.radians([40.0, 0, 0, 0, 0, 0])
        robot.move_joints(far, speed=0.2, wait=False)
        time.sleep(0.3)
        sim.send("RESTART 0 0 0 0 0 0")
        with pytest.raises(SessionRestarted):
            deadline = time.monotonic() + 10
            while robot.backend.busy and time.monotonic() < deadline:
                time.sleep(0.01)
            robot.wait()
        assert np.allclose(robot.backend.commanded, 0.0)
        assert np.allclose(planned(robot), 0.0, atol=1e-9)
        assert robot.move_joints(np.radians([2, 0, 0, 0, 0, 0])).completed


def test_motors_off_is_a_clear_fault_and_recoverable_after_restart(egm_sim) -> None:
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri(timeout="2")) as robot:
        sim.send("MOTORS OFF")
        sim.wait_line("EVENT motors_off")
        with pytest.raises(HardwareFault) as fault:
            for _ in range(100):
                robot.backend.cycle()
        assert "motors_off" in fault.value.names and fault.value.recoverable
        with pytest.raises(HardwareFault):
            robot.backend.cycle()  # stays faulted until recover()
        sim.send("RESTART")
        state = robot.recover()
        assert state.mode is not RobotMode.FAULT
        assert robot.move_joints(robot.backend.commanded + np.radians([2, 0, 0, 0, 0, 0])).completed


def test_cond_time_end_is_reported_then_the_next_run_is_used(egm_sim) -> None:
    sim = egm_sim("--comm-timeout", "0", "--cond-time", "0.3", "--retry-after", "0.3")
    with robohal.connect(sim.connect_uri()) as robot:
        with pytest.raises(HardwareFault) as fault:
            for _ in range(1000):
                robot.backend.cycle()
        assert fault.value.names == ("mci_stopped",)
        state = robot.recover()
        assert state.info["session"] == 2 and state.info["seqno"] < 50


def test_lossy_link_still_converges(egm_sim) -> None:
    sim = egm_sim("--comm-timeout", "0", "--loss", "0.1", "--duplicate", "0.05", "--reorder", "0.05", "--seed", "3")
    with robohal.connect(sim.connect_uri()) as robot:
        target = robot.backend.commanded + np.radians([10.0, -5.0, 5.0, 0.0, 10.0, 20.0])
        assert robot.move_joints(target, speed=0.5).completed
        for _ in range(150):
            state = robot.backend.cycle()
        assert np.abs(state.q - target).max() < np.radians(0.05)
        stats = robot.backend.statistics
        assert state.info["seqno_gaps"] > 0 and state.info["lost_messages"] > 0
        assert stats.get("duplicates_dropped", 0) + stats.get("reordered_dropped", 0) > 0


def test_pose_mode_moves_through_the_controllers_ik(egm_sim) -> None:
    sim = egm_sim("--comm-timeout", "0", mode="pose")
    with robohal.connect(sim.connect_uri()) as robot:
        assert robot.backend.mode == "pose"
        target = robot.backend.commanded + np.radians([5.0, 5.0, -5.0, 0.0, 10.0, 10.0])
        assert robot.move_joints(target, speed=0.5).completed
        for _ in range(100):
            state = robot.backend.cycle()
        assert np.abs(state.q - target).max() < np.radians(0.05)
    counters = sim.stats()["counters"]
    assert counters["targets_applied"] > 100 and counters.get("targets_wrong_mode", 0) == 0


def test_move_linear_and_the_cartesian_layer(egm_sim) -> None:
    sim = egm_sim("--comm-timeout", "0", "--q0", "0,10,10,0,30,0")
    with robohal.connect(sim.connect_uri()) as robot:
        start = robot.pose
        goal = start.copy()
        goal[:3, 3] += [0.05, 0.05, -0.05]
        result = robot.move_linear(goal, speed=0.2)
        assert result.completed
        poses = robot.model.forward(result.commanded)
        direction = (goal[:3, 3] - start[:3, 3]) / np.linalg.norm(goal[:3, 3] - start[:3, 3])
        offsets = poses[:, :3, 3] - start[:3, 3]
        off_line = np.linalg.norm(offsets - np.outer(offsets @ direction, direction), axis=1)
        assert off_line.max() < 1e-4
        arm = CartesianBackend(robot.backend)
        back = arm.move_linear(start, speed=0.1)
        assert back.completed
        for _ in range(100):
            robot.backend.cycle()
        assert np.linalg.norm(arm.pose[:3, 3] - start[:3, 3]) < 1e-3


def test_a_cartesian_stream_that_pauses_picks_up_where_the_arm_was_braked(egm_sim) -> None:
    """Pose by pose at 250 Hz, a pause mid-line (the hold thread brakes the arm), then on:
    the IK starts again from what was really sent, and nothing is refused."""
    sim = egm_sim("--comm-timeout", "0", "--q0", "0,10,10,0,30,0")
    with robohal.connect(sim.connect_uri()) as robot:
        arm = CartesianBackend(robot.backend)
        start = arm.commanded_pose
        wire = record_targets(robot.backend)
        for k in range(1, 301):  # 0.06 m along x in 1.2 s, smooth start, then cut off at speed
            target = start.copy()
            target[0, 3] += 0.03 * (1 - np.cos(np.pi * min(k, 150) / 150)) + (0.0004 * (k - 150) if k > 150 else 0.0)
            arm.cycle(target)
        # the stream pauses at 0.1 m/s, until the hold thread braked the arm to rest
        assert wait_until(lambda: braked_to_rest(wire), 10.0)
        assert robot.backend.counters["hold_braking_replies"] > 5
        for _ in range(400):
            arm.cycle(target)  # the last pose again: the IK brings the arm back onto it
        assert np.linalg.norm(arm.commanded_pose[:3, 3] - target[:3, 3]) < 1e-4
        acceleration = np.diff(np.array(wire), 2, axis=0) / robot.backend.period**2
        assert (np.abs(acceleration) <= robot.model.limits.acceleration * (1 + 1e-9)).all()
    assert sim.stats()["counters"].get("targets_out_of_limits", 0) == 0


IRB1410_LINKAGE_UP = np.radians(70.0)  # joint 3 - joint 2, the parallelogram's own range: -65..70 deg


def test_a_cartesian_line_into_the_irb1410_linkage_limit_stops_at_it(egm_sim) -> None:
    """The IK box knows the linkage angle (joint 3 - joint 2) besides each joint's range: a line
    whose end needs 75 deg runs until the linkage reaches 70 deg, and stops there, braked within
    the limits; nothing is refused."""
    model = robohal.get_model("abb.irb1410")
    inside, outside = np.radians([0, -20, 40, 0, 30, 0]), np.radians([0, -30, 45, 0, 30, 0])  # linkage 60 / 75 deg
    sim = egm_sim("--comm-timeout", "0", "--q0", ",".join(str(v) for v in np.degrees(inside)))
    with robohal.connect(sim.connect_uri()) as robot:
        sent = record_targets(robot.backend)
        result = CartesianBackend(robot.backend).move_linear(model.forward(outside), speed=0.2)
        assert result.completed
        assert result.info["final_position_error"] > 0.01, "the end is beyond the linkage's reach"
        targets = np.array(sent)
        linkage = targets[:, 2] - targets[:, 1]
        assert linkage.max() <= IRB1410_LINKAGE_UP + 1e-12
        assert linkage.max() > IRB1410_LINKAGE_UP - np.radians(0.5), "it went (nearly) as far as the linkage allows"
        acceleration = np.diff(targets, 2, axis=0) / robot.backend.period**2
        assert (np.abs(acceleration) <= model.limits.acceleration * (1 + 1e-9)).all()


def test_the_hold_thread_never_brakes_past_the_irb1410_linkage_limit(egm_sim) -> None:
    """A raw stream drives the linkage toward its limit at 0.5 rad/s and stops 0.3 deg short,
    closer than the arm can brake: the hold thread stops the arm short (held), never past it."""
    sim = egm_sim("--comm-timeout", "0", "--q0", "0,-20,40,0,30,0")
    with robohal.connect(sim.connect_uri()) as robot:
        backend = robot.backend
        speed_up(backend, 2, until=lambda q: q[2] - q[1] >= IRB1410_LINKAGE_UP - np.radians(0.3))
        sent = record_targets(backend)
        # the loop stalls, until the hold thread stopped the arm and held it for 20 messages
        assert wait_until(lambda: backend.counters["hold_braking_refused"] and braked_to_rest(sent, 20), 10.0)
        assert backend.counters["hold_braking_refused"] == 1
        linkage = np.array(sent)[:, 2] - np.array(sent)[:, 1]
        assert len(sent) > 20 and linkage.max() <= IRB1410_LINKAGE_UP + 1e-12


def test_a_dropped_robot_stops_its_bundled_simulator() -> None:
    robot = robohal.connect("abb-egm://sim?model=abb.irb1410")
    simulator = robot.simulator.process
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        del robot  # a notebook cell run again: no close(), no with-block
        assert wait_until(lambda: simulator.poll() is not None, 10.0)


def test_only_six_axis_models() -> None:
    with pytest.raises(robohal.UriError, match="6 axes"):
        robohal.connect("abb-egm://127.0.0.1:6510?model=generic.planar2")


def test_a_stale_robot_message_is_never_answered() -> None:
    """A message older than two periods gets no reply (neither from the control loop nor the hold
    thread): the answer goes to the next one. Here the robot is a bare socket we drive by hand."""
    import threading

    from robohal_abb import stamps, wire
    from robohal_abb.backend import STALE_AFTER_PERIODS, TAKEOVER_PERIODS

    model = robohal.get_model("abb.irb1410")
    q = np.zeros(6)
    pose = model.forward(q)
    fake = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    fake.bind(("127.0.0.1", 0))
    stamps.enable(fake)
    port = free_port()
    seqno = iter(range(10**6))

    def send() -> float:
        """A robot message; returns a time no earlier than its arrival (loopback delivers in sendto)."""
        fake.sendto(wire.encode_robot(seqno=next(seqno), tm=0, time=time.time(), q=q, q_planned=q, pose=pose,
                                      pose_planned=pose), ("127.0.0.1", port))
        return time.time()

    def answer() -> tuple[wire.SensorMessage, float]:
        """The next reply and the kernel's stamp of its arrival."""
        datagram, ancillary, _, _ = fake.recvmsg(65536, stamps.ANCILLARY_SIZE)
        return wire.decode_sensor(datagram, 6), stamps.arrival_time(ancillary)

    connected: list = []
    opener = threading.Thread(target=lambda: connected.append(
        robohal.connect(f"abb-egm://127.0.0.1:{port}?model=abb.irb1410&robot=127.0.0.1&timeout=10")))
    opener.start()
    try:
        while opener.is_alive():
            send()
            time.sleep(0.004)
        robot = connected[0]
        backend = robot.backend
        fake.settimeout(10.0)

        def drain() -> int:
            fake.setblocking(False)
            count = 0
            while True:
                try:
                    fake.recv(65536)
                    count += 1
                except BlockingIOError:
                    fake.settimeout(10.0)
                    return count

        def cycle_in_background() -> tuple[threading.Thread, list]:
            done: list = []
            def run() -> None:
                try:
                    done.append(backend.cycle())
                except BaseException as exc:
                    done.append(exc)
                    raise

            thread = threading.Thread(target=run)
            thread.start()
            assert wait_until(lambda: backend._sending, 10.0), "the control loop claims the link"
            return thread, done

        # The hold thread takes over once the control loop has not answered for TAKEOVER_PERIODS,
        # and a message is stale after STALE_AFTER_PERIODS: a message that arrives within the
        # difference of the control loop's last answer is stale before the hold thread may answer
        # it. A slower round (this process held up by the machine's load) proves nothing (the
        # hold thread may rightly answer that message while it is fresh): another round is run.
        window = (TAKEOVER_PERIODS - STALE_AFTER_PERIODS) * backend.period
        for _ in range(20):
            time.sleep(0.05)
            drain()  # the hold thread's answers so far
            cycler, done = cycle_in_background()
            send()  # answered by the control loop
            _, answered_at = answer()
            unanswered_at = send()  # the state this cycle returns: it stays unanswered
            cycler.join(10.0)
            assert done and not isinstance(done[0], BaseException), done
            if unanswered_at - answered_at < 0.75 * window:
                break
        else:
            pytest.fail("20 rounds were too slow to tell a stale message from a fresh one")
        time.sleep(0.15)  # now it is stale; the hold thread has woken up meanwhile
        assert drain() == 0, "nobody answers a stale robot message"
        cycler, done = cycle_in_background()
        assert drain() == 0 and cycler.is_alive(), "the control loop waits for a fresh message"
        send()
        reply, _ = answer()
        assert np.allclose(reply.q, q)
        send()
        cycler.join(10.0)
        assert done and not isinstance(done[0], BaseException), done
        robot.close()
    finally:
        opener.join(10.0)
        fake.close()


@pytest.mark.parametrize("size", [1, 2, 5, 1000])
def test_timing_percentiles_agree_with_numpy(size: int) -> None:
    from robohal_abb.backend import _percentile

    values = np.random.default_rng(size).exponential(0.001, size).tolist()
    for q in (0, 50, 99, 100):
        assert _percentile(sorted(values), q) == pytest.approx(np.percentile(values, q), rel=1e-12)
    assert _percentile([], 50) is None


def test_a_control_loop_that_stalls_mid_motion_is_braked_and_cannot_resume_with_a_jump(egm_sim) -> None:
    """The user's loop stops calling cycle() while joint 1 moves at 0.5 rad/s. The hold thread
    answers the controller meanwhile: with braking steps within the limits, not the last target
    (a stop from 0.5 rad/s in one 4 ms message is 125 rad/s^2). A loop that then resumes as if
    nothing happened is refused; one that starts again from rest is not."""
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri()) as robot:
        backend = robot.backend
        period = backend.period
        limits = robot.model.limits
        q, speed = speed_up(backend, 0, until=lambda q: False, cycles=100)
        held = record_targets(backend)
        assert wait_until(lambda: braked_to_rest(held), 10.0)  # the loop stalls meanwhile
        held = list(held)  # what the hold thread sent, before anything resumes
        assert backend.counters["hold_braking_replies"] > 5
        wire = np.array([q, *held])[:, 0]
        velocity = np.diff(wire) / period
        acceleration = np.diff(np.concatenate([[speed], velocity])) / period
        assert np.abs(acceleration).max() <= limits.acceleration[0] * (1 + 1e-9)
        assert abs(velocity[-1]) < 1e-9 and wire[-1] > q[0] + 0.005, "braked to rest, not stopped dead"
        assert np.allclose(backend.commanded, held[-1]), "the guard knows what was really sent"
        resumed = q.copy()
        resumed[0] += speed * period
        with pytest.raises(LimitViolation):
            backend.cycle(resumed)
        assert robot.move_joints(backend.commanded + np.radians([2.0, 0, 0, 0, 0, 0])).completed
    assert sim.stats()["counters"].get("targets_out_of_limits", 0) == 0


def _inject(backend, model, joints_deg, seqno: int) -> None:
    """One well-formed robot message from another socket on the robot's address (robot=IP
    hears every port of that address). Its feedback time is 50 ms ahead, as a real new session
    comes after RAPID's restart: never older than a controller message that overtook it."""
    from robohal_abb import wire

    q = np.radians(joints_deg)
    pose = model.forward(np.zeros(6))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as injector:
        injector.bind(("127.0.0.1", 0))
        injector.sendto(wire.encode_robot(seqno=seqno, tm=0, time=time.time() + 0.05, q=q, q_planned=q, pose=pose,
                                          pose_planned=pose), ("127.0.0.1", backend.port))


def test_the_first_bad_datagram_of_each_kind_is_logged(egm_sim, caplog) -> None:
    sim = egm_sim("--comm-timeout", "0")
    with caplog.at_level(logging.WARNING, logger="robohal"), robohal.connect(sim.connect_uri()) as robot:
        backend = robot.backend
        for _ in range(3):
            _inject(backend, robot.model, [1e308, -1e308, 0, 0, 0, 0], seqno=0)
        assert wait_until(lambda: backend.counters["bad_joint_range"] == 3, timeout=5.0)
    told = [r.getMessage() for r in caplog.records if "bad datagram" in r.getMessage()]
    assert len(told) == 1 and "bad_joint_range" in told[0] and "127.0.0.1" in told[0]


def test_a_session_measured_outside_the_limits_is_not_held(egm_sim) -> None:
    """A new session whose measured joints the model's limits refuse (a model that does not fit
    the robot, or a forged datagram): nothing is held, so no target outside the limits goes out,
    and the state says why."""
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri()) as robot:
        backend = robot.backend
        targets = record_targets(backend)
        # seqno 0 with a later feedback time: a new session, even while the controller's own
        # newest message is still its first (seqno 0 too), as right after connect
        _inject(backend, robot.model, [250.0, 0, 0, 0, 0, 0], seqno=0)  # the model allows +-170 deg
        assert wait_until(lambda: backend.counters["measured_outside_limits"] >= 1, timeout=5.0)
        assert backend.counters["sessions_restarted"] == 1
        seen = backend.counters["robot_messages"]
        # the hold thread's turns: the controller's next messages, each one it could have answered
        assert wait_until(lambda: backend.counters["robot_messages"] >= seen + 20, timeout=10.0)
        assert all(robot.model.limits.within(q) for q in targets), "nothing outside the limits went out"
        # the real controller's next messages: held again at its measured position, and usable
        state = robot.state
        assert robot.model.limits.within(state.q)
        assert robot.move_joints(state.q + np.radians([2.0, 0, 0, 0, 0, 0]), speed=0.5).completed
        assert all(robot.model.limits.within(q) for q in targets) and targets


def test_absurd_joint_values_are_a_bad_datagram(egm_sim) -> None:
    """+1e308 and -1e308 deg are finite (and cancel in a sum) but no joint's position."""
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri()) as robot:
        backend = robot.backend
        _inject(backend, robot.model, [1e308, -1e308, 0, 0, 0, 0], seqno=0)
        assert wait_until(lambda: backend.counters["bad_joint_range"] == 1, timeout=5.0)
        assert backend.counters["sessions_restarted"] == 0
        assert robot.move_joints(robot.q + np.radians([2.0, 0, 0, 0, 0, 0]), speed=0.5).completed


def test_seqno_0_again_is_told_from_a_copy_and_from_a_late_datagram_by_its_time(bare_robot) -> None:
    """A session that sent one message (seqno 0) and restarted sends seqno 0 again: by the seqno
    alone it looks like a copy. The feedback time tells them apart: a copy has the same time, a
    late datagram an earlier one, a new session a later one."""
    robot_side = bare_robot()
    port = free_port()
    start = time.time()
    first = robot_side.datagram(0, [0, 0, 0, 0, 0, 0], at=start)
    uri = f"abb-egm://127.0.0.1:{port}?model=abb.irb1410&timeout=5"
    with robot_side.connect(uri, first) as robot:  # every copy of ``first`` after the one taken is a duplicate
        backend = robot.backend
        copies = backend.counters["duplicates_dropped"]
        assert robot.state.info["seqno"] == 0 and backend.counters["sessions_restarted"] == 0
        robot_side.send(port, first)  # one more copy
        assert wait_until(lambda: backend.counters["duplicates_dropped"] == copies + 1, timeout=5.0)
        restarted = robot_side.datagram(0, [5, 0, 0, 0, 0, 0], at=start + 0.1)  # RAPID restarted the EGM run
        robot_side.send(port, restarted)
        assert wait_until(lambda: backend.counters["sessions_restarted"] == 1, timeout=5.0)
        state = robot.state
        assert state.info["session"] == 2 and np.allclose(state.q, np.radians([5, 0, 0, 0, 0, 0]))
        assert np.allclose(backend.commanded, state.q), "holds the new session's measured position"
        for seqno in (1, 2):
            robot_side.send(port, robot_side.datagram(seqno, [5, 0, 0, 0, 0, 0], at=start + 0.1 + 0.004 * seqno))
        assert wait_until(lambda: robot.state.info["seqno"] == 2, timeout=5.0)
        late = backend.counters["reordered_dropped"]
        robot_side.send(port, restarted)  # the new session's first message, overtaken by two
        assert wait_until(lambda: backend.counters["reordered_dropped"] == late + 1, timeout=5.0)
        # a further session whose first two messages were lost: seqno 2 again, but later
        robot_side.send(port, robot_side.datagram(2, [7, 0, 0, 0, 0, 0], at=start + 0.3))
        assert wait_until(lambda: backend.counters["sessions_restarted"] == 2, timeout=5.0)
        assert robot.state.info["session"] == 3
