"""``robohal demo`` (and ``make demo``): every installed backend's bundled simulator,
driven through the real backend by a short task, with a summary table and plots.

Each plugin contributes its task through its backend record (:class:`~robohal.plugins.records.DemoSpec`
in ``BackendSpec.demo``, one task or several): the bundled ones have the planar servo arm draw a
star through IK, the ABB IRB 1410 follow a straight line over EGM and the Franka FR3 follow a
Cartesian circle through differential IK at 1 kHz, then press on a plane under impedance. This
module runs them and reports; it knows no plugin.
"""

from __future__ import annotations

import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import spatial
from ..motion import MotionResult
from ..plugins.records import DemoSpec
from ..plugins.registry import Registry, default_registry
from ..robot import Robot
from .pick_place import pick_and_place
from .plots import draw_joints, joint_labels, matplotlib_pyplot, with_gaps


@dataclass
class DemoRun:
    name: str
    uri: str
    task: str
    results: list[MotionResult] = field(default_factory=list)
    ideal: np.ndarray | None = None  # (M, 3) the path the flange should follow
    model: Any = None
    info: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None
    on_robot: Any = None  # called with the task's robot once connected (robohal demo --view shows it)
    grasps: list[bool] = field(default_factory=list)  # each grasp's outcome: whether it held the part
    released: bool | None = None  # whether the last release let the part go
    gripper_trace: np.ndarray | None = None  # (N, 2): seconds since the task began, gripper width (m)
    #: (N, 4): seconds since the task began, the measured force along base z (N), the flange's and
    #: the equilibrium's height above the contact surface (m): a task that presses on one
    contact_trace: np.ndarray | None = None
    started: float = field(default_factory=time.monotonic)  # when the task began (host clock, s)
    robot_clock: float | None = None  # host clock minus the robot's clock (s), taken when it connected

    def attach(self, robot: Robot) -> None:
        """The task has connected ``robot``: record its model and its clock, and show it where asked."""
        self.model = robot.model
        self.robot_clock = time.monotonic() - robot.state.time
        if self.on_robot is not None:
            self.on_robot(robot)

    def task_seconds(self, times: np.ndarray) -> np.ndarray:
        """Robot-clock times (a motion's) as seconds since the task began, the gripper trace's clock.
        Without the robot's clock, the first motion starts at 0."""
        if self.robot_clock is None:
            return times - next(result.times[0] for result in self.results if result.cycles)
        return times + self.robot_clock - self.started

    @property
    def merged(self) -> MotionResult | None:
        if not self.results:
            return None
        return MotionResult(
            completed=all(r.completed for r in self.results),
            stopped=any(r.stopped for r in self.results),
            times=np.concatenate([r.times for r in self.results]),
            commanded=np.concatenate([r.commanded for r in self.results]),
            measured=np.concatenate([r.measured for r in self.results]),
            period=self.results[0].period,
        )


def distance_to_polyline(points: np.ndarray, polyline: np.ndarray) -> np.ndarray:
    """Distance of each point (N, 3) to the nearest segment of ``polyline`` (M, 3)."""
    a, b = polyline[:-1], polyline[1:]
    ab = b - a
    length2 = np.maximum((ab * ab).sum(-1), 1e-18)
    t = np.clip(((points[:, None, :] - a) * ab).sum(-1) / length2, 0.0, 1.0)
    nearest = a + t[..., None] * ab
    return np.linalg.norm(points[:, None, :] - nearest, axis=-1).min(axis=1)


# The tasks ----------------------------------------------------------------------------------


def polygon_through_ik(robot: Robot, corners: np.ndarray, speed: float, run: DemoRun) -> None:
    """Straight lines through the model's IK from corner to corner (the first is the approach,
    not part of the figure), keeping the flange's orientation; the figure is ``run``'s ideal path."""
    orientation = robot.model.forward(robot.backend.commanded)[:3, :3]

    def pose_at(point: np.ndarray) -> np.ndarray:
        pose = spatial.from_translation(point)
        pose[:3, :3] = orientation
        return pose

    robot.move_linear(pose_at(corners[0]), speed=speed)
    for corner in corners[1:]:
        run.results.append(robot.move_linear(pose_at(corner), speed=speed))
    run.ideal = corners


