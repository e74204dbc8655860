"""The backend contract suite: what every robohal backend must do.

Subclass :class:`BackendContract` in a test module and run pytest with
``--hil-target URI`` (or with no option: every bundled simulator)::

    from robohal.testing.contract import BackendContract

    class TestContract(BackendContract):
        pass

Each test uses the ``robot`` / ``hil_target`` fixtures of the robohal pytest
plugin. Moves are small (a few degrees, at a fraction of the limits) and head
towards the middle of the joint ranges, so the suite is safe on a real robot
in a clear cell.
"""

from __future__ import annotations

import gc
import threading
import time
import warnings
import weakref

import numpy as np
import pytest

from ..control.backend import CLOSER_THREAD
from ..control.lifecycle import LifecycleState
from ..control.tools import Gripper, GripperBusy
from ..errors import InvalidArgument, LimitViolation, RobohalError, UnknownNameError
from ..kinematics import Kinematics
from ..motion import Hold
from ..motion.reactions import joint
from ..robot import Robot
from ..state import Array, RobotState
from .target import HilTarget

SMALL_MOVE = np.radians(3.0)  # rad per joint
HOLD_CYCLES = 25


class InjectedError(RuntimeError):
    """Raised on purpose inside a control cycle by :class:`FailingMotion`."""


class FailingMotion:
    """Holds still for ``cycles`` cycles, then raises inside the control loop.
    Module-level and picklable, so backends that run motions in another process
    can run it too."""

    def __init__(self, cycles: int = 5) -> None:
        self.cycles = cycles

    def start(self, state: RobotState, commanded: Array, model: Kinematics, period: float) -> None:
        self._q = np.array(commanded)
        self._left = self.cycles

    def step(self, state: RobotState) -> Array | None:
        if self._left <= 0:
            raise InjectedError("raised inside a control cycle on purpose")
        self._left -= 1
        return self._q


def small_target(robot: Robot, size: float = SMALL_MOVE) -> Array:
    """Joints ``size`` rad from the commanded ones, each towards the middle of its range."""
    limits = robot.model.limits
    start = robot.backend.commanded
    direction = np.where(start <= limits.centre, 1.0, -1.0)
    return limits.clip(start + direction * size)


def settle(robot: Robot, target: Array, tolerance: float, timeout: float) -> RobotState:
    """Hold and wait until the measured joints are within ``tolerance`` of ``target``."""
    deadline = time.monotonic() + timeout
    state = robot.state
    while time.monotonic() < deadline:
        state = robot.backend.cycle()
        if np.abs(state.q - target).max() <= tolerance:
            break
    return state


