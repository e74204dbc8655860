"""The ``robohal`` command."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np

from .. import __version__, spatial
from ..errors import LimitViolation, RobohalError
from ..plugins.registry import default_registry

#: errors a user's input or surroundings cause; OSError: a file or folder they named that is missing
#: or not writable (robohal demo --out, new-plugin --dir), a port in use
USER_ERRORS = (RobohalError, ValueError, LookupError, OSError)


class RobohalGroup(click.Group):
    """Turns user errors into one clear line and exit status 2, no traceback. Anything else that
    escapes a command is a bug: one line that says so and exit status 1 (with ``-v``, the
    traceback first, for the bug report). Adds the commands plugins give (``robohal_commands``)
    after the core's own, which keep their names."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        own = super().list_commands(ctx)
        return own + sorted(name for name in _plugin_commands() if name not in own)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is not None:
            return command
        spec = _plugin_commands().get(name)
        if spec is None:
            return None
        from ..errors import PluginError

        loaded = spec.command.load() if hasattr(spec.command, "load") else spec.command
        if not isinstance(loaded, click.Command):
            raise PluginError(f"plugin {spec.plugin!r}: command {name!r} is {loaded!r:.80}, not a click command")
        return loaded

    def invoke(self, ctx: click.Context) -> Any:
        as_json = "--json" in ctx.args  # the subcommand's arguments, before invoking consumes them
        try:
            return super().invoke(ctx)
        except USER_ERRORS as exc:
            _error(str(exc), type(exc).__name__, as_json)
            sys.exit(2)
        except (click.ClickException, click.exceptions.Exit, click.Abort):  # click's own: it reports them
            raise
        except Exception as exc:
            if ctx.params.get("verbose"):
                traceback.print_exception(exc, file=sys.stderr)
            first = (str(exc).splitlines() or [""])[0]
            _error(f"unexpected {type(exc).__name__}: {first} (a bug in robohal: `robohal -v ...` shows where;"
                   " please report it)", type(exc).__name__, as_json)
            sys.exit(1)


def _error(message: str, kind: str, as_json: bool) -> None:
    if as_json:  # scripts parse stdout: the error too
        click.echo(json.dumps({"error": message, "type": kind}))
    click.echo(f"robohal: error: {message}", err=True)


def _plugin_commands() -> dict:
    """The plugins' commands by name; none when the plugins cannot be listed (``robohal plugins``
    says why), so the core's own commands still work."""
    try:
        return {spec.name: spec for spec in default_registry().commands()}
    except RobohalError:
        return {}


def _console():
    from rich.console import Console

    # Tables of joint values are wide: do not wrap them at 80 columns when piped (COLUMNS wins).
    columns = os.environ.get("COLUMNS", "")
    return Console(width=None if sys.stdout.isatty() else int(columns) if columns.isdigit() else 200)


