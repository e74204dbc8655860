"""Arm files: which servo drives which joint of a model, in a small TOML file.

A servo arm is a model (its kinematics) plus wiring: the servos' ids on their bus, which way
each one turns, and what else the arm has (a gripper servo, its power supply). That wiring
differs from one build to the next while the model does not, so it lives in a file of its own::

    name = "so101"                  # what arm=so101 finds
    model = "so_arm.so101"          # a registered model: its joints, in order, are the [[joints]]
    description = "SO-101 follower" # optional

    [[joints]]
    name = "shoulder_pan"           # the model's joint name
    id = 1                          # the servo's id on the bus
    direction = 1                   # +1 or -1: which way the servo turns the joint (default +1)

    [gripper]                       # any other table is the backend's: kept as it is written
    id = 6

A backend reads its own tables (``arm.table("gripper")``) and refuses keys it does not know.
``arm=NAME`` on a URI finds ``NAME.toml`` in the folders of ``ROBOHAL_ARM_PATH`` (separated by
``os.pathsep``), then in ``$XDG_CONFIG_HOME/robohal/arms`` (by default ``~/.config/robohal/arms``),
then among the files a plugin ships; ``arm=PATH`` names a file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import InvalidArgument

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover (Python 3.10)
    import tomli as tomllib

ARM_PATH_ENV = "ROBOHAL_ARM_PATH"
TOP_KEYS = ("name", "model", "description", "joints")
JOINT_KEYS = ("name", "id", "direction")


def arm_dirs(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The folders searched for arm files by name, in order (a plugin's own come after these)."""
    env = os.environ if environ is None else environ
    dirs = [Path(part).expanduser() for part in env.get(ARM_PATH_ENV, "").split(os.pathsep) if part.strip()]
    config = env.get("XDG_CONFIG_HOME", "").strip()
    dirs.append((Path(config) if config else Path.home() / ".config") / "robohal" / "arms")
    return dirs


@dataclass(frozen=True)
class ArmJoint:
    """One joint's servo: the model's joint ``name``, the servo's bus ``id`` and its ``direction``."""

    name: str
    id: int
    direction: int = 1
    options: Mapping[str, Any] = field(default_factory=dict)  # any other key of its [[joints]] entry


@dataclass(frozen=True)
class ArmFile:
    """An arm file, read and checked (see the module docstring)."""

    path: Path
    name: str
    model: str
    joints: tuple[ArmJoint, ...]
    description: str = ""
    tables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(joint.id for joint in self.joints)

    def table(self, name: str, known: Iterable[str] | None = None) -> Mapping[str, Any]:
        """The file's ``[name]`` table (empty when it has none); with ``known``, any other key in
        it is an :class:`~robohal.errors.InvalidArgument` naming the file, the key and the known ones."""
        found = self.tables.get(name, {})
        if known is not None:
            allowed = tuple(known)
            unknown = sorted(set(found) - set(allowed))
            if unknown:
                raise InvalidArgument(f"{self.path}: [{name}] has unknown key(s) {', '.join(unknown)};"
                                      f" known: {', '.join(allowed)}")
        return found

    def check_model(self, joint_names: Sequence[str]) -> None:
        """Refuse a file whose joints are not the model's, in the model's order."""
        names = tuple(joint.name for joint in self.joints)
        if names != tuple(joint_names):
            raise InvalidArgument(f"{self.path}: [[joints]] name {', '.join(names) or 'nothing'}; model {self.model}"
                                  f" has joints {', '.join(joint_names)}, in that order")


def read_arm_file(path: str | os.PathLike) -> ArmFile:
    """Read and check one arm file; :class:`~robohal.errors.InvalidArgument` names the file and
    the problem (a missing file, bad TOML, a missing or malformed key, an id used twice)."""
    path = Path(path).expanduser()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidArgument(f"{path}: no such arm file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"{path}: cannot read the arm file: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidArgument(f"{path}: not valid TOML: {exc}") from None
    for key in ("name", "model"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise InvalidArgument(f"{path}: {key!r} must be a non-empty string")
    joints_data = data.get("joints")
    if not isinstance(joints_data, list) or not joints_data:
        raise InvalidArgument(f"{path}: no [[joints]]: each joint needs a name and its servo's id")
    joints = []
    for n, entry in enumerate(joints_data, 1):
        where = f"{path}: joint {n}"
        if not isinstance(entry, dict):
            raise InvalidArgument(f"{where}: must be a table")
        name, servo_id, direction = entry.get("name"), entry.get("id"), entry.get("direction", 1)
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"{where}: 'name' must be the model's joint name")
        if isinstance(servo_id, bool) or not isinstance(servo_id, int) or servo_id < 0:
            raise InvalidArgument(f"{where} ({name}): 'id' must be a whole number >= 0, got {servo_id!r}")
        if direction not in (1, -1) or isinstance(direction, bool):
            raise InvalidArgument(f"{where} ({name}): 'direction' must be 1 or -1, got {direction!r}")
        options = {key: value for key, value in entry.items() if key not in JOINT_KEYS}
        joints.append(ArmJoint(name, servo_id, direction, MappingProxyType(options)))
    ids = [joint.id for joint in joints]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise InvalidArgument(f"{path}: servo id(s) {', '.join(map(str, twice))} drive more than one joint")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise InvalidArgument(f"{path}: 'description' must be a string")
    tables = {}
    for key, value in data.items():
        if key in TOP_KEYS:
            continue
        if not isinstance(value, dict):
            raise InvalidArgument(f"{path}: unknown key {key!r}; an arm file has {', '.join(TOP_KEYS)} and tables")
        tables[key] = MappingProxyType(dict(value))
    return ArmFile(path, data["name"].strip(), data["model"].strip(), tuple(joints), description,
                   MappingProxyType(tables))


def find_arm_file(name_or_path: str, bundled: Iterable[Path] = (), environ: Mapping[str, str] | None = None) -> ArmFile:
    """The arm file ``arm=`` names: a path (it contains a ``/`` or ends in ``.toml``), or a name
    looked up as ``NAME.toml`` in :func:`arm_dirs`, then in ``bundled`` (a plugin's own folders)."""
    text = name_or_path.strip()
    if not text:
        raise InvalidArgument("arm= names no arm file")
    if "/" in text or os.sep in text or text.endswith(".toml"):
        return read_arm_file(text)
    folders = [*arm_dirs(environ), *bundled]
    for folder in folders:
        candidate = folder / f"{text}.toml"
        if candidate.is_file():
            return read_arm_file(candidate)
    known = sorted({path.stem for folder in folders if folder.is_dir() for path in folder.glob("*.toml")})
    raise InvalidArgument(f"no arm file {text!r} (looked for {text}.toml in {', '.join(map(str, folders))});"
                          f" known: {', '.join(known) or 'none'}")
