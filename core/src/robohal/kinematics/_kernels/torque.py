"""The torque laws' cycle (motion.torque, control.torque_guard): the impedances' arithmetic,
their output's shaping and the torque guard's pass.

Each runs once per cycle of a torque session, in the time between the robot's state and the
command that answers it: each replaces a few dozen tiny numpy operations on 6 or 7 floats.
Cython's pure-Python mode, as every module of this package (see cycle.py): compiled where
the build found a C compiler, else interpreted, the same bits either way.
"""

from __future__ import annotations

import math

try:
    import cython
except ModuleNotFoundError:  # Cython is not installed: run as plain Python
    from robohal.kinematics._cython_stub import cython

from .common import MAX_DOF

if not cython.compiled:  # compiled, torque.pxd cimports them
    from .common import frame_error, rotation_error, solve6, target_rows

#: whether this module runs compiled
COMPILED = cython.compiled


def joint_impedance(stiffness: cython.const[cython.double][::1], damping: cython.const[cython.double][::1],
                    equilibrium: list, goal, share: cython.double, period: cython.double, q, dq, extra) -> list:
    """A spring and damper per joint (motion.torque.JointImpedance), a list of torques:
    ``stiffness (equilibrium - q) + damping (velocity - dq) + extra``. First the equilibrium (a
    list, changed in place) closes ``share`` of its gap to ``goal``, at the velocity that takes
    (none for a share of 1: a jump)."""
    n: cython.Py_ssize_t = len(stiffness)
    if len(damping) != n or len(equilibrium) != n or len(goal) != n or len(q) != n or len(dq) != n or len(extra) != n:
        raise ValueError("the gains, the equilibrium, its goal, q, dq and extra need one entry per joint")
    tau = [0.0] * n
    i: cython.Py_ssize_t
    moved: cython.double
    at: cython.double
    speed: cython.double = 1.0 / period if share < 1.0 else 0.0
    for i in range(n):
        at = float(equilibrium[i])
        moved = share * (float(goal[i]) - at)
        at = at + moved
        equilibrium[i] = at
        tau[i] = stiffness[i] * (at - float(q[i])) + damping[i] * (moved * speed - float(dq[i])) + float(extra[i])
    return tau


