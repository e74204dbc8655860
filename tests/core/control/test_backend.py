"""A motion that fails, or is stopped, while the arm moves brakes it to rest within
the limits (the guard's jerk check included): a held last setpoint would stop it dead."""

from __future__ import annotations

import numpy as np
import pytest
import robohal
from robohal.control.backend import wait_until
from robohal.errors import LimitViolation
from robohal.motion import JointTrajectory

SIM = "sim://?model=abb.irb2400&realtime=0&rate=250"


def record_sent(backend) -> list[np.ndarray]:
    """Every setpoint the backend puts on its (simulated) wire, in order."""
    sent: list[np.ndarray] = []
    send = backend._send

    def recording(q):
        sent.append(np.array(q))
        send(q)

    backend._send = recording
    return sent


def speeding_up(seconds: float = 0.4, speed: float = 1.0, period: float = 0.004) -> np.ndarray:
    """Joint 1's setpoints (from 0) as it speeds up smoothly to ``speed`` rad/s over ``seconds``:
    v(t) = speed / 2 (1 - cos(pi t / seconds))."""
    t = np.arange(1, round(seconds / period) + 1) * period
    points = np.zeros((len(t), 6))
    points[:, 0] = 0.5 * speed * (t - seconds / np.pi * np.sin(np.pi * t / seconds))
    return points


@pytest.mark.parametrize("failure", ["refused", "raises"])
def test_a_failing_motion_brakes_the_arm_to_rest(failure: str) -> None:
    period = 0.004
    with robohal.connect(SIM) as robot:
        limits = robot.model.limits
        start = robot.backend.commanded
        points = start + speeding_up()  # 1 rad/s when the motion fails

        class Failing(JointTrajectory):
            def step(self, state):
                q = super().step(state)
                if q is None:  # at 1 rad/s: a jump the guard refuses, or a motion that breaks
                    if failure == "raises":
                        raise RuntimeError("the motion's own bug")
                    return points[-1] + np.array([0.2, 0, 0, 0, 0, 0])
                return q

        sent = record_sent(robot.backend)
        expected = LimitViolation if failure == "refused" else RuntimeError
        with pytest.raises(expected) as raised:
            robot.run(Failing(points))
        assert any("braked to rest" in note for note in getattr(raised.value, "__notes__", []))
        sent_array = np.array(sent)
        cruise = len(points)
        assert np.allclose(sent_array[:cruise], points), "the motion's own setpoints went out first"
        braking = sent_array[cruise - 3:]  # from the cruise's last setpoints on
        velocity = np.diff(braking[:, 0]) / period
        acceleration = np.diff(velocity) / period
        assert abs(velocity[-1]) < 1e-9, "at rest in the end"
        assert braking[-1, 0] > points[-1, 0] + 0.01, "it kept going while it braked, not stopped dead"
        assert np.abs(acceleration).max() <= limits.acceleration[0] * (1 + 1e-9)
        # the arm is usable at once
        assert robot.move_joints(start, speed=0.5).completed


def test_stop_during_a_fast_motion_brakes_within_the_jerk_limit() -> None:
    # in real time, so the motion cannot run out before this thread is scheduled to stop it
    with robohal.connect(SIM.replace("realtime=0", "realtime=1")) as robot:
        start = robot.backend.commanded
        speeding = speeding_up()
        cruise = speeding[-1] + np.outer(np.arange(1, 2000) * 0.004, [1.0, 0, 0, 0, 0, 0])  # 1 rad/s on
        robot.run(JointTrajectory(start + np.vstack([speeding, cruise])), wait=False)
        assert wait_until(lambda: robot.backend.counters["cycles"] > len(speeding) + 20, timeout=30.0)
        robot.stop()
        result = robot.wait()
        assert result is not None and result.stopped and not result.completed
        assert np.abs(robot.backend.guard.derivatives()[0]).max() < 1e-9, "at rest"


