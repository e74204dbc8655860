"""Model files: a robot from a URDF, registered by a small TOML file, no Python.

::

    name = "acme.arm6"             # dotted, as plugin models
    urdf = "arm6.urdf"             # relative to this file
    base_link = "base_link"
    tip_link = "tool0"
    acceleration = [15, 7.5, 10, 12.5, 15, 20]   # rad/s^2 per joint (or one for all): URDF has none
    jerk = [7500, 3750, 5000, 6250, 7500, 10000] # rad/s^3
    description = "ACME arm"       # optional
    tool = { xyz = [0, 0, 0.1], rpy = [0, 0, 0] }   # optional: m and rad, a tool on the tip

Files ``*.toml`` are found in the folders of ``ROBOHAL_MODEL_PATH`` (separated by
``os.pathsep``, earlier first) and then in the user's config folder
(``$XDG_CONFIG_HOME/robohal/models``, by default ``~/.config/robohal/models``).
The core's own plugin registers them (:mod:`.builtin`), each model's
``ModelSpec.source`` naming its file.

Listing must stay fast, so a file is only read as far as it must be to count its
joints (the standard library's XML parser over the joint elements); the URDF is
parsed by yourdfpy (:meth:`~robohal.kinematics.UrdfChain.from_urdf`) when the
model is built. A file that cannot be registered is skipped with one warning
naming it and the problem; so is a name an earlier file already took.
"""

from __future__ import annotations

import logging
import math
import os
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import spatial
from ..errors import InvalidArgument, PluginError
from ..kinematics import Kinematics, Tool, UrdfChain
from ..kinematics.urdf import MOVING
from .records import ModelSpec

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover (Python 3.10)
    import tomli as tomllib

log = logging.getLogger(__name__)

MODEL_PATH_ENV = "ROBOHAL_MODEL_PATH"
REQUIRED = ("name", "urdf", "base_link", "tip_link")
OPTIONAL = ("acceleration", "jerk", "description", "tool")


def model_dirs(environ: dict[str, str] | None = None) -> list[Path]:
    """The folders searched for model files, in order."""
    env = os.environ if environ is None else environ
    dirs = [Path(part).expanduser() for part in env.get(MODEL_PATH_ENV, "").split(os.pathsep) if part.strip()]
    config = env.get("XDG_CONFIG_HOME", "").strip()
    dirs.append((Path(config) if config else Path.home() / ".config") / "robohal" / "models")
    return dirs


@dataclass(frozen=True)
class ModelFile:
    """One model file, read and checked (its URDF only as far as counting joints)."""

    path: Path
    name: str
    urdf: Path
    base_link: str
    tip_link: str
    dof: int
    acceleration: Any = None
    jerk: Any = None
    description: str = ""
    tool: Any = None  # (4, 4) pose or None

    def build(self) -> Kinematics:
        """The model: the URDF chain, with the tool if the file names one."""
        try:
            chain = UrdfChain.from_urdf(self.urdf, self.base_link, self.tip_link,
                                        acceleration=self.acceleration, jerk=self.jerk)
        except InvalidArgument as exc:
            raise InvalidArgument(f"{self.path}: {exc}") from None
        return chain if self.tool is None else Tool(chain, self.tool)

    def spec(self) -> ModelSpec:
        description = self.description or f"{self.dof} joints from {self.urdf.name} ({self.base_link} -> {self.tip_link})"
        return ModelSpec(self.name, factory=self.build, dof=self.dof, description=description, tags=("urdf",),
                         source=str(self.path))


