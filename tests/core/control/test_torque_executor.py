"""The torque executor on its own, driving a simulated gravity-compensated arm: how a torque motion
ends (completed, stopped, refused, failed, by a reaction, taken over), and that no torque past a
limit is ever sent on the way, the brake included: an independent judge checks every one."""

from __future__ import annotations

import numpy as np
import pytest
import robohal
from robohal.control.torque_executor import TorqueExecutor
from robohal.control.torque_guard import REST_SPEED, TorqueGuard
from robohal.errors import InvalidArgument, LimitViolation
from robohal.kinematics import TorqueLimits
from robohal.motion import PointToPoint
from robohal.motion.reactions import ELAPSED, Reaction, joint, with_reactions
from robohal.motion.torque import AppliedWrench, JointImpedance, KnownTerms
from robohal.state import RobotMode, RobotState

PERIOD = 0.001
LIMITS = TorqueLimits([87.0] * 4 + [12.0] * 3, 999.999)
Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
MASS = np.diag([1.2, 1.5, 0.9, 0.8, 0.2, 0.15, 0.05]) + 0.02 * np.ones((7, 7))


class Arm:
    """A gravity-compensated arm with viscous friction, one cycle per torque (semi-implicit Euler)."""

    def __init__(self, q=Q0, friction: float = 0.5) -> None:
        self.q, self.dq, self.time, self.friction = np.array(q, dtype=float), np.zeros(7), 0.0, friction

    def state(self) -> RobotState:
        return RobotState(time=self.time, q=self.q, dq=self.dq, mode=RobotMode.MOVING, wrench=np.zeros(6))

    def apply(self, tau) -> None:
        self.dq = self.dq + np.linalg.solve(MASS, tau - self.friction * self.dq) * PERIOD
        self.q = self.q + self.dq * PERIOD
        self.time += PERIOD


TERMS = KnownTerms(np.zeros(7), MASS)


class Scripted:
    """A torque motion that sends the torques it is given, as they are (a user's own law)."""

    command_interface = "joint_torque"

    def __init__(self, torques) -> None:
        self.torques = [np.asarray(t, dtype=float) for t in torques]

    def start(self, state, torque, model, period, *, terms, limits) -> None:
        self.index = 0

    def step(self, state, terms, torque=None):
        if self.index >= len(self.torques):
            return None
        self.index += 1
        return self.torques[self.index - 1]


def ramp(to, cycles):
    return [np.asarray(to, dtype=float) * (k + 1) / cycles for k in range(cycles)]


@pytest.fixture
def model():
    return robohal.get_model("franka.fr3")


def run(executor: TorqueExecutor, arm: Arm, *, stop_after: int | None = None, terms=TERMS, limit: int = 20000):
    """Run ``executor`` as a control loop would; every torque sent (the session's last, which hands
    the arm to the robot's hold, included) passes a judge of its own first."""
    guard = executor.guard
    judge = TorqueGuard(LIMITS, PERIOD)
    judge.reset()
    executor.start(arm.state(), terms)
    sent = []
    while (tau := executor.next(arm.state(), terms)) is not None:
        if stop_after is not None and len(sent) == stop_after:
            executor.stop()
        judge.commit(judge.check(tau))
        guard.commit(tau)
        executor.sent(arm.state(), tau)
        sent.append(tau)
        arm.apply(tau)
        assert len(sent) < limit, "the executor never ended"
    judge.check(guard.last)  # the finishing command: the last torque again
    return np.array(sent)


def executor_for(motion, model, guard=None):
    if guard is None:
        guard = TorqueGuard(LIMITS, PERIOD)
        guard.reset()
    return TorqueExecutor(motion, guard, model)


def test_a_completed_motion_is_damped_to_rest_and_recorded(model):
    arm = Arm()
    executor = executor_for(JointImpedance(target=Q0 + 0.05, duration=0.5), model)
    run(executor, arm)
    result = executor.finish()
    assert result.completed and not result.stopped
    assert result.cycles == 500 and result.torques.shape == (500, 7) and result.wrenches.shape == (500, 6)
    assert np.abs(arm.dq).max() < REST_SPEED  # then the robot's hold takes over
    assert np.abs(arm.q - (Q0 + 0.05)).max() < 0.01  # the spring pulled it there


@pytest.mark.parametrize("bad, refusal", [
    ([np.nan, 0, 0, 0, 0, 0, 0], InvalidArgument),
    ([30.0, 0, 0, 0, 0, 0, 30.0], LimitViolation),  # past joint 7's 12 Nm
    ([35.0, 0, 0, 0, 0, 0, 0], LimitViolation),  # a 5 Nm step: past the rate
])
def test_a_refused_torque_is_never_sent_and_the_motion_ends_at_rest(model, bad, refusal):
    arm = Arm()
    # 0.4 s ramping joint 1 up to 30 Nm (the arm speeds up), then the bad torque
    executor = executor_for(Scripted([*ramp([30.0, 0, 0, 0, 0, 0, 0], 400), bad]), model)
    sent = run(executor, arm)
    assert len(sent) > 400  # it braked after the refusal
    assert not any(np.array_equal(tau, bad) for tau in sent)
    assert np.abs(arm.dq).max() < REST_SPEED
    with pytest.raises(refusal) as raised:
        executor.finish()
    assert any("damped to rest" in note for note in raised.value.__notes__)