def drop(robot: Robot):
    """Let go of ``robot`` (the caller deletes its own name too); returns a function that
    waits until its backend is collected and closed, and says whether that happened."""
    backend = weakref.ref(robot.backend)

    def gone(timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            gc.collect()  # (a backend in a reference cycle goes with a collection)
            closing = any(thread.name == CLOSER_THREAD for thread in threading.enumerate())
            if backend() is None and not closing:
                return True
            time.sleep(0.02)
        return False

    return gone


def gripper_of(robot: Robot) -> Gripper:
    """The robot's gripper, or a skip of the test where the target declares none."""
    if robot.gripper is None:
        pytest.skip(f"{robot.name} has no gripper (its backend declares none for this URI)")
    return robot.gripper


WIDTH_TOLERANCE = 0.002  # m: how close an open gripper must come to its max_width


class BackendContract:
    """The contract every backend must pass (run it with the robohal pytest plugin).
    Its tool part runs where the target declares the tool (``robot.gripper``, ``robot.io``)."""

    def test_connect_reports_state(self, robot: Robot) -> None:
        state = robot.state
        assert isinstance(state, RobotState)
        assert state.q.shape == (robot.model.dof,)
        assert state.dq.shape == (robot.model.dof,)
        assert np.isfinite(state.q).all() and np.isfinite(state.dq).all()
        assert np.isfinite(state.time)

    def test_state_in_radians_within_limits_and_time_rises(self, robot: Robot, hil_target: HilTarget) -> None:
        limits = robot.model.limits
        times = []
        for _ in range(HOLD_CYCLES):
            state = robot.backend.cycle()
            times.append(state.time)
            # radians, not degrees: inside the limits (with the target's tolerance)
            assert limits.within(state.q, tolerance=max(hil_target.spec.position_tolerance, 1e-6))
        steps = np.diff(times)
        assert (steps > 0).all(), f"state time must rise every cycle, got steps {steps}"
        period = robot.backend.period
        # Seconds, at about the backend's rate: on a busy machine a late reader sees some states
        # skipped (steps of two periods), and a clock taken at the host then catches up (shorter ones).
        assert 0.5 * period <= np.median(steps) <= 2.5 * period, \
            f"state time should advance by about one period ({period} s) per cycle, got steps {steps}"

    def test_hold_position(self, robot: Robot, hil_target: HilTarget) -> None:
        before = robot.backend.commanded
        states = [robot.backend.cycle() for _ in range(HOLD_CYCLES * 2)]
        drift = np.abs(np.array([s.q for s in states]) - before).max()
        assert drift <= hil_target.spec.position_tolerance, f"drifted {drift:.2e} rad while holding"
        assert np.allclose(robot.backend.commanded, before), "holding must not change the command"

    def test_small_joint_move_reaches_target(self, robot: Robot, hil_target: HilTarget, hil_motion_log) -> None:
        target = small_target(robot)
        result = robot.move_joints(target, speed=0.3)
        hil_motion_log.add("small joint move", result)
        assert result.completed
        assert np.allclose(result.commanded[-1], target, atol=1e-9), "the last setpoint must be the target"
        state = settle(robot, target, hil_target.spec.position_tolerance, hil_target.spec.settle_time + 2.0)
        error = np.abs(state.q - target).max()
        assert error <= hil_target.spec.position_tolerance, f"{np.degrees(error):.4f} deg from target after settling"

    def test_out_of_limit_command_refused_before_wire(self, robot: Robot) -> None:
        limits = robot.model.limits
        before_q = robot.state.q.copy()
        sent = robot.backend.counters["commands_sent"]
        bad = robot.backend.commanded
        bad[0] = limits.upper[0] + np.radians(1.0)
        with pytest.raises(LimitViolation) as refused:
            robot.backend.cycle(bad)
        assert refused.value.joint == 0 and refused.value.quantity == "position"
        with pytest.raises(LimitViolation):
            robot.move_joints(bad)
        assert robot.backend.counters["commands_sent"] == sent, "a refused command must not reach the wire"
        state = robot.backend.cycle()  # still connected and usable
        assert np.abs(state.q - before_q).max() < np.radians(0.5)

    def test_jump_refused_before_wire(self, robot: Robot) -> None:
        """A setpoint inside the position limits but too far for one cycle."""
        sent = robot.backend.counters["commands_sent"]
        jump = small_target(robot, size=np.radians(20.0))
        with pytest.raises(LimitViolation) as refused:
            robot.backend.cycle(jump)
        assert refused.value.quantity in ("velocity", "acceleration", "jerk")
        assert robot.backend.counters["commands_sent"] == sent

    def test_stop_during_motion(self, robot: Robot, hil_target: HilTarget) -> None:
        start = robot.backend.commanded
        target = small_target(robot, size=np.radians(10.0))
        cycles = robot.backend.counters["cycles"]
        robot.move_joints(target, speed=0.02, wait=False)
        deadline = time.monotonic() + 5.0
        while robot.backend.counters["cycles"] < cycles + 10 and time.monotonic() < deadline:
            time.sleep(0.001)
        robot.stop()
        assert not robot.backend.busy
        stopped_at = robot.backend.commanded
        assert np.abs(stopped_at - start).max() > 0, "the motion should have started"
        assert np.abs(stopped_at - target).max() > np.radians(1.0), "stop() should end the motion early"
        # at rest: holding changes nothing
        held = [robot.backend.cycle().q for _ in range(5)]
        assert np.allclose(robot.backend.commanded, stopped_at)
        assert np.isfinite(held).all()
        # and it moves again afterwards
        assert robot.move_joints(small_target(robot, size=np.radians(1.0)), speed=0.3).completed

    def test_close_and_reconnect(self, hil_target: HilTarget) -> None:
        first = hil_target.connect()
        try:
            q_before = first.state.q.copy()
        finally:
            first.close()
        with pytest.raises(RobohalError):
            first.state  # closed: no stale state is served as live
        with hil_target.connect() as second:
            state = second.state
            assert state.q.shape == q_before.shape
            assert np.isfinite(state.q).all()
            assert second.move_joints(small_target(second, size=np.radians(1.0)), speed=0.3).completed

    def test_dropped_robot_closes_its_link(self, hil_target: HilTarget) -> None:
        # A Robot that goes out of scope unclosed (a notebook cell run again) must not keep
        # its link and threads: link threads hold a backend only weakly (start_link_thread).
        robot = hil_target.connect()
        uri = str(robot.backend.uri)
        said: list[str] = []
        with warnings.catch_warnings():
            warnings.simplefilter("always", ResourceWarning)
            # the text only: a recorded warning would keep its source, the backend, alive
            warnings.showwarning = lambda message, category, *_, **__: said.append(f"{category.__name__}: {message}")
            gone = drop(robot)
            del robot
            assert gone(), "a dropped Robot's backend stays alive (does a link thread hold it strongly?)"
        assert [text for text in said if text.startswith("ResourceWarning") and uri in text]
        # closed for real: the link (socket, serial port, FCI session) can be opened again
        with hil_target.connect() as again:
            assert again.move_joints(small_target(again, size=np.radians(1.0)), speed=0.3).completed

    def test_dropped_robot_finishes_its_background_motion(self, hil_target: HilTarget) -> None:
        # robohal.connect(uri).move_joints(q, wait=False): the motion was asked for; it runs to its end.
        robot = hil_target.connect()
        target = small_target(robot, size=np.radians(1.0))
        guard = robot.backend.guard  # it outlives the backend and knows the last setpoint sent
        robot.move_joints(target, speed=0.3, wait=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gone = drop(robot)
            del robot
            assert gone(timeout=30.0)
        short = np.abs(guard.last - target).max()
        assert short <= 1e-9, f"the motion was cut {np.degrees(short):.4f} deg short of its target"

    def test_error_inside_cycle_resurfaces_on_next_call(self, robot: Robot) -> None:
        robot.run(FailingMotion(cycles=5), wait=False)
        deadline = time.monotonic() + 10.0
        while robot.backend.busy and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(InjectedError):
            robot.wait()
        # reported once, and the robot is usable again
        assert robot.run(Hold(0.05)).completed

    def test_a_new_motion_takes_over_without_a_stop(self, robot: Robot, hil_motion_log) -> None:
        start = robot.backend.commanded
        far = small_target(robot, size=np.radians(10.0))
        robot.move_joints(far, speed=0.1, wait=False)
        deadline = time.monotonic() + 10.0
        while np.abs(robot.backend.commanded - start).max() < np.radians(0.5) and time.monotonic() < deadline:
            time.sleep(0.002)
        halfway = start + (far - start) * 0.6
        result = robot.move_joints(halfway, speed=0.3)  # takes over from the first, which still moves
        hil_motion_log.add("take-over", result)
        assert result.completed and np.allclose(result.commanded[-1], halfway, atol=1e-9)
        first_speed = np.abs(result.commanded[1] - result.commanded[0]).max() / robot.backend.period
        assert first_speed > np.radians(0.5), "the new motion went on from the moving setpoints, without a stop"
        assert robot.lifecycle is LifecycleState.READY

    def test_a_stream_of_targets_is_followed_and_its_end_brakes_to_rest(self, robot: Robot,
                                                                         hil_target: HilTarget) -> None:
        start = robot.backend.commanded
        goal = small_target(robot, size=np.radians(3.0))
        for share in np.linspace(0.0, 1.0, 25):  # half a second at 50 Hz, from this thread
            robot.servo(start + share * (goal - start))
            time.sleep(0.02)
        deadline = time.monotonic() + robot.servo_timeout + 10.0
        while robot.lifecycle is LifecycleState.MOVING and time.monotonic() < deadline:
            time.sleep(0.01)
        assert robot.lifecycle is LifecycleState.READY, "the stream's end brakes the arm to rest and ends it"
        result = robot.wait()
        assert result is not None and np.allclose(result.commanded[-1], goal, atol=1e-6), \
            "the stream's last setpoint is its goal"
        # Where the robot holds the arm after a motion is its own: the last setpoint, or (a Franka
        # may) where it measures the arm. Either lies within the target's tolerance of the goal, and
        # the next motion starts there.
        tolerance = hil_target.spec.position_tolerance
        held = robot.backend.commanded
        assert np.abs(held - goal).max() <= tolerance, f"holds {np.degrees(np.abs(held - goal).max()):.4f} deg off"
        state = settle(robot, goal, tolerance, hil_target.spec.settle_time + 2.0)
        assert np.abs(state.q - goal).max() <= tolerance

    def test_a_reaction_ends_a_motion_when_its_condition_is_met(self, robot: Robot) -> None:
        start = robot.backend.commanded
        target = small_target(robot, size=np.radians(10.0))
        sign = 1.0 if target[0] > start[0] else -1.0
        passed = start[0] + sign * np.radians(2.0)
        condition = joint(0) > passed if sign > 0 else joint(0) < passed
        result = robot.move_joints(target, speed=0.2, until=condition)
        assert result.stopped and not result.completed and result.reaction == str(condition)
        stopped_at = robot.backend.commanded
        assert sign * (stopped_at[0] - passed) > -np.radians(0.5), "it went on until the measured joint passed"
        assert np.abs(stopped_at - target).max() > np.radians(1.0), "and stopped well short of the target"


    # Tools -------------------------------------------------------------------------------

    def test_gripper_opens_closes_and_opens_again(self, robot: Robot) -> None:
        gripper = gripper_of(robot)
        assert gripper.open() is True
        state = gripper.state
        assert abs(state.width - state.max_width) <= WIDTH_TOLERANCE and not state.is_grasped
        assert isinstance(gripper.close(), bool)
        assert gripper.state.width < state.max_width - WIDTH_TOLERANCE, "close() must close the fingers"
        assert gripper.open() is True and not gripper.state.is_grasped
        assert gripper.state.time >= state.time

    def test_gripper_refuses_bad_input_before_the_wire(self, robot: Robot) -> None:
        gripper = gripper_of(robot)
        max_width = gripper.state.max_width
        for bad in (lambda: gripper.move(float("nan")), lambda: gripper.move(max_width + 0.01),
                    lambda: gripper.move(-0.001), lambda: gripper.move(0.01, speed=0.0),
                    lambda: gripper.move(0.01, speed=gripper.limits.max_speed * 2),
                    lambda: gripper.grasp(0.01, force=gripper.limits.max_force + 1),
                    lambda: gripper.grasp(0.01, epsilon_inner=-0.001)):
            with pytest.raises(InvalidArgument):
                bad()
        assert not gripper.busy

    def test_gripper_call_while_busy_is_refused_and_the_arm_moves_meanwhile(self, robot: Robot) -> None:
        gripper = gripper_of(robot)
        gripper.open()
        closing = gripper.close(speed=gripper.limits.max_speed / 4, wait=False)
        with pytest.raises(GripperBusy):
            gripper.move(0.0)
        assert robot.move_joints(small_target(robot, size=np.radians(1.0)), speed=0.3).completed
        assert isinstance(closing.result(timeout=60.0), bool)
        assert not gripper.busy and gripper.open() is True

    def test_io_names_only_its_declared_signals(self, robot: Robot) -> None:
        """Each signal reads as its kind; each output takes its own value back (so a real cell's
        outputs stay as they are) and reads it; an input, an unknown name and a bad value are refused."""
        if not robot.io:
            pytest.skip(f"{robot.name} declares no I/O signals")
        with pytest.raises(UnknownNameError):
            robot.io["no such signal"]
        with pytest.raises(UnknownNameError):
            robot.io["no such signal"] = True
        for name, signal in robot.io.signals.items():
            value = robot.io[name]
            assert isinstance(value, bool if signal.kind == "digital" else float)
            if signal.direction == "input":
                with pytest.raises(InvalidArgument):
                    robot.io[name] = value
                continue
            robot.io[name] = value
            assert robot.io[name] == value
            for bad in (float("nan"), "on", None, *((2,) if signal.kind == "digital" else (float("inf"),))):
                with pytest.raises(InvalidArgument):
                    robot.io[name] = bad
            assert robot.io[name] == value, "a refused value changes nothing"
