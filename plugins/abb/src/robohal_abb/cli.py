"""``robohal abb ...``: an ABB cell over Robot Web Services, from the command line.

    robohal abb status URI [--json]          motors, mode, RAPID, whether RobohalEgm is loaded
    robohal abb setup URI [--module FILE]    upload RobohalEgm.mod, load it, check it built, PP to main
    robohal abb start URI                    motors on, RAPID started: the controller streams EGM
    robohal abb stop URI [--motors-off]      RAPID stopped
    robohal abb motors on|off URI   (as robohal franka fci on|off URI)
    robohal abb io URI NAME [VALUE]          read a signal, or set it
    robohal abb elog URI [--limit N] [--since SEQ] [--json]

URI is the robot's ``abb-egm://...?rws=http(s)://CONTROLLER`` URI, or the controller's RWS
address itself (``https://192.168.125.1``). ``abb-egm://sim?sim_rws=6|7`` runs the command on a
simulated controller started for it (and stopped after). Credentials come from
``ROBOHAL_ABB_RWS_USER``/``ROBOHAL_ABB_RWS_PASSWORD`` or the owner-only credentials file, never
from the command line.
"""

from __future__ import annotations

import json

import click

from .cell import open_cell


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def abb() -> None:
    """An ABB cell over Robot Web Services (RobotWare 6 and 7): URI is abb-egm://...?rws=http(s)://HOST,
    or the RWS address itself. Credentials: ROBOHAL_ABB_RWS_USER/_PASSWORD or the owner-only
    ~/.config/robohal/credentials.toml; ABB's defaults otherwise."""


@abb.command()
@click.argument("uri")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(uri: str, as_json: bool) -> None:
    """The cell: motors, operating mode, RAPID, speed ratio, whether RobohalEgm is loaded and builds."""
    with open_cell(uri) as cell:
        found = cell.status()
    if as_json:
        click.echo(json.dumps(found.as_dict(), indent=2))
        return
    click.echo(f"controller  {found.system.name} (RobotWare {found.system.robotware or found.robotware}) at {found.url}")
    click.echo(f"motors      {found.controller_state}")
    click.echo(f"mode        {found.operation_mode}")
    click.echo(f"RAPID       {found.execution.state}" + (f" (cycle {found.execution.cycle})" if found.execution.cycle else ""))
    click.echo(f"speed       {found.speed_ratio * 100:.0f} %")
    click.echo(f"module      RobohalEgm {'loaded' if found.module_loaded else 'not loaded'} in {found.task}")
    for problem in found.problems:
        click.echo(f"not ready   {problem}")
    if found.ready:
        click.echo("ready       the cell streams EGM")


@abb.command()
@click.argument("uri")
@click.option("--module", "module", type=click.Path(exists=True, dir_okay=False),
              help="The RAPID module to load (default: robohal's RobohalEgm.mod).")
@click.option("--task", default="T_ROB1", show_default=True, help="The motion task to load it into.")
def setup(uri: str, module: str | None, task: str) -> None:
    """Upload RobohalEgm.mod, load it into the motion task, check that it built, set the program
    pointer to main. RAPID must be stopped; in manual mode the pendant grants write access."""
    with open_cell(uri) as cell:
        cell.task = task
        remote = cell.setup(module)
        click.echo(f"set up: {remote} loaded into {task}, built, program pointer at main")


@abb.command()
@click.argument("uri")
def start(uri: str) -> None:
    """Motors on and RAPID started: the controller streams EGM to robohal."""
    with open_cell(uri) as cell:
        changed = cell.start()
    click.echo("started: motors on, RAPID running" if changed else "already running")


@abb.command()
@click.argument("uri")
@click.option("--motors-off", is_flag=True, help="Turn the motors off too.")
def stop(uri: str, motors_off: bool) -> None:
    """RAPID stopped (the EGM run ends)."""
    with open_cell(uri) as cell:
        cell.stop(motors_off=motors_off)
    click.echo("stopped: RAPID stopped" + (", motors off" if motors_off else ""))


@abb.command()
@click.argument("state", type=click.Choice(["on", "off"]))
@click.argument("uri")
def motors(state: str, uri: str) -> None:
    """Motors on (automatic mode only: in manual mode the enabling device does it) or off."""
    with open_cell(uri) as cell:
        cell.motors(state == "on")
    click.echo(f"motors {state}")


def _signal_value(text: str) -> bool | int | float:
    lowered = text.strip().lower()
    if lowered in ("true", "on"):
        return True
    if lowered in ("false", "off"):
        return False
    try:
        return int(lowered)
    except ValueError:
        pass
    try:
        return float(lowered)
    except ValueError:
        raise click.BadParameter(f"{text!r}: a signal value is 0/1, on/off, an integer or a number") from None


@abb.command()
@click.argument("uri")
@click.argument("name")
@click.argument("value", required=False)
def io(uri: str, name: str, value: str | None) -> None:
    """Read the I/O signal NAME (NETWORK/DEVICE/NAME, or the name alone), or set it to VALUE."""
    with open_cell(uri) as cell:
        signal = cell.io(name, _signal_value(value) if value is not None else None)
    shown = int(signal.value) if isinstance(signal.value, bool) else signal.value
    click.echo(f"{signal.path} ({signal.type}) = {shown}")


@abb.command()
@click.argument("uri")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="The newest N messages.")
@click.option("--since", type=int, default=None, help="Only messages after this sequence number.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def elog(uri: str, limit: int, since: int | None, as_json: bool) -> None:
    """The controller's event log (common domain), oldest first, with sequence numbers."""
    with open_cell(uri) as cell:
        entries = cell.elog(since=since, limit=limit)
    if as_json:
        click.echo(json.dumps([entry.__dict__ | {"severity": entry.severity} for entry in entries], indent=2,
                              default=list))
        return
    for entry in entries:
        click.echo(f"{entry.seqnum:>7}  {entry.timestamp:<22} {entry.severity:<7} {entry.code:>6}  {entry.title}")
