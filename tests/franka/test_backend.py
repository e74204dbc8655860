"""The Franka backend: control process, shared-memory streaming, motions at 1 kHz,
error mapping; over the real pylibfranka against the FCI simulator, and over the stubs."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import threading
import time

import numpy as np
import pytest
from robohal.control.backend import wait_until
from robohal.errors import ConnectionLost, HardwareFault, LimitViolation, RobohalError, UriError
from robohal.motion import Hold, PointToPoint
from robohal.motion.servo import servo_target
from robohal.robot import Robot
from robohal.state import RobotMode
from robohal.uri import parse_uri
from robohal_franka.backend import FrankaBackend
from robohal_franka.facts import READY_Q

IMPLS = ["pylibfranka", "stubs"]
#: rad: how far the simulated arm's measured joints sit off the position it holds (its
#: static error and noise are below 1e-4 rad; 1e-3 leaves room for settling)
TRACKING = 1e-3


def held(backend: FrankaBackend) -> np.ndarray:
    """The position the robot holds (q_d); the measured q sits near it, never on it."""
    return backend.read().info["q_d"]


def assert_at_rest(backend: FrankaBackend) -> None:
    """Nothing commanded moves: the held position stays put over 20 robot cycles."""
    before = backend.read()
    deadline = time.monotonic() + 5.0
    while backend.read().time < before.time + 0.02 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert np.array_equal(held(backend), before.info["q_d"])


def _shared_memory_fds() -> set[str]:
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if "robohal-franka-" in target:
                found.add(target)
    return found


@pytest.mark.parametrize("impl", IMPLS)
def test_close_frees_the_shared_memory_at_once(connect, impl):
    # Reconnecting all day must not pile up descriptors until a garbage collection.
    before = _shared_memory_fds()
    gc.disable()
    try:
        backend, _ = connect(impl)
        assert _shared_memory_fds() - before
        backend.close()
        assert not _shared_memory_fds() - before
    finally:
        gc.enable()


@pytest.mark.parametrize("impl", IMPLS)
def test_connect_read_stream_and_close(connect, impl):
    backend, _ = connect(impl)
    state = backend.read()
    assert np.allclose(held(backend), READY_Q, atol=1e-6) and state.mode is RobotMode.IDLE
    assert np.abs(state.q - READY_Q).max() < TRACKING
    times = [backend.cycle().time for _ in range(30)]  # hold: streamed through the mailbox
    assert (np.diff(times) > 0).all()
    assert np.allclose(held(backend), READY_Q, atol=1e-6)
    assert np.abs(backend.read().q - READY_Q).max() < TRACKING
    pid = backend.control_pid
    backend.close()
    backend.close()
    with pytest.raises(ConnectionLost):
        backend.read()
    assert pid is not None and backend._process is None


@pytest.mark.parametrize("impl", IMPLS)
def test_motion_runs_in_the_control_process(connect, impl, reference_model):
    backend, simulator = connect(impl)
    robot = Robot(backend, reference_model)
    target = np.array(READY_Q) + np.radians([5, -5, 5, 5, 5, 5, 5])
    cycles = backend.counters["cycles"]
    result = robot.move_joints(target, speed=0.5)
    assert result.completed and np.allclose(result.commanded[-1], target, atol=1e-12)
    assert backend.counters["cycles"] - cycles == result.cycles
    assert np.allclose(backend.commanded, target)
    assert np.allclose(held(backend), target, atol=1e-6)  # (float32 on the wire)
    assert np.abs(backend.read().q - target).max() < TRACKING
    if simulator is not None:
        assert simulator.stats()["robot_reflexes"] == 0
    # a jump is refused by our guard before any wire
    sent = backend.counters["commands_sent"]
    with pytest.raises(LimitViolation) as refused:
        backend.cycle(backend.commanded + np.radians(5))
    assert refused.value.quantity in ("velocity", "acceleration", "jerk")
    assert backend.counters["commands_sent"] == sent
    assert backend.cycle().mode in (RobotMode.IDLE, RobotMode.MOVING)


@pytest.mark.parametrize("impl", IMPLS)
def test_background_motion_stops_smoothly(connect, impl, reference_model):
    backend, simulator = connect(impl)
    start = backend.commanded
    target = start + np.radians([20, 0, 0, 0, 0, 0, 0])
    backend.run(PointToPoint(target, speed=0.1), wait=False)
    assert backend.busy
    assert wait_until(lambda: abs(backend.commanded[0] - start[0]) > np.radians(1.0), 10.0), "under way"
    backend.stop()
    assert not backend.busy
    stopped = backend.commanded
    assert 0 < abs(stopped[0] - start[0]) < abs(target[0] - start[0])
    assert backend.run(Hold(0.05)).completed  # usable afterwards
    if simulator is not None:
        assert simulator.stats()["robot_reflexes"] == 0


def test_reflex_maps_to_hardware_fault_with_names_and_recovers(connect, caplog):
    backend, simulator = connect("pylibfranka")
    backend.run(Hold(3.0), wait=False)
    time.sleep(0.2)
    simulator.send("REFLEX joint_reflex")
    with caplog.at_level(logging.INFO, logger="robohal"), pytest.raises(HardwareFault) as fault:
        backend.wait(10.0)
    assert [r for r in caplog.records if r.levelno == logging.WARNING and "joint_reflex" in r.getMessage()]
    assert fault.value.names == ("joint_reflex",) and fault.value.recoverable
    with pytest.raises(HardwareFault):
        backend.cycle()  # still faulted until recover()
    live = backend._read_now()  # read() raises the fault too; the shared state still shows it
    assert live.mode is RobotMode.FAULT and live.faults == ("joint_reflex",)
    state = backend.recover()
    assert state.mode is RobotMode.IDLE and state.faults == ()
    assert backend.run(Hold(0.05)).completed


def test_commands_the_robot_drops_as_late_are_filled_and_the_motion_keeps_its_clock(connect):
    """The robot drops commands that come after their cycle and fills those cycles (LATE injects
    it): the motion still ends on its target with no reflex."""
    backend, simulator = connect("pylibfranka")
    start = backend.commanded
    target = start + np.radians([10, 0, 0, 10, 0, 0, 0])
    lost = backend.figures["lost_cycles"]
    backend.run(PointToPoint(target, speed=0.3), wait=False)
    deadline = time.monotonic() + 5.0
    while np.abs(held(backend) - start).max() < 1e-3 and time.monotonic() < deadline:
        time.sleep(0.001)  # moving
    for _ in range(3):
        simulator.send("LATE 2")
        time.sleep(0.05)
    result = backend.wait(10.0)
    assert result.completed and np.allclose(held(backend), target, atol=1e-6)
    stats = simulator.stats()
    assert stats["robot_reflexes"] == 0 and stats["robot_stale"] >= 6
    # the control process counts the drops it can tell from its own command in the reported q_d
    # (float32): at this speed's jerk, the filled cycle and our command are often one
    assert 0 <= backend.figures["lost_cycles"] - lost <= stats["robot_filled"]


@pytest.mark.parametrize("kind", ["joints", "pose"])
def test_a_stream_through_cycles_the_robot_fills_goes_on_from_the_robots_account(connect, kind):
    """Streamed targets (joints: the online generator; poses: the differential IK, both
    jerk-limited) while the robot drops late commands and fills their cycles at constant
    acceleration: the stream goes on from the robot's account and reaches its goal with no
    reflex. Joints: the old plan's next setpoints would jump against the fill (refused by the
    guard, the arm braked). Poses: the IK runs at the jerk limit, so the account must be the
    robot's to the bit (which of our command and the fill it holds, told apart in float32)."""
    backend, simulator = connect("pylibfranka")
    start = backend.commanded
    goal = start + np.radians([3, -3, 3, -3, 3, 3, 3])
    start_pose = backend.model.forward(start)
    for k, share in enumerate(np.linspace(0.0, 1.0, 25)):
        if kind == "joints":
            target = servo_target("joints", start + share * (goal - start), 7)
        else:
            pose = start_pose.copy()
            pose[0, 3] += 0.03 * share
            target = servo_target("pose", pose, 7)
        backend.steer(target)
        if k % 3 == 1:
            simulator.send("LATE 2")
        time.sleep(0.02)  # a stream at 50 Hz
    result = backend.wait(10.0)
    assert result.completed
    if kind == "joints":
        assert np.allclose(result.commanded[-1], goal, atol=1e-6)
    else:
        assert np.abs(backend.model.forward(result.commanded[-1])[:3, 3] - pose[:3, 3]).max() < 1e-4
    stats = simulator.stats()
    assert stats["robot_reflexes"] == 0 and stats["robot_stale"] >= 8