def demos(registry: Registry | None = None) -> list[DemoSpec]:
    """The demo task of every installed backend that has one (its plugin's record says what),
    each followed by the core's pick-and-place task where the record says where the part lies."""
    tasks = []
    for spec in (registry or default_registry()).backends():
        for demo in spec.demo if isinstance(spec.demo, tuple) else () if spec.demo is None else (spec.demo,):
            tasks.append(demo)
            if demo.pick_place is not None:
                tasks.append(pick_and_place_demo(demo))
    return tasks


def pick_and_place_demo(demo: DemoSpec) -> DemoSpec:
    """The core's pick-and-place task, on the robot and the part ``demo.pick_place()`` names."""

    def where() -> tuple[str, str]:
        plan = demo.pick_place()
        return plan.uri, plan.description

    return DemoSpec(f"{demo.name} pick-and-place", where, lambda run: pick_and_place(run, demo.pick_place()))


# Reporting ------------------------------------------------------------------------------------


def path_figures(run: DemoRun) -> tuple[float, float]:
    """Largest distance (m) of the commanded and the measured flange from the ideal path."""
    merged = run.merged
    if merged is None or run.ideal is None or merged.cycles == 0:
        return float("nan"), float("nan")
    commanded = run.model.forward(merged.commanded)[:, :3, 3]
    measured = run.model.forward(merged.measured)[:, :3, 3]
    return float(distance_to_polyline(commanded, run.ideal).max()), float(distance_to_polyline(measured, run.ideal).max())


def grasp_figures(run: DemoRun) -> str:
    """``held 1/1, released`` for a task that grasped, ``-`` for one that did not."""
    if not run.grasps:
        return "-"
    text = f"held {sum(run.grasps)}/{len(run.grasps)}"
    if run.released is not None:
        text += ", released" if run.released else ", still held"
    return text


def lost_packets(info: dict[str, Any]) -> str:
    # a bus-servo arm counts its missing or corrupt status packets as retries
    for key in ("lost_messages", "lost_cycles", "missed_cycles", "timeouts", "lost", "retries"):
        if key in info:
            return str(info[key])
    return "-"


def demo_figure(run: DemoRun) -> Any:
    """The figure of a task: joints, path versus target, tracking error and (where it gripped) the
    gripper's width; the time panels share one axis, seconds since the task began, and leave the
    time between two motions empty. None without matplotlib or motions."""
    plt = matplotlib_pyplot()
    motions = [result for result in run.results if result.cycles]
    if plt is None or not motions:
        return None
    t = with_gaps([run.task_seconds(result.times) for result in motions])
    commanded_xyz = [run.model.forward(result.commanded)[:, :3, 3] for result in motions]
    measured_xyz = [run.model.forward(result.measured)[:, :3, 3] for result in motions]
    trace, contact = run.gripper_trace, run.contact_trace
    panels = 3 + (trace is not None) + (contact is not None)
    fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 4.5))
    timed = [axes[0], axes[2], *axes[3:]]
    for axis in timed[1:]:
        axis.sharex(timed[0])
    draw_joints(axes[0], t, with_gaps([r.commanded for r in motions]), with_gaps([r.measured for r in motions]),
                joint_labels(run.model, motions[0].commanded.shape[1]))
    axes[0].set(title="joint trajectories (dashed: commanded)", ylabel="joint [deg]")
    # the two coordinates along which the path moves most
    reached = np.vstack(commanded_xyz)
    span = np.ptp(reached if run.ideal is None else np.vstack([run.ideal, reached]), axis=0)
    i, j = sorted(np.argsort(span)[-2:])
    names = "xyz"
    commanded, measured = with_gaps(commanded_xyz), with_gaps(measured_xyz)
    if run.ideal is not None:
        axes[1].plot(run.ideal[:, i] * 1e3, run.ideal[:, j] * 1e3, "k:", linewidth=2, label="target")
    axes[1].plot(commanded[:, i] * 1e3, commanded[:, j] * 1e3, label="commanded")
    axes[1].plot(measured[:, i] * 1e3, measured[:, j] * 1e3, label="measured")
    axes[1].set(title="path versus target", xlabel=f"{names[i]} [mm]", ylabel=f"{names[j]} [mm]")
    axes[1].axis("equal")
    axes[1].legend()
    axes[2].plot(t, np.degrees(with_gaps([r.tracking_error for r in motions])))
    axes[2].set(title="tracking error (max over joints)", ylabel="[deg]")
    if trace is not None:
        axes[3].plot(trace[:, 0], trace[:, 1] * 1e3)
        axes[3].set(title="gripper width", ylabel="[mm]")
    if contact is not None:
        plot_contact(axes[-1], contact)
    for axis in timed:
        axis.set_xlabel("time since the task began [s]")
    timed[0].set_xlim(left=0.0)
    fig.suptitle(f"{run.name}: {run.task}")
    fig.tight_layout()
    return fig


