"""Turning a URI into a connected :class:`~robohal.robot.Robot`."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from .errors import PluginError, UnknownNameError, UriError
from .kinematics import Kinematics
from .plugins.arm_files import MODEL_PREFIX, arm_dirs, arm_name_of_model
from .plugins.records import BackendSpec
from .plugins.registry import Registry, default_registry
from .robot import Robot
from .sim.process import SIM_PREFIX
from .uri import RobotUri, parse_uri


def resolve_model_name(uri: RobotUri, spec: BackendSpec) -> str:
    arm = uri.params.get("arm")
    if arm:  # an arm file's arm: its model is registered as arm.NAME
        if uri.model and uri.model != MODEL_PREFIX + arm:
            raise UriError(f"{uri}: arm={arm} is the model {MODEL_PREFIX}{arm}; drop model={uri.model}")
        return MODEL_PREFIX + arm
    if uri.model:
        return uri.model
    if spec.simulator is not None and spec.simulator.default_model:
        return spec.simulator.default_model
    default = spec.extra.get("default_model")
    if default:
        return str(default)
    raise UriError(f"{uri}: which robot is it? add ?model=NAME (see `robohal models`)")


def build_model(uri: RobotUri, spec: BackendSpec, registry: Registry, **model_options: Any) -> tuple[str, Kinematics]:
    """The name of the robot model ``uri`` drives and the model built."""
    name = resolve_model_name(uri, spec)
    try:
        return name, registry.get_model(name, **model_options)
    except UnknownNameError as unknown:
        arm = uri.params.get("arm")
        if not arm or unknown.name != name:
            raise
        raise unknown_arm(arm, registry) from None


def unknown_arm(arm: str, registry: Registry) -> UnknownNameError:
    """arm=NAME names no arm file: said in the user's words (the arm, not its model arm.NAME),
    with the arms there are, where arm files are read from and the command that starts one."""
    known = sorted(filter(None, (arm_name_of_model(spec.name) for spec in registry.models())))
    folders = ", ".join(str(folder) for folder in arm_dirs())
    return UnknownNameError("arm", arm, known, f"(the arms: {', '.join(known) or 'none'}; arm files are read from"
                                               f" {folders} and the plugins' own; `robohal arm new {arm}` writes a"
                                               " servo arm's to fill in)")


def check_params(uri: RobotUri, spec: BackendSpec) -> None:
    """Refuse query parameters the backend does not read (when it declares them)."""
    if spec.params is None:
        return
    known = ("model", *spec.params)
    for key in uri.params:
        if not any(fnmatchcase(key, pattern) for pattern in known):
            raise UriError(f"{uri}: {UnknownNameError(f'{spec.scheme} parameter', key, known)};"
                           f" known: {', '.join(known)}")


def refuse_simulator_params(uri: RobotUri, spec: BackendSpec) -> None:
    """A URI that names a robot (not the host ``sim``) must not carry the simulator's options:
    nothing would simulate them, and the robot at that address would be driven as if they held."""
    if uri.wants_simulator or spec.simulator is None:
        return
    own = spec.simulator.params
    stray = [key for key in uri.params if key.startswith(SIM_PREFIX) or key in own]
    if stray:
        raise UriError(f"{uri}: {', '.join(stray)} only configure{'s' if len(stray) == 1 else ''} the bundled simulator,"
                       f" which the host 'sim' starts ({spec.scheme}://sim?...); this URI names a robot. Drop"
                       f" {'it' if len(stray) == 1 else 'them'} to drive the robot.")


def start_simulator_if_asked(uri: RobotUri, spec: BackendSpec) -> tuple[RobotUri, Any]:
    """For the reserved ``sim`` host, start the backend's bundled simulator and
    return its concrete URI and the running simulator; else ``(uri, None)``."""
    if not uri.wants_simulator:
        return uri, None
    if spec.simulator is None:
        raise UriError(f"{uri}: backend {spec.scheme!r} has no bundled simulator (host 'sim' is reserved for it)")
    simulator = spec.simulator.start(uri)
    return simulator.uri, simulator


def open_robot(uri: str | RobotUri, *, registry: Registry | None = None, connect: bool = True, **model_options: Any) -> Robot:
    registry = registry or default_registry()
    if isinstance(uri, str):
        parsed = parse_uri(uri)
    elif isinstance(uri, RobotUri):
        parsed = uri
    else:
        raise UriError(f"a robot URI must be a string such as 'sim://?model=generic.planar2', got {uri!r:.80}")
    spec = registry.backend_spec(parsed.scheme)
    check_params(parsed, spec)
    refuse_simulator_params(parsed, spec)
    model_name, model = build_model(parsed, spec, registry, **model_options)
    parsed = parsed.with_params(model=model_name)
    target, simulator = start_simulator_if_asked(parsed, spec)
    try:
        backend = spec.factory(target, model)
        if getattr(backend, "model", None) is not model:
            raise PluginError(f"backend {spec.scheme!r} ({spec.plugin}) did not keep the model it was given")
        tools = {tool.kind: tool.factory(target, backend) for tool in spec.tools}
        robot = Robot(backend, model, simulator=simulator, name=str(parsed), **tools)
        if connect:
            robot.connect()
    except BaseException as failed:
        if simulator is not None:
            simulator.stop()
        if isinstance(failed, UriError) and str(failed).startswith(f"{target}:"):
            # said of the URI the user wrote, not of the model added or the simulator's device and files
            raise UriError(f"{uri}{str(failed)[len(str(target)):]}") from None
        raise
    return robot
