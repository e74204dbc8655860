"""Typed records that plugins return from their hooks."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import PluginError

if TYPE_CHECKING:
    import click

    from ..control.backend import Backend
    from ..kinematics import Kinematics
    from ..uri import RobotUri

_MODEL_NAME = re.compile(r"^[a-z0-9][a-z0-9_]*(\.[a-z0-9][a-z0-9_]*)+$")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*$")


@dataclass(frozen=True)
class ModelSpec:
    """A robot model a plugin offers.

    ``name`` is dotted and lower-case (``abb.irb1410``); ``factory`` builds the
    :class:`~robohal.kinematics.Kinematics` (keyword options are passed through).
    """

    name: str
    factory: Callable[..., Kinematics]
    dof: int
    description: str = ""
    tags: tuple[str, ...] = ()
    plugin: str | None = None  # stamped by the registry: the plugin that gave it

    def __post_init__(self) -> None:
        name = self.name.strip().lower()
        if not _MODEL_NAME.match(name):
            raise PluginError(
                f"model name {self.name!r} must be dotted lower-case, like 'vendor.model'"
            )
        if not callable(self.factory):
            raise PluginError(f"model {name!r}: factory must be callable")
        if int(self.dof) < 1:
            raise PluginError(f"model {name!r}: dof must be positive")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dof", int(self.dof))
        object.__setattr__(self, "tags", tuple(self.tags))


@dataclass(frozen=True)
class SimulatorSpec:
    """A bundled simulator that speaks the backend's own wire protocol.

    ``start(uri)`` starts it (in its own process where it is a separate program)
    for the reserved ``sim`` form of a URI and returns a
    :class:`~robohal.sim.process.RunningSimulator` whose ``uri`` is the concrete
    address the backend connects to. ``command`` is the click command behind
    ``robohal sim SCHEME``.
    """

    start: Callable[[RobotUri], Any]
    default_model: str
    command: click.Command | None = None
    description: str = ""


@dataclass(frozen=True)
class DemoSpec:
    """A short task ``robohal demo`` drives on a backend's bundled simulator.

    ``where()`` picks the URI when the demo runs and says what the task does:
    ``("abb-egm://sim?model=abb.irb1410", "a straight line over EGM")``. ``task(run)``
    connects to ``run.uri``, moves, and fills the :class:`~robohal.cli.demo.DemoRun`
    (its motion results, the ideal path, the model, the backend's figures).
    """

    name: str
    where: Callable[[], tuple[str, str]]
    task: Callable[[Any], None]  # takes the DemoRun (the demo application's type: no import here)


@dataclass(frozen=True)
class BackendSpec:
    """A hardware backend a plugin offers, under one URI scheme."""

    scheme: str
    factory: Callable[[RobotUri, Kinematics], Backend]
    description: str = ""
    simulator: SimulatorSpec | None = None
    hil_targets: tuple[str, ...] = ()  # default HIL targets (URIs), usually the sim forms
    #: the importable package holding this backend family's own HIL tests (pytest modules),
    #: which ``robohal hil`` runs besides the contract suite; ship it inside the distribution
    hil_suite: str | None = None
    features: frozenset[str] = frozenset()
    #: how close (rad) a settled joint move must land on its target, for the contract suite
    position_tolerance: float = 1e-3
    #: how long (s) the robot may take to settle after the last setpoint
    settle_time: float = 1.0
    plugin: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: what ``robohal demo`` shows of this backend, if anything
    demo: DemoSpec | None = None
    #: the query parameters the backend (and its simulator) read, besides ``model``; a name
    #: ending in ``*`` covers every parameter with that prefix (``sim_*``). ``connect`` refuses
    #: any other (a misspelt ``timeot=`` must not fall back to a default unseen). None: not declared.
    params: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        scheme = self.scheme.strip().lower()
        if not _SCHEME.match(scheme):
            raise PluginError(f"URI scheme {self.scheme!r} is not a valid scheme name")
        if not callable(self.factory):
            raise PluginError(f"backend {scheme!r}: factory must be callable")
        object.__setattr__(self, "scheme", scheme)
        object.__setattr__(self, "hil_targets", tuple(self.hil_targets))
        object.__setattr__(self, "features", frozenset(self.features))
