"""The contract between robohal and its plugins.

A plugin is a module (or object) registered under the entry-point group
``robohal`` (usually its package: ``acme = "robohal_acme"``) that implements
some of these hooks with :data:`hookimpl`::

    from robohal import hookimpl, ModelSpec

    @hookimpl
    def robohal_models():
        return [ModelSpec("acme.arm6", factory="robohal_acme.models:arm6", dof=6, description="ACME 6-axis")]

A record's callables may be dotted references like this one, imported only when
first used (see :mod:`.records`), so the hooks themselves import nothing heavy.

Hooks return typed records. The registry stamps each record with the name of
the plugin that gave it and refuses two records with the same model name or
URI scheme, naming both plugins.
"""

from __future__ import annotations

from collections.abc import Iterable

import pluggy

from .records import BackendSpec, CommandSpec, ModelSpec

PROJECT = "robohal"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def robohal_models() -> Iterable[ModelSpec]:
    """Return the robot models this plugin provides.

    Each :class:`ModelSpec` names a model (dotted, lower-case, e.g.
    ``abb.irb1410``) and a factory returning a
    :class:`robohal.kinematics.Kinematics`. Factories are called lazily, when a
    user asks for the model, so registering many models costs nothing.
    """


@hookspec
def robohal_backends() -> Iterable[BackendSpec]:
    """Return the hardware backends this plugin provides.

    Each :class:`BackendSpec` serves one URI scheme (``franka``, ``abb-egm``,
    ...). ``factory(uri, model)`` builds an unconnected
    :class:`robohal.control.backend.Backend`. Where the plugin bundles a simulator that
    speaks the same wire protocol, ``simulator`` describes it and
    ``hil_targets`` lists the URIs the HIL suites use when no target is given.
    ``tools`` declares what a robot on it may carry: a gripper (``robot.gripper``) and named
    I/O signals (``robot.io``), each a :class:`ToolSpec` whose factory builds the tool for a
    URI, or gives None when the URI names none.
    """


@hookspec
def robohal_commands() -> Iterable[CommandSpec]:
    """Return the ``robohal`` subcommands this plugin adds.

    Each :class:`CommandSpec` names a subcommand (``abb``) and the click command or group that
    runs it, usually as a dotted reference imported only when the command is used, so a plugin's
    command-line code costs nothing until then. The core imports no plugin: this hook is how a
    plugin's cell tools (``robohal abb setup URI``) join the ``robohal`` command. A name the core
    uses itself stays the core's.
    """
