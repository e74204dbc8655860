"""The measured force as an arrow on the page: where it runs, when it shows, and that the live view
shows it while the robot feels a force and hides it when it lets go."""

from __future__ import annotations

import numpy as np
import pytest
import robohal
from robohal.state import RobotState
from robohal.view import serve
from robohal.view.wrench import FELT_FROM, LONGEST, METRES_PER_NEWTON, WrenchArrow, arrow, cone_mesh

from .conftest import wait_for


def test_the_arrow_pushes_on_the_flange_along_the_force():
    flange = np.array([0.3, 0.1, 0.5])
    tail, head = arrow(flange, np.array([0.0, 0.0, 12.0]))  # a plane under the flange pushes it up
    np.testing.assert_array_equal(head, flange)
    np.testing.assert_allclose(tail, flange - [0.0, 0.0, 12.0 * METRES_PER_NEWTON])
    tail, _ = arrow(flange, np.array([3000.0, 0.0, 0.0]))  # a collision's force: the longest arrow
    np.testing.assert_allclose(tail, flange - [LONGEST, 0.0, 0.0])
    assert arrow(flange, np.array([0.0, FELT_FROM * 0.9, 0.0])) is None  # noise: none
    assert arrow(flange, np.array([np.nan, 0.0, 0.0])) is None


def test_the_head_is_a_closed_cone():
    vertices, faces = cone_mesh()
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert (counts == 2).all()
    assert vertices[:, 2].max() == 1.0 and vertices[:, 2].min() == 0.0


class Part:
    def __init__(self) -> None:
        self.visible = True

    def remove(self) -> None:
        self.visible = None


class Scene:
    def add_batched_meshes_simple(self, name, vertices, faces, **_):
        return Part()


def test_the_arrow_shows_while_a_force_is_felt():
    drawn = WrenchArrow(Scene(), "/robot/wrench", 0.01)
    assert not drawn.visible
    drawn.show(np.array([0.3, 0.0, 0.5]), np.array([0.0, 0.0, 8.0, 0.0, 0.0, 0.0]))
    assert drawn.visible and drawn.shaft.visible and drawn.head.visible
    tip = drawn.head.batched_positions[0] + [0, 0, drawn.head.batched_scales[0][2]]
    np.testing.assert_allclose(tip, [0.3, 0.0, 0.5], atol=1e-12)  # the head touches the flange
    assert drawn.shaft.batched_scales[0][2] + drawn.head.batched_scales[0][2] == pytest.approx(0.08)
    drawn.show(np.array([0.3, 0.0, 0.5]), np.zeros(6))
    assert not drawn.visible and not drawn.shaft.visible
    drawn.show(np.array([0.3, 0.0, 0.5]), None)  # a robot that measures no wrench
    assert not drawn.visible


def test_the_live_page_shows_the_robot_s_measured_force(port):
    with robohal.connect("sim://?model=franka.fr3") as robot:
        felt = {"force": np.array([0.0, 0.0, 6.0, 0.0, 0.0, 0.0])}
        read = robot.backend.read

        def with_a_wrench() -> RobotState:  # the in-process sim measures none: give it one
            state = read()
            return RobotState(state.time, state.q, state.dq, state.mode, state.faults, state.q_commanded,
                              dict(state.info), felt["force"])

        robot.backend.read = with_a_wrench
        with serve(robot, port=port) as view:
            station = view._stations[0]
            wait_for(lambda: station.arrow.visible, "the arrow to show the force")
            felt["force"] = np.zeros(6)
            wait_for(lambda: not station.arrow.visible, "the arrow to go with the force")
