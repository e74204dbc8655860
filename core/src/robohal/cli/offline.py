"""Robots described by their URI but never connected: what a command checks before it connects,
and what ``robohal draw --dry-run`` plans with.

:func:`model_of` resolves a URI's model (and checks its parameters) without building a
backend; :func:`unconnected_robot` builds the backend and its tools from the URI as written,
as :func:`~robohal.connection.open_robot` would, but starts no simulator (the ``sim`` host
stays a name), opens no port and sends nothing: the backend's period, its own setpoint checks
(``check_setpoints``, a servo's pulse limits) and its tools (a pen lift) are all there, read
from the URI.
"""

from __future__ import annotations

from ..connection import build_model, check_params, refuse_simulator_params
from ..errors import PluginError
from ..kinematics import Kinematics
from ..plugins.records import BackendSpec
from ..plugins.registry import default_registry
from ..robot import Robot
from ..uri import RobotUri, parse_uri


def model_of(uri: str) -> tuple[RobotUri, BackendSpec, Kinematics]:
    """The URI (with its model named), its backend's record and its model, with the URI's
    parameters checked as ``connect`` checks them; nothing is built or started."""
    registry = default_registry()
    parsed = parse_uri(uri)
    spec = registry.backend_spec(parsed.scheme)
    check_params(parsed, spec)
    refuse_simulator_params(parsed, spec)
    name, model = build_model(parsed, spec, registry)
    return parsed.with_params(model=name), spec, model


def unconnected_robot(uri: str) -> Robot:
    """A :class:`~robohal.robot.Robot` for ``uri`` that is never connected (see the module docstring)."""
    parsed, spec, model = model_of(uri)
    backend = spec.factory(parsed, model)
    if getattr(backend, "model", None) is not model:
        raise PluginError(f"backend {spec.scheme!r} ({spec.plugin}) did not keep the model it was given")
    tools = {tool.kind: tool.factory(parsed, backend) for tool in spec.tools}
    return Robot(backend, model, name=str(parsed), **tools)