def test_the_reported_q_d_tells_a_dropped_command_from_a_taken_one(reference_model):
    """ControlLoop.newest_dropped: the state's q_d is the constant-acceleration fill (our newest
    command was dropped) or our command (taken); a robot that reports neither keeps our account."""
    from types import SimpleNamespace

    from robohal.control.guard import SetpointGuard
    from robohal_franka.control import PERIOD, ControlLoop

    def loop_after(commands):
        loop = object.__new__(ControlLoop)
        loop.first_write = False
        loop.guard = SetpointGuard(reference_model.limits, PERIOD, ())
        loop.guard.reset(commands[0])
        for q in commands[1:]:
            loop.guard.commit(q)
        return loop

    q0 = np.array(READY_Q)
    jerky = [q0 + np.r_[2000.0 * (k * 1e-3) ** 3 / 6, np.zeros(6)] for k in range(6)]  # 2000 rad/s^3
    loop = loop_after(jerky)
    filled = loop.guard.continuation(1, without_newest=True)
    loop.state = SimpleNamespace(q_d=filled.astype(np.float32))
    assert loop.newest_dropped(1)
    assert np.allclose(loop.guard.last, jerky[-2])  # our newest is gone; fill(1) puts the robot's in

    loop = loop_after(jerky)
    loop.state = SimpleNamespace(q_d=jerky[-1].astype(np.float32))
    assert not loop.newest_dropped(1) and np.array_equal(loop.guard.last, jerky[-1])
    loop.state = SimpleNamespace(q_d=(jerky[-1] + 1e-3).astype(np.float32))  # neither
    assert not loop.newest_dropped(1) and np.array_equal(loop.guard.last, jerky[-1])


