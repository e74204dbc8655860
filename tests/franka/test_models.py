"""franka.fr3 and franka.panda: the published modified-DH kinematics and limit tables."""

from __future__ import annotations

import math

import numpy as np
import robohal
from robohal.kinematics import Kinematics

READY = np.array([0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2, math.pi / 4])


def test_models_are_registered_with_seven_joints():
    names = {spec.name: spec for spec in robohal.models()}
    for name in ("franka.fr3", "franka.panda"):
        assert names[name].dof == 7
        assert robohal.get_model(name).dof == 7


def test_ready_pose_flange_position_and_orientation():
    model = robohal.get_model("franka.fr3")
    pose = model.forward(READY)
    np.testing.assert_allclose(pose[:3, 3], [0.3069, 0.0, 0.5903], atol=1e-4)
    np.testing.assert_allclose(pose[:3, 2], [0.0, 0.0, -1.0], atol=1e-12)  # pointing down


def test_hand_tcp_is_offset_along_the_flange_axis_and_turned():
    flange = robohal.get_model("franka.fr3").forward(READY)
    tcp = robohal.get_model("franka.fr3", hand=True).forward(READY)
    np.testing.assert_allclose(tcp[:3, 3], flange[:3, 3] + 0.1034 * flange[:3, 2], atol=1e-12)
    angle = math.atan2(tcp[:3, 0] @ flange[:3, 1], tcp[:3, 0] @ flange[:3, 0])  # hand x in the flange frame
    assert abs(angle + math.pi / 4) < 1e-12


def test_limit_tables():
    fr3 = robohal.get_model("franka.fr3").limits
    # franka_description's FR3 URDF (and the FCI table control-parameters-joint-fr3.csv)
    np.testing.assert_allclose(fr3.upper, [2.7437, 1.7837, 2.9007, -0.1518, 2.8065, 4.5169, 3.0159])
    np.testing.assert_allclose(fr3.lower, [-2.7437, -1.7837, -2.9007, -3.0421, -2.8065, 0.5445, -3.0159])
    np.testing.assert_allclose(fr3.velocity, [2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26])
    assert (fr3.acceleration == 10).all() and (fr3.jerk == 5000).all()
    panda = robohal.get_model("franka.panda").limits
    np.testing.assert_allclose(panda.upper[3], -0.0698)
    np.testing.assert_allclose(panda.jerk, [7500, 3750, 5000, 6250, 7500, 10000, 10000])
    assert fr3.within(READY) and panda.within(READY)


def test_jacobian_and_inverse():
    model = robohal.get_model("franka.fr3")
    np.testing.assert_allclose(model.jacobian(READY), Kinematics.jacobian(model, READY), atol=1e-6)
    rng = np.random.default_rng(4)
    for _ in range(3):
        q = rng.uniform(model.limits.lower + 0.1, model.limits.upper - 0.1)
        pose = model.forward(q)
        found = model.inverse(pose)
        assert found.found and model.limits.within(found).all()
        np.testing.assert_allclose(model.forward(found[0]), pose, atol=1e-6)
        continuing = model.inverse_continuing(pose, q + 0.01)
        np.testing.assert_allclose(model.forward(continuing[0]), pose, atol=1e-6)
        assert np.abs(continuing[0] - q).max() < 0.05
