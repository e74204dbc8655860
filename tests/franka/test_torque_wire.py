"""No torque command past a limit reaches the wire: the Franka control loop runs in this process
over the stubs (pylibfranka's stand-in, the same simulated arm), every command it writes is
recorded where pylibfranka would take it, and a judge of its own replays each against Franka's
torque limits and libfranka's torque-rate limit, the safe end of a failing motion included."""

from __future__ import annotations

import socket
from multiprocessing.connection import Connection

import numpy as np
import pytest
from robohal.control.torque_guard import REST_SPEED, TorqueGuard
from robohal.errors import InvalidArgument, LimitViolation
from robohal.motion.reactions import ELAPSED, with_reactions
from robohal.motion.torque import AppliedWrench, CartesianImpedance, JointImpedance
from robohal.uri import parse_uri
from robohal_franka import stubs
from robohal_franka.backend import FrankaBackend
from robohal_franka.control import ControlConfig, ControlLoop, unpack_error
from robohal_franka.shared import Layout, SharedBlock

DEADLINE_CYCLES = 20000  # 20 s of the robot's clock: far beyond any motion here


class Scripted:
    """A user's own torque law: it sends what it is given, as it is."""

    command_interface = "joint_torque"

    def __init__(self, torques) -> None:
        self.torques = [np.asarray(t, dtype=float) for t in torques]

    def start(self, state, torque, model, period, *, terms, limits) -> None:
        self.index = 0

    def step(self, state, terms, torque=None):
        self.index += 1
        return self.torques[min(self.index, len(self.torques)) - 1]


@pytest.fixture
def wire(monkeypatch, reference_model):
    """A control loop on the stubs, in this process; every command written is recorded."""
    written: list[tuple[str, list[float], bool]] = []
    write = stubs._ActiveControl.writeOnce

    def recorded(self, command):
        kind = type(command).__name__
        values = command.tau_J if kind == "Torques" else getattr(command, "q", [])
        written.append((kind, list(values), bool(command.motion_finished)))
        return write(self, command)

    monkeypatch.setattr(stubs._ActiveControl, "writeOnce", recorded)
    ours, theirs = socket.socketpair()
    parent, child = Connection(ours.detach()), Connection(theirs.detach())
    backend = FrankaBackend(parse_uri("franka://sim?model=franka.fr3&impl=stubs"), reference_model)
    config = ControlConfig(host="sim", impl="stubs", realtime="ignore", model=reference_model, model_name="franka.fr3",
                           collision=backend.collision, stub_seed=3, torque_limits=backend.torque_limits)
    loop = ControlLoop(child, SharedBlock(bytearray(Layout.SIZE * 8)), config)
    loop.connect()
    loop.written = written
    loop.events = parent
    yield loop
    loop.shutdown()
    parent.close()
    child.close()


def run_to_the_end(loop, motion, *, stop_after: int | None = None) -> list:
    """Start ``motion`` and run the loop until its session has ended; the events it told."""
    loop.start_motion(motion, 1)
    cycles = 0
    while loop.control is not None or loop.executor is not None:
        loop.iteration()
        cycles += 1
        if cycles == stop_after:
            loop.end_session_braking()
        assert cycles < DEADLINE_CYCLES, "the session never ended"
    events = []
    while loop.events.poll():
        events.append(loop.events.recv())
    return events


def judged(loop) -> np.ndarray:
    """Every torque written, each checked by a judge of its own against Franka's torque limits and
    libfranka's kMaxTorqueRate from the session's start (the robot starts from no torque)."""
    torques = [values for kind, values, _ in loop.written if kind == "Torques"]
    assert [kind for kind, _, _ in loop.written] == ["Torques"] * len(torques), "a torque session writes torques only"
    judge = TorqueGuard(loop.config.torque_limits, 0.001)
    judge.reset()
    for tau in torques:
        judge.commit(judge.check(tau))  # raises on the first one past a limit
    assert loop.written[-1][2] and not any(finished for _, _, finished in loop.written[:-1])
    return np.array(torques)


def outcome(events):
    told = [message[1:] for message in events if message[0] == "event"]  # (replies are the others)
    done = [payload for name, payload in told if name == "motion_done"]
    assert len(done) == 1, events
    _, result, error, _ = done[0]
    assert not [name for name, _ in told if name in ("fault", "lost")], events
    return result, None if error is None else unpack_error(error)


