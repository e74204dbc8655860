"""`robohal demo` (what `make demo` runs): every installed robot completes its task."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import robohal
from robohal import DemoSpec
from robohal.cli.demo import demos, run_demo

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
