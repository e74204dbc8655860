"""Payload: a rigid load on the flange, checked when made; refused by a backend that takes none."""

from __future__ import annotations

import math

import numpy as np
import pytest
import robohal
from robohal import Payload
from robohal.errors import InvalidArgument, Unsupported


def test_a_payload_in_si_units():
    payload = Payload(1.5, [0.0, 0.0, 0.05], np.diag([1e-3, 1e-3, 2e-3]))
    assert payload.mass == 1.5 and payload.center_of_mass.shape == (3,) and payload.inertia.shape == (3, 3)
    assert np.array_equal(Payload(0.2).inertia, np.zeros((3, 3)))  # a point mass
    with pytest.raises(ValueError):
        payload.center_of_mass[0] = 1.0  # frozen: what was sent stays what it says


@pytest.mark.parametrize("mass, center, inertia, problem", [
    (-1.0, None, None, "mass"),
    (math.nan, None, None, "mass"),
    (True, None, None, "mass"),
    (1.0, [0.0, math.inf, 0.0], None, "center_of_mass"),
    (1.0, [0.0, 0.0], None, "center_of_mass"),
    (1.0, None, [[1.0, 0.5, 0], [0, 1.0, 0], [0, 0, 1.0]], "symmetric"),
    (1.0, None, np.diag([1.0, -1.0, 1.0]), "positive"),
])
def test_a_bad_payload_is_refused_when_made(mass, center, inertia, problem):
    args = {"center_of_mass": center} if center is not None else {}
    if inertia is not None:
        args["inertia"] = inertia
    with pytest.raises(InvalidArgument, match=problem):
        Payload(mass, **args)


def test_a_robot_that_takes_no_payload_says_so_and_keeps_none():
    with robohal.connect("sim://?model=generic.planar2&realtime=0") as robot:
        with pytest.raises(Unsupported, match="no payload"):
            robot.payload = Payload(0.1)
        assert robot.payload is None
        with pytest.raises(InvalidArgument, match="Payload"):
            robot.payload = 0.1
