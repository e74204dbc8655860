"""Six-axis arms with a parallel base and a spherical wrist, in closed form (OPW).

Seven lengths describe the arm (metres): ``a1`` (J2 axis ahead of J1), ``a2``
(wrist offset from the forearm, negative when the wrist sits above it), ``b``
(lateral offset), ``c1`` (J2 height), ``c2`` (upper arm), ``c3`` (J3 to the
wrist centre), ``c4`` (wrist centre to flange). At model angles theta = 0 every
link points straight up; the model angle of joint i is
``theta_i = signs[i] * q_i - offsets[i]``.

Frames (the forward kinematics, written as a product of elementary motions)::

    Rz(t1) Trans(a1, b, c1) Ry(t2) Trans(0, 0, c2) Ry(t3) Trans(a2, 0, c3) Rz(t4) Ry(t5) Rz(t6) Trans(0, 0, c4)

The flange frame has z along the approach direction. The inverse gives up to
eight solutions: shoulder (front/back) x elbow (up/down) x wrist (flip/no flip).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument
from .base import Array, Kinematics, Solutions, pose_rows
from .constraints import Constraints
from .limits import JointLimits

try:  # the single-pose solver compiled (core/setup.py builds it where there is a C compiler)
    from ._kernels import opw as _compiled_solve
    from ._kernels import opw_forward as _compiled_forward
except ImportError:  # pragma: no cover (installed without a compiler)
    _compiled_solve = _compiled_forward = None

PI = math.pi
TWO_PI = 2.0 * math.pi
#: J5 this close (rad) to 0 or +-pi counts as the wrist singularity (0.01 deg)
WRIST_SINGULARITY = math.radians(0.01)
# Below this |sin J5| the pose fixes only J4 + J6 (or J4 - J6): J4 is taken from
# ``previous`` (or the centre of its limits) and J6 follows.
WRIST_DEGENERATE = 1e-7
# Closer than this to a singularity two solutions may coincide (then the finisher drops repeats).
NEAR_DEGENERATE = 1e-5
# |cos| of the elbow angle may exceed 1 by this much (round-off on the workspace rim).
RIM_SLACK = 1e-10
# Every solution must reproduce the pose within these (m, and rotation-matrix entries).
VERIFY_POSITION = 1e-6
VERIFY_ROTATION = 1e-6
# Poses per chunk in the batch paths (keeps temporaries in cache).
CHUNK = 2048


def _wrap(x: float) -> float:
    """Angle into (-pi, pi]."""
    return PI - (PI - x) % TWO_PI


def _wrap_array(x: Array) -> Array:
    """Angles into (-pi, pi] (round to the nearest turn; cheaper than a remainder)."""
    x = x - TWO_PI * np.rint(x * (1.0 / TWO_PI))
    np.add(x, TWO_PI, out=x, where=x <= -PI)
    return x


class OPW(Kinematics):
    """An OPW arm; see the module docstring for the parameters.

    ``offsets`` (rad) and ``signs`` (+1/-1) map the controller's joints to the
    model's angles. ``limits`` default to +-pi on every joint. The geometry
    (lengths, offsets, signs) is fixed at construction: the solvers keep
    constants derived from it. ``limits`` and ``constraints`` may change.
    """

    closed_form = True
    max_solutions = 8
    fixed_attributes = frozenset({"a1", "a2", "b", "c1", "c2", "c3", "c4", "offsets", "signs"})

    def __init__(
        self,
        a1: float,
        a2: float,
        b: float,
        c1: float,
        c2: float,
        c3: float,
        c4: float,
        offsets: Sequence[float] = (0.0,) * 6,
        signs: Sequence[float] = (1,) * 6,
        limits: JointLimits | None = None,
        constraints=None,
    ) -> None:
        lengths = [a1, a2, b, c1, c2, c3, c4]
        if not all(isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool)
                   and math.isfinite(x) for x in lengths):
            raise InvalidArgument(f"OPW lengths must be finite numbers (m), got {lengths}")
        offsets = spatial.as_finite(offsets, "OPW offsets").tolist()
        signs = spatial.as_finite(signs, "OPW signs").tolist()
        if not isinstance(offsets, list) or len(offsets) != 6:
            raise InvalidArgument("OPW offsets must be 6 finite angles (rad)")
        if not isinstance(signs, list) or len(signs) != 6 or any(s not in (1.0, -1.0) for s in signs):
            raise InvalidArgument("OPW signs must be 6 values, each +1 or -1")
        if limits is not None and not isinstance(limits, JointLimits):
            raise InvalidArgument(f"OPW limits must be JointLimits, got {type(limits).__name__}")
        if constraints is not None and not (isinstance(constraints, Constraints) and constraints.dof == 6):
            what = f"{constraints.dof} joints" if isinstance(constraints, Constraints) else type(constraints).__name__
            raise InvalidArgument(f"OPW constraints must be Constraints for 6 joints, got {what}")
        if c2 <= 0 or math.hypot(a2, c3) <= 0:
            raise InvalidArgument("OPW needs c2 > 0 and a non-zero forearm (a2, c3)")
        self.a1, self.a2, self.b, self.c1, self.c2, self.c3, self.c4 = (float(x) for x in lengths)
        self.offsets = tuple(offsets)
        self.signs = tuple(signs)
        self.dof = 6
        self.limits = limits or JointLimits(lower=-PI, upper=PI, velocity=[2.0] * 6, acceleration=10.0, jerk=200.0)
        if self.limits.dof != 6:
            raise InvalidArgument("an OPW arm needs limits for 6 joints")
        self.constraints = constraints
        # Forearm as one link: length k at angle psi from the forearm axis.
        self._k = math.hypot(self.a2, self.c3)
        self._psi = math.atan2(self.a2, self.c3)
        self._offsets = np.array(self.offsets)
        self._constants = (self.a1, self.a2, self.b, self.c1, self.c2, self.c3, self.c4, self._k, self._psi)
        self._signs = np.array(self.signs)
        # The same constants for the compiled solver (layout: see _kernels.c).
        self._packed = array("d", [*self._constants, *self.signs, *self.offsets, NEAR_DEGENERATE, RIM_SLACK,
                                   VERIFY_POSITION, VERIFY_ROTATION, WRIST_DEGENERATE]).tobytes()

    def __repr__(self) -> str:
        return (f"OPW(a1={self.a1}, a2={self.a2}, b={self.b}, c1={self.c1}, c2={self.c2}, c3={self.c3},"
                f" c4={self.c4}, offsets={list(self.offsets)}, signs={list(self.signs)})")

    # Joint <-> model angles -----------------------------------------------------------

    def _theta(self, q: Array) -> Array:
        return q * self._signs - self._offsets

    # Forward kinematics -----------------------------------------------------------------

    def _fk_scalar(self, q: list[float]) -> list[float]:
        """Flange pose for one configuration: R row-major then p, 12 floats."""
        if _compiled_forward is not None:
            return _compiled_forward(self._packed, q)
        return self._fk_scalar_python(q)

    def _fk_scalar_python(self, q: list[float]) -> list[float]:
        """:meth:`_fk_scalar` in Python: the reference of the compiled one."""
        s, o = self.signs, self.offsets
        t1 = s[0] * q[0] - o[0]
        t2 = s[1] * q[1] - o[1]
        t23 = t2 + s[2] * q[2] - o[2]
        t4 = s[3] * q[3] - o[3]
        t5 = s[4] * q[4] - o[4]
        t6 = s[5] * q[5] - o[5]
        sn1, cs1 = math.sin(t1), math.cos(t1)
        sn2, cs2 = math.sin(t2), math.cos(t2)
        s23, c23 = math.sin(t23), math.cos(t23)
        sn4, cs4 = math.sin(t4), math.cos(t4)
        sn5, cs5 = math.sin(t5), math.cos(t5)
        sn6, cs6 = math.sin(t6), math.cos(t6)
        return self._pose_entries(sn1, cs1, sn2, cs2, s23, c23, sn4, cs4, sn5, cs5, sn6, cs6)

    def _pose_entries(self, sn1, cs1, sn2, cs2, s23, c23, sn4, cs4, sn5, cs5, sn6, cs6) -> list:
        """Flange pose entries (R row-major, then p) from the joints' sines and cosines:
        floats for one configuration, arrays for a batch (the same arithmetic)."""
        # R3_6 = Rz(t4) Ry(t5) Rz(t6)
        c4c5 = cs4 * cs5
        s4c5 = sn4 * cs5
        e00 = c4c5 * cs6 - sn4 * sn6
        e01 = -c4c5 * sn6 - sn4 * cs6
        e02 = cs4 * sn5
        e10 = s4c5 * cs6 + cs4 * sn6
        e11 = -s4c5 * sn6 + cs4 * cs6
        e12 = sn4 * sn5
        e20 = -sn5 * cs6
        e21 = sn5 * sn6
        e22 = cs5
        # R0_3 = Rz(t1) Ry(t23); rows 0/1 share u = c23 e0j + s23 e2j.
        u0 = c23 * e00 + s23 * e20
        u1 = c23 * e01 + s23 * e21
        u2 = c23 * e02 + s23 * e22
        r02 = cs1 * u2 - sn1 * e12
        r12 = sn1 * u2 + cs1 * e12
        r22 = c23 * e22 - s23 * e02
        xw = self.a1 + self.c2 * sn2 + self.a2 * c23 + self.c3 * s23
        zw = self.c1 + self.c2 * cs2 - self.a2 * s23 + self.c3 * c23
        c4 = self.c4
        return [
            cs1 * u0 - sn1 * e10, cs1 * u1 - sn1 * e11, r02,
            sn1 * u0 + cs1 * e10, sn1 * u1 + cs1 * e11, r12,
            c23 * e20 - s23 * e00, c23 * e21 - s23 * e01, r22,
            cs1 * xw - sn1 * self.b + c4 * r02,
            sn1 * xw + cs1 * self.b + c4 * r12,
            zw + c4 * r22,
        ]

    def frame_and_jacobian_lists(self, q: list[float], jacobian: bool = True) -> tuple[tuple, list | None]:
        """Flange frame ``(x, y, z, p)`` columns and the 6 x 6 Jacobian rows (no validation)."""
        m = self._fk_scalar(q)
        x, y, z = (m[0], m[3], m[6]), (m[1], m[4], m[7]), (m[2], m[5], m[8])
        p = (m[9], m[10], m[11])
        if not jacobian:
            return (x, y, z, p), None
        s, o = self.signs, self.offsets
        t1 = s[0] * q[0] - o[0]
        t2 = s[1] * q[1] - o[1]
        t23 = t2 + s[2] * q[2] - o[2]
        t4 = s[3] * q[3] - o[3]
        sn1, cs1 = math.sin(t1), math.cos(t1)
        s23, c23 = math.sin(t23), math.cos(t23)
        sn4, cs4 = math.sin(t4), math.cos(t4)
        # Joint axes and a point on each (see joint_poses).
        across = (-sn1, cs1, 0.0)  # J2 and J3 turn about the upper arm's normal
        o2 = (cs1 * self.a1 - sn1 * self.b, sn1 * self.a1 + cs1 * self.b, self.c1)
        lift = self.c2 * math.sin(t2)
        o3 = (o2[0] + cs1 * lift, o2[1] + sn1 * lift, o2[2] + self.c2 * math.cos(t2))
        wrist = (p[0] - self.c4 * z[0], p[1] - self.c4 * z[1], p[2] - self.c4 * z[2])
        forearm = (cs1 * s23, sn1 * s23, c23)
        bend = (-sn4 * cs1 * c23 - cs4 * sn1, -sn4 * sn1 * c23 + cs4 * cs1, sn4 * s23)
        joints = (((0.0, 0.0, 1.0), (0.0, 0.0, 0.0)), (across, o2), (across, o3), (forearm, wrist), (bend, wrist),
                  (z, wrist))
        jac = [[0.0] * 6 for _ in range(6)]
        for i, ((wx, wy, wz), (ox, oy, oz)) in enumerate(joints):
            sign = s[i]
            rx, ry, rz = p[0] - ox, p[1] - oy, p[2] - oz
            jac[0][i] = sign * (wy * rz - wz * ry)
            jac[1][i] = sign * (wz * rx - wx * rz)
            jac[2][i] = sign * (wx * ry - wy * rx)
            jac[3][i] = sign * wx
            jac[4][i] = sign * wy
            jac[5][i] = sign * wz
        return (x, y, z, p), jac

    def _fk_arrays(self, theta: Array) -> list[Array]:
        """Flange pose entries for model angles ``theta`` (6, n): 12 arrays (R row-major, p)."""
        t1, t2, t3, t4, t5, t6 = theta
        sn1, cs1 = np.sin(t1), np.cos(t1)
        sn2, cs2 = np.sin(t2), np.cos(t2)
        t23 = t2 + t3
        s23, c23 = np.sin(t23), np.cos(t23)
        sn4, cs4 = np.sin(t4), np.cos(t4)
        sn5, cs5 = np.sin(t5), np.cos(t5)
        sn6, cs6 = np.sin(t6), np.cos(t6)
        return self._pose_entries(sn1, cs1, sn2, cs2, s23, c23, sn4, cs4, sn5, cs5, sn6, cs6)

    def forward(self, q: ArrayLike) -> Array:
        """Flange pose (4, 4) for joints (6,); (..., 4, 4) for (..., 6)."""
        if (type(q) is np.ndarray and q.shape == (6,) and q.dtype == np.float64) or (
                type(q) in (list, tuple) and len(q) == 6 and all(type(x) is float for x in q)):
            values = q.tolist() if type(q) is np.ndarray else list(q)
            if all(map(math.isfinite, values)):
                m = self._fk_scalar(values)
                # (a flat list converts faster than nested ones)
                return np.array([m[0], m[1], m[2], m[9], m[3], m[4], m[5], m[10], m[6], m[7], m[8], m[11],
                                 0.0, 0.0, 0.0, 1.0]).reshape(4, 4)
        q = self._joints(q)
        if q.ndim == 1:
            return self.forward(q.tolist())
        flat = q.reshape(-1, 6)
        n = flat.shape[0]
        out = np.empty((n, 16))
        # Entries are computed as rows of a (16, chunk) buffer, then written in one transposed copy.
        buffer = np.zeros((16, min(CHUNK, n)))
        buffer[15] = 1.0
        for start in range(0, n, CHUNK):
            stop = min(start + CHUNK, n)
            theta = (flat[start:stop] * self._signs - self._offsets).T
            block = buffer[:, : stop - start]
            for index, value in zip((0, 1, 2, 4, 5, 6, 8, 9, 10, 3, 7, 11), self._fk_arrays(theta), strict=True):
                block[index] = value
            out[start:stop] = block.T
        return out.reshape(*q.shape[:-1], 4, 4)

    def joint_poses(self, q: ArrayLike) -> Array:
        """Frames moved by J1..J6 and the flange: (..., 7, 4, 4). J1's frame is at
        the base origin, J2's and J3's on their axes, J4-J6's at the wrist centre."""
        from .. import spatial

        q = self._joints(q)
        t = np.moveaxis(self._theta(q), -1, 0)
        shape = q.shape[:-1]

        def trans(x: float, y: float, z: float) -> Array:
            return spatial.from_translation(np.broadcast_to([x, y, z], (*shape, 3)))

        f1 = spatial.rotation_z(t[0])
        f2 = f1 @ trans(self.a1, self.b, self.c1) @ spatial.rotation_y(t[1])
        f3 = f2 @ trans(0, 0, self.c2) @ spatial.rotation_y(t[2])
        f4 = f3 @ trans(self.a2, 0, self.c3) @ spatial.rotation_z(t[3])
        f5 = f4 @ spatial.rotation_y(t[4])
        f6 = f5 @ spatial.rotation_z(t[5])
        flange = f6 @ trans(0, 0, self.c4)
        return np.stack([f1, f2, f3, f4, f5, f6, flange], axis=-3)

    def jacobian(self, q: ArrayLike) -> Array:
        """Geometric Jacobian (..., 6, 6) from the joint axes (analytic)."""
        frames = self.joint_poses(q)
        tip = frames[..., 6, :3, 3]
        axis_column = (2, 1, 1, 2, 1, 2)  # J1, J4, J6 turn about z; J2, J3, J5 about y
        columns = []
        for i, column in enumerate(axis_column):
            axis = frames[..., i, :3, column]
            linear = np.cross(axis, tip - frames[..., i, :3, 3])
            columns.append(self.signs[i] * np.concatenate([linear, axis], axis=-1))
        return np.stack(columns, axis=-1)

    def singularity(self, q: ArrayLike, threshold: float = WRIST_SINGULARITY):
        """'wrist' when J5 is within ``threshold`` (0.01 deg) of 0 or +-pi, else None;
        for a batch (N, 6), a boolean array."""
        q = self._joints(q)
        t5 = np.remainder(self._theta(q)[..., 4], PI)
        near = np.minimum(t5, PI - t5) < threshold
        if q.ndim == 1:
            return "wrist" if bool(near) else None
        return near

    def solution_label(self, q: ArrayLike) -> str:
        """"front|back, elbow up|down, wrist flip|no flip" of joints ``q`` (6,)."""
        q = self._one_joints(q)
        t = self._theta(q)
        reach = self.a1 + self.c2 * math.sin(t[1]) + self._k * math.sin(t[1] + t[2] + self._psi)
        front = reach >= 0
        up = (math.sin(t[2] + self._psi) > 0) == front
        flip = _wrap(float(t[4])) < 0
        return f"{'front' if front else 'back'}, elbow {'up' if up else 'down'}, {'wrist flip' if flip else 'no flip'}"

    # Inverse kinematics: one pose ------------------------------------------------------------

    def _solve(self, m: list[list[float]], previous: list[float] | None,
               j6: float | None = None) -> tuple[list, str | None, bool]:
        """All verified solutions (joint lists, normalised) for one pose given as
        rows, the reason when there is none, and whether two may coincide (near a
        singularity; the finisher looks for repeats only then)."""
        if _compiled_solve is None:
            return self._solve_python(m, previous, j6)
        rows, failure, may_repeat = _compiled_solve(self._packed, m, self._bounds()[2] if previous is None else previous, j6)
        return (rows, None, may_repeat) if failure is None else ([], self._failure(*failure), False)

    def _failure(self, kind: str, *values: float) -> str:
        """Why a pose has no solution: the wrist centre (x, y) inside the offset b, the
        shoulder-to-wrist vector (u, v) out of reach, or a degenerate target."""
        if kind == "offset":
            return (f"the wrist centre is {math.hypot(*values):.6g} m from the joint-1 axis, closer than the"
                    f" offset b = {self.b:.4f} m")
        if kind == "reach":
            return (f"the wrist centre is {math.hypot(*values):.6g} m from joint 2; the arm reaches"
                    f" {abs(self.c2 - self._k):.4f} to {self.c2 + self._k:.4f} m")
        return "no configuration reproduces the pose (numerically degenerate target)"

    def _solve_python(self, m: list[list[float]], previous: list[float] | None,
                      j6: float | None = None) -> tuple[list, str | None, bool]:
        """:meth:`_solve` in Python: the reference of the compiled solver."""
        r00, r01, r02, px = m[0]
        r10, r11, r12, py = m[1]
        r20, r21, r22, pz = m[2]
        a1, a2, b, c1, c2, c3, c4, k, psi = self._constants
        s0, s1, s2, s3, s4, s5 = self.signs
        o0, o1, o2, o3, o4, o5 = self.offsets
        # Wrist centre.
        cx = px - c4 * r02
        cy = py - c4 * r12
        cz = pz - c4 * r22
        rho2 = cx * cx + cy * cy - b * b
        if rho2 < -1e-12:
            return [], self._failure("offset", cx, cy), False
        r = math.sqrt(rho2 if rho2 > 0.0 else 0.0)
        near_degenerate = r < NEAR_DEGENERATE
        # On the J1 axis J1 is free: it stays at the reference (previous, else the limits' centre).
        phi = math.atan2(cy, cx) if cx * cx + cy * cy > 1e-24 else self._reference(previous, 0)
        v = cz - c1
        kk = c2 * c2 + k * k
        two_c2k = 2.0 * c2 * k
        rows: list[list[float]] = []
        out_of_reach = None  # (u, v) of the first shoulder branch out of reach: the reason if none is found
        for xp in (r, -r):
            u = xp - a1
            d = (u * u + v * v - kk) / two_c2k
            if abs(d) > 1.0 + RIM_SLACK:
                out_of_reach = out_of_reach or (u, v)
                continue
            d = d if d > -1.0 else -1.0
            d = d if d < 1.0 else 1.0
            t1 = phi - math.atan2(b, xp)
            sn1, cs1 = math.sin(t1), math.cos(t1)
            h_x = cs1 * r00 + sn1 * r10
            h_y = cs1 * r01 + sn1 * r11
            h_z = cs1 * r02 + sn1 * r12
            m12 = cs1 * r12 - sn1 * r02
            along = math.atan2(u, v)
            root = math.sqrt(1.0 - d * d)
            if root < NEAR_DEGENERATE:
                near_degenerate = True
            q1 = PI - (PI - s0 * (t1 + o0)) % TWO_PI
            for sin_elbow in ((root, -root) if root > 0 else (0.0,)):
                t3 = math.atan2(sin_elbow, d) - psi
                t2 = along - math.atan2(k * sin_elbow, c2 + k * d)
                t23 = t2 + t3
                s23, c23 = math.sin(t23), math.cos(t23)
                # Wrist centre check (the arm part of the forward kinematics).
                xw = a1 + c2 * math.sin(t2) + a2 * c23 + c3 * s23
                zw = c1 + c2 * math.cos(t2) - a2 * s23 + c3 * c23
                if (abs(cs1 * xw - sn1 * b - cx) > VERIFY_POSITION or abs(sn1 * xw + cs1 * b - cy) > VERIFY_POSITION
                        or abs(zw - cz) > VERIFY_POSITION):
                    continue
                # M = R0_3^T R: its third column and third row give the wrist angles.
                m02 = c23 * h_z - s23 * r22
                m22 = s23 * h_z + c23 * r22
                sin5 = math.sqrt(m02 * m02 + m12 * m12)
                t5 = math.atan2(sin5, m22)
                if sin5 < NEAR_DEGENERATE:
                    near_degenerate = True
                flip = sin5 >= WRIST_DEGENERATE
                if flip:
                    t4 = math.atan2(m12, m02)
                    t6 = j6 if j6 is not None else math.atan2(s23 * h_y + c23 * r21, -(s23 * h_x + c23 * r20))
                else:
                    t4 = self._reference(previous, 3)
                    if j6 is not None:
                        t6 = j6
                    else:
                        m00 = c23 * h_x - s23 * r20
                        m10 = cs1 * r10 - sn1 * r00
                        if m22 > 0:  # J5 = 0: only t4 + t6 is fixed
                            t6 = math.atan2(m10, m00) - t4
                        else:  # J5 = pi: only t4 - t6 is fixed
                            t6 = t4 - math.atan2(-m10, -m00)
                # Verify the rotation: R0_3 R3_6 against the target's z (and, unless 5-DOF, x) axis.
                # The flipped wrist (t4 + pi, -t5, t6 + pi) is the same rotation with the signs of
                # sin/cos t4, sin t5 and sin/cos t6 negated: every product below is the same
                # number, so this one check verifies both wrists.
                sn4, cs4 = math.sin(t4), math.cos(t4)
                sn5, cs5 = math.sin(t5), math.cos(t5)
                e02, e12 = cs4 * sn5, sn4 * sn5
                u2 = c23 * e02 + s23 * cs5
                if (abs(cs1 * u2 - sn1 * e12 - r02) > VERIFY_ROTATION or abs(sn1 * u2 + cs1 * e12 - r12) > VERIFY_ROTATION
                        or abs(c23 * cs5 - s23 * e02 - r22) > VERIFY_ROTATION):
                    continue
                if j6 is None:
                    sn6, cs6 = math.sin(t6), math.cos(t6)
                    e00 = cs4 * cs5 * cs6 - sn4 * sn6
                    e10 = sn4 * cs5 * cs6 + cs4 * sn6
                    e20 = -sn5 * cs6
                    u0 = c23 * e00 + s23 * e20
                    if (abs(cs1 * u0 - sn1 * e10 - r00) > VERIFY_ROTATION or abs(sn1 * u0 + cs1 * e10 - r10) > VERIFY_ROTATION
                            or abs(c23 * e20 - s23 * e00 - r20) > VERIFY_ROTATION):
                        continue
                # Joints from model angles, each into (-pi, pi] (inline: this is the hot path).
                q2 = PI - (PI - s1 * (t2 + o1)) % TWO_PI
                q3 = PI - (PI - s2 * (t3 + o2)) % TWO_PI
                rows.append([q1, q2, q3, PI - (PI - s3 * (t4 + o3)) % TWO_PI, PI - (PI - s4 * (t5 + o4)) % TWO_PI,
                             PI - (PI - s5 * (t6 + o5)) % TWO_PI])
                if flip:
                    t6f = t6 if j6 is not None else t6 + PI
                    rows.append([q1, q2, q3, PI - (PI - s3 * (t4 + PI + o3)) % TWO_PI, PI - (PI - s4 * (o4 - t5)) % TWO_PI,
                                 PI - (PI - s5 * (t6f + o5)) % TWO_PI])
        if not rows:
            return [], self._failure("degenerate" if out_of_reach is None else "reach", *(out_of_reach or ())), False
        return rows, None, near_degenerate

    def _reference(self, previous: list[float] | None, i: int) -> float:
        """Model angle ``i`` of ``previous`` (else of the limits' centre): the choice a singular pose leaves open."""
        joint = previous[i] if previous is not None else self._bounds()[2][i]
        return self.signs[i] * joint - self.offsets[i]

    def _candidates(self, pose: Array, previous: Array | None) -> tuple[list, str | None]:
        return self._solve(pose.tolist(), None if previous is None else list(previous))[:2]

    def inverse(self, pose: ArrayLike) -> Solutions:
        rows, reason, may_repeat = self._solve(pose_rows(pose), None)
        return self._finish(rows, None, reason, may_repeat, normalised=True)

    def inverse_continuing(self, pose: ArrayLike, previous: ArrayLike) -> Solutions:
        """Solutions nearest ``previous``; at the J5 = 0 (pi) singularity J4 stays at
        ``previous`` and J6 keeps J4 + J6 (J4 - J6) as the pose demands."""
        prev = self._previous_list(previous)
        rows, reason, may_repeat = self._solve(pose_rows(pose), prev)
        return self._finish(rows, prev, reason, may_repeat, normalised=True)

    def _previous_list(self, previous: ArrayLike) -> list[float]:
        if type(previous) is np.ndarray and previous.dtype == np.float64 and previous.ndim == 1:
            values = previous.tolist()  # already Python floats
        else:
            values = previous.tolist() if type(previous) is np.ndarray else previous
            try:
                values = [float(x) for x in values]
            except (TypeError, ValueError):
                raise InvalidArgument(f"previous joints must be {self.dof} numbers, got {previous!r:.80}") from None
        if len(values) != self.dof:
            raise InvalidArgument(f"previous joints must have {self.dof} values, got {len(values)}")
        if not all(map(math.isfinite, values)):
            raise InvalidArgument("previous joints contain NaN or inf")
        return values

    def inverse_5dof(self, pose: ArrayLike, j6: float) -> Solutions:
        """Solutions that place the flange at the pose's position with its z axis
        along the pose's z axis; rotation about that axis is ignored and J6 = ``j6``."""
        j6 = spatial.as_number(j6, "j6")
        rows, reason, may_repeat = self._solve(pose_rows(pose), None, j6=self.signs[5] * j6 - self.offsets[5])
        return self._finish(rows, None, reason, may_repeat, normalised=True)

    def inverse_continuing_5dof(self, pose: ArrayLike, previous: ArrayLike) -> Solutions:
        """:meth:`inverse_5dof` with J6 taken from ``previous``, sorted by distance to it."""
        prev = self._previous_list(previous)
        rows, reason, may_repeat = self._solve(pose_rows(pose), prev, j6=self.signs[5] * prev[5] - self.offsets[5])
        return self._finish(rows, prev, reason, may_repeat, normalised=True)

    # Inverse kinematics: many poses ------------------------------------------------------------

    def _candidates_batch(self, poses: Array, limits: JointLimits | None = None) -> Array:
        """(n, 8, 6) solutions in fixed slots (4 * back + 2 * elbow branch + flip),
        FK-verified, normalised to (-pi, pi] (moved by a turn into ``limits`` and
        filtered by them when given); NaN where a branch does not exist."""
        n = poses.shape[0]
        out = np.empty((n, 8, 6))
        for start in range(0, n, CHUNK):
            stop = min(start + CHUNK, n)
            out[start:stop] = self._solve_chunk(poses[start:stop], limits)
        return out

    def _solve_chunk(self, poses: Array, limits: JointLimits | None = None) -> Array:
        n = poses.shape[0]
        a1, b, c2, k, psi = self.a1, self.b, self.c2, self._k, self._psi
        flat = poses.reshape(n, 16).T  # rows: matrix entries, columns: poses
        r00, r01, r02, px, r10, r11, r12, py, r20, r21, r22, pz = (np.ascontiguousarray(flat[i]) for i in range(12))
        cx = px - self.c4 * r02
        cy = py - self.c4 * r12
        cz = pz - self.c4 * r22
        rho2 = cx * cx + cy * cy - b * b
        bad_base = rho2 < -1e-12
        r = np.sqrt(np.maximum(rho2, 0.0))
        centre = self._bounds()[2]
        ref = [self.signs[i] * centre[i] - self.offsets[i] for i in range(6)]
        phi = np.arctan2(cy, cx)
        on_axis = cx * cx + cy * cy <= 1e-24
        if on_axis.any():
            phi[on_axis] = ref[0]
        xp = np.stack([r, -r])  # (2, n): front, back
        t1 = phi - np.arctan2(b, xp)
        u = xp - a1
        v = cz - self.c1
        d = (u * u + v * v - (c2 * c2 + k * k)) / (2.0 * c2 * k)
        unreachable = (np.abs(d) > 1.0 + RIM_SLACK) | bad_base
        d = np.clip(d, -1.0, 1.0)
        root = np.sqrt(1.0 - d * d)
        sin_elbow = np.stack([root, -root], axis=1)  # (2, 2, n): shoulder, elbow
        t3 = np.arctan2(sin_elbow, d[:, None]) - psi
        t2 = np.arctan2(u, v)[:, None] - np.arctan2(k * sin_elbow, c2 + k * d[:, None])
        sn1, cs1 = np.sin(t1)[:, None], np.cos(t1)[:, None]
        t23 = t2 + t3
        s23, c23 = np.sin(t23), np.cos(t23)
        h_x = cs1 * r00 + sn1 * r10
        h_y = cs1 * r01 + sn1 * r11
        h_z = cs1 * r02 + sn1 * r12
        m02 = c23 * h_z - s23 * r22
        m12 = cs1 * r12 - sn1 * r02
        m22 = s23 * h_z + c23 * r22
        sin5 = np.sqrt(m02 * m02 + m12 * m12)
        t5 = np.arctan2(sin5, m22)
        t4 = np.arctan2(m12, m02)
        t6 = np.arctan2(s23 * h_y + c23 * r21, -(s23 * h_x + c23 * r20))
        degenerate = sin5 < WRIST_DEGENERATE
        if degenerate.any():
            m00 = c23 * h_x - s23 * r20
            m10 = cs1 * r10 - sn1 * r00
            t4 = np.where(degenerate, ref[3], t4)
            sum46 = np.arctan2(m10, m00)
            diff46 = np.arctan2(-m10, -m00)
            t6 = np.where(degenerate, np.where(m22 > 0, sum46 - ref[3], ref[3] - diff46), t6)
        # Branch angles (6, 2, 2, 2, n): joint, shoulder, elbow, flip.
        theta = np.empty((6, 2, 2, 2, n))
        theta[0] = t1[:, None, None, :]
        theta[1] = t2[:, :, None, :]
        theta[2] = t3[:, :, None, :]
        theta[3, :, :, 0] = t4
        theta[3, :, :, 1] = t4 + PI
        theta[4, :, :, 0] = t5
        theta[4, :, :, 1] = -t5
        theta[5, :, :, 0] = t6
        theta[5, :, :, 1] = t6 + PI
        q = _wrap_array((theta + self._offsets[:, None, None, None, None]) * self._signs[:, None, None, None, None])
        bad = np.zeros((2, 2, 2, n), dtype=bool)
        if limits is not None:
            # Into the limits by a turn where that helps, then inside or out.
            for j, (low, high) in enumerate(zip(limits.lower.tolist(), limits.upper.tolist(), strict=True)):
                row = q[j]
                if low > -PI:
                    under = row < low
                    if under.any():
                        row[under] += TWO_PI
                if high < PI:
                    over = row > high
                    if over.any():
                        row[over] -= TWO_PI
                bad |= (row < low - 1e-9) | (row > high + 1e-9)
        # Verify every branch with the forward kinematics of its final joints. The flip
        # branches share J1-J3 exactly (same values), so those angles are taken once.
        th = q * self._signs[:, None, None, None, None] - self._offsets[:, None, None, None, None]
        pose = self._fk_arrays((th[0][:, :1, :1], th[1][:, :, :1], th[2][:, :, :1], th[3], th[4], th[5]))
        target = (r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz)
        error = np.zeros((2, 2, 2, n))
        for value, wanted in zip(pose, target, strict=True):
            np.maximum(error, np.abs(value - wanted), out=error)
        bad |= ~(error <= VERIFY_POSITION)  # also catches NaN
        bad |= unreachable[:, None, None, :]
        bad[:, :, 1] |= degenerate  # at J5 = 0 the flipped wrist repeats the other
        q = q.reshape(6, 8 * n)
        q[:, bad.reshape(-1)] = np.nan
        return q.reshape(6, 8, n).transpose(2, 1, 0)

    def inverse_batch(self, poses: ArrayLike) -> Array:
        """All 8 branches for N poses: (N, 8, 6), NaN where a branch does not exist
        or leaves the limits. Slot ``4 * back + 2 * elbow + flip`` is stable, so a
        column follows one branch; :func:`~robohal.kinematics.pick_best` picks one per pose."""
        from .. import spatial

        poses = spatial.as_pose(poses, "poses")
        if poses.ndim == 2:
            poses = poses[None]
        return self._candidates_batch(poses.reshape(-1, 4, 4), self.limits)


def fit_limits_batch(q: Array, limits: JointLimits, periodic: Sequence[bool]) -> Array:
    """Move angles by one turn into the limits where that helps; NaN rows outside."""
    lower, upper = limits.lower, limits.upper
    for j in range(q.shape[-1]):
        if not periodic[j]:
            continue
        column = q[..., j]
        low = column < lower[j]
        if low.any():
            column[low] += TWO_PI
        high = column > upper[j]
        if high.any():
            column[high] -= TWO_PI
    inside = ((q >= lower - 1e-9) & (q <= upper + 1e-9)).all(axis=-1)
    q[~inside] = np.nan
    return q