def test_stall_becomes_connection_lost(connect, caplog):
    backend, simulator = connect("pylibfranka")
    backend.cycle()
    simulator.send("STALL")
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="robohal"):
        with pytest.raises(ConnectionLost):
            for _ in range(10_000):
                backend.cycle()
        elapsed = time.monotonic() - started
        print(f"stall detected after {elapsed:.2f} s")
        assert elapsed < 10.0
        for _ in range(3):
            with pytest.raises(ConnectionLost):
                backend.cycle()
        with pytest.raises(ConnectionLost):
            backend.read()
    # told once, though the control process, the pipe and every later call all meet the loss
    assert len([r for r in caplog.records if r.name.startswith("robohal") and r.levelno >= logging.WARNING]) == 1


def test_a_request_that_meets_a_lost_robot_ends_the_loop():
    """The control process: a request (opening a stream) that meets libfranka's network error
    answers it as a lost link and serves nothing more, as the loop does when its read meets it."""
    from types import SimpleNamespace

    from robohal_franka.control import ControlLoop

    class NetworkException(RuntimeError):  # pylibfranka's, as map_error knows it: by its name
        pass

    def start_stream():
        raise NetworkException("libfranka: UDP receive: Timeout")

    replies = []
    loop = object.__new__(ControlLoop)
    loop.config, loop.lost = SimpleNamespace(host="192.0.2.1"), False
    loop.start_stream = start_stream
    loop.reply = lambda request_id, ok, value=None: replies.append((request_id, ok, value))
    loop.handle("stream", 7, None)
    assert loop.lost
    [(request_id, ok, error)] = replies
    assert (request_id, ok) == (7, False) and isinstance(error, ConnectionLost)


def test_a_request_that_meets_a_lost_link_leaves_the_backend_lost(connect):
    """The parent: a request answered by a lost link (here: a control process that stopped
    answering) leaves the backend lost; it never goes on reading the last state as if live."""
    import signal

    backend, _ = connect("stubs")
    pid = backend._process.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(ConnectionLost, match="did not answer"):
            backend._request("timing", None, timeout=0.2)
        with pytest.raises(ConnectionLost, match="did not answer"):
            backend.read()
        with pytest.raises(ConnectionLost, match="did not answer"):
            backend.cycle()
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.mark.parametrize("impl", IMPLS)
def test_realtime_enforced_on_a_normal_kernel_is_a_clear_error(connect, impl):
    from robohal_franka.backend import realtime_kernel

    if realtime_kernel():
        pytest.skip("PREEMPT_RT kernel")
    with pytest.raises(RobohalError, match="realtime=ignore"):
        connect(impl, realtime="enforce")