def plot_run(run: DemoRun, folder: Path) -> Path | None:
    """Write the task's figure (:func:`demo_figure`) as a PNG in ``folder``."""
    fig = demo_figure(run)
    if fig is None:
        return None
    path = folder / f"{run.name.lower().replace(' ', '-')}.png"
    fig.savefig(path, dpi=90)
    matplotlib_pyplot().close(fig)
    return path


def plot_contact(axis: Any, contact: np.ndarray) -> None:
    """A press: the measured force (left axis) and the flange's and its equilibrium's heights above
    the surface (right axis), over time."""
    axis.plot(contact[:, 0], contact[:, 1], color="tab:red", label="force z")
    axis.set(title="contact: force and height", ylabel="measured force along z [N]")
    heights = axis.twinx()
    heights.plot(contact[:, 0], contact[:, 2] * 1e3, color="tab:blue", label="flange")
    heights.plot(contact[:, 0], contact[:, 3] * 1e3, "--", color="tab:blue", label="equilibrium")
    heights.axhline(0.0, color="grey", linewidth=0.8)
    heights.set_ylabel("height above the surface [mm]")
    heights.legend(loc="lower right")


def run_demo(out: str, tasks: list[DemoSpec] | None = None, *, view: Any = None) -> int:
    """Run ``tasks`` (default: every installed backend's demo), print the table, write plots;
    with a :class:`~robohal.view.RobotView`, each task's robot is shown in it, beside the
    earlier ones (at their last pose), until all have run."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 160)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    runs: list[DemoRun] = []
    for demo in demos() if tasks is None else tasks:
        name, task = demo.name, demo.task
        uri, what = demo.where()
        run = DemoRun(name, uri, what, on_robot=None if view is None else view.add)  # (the task begins)
        with console.status(f"{name}: {what} ({uri})"):
            try:
                task(run)
            except Exception as exc:  # one robot's failure must not hide the others' results
                run.error = f"{type(exc).__name__}: {exc}"
                (folder / f"{name.lower().replace(' ', '-')}-error.txt").write_text(traceback.format_exc())
        run.seconds = time.monotonic() - run.started
        console.print(f"{'[red]failed[/red]' if run.error else '[green]done[/green]'}  {name} in {run.seconds:.1f} s")
        runs.append(run)

    table = Table(title="robohal demo", title_justify="left")
    for column in ("robot / URI", "task", "cycles", "lost packets", "max tracking error",
                   "path error cmd / meas", "closest limit", "grasps", "time"):
        table.add_column(column)
    plots = []
    for run in runs:
        merged = run.merged
        if run.error or merged is None:
            table.add_row(f"{run.name}\n{run.uri}", run.task, "-", "-", "-", "-", "-", "-", run.error or "no motion")
            continue
        cmd_err, meas_err = path_figures(run)
        margin = float(run.model.limits.margin(merged.commanded).min())
        table.add_row(
            f"{run.name}\n{run.uri}", run.task, str(merged.cycles), lost_packets(run.info),
            f"{np.degrees(merged.tracking_error.max()):.3f} deg",
            "-" if run.ideal is None else f"{cmd_err * 1e3:.3f} / {meas_err * 1e3:.2f} mm",
            f"{np.degrees(margin):.1f} deg", grasp_figures(run), f"{run.seconds:.1f} s",
        )
        plot = plot_run(run, folder)
        if plot:
            plots.append(plot)
    console.print(table)
    if view is not None:
        for robot in view.robots:
            view.remove(robot)
    if plots:
        console.print(f"plots in {folder.resolve()}/: " + ", ".join(p.name for p in plots))
    elif matplotlib_pyplot() is None:
        console.print("no plots: matplotlib is not installed (pip install 'robohal[plots]')", markup=False)
    return 1 if any(r.error for r in runs) else 0