def pose_filter(goal, pose, share: cython.double, period: cython.double) -> tuple:
    """One cycle of a first-order filter taking the pose ``pose`` (rows) toward ``goal`` (rows): it
    closes ``share`` of the gap, its position along the line and its rotation about the axis of
    R_goal R^T (motion.torque.CartesianImpedance's equilibrium). Returns the new pose's rows, the
    twist it moved at (6: linear, angular, base frame; none for a share of 1: a jump) and whether
    it has arrived (then the pose is ``goal``'s)."""
    if len(goal) < 3 or len(pose) < 3:
        raise ValueError("pose_filter needs two poses' rows")
    t = cython.declare(cython.double[9])
    target = cython.declare(cython.double[3])
    r = cython.declare(cython.double[9])
    position = cython.declare(cython.double[3])
    cols = cython.declare(cython.double[9])
    rotation = cython.declare(cython.double[3])
    gap = cython.declare(cython.double[6])
    turn = cython.declare(cython.double[9])
    i: cython.int
    j: cython.int
    target_rows(goal, t, target)
    target_rows(pose, r, position)
    for j in range(3):
        for i in range(3):
            cols[3 * j + i] = r[3 * i + j]
    rotation_error(t, cols, rotation)
    largest: cython.double = 0.0
    for i in range(3):
        gap[i] = target[i] - position[i]
        gap[3 + i] = rotation[i]
    for i in range(6):
        if abs(gap[i]) > largest:
            largest = abs(gap[i])
    if largest < 1e-12:  # there: the filter rests until the next goal
        return [[t[0], t[1], t[2], target[0]], [t[3], t[4], t[5], target[1]], [t[6], t[7], t[8], target[2]],
                [0.0, 0.0, 0.0, 1.0]], [0.0] * 6, True
    for i in range(6):
        gap[i] = share * gap[i]
    # the turn by the rotation vector gap[3:6] (Rodrigues), applied before the pose's rotation
    angle: cython.double = math.sqrt(gap[3] * gap[3] + gap[4] * gap[4] + gap[5] * gap[5])
    kx: cython.double = 0.0
    ky: cython.double = 0.0
    kz: cython.double = 0.0
    if angle > 0.0:
        kx = gap[3] / angle
        ky = gap[4] / angle
        kz = gap[5] / angle
    sine: cython.double = math.sin(angle)
    versine: cython.double = 1.0 - math.cos(angle)
    turn[0] = 1.0 - versine * (ky * ky + kz * kz)
    turn[1] = versine * kx * ky - sine * kz
    turn[2] = versine * kx * kz + sine * ky
    turn[3] = versine * kx * ky + sine * kz
    turn[4] = 1.0 - versine * (kx * kx + kz * kz)
    turn[5] = versine * ky * kz - sine * kx
    turn[6] = versine * kx * kz - sine * ky
    turn[7] = versine * ky * kz + sine * kx
    turn[8] = 1.0 - versine * (kx * kx + ky * ky)
    rows = [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
    for i in range(3):
        row = rows[i]
        for j in range(3):
            row[j] = turn[3 * i] * r[j] + turn[3 * i + 1] * r[3 + j] + turn[3 * i + 2] * r[6 + j]
        row[3] = position[i] + gap[i]
    speed: cython.double = 1.0 / period if share < 1.0 else 0.0
    twist = [0.0] * 6
    for i in range(6):
        twist[i] = gap[i] * speed
    return rows, twist, False


def cartesian_impedance(frame, jac, q, dq, goal, twist, gains: cython.const[cython.double][::1],
                        max_move: cython.double, max_turn: cython.double, extra, posture,
                        null_stiffness: cython.double, null_damping: cython.const[cython.double][::1]) -> list:
    """A spring and damper at the flange, through the Jacobian, with a posture held in its
    nullspace (motion.torque.CartesianImpedance, which says why): the joint torques, a list.

    ``frame`` ((x, y, z, p) columns) and ``jac`` (6 rows) are the flange's at ``q``; ``goal``
    the equilibrium pose's rows and ``twist`` (6) its twist; ``gains`` the stiffness (6), the
    damping (6) and a wrench applied on top (6), per base axis. The pose error's translation and
    rotation are shortened to ``max_move`` (m) and ``max_turn`` (rad). With ``null_stiffness``
    above zero the torque ``null_stiffness (posture - q) - null_damping dq`` less its part that
    acts on the flange (J^T (J J^T + 1e-6 I)^-1 J of it) is added, and ``extra`` (the Coriolis
    torques) as it is."""
    dof: cython.Py_ssize_t = len(q)
    if dof > MAX_DOF:
        raise ValueError(f"at most {MAX_DOF} joints")
    if (len(jac) != 6 or len(frame) != 4 or len(goal) < 3 or len(twist) != 6 or len(gains) != 18
            or len(dq) != dof or len(extra) != dof or len(posture) != dof or len(null_damping) != dof):
        raise ValueError("cartesian_impedance: a frame, 6 Jacobian rows, a pose, 6 twist values, 18 gains and one"
                         " q, dq, extra, posture and null damping value per joint")
    jw = cython.declare(cython.double[192])  # 6 x MAX_DOF, row-major with dof columns
    a = cython.declare(cython.double[36])
    task = cython.declare(cython.double[6])
    force = cython.declare(cython.double[6])
    target = cython.declare(cython.double[3])
    rotation = cython.declare(cython.double[3])
    velocities = cython.declare(cython.double[32])  # MAX_DOF
    null = cython.declare(cython.double[32])
    r: cython.int
    c: cython.int
    i: cython.Py_ssize_t
    total: cython.double
    size: cython.double
    for r in range(6):
        row = jac[r]
        if len(row) != dof:
            raise ValueError("every Jacobian row needs one value per joint")
        for i in range(dof):
            jw[r * dof + i] = float(row[i])
    for i in range(dof):
        velocities[i] = float(dq[i])
    position = frame_error(goal, frame, target, rotation)
    for r in range(3):
        task[r] = target[r] - float(position[r])  # the pose error, first
        task[3 + r] = rotation[r]
    size = math.sqrt(task[0] * task[0] + task[1] * task[1] + task[2] * task[2])
    if size > max_move:
        for r in range(3):
            task[r] = task[r] * (max_move / size)
    size = math.sqrt(task[3] * task[3] + task[4] * task[4] + task[5] * task[5])
    if size > max_turn:
        for r in range(3, 6):
            task[r] = task[r] * (max_turn / size)
    for r in range(6):  # the wrench: K e + D (twist - J dq) + the one applied on top
        total = 0.0
        for i in range(dof):
            total += jw[r * dof + i] * velocities[i]
        force[r] = gains[r] * task[r] + gains[6 + r] * (float(twist[r]) - total) + gains[12 + r]
    tau = [0.0] * dof
    for i in range(dof):
        total = float(extra[i])
        for r in range(6):
            total += jw[r * dof + i] * force[r]
        tau[i] = total
    if null_stiffness > 0.0:
        for i in range(dof):
            null[i] = null_stiffness * (float(posture[i]) - float(q[i])) - null_damping[i] * velocities[i]
        for r in range(6):
            total = 0.0
            for i in range(dof):
                total += jw[r * dof + i] * null[i]
            task[r] = total
            for c in range(r + 1):
                total = 0.0
                for i in range(dof):
                    total += jw[r * dof + i] * jw[c * dof + i]
                a[6 * r + c] = total
                a[6 * c + r] = total
            a[7 * r] += 1e-6
        solve6(a, task, 1)
        for i in range(dof):
            total = null[i]
            for r in range(6):
                total -= jw[r * dof + i] * task[r]
            tau[i] = tau[i] + total
    return tau


def shaped_torque(tau, last, caps: cython.const[cython.double][::1], steps: cython.const[cython.double][::1],
                  scale: cython.bint) -> list:
    """``tau`` as a torque law sends it (motion.torque.TorqueMotion): with ``scale``, scaled back
    as a whole (its direction kept) so that no joint passes its cap; then each joint at most its
    step from ``last``. A list."""
    n: cython.Py_ssize_t = len(caps)
    if len(tau) != n or len(last) != n or len(steps) != n:
        raise ValueError("tau, last, the caps and the steps need one entry per joint")
    out = [0.0] * n
    i: cython.Py_ssize_t
    worst: cython.double = 1.0
    ratio: cython.double
    value: cython.double
    before: cython.double
    if scale:
        for i in range(n):
            ratio = abs(float(tau[i])) / caps[i]
            if ratio > worst:
                worst = ratio
    for i in range(n):
        value = float(tau[i]) / worst
        before = float(last[i])
        if value > before + steps[i]:
            value = before + steps[i]
        elif value < before - steps[i]:
            value = before - steps[i]
        out[i] = value
    return out


def torque_within(tau, last, limits: cython.const[cython.double][::1], steps: cython.const[cython.double][::1]) -> cython.bint:
    """Whether torque command ``tau`` is finite, each joint within its limit and at most its step
    from ``last`` (control.torque_guard.TorqueGuard.check's clear yes; False sends the command to
    the thorough check, which decides and words a refusal)."""
    n: cython.Py_ssize_t = len(limits)
    if len(tau) != n or len(last) != n or len(steps) != n:
        raise ValueError("tau, last, the limits and the steps need one entry per joint")
    i: cython.Py_ssize_t
    value: cython.double
    for i in range(n):
        value = float(tau[i])
        # a NaN fails both comparisons; an infinity the first
        if not (abs(value) <= limits[i] and abs(value - float(last[i])) <= steps[i]):
            return False
    return True