def _table(title: str, columns: Sequence[str], wrap: Sequence[str] = ()):
    """A table whose cells are never cut short: the ``wrap`` columns (lists) wrap instead."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, no_wrap=column not in wrap, min_width=len(column),
                         overflow="fold")
    return table


def _version_message() -> str:
    from ..kinematics import diffik

    kernels = "compiled" if diffik.COMPILED else "pure Python (no C compiler at install)"
    return f"%(prog)s, version %(version)s; kinematics kernels: {kernels}"


@click.group(cls=RobohalGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="robohal", message=_version_message())
@click.option("-v", "--verbose", count=True,
              help="Log connects, closes and simulators too (-vv: debug); warnings are always shown.")
def main(verbose: int) -> None:
    """robohal: one API for robot arms. Models and backends come from plugins."""
    logger = logging.getLogger("robohal")
    logger.setLevel(logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG)
    if not any(isinstance(handler, _StderrHandler) for handler in logger.handlers):  # once per process
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("robohal: %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)


class _StderrHandler(logging.StreamHandler):
    """Logs to ``sys.stderr`` as it is when a record comes, not when the handler was made
    (a test runner swaps it per invocation)."""

    @property  # type: ignore[override]
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


# Plugins and models -------------------------------------------------------------------


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def plugins(as_json: bool) -> None:
    """Installed plugins and what each registers."""
    import importlib.metadata

    from ..plugins.registry import BUILTIN, DISABLE_ENV, ENTRY_POINT_GROUP, disabled_from_env

    registry = default_registry()
    infos = registry.plugins()
    installed = {BUILTIN} | {ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    unknown = sorted(disabled_from_env() - installed)  # a misspelt name would hide nothing, unseen
    if as_json:
        payload = {
            "plugins": [info.__dict__ for info in infos],
            "failed": [failure.__dict__ for failure in registry.failures.values()],
            "disabled_but_not_installed": unknown,
        }
        click.echo(json.dumps(payload, indent=2, default=list))
        return
    table = _table("robohal plugins", ["plugin", "distribution", "version", "models", "backends", "commands"],
                   wrap=["models", "backends", "commands"])
    for info in infos:  # one name a line: a name is never split
        table.add_row(info.name, info.distribution or "-", info.version or "-",
                      "\n".join(info.models) or "-", "\n".join(info.backends) or "-", "\n".join(info.commands) or "-")
    console = _console()
    console.print(table)
    for failure in registry.failures.values():
        console.print(f"[red]failed to load plugin {failure.name!r}[/red] ({failure.distribution or '?'}): {failure.error}")
    if unknown:
        console.print(f"[yellow]{DISABLE_ENV} names no installed plugin: {', '.join(unknown)}[/yellow]"
                      f" (installed: {', '.join(sorted(installed))})")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def models(as_json: bool) -> None:
    """Registered robot models (a model file's model: the file it came from)."""
    specs = default_registry().models()
    if as_json:
        click.echo(json.dumps([{"name": s.name, "dof": s.dof, "plugin": s.plugin, "description": s.description,
                                "tags": list(s.tags), "source": s.source} for s in specs], indent=2))
        return
    table = _table("robohal models", ["model", "dof", "plugin or file", "description"],
                   wrap=["plugin or file", "description"])
    for spec in specs:
        table.add_row(spec.name, str(spec.dof), spec.source or spec.plugin or "-", spec.description)
    _console().print(table)


@main.command()
@click.argument("model")
def urdf(model: str) -> None:
    """Write a kinematic URDF of MODEL to stdout (robohal urdf MODEL > robot.urdf)."""
    from ..kinematics import urdf_text

    registry = default_registry()
    spec = registry.model_spec(model)
    kin = registry.get_model(model)
    if kin.coupled_limits:  # the file holds the geometric chain: say so where the user sees it
        click.echo(f"robohal: note: {spec.name} couples joints; the URDF's comment says how its joints map", err=True)
    click.echo(urdf_text(kin, spec.name, spec.description), nl=False)


# Kinematics -------------------------------------------------------------------------------


def _parse_floats(values: Sequence[str], what: str) -> np.ndarray:
    try:
        array = np.array([float(v) for v in values])
    except ValueError:
        raise click.BadParameter(f"{what} must be numbers, got {' '.join(values)}") from None
    if not np.isfinite(array).all():
        raise RobohalError(f"{what} contains NaN or inf")
    return array


def _pose_summary(pose: np.ndarray) -> dict[str, Any]:
    xyz, quat = spatial.pose_to_xyz_quat(pose)
    return {
        "xyz_m": xyz.tolist(),
        "quat_wxyz": quat.tolist(),
        "rpy_deg": np.degrees(spatial.matrix_to_rpy(pose[:3, :3])).tolist(),
        "matrix": pose.tolist(),
    }


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("model")
@click.argument("joints", nargs=-1, required=True)
@click.option("--deg", is_flag=True, help="Joints are in degrees (default radians).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def fk(model: str, joints: Sequence[str], deg: bool, as_json: bool) -> None:
    """Forward kinematics: the flange pose of MODEL at JOINTS."""
    kin = default_registry().get_model(model)
    q = _parse_floats(joints, "joints")
    if q.shape != (kin.dof,):
        raise RobohalError(f"{model} has {kin.dof} joints; got {q.size} values")
    if deg:
        q = np.radians(q)
    pose = kin.forward(q)
    summary = _pose_summary(pose)
    try:  # each joint's range and any coupled (linkage) limit
        kin.check_joints(q)
        outside = None
    except LimitViolation as exc:
        outside = str(exc)
    summary["joints_rad"] = q.tolist()
    summary["joints_deg"] = np.degrees(q).tolist()
    summary["within_limits"] = outside is None
    if as_json:
        click.echo(json.dumps({"model": model, **summary}, indent=2))
        return
    x, y, z = summary["xyz_m"]
    w, qx, qy, qz = summary["quat_wxyz"]
    r, p, yw = summary["rpy_deg"]
    click.echo(f"model    {model}")
    if deg:  # back in the unit they were given in
        click.echo(f"joints   {' '.join(f'{v:.4f}' for v in np.degrees(q))} deg")
    else:
        click.echo(f"joints   {' '.join(f'{v:.6f}' for v in q)} rad")
    click.echo(f"xyz      {x:.6f} {y:.6f} {z:.6f} m")
    click.echo(f"quat     {w:.6f} {qx:.6f} {qy:.6f} {qz:.6f} (w x y z)")
    click.echo(f"rpy      {r:.4f} {p:.4f} {yw:.4f} deg")
    if outside is not None:
        click.echo(f"warning  outside the model's limits: {outside}", err=True)


@main.command()
@click.argument("model")
@click.option("--xyz", nargs=3, type=float, required=True, help="Target position, metres.")
@click.option("--quat", nargs=4, type=float, help="Target orientation as a quaternion w x y z.")
@click.option("--rpy", nargs=3, type=float, help="Target orientation as roll pitch yaw, degrees.")
@click.option("--all", "show_all", is_flag=True, help="Every solution, not only the best.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def ik(model: str, xyz: tuple[float, float, float], quat: tuple[float, ...] | None,
       rpy: tuple[float, float, float] | None, show_all: bool, as_json: bool) -> None:
    """Inverse kinematics: joint solutions of MODEL that reach a pose."""
    kin = default_registry().get_model(model)
    if quat and rpy:
        raise RobohalError("give the orientation once: --quat or --rpy")
    if quat:
        pose = spatial.pose_from_xyz_quat(xyz, quat)
    elif rpy:
        pose = spatial.pose_from_xyz_rpy(xyz, np.radians(rpy))
    elif kin.position_only:
        pose = spatial.from_translation(xyz)
    else:
        raise RobohalError(f"{model} needs an orientation: --quat W X Y Z or --rpy R P Y")
    solutions = kin.inverse(pose)
    rows = np.asarray(solutions) if show_all else np.asarray(solutions)[:1]
    label = getattr(kin, "solution_label", None)
    labels = [label(q) if callable(label) else "" for q in rows]
    if as_json:
        click.echo(json.dumps({
            "model": model, "reachable": bool(len(solutions)), "reason": solutions.reason,
            "solutions": [{"rad": q.tolist(), "deg": np.degrees(q).tolist(), "branch": b} for q, b in zip(rows, labels, strict=True)],
        }, indent=2))
        if not len(solutions):
            sys.exit(1)
        return
    if not len(solutions):
        click.echo(f"unreachable: {solutions.reason}")
        sys.exit(1)
    joint_names = [f"j{i + 1}" for i in range(kin.dof)]
    table = _table(f"{model}: {len(solutions)} solution(s)" + ("" if show_all else ", best shown (--all for every one)"),
                   ["#", "branch", "unit", *joint_names])
    for i, (q, branch) in enumerate(zip(rows, labels, strict=True)):
        table.add_row(str(i + 1), branch or "-", "deg", *(f"{v:.4f}" for v in np.degrees(q)))
        table.add_row("", "", "rad", *(f"{v:.6f}" for v in q))
    _console().print(table)


# Simulators, HIL, demo ---------------------------------------------------------------------


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("scheme", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def sim(scheme: str | None, args: Sequence[str]) -> None:
    """Run SCHEME's bundled simulator in the foreground until Ctrl-C (loopback only).

    ARGS go to the simulator program (`robohal sim SCHEME --help` lists them). Its first line
    is `READY <robot URI>`: connect there. Without SCHEME: the simulators there are."""
    from ..errors import UnknownNameError
    from ..sim.process import python_module, run_foreground

    programs = {spec.scheme: spec.simulator for spec in default_registry().backends()
                if spec.simulator is not None and spec.simulator.program}
    if scheme is None:
        for name, simulator in sorted(programs.items()):
            click.echo(f"{name}\tpython -m {simulator.program}\t{simulator.description}")
        return
    if scheme not in programs:
        raise UnknownNameError("simulator", scheme, list(programs))
    sys.exit(run_foreground(python_module(programs[scheme].program, *args)))


@main.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.option("--target", "targets", multiple=True, metavar="URI", help="Robot URI (repeatable); default: every bundled simulator.")
@click.option("--report", type=click.Path(file_okay=False), help="Write JUnit XML and a Markdown report here.")
@click.option("--suite", "suites", multiple=True, type=click.Path(exists=True),
              help="HIL test folder (repeatable; default: the contract suite and every installed backend's own).")
@click.option("--list-suites", is_flag=True, help="Print the default suites' folders and exit.")
@click.option("--yes", "assume_yes", is_flag=True, help="Do not wait for Enter before moving real hardware (scripts, CI on a cell).")
@click.option("--cells", "cells_file", type=click.Path(dir_okay=False), help="A lab's cell file (see hil/cells.example.toml).")
@click.option("--cell", "cell_names", multiple=True, metavar="NAME",
              help="Run this cell of --cells (repeatable; 'all': every cell).")
@click.option("--labgrid", "coordinator", metavar="HOST:PORT",
              help="labgrid coordinator: hold each cell's place while it runs (default: the cell file's [lab] coordinator).")
@click.option("--lock-timeout", type=click.FloatRange(min=0.0), metavar="SECONDS",
              help="How long to wait for a cell another run holds (default: the cell file's, else 600 s).")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Cells run at once, one pytest process each.")
@click.option("--shard", "shard_text", metavar="K/N", help="Run only this job's share of the cells (job K of N).")
@click.option("--history", type=click.Path(dir_okay=False), help="Append a JSON line per cell to this file.")
@click.argument("pytest_args", nargs=-1, type=click.UNPROCESSED)
def hil(targets: Sequence[str], report: str | None, suites: Sequence[str], list_suites: bool, assume_yes: bool,
        cells_file: str | None, cell_names: Sequence[str], coordinator: str | None, lock_timeout: float | None,
        jobs: int, shard_text: str | None, history: str | None, pytest_args: Sequence[str]) -> None:
    """Run the HIL suites against robot URIs, or a lab's named cells (extra arguments go to pytest).

    Real robots move: robohal asks for Enter first (--yes skips the question)."""
    from .hil import confirm_real_hardware, default_suites, run_hil, suite_folder, targets_in_pytest_args

    if list_suites:
        for package in default_suites():
            click.echo(f"{package}\t{suite_folder(package)}")
        return
    if cells_file or cell_names:
        from .lab import run_lab

        sys.exit(run_lab(cells_file, cell_names, targets=targets, suites=suites, report=report,
                           coordinator=coordinator, lock_timeout=lock_timeout, jobs=jobs, shard_text=shard_text,
                           history=history, assume_yes=assume_yes, pytest_args=pytest_args))
    for option, value in (("--labgrid", coordinator), ("--shard", shard_text), ("--history", history),
                          ("--lock-timeout", lock_timeout)):
        if value is not None:
            raise click.UsageError(f"{option} needs --cells FILE --cell NAME")
    if not confirm_real_hardware([*targets, *targets_in_pytest_args(pytest_args)], assume_yes=assume_yes):
        sys.exit(2)
    sys.exit(run_hil(targets, report=report, suites=suites, pytest_args=pytest_args))


@main.group()
def certificates() -> None:
    """Controllers' certificates robohal trusts (pinned on first use, as ssh pins host keys)."""


@certificates.command("list")
def certificates_list() -> None:
    """Every pinned certificate: HOST:PORT, SHA-256 fingerprint, when it was first seen."""
    from ..net.tls import KnownCertificates

    known = KnownCertificates()
    entries = known.entries()
    if not entries:
        click.echo(f"no pinned certificates ({known.path})")
    for key, pin in sorted(entries.items()):
        click.echo(f"{key}\tSHA256 {pin.fingerprint}\tfirst seen {pin.first_seen}")


@certificates.command("forget")
@click.argument("address", metavar="HOST:PORT")
def certificates_forget(address: str) -> None:
    """Forget HOST:PORT's pinned certificate: the next connection trusts what it shows, and pins it.
    Do this once you know why the controller's certificate changed."""
    from ..net.tls import KnownCertificates

    known = KnownCertificates()
    if not known.forget(address):
        raise RobohalError(f"no certificate is pinned for {address} in {known.path} (robohal certificates list)")
    click.echo(f"forgot the certificate of {address}; the next connection pins the one it shows")


@main.command("new-plugin")
@click.argument("name")
@click.option("--dir", "directory", type=click.Path(file_okay=False), default=".", show_default=True)
def new_plugin(name: str, directory: str) -> None:
    """Scaffold a plugin distribution robohal-NAME (model, backend skeleton, tests)."""
    from .scaffold import new_plugin as scaffold

    root = scaffold(name, directory)
    click.echo(f"created {root}")
    click.echo(f"next: pip install -e '{root}[test]' && (cd {root} && pytest)")


@main.command()
@click.option("--out", type=click.Path(file_okay=False), default="robohal-demo", show_default=True,
              help="Folder for the plots and summary.")
@click.option("--view", "show", is_flag=True, help="Show each robot live in the browser while its task runs.")
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True, help="The view's port.")
def demo(out: str, show: bool, port: int) -> None:
    """Drive the bundled simulators through a short task each and summarise."""
    from .demo import run_demo

    if not show:
        sys.exit(run_demo(out))
    with _view_serve()((), port=port, watch=True) as page:
        click.echo(f"robohal demo, live: {page.url}")
        sys.exit(run_demo(out, view=page))


@main.command()
@click.argument("uri")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to serve on. Anything but loopback only watches unless --allow-control.")
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True,
              help="Port to serve on (the next free one if taken).")
@click.option("--watch", is_flag=True, help="Show the robot, never command it (watch a cell another program drives).")
@click.option("--allow-control", is_flag=True,
              help="With --host on another interface: pages that give the printed token may command the robot.")
@click.option("--urdf", type=click.Path(dir_okay=False), default=None,
              help="Draw the robot with this URDF's meshes (it must follow the model's joints).")
def view(uri: str, host: str, port: int, watch: bool, allow_control: bool, urdf: str | None) -> None:
    """Show a robot live in the browser, with sliders, a flange gizmo, Stop and Recover."""
    from ..connection import open_robot

    serve = _view_serve()
    with open_robot(uri) as robot, serve(robot, host=host, port=port, watch=watch, allow_control=allow_control,
                                         urdf=urdf) as page:
        click.echo(f"robohal view of {robot.name}: {page.url}")
        if page.token:
            click.echo(f"commands need this token (give it in the page): {page.token}")
        elif not page.commands_allowed:
            click.echo("watching only: the page commands nothing")
        sys.stdout.flush()  # the address is what a script waits for
        click.echo("Ctrl-C to stop", err=True)
        _wait_for_interrupt()


def _view_serve():
    try:
        from ..view import serve
    except ImportError as exc:
        raise RobohalError(f"the view needs viser ({exc}): pip install 'robohal[view]'") from None
    return serve


def _wait_for_interrupt() -> None:
    import threading

    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass


# Planar arms: jog and draw -----------------------------------------------------------------


@main.command()
@click.argument("uri")
@click.option("--step", type=click.FloatRange(0.5, 50.0), default=5.0, show_default=True, help="Millimetres per key press.")
@click.option("--speed", type=click.FloatRange(0.01, 1.0), default=0.3, show_default=True,
              help="How fast the arm follows, a fraction of its joint limits.")
@click.option("--elbow", type=click.Choice(["up", "down"]), help="Elbow branch (default: the arm's present one).")
def jog(uri: str, step: float, speed: float, elbow: str | None) -> None:
    """Move a planar arm's end point, a servo arm's tool or a spatial arm's tool (r/f: up and down)
    with the arrow keys (keys as text when stdin is not a terminal)."""
    from ..connection import open_robot
    from ..kinematics.vertical_plane import VerticalPlaneArm
    from .drawing import planar_two_link
    from .jog import run_jog, spatial_arm
    from .offline import model_of

    named, _, model = model_of(uri)  # an arm jog cannot move is refused before anything starts
    if not (planar_two_link(model) or isinstance(model, VerticalPlaneArm) or spatial_arm(model)):
        raise RobohalError(f"jog moves a planar two-link arm's end point (like arduino.planar2), a servo arm's tool"
                           f" from its arm file (like arm.mearm) or the tool of an arm of five or more joints;"
                           f" {named.model} is not one")
    with open_robot(uri) as robot:
        run_jog(robot, step=step / 1000.0, speed=speed, elbow=elbow)


@main.group()
def arm() -> None:
    """Servo arms from arm files: write one, calibrate one."""


@arm.command("new")
@click.argument("name")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path),
              help="Where to write NAME.toml (default: ~/.config/robohal/models).")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def arm_new(name: str, folder: Path | None, force: bool) -> None:
    """Write a commented arm file for the arm NAME (a four-servo arm to edit)."""
    from .arm import new_arm

    click.echo(new_arm(name, folder, force))


