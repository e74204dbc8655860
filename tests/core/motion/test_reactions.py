"""Reactions: conditions on the measured state that end a motion or hand over to another,
checked by the executor every cycle; on the executor alone and on the sim backend."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import robohal
from robohal.control.executor import MotionExecutor
from robohal.control.guard import SetpointGuard
from robohal.errors import InvalidArgument
from robohal.motion import Hold, PointToPoint
from robohal.motion.reactions import ELAPSED, Condition, Reaction, flange, force, joint, torque, with_reactions
from robohal.state import RobotMode, RobotState

PERIOD = 0.004
CHECKS = ("position", "velocity", "acceleration", "jerk")
FAST = "sim://?model=abb.irb2400&realtime=0&rate=250"


@pytest.fixture(scope="module")
def model():
    return robohal.get_model("abb.irb2400")


def test_conditions_read_as_written_and_combine():
    pressed = force("z") > 5.0
    assert isinstance(pressed, Condition) and str(pressed) == "force z (N) > 5"
    either = pressed | (joint(2) < -1.0)
    both = (flange("x") >= 0.4) & (ELAPSED <= 2.0)
    assert str(either) == "(force z (N) > 5 or joint 2 (rad) < -1)"
    assert str(both) == "(flange x (m) >= 0.4 and elapsed time (s) <= 2)"
    state = RobotState(time=1.0, q=np.zeros(6), dq=np.zeros(6), wrench=[0, 0, 6.0, 0, 0, 0.5])
    model = robohal.get_model("abb.irb2400")
    assert pressed.met(state, model, 0.0) and either.met(state, model, 0.0)
    assert (torque("z") > 0.4).met(state, model, 0.0) and not (torque("z") > 0.6).met(state, model, 0.0)
    assert pickle.loads(pickle.dumps(either)) == either


@pytest.mark.parametrize("make", [
    lambda: force("w"), lambda: joint(-1), lambda: joint(True), lambda: force("z") > float("nan"),
    lambda: force("z") > "5", lambda: Reaction("force > 5"), lambda: Reaction(force("z") > 5, then="retract"),
])
def test_bad_conditions_are_refused_where_they_are_written(make):
    with pytest.raises(InvalidArgument):
        make()


def drive(executor: MotionExecutor, guard: SetpointGuard, wrench_at) -> list[np.ndarray]:
    """Run the executor; each cycle's state carries the wrench ``wrench_at(cycle)``."""
    q0 = guard.last
    state = RobotState(time=0.0, q=q0, dq=np.zeros(6), mode=RobotMode.MOVING, wrench=wrench_at(0))
    executor.start(state, q0)
    sent = []
    while (q := executor.next(state)) is not None:
        guard.commit(q)
        sent.append(q)
        state = RobotState(time=len(sent) * PERIOD, q=q, dq=np.zeros(6), mode=RobotMode.MOVING,
                           wrench=wrench_at(len(sent)))
        executor.sent(state, q)
        assert len(sent) < 10_000
    return sent


def test_a_met_condition_brakes_the_motion_to_rest_and_says_why(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(np.zeros(6))
    motion = with_reactions(PointToPoint(np.radians([60, 0, 0, 0, 0, 0])), force("z") > 5.0)
    executor = MotionExecutor(motion, guard, model)
    sent = drive(executor, guard, lambda k: [0, 0, 10.0 if k >= 50 else 0.0, 0, 0, 0])
    result = executor.finish()
    assert result.stopped and not result.completed and result.reaction == "force z (N) > 5"
    assert guard.at_rest() and sent[-1][0] < np.radians(55), "stopped short of the target, braked to rest"


def test_a_met_condition_hands_over_to_the_reaction_s_motion(model):
    guard = SetpointGuard(model.limits, PERIOD, CHECKS)
    guard.reset(np.zeros(6))
    retract = PointToPoint(np.zeros(6))
    motion = with_reactions(PointToPoint(np.radians([60, 0, 0, 0, 0, 0])), Reaction(ELAPSED > 0.2, then=retract))
    executor = MotionExecutor(motion, guard, model)
    sent = drive(executor, guard, lambda k: None)
    result = executor.finish()
    assert result.completed and result.reaction == "elapsed time (s) > 0.2"
    assert np.array_equal(sent[-1], np.zeros(6)) and max(q[0] for q in sent) > np.radians(5)
    judge = SetpointGuard(model.limits, PERIOD, CHECKS)
    judge.reset(np.zeros(6))
    for q in sent:  # the hand-over is smooth: every setpoint passes a fresh guard
        judge.commit(judge.check(q))


def test_a_reaction_on_what_the_backend_does_not_measure_is_refused_at_the_start():
    with robohal.connect(FAST) as robot:
        assert robot.state.wrench is None
        before = robot.backend.commanded
        with pytest.raises(InvalidArgument, match="does not measure"):
            robot.move_joints(np.radians([30, 0, 0, 0, 0, 0]), until=force("z") > 5.0)
        assert np.array_equal(robot.backend.commanded, before), "nothing moved"


def test_joint_and_flange_conditions_end_motions_on_the_sim_backend():
    with robohal.connect(FAST) as robot:
        result = robot.move_joints(np.radians([60, 0, 0, 0, 0, 0]), until=joint(0) > np.radians(20))
        assert result.stopped and result.reaction.startswith("joint 0")
        assert np.radians(20) < robot.backend.commanded[0] < np.radians(40)
        robot.move_joints(np.radians([0, 10, 10, 0, 30, 0]), speed=1.0)
        pose = robot.model.forward(robot.backend.commanded)
        x0 = pose[0, 3]
        pose[0, 3] += 0.2
        result = robot.move_linear(pose, until=flange("x") > x0 + 0.05)
        assert result.stopped and x0 + 0.05 < robot.model.forward(robot.backend.commanded)[0, 3] < x0 + 0.15
        held = robot.run(Hold(5.0), until=ELAPSED > 0.1)
        assert held.stopped and held.duration < 0.5
