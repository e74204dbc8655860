"""`robohal demo` (what `make demo` runs): every installed robot completes its task."""

import ast
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import robohal
from robohal import DemoSpec
from robohal.cli.demo import DemoRun, demo_figure, demos, run_demo
from robohal.cli.plots import matplotlib_pyplot
from robohal.motion import MotionResult

CORE = Path(__file__).resolve().parents[3] / "core" / "src" / "robohal"


def test_demo_drives_every_installed_simulator_and_writes_plots(tmp_path):
    out = tmp_path / "demo"
    result = subprocess.run([sys.executable, "-m", "robohal.cli.main", "demo", "--out", str(out)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    expected = [demo.name for demo in demos()]
    assert {"planar servo arm", "ABB IRB 1410", "Franka FR3", "Franka FR3 contact"} <= set(expected), \
        "the bundled plugins' demos"
    for name in expected:
        assert f"done  {name}" in result.stdout
        plot = out / f"{name.lower().replace(' ', '-')}.png"
        assert plot.exists() and plot.stat().st_size > 10_000
    assert "robohal demo" in result.stdout and "failed" not in result.stdout
    picks = [name for name in expected if name.endswith("pick-and-place")]
    assert "Franka FR3 pick-and-place" in picks
    assert result.stdout.count("held 1/1, released") == len(picks), "every pick-and-place held its part and let go"


def test_demo_says_why_there_are_no_plots(monkeypatch, tmp_path, capsys):
    from robohal.cli import demo

    monkeypatch.setattr(demo, "matplotlib_pyplot", lambda: None)
    assert demo.run_demo(str(tmp_path), tasks=[]) == 0
    assert "matplotlib is not installed (pip install 'robohal[plots]')" in capsys.readouterr().out


def test_a_failing_task_is_reported_and_the_others_still_run(tmp_path, capsys):
    from robohal.cli import demo

    def broken(run):
        raise RuntimeError("no robot here")

    calls = []
    tasks = [DemoSpec("broken arm", lambda: ("sim://?model=generic.planar2", "nothing"), broken),
             DemoSpec("idle arm", lambda: ("sim://?model=generic.planar2", "nothing"), calls.append)]
    assert demo.run_demo(str(tmp_path), tasks=tasks) == 1
    assert len(calls) == 1
    assert "RuntimeError: no robot here" in (tmp_path / "broken-arm-error.txt").read_text()


def test_the_core_imports_no_plugin():
    """Plugins depend on the core, never the other way: a fourth plugin adds its demo, its
    simulator and its suites through its records, without touching core."""
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            offenders += [f"{path.relative_to(CORE)}: {name}" for name in names if name.startswith("robohal_")]
    assert not offenders


def test_demo_with_a_view_shows_each_task_s_robot_beside_the_earlier_ones(tmp_path):
    import socket

    from robohal.view import serve

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    seen = []

    def task(run):
        with robohal.connect(run.uri) as robot:
            run.attach(robot)
            seen.append(view.robots[-1] is robot and len(view.robots) == len(seen) + 1)
            run.results.append(robot.move_joints(robot.model.limits.centre + 0.1))

    tasks = [DemoSpec(name, lambda: ("sim://?model=generic.planar2", "a move"), task) for name in ("one", "two")]
    with serve((), port=port, watch=True) as view:
        assert run_demo(str(tmp_path), tasks, view=view) == 0
        assert view.robots == []
    assert seen == [True, True]


def test_pick_and_place_needs_a_gripper_and_says_so(tmp_path):
    from robohal.cli.demo import DemoRun
    from robohal.cli.pick_place import PickPlace, pick_and_place

    plan = PickPlace("sim://?model=generic.planar2", pick=(0.3, 0.1, 0.0), place=(0.3, -0.1, 0.0), width=0.01)
    run = DemoRun("arm", plan.uri, plan.description)
    with pytest.raises(robohal.RobohalError, match="has no gripper: pick and place needs one"):
        pick_and_place(run, plan)
    assert run.grasps == [] and run.results == []


def test_the_summary_reports_grasps():
    from robohal.cli.demo import DemoRun, grasp_figures

    run = DemoRun("arm", "sim://", "pick")
    assert grasp_figures(run) == "-"
    run.grasps, run.released = [True], True
    assert grasp_figures(run) == "held 1/1, released"
    run.grasps, run.released = [False], False
    assert grasp_figures(run) == "held 0/1, still held"


# The plots ------------------------------------------------------------------------------------


def _motion(times: np.ndarray, start: list[float], end: list[float]) -> MotionResult:
    along = np.linspace(0.0, 1.0, len(times))[:, None]
    commanded = np.asarray(start) + along * (np.asarray(end) - np.asarray(start))
    return MotionResult(completed=True, stopped=False, times=times, commanded=commanded,
                        measured=commanded - 0.002, period=0.1)


def _two_motions_a_second_apart(model=None) -> DemoRun:
    """A pick's two recorded motions on the robot's clock (100-101 s, then 102-103 s: the robot
    did something unrecorded between them), its 100 s being 0.5 s into the task, and a gripper
    that closed between them."""
    run = DemoRun("arm", "sim://?model=generic.planar2", "pick", model=model or robohal.get_model("generic.planar2"))
    run.robot_clock = run.started + 0.5 - 100.0
    run.results = [_motion(np.linspace(100.0, 101.0, 11), [0.3, 0.6], [0.1, 0.9]),
                   _motion(np.linspace(102.0, 103.0, 11), [0.2, 0.8], [0.4, 0.5])]
    run.gripper_trace = np.array([[0.0, 0.02], [1.6, 0.02], [1.8, 0.01], [3.6, 0.01]])
    run.ideal = run.model.forward(np.array([[0.3, 0.6], [0.1, 0.9], [0.2, 0.8], [0.4, 0.5]]))[:, :3, 3]
    return run


@pytest.fixture
def figure_of():
    if matplotlib_pyplot() is None:
        pytest.skip("matplotlib is not installed")
    drawn = []

    def draw(run: DemoRun):
        drawn.append(demo_figure(run))
        return drawn[-1]

    yield draw
    for fig in drawn:
        matplotlib_pyplot().close(fig)


@pytest.mark.parametrize("names, model", [
    (["joint 1", "joint 2"], None),
    (["shoulder", "elbow"],
     SimpleNamespace(forward=robohal.get_model("generic.planar2").forward, joint_names=("shoulder", "elbow"))),
], ids=["numbered", "the-model-s-names"])
def test_the_joint_plot_names_the_joints_in_a_legend(figure_of, names, model):
    joints = figure_of(_two_motions_a_second_apart(model)).axes[0]
    assert [text.get_text() for text in joints.get_legend().get_texts()] == names


def test_the_time_panels_share_one_axis_from_the_task_s_start(figure_of):
    joints, _, tracking, gripper = figure_of(_two_motions_a_second_apart()).axes
    for panel in (tracking, gripper):
        assert joints.get_shared_x_axes().joined(joints, panel)
        assert panel.get_xlim() == joints.get_xlim()
    assert joints.get_xlim()[0] == 0.0
    assert joints.get_lines()[0].get_xdata()[0] == pytest.approx(0.5)  # the robot's 100 s
    assert gripper.get_lines()[0].get_xdata()[0] == 0.0
    assert all(axis.get_xlabel() == "time since the task began [s]" for axis in (joints, tracking, gripper))


def test_lines_leave_the_time_between_two_motions_empty(figure_of):
    joints, path, tracking, _ = figure_of(_two_motions_a_second_apart()).axes
    lines = [*joints.get_lines(), *tracking.get_lines(), *path.get_lines()[1:]]  # (path's first: the target)
    assert len(lines) == 2 + 2 + 1 + 2
    for line in lines:
        gaps = np.flatnonzero(np.isnan(np.asarray(line.get_ydata(), dtype=float)))
        assert gaps.tolist() == [11], line.get_label()  # one break, after the first motion's 11 samples
    times = np.asarray(joints.get_lines()[0].get_xdata(), dtype=float)
    assert np.isnan(times[11]) and times[10] == pytest.approx(1.5) and times[12] == pytest.approx(2.5)


def test_a_task_s_motions_are_on_the_clock_the_task_began_on():
    with robohal.connect("sim://?model=generic.planar2") as robot:
        run = DemoRun("arm", "sim://?model=generic.planar2", "a move")
        run.attach(robot)
        approach = robot.move_joints(robot.model.limits.centre + 0.1)  # not recorded, as a task's approach
        run.results.append(robot.move_joints(robot.model.limits.centre - 0.1))
    first = run.task_seconds(run.results[0].times)
    # it began where the approach ended, not at 0 as if it had been the task's first move
    assert first[0] >= run.task_seconds(approach.times)[-1] >= approach.duration > 0.0


def test_the_gripper_s_width_is_timed_from_the_task_s_start():
    from robohal.cli.pick_place import WidthRecorder

    gripper = SimpleNamespace(state=SimpleNamespace(width=0.02))
    began = time.monotonic() - 100.0  # a task that began 100 s before its gripper was watched
    with WidthRecorder(gripper, since=began) as recorder:
        deadline = time.monotonic() + 10.0
        while not recorder.times and time.monotonic() < deadline:
            time.sleep(0.01)
    assert recorder.trace[0, 0] >= 100.0 and recorder.trace[0, 1] == 0.02
