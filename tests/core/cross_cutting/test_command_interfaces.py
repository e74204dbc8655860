"""Robots that take no joint torques (the in-process sim, an ABB arm over EGM, the Arduino servo
arm) refuse torque motions at the call, saying what they take: the capability is each backend's
declaration, and nothing is sent."""

from __future__ import annotations

import numpy as np
import pytest
import robohal
from robohal.control.lifecycle import LifecycleState
from robohal.errors import Unsupported
from robohal.motion import PointToPoint
from robohal.motion.reactions import ELAPSED, Reaction
from robohal.motion.torque import AppliedTorque, AppliedWrench, CartesianImpedance, JointImpedance

URIS = ["sim://?model=generic.planar2", "abb-egm://sim?model=abb.irb1410",
        "arduino-planar://sim?model=arduino.planar2&firmware=emulator"]


@pytest.mark.parametrize("uri", URIS, ids=["sim", "egm", "servo-arm"])
def test_a_robot_without_torques_refuses_torque_motions_at_the_call(uri):
    with robohal.connect(uri) as robot:
        assert robot.command_interfaces == frozenset({"joint_position"})
        before = robot.commanded
        sent = robot.backend.counters["commands_sent"]
        dof = robot.model.dof
        motions = [JointImpedance(), CartesianImpedance(), AppliedTorque(np.zeros(dof)), AppliedWrench(np.zeros(6)),
                   PointToPoint(before, 0.5)]  # the last: refused for what its reaction hands over to
        for motion in motions:
            until = Reaction(ELAPSED > 1.0, then=JointImpedance()) if isinstance(motion, PointToPoint) else None
            with pytest.raises(Unsupported, match="needs joint torque commands, and this robot takes joint position"
                                                  " commands only; nothing was sent"):
                robot.run(motion, until=until, wait=False)
        with pytest.raises(Unsupported, match="Teach needs joint torque"):
            robot.teach(duration=1.0)
        assert robot.lifecycle is LifecycleState.READY
        np.testing.assert_array_equal(robot.commanded, before)
        assert robot.backend.counters["commands_sent"] == sent