@arm.command("calibrate")
@click.argument("uri")
def arm_calibrate(uri: str) -> None:
    """Jog each servo of an arm file's arm to its marks, record them, write the calibration back."""
    import sys

    from ..connection import open_robot
    from .arm import calibrate, keys_from

    with open_robot(uri) as robot:
        calibrate(robot, keys_from(lambda: sys.stdin.read(1)), click.echo)


SHAPES = ("line", "circle", "square", "polyline")


def _origin(ctx: click.Context, param: click.Parameter, value: str | None) -> np.ndarray | None:
    if value is None:
        return None
    try:
        origin = np.array([float(v) for v in value.replace(",", " ").split()])
    except ValueError:
        origin = np.array([])
    if origin.shape != (3,) or not np.isfinite(origin).all():
        raise click.BadParameter(f"expected X,Y,Z in metres, got {value!r}")
    return origin


@main.command()
@click.argument("uri")
@click.argument("shape", type=click.Choice(SHAPES), required=False, metavar="{line|circle|square|polyline}")
@click.option("--center", nargs=2, type=float,
              help="Centre x y (m) of a circle or square [default: a planar arm's middle of reach; on a plane, its origin].")
@click.option("--radius", type=float, default=0.02, show_default=True, help="Circle radius, m.")
@click.option("--side", type=float, default=0.03, show_default=True, help="Square side, m.")
@click.option("--start", "line_start", nargs=2, type=float, help="Line start x y (m).")
@click.option("--end", "line_end", nargs=2, type=float, help="Line end x y (m).")
@click.option("--file", "polyline_file", type=click.Path(dir_okay=False),
              help="Polyline file: one 'x y' (m) per line; a line 'up' lifts the pen (a new stroke).")
