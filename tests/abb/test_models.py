"""The ABB models: registered names, tool0 in metres, controller joint convention,
and the IRB 1410 against the DH model from the seed (RAPID, millimetres)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import robohal
from robohal.kinematics import OPW, Parallelogram

NAMES = ["abb.irb120", "abb.irb1200", "abb.irb1300", "abb.irb140", "abb.irb1410", "abb.irb1600",
         "abb.irb2400", "abb.irb2600", "abb.irb4600_40", "abb.irb4600_60"]


def rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def trans(x, y, z):
    t = np.eye(4)
    t[:3, 3] = (x, y, z)
    return t


def rapid_irb1410(j):
    """The seed's RAPID forward kinematics, literally: PoseMult of Rx(alpha) Tx(a) Rz(theta + j) Tz(d),
    with an extra Rz(-j2) after frame 3; millimetres."""
    alpha = np.radians([0, -90, 0, -90, 90, 90])
    a = [0, 150, 600, 120, 0, 0]
    theta = np.radians([0, -90, 0, 0, -180, 0])
    d = [475, 0, 0, 720, 0, 85]
    pose = np.eye(4)
    for i in range(6):
        link = rx(alpha[i]) @ trans(a[i], 0, 0) @ rz(theta[i] + j[i]) @ trans(0, 0, d[i])
        if i == 2:
            link = link @ rz(-j[1])
        pose = pose @ link
    return pose


def test_every_model_is_registered_with_limits():
    registered = {spec.name: spec for spec in robohal.models()}
    for name in NAMES:
        assert name in registered and registered[name].dof == 6
        model = robohal.get_model(name)
        assert model.dof == 6
        assert (model.limits.lower < 0).all() and (model.limits.upper > 0).all()
        assert (model.limits.velocity > 0.5).all() and (model.limits.velocity < 15).all()


def test_irb1410_equals_the_rapid_dh_model():
    model = robohal.get_model("abb.irb1410")
    assert isinstance(model, Parallelogram)
    rng = np.random.default_rng(0)
    for j in rng.uniform(-2.0, 2.0, (300, 6)):
        expected = rapid_irb1410(j)
        expected[:3, 3] /= 1000.0
        np.testing.assert_allclose(model.forward(j), expected, atol=1e-9)


def test_irb1410_tool_orientation_is_unchanged_when_only_j2_moves():
    model = robohal.get_model("abb.irb1410")
    q = np.radians([10, 0, 20, 30, 40, 50])
    start = model.forward(q)
    for j2 in np.radians([-60, -20, 25, 60]):
        moved = q.copy()
        moved[1] = j2
        pose = model.forward(moved)
        np.testing.assert_allclose(pose[:3, :3], start[:3, :3], atol=1e-12)
        assert np.abs(pose[:3, 3] - start[:3, 3]).max() > 0.01  # but the tool did move


def test_irb1410_tool0_at_zero_joints():
    pose = robohal.get_model("abb.irb1410").forward(np.zeros(6))
    np.testing.assert_allclose(pose[:3, 3], [0.955, 0.0, 1.195], atol=1e-12)
    np.testing.assert_allclose(pose[:3, 2], [1.0, 0.0, 0.0], atol=1e-12)


def test_irb2400_tool0_at_zero_joints_and_geometric_option():
    model = robohal.get_model("abb.irb2400")
    np.testing.assert_allclose(model.forward(np.zeros(6))[:3, 3], [0.940, 0.0, 1.455], atol=1e-12)
    geometric = robohal.get_model("abb.irb2400", controller_joints=False)
    assert isinstance(geometric, OPW)
    q = np.radians([10, 20, 30, 40, 50, 60])
    controller = q.copy()
    controller[2] += q[1]
    np.testing.assert_allclose(model.forward(controller), geometric.forward(q), atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_inverse_round_trip_within_limits(name):
    model = robohal.get_model(name)
    rng = np.random.default_rng(3)
    low, high = model.limits.lower, model.limits.upper
    hits = 0
    for _ in range(60):
        q = rng.uniform(np.maximum(low, -np.pi), np.minimum(high, np.pi))
        if not model._admissible(q.tolist()):
            continue
        pose = model.forward(q)
        found = model.inverse(pose)
        assert found.found, found.reason
        assert model.limits.within(found).all()
        assert (np.abs((np.asarray(found) - q + np.pi) % (2 * np.pi) - np.pi).max(axis=1) < 1e-8).any()
        cont = model.inverse_continuing(pose, q)
        np.testing.assert_allclose(cont[0], q, atol=1e-8)
        hits += 1
    assert hits > 20
