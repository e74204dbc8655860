"""An arm drawn from its URDF's visual geometry (meshes and primitives), posed by the measured
joints through viser's URDF support (:class:`viser.extras.ViserUrdf` on a yourdfpy URDF).

Where a URDF comes from, first found first: a file the caller names; the model's own (a
:class:`~robohal.kinematics.UrdfChain`, as model files build); a robot description package
installed beside robohal (``pip install example-robot-data pycollada`` brings Franka's Panda
description, Apache-2.0; pycollada reads its COLLADA meshes).

A URDF draws a model only where the two agree: for random joint values within the limits, a
link of the URDF sits where the model puts its flange (up to one fixed offset, a tool say),
so a mesh never stands where the arm is not. An installed description must also have the
model's joint ranges: the FR3 and the Panda share their kinematics, not their limits, and so
not their looks.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import spatial
from ..errors import InvalidArgument
from ..kinematics import Kinematics, UrdfChain
from ..kinematics.urdf import MOVING
from ..state import Array

log = logging.getLogger(__name__)

# Installed packages that ship a URDF with meshes: (distribution, the file's path inside it).
DESCRIPTIONS = (("example-robot-data", "robots/panda_description/urdf/panda.urdf"),)
PROBES = 4  # random configurations the URDF must agree with the model at
AGREE = 1e-6  # m (and rad, as rotation-matrix entries): agreement, well above float round-off
SAME_RANGE = 1e-3  # rad: an installed description's joint range is the model's (tables round to 1e-4)


@dataclass(frozen=True)
class Visuals:
    """A URDF that draws a model: its file, the link the model's base is, and the URDF's
    joints that the model's joints turn, in the model's order."""

    path: Path
    base: str
    joints: tuple[str, ...]

    def load(self):
        """The URDF with its visual meshes read (a yourdfpy URDF); refused where none loads."""
        import yourdfpy

        urdf = yourdfpy.URDF.load(
            str(self.path), build_scene_graph=True, load_meshes=True, build_collision_scene_graph=False,
            load_collision_meshes=False,
            filename_handler=functools.partial(yourdfpy.filename_handler_magic, dir=self.path.parent))
        if urdf.scene is None or not urdf.scene.geometry:
            raise InvalidArgument(f"{self.path}: no visual geometry could be loaded")
        return urdf


def find_visuals(model: Kinematics, urdf: str | Path | None = None) -> Visuals | None:
    """The URDF that draws ``model`` (see the module's text), or None: then the view draws
    its links from ``joint_poses``. A named ``urdf`` that does not fit is refused with
    :class:`~robohal.errors.InvalidArgument`."""
    if urdf is not None:
        path = Path(urdf)
        if not path.is_file():
            raise InvalidArgument(f"{path}: no such URDF file")
        if not has_visuals(path):
            raise InvalidArgument(f"{path}: the URDF has no visual geometry to draw")
        found = match(model, path)
        if found is None:
            raise InvalidArgument(f"{path}: no link of this URDF follows the model's flange"
                                  f" ({model.dof} joints from its root link)")
        return found
    chain = _unwrapped(model)
    if isinstance(chain, UrdfChain) and chain.source:
        path = Path(chain.source)
        return match(model, path, joints=chain.joint_names) if has_visuals(path) else None
    for path in _installed_descriptions():
        found = match(model, path, same_limits=True)
        if found is not None:
            return found
    return None


def match(model: Kinematics, path: Path, *, joints: tuple[str, ...] | None = None,
          same_limits: bool = False) -> Visuals | None:
    """The URDF at ``path`` as a drawing of ``model``, or None where none of its links
    follows the model's flange. The model's base is the URDF's root link, or, given the
    ``joints`` the model turns (a UrdfChain's), a link the first of them hangs from."""
    import yourdfpy  # here: it loads trimesh (a second), which a view of stick figures need not pay

    try:
        urdf = yourdfpy.URDF.load(str(path), build_scene_graph=True, load_meshes=False,
                                  build_collision_scene_graph=False, load_collision_meshes=False)
    except Exception as exc:  # whatever the parser raises on a file it cannot read
        raise InvalidArgument(f"{path}: not a readable URDF: {type(exc).__name__}: {exc}") from None
    probes = _probes(model)
    flanges = model.forward(probes)
    for base in [urdf.base_link] if joints is None else _fixed_above(urdf, urdf.joint_map[joints[0]].parent):
        for tip, path_joints in _chains(urdf, base, model.dof):
            if joints is not None and path_joints != tuple(joints):
                continue
            if same_limits and not _same_ranges(urdf, path_joints, model):
                continue
            index = _indices(urdf, path_joints)
            poses = []
            for q in probes:
                urdf.update_cfg(_configuration(urdf, index, q))
                poses.append(urdf.get_transform(tip, base))
            offset = spatial.invert(poses[0]) @ flanges[0]  # the flange in the tip link's frame
            if all(np.abs(pose @ offset - flange).max() < AGREE for pose, flange in zip(poses, flanges, strict=True)):
                return Visuals(path, base, path_joints)
    return None


class UrdfBody:
    """The visuals of a URDF (``urdf``, as :meth:`Visuals.load` gives it) in a viser scene
    (``target``: a ViserServer), under ``name``, the model's base at ``offset`` (m): :meth:`show`
    poses them at the measured joints."""

    def __init__(self, target, name: str, visuals: Visuals, urdf, *, offset: Array = (0.0, 0.0, 0.0)) -> None:
        from viser.extras import ViserUrdf

        self.urdf = urdf
        self.index = _indices(urdf, visuals.joints)
        # the URDF's root placed so that the model's base link stands at the offset
        place = spatial.from_translation(np.asarray(offset, dtype=np.float64)) @ spatial.invert(
            urdf.get_transform(visuals.base, urdf.base_link))
        self.root = target.scene.add_frame(f"{name}/body", show_axes=False, position=place[:3, 3],
                                           wxyz=spatial.matrix_to_quat(place))
        self.drawn = ViserUrdf(target, urdf, root_node_name=f"{name}/body")

    def show(self, q: Array) -> None:
        self.drawn.update_cfg(_configuration(self.urdf, self.index, q))

    def remove(self) -> None:
        self.root.remove()  # and with it every frame and mesh below (ViserUrdf.remove would remove those twice)


def has_visuals(path: Path) -> bool:
    """Whether a URDF file has any visual element (meshes or primitives) to draw."""
    import xml.etree.ElementTree as ElementTree

    try:
        return ElementTree.parse(path).getroot().find("link/visual") is not None
    except (OSError, ElementTree.ParseError):
        return False


def _unwrapped(model: Kinematics) -> Kinematics:
    """The model inside its wrappers (a tool, a base offset): whose URDF, if any, draws it."""
    while hasattr(model, "robot") and isinstance(model.robot, Kinematics):
        model = model.robot
    return model


def _installed_descriptions() -> list[Path]:
    found = []
    for distribution, inside in DESCRIPTIONS:
        try:
            files = importlib.metadata.distribution(distribution).files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for file in files:
            if str(file).endswith(inside):
                found.append(Path(importlib.metadata.distribution(distribution).locate_file(file)))
    return found


def _fixed_above(urdf, link: str) -> list[str]:
    """``link`` and the links it hangs from through fixed joints, nearest first."""
    parents = {joint.child: joint for joint in urdf.robot.joints}
    links = [link]
    while link in parents and parents[link].type == "fixed":
        link = parents[link].parent
        links.append(link)
    return links


def _chains(urdf, base: str, dof: int):
    """Every link below ``base`` with exactly ``dof`` moving joints on its way from it: the
    link and those joints' names, base first. Mimic joints are not the model's to turn."""
    children: dict[str, list] = {}
    for joint in urdf.robot.joints:
        children.setdefault(joint.parent, []).append(joint)
    stack = [(base, ())]
    while stack:
        link, joints = stack.pop()
        if len(joints) == dof:
            yield link, joints
        for joint in children.get(link, ()):
            if joint.type in MOVING and joint.mimic is None:
                if len(joints) < dof:
                    stack.append((joint.child, (*joints, joint.name)))
            elif joint.type == "fixed":
                stack.append((joint.child, joints))


def _probes(model: Kinematics) -> Array:
    """PROBES configurations within the limits (one turn each way where a joint has none),
    drawn from a fixed seed: the same check every time."""
    limits = model.limits
    lower = np.where(np.isfinite(limits.lower), limits.lower, -np.pi)
    upper = np.where(np.isfinite(limits.upper), limits.upper, np.pi)
    return np.random.default_rng(7).uniform(lower, upper, (PROBES, model.dof))


def _same_ranges(urdf, joints: tuple[str, ...], model: Kinematics) -> bool:
    for name, low, high in zip(joints, model.limits.lower, model.limits.upper, strict=True):
        limit = urdf.joint_map[name].limit
        ranged = limit is not None and limit.lower is not None and limit.upper is not None
        if ranged != (np.isfinite(low) and np.isfinite(high)):
            return False
        if ranged and (abs(limit.lower - low) > SAME_RANGE or abs(limit.upper - high) > SAME_RANGE):
            return False
    return True


def _indices(urdf, joints: tuple[str, ...]) -> Array:
    """Where ``joints`` stand among the URDF's actuated joints (its configuration's order)."""
    names = list(urdf.actuated_joint_names)
    return np.array([names.index(name) for name in joints], dtype=np.intp)


def _configuration(urdf, index: Array, q: Array) -> Array:
    """The URDF's configuration with the model's joints (at ``index``) at ``q``, the rest at zero."""
    cfg = np.zeros(len(urdf.actuated_joint_names))
    cfg[index] = q
    return cfg