def test_braking_near_a_position_limit_stops_before_it() -> None:
    """A move that ends 0.05 rad short of joint 1's limit fails as it starts slowing down:
    the brake must be at least as hard as the move's own deceleration, or it runs past
    the limit (where the guard refuses it)."""
    from robohal.motion import PointToPoint

    with robohal.connect(SIM) as robot:
        limits = robot.model.limits
        start = robot.backend.commanded
        target = start.copy()
        target[0] = limits.upper[0] - 0.05
        planned = PointToPoint(target, speed=1.0).plan(start, robot.model, 0.004)
        # the cycle where 0.25 rad are left: the move is slowing down at full deceleration
        fail_at = int(np.argmax(target[0] - planned[:, 0] < 0.25))

        class FailingLate(JointTrajectory):
            def step(self, state):
                if self._index == fail_at:
                    raise RuntimeError("late failure")
                return super().step(state)

        with pytest.raises(RuntimeError) as raised:
            robot.run(FailingLate(planned))
        assert any("braked to rest" in note for note in raised.value.__notes__), raised.value.__notes__
        assert robot.backend.commanded[0] <= limits.upper[0]
        assert np.abs(robot.backend.guard.derivatives()[0]).max() < 1e-9


def _fast_trajectory(start: np.ndarray) -> JointTrajectory:
    speeding = speeding_up()
    cruise = speeding[-1] + np.outer(np.arange(1, 2000) * 0.004, [1.0, 0, 0, 0, 0, 0])  # 1 rad/s on
    return JointTrajectory(start + np.vstack([speeding, cruise]))


@pytest.mark.parametrize("how", ["stop", "close"])
def test_another_thread_stops_a_foreground_motion_with_braking(how: str) -> None:
    """stop() or close() from a second thread while the first runs a motion with wait=True:
    the motion brakes to rest within the limits and returns stopped (it used to run on,
    since only background motions were known to stop())."""
    import threading

    # In real time: fast-forwarded, the whole trajectory can run out while a loaded machine
    # has not yet scheduled the stopping thread; at 250 Hz it has a second to do so.
    with robohal.connect(SIM.replace("realtime=0", "realtime=1")) as robot:
        limits = robot.model.limits
        start = robot.backend.commanded
        sent = record_sent(robot.backend)
        stopper = threading.Thread(target=lambda: (
            wait_until(lambda: robot.backend.counters["cycles"] > 120, timeout=30.0), getattr(robot, how)()))
        stopper.start()
        result = robot.run(_fast_trajectory(start))  # in this thread
        stopper.join(timeout=30.0)
        assert result.stopped and not result.completed
        assert 120 < len(sent) < 400, "stopped soon after the request, not at the trajectory's end"
        velocity = np.diff(np.array(sent)[:, 0]) / 0.004
        assert abs(velocity[-1]) < 1e-9 and np.abs(np.diff(velocity)).max() / 0.004 <= limits.acceleration[0] * (1 + 1e-9)
        assert robot.backend.connected is (how == "stop")


def test_a_background_motions_error_waits_for_its_caller() -> None:
    """A thread that only watches the state must not take the error a background motion met:
    the caller's wait() raises it."""
    with robohal.connect(SIM) as robot:
        start = robot.backend.commanded
        jump = np.vstack([start, start + np.array([0.5, 0, 0, 0, 0, 0])])  # refused by the guard
        robot.run(JointTrajectory(jump), wait=False)
        assert wait_until(lambda: not robot.backend.busy, timeout=30.0)
        robot.state  # a monitor's read
        with pytest.raises(LimitViolation):
            robot.wait()
        assert robot.move_joints(start, speed=0.5).completed  # raised once, then usable


def test_a_robot_in_a_fault_at_connect_takes_no_command_before_recover() -> None:
    from robohal.errors import HardwareFault
    from robohal.sim.backend import SimBackend
    from robohal.uri import parse_uri

    class FaultedAtConnect(SimBackend):
        def _open(self):
            self.inject_fault("reflex_at_startup")
            return super()._open()

    model = robohal.get_model("generic.planar2")
    backend = FaultedAtConnect(parse_uri("sim://?model=generic.planar2&realtime=0"), model)
    state = backend.connect()
    try:
        assert state.faults == ("reflex_at_startup",)
        assert backend.read().faults == ("reflex_at_startup",), "the fault can be inspected"
        with pytest.raises(HardwareFault, match="reflex_at_startup"):
            backend.cycle(state.q)
        backend.recover()
        assert backend.cycle(state.q).faults == ()
    finally:
        backend.close()
