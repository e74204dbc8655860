"""The pieces of the motion plots: joint names, gaps between motions, the joint panel's legend."""

from types import SimpleNamespace

import numpy as np
import pytest
from robohal.cli.plots import draw_joints, joint_labels, matplotlib_pyplot, with_gaps


def test_joints_are_named_from_the_model_where_it_names_them():
    assert joint_labels(SimpleNamespace(joint_names=("shoulder", "elbow")), 2) == ["shoulder", "elbow"]
    assert joint_labels(SimpleNamespace(), 3) == ["joint 1", "joint 2", "joint 3"]
    assert joint_labels(None, 2) == ["joint 1", "joint 2"]
    # names that do not fit the data are not the data's
    assert joint_labels(SimpleNamespace(joint_names=("a", "b", "c")), 2) == ["joint 1", "joint 2"]


def test_parts_are_joined_with_one_nan_row_between_each_two():
    joined = with_gaps([np.zeros((3, 2)), np.ones((2, 2)), np.full((1, 2), 2.0)])
    assert joined.shape == (3 + 1 + 2 + 1 + 1, 2)
    assert np.isnan(joined).all(axis=1).tolist() == [False] * 3 + [True] + [False] * 2 + [True] + [False]
    assert with_gaps([np.arange(3.0)]).tolist() == [0.0, 1.0, 2.0]  # one part: nothing to break
    assert with_gaps([np.arange(2.0), np.arange(2.0)]).shape == (5,)


def test_the_joint_panel_names_each_measured_joint_in_its_legend():
    plt = matplotlib_pyplot()
    if plt is None:
        pytest.skip("matplotlib is not installed")
    fig, axis = plt.subplots()
    try:
        t = np.linspace(0.0, 1.0, 5)
        q = np.column_stack([t, -t])
        draw_joints(axis, t, q + 0.01, q, ["shoulder", "elbow"])
        assert [text.get_text() for text in axis.get_legend().get_texts()] == ["shoulder", "elbow"]
        commanded, measured = axis.get_lines()[:2], axis.get_lines()[2:]
        assert all(line.get_linestyle() == "--" for line in commanded)
        # each joint's commanded and measured lines share a colour
        assert [line.get_color() for line in commanded] == [line.get_color() for line in measured]
        assert np.allclose(measured[0].get_ydata(), np.degrees(t))
    finally:
        plt.close(fig)
