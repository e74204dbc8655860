"""Typed records that plugins return from their hooks.

Every callable a record holds (``ModelSpec.factory``, ``BackendSpec.factory``,
``SimulatorSpec.start``, ``DemoSpec.where``, ``DemoSpec.task``, ``ToolSpec.factory``, ``BackendSpec.bring_up``
and ``CommandSpec.command``) is given either as
the object itself or as a dotted reference ``"package.module:attribute"`` (the
attribute may be dotted too: ``"package.module:Class.build"``). A reference is
checked for its form when the record is made, and its module is imported only
when it is first called: a plugin lists its models and backends without
importing its drivers. The record keeps a :class:`Reference` in place of the
string, a small callable, so call sites call the field as they would the object
(``spec.factory(uri, model)``); :meth:`Reference.load` gives the object itself.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import PluginError

if TYPE_CHECKING:
    from ..control.backend import Backend
    from ..control.tools import Gripper, IoPorts
    from ..kinematics import Kinematics
    from ..uri import RobotUri

_COMMAND_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_MODEL_NAME = re.compile(r"^[a-z0-9][a-z0-9_]*(\.[a-z0-9][a-z0-9_]*)+$")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*$")
_DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_MODULE = re.compile(rf"^{_DOTTED}$")
_REFERENCE = re.compile(rf"^{_DOTTED}:{_DOTTED}$")
_REFERENCE_FORM = "'package.module:attribute'"


class Reference:
    """A callable named by ``"package.module:attribute"``, imported when first used.

    Calling it calls the object; ``inspect.signature`` sees the object's signature
    (the registry checks model options with it). A module that cannot be imported,
    or an attribute it lacks, is a :class:`PluginError` naming the reference.
    """

    __slots__ = ("_target", "text")

    def __init__(self, text: str) -> None:
        if not isinstance(text, str) or not _REFERENCE.match(text):
            raise PluginError(f"{text!r} is not a reference of the form {_REFERENCE_FORM}")
        self.text = text
        self._target: Callable[..., Any] | None = None

    def load(self) -> Callable[..., Any]:
        """The object the reference names, imported on the first call."""
        if self._target is None:
            module_name, _, attributes = self.text.partition(":")
            try:
                target = importlib.import_module(module_name)
            except Exception as exc:  # whatever the module raises while it loads
                raise PluginError(f"cannot import {self.text!r}: {type(exc).__name__}: {exc}") from exc
            for name in attributes.split("."):
                try:
                    target = getattr(target, name)
                except AttributeError:
                    raise PluginError(f"cannot import {self.text!r}: {target!r} has no attribute {name!r}") from None
            if not callable(target):
                raise PluginError(f"{self.text!r} names {target!r:.80}, which cannot be called")
            self._target = target
        return self._target

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.load()(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self.load())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reference) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"Reference({self.text!r})"


def _callable_field(value: Any, record: str, name: str) -> Callable[..., Any]:
    """``value`` as a record keeps it: a callable as it is, a dotted reference as a :class:`Reference`."""
    if isinstance(value, str):
        if not _REFERENCE.match(value):
            raise PluginError(f"{record}: {name} {value!r} is not a reference of the form {_REFERENCE_FORM}")
        return Reference(value)
    if not callable(value):
        raise PluginError(f"{record}: {name} must be callable or a reference of the form {_REFERENCE_FORM},"
                          f" got {value!r:.80}")
    return value


@dataclass(frozen=True)
class ModelSpec:
    """A robot model a plugin offers.

    ``name`` is dotted and lower-case (``abb.irb1410``); ``factory`` builds the
    :class:`~robohal.kinematics.Kinematics` (keyword options are passed through).
    ``source`` is the file a model came from, for models registered by a model file
    (:mod:`robohal.plugins.model_files`).
    """

    name: str
    factory: Callable[..., Kinematics] | str
    dof: int
    description: str = ""
    tags: tuple[str, ...] = ()
    plugin: str | None = None  # stamped by the registry: the plugin that gave it
    source: str | None = None

    def __post_init__(self) -> None:
        name = self.name.strip().lower()
        if not _MODEL_NAME.match(name):
            raise PluginError(
                f"model name {self.name!r} must be dotted lower-case, like 'vendor.model'"
            )
        object.__setattr__(self, "factory", _callable_field(self.factory, f"model {name!r}", "factory"))
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
    address the backend connects to (:func:`robohal.sim.process.launch` does the
    usual work). ``program`` is the module of the simulator program
    (``"robohal_abb.simulator"``): ``robohal sim SCHEME ARGS`` runs
    ``python -m PROGRAM ARGS`` in the foreground. ``params`` are the query parameters, besides
    ``sim_*``, that only configure the simulator (``firmware``): a URI naming a robot's address
    with one of them is refused, since nothing would simulate what it asks for.
    """

    start: Callable[[RobotUri], Any] | str
    default_model: str
    program: str | None = None
    description: str = ""
    params: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        record = f"simulator {self.program or self.default_model!r}"
        object.__setattr__(self, "start", _callable_field(self.start, record, "start"))
        if self.program is not None and not (isinstance(self.program, str) and _MODULE.match(self.program)):
            raise PluginError(f"{record}: program {self.program!r} must be a module name like 'package.simulator'")


