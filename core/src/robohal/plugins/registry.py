"""Plugin discovery and the registry of models and backends.

Nothing here is a hidden global: :func:`plugin_manager` builds a fresh pluggy
manager, :class:`Registry` collects the records from one, and the default
registry used by :func:`robohal.get_model` and friends can be replaced with
:func:`use_registry` (tests do this).

The core's own plugin (:mod:`.builtin`: the ``sim`` backend and ``generic.planar2``)
is registered in code under the name ``builtin``, before any other, in every
manager, as pytest and llm register theirs: it needs no entry point and cannot
be disabled.

Environment switches:

``ROBOHAL_DISABLE_PLUGINS``
    comma-separated entry-point names to hide (``abb,franka``); ``builtin`` is
    not hidden, only warned about.
``ROBOHAL_TRACE_PLUGINS=1``
    print every hook call (plugin, duration, records) to stderr.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import inspect
import logging
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pluggy

from ..errors import InvalidArgument, PluginConflictError, PluginError, RobohalError, UnknownNameError
from . import arm_files, builtin, hookspecs
from .records import BackendSpec, CommandSpec, ModelSpec

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "robohal"
DISABLE_ENV = "ROBOHAL_DISABLE_PLUGINS"
TRACE_ENV = "ROBOHAL_TRACE_PLUGINS"
#: the name the core's own plugin is registered under
BUILTIN = "builtin"


@dataclass(frozen=True)
class PluginInfo:
    """One registered plugin: its name, where it came from and what it gave."""

    name: str
    distribution: str | None = None
    version: str | None = None
    models: tuple[str, ...] = ()
    backends: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that could not be loaded, kept so the others still work."""

    name: str
    distribution: str | None
    error: str


def disabled_from_env(environ: dict[str, str] | None = None) -> frozenset[str]:
    raw = (environ if environ is not None else os.environ).get(DISABLE_ENV, "")
    return frozenset(part.strip() for part in raw.split(",") if part.strip())


def trace_from_env(environ: dict[str, str] | None = None) -> bool:
    raw = (environ if environ is not None else os.environ).get(TRACE_ENV, "")
    return raw.strip().lower() not in ("", "0", "false", "no", "off")


def plugin_manager(
    *,
    load_entry_points: bool = True,
    plugins: Iterable[tuple[str, Any]] = (),
    disabled: Iterable[str] | None = None,
) -> tuple[pluggy.PluginManager, dict[str, PluginFailure], dict[str, tuple[str | None, str | None]]]:
    """Build a plugin manager.

    Returns the manager, the plugins that failed to load (by name), and the
    distribution name and version of each entry-point plugin. The core's own
    plugin is always registered first, as ``builtin``. ``plugins`` adds
    ``(name, module_or_object)`` pairs directly (tests use this); ``disabled``
    defaults to ``ROBOHAL_DISABLE_PLUGINS``.
    """
    blocked = disabled_from_env() if disabled is None else frozenset(disabled)
    if BUILTIN in blocked:
        log.warning("%s names %r, the core's own plugin (the sim backend, generic.planar2): it cannot be"
                    " disabled and stays registered", DISABLE_ENV, BUILTIN)
        blocked -= {BUILTIN}
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    failures: dict[str, PluginFailure] = {}
    origins: dict[str, tuple[str | None, str | None]] = {}
    for name in blocked:
        pm.set_blocked(name)

    def add(name: str, obj: Any, dist: str | None, version: str | None) -> None:
        if pm.is_blocked(name):
            return
        if pm.has_plugin(name):
            raise PluginConflictError(
                f"two plugins are registered under the name {name!r}"
                f" ({origins.get(name, (None,))[0] or 'direct'} and {dist or 'direct'})"
            )
        pm.register(obj, name=name)
        origins[name] = (dist, version)

    add(BUILTIN, builtin, "robohal", _version("robohal"))
    for name, obj in plugins:
        add(name, obj, None, None)

    if load_entry_points:
        for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist is not None else None
            version = ep.dist.version if ep.dist is not None else None
            if ep.name in blocked:
                continue
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plugin must not take the others down
                failures[ep.name] = PluginFailure(
                    ep.name, dist, f"{type(exc).__name__}: {exc}".strip()
                )
                continue
            add(ep.name, obj, dist, version)
    pm.check_pending()
    return pm, failures, origins


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:  # running from a source tree
        return None


