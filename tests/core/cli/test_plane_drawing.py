"""robohal.cli.plane_drawing: drawing on a horizontal plane with a 6- or 7-axis arm, the tool
pointing down (the default origin, the pen-up moves, the checks before anything moves), a real
draw on the Franka simulator, and `robohal draw --dry-run`, which touches no hardware."""

from __future__ import annotations

import re
import socket
import subprocess
from pathlib import Path

import numpy as np
import pytest
import robohal
from click.testing import CliRunner
from robohal.cli import drawing, plane_drawing
from robohal.cli.main import main
from robohal.errors import LimitViolation, UnreachableError
from robohal.plugins.registry import default_registry

ARMS = [spec.name for spec in default_registry().models() if spec.source is None and spec.dof >= 6]
DOWN = np.array([0.0, 0.0, -1.0])


def test_every_bundled_arm_has_one():
    assert {"franka.fr3", "franka.panda", "abb.irb1410", "abb.irb120"} <= set(ARMS)


@pytest.mark.parametrize("name", ARMS)
def test_the_default_origin_is_in_front_and_a_shape_there_is_drawn_tool_down(name: str) -> None:
    model = default_registry().get_model(name)
    origin = plane_drawing.default_origin(model)
    assert origin[0] > 0 and origin[1] == 0 and origin[2] > 0, "in front of the arm, above its base"
    # the first shares fit every bundled arm: no search past them
    reach = plane_drawing.horizontal_reach(model)
    assert np.allclose(origin, [0.6 * reach, 0.0, 0.35 * reach])
    plan = plane_drawing.plan_on_plane(model, drawing.square((0.0, 0.0), 0.05), period=0.004)
    flange = model.forward(plan.joints)
    assert np.abs(flange[:, :3, 3] - plan.positions).max() < 1e-9, "the tool on the planned points"
    assert np.abs(flange[:, :3, 2] - DOWN).max() < 1e-9, "pointing down"
    assert np.allclose(plan.positions[:, 2], origin[2]) and np.allclose(plan.plane[:3, 3], origin)
    model.check_joints(np.vstack([plan.joints, *plan.travels]))


def test_the_tool_is_lowered_onto_each_stroke_and_lifted_between() -> None:
    model = default_registry().get_model("franka.fr3")
    segments = drawing.line((0.0, -0.02), (0.0, 0.02)) + drawing.line((0.02, 0.02), (0.02, -0.02))
    lift = 0.04
    plan = plane_drawing.plan_on_plane(model, segments, period=0.001, lift=lift)
    assert len(plan.travels) == len(plan.strokes) + 1 == 3
    heights = [model.forward(joints)[:, 2, 3] - plan.plane[2, 3] for joints in plan.travels]
    assert heights[0][0] == pytest.approx(lift) and abs(heights[0][-1]) < 1e-9, "lowered onto the first"
    assert abs(heights[1][0]) < 1e-9 and heights[1].max() == pytest.approx(lift), "up and over to the second"
    assert heights[2][-1] == pytest.approx(lift), "lifted after the last"
    for index, (a, b) in enumerate(plan.strokes):  # each piece starts where the last ended
        assert np.abs(plan.travels[index][-1] - plan.joints[a]).max() < 1e-9
        assert np.abs(plan.joints[b - 1] - plan.travels[index + 1][0]).max() < 1e-9
    limits = model.limits
    for piece in (*plan.travels, *(plan.joints[a:b] for a, b in plan.strokes)):
        assert (np.abs(np.diff(piece, axis=0)) / plan.period <= limits.velocity).all()
        assert (np.abs(np.diff(piece, n=2, axis=0)) / plan.period**2 <= limits.acceleration).all()
        assert (np.abs(np.diff(piece, n=3, axis=0)) / plan.period**3 <= limits.jerk).all()


def test_a_shape_out_of_reach_is_refused_before_anything_moves_and_named() -> None:
    with robohal.connect("sim://?model=abb.irb120&realtime=0") as robot:
        before = robot.backend.counters["commands_sent"]
        # the first point out of reach is where the tool comes down onto the circle
        with pytest.raises(UnreachableError, match=r"the pen-up move 10 mm above \(300.0, 0.0\) mm, at \(0.688"
                                                   r".* cannot be reached with the tool pointing down: the wrist"):
            plane_drawing.plan_on_plane(robot.model, drawing.circle((0.0, 0.0), 0.3), period=robot.backend.period,
                                        lift=0.01)
        with pytest.raises(UnreachableError, match=r"point \(19\d\.\d, 0.0\) mm of the shape, at .* m, cannot be"):
            plane_drawing.plan_on_plane(robot.model, drawing.line((0.0, 0.0), (0.3, 0.0)), period=robot.backend.period)
        assert robot.backend.counters["commands_sent"] == before


def test_setpoints_the_backend_refuses_are_refused_in_the_plan() -> None:
    model = default_registry().get_model("abb.irb1410")

    def no_turning_base(joints) -> None:
        if np.abs(joints[..., 0]).max() > 0.01:
            raise LimitViolation("the base may not turn", joint=0, quantity="position")

    with pytest.raises(UnreachableError, match="refuses: the base may not turn"):
        plane_drawing.plan_on_plane(model, drawing.circle((0.0, 0.0), 0.05), period=0.004, check=no_turning_base)