@click.option("--speed", type=float, default=0.05, show_default=True, help="Pen speed along the path, m/s.")
@click.option("--elbow", type=click.Choice(["auto", "up", "down"]), default="auto", show_default=True,
              help="A planar arm's elbow branch.")
@click.option("--origin", callback=_origin, metavar="X,Y,Z",
              help="A 6- or 7-axis arm draws on the horizontal plane through this point (m, base frame), the tool"
                   " pointing down; the shape's x y are from it [default: a reachable point in front of the arm].")
@click.option("--lift", type=float, help="How far (m) a 6- or 7-axis arm lifts the tool between strokes [default: 0.03].")
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False),
              help="Write a PNG of the target against the drawn path (on a dry run, the planned one).")
@click.option("--dry-run", is_flag=True,
              help="Plan and check the shape from the URI and the model alone, then stop: nothing is connected,"
                   " no simulator started, no serial port opened.")
@click.option("--planned", is_flag=True,
              help="Play each stroke as its planned setpoints instead of streaming them (robot.servo); the default on"
                   " a simulation not paced by the clock.")
def draw(uri: str, shape: str | None, center: tuple[float, float] | None, radius: float, side: float,
         line_start: tuple[float, float] | None, line_end: tuple[float, float] | None,
         polyline_file: str | None, speed: float, elbow: str, origin: np.ndarray | None, lift: float | None,
         plot_file: str | None, dry_run: bool, planned: bool) -> None:
    """Draw SHAPE: a planar arm in its plane, a 6- or 7-axis arm on a horizontal plane with the tool
    pointing down (lifted between strokes). The whole path is time-parametrised and checked before
    anything moves (a shape out of reach is refused), then streamed to the arm through robot.servo
    at 50 Hz, each point with its joint velocity and acceleration, as a tablet would. Where a robot
    has a pen lift (robot.io['pen_down'], e.g. tool=pen on an Arduino arm), the pen is up between
    strokes."""
    from ..connection import open_robot
    from ..kinematics.vertical_plane import VerticalPlaneArm
    from . import drawing, offline, plane_drawing

    if shape is None:  # (click lists the choices over several lines)
        raise click.UsageError(f"Missing argument SHAPE: one of {', '.join(SHAPES)}.")
    named, _, model = offline.model_of(uri)  # before anything is connected or started
    on_plane = plane_drawing.spatial_arm(model)
    if isinstance(model, VerticalPlaneArm) and not on_plane:
        raise RobohalError(f"robohal draw: {named.model} cannot hold a pen to the paper: its tool"
                           f" {'is held level by its linkage' if model.position_only else 'has no wrist roll'}, so it"
                           " cannot point down wherever the base turns (an arm with a wrist pitch and roll, like"
                           " arm.braccio, can)")
    if not on_plane and not drawing.planar_two_link(model):
        raise RobohalError(f"robohal draw needs a planar two-link arm or an arm that points its tool (6 or more"
                           f" joints); {named.model} has {model.dof} joint{'s' * (model.dof > 1)}")
    if on_plane and elbow != "auto":
        raise RobohalError("--elbow picks a planar arm's branch; a 6- or 7-axis arm keeps the one it starts on")
    if not on_plane and (origin is not None or lift is not None):
        raise RobohalError("--origin and --lift place the plane of a 6- or 7-axis arm; a planar arm draws in its own plane")
    for name, value in (("--speed", speed), ("--lift", lift)):
        if value is not None and not (np.isfinite(value) and value > 0):
            raise RobohalError(f"{name} must be a positive number of {'m/s' if name == '--speed' else 'metres'}, got {value}")
    if plot_file:
        from .drawing_plot import require_writable

        require_writable(plot_file)  # a draw is not lost to a typo in the plot's path
    segments = _shape(model, shape, center, radius, side, line_start, line_end, polyline_file, on_plane)
    # (a Robot's own `with` connects it: the dry run's robot is held without one)
    with contextlib.nullcontext(offline.unconnected_robot(uri)) if dry_run else open_robot(uri) as robot:
        if dry_run:
            click.echo(f"dry run: {robot.name}, planned from the URI and the model alone (nothing connected)")
        else:
            click.echo(f"connected: {robot.backend.identity or robot.name}{' (simulated)' if robot.simulated else ''}")
        start = None if dry_run else robot.backend.commanded
        if on_plane:
            plan = plane_drawing.plan_on_plane(model, segments, period=robot.backend.period, origin=origin,
                                               lift=plane_drawing.DEFAULT_LIFT if lift is None else lift, speed=speed,
                                               start=start, check=robot.backend.check_setpoints)
        else:
            plan = drawing.plan_drawing(model, segments, period=robot.backend.period, speed=speed, elbow=elbow,
                                        start=start, check=robot.backend.check_setpoints)
        click.echo(_plan_line(shape, plan, drawing.has_pen_lift(robot)))
        if dry_run:
            drawn = [plan.joints[a:b] for a, b in plan.strokes]
            _plot(plot_file, model, plan, drawn, f"{shape} on {robot.name}, planned (dry run)", None)
            return
        if planned or not robot.backend.realtime:
            results = drawing.draw(robot, plan)
            how = f"{sum(result.cycles for result in results)} planned setpoints played"
            if not planned:
                how += " (a simulation not paced by the clock has no time to stream against)"
        else:
            results = drawing.stream(robot, plan)
            how = f"{plan.duration:.2f} s of path streamed through servo at {drawing.DEFAULT_STREAM_RATE:.0f} Hz"
        deviation = drawing.path_deviation(model, plan, results)
        click.echo(f"drawn: {how}, measured pen within {deviation * 1000:.2f} mm of the path")
        drawn = [result.measured for result in results]
        _plot(plot_file, model, plan, drawn, f"{shape} on {robot.name}", deviation)


