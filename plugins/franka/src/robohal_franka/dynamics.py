"""The simulated arm's dynamics: the links' rigid bodies, its drives, a payload and a wrench on the
flange, advanced one control cycle at a time.

The rigid bodies come from the very URDF text the simulator serves (:func:`.urdf.urdf_text`), from
which a client's libfranka builds its dynamics ``Model``: the gravity and Coriolis torques a client
computes are this arm's. The drives add what that URDF does not carry and a torque-controlled
client feels all the same (:class:`.facts.Drives`): reflected inertia and friction.

pinocchio computes it, for two reasons: it is the reference implementation of the recursive
rigid-body algorithms (CRBA, RNEA), and libfranka builds its ``Model`` with it (libfranka
``src/robot_model.cpp``), so client and robot run the same algorithms on the same text. From
Python each call takes a few microseconds, far inside the 1 ms cycle. (MuJoCo would bring a
second description of the arm and a contact solver the client's Model knows nothing of.)

One cycle, the drives delivering ``tau_d`` (on a Franka in torque control: the client's torque plus
the robot's own gravity compensation)::

    (M(q) + I_a) ddq + c(q, dq) + g(q) = tau_d - tau_f(dq) + J(q)^T F

integrated semi-implicitly (``dq' = dq + dt ddq``, ``q' = q + dt dq'``), the scheme of MuJoCo's
Euler integrators. Viscous and sigmoid friction are explicit: their slopes (at most a few Nm s/rad)
are tiny against the reflected inertia at 1 ms. Coulomb friction has stiction: per cycle the
friction impulses are those that keep each joint still while its static friction can hold it and
let it slide against the full friction otherwise, a box-constrained problem solved exactly by
active sets (our numerical choice; MuJoCo's ``frictionloss`` poses the same problem). A surface
the flange rests on holds it from sliding the same way, up to its friction force along each of
base x and y (a pyramid, as MuJoCo's default friction cone): its two impulses join the joints'
in the same problem.

The measured link-side torque (``tau_J``, the torque sensor between drive and link) is what the
drive passes to the link: ``tau_d - I_a ddq - tau_f``; the links' own equation then reads
``M ddq + c + g = tau_J + J^T F``, so the robot's model-based estimate of the external torque,
``tau_J - (M ddq + c + g)``, is ``-J^T F`` exactly in this simulation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .facts import arm_facts
from .urdf import urdf_text

GRAVITY = (0.0, 0.0, -9.81)  # m/s^2, base frame (libfranka's O_ddP_O: "hardcoded for now")
FLANGE = "link8"  # libfranka's Model: the last link's frame (robot_model.h kLastLinkName)

#: (flange pose (4, 4), flange twist (6: linear, angular, base frame), mobility J M^-1 J^T (6, 6))
#: -> (the wrench (6: force, torque, base frame) something outside applies at the flange, the
#: friction force (N) with which it can hold the flange from sliding along base x and y)
ExternalWrench = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, float]]


@dataclass(frozen=True)
class Cycle:
    """One integrated cycle: the new joint state, and what the robot measures of the cycle."""

    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    tau_J: np.ndarray  # measured link-side torque
    tau_ext: np.ndarray  # external torque on the joints, J^T F
    wrench: np.ndarray  # F: the external wrench on the flange, base frame (force on the robot)


class ArmDynamics:
    """One simulated arm's dynamics (``franka.fr3`` or ``franka.panda``) and its payload."""

    def __init__(self, model_name: str) -> None:
        import pinocchio  # here: importing the backend (which names the simulator's options) stays light

        self._pin = pinocchio
        drives = arm_facts(model_name).drives
        self.model = pinocchio.buildModelFromXML(urdf_text(model_name))
        self.model.gravity.linear = np.array(GRAVITY)
        self.model.armature = np.array(drives.armature, dtype=np.float64)
        self.data = self.model.createData()
        self.armature = np.array(drives.armature, dtype=np.float64)
        self.viscous = np.array(drives.viscous, dtype=np.float64)
        self.coulomb = np.array(drives.coulomb, dtype=np.float64)
        self.sigmoid = None if drives.sigmoid is None else tuple(np.array(row) for row in drives.sigmoid)
        if self.sigmoid is not None:
            phi1, phi2, phi3 = self.sigmoid
            self._sigmoid_offset = phi1 / (1.0 + np.exp(-phi2 * phi3))  # makes tau_f(0) = 0
        self.flange_frame = self.model.getFrameId(FLANGE)
        self._last_joint = self.model.frames[self.flange_frame].parentJoint
        self._bare_last = self.model.inertias[self._last_joint].copy()
        self.load = (0.0, np.zeros(3), np.zeros(9))
        self._stuck: np.ndarray | None = None  # the joints static friction held in the last cycle

    # The payload --------------------------------------------------------------------------

    def set_load(self, mass: float, center: np.ndarray, inertia: np.ndarray) -> None:
        """What the flange carries, as setLoad gives it: mass (kg), centre of mass in the flange
        frame (m), inertia about it (9, column-major, kg m^2); it moves with the last link, as in
        libfranka's Model (robot_model.cpp adds it there at the flange's placement)."""
        center = np.asarray(center, dtype=np.float64).reshape(3)
        inertia = np.asarray(inertia, dtype=np.float64).reshape(3, 3, order="F")
        self.load = (float(mass), center.copy(), inertia.ravel(order="F"))
        placement = self.model.frames[self.flange_frame].placement
        body = self._pin.Inertia(float(mass), center, 0.5 * (inertia + inertia.T))
        self.model.inertias[self._last_joint] = self._bare_last + placement.act(body)

    # What the robot computes of itself ------------------------------------------------------

    def gravity(self, q: np.ndarray) -> np.ndarray:
        """g(q): the torques that hold the arm and its payload against gravity."""
        return self._pin.computeGeneralizedGravity(self.model, self.data, q).copy()

    def flange(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The flange's pose (4, 4) and geometric Jacobian (6, 7; linear rows first, base frame)."""
        pin = self._pin
        jacobian = pin.computeFrameJacobian(self.model, self.data, q, self.flange_frame, pin.LOCAL_WORLD_ALIGNED)
        return self.data.oMf[self.flange_frame].homogeneous, jacobian

    def link_torque(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, tau_ext: np.ndarray) -> np.ndarray:
        """The link-side torque that moves the links along (q, dq, ddq) under the external torque
        ``tau_ext``: what the torque sensors measure while the robot's own controller drives the arm."""
        return self._pin.rnea(self.model, self.data, q, dq, ddq) - self.armature * ddq - tau_ext

    def friction(self, dq: np.ndarray) -> np.ndarray:
        """The velocity-dependent friction torques (viscous and sigmoid; Coulomb is solved per cycle)."""
        tau = self.viscous * dq
        if self.sigmoid is not None:
            phi1, phi2, phi3 = self.sigmoid
            tau = tau + phi1 / (1.0 + np.exp(-phi2 * (dq + phi3))) - self._sigmoid_offset
        return tau

    # One cycle ------------------------------------------------------------------------------

    def step(self, q: np.ndarray, dq: np.ndarray, tau_d: np.ndarray, dt: float,
             external: ExternalWrench | None = None) -> Cycle:
        """Advance ``dt`` from (q, dq) under the drives' torque ``tau_d``, and ``external`` pushing
        on the flange (evaluated at the cycle's start)."""
        pin, model, data = self._pin, self.model, self.data
        mass = pin.crba(model, data, q).copy()  # the upper triangle; armature on the diagonal
        mass[_LOWER] = mass.T[_LOWER]
        inverse = pin.computeMinverse(model, data, q).copy()
        inverse[_LOWER] = inverse.T[_LOWER]
        bias = pin.nonLinearEffects(model, data, q, dq)  # c(q, dq) + g(q)
        holding = 0.0
        if external is None:
            wrench, tau_ext = _NO_WRENCH, _NO_TORQUE
        else:
            jacobian = pin.computeFrameJacobian(model, data, q, self.flange_frame, pin.LOCAL_WORLD_ALIGNED)
            wrench, holding = external(data.oMf[self.flange_frame].homogeneous, jacobian @ dq,
                                       jacobian @ inverse @ jacobian.T)
            tau_ext = jacobian.T @ wrench
        smooth = self.friction(dq)
        free = dq + dt * (inverse @ (tau_d + tau_ext - smooth - bias))
        limit = dt * self.coulomb
        if holding > 0.0:  # the joints' friction and the surface's, along base x and y, in one problem
            directions = np.vstack((_JOINTS, jacobian[:2]))
            mobility = directions @ inverse @ directions.T
            mobility[7:, 7:] += SURFACE_SOFTNESS * _PLANE
            bounds = np.concatenate((limit, (dt * holding,) * 2))
            stuck = None if self._stuck is None else np.concatenate((self._stuck, (True, True)))
            impulses = coulomb_impulses(directions @ free, mobility, np.linalg.inv(mobility), bounds, stuck)
            impulse, stop = impulses[:7], impulses[7:]
            free = free + inverse @ (jacobian[:2].T @ stop)
            wrench = wrench.copy()
            wrench[:2] += stop / dt
            tau_ext = jacobian.T @ wrench
        else:
            impulse = coulomb_impulses(free, inverse, mass, limit, self._stuck)
        self._stuck = np.abs(impulse) < limit
        velocity = free + inverse @ impulse
        velocity[self._stuck] = 0.0  # held by static friction: at rest, round-off and all
        acceleration = (velocity - dq) / dt
        tau_J = tau_d - self.armature * acceleration - smooth + impulse / dt
        return Cycle(q + dt * velocity, velocity, acceleration, tau_J, tau_ext, wrench)


_LOWER = np.tril_indices(7, -1)
_JOINTS = np.eye(7)
_PLANE = np.eye(2)
# 1/kg: our choice, a compliance so small it only makes the problem of a held flange well posed
# (seven stuck joints already hold it: the two surface directions would repeat them); under a
# held load of 100 N the flange then slides 1e-7 m/s.
SURFACE_SOFTNESS = 1e-6
_NO_WRENCH = np.zeros(6)
_NO_TORQUE = np.zeros(7)
_NO_WRENCH.flags.writeable = False
_NO_TORQUE.flags.writeable = False


def coulomb_impulses(free: np.ndarray, inverse: np.ndarray, mass: np.ndarray, limit: np.ndarray,
                     stuck: np.ndarray | None = None) -> np.ndarray:
    """The Coulomb friction impulses of one cycle (N m s per joint): with ``free`` the velocities
    the cycle would end at without them, ``inverse`` = M^-1 (``mass`` = M) and ``limit`` = dt *
    (Coulomb friction), the impulses p with |p_i| <= limit_i such that each joint either ends at
    rest (|p_i| < limit_i) or slides against its full friction (p_i = -limit_i sign(v_i)), where
    v = free + M^-1 p is the velocity the cycle ends at.

    This is the box-constrained problem min 1/2 p^T M^-1 p + p^T free, solved by active sets: guess
    which joints stick, solve for their impulses, let the one furthest past its friction slide, and
    make a sliding joint that would reverse stick. The two common cases are tried first: every joint
    held (an arm at rest), every joint sliding (an arm on its way); else the search starts from
    ``stuck`` (the joints that stuck in the cycle before, which seldom change from one to the next)."""
    rubbing = limit > 0.0
    count = int(np.count_nonzero(rubbing))
    if count == 0:
        return np.zeros_like(free)
    stick = rubbing & (np.abs(free) <= limit * inverse.diagonal())  # what each joint alone could hold
    if count == len(free):
        if stick.all():
            holding = -(mass @ free)  # every joint ends at rest: M^-1 p = -free
            if (np.abs(holding) <= limit).all():
                return holding
        elif not stick.any():
            impulse = -limit * np.sign(free)
            if not ((free + inverse @ impulse) * impulse > 0.0).any():
                return impulse
    if stuck is not None:
        stick = rubbing & (stuck | (free == 0.0))  # a joint with nowhere to slide starts held
    slide = rubbing & ~stick
    impulse = np.where(slide, -limit * np.sign(free), 0.0)
    momentum = mass @ free
    for _ in range(2 * len(free) + 1):
        held_joints = np.flatnonzero(stick)
        if held_joints.size:
            holding = _held_impulses(held_joints, np.flatnonzero(~stick), impulse, free, momentum, inverse, mass)
            excess = np.abs(holding) / limit[held_joints]
            worst = int(np.argmax(excess))
            if excess[worst] > 1.0:  # past its static friction: it slides, pushed the way it was held
                joint = held_joints[worst]
                impulse[joint] = math.copysign(limit[joint], holding[worst])
                stick[joint], slide[joint] = False, True
                continue
            impulse[held_joints] = holding
        velocity = free + inverse @ impulse
        reversing = slide & (velocity * impulse > 0.0)  # friction would drive it: it stops first
        if not reversing.any():
            return impulse
        stick |= reversing
        slide &= ~reversing
    return impulse


def _held_impulses(held: np.ndarray, others: np.ndarray, impulse: np.ndarray, free: np.ndarray,
                   momentum: np.ndarray, inverse: np.ndarray, mass: np.ndarray) -> np.ndarray:
    """The impulses that bring the ``held`` joints to rest, the ``others`` taking ``impulse``: from
    M v = M free + p with v_held = 0, through the smaller of the two linear systems."""
    if others.size <= held.size:  # v_others = M_oo^-1 (M free + p)_o, then p_held = M_ho v_o - (M free)_h
        if others.size == 1:  # one joint slides: a division
            moving = (momentum[others] + impulse[others]) / mass[others, others]
        else:
            block = mass[others[:, None], others]
            moving = np.linalg.solve(block, momentum[others] + impulse[others]) if others.size else others
        return mass[held[:, None], others] @ moving - momentum[held]
    # else (M^-1)_hh p_h = -(free + M^-1_ho p_o)_h
    rest = free[held] + inverse[held[:, None], others] @ impulse[others]
    return -np.linalg.solve(inverse[held[:, None], held], rest)
