"""Arms whose base turns about z and carries every other link in one vertical plane, in closed form.

This is the layout of nearly every hobby servo arm (the MeArm, the TinkerKit Braccio, the 4-6
axis kits): joint 1 turns the base (yaw, about z); the shoulder, the elbow and, where there is
one, the wrist pitch turn about horizontal axes, so the links stay in the vertical plane the base
points into; an optional last joint rolls the tool about its own axis.

In that plane (``r`` out from the base axis, ``z`` up) the shoulder sits at ``(reach_offset,
base_height)``. Angles are measured from the horizontal, up positive: the upper arm points at
``t1 = q2 + zero[1]``; the forearm at ``t2 = t1 + q3 + zero[2]``, or, on an arm whose parallel
linkage measures the elbow from the horizontal (``elbow_from_horizontal``, the MeArm's), at
``t2 = q3 + zero[2]``. The base turns the plane to ``t0 = q1 + zero[0]``.

- Three joints (``dof = 3``, yaw, shoulder, elbow): the arm positions a point only
  (:attr:`position_only`). Its tool is held level by the linkage (the MeArm's claw): the tip is
  ``tool = (forward, up)`` m from the wrist, along the plane's horizontal and up. The flange frame
  reported points its z axis out along the plane, level.
- Four or five joints (``+ wrist pitch``, ``+ roll``): the tool points at
  ``t3 = t2 + q4 + zero[3]`` in the plane, ``tool_length`` m from the wrist to the tip; the roll
  turns it about that axis by ``q5 + zero[4]``. The flange frame is
  ``Rz(t0) Ry(pi/2 - t3) Rz(roll)``: its z axis is the tool's axis. Such an arm reaches a pose only
  when that axis lies in the plane its base points into (a tool pointing straight down always
  does: a pick from above, a pen on paper), and, without a roll joint, with no roll about it.

Closed-form inverse: the base turns to the wrist (or half a turn away, reaching back over the
shoulder), the two-link elbow gives two branches, the wrist pitch and roll take what is left.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument
from .base import Array, Kinematics, Solutions
from .limits import JointLimits
from .numeric import DEFAULT_SEARCH, Search, search_for

# A wrist this close (m) to the base axis leaves the base angle to the tool's direction.
ON_AXIS = 1e-9
# How far (m, rad) a solution's pose may miss the asked pose (round-off only).
VERIFY = 1e-7


def _rz(angle: float) -> Array:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _ry(angle: float) -> Array:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _wrap(angle: float) -> float:
    return (angle + math.pi) % (2 * math.pi) - math.pi


class VerticalPlaneArm(Kinematics):
    """A base yaw plus a chain in one vertical plane (see the module docstring).

    ``links``: (upper arm, forearm) m. ``base_height``, ``reach_offset``: the shoulder axis above
    and out from the base frame's origin (m). ``zero``: per joint, the geometric angle (rad) at
    joint value 0, so that 0 can be a servo's centre. ``tool``: the level tip's (forward, up)
    offset (m) from the wrist, for three joints; ``tool_length`` (m) for four or five.
    """

    closed_form = True
    max_solutions = 4

    def __init__(self, dof: int, links: ArrayLike, *, base_height: float = 0.0, reach_offset: float = 0.0,
                 elbow_from_horizontal: bool = False, zero: ArrayLike | None = None,
                 tool: ArrayLike = (0.0, 0.0), tool_length: float = 0.0, limits: JointLimits | None = None) -> None:
        if dof not in (3, 4, 5):
            raise InvalidArgument(f"a vertical-plane arm has 3, 4 or 5 joints (yaw, shoulder, elbow, wrist pitch,"
                                  f" roll), got {dof!r}")
        self.dof = int(dof)
        lengths = spatial.as_finite(links, "links")
        if lengths.shape != (2,) or not (lengths > 1e-6).all() or not (lengths < 100).all():
            raise InvalidArgument(f"links are the upper arm and the forearm, two lengths in (1e-6, 100) m, got {links!r}")
        self.l1, self.l2 = (float(x) for x in lengths)
        self.base_height = float(spatial.as_number(base_height, "base_height"))
        self.reach_offset = float(spatial.as_number(reach_offset, "reach_offset"))
        self.elbow_from_horizontal = bool(elbow_from_horizontal)
        zeros = spatial.as_finite(np.zeros(self.dof) if zero is None else zero, "zero")
        if zeros.shape != (self.dof,):
            raise InvalidArgument(f"zero needs one angle (rad) per joint, {self.dof}, got {zero!r}")
        self.zero = tuple(float(x) for x in zeros)
        offset = spatial.as_finite(tool, "tool")
        if offset.shape != (2,):
            raise InvalidArgument(f"tool is the level tip's (forward, up) offset in m, got {tool!r}")
        self.tool = (float(offset[0]), float(offset[1]))
        self.tool_length = float(spatial.as_number(tool_length, "tool_length"))
        self.position_only = self.dof == 3
        if limits is not None and (not isinstance(limits, JointLimits) or limits.dof != self.dof):
            raise InvalidArgument(f"limits must be JointLimits for {self.dof} joints")
        self.limits = limits or JointLimits(lower=-math.pi, upper=math.pi, velocity=[3.0] * self.dof,
                                            acceleration=15.0, jerk=750.0)

    # Forward ------------------------------------------------------------------------------

    def _angles(self, q: list[float]) -> tuple[float, float, float, float, float]:
        """Base, upper arm, forearm, tool (from the horizontal) and roll angles of one configuration."""
        z = self.zero
        t0 = q[0] + z[0]
        t1 = q[1] + z[1]
        t2 = q[2] + z[2] + (0.0 if self.elbow_from_horizontal else t1)
        t3 = t2 + q[3] + z[3] if self.dof >= 4 else 0.0
        roll = q[4] + z[4] if self.dof == 5 else 0.0
        return t0, t1, t2, t3, roll

    def _frames(self, q: list[float]) -> list[Array]:
        """Base, shoulder, elbow, wrist and flange frames (4, 4) of one configuration."""
        t0, t1, t2, t3, roll = self._angles(q)
        yaw = _rz(t0)
        out = yaw[:, 0]
        up = np.array([0.0, 0.0, 1.0])

        def at(rotation: Array, point: Array) -> Array:
            frame = np.eye(4)
            frame[:3, :3], frame[:3, 3] = rotation, point
            return frame

        shoulder = self.reach_offset * out + self.base_height * up
        elbow = shoulder + self.l1 * (math.cos(t1) * out + math.sin(t1) * up)
        wrist = elbow + self.l2 * (math.cos(t2) * out + math.sin(t2) * up)
        if self.dof == 3:
            tip = wrist + self.tool[0] * out + self.tool[1] * up
            flange = yaw @ _ry(math.pi / 2)  # level, pointing out along the plane
        else:
            tip = wrist + self.tool_length * (math.cos(t3) * out + math.sin(t3) * up)
            flange = yaw @ _ry(math.pi / 2 - t3) @ _rz(roll)
        return [at(yaw, np.zeros(3)), at(yaw @ _ry(-t1), shoulder),
                at(yaw @ _ry(-t2), elbow), at(yaw @ _ry(-t3 if self.dof >= 4 else 0.0), wrist), at(flange, tip)]

    def forward(self, q: ArrayLike) -> Array:
        q = self._joints(q)
        if q.ndim == 1:
            return self._frames(q.tolist())[-1]
        flat = q.reshape(-1, self.dof)
        return np.stack([self._frames(row)[-1] for row in flat.tolist()]).reshape(*q.shape[:-1], 4, 4)

    def jacobian(self, q: ArrayLike) -> Array:
        """Geometric Jacobian (..., 6, dof) of the flange in the base frame, exact: the yaw turns
        about the base's z, the pitch joints about the plane's normal, the roll about the tool.
        A parallel upper arm (``elbow_from_horizontal``) carries the forearm without turning it."""
        q = self._joints(q)
        flat = q.reshape(-1, self.dof)
        out = np.zeros((len(flat), 6, self.dof))
        level = self.dof == 3  # the tool stays level: the pitch joints turn no frame, and carry its offset
        for k, row in enumerate(flat.tolist()):
            _, shoulder, elbow, wrist, flange = self._frames(row)
            tip = flange[:3, 3]
            end = wrist[:3, 3] if level else tip  # what the pitch joints swing (the rest is carried)
            normal = -shoulder[:3, 1]  # a positive pitch lifts the arm: out turns toward up
            columns = [(np.array([0.0, 0.0, 1.0]), tip)]
            if self.elbow_from_horizontal:  # the upper arm alone turns; the rest moves with its end
                columns.append((np.zeros(3), np.cross(normal, elbow[:3, 3] - shoulder[:3, 3])))
            else:
                columns.append((np.zeros(3) if level else normal, np.cross(normal, end - shoulder[:3, 3])))
            columns.append((np.zeros(3) if level else normal, np.cross(normal, end - elbow[:3, 3])))
            if self.dof >= 4:
                columns.append((normal, np.cross(normal, tip - wrist[:3, 3])))
            if self.dof == 5:
                columns.append((flange[:3, 2], np.cross(flange[:3, 2], tip - wrist[:3, 3])))
            for j, (angular, linear) in enumerate(columns):
                if j == 0:
                    linear = np.cross(angular, linear)
                out[k, :3, j], out[k, 3:, j] = linear, angular
        return out.reshape(*q.shape[:-1], 6, self.dof)

    def joint_poses(self, q: ArrayLike) -> Array:
        """Frames of the base, shoulder, elbow, wrist (and, with five joints, the wrist again for
        the roll) and the flange: (..., dof + 1, 4, 4)."""
        q = self._joints(q)
        flat = q.reshape(-1, self.dof)
        rows = []
        for row in flat.tolist():
            base, shoulder, elbow, wrist, flange = self._frames(row)
            chain = [base, shoulder, elbow]
            if self.dof >= 4:
                chain.append(wrist)
            if self.dof == 5:
                chain.append(wrist)
            chain.append(flange)
            rows.append(np.stack(chain))
        return np.stack(rows).reshape(*q.shape[:-1], self.dof + 1, 4, 4)

    # Inverse ------------------------------------------------------------------------------

    def _plane(self, r: float, z: float) -> tuple[list[tuple[float, float]], str | None]:
        """(upper arm, forearm) angles from the horizontal putting the wrist at (r, z) in the plane."""
        dx, dz = r - self.reach_offset, z - self.base_height
        d2 = dx * dx + dz * dz
        cos_elbow = (d2 - self.l1**2 - self.l2**2) / (2 * self.l1 * self.l2)
        if cos_elbow > 1 + 1e-12:
            return [], f"the wrist is {math.sqrt(d2):.4g} m from the shoulder, beyond the arm's reach {self.l1 + self.l2:.4g} m"
        if cos_elbow < -1 - 1e-12:
            return [], (f"the wrist is {math.sqrt(d2):.4g} m from the shoulder, inside the arm's inner reach"
                        f" {abs(self.l1 - self.l2):.4g} m")
        bend = math.acos(min(1.0, max(-1.0, cos_elbow)))
        out = []
        for elbow in (bend, -bend) if bend > 1e-12 else (bend,):
            t1 = math.atan2(dz, dx) - math.atan2(self.l2 * math.sin(elbow), self.l1 + self.l2 * math.cos(elbow))
            out.append((t1, t1 + elbow))
        return out, None

    def _joints_of(self, t0: float, t1: float, t2: float, t3: float, roll: float) -> list[float]:
        z = self.zero
        q = [t0 - z[0], t1 - z[1], t2 - z[2] - (0.0 if self.elbow_from_horizontal else t1)]
        if self.dof >= 4:
            q.append(t3 - t2 - z[3])
        if self.dof == 5:
            q.append(roll - z[4])
        return [_wrap(x) for x in q]

    def _candidates(self, pose: Array, previous: Array | None, search: Search = DEFAULT_SEARCH) -> tuple[list, str | None]:
        # closed form: exact, so the numeric search's budget and tolerance do not apply
        p = pose[:3, 3]
        rows: list[list[float]] = []
        reason = None
        if self.dof == 3:
            if math.hypot(p[0], p[1]) < ON_AXIS:
                bases = [previous[0] + self.zero[0] if previous is not None else 0.0]
            else:
                bases = [math.atan2(p[1], p[0])]
            for t0 in (bases[0], bases[0] + math.pi):
                out = np.array([math.cos(t0), math.sin(t0)])
                r = float(p[:2] @ out) - self.tool[0]
                arms, why = self._plane(r, float(p[2]) - self.tool[1])
                reason = reason or why
                rows += [self._joints_of(t0, t1, t2, 0.0, 0.0) for t1, t2 in arms]
        else:
            axis = pose[:3, 2]
            wrist = p - self.tool_length * axis
            if math.hypot(wrist[0], wrist[1]) > ON_AXIS:
                base = math.atan2(wrist[1], wrist[0])
            elif math.hypot(axis[0], axis[1]) > ON_AXIS:
                base = math.atan2(axis[1], axis[0])
            else:  # wrist and tool on the base axis: any base angle; keep the one the arm has
                base = previous[0] + self.zero[0] if previous is not None else 0.0
            for t0 in (base, base + math.pi):
                out = np.array([math.cos(t0), math.sin(t0), 0.0])
                side = np.array([-math.sin(t0), math.cos(t0), 0.0])
                if abs(float(axis @ side)) > VERIFY:
                    reason = reason or ("the tool's axis leaves the vertical plane the base points into"
                                        f" (a {self.dof}-axis arm cannot turn its tool sideways)")
                    continue
                t3 = math.atan2(float(axis[2]), float(axis @ out))
                held = (_ry(math.pi / 2 - t3).T @ _rz(t0).T) @ pose[:3, :3]
                roll = math.atan2(held[1, 0], held[0, 0])
                if self.dof == 4 and abs(_wrap(roll - 0.0)) > VERIFY:
                    reason = reason or "the pose turns the tool about its axis, and this arm has no roll joint"
                    continue
                arms, why = self._plane(float(wrist @ out), float(wrist[2]))
                reason = reason or why
                rows += [self._joints_of(t0, t1, t2, t3, roll) for t1, t2 in arms]
        verified = [row for row in rows if self._reaches(row, pose)]
        return verified, (None if verified else reason or "no solution")

    def _reaches(self, q: list[float], pose: Array) -> bool:
        reached = self._frames(q)[-1]
        if np.abs(reached[:3, 3] - pose[:3, 3]).max() > VERIFY:
            return False
        return self.position_only or np.abs(reached[:3, :3] - pose[:3, :3]).max() <= VERIFY

    def inverse_batch(self, poses: ArrayLike, seeds: ArrayLike | None = None, *, path: bool = False,
                      budget: float | None = None, tolerance: float | tuple[float, float] | None = None) -> Array:
        """All solutions for N poses: (N, max_solutions, dof), NaN-padded, limit-filtered. With
        ``seeds`` or ``path``, the one nearest each seed (or the solution before it), as
        :meth:`Kinematics.inverse_batch` says (a closed form: ``budget`` and ``tolerance`` unused)."""
        if seeds is not None or path:
            return self._nearest_batch(poses, seeds, path, search_for(budget, tolerance))
        poses = spatial.as_pose(poses, "poses")
        flat = poses.reshape(-1, 4, 4)
        out = np.full((len(flat), self.max_solutions, self.dof), np.nan)
        for i, pose in enumerate(flat):
            found: Solutions = self.inverse(pose)
            out[i, :len(found)] = np.asarray(found)[:self.max_solutions]
        return out.reshape(*poses.shape[:-2], self.max_solutions, self.dof)

    def solution_label(self, q: ArrayLike) -> str:
        q = self._one_joints(q)
        t0, t1, t2, _, _ = self._angles(q.tolist())
        wrist = self._frames(q.tolist())[3][:3, 3]
        out = np.array([math.cos(t0), math.sin(t0), 0.0])
        front = "front" if float(wrist @ out) >= 0 else "back"
        return f"{front}, elbow {'up' if _wrap(t2 - t1) < 0 else 'down'}"

    def __repr__(self) -> str:
        return (f"VerticalPlaneArm(dof={self.dof}, links=({self.l1:g}, {self.l2:g}), base_height={self.base_height:g},"
                f" elbow_from_horizontal={self.elbow_from_horizontal})")