def test_bad_uris_are_refused(reference_model):
    for text in ("franka://?model=franka.fr3", "franka://h?impl=cuda", "franka://h?realtime=maybe",
                 "franka://h?collision=a,b"):
        with pytest.raises(UriError):
            FrankaBackend(parse_uri(text), reference_model)


@pytest.mark.parametrize("impl", IMPLS)
def test_busy_user_thread_does_not_break_the_1khz_loop(connect, impl):
    """A user thread holding the GIL in pure Python for the whole motion: the loop
    lives in the control process, so the motion still runs at 1 kHz without a reflex."""
    backend, simulator = connect(impl)
    stop = threading.Event()
    spins = [0]

    def busy() -> None:
        while not stop.is_set():
            spins[0] += sum(i * i for i in range(2000))  # pure Python: holds the GIL

    thread = threading.Thread(target=busy, daemon=True)
    thread.start()
    try:
        before = backend.figures
        target = backend.commanded + np.radians([10, -10, 10, 10, 10, 10, 10])
        result = backend.run(PointToPoint(target, speed=0.5))
        after = backend.figures
    finally:
        stop.set()
        thread.join(10.0)
    assert result.completed and spins[0] > 0
    steps = np.diff(result.times)
    late = after["late_cycles"] - before["late_cycles"]
    print(f"{impl}: {result.cycles} cycles, time step median {np.median(steps) * 1e3:.2f} ms,"
          f" late cycles {late}, success rate {after['success_rate']:.3f}")
    assert np.median(steps) == pytest.approx(0.001, abs=1e-4)  # robot time: one state per command
    if simulator is not None:
        assert simulator.stats()["robot_reflexes"] == 0


@pytest.mark.parametrize("impl", IMPLS)
def test_a_stalled_stream_is_braked_reported_and_recovered(connect, impl):
    """The user's stream stops for 30 ms while the joint moves: the control process brakes
    smoothly (no reflex), refuses the stream's late continuation and reports it; recover() resumes."""
    from robohal_franka.control import StreamStarved

    backend, simulator = connect(impl)
    q = backend.commanded
    velocity = np.zeros(7)
    with pytest.raises(StreamStarved):
        for k in range(600):
            velocity[0] = min(velocity[0] + 0.002, 0.2)  # 2 rad/s^2 up to 0.2 rad/s
            q = q + velocity * 0.001
            if k == 150:
                time.sleep(0.03)
            backend.cycle(q)
    figures = backend.figures
    # starved by the pause; or earlier, if the control process lost a cycle on this shared machine
    # (the stream, counting its own cycles, then no longer follows the robot's)
    assert figures["starved_cycles"] > 0 or figures["lost_cycles"] > 0
    assert backend.read().q.shape == (7,), "the fault can be inspected"
    with pytest.raises(StreamStarved):
        backend.cycle()  # until recover()
    state = backend.recover()
    assert state.mode is RobotMode.IDLE
    assert_at_rest(backend)  # braked to rest
    assert backend.cycle().mode in (RobotMode.IDLE, RobotMode.MOVING)
    if simulator is not None:
        assert simulator.stats()["robot_reflexes"] == 0


def test_ctrl_c_during_a_foreground_motion_brakes_and_keeps_the_link(connect):
    """A Ctrl-C reaches the user's process only (the 1 kHz loop runs in a session of its own,
    so a terminal's Ctrl-C cannot drop the robot mid-motion); the interrupted run() brakes
    the arm through the loop, then raises, and the link stays usable."""
    import gc
    import os
    import signal

    backend, _ = connect("stubs")
    assert os.getsid(backend.control_pid) != os.getsid(0)
    robot = Robot(backend, backend.model)
    start = backend.read().q
    target = start + np.array([1.0, 0, 0, 0, 0, 0, 0])
    # A KeyboardInterrupt raised inside a finaliser is swallowed by Python ("Exception ignored
    # in ..."): no collection of an earlier test's garbage may run while the signal lands.
    gc.collect()
    gc.disable()
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))  # to the process, as a terminal does
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as raised:
            robot.move_joints(target, speed=0.5)
    finally:
        timer.cancel()
        gc.enable()
    assert any("braked to rest" in note for note in getattr(raised.value, "__notes__", []))
    assert not backend.busy
    assert_at_rest(backend)
    assert abs(held(backend)[0] - target[0]) > 0.1, "short of the target"
    assert robot.move_joints(start, speed=0.5).completed