def test_a_wrench_that_would_pass_a_limit_is_refused_there(model):
    arm = Arm()
    executor = executor_for(AppliedWrench([0.0, 0.0, -400.0, 0.0, 0.0, 0.0]), model)  # ramps toward ~150 Nm on a joint
    sent = run(executor, arm)
    with pytest.raises(LimitViolation, match="limit"):
        executor.finish()
    assert np.abs(sent).max() <= 87.0  # (the judge saw each; here the largest)


def test_stop_brakes_the_arm_to_rest(model):
    arm = Arm()
    executor = executor_for(Scripted(ramp([20.0, 0, 10.0, 0, 0, 0, 0], 3000)), model)
    run(executor, arm, stop_after=300)
    result = executor.finish()
    assert result.stopped and not result.completed
    assert np.abs(arm.dq).max() < REST_SPEED


def test_without_a_model_the_brake_releases_the_torque(model):
    class NoModel:
        def coriolis(self):
            return np.zeros(7)

        def mass(self):
            raise RuntimeError("the model is gone")

        def gravity(self):
            return np.zeros(7)

    arm = Arm(friction=5.0)
    executor = executor_for(Scripted(ramp([20.0, 0, 0, 0, 0, 0, 0], 300)), model)
    executor.start(arm.state(), TERMS)
    run(executor, arm, stop_after=200, terms=NoModel())
    assert executor.guard.last[0] == 0.0
    with pytest.raises(RuntimeError, match="the model is gone"):
        executor.finish()


def test_a_reaction_ends_the_motion_at_rest(model):
    arm = Arm()
    motion = with_reactions(Scripted(ramp([10.0, 0, 0, 0, 0, 0, 0], 3000)), ELAPSED > 0.2)
    executor = executor_for(motion, model)
    run(executor, arm)
    result = executor.finish()
    assert result.stopped and result.reaction == "elapsed time (s) > 0.2"
    assert result.cycles > 201 and np.abs(arm.dq).max() < REST_SPEED  # the brake after it is the motion's too


def test_a_reaction_hands_over_to_a_torque_motion_without_a_stop(model):
    arm = Arm()
    after = JointImpedance(duration=0.3)
    motion = with_reactions(Scripted(ramp([10.0, 0, 0, 0, 0, 0, 0], 3000)), Reaction(joint(0) > Q0[0] + 0.005, then=after))
    executor = executor_for(motion, model)
    sent = run(executor, arm)
    result = executor.finish()
    assert result.completed and result.reaction.startswith("joint 0")
    assert executor.motion is after and executor.handover is None
    assert np.abs(np.diff(sent, axis=0)).max() <= LIMITS.rate[0] * PERIOD  # (the judge too): continuous


def test_a_reaction_to_a_position_motion_leaves_it_for_the_next_session(model):
    arm = Arm()
    retract = PointToPoint(Q0)
    motion = with_reactions(Scripted(ramp([10.0, 0, 0, 0, 0, 0, 0], 3000)), Reaction(ELAPSED > 0.1, then=retract))
    executor = executor_for(motion, model)
    run(executor, arm)
    assert executor.handover is retract and executor.over
    assert np.abs(arm.dq).max() < REST_SPEED  # at rest before a position session can start


def test_a_torque_motion_takes_over_from_the_torque_last_sent(model):
    arm = Arm()
    guard = TorqueGuard(LIMITS, PERIOD)
    guard.reset()
    first = executor_for(Scripted(ramp([20.0, 0, 0, 0, 0, 0, 0], 100) + [[20.0, 0, 0, 0, 0, 0, 0]] * 3000), model, guard)
    second = executor_for(JointImpedance(duration=0.2), model, guard)
    judge = TorqueGuard(LIMITS, PERIOD)
    judge.reset()
    first.start(arm.state(), TERMS)
    sent, executor = [], first
    while True:
        if len(sent) == 100:
            first.take_over(second)
        tau = executor.next(arm.state(), TERMS)
        if tau is None and executor is first:
            executor = second
            second.start_after(first, arm.state(), TERMS)
            continue
        if tau is None:
            break
        judge.commit(judge.check(tau))
        guard.commit(tau)
        sent.append(tau)
        arm.apply(tau)
    assert first.finish().taken_over
    assert second.finish().completed
    assert np.abs(sent[100] - sent[99]).max() <= LIMITS.rate[0] * PERIOD  # continuous: from the torque last sent
    assert sent[100][0] > 15.0  # (not a restart from zero)