def read_model_file(path: str | os.PathLike) -> ModelFile:
    """Read and check one model file; :class:`~robohal.errors.InvalidArgument` names the
    file and the problem in one line."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidArgument(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"{path}: not valid TOML: {exc}") from None
    if isinstance(data.get("arm"), dict):
        raise InvalidArgument(f"{path}: an arm file, not a model file (robohal.plugins.arm_files reads it)")
    missing = [key for key in REQUIRED if key not in data]
    if missing:
        raise InvalidArgument(f"{path}: missing key(s) {', '.join(missing)}")
    unknown = sorted(set(data) - set(REQUIRED) - set(OPTIONAL))
    if unknown:  # a misspelt "jrek" must not fall back to a default unseen
        raise InvalidArgument(f"{path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(REQUIRED + OPTIONAL)}")
    for key in (*REQUIRED, "description"):
        if key in data and not isinstance(data[key], str):
            raise InvalidArgument(f"{path}: {key} must be a string, got {data[key]!r:.60}")
    try:
        ModelSpec(data["name"], factory=lambda: None, dof=1)  # the name's form, checked as for plugins
    except PluginError as exc:
        raise InvalidArgument(f"{path}: {exc}") from None
    urdf = (path.parent / data["urdf"]).resolve()
    dof = _count_joints(urdf, data["base_link"], data["tip_link"], path)
    rates = {key: _rates(data.get(key), dof, key, path) for key in ("acceleration", "jerk")}
    return ModelFile(path=path, name=data["name"].strip().lower(), urdf=urdf, base_link=data["base_link"],
                     tip_link=data["tip_link"], dof=dof, description=data.get("description", ""),
                     tool=_tool(data.get("tool"), path), **rates)


def _rates(value: Any, dof: int, key: str, path: Path) -> Any:
    if value is None:
        return None
    def rate(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0

    if not (rate(value) or (isinstance(value, list) and len(value) == dof and all(map(rate, value)))):
        raise InvalidArgument(f"{path}: {key} must be one positive number or {dof} (one per joint), got {value!r:.80}")
    return value


def _tool(value: Any, path: Path) -> Any:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"xyz", "rpy"}:
        raise InvalidArgument(f"{path}: tool must be a table {{ xyz = [x, y, z], rpy = [r, p, y] }} (m, rad)")
    try:
        return spatial.pose_from_xyz_rpy(value.get("xyz", [0, 0, 0]), value.get("rpy", [0, 0, 0]))
    except InvalidArgument as exc:
        raise InvalidArgument(f"{path}: tool: {exc}") from None


def _count_joints(urdf: Path, base_link: str, tip_link: str, path: Path) -> int:
    """The moving joints from ``base_link`` to ``tip_link``, read with the standard library
    (yourdfpy parses the file when the model is built; importing it takes a second)."""
    if not urdf.is_file():
        raise InvalidArgument(f"{path}: URDF file {urdf} does not exist")
    try:
        root = ElementTree.parse(urdf).getroot()
    except ElementTree.ParseError as exc:
        raise InvalidArgument(f"{path}: {urdf}: not well-formed XML: {exc}") from None
    links = {link.get("name") for link in root.findall("link")}
    for role, link in (("base_link", base_link), ("tip_link", tip_link)):
        if link not in links:
            raise InvalidArgument(f"{path}: {role} {link!r} is not a link of {urdf.name}")
    parent_joint = {}
    for joint in root.findall("joint"):
        child, parent = joint.find("child"), joint.find("parent")
        if child is not None and parent is not None:
            parent_joint[child.get("link")] = (joint.get("type"), parent.get("link"))
    count, link, steps = 0, tip_link, 0
    while link != base_link:
        if link not in parent_joint or steps > len(parent_joint):
            raise InvalidArgument(f"{path}: tip_link {tip_link!r} does not hang below base_link {base_link!r}"
                                  f" in {urdf.name}")
        kind, link = parent_joint[link]
        count += kind in MOVING
        steps += 1
    if count == 0:
        raise InvalidArgument(f"{path}: no moving joint between {base_link!r} and {tip_link!r} in {urdf.name}")
    return count


def _arm_file(path: Path) -> bool:
    """Whether ``path`` holds an arm file (an ``[arm]`` table): those share the folders."""
    try:
        return isinstance(tomllib.loads(path.read_text(encoding="utf-8")).get("arm"), dict)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False  # read_model_file says what is wrong with it


def model_file_specs(environ: dict[str, str] | None = None) -> list[ModelSpec]:
    """A spec for every readable model file on the search path (see the module docstring)."""
    specs: dict[str, ModelSpec] = {}
    for folder in model_dirs(environ):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            if _arm_file(path):
                continue  # the arm files' own reader registers it (arm_files)
            try:
                spec = read_model_file(path).spec()
            except InvalidArgument as exc:
                log.warning("model file skipped: %s", exc)
                continue
            if spec.name in specs:
                log.warning("model file skipped: %s: model %r is already registered by %s", path, spec.name,
                            specs[spec.name].source)
                continue
            specs[spec.name] = spec
    return list(specs.values())