class Registry:
    """The models and backends offered by the plugins of one plugin manager."""

    def __init__(
        self,
        pm: pluggy.PluginManager,
        *,
        failures: dict[str, PluginFailure] | None = None,
        origins: dict[str, tuple[str | None, str | None]] | None = None,
        trace: bool | None = None,
    ) -> None:
        self.plugin_manager = pm
        self.failures: dict[str, PluginFailure] = dict(failures or {})
        self._origins = dict(origins or {})
        self._trace = trace_from_env() if trace is None else trace
        self._models: dict[str, ModelSpec] = {}
        self._backends: dict[str, BackendSpec] = {}
        self._commands: dict[str, CommandSpec] = {}
        self._collect()

    @classmethod
    def discover(cls, **kwargs: Any) -> Registry:
        """A registry of every installed plugin (honouring the environment switches)."""
        trace = kwargs.pop("trace", None)
        pm, failures, origins = plugin_manager(**kwargs)
        return cls(pm, failures=failures, origins=origins, trace=trace)

    # Collection -------------------------------------------------------------

    def _call_each(self, hook_name: str) -> Iterator[tuple[str, Any]]:
        """Call every implementation of a hook separately, so each record is
        attributed to the plugin that gave it."""
        hook = getattr(self.plugin_manager.hook, hook_name)
        for impl in hook.get_hookimpls():  # registration order
            start = time.perf_counter()
            try:
                result = impl.function()
            except Exception as exc:
                self.failures[impl.plugin_name] = PluginFailure(
                    impl.plugin_name,
                    self._origins.get(impl.plugin_name, (None, None))[0],
                    f"{hook_name}() raised {type(exc).__name__}: {exc}",
                )
                if self._trace:
                    traceback.print_exc(file=sys.stderr)
                continue
            records = list(result or ())
            if self._trace:
                elapsed = (time.perf_counter() - start) * 1e3
                print(
                    f"robohal: {hook_name}() [{impl.plugin_name}] -> {len(records)} record(s)"
                    f" in {elapsed:.2f} ms",
                    file=sys.stderr,
                )
            for record in records:
                yield impl.plugin_name, record

    def _describe(self, plugin: str | None) -> str:
        dist = self._origins.get(plugin or "", (None, None))[0]
        return f"plugin {plugin!r}" + (f" (distribution {dist})" if dist else "")

    def _describe_record(self, record: Any) -> str:
        source = getattr(record, "source", None)  # a model file's model: the file says more than the plugin
        return f"the model file {source}" if source else self._describe(record.plugin)

    def _collect(self) -> None:
        self._gather("robohal_models", ModelSpec, self._models, "name", "model")
        self._gather("robohal_backends", BackendSpec, self._backends, "scheme", "URI scheme")
        self._gather("robohal_commands", CommandSpec, self._commands, "name", "command")

    def _gather(self, hook: str, kind: type, into: dict, key: str, what: str) -> None:
        """Records of one hook, stamped with their plugin; a key claimed twice names both plugins."""
        for plugin, record in self._call_each(hook):
            if not isinstance(record, kind):
                raise PluginError(f"{self._describe(plugin)} returned {record!r} from {hook}(), not a {kind.__name__}")
            record = dataclasses.replace(record, plugin=plugin)
            name = getattr(record, key)
            if name in into:
                raise PluginConflictError(
                    f"{what} {name!r} is claimed by both {self._describe_record(into[name])}"
                    f" and {self._describe_record(record)}"
                )
            into[name] = record

    # Queries --------------------------------------------------------------------

    def models(self) -> list[ModelSpec]:
        return sorted(self._models.values(), key=lambda spec: spec.name)

    def backends(self) -> list[BackendSpec]:
        return sorted(self._backends.values(), key=lambda spec: spec.scheme)

    def commands(self) -> list[CommandSpec]:
        """The ``robohal`` subcommands plugins add, sorted by name."""
        return sorted(self._commands.values(), key=lambda spec: spec.name)

    def model_spec(self, name: str) -> ModelSpec:
        key = name.strip().lower() if isinstance(name, str) else name
        try:
            return self._models[key]
        except (KeyError, TypeError):
            raise UnknownNameError("model", str(name), list(self._models)) from None

    def backend_spec(self, scheme: str) -> BackendSpec:
        key = scheme.strip().lower()
        try:
            return self._backends[key]
        except KeyError:
            known = sorted(self._backends)
            advice = f"(the schemes: {', '.join(known)})" if known else ""
            if key in ("http", "https"):  # a controller's web address where a robot URI belongs
                advice = (f"(a robot URI starts with its backend's scheme, one of {', '.join(known)}; a controller's"
                          " web address goes in that URI's parameters, as its plugin's README shows)")
            raise UnknownNameError("backend scheme", scheme, known, advice) from None

    def get_model(self, name: str, **options: Any):
        """Build the named model's :class:`~robohal.kinematics.Kinematics`."""
        spec = self.model_spec(name)
        try:
            signature = inspect.signature(spec.factory)
        except ValueError:  # a factory whose signature cannot be read: let the call decide
            signature = None
        if signature is not None:
            try:
                signature.bind(**options)
            except TypeError:
                known = [p.name for p in signature.parameters.values()
                         if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
                unknown = sorted(set(options) - set(known))
                raise InvalidArgument(f"model {spec.name!r} has no option {', '.join(map(repr, unknown))};"
                                      f" its options: {', '.join(known) or 'none'}") from None
        try:
            model = spec.factory(**options)
        except RobohalError:
            raise
        except (TypeError, ValueError) as exc:
            if not options:  # the plugin's own bug: keep its traceback
                raise
            # a wrongly typed option, found deep in numpy
            raise InvalidArgument(f"model {spec.name!r}: invalid options {options}: {exc}") from exc
        if getattr(model, "dof", None) != spec.dof:
            raise PluginError(
                f"{self._describe(spec.plugin)}: model {spec.name!r} was declared with"
                f" {spec.dof} joints but its factory built {getattr(model, 'dof', None)}"
            )
        return model

    def plugins(self) -> list[PluginInfo]:
        infos = []
        for name, plugin in sorted(self.plugin_manager.list_name_plugin(), key=lambda item: item[0]):
            if plugin is None:  # blocked (disabled) names stay registered as None
                continue
            dist, version = self._origins.get(name, (None, None))
            infos.append(
                PluginInfo(
                    name=name,
                    distribution=dist,
                    version=version,
                    models=tuple(m.name for m in self.models() if m.plugin == name),
                    backends=tuple(b.scheme for b in self.backends() if b.plugin == name),
                    commands=tuple(c.name for c in self.commands() if c.plugin == name),
                )
            )
        return infos


_default: Registry | None = None


def default_registry() -> Registry:
    """The registry of installed plugins, discovered once on first use."""
    global _default
    if _default is None:
        _default = Registry.discover()
    return _default


# An arm file of kind "model" names a model some plugin registers: it is built by the default registry.
arm_files.registered_model = lambda name: default_registry().get_model(name)


def set_default_registry(registry: Registry | None) -> None:
    """Replace the default registry (None: discover again on next use)."""
    global _default
    _default = registry


@contextlib.contextmanager
def use_registry(registry: Registry) -> Iterator[Registry]:
    """Use ``registry`` as the default inside a ``with`` block."""
    global _default
    previous = _default
    _default = registry
    try:
        yield registry
    finally:
        _default = previous


def registry_with(*plugins: tuple[str, Any], entry_points: bool = False, **kwargs: Any) -> Registry:
    """A registry of the given ``(name, plugin)`` pairs, for tests and embedding."""
    return Registry.discover(load_entry_points=entry_points, plugins=plugins, **kwargs)


PluginCallable = Callable[[], Iterable[Any]]
