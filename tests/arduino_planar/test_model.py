"""arduino.planar2: the registered servo arm and its options."""

from __future__ import annotations

import math

import numpy as np
import pytest
import robohal
from robohal.errors import InvalidArgument


def test_registered_with_the_desk_arm_defaults():
    spec = {s.name: s for s in robohal.models()}["arduino.planar2"]
    assert spec.dof == 2
    model = robohal.get_model("arduino.planar2")
    assert (model.l1, model.l2) == (0.10, 0.08)
    np.testing.assert_allclose(model.limits.upper, np.radians([90, 90]))
    np.testing.assert_allclose(model.limits.lower, np.radians([-90, -90]))
    np.testing.assert_allclose(model.limits.velocity, np.radians([180, 180]))
    assert (model.limits.acceleration > model.limits.velocity).all()
    np.testing.assert_allclose(model.forward([0.0, 0.0])[:3, 3], [0.18, 0.0, 0.0])


def test_options_change_links_and_limits():
    model = robohal.get_model("arduino.planar2", l1=0.2, l2=0.15, lower=(-1.0, -2.0), upper=(1.0, 2.0), speed=1.0)
    np.testing.assert_allclose(model.forward([math.pi / 2, 0.0])[:2, 3], [0.0, 0.35], atol=1e-15)
    assert model.limits.velocity.tolist() == [1.0, 1.0]
    with pytest.raises(InvalidArgument):
        robohal.get_model("arduino.planar2", l1=-0.1)


def test_servo_limits_filter_the_elbow_solutions():
    model = robohal.get_model("arduino.planar2")
    # straight ahead at 0.15 m both elbows fit the servo range; at 0.12 m the elbow would need 97 deg
    both = model.inverse_xy([0.15, 0.0])
    assert len(both) == 2 and {model.solution_label(q) for q in both} == {"elbow up", "elbow down"}
    assert not model.inverse_xy([0.12, 0.0]).found
    # a target behind the base needs the shoulder past 90 deg: nothing within the servo range
    behind = model.inverse_xy([-0.12, -0.05])
    assert not behind.found and "limits" in behind.reason
