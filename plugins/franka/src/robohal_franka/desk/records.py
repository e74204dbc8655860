"""What a Desk session reports and holds, alike in both dialects, and its errors."""

from __future__ import annotations

from dataclasses import dataclass, field

from robohal.errors import RobohalError


@dataclass(frozen=True)
class ControlToken:
    """Control of the robot, as Desk granted it: its id, the owner it was asked for, and the token
    a control call carries (never shown)."""

    id: str
    owner: str
    secret: str = field(repr=False)


@dataclass(frozen=True)
class DeskStatus:
    """The robot as Desk reports it."""

    dialect: str  # "v1" (the Desk API) or "web" (the older web session)
    holder: str | None  # who holds control (its owner name), None: nobody
    holder_id: str | None
    fci_active: bool
    joints: str  # "Locked", "Unlocked" or "Mixed"
    operating_mode: str  # "Execution", "Programming", ...
    self_test: str  # "OK", "Running", "Failed", "Elapsed", ... ("" where the dialect does not say)
    safety_errors: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        """Whether libfranka may move the arm: FCI active, joints unlocked, no safety error."""
        return self.fci_active and self.joints == "Unlocked" and not self.safety_errors and self.self_test != "Running"

    def lines(self) -> list[str]:
        """The status as ``name: value`` lines (``robohal franka status``)."""
        return [f"dialect: {'Desk API v1' if self.dialect == 'v1' else 'older web session'}",
                f"control: {self.holder or 'free'}" + (f" (token {self.holder_id})" if self.holder_id else ""),
                f"joints: {self.joints}", f"FCI: {'active' if self.fci_active else 'inactive'}",
                f"operating mode: {self.operating_mode}", f"self-tests: {self.self_test or 'unknown'}",
                f"safety errors: {', '.join(self.safety_errors) or 'none'}",
                f"ready to move: {'yes' if self.ready else 'no'}"]


class ControlHeld(RobohalError):
    """Someone else holds control of the robot (``owner``); robohal does not take it from them
    unless asked to (``force``)."""

    def __init__(self, message: str, *, owner: str | None) -> None:
        super().__init__(message)
        self.owner = owner
