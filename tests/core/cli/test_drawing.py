"""robohal.cli.drawing (shapes, time parametrisation, elbow choice, refusing unreachable shapes),
robohal.cli.jog and the `robohal draw` / `robohal jog` commands, on the in-process sim backend."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
import robohal
from click.testing import CliRunner
from robohal.cli import drawing
from robohal.cli.jog import JogSession, parse_keys, run_jog
from robohal.cli.main import main
from robohal.errors import InvalidArgument, UnreachableError
from robohal.plugins.registry import default_registry

PERIOD = 0.01
SIM = "sim://?model=generic.planar2&realtime=0&rate=100"


@pytest.fixture(scope="module")
def model():
    return default_registry().get_model("generic.planar2")


def test_circle_points_lie_on_the_circle_and_close(model) -> None:
    centre, radius = np.array([0.35, 0.05]), 0.1
    points = drawing.sample_path(drawing.circle(centre, radius), PERIOD, speed=0.2)
    assert np.allclose(np.hypot(*(points - centre).T), radius, atol=1e-12)
    assert np.allclose(points[0], points[-1], atol=1e-9)  # a full turn
    steps = np.hypot(*np.diff(points, axis=0).T)
    assert steps.max() <= 0.2 * PERIOD * (1 + 1e-9)  # never faster than the asked speed


def test_square_stops_at_each_corner(model) -> None:
    points = drawing.sample_path(drawing.square((0.35, 0.0), 0.1), PERIOD, speed=0.2)
    corners = np.array([[0.3, -0.05], [0.4, -0.05], [0.4, 0.05], [0.3, 0.05]])
    for corner in corners:
        hits = np.flatnonzero(np.hypot(*(points - corner).T) < 1e-12)
        assert hits.size, f"the path misses the corner {corner}"
        # rest-to-rest per side: the samples around a corner are close together
        k = hits[0]
        if 0 < k < len(points) - 1:
            assert np.hypot(*(points[k + 1] - points[k])) < 0.2 * PERIOD * 0.1


def test_profile_is_jerk_limited_along_the_path(model) -> None:
    points = drawing.sample_path(drawing.line((0.3, 0.0), (0.45, 0.1)), PERIOD, speed=0.2,
                                 acceleration=1.0, jerk=10.0)
    s = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(points, axis=0).T))])
    v = np.diff(s) / PERIOD
    a = np.diff(v) / PERIOD
    j = np.diff(a) / PERIOD
    assert v.max() <= 0.2 + 1e-9 and np.abs(a).max() <= 1.0 + 1e-6 and np.abs(j).max() <= 10.0 * 1.01


def test_elbow_choice_gives_the_asked_branch(model) -> None:
    segments = drawing.circle((0.35, 0.05), 0.08)
    up = drawing.plan_drawing(model, segments, period=PERIOD, elbow="up")
    down = drawing.plan_drawing(model, segments, period=PERIOD, elbow="down")
    assert (up.joints[:, 1] < 0).all() and (down.joints[:, 1] > 0).all()
    for plan in (up, down):  # both draw the same pen path
        assert np.allclose(model.forward(plan.joints)[:, :2, 3], plan.points, atol=1e-9)
    near_down = drawing.plan_drawing(model, segments, period=PERIOD, elbow="auto", start=down.joints[0])
    assert near_down.elbow == "down"


def test_unreachable_shape_refused_before_moving(model) -> None:
    with robohal.connect(SIM) as robot:
        before = robot.backend.counters["commands_sent"]
        with pytest.raises(UnreachableError, match="reaches at most"):
            drawing.plan_drawing(model, drawing.circle((0.5, 0.0), 0.1), period=robot.backend.period)
        assert robot.backend.counters["commands_sent"] == before


def test_too_fast_shape_is_slowed_to_the_joint_limits(model) -> None:
    plan = drawing.plan_drawing(model, drawing.circle((0.35, 0.0), 0.15), period=PERIOD, speed=5.0,
                                acceleration=100.0, jerk=5000.0)
    assert plan.speed < 5.0
    dq = np.abs(np.diff(plan.joints, axis=0)) / PERIOD
    assert (dq <= model.limits.velocity).all()
    assert plan.top_speed <= plan.speed * (1 + 1e-9)
    assert plan.speed_note.startswith(f"asked 5000 mm/s; slowed to {plan.speed * 1000:.0f} mm/s for the joints'")


def test_the_speed_printed_is_the_speed_drawn_and_a_limit_that_lowers_it_is_said() -> None:
    runner = CliRunner()
    asked = runner.invoke(main, ["draw", SIM, "circle", "--radius", "0.05", "--dry-run"])
    assert asked.exit_code == 0, asked.output
    assert re.search(r" at up to 50 mm/s, elbow", asked.output), asked.output
    fast = runner.invoke(main, ["draw", SIM, "circle", "--radius", "0.05", "--speed", "50", "--dry-run"])
    assert fast.exit_code == 0, fast.output
    found = re.search(r" at up to (\d+) mm/s \(asked 50000 mm/s; (.*)\), elbow", fast.output)
    assert found is not None, fast.output
    with robohal.connect(SIM) as robot:  # the same plan: its pen's fastest step is what was printed
        middle = drawing.workspace_middle(robot.model)[0]
        plan = drawing.plan_drawing(robot.model, drawing.circle(middle, 0.05), period=robot.backend.period, speed=50)
    steps = np.hypot(*np.diff(plan.points, axis=0).T) / plan.period
    assert int(found.group(1)) == round(steps.max() * 1000) < 50000
    assert "too short to reach" in found.group(2) or "slowed to" in found.group(2)


def test_draw_moves_the_pen_along_the_path() -> None:
    with robohal.connect(SIM) as robot:
        plan = drawing.plan_drawing(robot.model, drawing.line((0.3, -0.1), (0.4, 0.1)),
                                    period=robot.backend.period, speed=0.3, elbow="down")
        (result,) = drawing.draw(robot, plan)
        assert result.completed
        assert np.allclose(result.commanded, plan.joints)
        assert np.allclose(robot.pose[:2, 3], [0.4, 0.1], atol=0.01)


def test_bad_shapes_are_clear_errors(tmp_path) -> None:
    with pytest.raises(InvalidArgument):
        drawing.circle((0.3, 0.0), -1)
    with pytest.raises(InvalidArgument):
        drawing.line((0.3, 0.0), (0.3, 0.0))
    bad = tmp_path / "bad.txt"
    bad.write_text("0.1 0.2\nnot a number\n")
    with pytest.raises(InvalidArgument, match=r"bad\.txt:2"):
        drawing.read_polyline(bad)


def test_read_polyline_skips_comments(tmp_path) -> None:
    path = tmp_path / "zigzag.txt"
    path.write_text("# zigzag\n0.30 0.00\n0.35, 0.05  # peak\n\n0.40 0.00\n")
    assert np.allclose(drawing.read_polyline(path), [[0.3, 0.0], [0.35, 0.05], [0.4, 0.0]])


def test_cli_draw_circle_and_refusal(tmp_path) -> None:
    runner = CliRunner()
    ok = runner.invoke(main, ["draw", SIM, "circle", "--radius", "0.05", "--speed", "0.3"])
    assert ok.exit_code == 0, ok.output
    assert "drawn:" in ok.output
    assert ok.output.startswith("connected: sim://?model=generic.planar2&rate=100&realtime=0 (simulated)\n")
    far = runner.invoke(main, ["draw", SIM, "circle", "--center", "0.5", "0", "--radius", "0.1"])
    assert far.exit_code == 2
    assert "cannot be reached" in far.output and "drawn:" not in far.output
    poly = tmp_path / "p.txt"
    poly.write_text("0.3 0\n0.35 0.05\n0.4 0\n")
    done = runner.invoke(main, ["draw", SIM, "polyline", "--file", str(poly), "--dry-run"])
    assert done.exit_code == 0 and "polyline:" in done.output and "drawn:" not in done.output


def test_cli_draw_plots_the_target_against_the_drawn_path(tmp_path) -> None:
    plot = tmp_path / "circle.png"
    result = CliRunner().invoke(main, ["draw", SIM, "circle", "--speed", "0.2", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith(f"plot: {plot}")
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_draw_streams_through_servo_on_a_robot_paced_by_the_clock() -> None:
    paced = SIM.replace("realtime=0", "realtime=1")
    result = CliRunner().invoke(main, ["draw", paced, "circle", "--radius", "0.02", "--speed", "0.2"])
    assert result.exit_code == 0, result.output
    found = re.search(r"drawn: [0-9.]+ s of path streamed through servo at 50 Hz, measured pen within ([0-9.]+) mm",
                      result.output)
    assert found is not None, result.output
    assert float(found.group(1)) < 0.3  # measured 0.06 mm (the simulated arm's lag)
    unpaced = CliRunner().invoke(main, ["draw", SIM, "circle", "--radius", "0.02", "--speed", "0.2"])
    assert "planned setpoints played (a simulation not paced by the clock" in unpaced.output, unpaced.output


def test_parse_keys_reads_arrows_and_letters() -> None:
    assert list(parse_keys("\x1b[A\x1b[Dwx+q")) == ["up", "left", "up", "bigger", "quit"]


def test_jog_moves_by_steps_and_refuses_out_of_reach() -> None:
    with robohal.connect(SIM + "&q0=0.3,1.2") as robot:
        session = JogSession(robot, step=0.01, speed=0.2)
        start = session.xy.copy()
        assert session.press("right") and session.press("up")
        assert np.allclose(session.xy - start, [0.01, 0.01], atol=1e-9)
        outer = robot.model.reach[1]
        session.step = outer  # a step out of reach: refused, the arm stays
        before = session.xy.copy()
        session.press("right")
        assert "refused" in session.message and np.allclose(session.xy, before)
        assert session.press("quit") is False


def test_run_jog_reads_keys_from_a_pipe() -> None:
    lines: list[str] = []
    with robohal.connect(SIM + "&q0=0.3,1.2") as robot:
        start = robot.model.forward(robot.backend.commanded)[:2, 3]
        run_jog(robot, stdin=io.StringIO("ddsq" + "d" * 5), out=lines.append, step=0.005, speed=0.2)
        end = robot.model.forward(robot.backend.commanded)[:2, 3]
    assert len(lines) == 4  # the first status, then one per key until q
    assert np.allclose(end - start, [0.01, -0.005], atol=1e-9)


def test_reach_within_limits_matches_what_the_inverse_finds(model) -> None:
    inner, outer = drawing.reach_within_limits(model)
    assert inner > model.reach[0] and outer == pytest.approx(model.reach[1])
    for radius, reachable in ((inner * 1.001, True), (inner * 0.999, False), (outer * 0.999, True)):
        point = np.array([[radius, 0.0]])
        found = []
        for elbow in ("up", "down"):
            try:
                drawing.joints_for(model, point, elbow)
                found.append(elbow)
            except UnreachableError:
                pass
        assert bool(found) == reachable, (radius, found)
    centre, largest = drawing.workspace_middle(model)
    drawing.plan_drawing(model, drawing.circle(centre, largest * 0.95), period=PERIOD)
    with pytest.raises(UnreachableError):
        drawing.plan_drawing(model, drawing.circle(centre, largest * 1.05), period=PERIOD)


def test_check_refuses_a_branch_and_auto_takes_the_other(model) -> None:
    from robohal.errors import LimitViolation

    def no_negative_elbow(joints) -> None:
        if (joints[..., 1] < 0).any():
            raise LimitViolation("elbow below zero", joint=1, quantity="position")

    segments = drawing.circle((0.35, 0.05), 0.08)
    plan = drawing.plan_drawing(model, segments, period=PERIOD, elbow="auto", check=no_negative_elbow)
    assert plan.elbow == "down"
    with pytest.raises(UnreachableError, match="refuses"):
        drawing.plan_drawing(model, segments, period=PERIOD, elbow="up", check=no_negative_elbow)


def test_render_pad_marks_base_pen_and_reach(model) -> None:
    from robohal.cli.jog import render_pad

    xy = model.forward([0.5, 0.8])[:2, 3]
    rows = 13
    pad = render_pad(model, xy, rows=rows)
    assert len(pad) == rows and all(len(row) == 2 * rows + 1 for row in pad)
    assert pad[rows // 2][rows] == "+"  # the base in the middle
    (pen_row,) = [r for r, row in enumerate(pad) if "@" in row]
    outer = drawing.reach_within_limits(model)[1]
    assert abs((rows - 1) / 2 - pen_row) == pytest.approx(xy[1] / outer * (rows - 1) / 2, abs=1)
    assert pad[0][0] == " " and pad[rows // 2][-1] != " "  # corner out of reach; the +x rim is in


def test_every_backend_can_check_a_whole_path_before_it_moves():
    """check_setpoints is part of every backend (nothing to probe for): by default the model's
    limits are all there is, so it refuses nothing; backends with limits of their own override it."""
    from robohal.control.backend import Backend

    with robohal.connect("sim://?model=generic.planar2&realtime=0") as robot:
        assert type(robot.backend).check_setpoints is Backend.check_setpoints
        assert robot.backend.check_setpoints(np.zeros((3, 2))) is None


def test_segments_that_meet_are_one_stroke_and_a_gap_starts_another() -> None:
    square = drawing.square((0.35, 0.0), 0.05)
    assert [len(stroke) for stroke in drawing.strokes_of(square)] == [4]
    apart = drawing.line((0.3, 0.0), (0.35, 0.0)) + drawing.line((0.35, 0.01), (0.4, 0.01)) + \
        drawing.line((0.4, 0.01), (0.4, 0.05))
    assert [len(stroke) for stroke in drawing.strokes_of(apart)] == [1, 2]


def test_read_strokes_lifts_the_pen_at_up_lines(tmp_path) -> None:
    path = tmp_path / "two.txt"
    path.write_text("up\n0.30 0.00\n0.35 0.05\nup\n# the second\n0.40 0.00\n0.45 0.05\n0.50 0.0\nup\n")
    first, second = drawing.read_strokes(path)
    assert first.shape == (2, 2) and second.shape == (3, 2)
    assert drawing.read_polyline(path).shape == (5, 2)
    path.write_text("0.3 0\n0.35 0.05\nup\n0.4 0\n")
    with pytest.raises(InvalidArgument, match="two points, found 2, 1"):
        drawing.read_strokes(path)


def test_a_plan_keeps_its_strokes_apart_and_checks_each(model) -> None:
    segments = drawing.line((0.3, -0.1), (0.3, 0.1)) + drawing.line((0.4, 0.1), (0.4, -0.1))
    plan = drawing.plan_drawing(model, segments, period=PERIOD, speed=0.2, elbow="down")
    (a, b), (c, d) = plan.strokes
    assert a == 0 and b == c and d == len(plan.points)
    assert np.allclose(plan.points[[a, b - 1, c, d - 1]], [[0.3, -0.1], [0.3, 0.1], [0.4, 0.1], [0.4, -0.1]])
    assert plan.length == pytest.approx(0.4)  # the travel between is not drawn
    assert plan.speed == 0.2, "the jump between strokes is no reason to slow down"


class PenRecorder:
    """A pen lift as a backend would declare it (robot.io["pen_down"]), noting where the arm was
    each time it was set."""

    def __init__(self, robot) -> None:
        self.robot = robot
        self.down = False
        self.log: list[tuple[bool, np.ndarray]] = []

    def write(self, name: str, value: bool) -> None:
        self.down = value
        self.log.append((value, self.robot.pose[:2, 3].copy()))


def test_draw_lifts_the_pen_between_strokes_and_at_the_end() -> None:
    segments = drawing.line((0.3, -0.1), (0.3, 0.1)) + drawing.line((0.4, 0.1), (0.4, -0.1))
    with robohal.connect(SIM) as robot:
        pen = PenRecorder(robot)
        robot.io = robohal.IoPorts({"pen_down": robohal.Signal("pen_down")}, read=lambda _: pen.down,
                                   write=pen.write)
        assert drawing.has_pen_lift(robot)
        plan = drawing.plan_drawing(robot.model, segments, period=robot.backend.period, speed=0.3, elbow="down")
        results = drawing.draw(robot, plan)
    assert len(results) == 2 and all(result.completed for result in results)
    assert [down for down, _ in pen.log] == [False, True, False, True, False]
    starts = [where for down, where in pen.log if down]
    assert np.allclose(starts, [[0.3, -0.1], [0.4, 0.1]], atol=1e-3), "down only at each stroke's start"
    assert np.allclose(pen.log[-1][1], [0.4, -0.1], atol=1e-3), "up at the end of the last"
    for result, (a, b) in zip(results, plan.strokes, strict=True):
        assert np.allclose(result.commanded, plan.joints[a:b]), "each stroke exactly as planned"


def test_draw_without_a_pen_lift_is_unchanged() -> None:
    with robohal.connect(SIM) as robot:
        assert not drawing.has_pen_lift(robot)
        plan = drawing.plan_drawing(robot.model, drawing.square((0.35, 0.0), 0.05), period=robot.backend.period,
                                    speed=0.3, elbow="down")
        (result,) = drawing.draw(robot, plan)
        assert result.completed and np.allclose(result.commanded, plan.joints)


def test_a_failing_stroke_leaves_the_pen_up() -> None:
    with robohal.connect(SIM) as robot:
        pen = PenRecorder(robot)
        robot.io = robohal.IoPorts({"pen_down": robohal.Signal("pen_down")}, read=lambda _: pen.down,
                                   write=pen.write)
        plan = drawing.plan_drawing(robot.model, drawing.line((0.3, -0.1), (0.3, 0.1)), period=robot.backend.period,
                                    speed=0.3, elbow="down")
        broken = drawing.DrawPlan(plan.points, plan.joints * np.nan, plan.period, plan.elbow, plan.speed)
        with pytest.raises(robohal.RobohalError):
            drawing.draw(robot, broken)
    assert pen.log and pen.down is False


def test_path_velocities_are_central_differences_at_rest_at_both_ends() -> None:
    t = np.arange(6) * PERIOD
    joints = np.column_stack([t**2, 3.0 * t])
    velocities = drawing.path_velocities(joints, PERIOD)
    assert np.allclose(velocities[1:-1], np.column_stack([2.0 * t, np.full(6, 3.0)])[1:-1])
    assert not velocities[0].any() and not velocities[-1].any()
