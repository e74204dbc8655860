"""A kinematic URDF for any serial model (``robohal urdf MODEL``).

Nothing model-specific is read: at q = 0 the model's Jacobian gives each joint's
axis (column i: the direction w and v = w x (tip - point on the axis)), and
``joint_poses`` the orientation of each link frame, which is placed on its
joint's axis. The URDF chain then reproduces the model's forward kinematics for
every q (a product of exponentials); the text is checked against the model
before it is returned.

A :class:`~robohal.kinematics.Parallelogram` couples two joints, which a URDF
joint cannot express: its file holds the geometric chain (the coupled joint
measured from the link before it), and a comment says how its joints map.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidArgument
from .base import Array, Kinematics
from .urdf import UrdfChain
from .wrappers import Parallelogram

# A joint with an angular column shorter than this slides (a prismatic joint).
SLIDING = 1e-9
# How far (m, rad) the written chain may stray from the model at random joints.
CHECK_TOLERANCE = 1e-9


def _number(value: float) -> str:
    """A float as few digits as keep it within 4 units in the last place (0.15, not
    0.15000000000000002 from round-off), every digit otherwise; no "-0"."""
    value = float(value)
    if abs(value) < 1e-15:  # round-off of a zero (m or rad)
        return "0"
    short = f"{value:.15g}"
    text = short if abs(float(short) - value) <= 4 * math.ulp(value) else repr(value)
    return text.removesuffix(".0")


def _numbers(values) -> str:
    return " ".join(_number(v) for v in values)


def _rpy(rotation: Array) -> tuple[float, float, float]:
    """Roll, pitch, yaw (URDF's Rz Ry Rx) of a rotation, well conditioned at every pitch
    (spatial.matrix_to_rpy takes asin, which loses digits near +-90 degrees)."""
    r = rotation
    across = math.hypot(r[0, 0], r[1, 0])
    pitch = math.atan2(-r[2, 0], across)
    if across < 1e-12:  # pitch +-90 degrees: roll and yaw turn about one axis; put it all in roll
        return math.atan2(-r[1, 2], r[1, 1]), pitch, 0.0
    return math.atan2(r[2, 1], r[2, 2]), pitch, math.atan2(r[1, 0], r[0, 0])


def _serial(model: Kinematics) -> tuple[Kinematics, str]:
    """The model whose joints are the URDF's, and a note on how they map to ``model``'s."""
    if isinstance(model, Parallelogram):
        c, d = model.coupled + 1, model.driven + 1
        return model.robot, (f"joint{c} here is the linkage's geometric angle: the model's joint {c} minus"
                             f" {model.scaling:g} x its joint {d} (a URDF joint cannot couple two joints)")
    if getattr(model, "elbow_from_horizontal", False):  # VerticalPlaneArm on a parallel linkage (the MeArm)
        raise InvalidArgument(f"{type(model).__name__}'s forearm keeps its angle to the horizontal when the shoulder"
                              " turns (a parallel linkage), which a URDF joint cannot express")
    if model.coupled_limits:
        raise InvalidArgument(f"{type(model).__name__} couples its joints, which a URDF cannot express")
    return model, ""


def chain_of(model: Kinematics) -> tuple[UrdfChain, str]:
    """``model`` as a :class:`UrdfChain` (same joints, same tip pose at every q; for a
    parallelogram, the geometric chain) and the note on joints it may need."""
    serial, note = _serial(model)
    n = serial.dof
    zero = np.zeros(n)
    tip = np.asarray(serial.forward(zero), dtype=np.float64)
    jac = np.asarray(serial.jacobian(zero), dtype=np.float64)
    try:
        frames = np.asarray(serial.joint_poses(zero), dtype=np.float64)[:n]
    except NotImplementedError:  # axis-aligned link frames at the axes will do
        frames = np.broadcast_to(np.eye(4), (n, 4, 4))
    kinds, axes, links = [], [], []
    for i in range(n):
        linear, angular = jac[:3, i], jac[3:, i]
        frame = frames[i].copy()
        spin = float(np.linalg.norm(angular))
        if spin > SLIDING:
            w = angular / spin
            # v = w x (tip - point): the point of the axis nearest the tip is tip + w x v.
            point = tip[:3, 3] + np.cross(w, linear / spin)
            # The link frame moves onto the axis (nearest its own origin): the joint turns about it.
            offset = frame[:3, 3] - point
            frame[:3, 3] = point + w * float(offset @ w)
            kinds.append("revolute")
        else:
            length = float(np.linalg.norm(linear))
            if length < SLIDING:
                raise InvalidArgument(f"joint {i + 1} of the model moves nothing at q = 0; no URDF joint is like it")
            w = linear / length
            kinds.append("prismatic")
        axes.append(frame[:3, :3].T @ w)
        links.append(frame)
    origins, before = [], np.eye(4)
    for frame in links:
        origins.append(np.linalg.solve(before, frame))
        before = frame
    limits = serial.limits
    for i, kind in enumerate(kinds):
        if kind == "revolute" and not (np.isfinite(limits.lower[i]) or np.isfinite(limits.upper[i])):
            kinds[i] = "continuous"
    chain = UrdfChain(np.array(origins), np.array(axes), kinds, np.linalg.solve(before, tip), limits)
    _check(chain, serial)
    return chain, note


def _check(chain: UrdfChain, model: Kinematics) -> None:
    """Refuse a model that is no chain of single joints (its axes would move otherwise)."""
    limits = model.limits
    lower = np.where(np.isfinite(limits.lower), limits.lower, -np.pi)
    upper = np.where(np.isfinite(limits.upper), limits.upper, np.pi)
    q = np.random.default_rng(0).uniform(lower, upper, (16, model.dof))
    error = np.abs(chain.forward(q) - model.forward(q)).max()
    if not error < CHECK_TOLERANCE:
        raise InvalidArgument(f"{type(model).__name__} is not a serial chain of single joints: a URDF of its axes"
                              f" at q = 0 strays {error:.3g} from it elsewhere")


def urdf_text(model: Kinematics, name: str, description: str = "") -> str:
    """A kinematic URDF of ``model`` (links without inertia or meshes), robot ``name``:
    base link ``base_link``, joint i ``joint<i>`` moving link ``link<i>``, tip ``flange``."""
    chain, note = chain_of(model)
    limits = chain.limits
    comments = [f"robohal model {name}" + (f": {description}" if description else ""),
                "kinematic only: no inertia, no meshes; joints in rad (m for prismatic ones)",
                f"acceleration (per joint, URDF has no place for it): [{', '.join(map(_number, limits.acceleration))}]",
                f"jerk (per joint): [{', '.join(map(_number, limits.jerk))}]"]
    if note:
        comments.append(note)
    parts = ['<?xml version="1.0"?>\n', *(f"<!-- {line.replace('--', '-')} -->\n" for line in comments),
             f'<robot name="{_escape(name)}">\n', '  <link name="base_link"/>\n']
    parent = "base_link"
    for i, (origin, axis, kind) in enumerate(zip(chain.origins, chain.axes, chain.kinds, strict=True)):
        child = f"link{i + 1}"
        if kind == "continuous":
            limit = f'<limit effort="0" velocity="{_number(limits.velocity[i])}"/>'
        else:
            limit = (f'<limit lower="{_number(limits.lower[i])}" upper="{_number(limits.upper[i])}"'
                     f' effort="0" velocity="{_number(limits.velocity[i])}"/>')
        parts.append(
            f'  <joint name="joint{i + 1}" type="{kind}">\n'
            f'    <parent link="{parent}"/>\n'
            f'    <child link="{child}"/>\n'
            f'    {_origin(origin)}\n'
            f'    <axis xyz="{_numbers(axis)}"/>\n'
            f'    {limit}\n'
            f'  </joint>\n'
            f'  <link name="{child}"/>\n'
        )
        parent = child
    parts.append(
        '  <joint name="flange_joint" type="fixed">\n'
        f'    <parent link="{parent}"/>\n'
        '    <child link="flange"/>\n'
        f'    {_origin(chain.tip)}\n'
        '  </joint>\n'
        '  <link name="flange"/>\n'
        '</robot>\n'
    )
    return "".join(parts)


def _origin(pose: Array) -> str:
    return f'<origin xyz="{_numbers(pose[:3, 3])}" rpy="{_numbers(_rpy(pose[:3, :3]))}"/>'


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