def _shape(model, shape: str, center: tuple[float, float] | None, radius: float, side: float,
           line_start: tuple[float, float] | None, line_end: tuple[float, float] | None, polyline_file: str | None,
           on_plane: bool) -> list:
    """The shape's segments, from the options (a planar arm's default centre is the middle of its
    reach; on a plane, the plane's origin)."""
    from . import drawing

    if center is None and shape in ("circle", "square"):
        center = (0.0, 0.0) if on_plane else tuple(drawing.workspace_middle(model)[0])
    if shape == "line":
        if line_start is None or line_end is None:
            raise RobohalError("a line needs --start X Y and --end X Y (metres)")
        return drawing.line(line_start, line_end)
    if shape == "circle":
        return drawing.circle(center, radius)
    if shape == "square":
        return drawing.square(center, side)
    if not polyline_file:
        raise RobohalError("a polyline needs --file PATH (one 'x y' in metres per line)")
    return [segment for stroke in drawing.read_strokes(polyline_file) for segment in drawing.polyline(stroke)]


def _plan_line(shape: str, plan, pen_lift: bool) -> str:
    """What ``robohal draw`` says of its plan: the path, the time, the speed it draws at (and what
    lowered it below the one asked), the branch or the plane."""
    strokes = len(plan.strokes)
    if plan.plane is not None:
        lift = "tool lifted between strokes" if strokes > 1 else "tool lowered and lifted"
    else:
        lift = "pen lifted between strokes" if pen_lift else "no pen lift"
    speed = f"at up to {plan.top_speed * 1000:.0f} mm/s" + (f" ({plan.speed_note})" if plan.speed_note else "")
    line = (f"{shape}: {plan.length * 1000:.1f} mm of path in {strokes} stroke{'s' * (strokes > 1)} ({lift}),"
            f" {len(plan.points)} setpoints, {plan.duration:.2f} s {speed}")
    if plan.plane is None:
        return f"{line}, elbow {plan.elbow}"
    x, y, z = plan.plane[:3, 3] * 1000
    travel = sum(len(joints) for joints in plan.travels) * plan.period
    branch = f", {plan.elbow}" if plan.elbow else ""
    return f"{line}, tool down on the plane through ({x:.0f}, {y:.0f}, {z:.0f}) mm{branch}; pen-up moves {travel:.2f} s"


def _plot(plot_file: str | None, model, plan, drawn: list, title: str, deviation: float | None) -> None:
    if plot_file:
        from .drawing_plot import plot_drawing

        click.echo(f"plot: {plot_drawing(model, plan, drawn, plot_file, title, deviation)}")


if __name__ == "__main__":  # pragma: no cover
    main()
