"""The arm's geometry for the page: link cylinders, joint colours by limit margin, meshes."""

import numpy as np
import pytest
import robohal
from robohal import spatial
from robohal.view.scene import (
    AMBER,
    GREEN,
    RED,
    cylinder_mesh,
    frame_origins,
    margin_colours,
    margins,
    segments,
    sphere_mesh,
)

MODELS = ["franka.fr3", "abb.irb1410", "arduino.planar2", "generic.planar2"]


@pytest.mark.parametrize("name", MODELS)
def test_origins_run_from_the_base_to_the_flange(name):
    model = robohal.get_model(name)
    q = model.limits.centre
    points = frame_origins(model, q)
    assert points.shape == (model.dof + 2, 3)
    np.testing.assert_array_equal(points[0], 0.0)
    np.testing.assert_allclose(points[-1], model.forward(q)[:3, 3], atol=1e-12)


def test_a_segment_s_cylinder_spans_it():
    rng = np.random.default_rng(3)
    points = np.concatenate([rng.normal(size=(6, 3)), [[0.0, 0.0, -1.0], [0.0, 0.0, -3.0], [0.0, 0.0, -3.0]]])
    start, quat, length = segments(points)
    rotation = spatial.quat_to_matrix(quat)
    ends = start + rotation[:, :, 2] * length[:, None]  # the unit cylinder's +z, scaled to the length
    np.testing.assert_allclose(ends, points[1:], atol=1e-12)  # straight down and zero length included
    np.testing.assert_allclose(np.linalg.norm(quat, axis=-1), 1.0)


def test_margins_are_one_in_the_middle_and_zero_at_a_limit():
    limits = robohal.get_model("franka.fr3").limits
    np.testing.assert_allclose(margins(limits.centre, limits), 1.0)
    np.testing.assert_allclose(margins(limits.upper, limits), 0.0, atol=1e-12)
    np.testing.assert_allclose(margins(limits.lower, limits), 0.0, atol=1e-12)
    beyond = margins(limits.upper + 1.0, limits)
    np.testing.assert_array_equal(beyond, 0.0)


def test_a_joint_turns_from_green_through_amber_to_red_near_its_limit():
    colours = margin_colours(np.array([1.0, 0.3, 0.125, 0.0]))
    np.testing.assert_array_equal(colours[0], GREEN)
    np.testing.assert_array_equal(colours[1], GREEN)
    np.testing.assert_array_equal(colours[2], AMBER)
    np.testing.assert_array_equal(colours[3], RED)
    assert colours.dtype == np.uint8


@pytest.mark.parametrize("mesh", [cylinder_mesh, sphere_mesh])
def test_meshes_are_closed(mesh):
    vertices, faces = mesh()
    assert faces.max() < len(vertices)
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert (counts == 2).all()  # every edge shared by two faces: no hole