def test_a_path_too_fast_for_the_joints_is_slowed_and_says_so() -> None:
    model = default_registry().get_model("franka.fr3")
    plan = plane_drawing.plan_on_plane(model, drawing.line((-0.1, 0.0), (0.1, 0.0)), period=0.001, speed=5.0,
                                       acceleration=100.0, jerk=5000.0)
    assert plan.speed < 5.0 and plan.top_speed <= plan.speed * (1 + 1e-9)
    assert re.fullmatch(r"asked 5000 mm/s; slowed to \d+ mm/s for the joints' [a-z -]+ limits.*", plan.speed_note)
    steps = np.abs(np.diff(plan.joints, axis=0)) / plan.period
    assert (steps <= model.limits.velocity).all()


def test_the_arms_own_posture_seeds_the_path_where_it_can() -> None:
    model = default_registry().get_model("franka.fr3")
    shape = drawing.circle((0.0, 0.0), 0.02)
    middle = plane_drawing.plan_on_plane(model, shape, period=0.004)
    leaning = middle.travels[0][0] + np.array([0.0, 0.0, 0.3, 0.0, 0.0, 0.0, 0.0])  # the elbow turned aside
    seeded = plane_drawing.plan_on_plane(model, shape, period=0.004, start=leaning)
    assert np.abs(seeded.travels[0][0] - leaning).max() < np.abs(middle.travels[0][0] - leaning).max()
    assert np.abs(model.forward(seeded.joints)[:, :3, 3] - seeded.positions).max() < 1e-9


def test_draw_on_the_franka_simulator_keeps_within_a_millimetre_of_the_path(tmp_path: Path) -> None:
    """The done-when of `robohal draw` on a 7-axis arm: two strokes streamed on the FCI simulator
    (the real pylibfranka), the tool lifted between them; the tool's largest 3-D distance from
    the planned path, measured at every control cycle: 0.06 mm."""
    letters = tmp_path / "two.txt"
    letters.write_text("0 -0.02\n0 0.02\nup\n0.02 0.02\n0.02 -0.02\n0.04 -0.02\n")
    plot = tmp_path / "two.png"
    result = CliRunner().invoke(main, ["draw", "franka://sim", "polyline", "--file", str(letters), "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert "connected: franka://sim?model=franka.fr3 (simulated)" in result.output
    assert "100.0 mm of path in 2 strokes (tool lifted between strokes)" in result.output
    found = re.search(r"drawn: [0-9.]+ s of path streamed through servo at 50 Hz, measured pen within ([0-9.]+) mm",
                      result.output)
    assert found is not None, result.output
    assert float(found.group(1)) < 1.0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_draw_lifts_the_tool_between_strokes_on_the_arm() -> None:
    segments = drawing.line((0.0, -0.02), (0.0, 0.02)) + drawing.line((0.02, 0.02), (0.02, -0.02))
    with robohal.connect("sim://?model=franka.fr3&realtime=0&rate=1000&lag=0") as robot:
        plan = plane_drawing.plan_on_plane(robot.model, segments, period=robot.backend.period,
                                           start=robot.commanded, check=robot.backend.check_setpoints)
        results = drawing.draw(robot, plan)
        assert [result.completed for result in results] == [True, True]
        for result, (a, b) in zip(results, plan.strokes, strict=True):
            assert np.allclose(result.commanded, plan.joints[a:b]), "each stroke as planned"
        assert drawing.path_deviation(robot.model, plan, results) < 1e-6
        end = robot.model.forward(robot.commanded)[:3, 3]
    assert end == pytest.approx(plan.positions[-1] + [0.0, 0.0, plane_drawing.DEFAULT_LIFT], abs=1e-9), \
        "lifted off the last stroke's end"


@pytest.mark.parametrize("uri", ["franka://sim", "abb-egm://sim", "arduino-planar://sim?firmware=simavr",
                                 "franka://172.16.0.2?model=franka.fr3&gripper=1",
                                 "abb-egm://0.0.0.0:6510?model=abb.irb1410&robot=192.168.125.1",
                                 "arduino-planar:///dev/ttyACM0?tool=pen"])
def test_a_dry_run_touches_no_hardware(uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """No simulator process started, no socket, no serial port: the plan comes from the URI and
    the model alone."""
    import serial

    def refuse(*args, **kwargs):
        raise AssertionError(f"a dry run opened {args[:1]}")

    for owner, name in ((subprocess, "Popen"), (socket, "socket"), (serial, "Serial")):
        monkeypatch.setattr(owner, name, refuse)
    result = CliRunner().invoke(main, ["draw", uri, "circle", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("dry run: ") and "connected:" not in result.output
    assert "circle: 125.7 mm of path" in result.output and "drawn:" not in result.output


def test_a_dry_run_plot_shows_the_plan(tmp_path: Path) -> None:
    plot = tmp_path / "plan.png"
    result = CliRunner().invoke(main, ["draw", "abb-egm://sim", "square", "--dry-run", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert f"plot: {plot}" in result.output and plot.stat().st_size > 1000