@pytest.mark.parametrize("impl", IMPLS)
def test_a_foreground_motion_stopped_from_another_thread_returns_its_own_result(connect, impl):
    backend, _ = connect(impl)
    robot = Robot(backend, backend.model)
    start = backend.read().q
    first = robot.move_joints(start + np.array([0.05, 0, 0, 0, 0, 0, 0]), speed=0.5)
    assert first.completed
    stopper = threading.Timer(0.3, backend.stop)
    stopper.start()
    second = robot.move_joints(start + np.array([1.0, 0, 0, 0, 0, 0, 0]), speed=0.5)
    stopper.join()
    assert second is not first and not second.completed


def _hold_streaming(backend: FrankaBackend) -> None:
    """Open a stream and hold through it, as a control loop's first cycles do (holding, not
    moving: a cycle the machine's load makes us miss changes nothing at rest)."""
    start = backend.commanded
    for _ in range(30):
        state = backend.cycle()
    for _ in range(30):
        state = backend.cycle(backend.commanded)
    assert state.mode is not RobotMode.FAULT
    assert np.array_equal(backend.commanded, start), "the stream holds where it started"


@pytest.mark.parametrize("impl", IMPLS)
def test_each_stream_starts_where_the_robot_holds(connect, impl):
    """A real arm never sits on its command: the measured q lags and jitters around the
    desired q_d the robot holds. A stream opened after connect, after a motion and after
    recover() starts at that q_d on both sides of the control process, so its first cycles
    are no step (which the control process, or the robot, would refuse)."""
    backend, simulator = connect(impl)
    state = backend.read()
    assert np.abs(state.q - state.info["q_d"]).max() > 1e-6, "the simulated arm must track imperfectly"
    assert np.array_equal(backend.commanded, state.info["q_d"]), "between sessions: where the robot holds"
    _hold_streaming(backend)  # after connect

    target = backend.commanded + np.radians([2, -2, 2, 2, 2, 2, 2])
    assert backend.run(PointToPoint(target, speed=0.3)).completed
    assert np.allclose(backend.commanded, target, atol=1e-6)  # held there (float32 on the wire)
    assert np.abs(backend.read().q - target).max() > 1e-6  # and measured a little off it
    _hold_streaming(backend)  # after a motion

    # a motion from the open stream starts at the stream's last setpoint, and one more stream after it
    assert backend.run(PointToPoint(target - np.radians([1, 1, 1, 1, 1, 1, 1]), speed=0.3)).completed
    _hold_streaming(backend)
    if simulator is not None:
        backend.stop()
        simulator.send("REFLEX joint_reflex")
        with pytest.raises(HardwareFault):
            deadline = time.monotonic() + 10.0
            while time.monotonic() < deadline:
                backend.cycle()
        backend.recover()
        _hold_streaming(backend)  # after recover()
        assert simulator.stats()["robot_reflexes"] == 1  # the injected one only


@pytest.mark.parametrize("impl", IMPLS)
def test_a_setpoint_posted_as_the_stream_ends_is_never_sent(connect, impl):
    """stop() from another thread ends the stream; a setpoint the streaming thread posts
    meanwhile is not sent (cycle() says so) and the next cycle() opens a fresh stream."""
    from robohal_franka.shared import Layout

    backend, _ = connect(impl)
    backend.cycle()
    sent = backend._shared.get(Layout.WRITES)
    # the control process sees the mailbox only after the session ended: post as cycle() would
    backend.stop()
    seq = backend._shared.post_setpoint(backend.commanded + 0.001)
    backend._sent_seq = seq
    with pytest.raises(RobohalError, match="not sent"):
        backend._receive(timeout=5.0)
    assert backend._shared.get(Layout.WRITES) == sent or backend._shared.get(Layout.SESSION) == 0
    state = backend.cycle()  # a new stream, from the held position
    assert state.mode is not RobotMode.FAULT
