"""Bring-up in one call: take control, unlock the joints, activate FCI; and giving back exactly
what bring-up changed (FCI off, joints locked, control released), so that a robot found ready
stays as it was found."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from robohal.uri import RobotUri

from .session import TAKE_TIMEOUT, DeskSession


@dataclass
class BroughtUp:
    """What :func:`bring_up` changed, for :func:`give_back`."""

    took_control: bool = False
    unlocked: bool = False
    activated_fci: bool = False


def bring_up(desk: DeskSession, *, force: bool = False, timeout: float = TAKE_TIMEOUT) -> BroughtUp:
    """Make the robot ready for libfranka: control, joints unlocked, FCI active (each only where
    needed). Raises where Desk refuses (a safety error to confirm first, control held by another)."""
    done = BroughtUp()
    status = desk.status()
    if status.ready and (status.holder is None or desk.has_control):
        return done  # ready already (FCI ends with the control it belongs to: leave a holder's alone)
    had = desk.has_control
    desk.take_control(force=force, timeout=timeout)
    done.took_control = not had
    status = desk.status()
    if status.joints != "Unlocked":
        desk.unlock()
        done.unlocked = True
    if not status.fci_active:
        desk.fci(True)
        done.activated_fci = True
    return done


def give_back(desk: DeskSession, done: BroughtUp) -> None:
    """Undo what :func:`bring_up` did, in reverse: FCI off, joints locked, control released."""
    if done.activated_fci and desk.token is not None:
        desk.fci(False)
    if done.unlocked:
        desk.lock()
    if done.took_control:
        desk.release_control()


def cell_bring_up(uri: RobotUri) -> AbstractContextManager[BroughtUp] | None:
    """A HIL cell's Franka (its backend's ``bring_up``): control, joints and FCI through Desk for
    the whole run, with the credentials the URI names (``desk_credentials=``); after the run the
    robot is left safe whatever it was before: FCI off, joints locked, control released (a lab's
    rule). None for ``franka://sim``: a simulated cell's run starts its own robot."""
    return None if uri.wants_simulator else _cell_run(uri)


@contextmanager
def _cell_run(uri: RobotUri) -> Iterator[BroughtUp]:
    from .access import open_desk

    desk = open_desk(uri)
    try:
        done = bring_up(desk)
        try:
            yield done
        finally:
            leave_safe(desk)
    finally:
        desk.close()


def leave_safe(desk: DeskSession) -> None:
    """FCI off (where this session holds control), joints locked, control released."""
    if desk.has_control and desk.status().fci_active:
        desk.fci(False)
    desk.lock()
    if desk.token is not None:
        desk.release_control()
