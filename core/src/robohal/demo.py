"""``robohal demo``: drive simulated robots through a short task each and
print a summary (and plots, when matplotlib is installed)."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import spatial
from .connection import open_robot
from .motion import MotionResult, Robot


@dataclass
class DemoRun:
    name: str
    uri: str
    task: str
    results: list[MotionResult]
    path_error: float  # m, largest distance of the commanded flange from the ideal path
    limit_margin: float  # rad, closest approach of any joint to its limit
    seconds: float


def _concat(results: list[MotionResult]) -> MotionResult:
    return MotionResult(
        completed=all(r.completed for r in results),
        stopped=any(r.stopped for r in results),
        times=np.concatenate([r.times for r in results]),
        commanded=np.concatenate([r.commanded for r in results]),
        measured=np.concatenate([r.measured for r in results]),
        period=results[0].period,
    )


def draw_square(robot: Robot, centre: np.ndarray, side: float, speed: float) -> tuple[list[MotionResult], float]:
    """Move the flange around a square through the model's IK; return the
    motions and the largest deviation of the commanded flange from the square."""
    half = side / 2
    corners = [centre + np.array(offset) for offset in
               ([-half, -half, 0], [half, -half, 0], [half, half, 0], [-half, half, 0], [-half, -half, 0])]
    orientation = robot.model.forward(robot.backend.commanded)[:3, :3]
    first = spatial.from_translation(corners[0])
    first[:3, :3] = orientation
    robot.move_linear(first, speed=speed)
    results = []
    worst = 0.0
    for a, b in itertools.pairwise(corners):
        pose = spatial.from_translation(b)
        pose[:3, :3] = orientation
        result = robot.move_linear(pose, speed=speed)
        results.append(result)
        flange = robot.model.forward(result.commanded)[:, :3, 3]
        direction = (b - a) / np.linalg.norm(b - a)
        offset = flange - a
        off_line = offset - np.outer(offset @ direction, direction)
        worst = max(worst, float(np.linalg.norm(off_line, axis=1).max()))
    return results, worst


def planar_demo() -> DemoRun:
    uri = "sim://?model=generic.planar2&rate=100"
    start = time.monotonic()
    with open_robot(uri) as robot:
        robot.move_joints(np.radians([30.0, 60.0]), speed=0.5)
        centre = robot.model.forward(robot.backend.commanded)[:3, 3]
        results, path_error = draw_square(robot, centre, side=0.08, speed=0.1)
        margin = float(robot.model.limits.margin(np.concatenate([r.commanded for r in results])).min())
    return DemoRun("planar arm", uri, "square, 8 cm, through IK", results, path_error, margin, time.monotonic() - start)


def plot_run(run: DemoRun, out: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    merged = _concat(run.results)
    t = merged.times - merged.times[0]
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    axes[0].plot(t, np.degrees(merged.commanded), "--", linewidth=1)
    axes[0].set_prop_cycle(None)
    axes[0].plot(t, np.degrees(merged.measured), linewidth=1)
    axes[0].set_ylabel("joints [deg] (dashed: commanded)")
    axes[1].plot(t, np.degrees(merged.tracking_error))
    axes[1].set_ylabel("tracking error [deg]")
    axes[1].set_xlabel("time [s]")
    fig.suptitle(f"{run.name}: {run.task}")
    slug = run.name.replace(" ", "-")
    path = out / f"{slug}-joints.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def run_demo(out: str) -> int:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    runs = []
    with console.status("planar arm: drawing a square on the simulated robot..."):
        runs.append(planar_demo())
    table = Table(title="robohal demo", title_justify="left")
    for column in ("robot", "task", "cycles", "max tracking error", "path error", "closest limit", "time"):
        table.add_column(column)
    plots = []
    for run in runs:
        merged = _concat(run.results)
        table.add_row(
            f"{run.name}\n{run.uri}", run.task, str(merged.cycles),
            f"{np.degrees(merged.tracking_error.max()):.3f} deg", f"{run.path_error * 1e3:.3f} mm",
            f"{np.degrees(run.limit_margin):.1f} deg", f"{run.seconds:.1f} s",
        )
        plots += plot_run(run, folder)
    console.print(table)
    if plots:
        console.print(f"plots in {folder.resolve()}/: " + ", ".join(p.name for p in plots))
    return 0 if all(_concat(r.results).completed for r in runs) else 1