@pytest.mark.parametrize("bad, refusal", [
    ([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, np.nan], InvalidArgument),
    ([0.0, 0.0, 0.0, 0.0, 30.0, 0.0, 0.0], LimitViolation),  # past joint 5's 12 Nm
    ([6.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], LimitViolation),  # 6 Nm in a cycle: past kMaxTorqueRate
])
def test_a_user_s_bad_torque_never_reaches_the_wire(wire, bad, refusal):
    ramp = [np.array([k * 0.01, 0, 0, 0, 0, 0, 0]) for k in range(1, 101)]  # up to 1 Nm, then the bad one
    _, error = outcome(run_to_the_end(wire, Scripted([*ramp, bad])))
    torques = judged(wire)
    assert isinstance(error, refusal)
    assert not any(np.array_equal(tau, bad) for tau in torques)
    assert len(torques) > 100  # the ramp went out, then the safe end (the torques damping the arm)
    assert np.abs(wire.robot.robot.tracking.velocity).max() < REST_SPEED * 2  # resting, in the robot's hold
    assert int(wire.state.robot_mode) == stubs.RobotMode.Idle  # no reflex: the robot saw nothing wrong


def test_a_wrench_past_the_drives_is_refused_where_it_would_pass_a_limit(wire):
    _, error = outcome(run_to_the_end(wire, AppliedWrench([0.0, 0.0, -300.0, 0.0, 0.0, 0.0])))
    torques = judged(wire)
    assert isinstance(error, LimitViolation) and error.quantity == "torque"
    assert np.abs(torques).max(axis=0)[error.joint] <= wire.config.torque_limits.torque[error.joint]
    assert int(wire.state.robot_mode) == stubs.RobotMode.Idle


def test_a_stopped_impedance_ends_within_every_limit(wire):
    pose = wire.model.forward(np.array(wire.state.q))
    pose[2, 3] -= 0.08  # a pull the cap holds at 0.1 m: a brisk motion to stop
    result, error = outcome(run_to_the_end(wire, CartesianImpedance(target=pose), stop_after=300))
    judged(wire)
    assert error is None and result.stopped and result.torques is not None


def test_motions_of_both_interfaces_take_turns_in_sessions_of_their_own(wire):
    """An impedance ended by a reaction, then a joint impedance with a duration: two sessions, each
    judged on its own (the robot starts each from no torque)."""
    result, error = outcome(run_to_the_end(wire, with_reactions(JointImpedance(), ELAPSED > 0.2)))
    assert error is None and result.reaction == "elapsed time (s) > 0.2"
    judged(wire)
    wire.written.clear()
    result, error = outcome(run_to_the_end(wire, JointImpedance(duration=0.2)))
    assert error is None and result.completed and result.cycles == 200
    judged(wire)


def test_a_stop_while_resting_for_a_handover_ends_the_run_there(wire):
    """A reaction hands a torque motion over to a position motion; stop() comes while the arm is
    damped to rest for it: the run ends stopped, and no position session follows."""
    from robohal.motion import PointToPoint
    from robohal.motion.reactions import Reaction

    push = [np.array([min(k * 0.01, 3.0), 0, 0, 0, 0, 0, 0]) for k in range(1, 3000)]  # the arm moves
    motion = with_reactions(Scripted(push), Reaction(ELAPSED > 0.3, then=PointToPoint(np.array(wire.state.q))))
    wire.start_motion(motion, 1)
    for _ in range(DEADLINE_CYCLES):
        if wire.executor is not None and wire.executor.handover is not None:
            break
        wire.iteration()
    assert wire.executor.handover is not None and wire.executor.braking
    wire.handle("stop", 7, None)
    events = []
    for _ in range(DEADLINE_CYCLES):
        if wire.control is None and wire.executor is None:
            break
        wire.iteration()
    while wire.events.poll():
        events.append(wire.events.recv())
    result, error = outcome(events)
    assert error is None and result.stopped and result.reaction == "elapsed time (s) > 0.3"
    assert ("reply", 7, True) == events[-1][:3]  # stop() returned once the arm rested
    judged(wire)  # a torque session only: no position session followed
