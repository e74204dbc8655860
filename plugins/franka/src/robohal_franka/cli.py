"""``robohal franka ...``: a Franka's Desk from the shell (credentials from the environment or
the credentials file, never from the command line).

    robohal franka status URI            what Desk reports; takes nothing
    robohal franka unlock URI [--force]  take control, unlock the joints (control is kept)
    robohal franka fci on|off URI        take control if needed, activate (deactivate) FCI
    robohal franka lock URI              FCI off, lock the joints, release control
    robohal franka selftest URI          run the safety self-tests, wait for the result
    robohal franka recover URI           confirm a pending safety error
    robohal franka release URI           give control back

URI is the robot's ``franka://HOST`` (with ``desk=``, ``desk_fingerprint=``, ``desk_credentials=``
as :mod:`.desk.access` describes).
"""

from __future__ import annotations

import json

import click
from robohal.uri import parse_uri

from .desk import DeskSession
from .desk.session import TAKE_TIMEOUT

URI = click.argument("uri")
FORCE = click.option("--force", is_flag=True,
                     help="take control from whoever holds it (v1: Desk asks them to release it; the web session: "
                          "someone presses the circle button on the robot's Pilot)")
TIMEOUT = click.option("--timeout", type=float, default=TAKE_TIMEOUT, show_default=True,
                       help="seconds to wait for control")


def _open(uri: str) -> DeskSession:
    from .desk.access import open_desk

    session = open_desk(parse_uri(uri))
    session.say = lambda text: click.echo(text, err=True)  # the Pilot prompt, to the person at the robot
    return session


def _control(desk: DeskSession, force: bool, timeout: float) -> None:
    had = desk.has_control
    token = desk.take_control(force=force, timeout=timeout)
    if not had:
        click.echo(f"control taken as {token.owner} (token {token.id}); robohal franka release gives it back")


@click.group("franka", context_settings={"help_option_names": ["-h", "--help"]})
def franka() -> None:
    """A Franka's Desk: control, joints, FCI, self-tests, recovery (both Desk dialects)."""


@franka.command()
@URI
@click.option("--json", "as_json", is_flag=True, help="one JSON object")
def status(uri: str, as_json: bool) -> None:
    """What Desk reports (control, joints, FCI, mode, self-tests, safety errors); changes nothing."""
    with _open(uri) as desk:
        report = desk.status()
    if as_json:
        click.echo(json.dumps({**report.__dict__, "ready": report.ready}))
    else:
        click.echo("\n".join(report.lines()))


@franka.command()
@URI
@FORCE
@TIMEOUT
def unlock(uri: str, force: bool, timeout: float) -> None:
    """Take control and unlock the joints (control stays with you for the next commands)."""
    with _open(uri) as desk:
        _control(desk, force, timeout)
        desk.unlock()
        click.echo("joints unlocked")


@franka.command()
@click.argument("state", type=click.Choice(["on", "off"]))
@URI
@FORCE
@TIMEOUT
def fci(state: str, uri: str, force: bool, timeout: float) -> None:
    """Activate (on) or deactivate (off) FCI, taking control if needed."""
    with _open(uri) as desk:
        _control(desk, force, timeout)
        desk.fci(state == "on")
        click.echo(f"FCI {'active' if state == 'on' else 'inactive'}")


@franka.command()
@URI
@click.option("--keep-control", is_flag=True, help="keep control after locking")
def lock(uri: str, keep_control: bool) -> None:
    """Deactivate FCI (if you hold control), lock the joints and release control."""
    with _open(uri) as desk:
        if desk.has_control and desk.status().fci_active:
            desk.fci(False)
            click.echo("FCI inactive")
        desk.lock()
        click.echo("joints locked")
        if desk.has_control and not keep_control:
            desk.release_control()
            click.echo("control released")


@franka.command()
@URI
@FORCE
@TIMEOUT
def selftest(uri: str, force: bool, timeout: float) -> None:
    """Run the safety self-tests and wait for their result (the joints are held meanwhile)."""
    with _open(uri) as desk:
        _control(desk, force, timeout)
        desk.self_test()
        click.echo("self-tests passed")


@franka.command()
@URI
def recover(uri: str) -> None:
    """Confirm the pending safety error(s); then unlock the joints again."""
    with _open(uri) as desk:
        cleared = desk.recover()
        click.echo(f"confirmed: {', '.join(cleared)}" if cleared else "no safety error was pending")


@franka.command()
@URI
def release(uri: str) -> None:
    """Give control back (FCI ends with it)."""
    with _open(uri) as desk:
        if desk.token is None:
            click.echo("you hold no control of this robot")
            return
        desk.release_control()
        click.echo("control released")


