"""A cell's safety settings on a real (in-process simulated) robot: the speed factor and the
workspace box refuse setpoints before the wire, and the preflight refuses a box too small."""

import math

import numpy as np
import pytest
import robohal
from robohal.errors import InvalidArgument, LimitViolation
from robohal.testing.safety import CellSafety, Workspace

URI = "sim://?model=generic.planar2&realtime=0"


@pytest.fixture
def robot():
    with robohal.connect(URI) as connected:
        connected.move_joints(np.radians([20.0, 40.0]), speed=0.5)  # elbow bent, off the singular start
        yield connected


def box_around(point, half):
    point = np.asarray(point)
    return Workspace(point - half, point + half)


@pytest.mark.parametrize("text, problem", [
    ("1,2,3", "six numbers"), ("a,b,c,d,e,f", "six numbers"), ("0,0,0,1,1,nan", "finite"),
    ("0,0,0,1,-1,1", "empty"),
])
def test_a_bad_box_is_refused_naming_the_problem(text, problem):
    with pytest.raises(InvalidArgument, match=problem):
        Workspace.parse(text)


@pytest.mark.parametrize("speed", [0.0, 1.5, -0.1, math.nan])
def test_a_speed_factor_outside_zero_to_one_is_refused(speed):
    with pytest.raises(InvalidArgument, match="speed factor"):
        CellSafety(speed)


def test_a_motion_that_would_leave_the_box_is_refused_before_the_wire(robot):
    flange = robot.pose[:3, 3]
    margin = np.array([0.05, 0.05, 0.01])
    box = Workspace(flange - margin, flange + margin)
    CellSafety(workspace=box).apply(robot)
    inside = robot.q + np.radians([1.0, 0.0])
    assert robot.move_joints(inside, speed=0.5).completed  # a move inside the box goes
    with pytest.raises(LimitViolation) as refused:
        robot.move_joints(robot.q + np.radians([30.0, 0.0]), speed=0.5)
    assert refused.value.quantity == "workspace" and "outside the cell's workspace box" in str(refused.value)
    # every setpoint that went out kept the flange in the box, the brake's included
    assert box.contains(robot.model.forward(robot.backend.commanded)[:3, 3])
    sent = robot.backend.counters["commands_sent"]
    with pytest.raises(LimitViolation):
        robot.backend.cycle(robot.q + np.radians([30.0, 0.0]))  # a jump out: refused too (by the limits first)
    assert robot.backend.counters["commands_sent"] == sent


def test_the_speed_factor_holds_for_planned_motions_and_refuses_faster_setpoints(robot):
    CellSafety(speed=0.25).apply(robot)
    assert robot.speed == 0.25
    result = robot.move_joints(robot.q + np.radians([20.0, -20.0]), speed=1.0)
    assert result.completed
    velocity = np.abs(np.diff(result.commanded, axis=0)).max(axis=0) / robot.backend.period
    limit = robot.model.limits.velocity
    assert (velocity <= 0.25 * limit * (1 + 1e-6) + 1e-9).all(), "the motion was planned within the factor"
    assert velocity.max() > 0.2 * limit.min(), "and used it"
    robot.speed = 1.0  # a test that asks for more: the guard still holds the cell's factor
    with pytest.raises(LimitViolation) as refused:
        robot.move_joints(robot.q + np.radians([20.0, -20.0]), speed=1.0)
    assert refused.value.quantity == "velocity" and "speed factor 0.25" in str(refused.value)


def test_applying_again_replaces_the_fences(robot):
    safety = CellSafety(speed=0.5, workspace=box_around(robot.pose[:3, 3], 0.2))
    safety.apply(robot)
    safety.apply(robot)
    assert len(robot.backend.guard.fences) == 2
    CellSafety().apply(robot)
    assert robot.backend.guard.fences == [] and robot.speed == 1.0


def test_the_preflight_refuses_a_box_the_suites_moves_would_leave(robot):
    q = robot.q
    flange = robot.pose[:3, 3]
    CellSafety(workspace=box_around(flange, 0.5)).preflight(robot.model, q)  # holds 10 deg moves
    with pytest.raises(InvalidArgument, match="up to 10 deg per joint"):
        CellSafety(workspace=box_around(flange, 0.01)).preflight(robot.model, q)
    with pytest.raises(InvalidArgument, match="starts at"):
        CellSafety(workspace=box_around(flange + 1.0, 0.01)).preflight(robot.model, q)
    with pytest.raises(InvalidArgument, match="scenario's point"):
        CellSafety(workspace=box_around(flange, 0.5)).preflight(robot.model, q, [flange + 0.6])
