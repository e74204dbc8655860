"""Coupled joint limits (a parallelogram linkage) are checked before any wire."""

import numpy as np
import pytest
import robohal
from robohal import ModelSpec, hookimpl
from robohal.errors import LimitViolation
from robohal.kinematics import JointLimits, Parallelogram, PlanarTwoLink
from robohal.plugins.registry import registry_with


def linked_arm() -> Parallelogram:
    inner = PlanarTwoLink(0.3, 0.2, JointLimits(np.radians([-170, -90]), np.radians([170, 90]), 2.0, 20.0, 400.0))
    outer = JointLimits(np.radians([-170, -170]), np.radians([170, 170]), 2.0, 20.0, 400.0)
    return Parallelogram(inner, scaling=1.0, driven=0, coupled=1, limits=outer)


class Plugin:
    @hookimpl
    def robohal_models(self):
        return [ModelSpec("test.linked", factory=linked_arm, dof=2)]


def test_model_refuses_joints_whose_linkage_angle_is_out_of_range():
    model = linked_arm()
    assert model.coupled_limits
    model.check_joints(np.radians([40.0, 120.0]))  # linkage angle 80 deg: fine
    with pytest.raises(LimitViolation, match="linkage") as refused:
        model.check_joints(np.radians([0.0, 100.0]))  # each joint in its box, linkage at 100 deg
    assert refused.value.joint == 1


def test_backend_refuses_the_setpoint_before_sending_it():
    registry = registry_with(("linked", Plugin()))  # the builtin (the sim backend) is always there
    q0 = ",".join(str(v) for v in np.radians([0.0, 89.9998]))
    with robohal.connect(f"sim://?model=test.linked&realtime=0&q0={q0}", registry=registry) as robot:
        sent = robot.backend.counters["commands_sent"]
        with pytest.raises(LimitViolation, match="linkage"):
            robot.backend.cycle(np.radians([0.0, 90.0003]))
        with pytest.raises(LimitViolation, match="linkage"):
            robot.move_joints(np.radians([0.0, 100.0]))
        assert robot.backend.counters["commands_sent"] == sent
        assert robot.move_joints(np.radians([20.0, 100.0]), speed=0.5).completed  # linkage at 80 deg


def test_a_parallelogram_describes_its_linkage_as_a_linear_range():
    from robohal.kinematics import Tool

    model = linked_arm()
    ((weights, lower, upper),) = model.linkage_limits
    assert weights == (-1.0, 1.0) and (lower, upper) == pytest.approx(np.radians([-90.0, 90.0]))
    assert Tool(model, np.eye(4)).linkage_limits == model.linkage_limits  # wrappers pass it on
    assert PlanarTwoLink(0.3, 0.2).linkage_limits == ()


@pytest.mark.parametrize("period", [0.001, 0.004])
def test_differential_ik_stops_the_linkage_at_its_limit(period: float):
    """The target needs a linkage angle of 120 deg (limit 90): the joint goals run up to the
    limit and stop there, within every joint's velocity and acceleration limits."""
    from robohal.kinematics import DifferentialIk

    model = linked_arm()
    ik = DifferentialIk(model, period=period)
    start = np.radians([0.0, 60.0])
    ik.reset(start)
    target = model.forward(np.radians([0.0, 120.0]))
    goals = np.array([start, start, start] + [ik.step(target) for _ in range(round(1.5 / period))])
    linkage = goals[:, 1] - goals[:, 0]
    assert linkage.max() <= np.radians(90.0) + 1e-12
    assert linkage.max() > np.radians(89.0), "it went (nearly) as far as the linkage allows"
    velocity = np.diff(goals, axis=0) / period
    acceleration = np.diff(velocity, axis=0) / period
    assert (np.abs(velocity) <= model.limits.velocity * (1 + 1e-9)).all()
    assert (np.abs(acceleration) <= model.limits.acceleration * (1 + 1e-9)).all()
    # against the limit the linkage rests; the arm may still slide along it toward the target
    assert np.abs(np.diff(linkage[-6:])).max() / period < 1e-3