@dataclass(frozen=True)
class DemoSpec:
    """A short task ``robohal demo`` drives on a backend's bundled simulator.

    ``where()`` picks the URI when the demo runs and says what the task does:
    ``("abb-egm://sim?model=abb.irb1410", "a straight line over EGM")``. ``task(run)``
    connects to ``run.uri``, moves, and fills the :class:`~robohal.cli.demo.DemoRun`
    (its motion results, the ideal path, the model, the backend's figures).
    ``pick_place()``, where given, says where the robot's part lies for the demo's
    pick-and-place task (a :class:`~robohal.cli.pick_place.PickPlace`); the task itself is
    the core's, the same on every robot.
    """

    name: str
    where: Callable[[], tuple[str, str]] | str
    task: Callable[[Any], None] | str  # takes the DemoRun (the demo application's type: no import here)
    pick_place: Callable[[], Any] | str | None = None

    def __post_init__(self) -> None:
        record = f"demo {self.name!r}"
        object.__setattr__(self, "where", _callable_field(self.where, record, "where"))
        object.__setattr__(self, "task", _callable_field(self.task, record, "task"))
        if self.pick_place is not None:
            object.__setattr__(self, "pick_place", _callable_field(self.pick_place, record, "pick_place"))


TOOL_KINDS = ("gripper", "io")


@dataclass(frozen=True)
class ToolSpec:
    """A tool a backend offers: a ``"gripper"`` (``robot.gripper``) or ``"io"`` signals (``robot.io``).

    ``factory(uri, backend)`` builds the unconnected tool for a robot at ``uri`` (the concrete
    URI, after any bundled simulator started), a :class:`~robohal.control.tools.Gripper` or
    :class:`~robohal.control.tools.IoPorts`, or returns None when the URI names no such tool
    (a Franka without ``gripper=1``). ``connect`` connects a gripper after the arm and
    disconnects it before the arm. A third-party backend declares its tools the same way.
    """

    kind: str
    factory: Callable[[RobotUri, Backend], Gripper | IoPorts | None] | str
    description: str = ""

    def __post_init__(self) -> None:
        if self.kind not in TOOL_KINDS:
            raise PluginError(f"tool kind {self.kind!r} is not one of {', '.join(TOOL_KINDS)}")
        object.__setattr__(self, "factory", _callable_field(self.factory, f"tool {self.kind!r}", "factory"))


@dataclass(frozen=True)
class BackendSpec:
    """A hardware backend a plugin offers, under one URI scheme."""

    scheme: str
    factory: Callable[[RobotUri, Kinematics], Backend] | str
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
    #: what ``robohal demo`` shows of this backend, if anything (one task, or several in turn)
    demo: DemoSpec | tuple[DemoSpec, ...] | None = None
    #: the query parameters the backend (and its simulator) read, besides ``model``; a name
    #: ending in ``*`` covers every parameter with that prefix (``sim_*``). ``connect`` refuses
    #: any other (a misspelt ``timeot=`` must not fall back to a default unseen). None: not declared.
    params: tuple[str, ...] | None = None
    #: the tools robots on this backend may carry (at most one per kind), see :class:`ToolSpec`
    tools: tuple[ToolSpec, ...] = ()
    #: ``bring_up(uri)``: for a real robot, a context manager that makes the cell ready before a
    #: lab's suites run on it and leaves it stopped after (``robohal hil --cells``), or None when
    #: the URI names nothing to bring up with (an ABB cell without ``rws=``)
    bring_up: Callable[[RobotUri], Any] | str | None = None

    def __post_init__(self) -> None:
        scheme = self.scheme.strip().lower()
        if not _SCHEME.match(scheme):
            raise PluginError(f"URI scheme {self.scheme!r} is not a valid scheme name")
        object.__setattr__(self, "factory", _callable_field(self.factory, f"backend {scheme!r}", "factory"))
        object.__setattr__(self, "scheme", scheme)
        object.__setattr__(self, "hil_targets", tuple(self.hil_targets))
        object.__setattr__(self, "features", frozenset(self.features))
        object.__setattr__(self, "tools", tuple(self.tools))
        if self.bring_up is not None:
            object.__setattr__(self, "bring_up", _callable_field(self.bring_up, f"backend {scheme!r}", "bring_up"))
        kinds = [tool.kind for tool in self.tools if isinstance(tool, ToolSpec)]
        if len(kinds) != len(self.tools):
            raise PluginError(f"backend {scheme!r}: tools must be ToolSpec records")
        if len(set(kinds)) != len(kinds):
            raise PluginError(f"backend {scheme!r}: at most one tool of each kind, got {', '.join(kinds)}")


@dataclass(frozen=True)
class CommandSpec:
    """A ``robohal`` subcommand a plugin adds: ``robohal NAME ...`` runs ``command``, a click
    command or group (usually a reference, ``"robohal_abb.cli:abb"``, imported only when the
    command runs or its help is shown). The core's own commands keep their names."""

    name: str
    command: Any
    description: str = ""
    plugin: str | None = None  # stamped by the registry

    def __post_init__(self) -> None:
        name = self.name.strip().lower() if isinstance(self.name, str) else self.name
        if not isinstance(name, str) or not _COMMAND_NAME.match(name):
            raise PluginError(f"command name {self.name!r} must be lower-case letters, digits and '-'")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "command", _callable_field(self.command, f"command {name!r}", "command"))
