"""Published Franka facts the simulator and the URDF files are built from.

Kinematics: Craig's modified DH parameters from Franka's robot specifications
(the same table for FR3 and Panda). Limits: FR3 joint ranges from Franka's
published FR3 description (franka_description's FR3 URDF, the same figures as
the FCI documentation's ``control-parameters-joint-fr3.csv`` table), its rates
and Cartesian limits from the FCI documentation ("Control Interface
Specification and Robot Limits", Limits for Franka Research 3); Panda (FER)
from the same documentation's FER tables. Link masses and inertias are round
figures of the right order for a 7-DOF arm of this size: the simulator uses
them only to fill torque-related state fields.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from robohal.kinematics import JointLimits

PI = math.pi

# (a_{i-1} m, d_i m, alpha_{i-1} rad) per joint, Craig's modified convention.
DH_ROWS: tuple[tuple[float, float, float], ...] = (
    (0.0, 0.333, 0.0),
    (0.0, 0.0, -PI / 2),
    (0.0, 0.316, PI / 2),
    (0.0825, 0.0, PI / 2),
    (-0.0825, 0.384, -PI / 2),
    (0.0, 0.0, PI / 2),
    (0.088, 0.0, PI / 2),
)
FLANGE_D = 0.107  # joint 7 frame -> flange (link8), along z

#: kg: the payload both arms are rated for (Franka's FR3 and Panda data sheets: "payload 3 kg")
MAX_PAYLOAD = 3.0

# Round link masses (kg) and principal inertias (kg m^2), joints 1..7 and the flange.
LINK_MASSES = (4.0, 3.0, 3.0, 2.5, 2.5, 1.5, 0.7, 0.3)
LINK_INERTIAS = (0.03, 0.02, 0.02, 0.015, 0.015, 0.006, 0.002, 0.0005)


@dataclass(frozen=True)
class ArmFacts:
    """Limits of one arm type (rad, rad/s, rad/s^2, rad/s^3, Nm, Nm/s)."""

    name: str
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    velocity: tuple[float, ...]
    acceleration: tuple[float, ...]
    jerk: tuple[float, ...]
    torque: tuple[float, ...]
    torque_rate: float
    # The end-of-travel speed curve (rad/s^2, rad/s): toward a position limit a joint may move at
    # no more than sqrt(2 end_deceleration (limit - q)) - end_offset. None: a rectangular limit.
    end_deceleration: tuple[float, ...] | None = None
    end_offset: tuple[float, ...] | None = None
    # Cartesian limits (FCI documentation, "Cartesian-space limits"): the flange's translation
    # (m/s, m/s^2, m/s^3), rotation (rad/s, rad/s^2, rad/s^3) and elbow (rad/s, rad/s^2, rad/s^3).
    translation: tuple[float, float, float] = (1.7, 13.0, 6500.0)
    rotation: tuple[float, float, float] = (2.5, 25.0, 12500.0)
    elbow: tuple[float, float, float] = (2.175, 10.0, 5000.0)


FR3 = ArmFacts(
    name="fr3",
    # franka_description's FR3 URDF (the FCI table control-parameters-joint-fr3.csv agrees).
    # Another version of the FCI page lists wider ranges (J1 +-2.9007, J2 +-1.8361) that the
    # published robot description does not carry.
    lower=(-2.7437, -1.7837, -2.9007, -3.0421, -2.8065, 0.5445, -3.0159),
    upper=(2.7437, 1.7837, 2.9007, -0.1518, 2.8065, 4.5169, 3.0159),
    velocity=(2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26),
    acceleration=(10.0,) * 7,
    jerk=(5000.0,) * 7,
    torque=(87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0),
    torque_rate=1000.0,
    # The FCI documentation's position-based velocity limits (dq_max(q) curves: 2 d = 12, 5.17,
    # 7, 8, 34, 11, 34 and offsets 0.30-0.35 rad/s), applied at the ranges above. libfranka's
    # rate_limiting.h puts the curves' ends a few mrad outside those ranges (J1 2.7501): here
    # they end at the served URDF's ranges, so a client's own limits and ours agree.
    end_deceleration=(6.0, 2.585, 3.5, 4.0, 17.0, 5.5, 17.0),
    end_offset=(0.30, 0.20, 0.20, 0.30, 0.35, 0.35, 0.35),
    translation=(3.0, 9.0, 4500.0),
    rotation=(2.5, 17.0, 8500.0),
    elbow=(2.62, 10.0, 5000.0),
)

PANDA = ArmFacts(
    name="panda",
    lower=(-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973),
    upper=(2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973),
    velocity=(2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61),
    acceleration=(15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0),
    jerk=(7500.0, 3750.0, 5000.0, 6250.0, 7500.0, 10000.0, 10000.0),
    torque=(87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0),
    torque_rate=1000.0,
    translation=(1.7, 13.0, 6500.0),
    rotation=(2.5, 25.0, 12500.0),
    elbow=(2.175, 10.0, 5000.0),
)

ARMS = {"franka.fr3": FR3, "franka.panda": PANDA}

# The "ready" pose used by Franka's examples; the simulator starts there.
READY_Q = (0.0, -PI / 4, 0.0, -3 * PI / 4, 0.0, PI / 2, PI / 4)

# rad: joint 4 where the arm is fully stretched; the elbow's sign (elbow[1]) says on which side of
# it joint 4 is (FCI documentation, "q_elbow-flip", FR3 and FER alike).
ELBOW_FLIP = -0.467002423653011


def joint_limits(arm: ArmFacts) -> JointLimits:
    """The arm's joint limits as robohal models and guards use them."""
    return JointLimits(arm.lower, arm.upper, arm.velocity, arm.acceleration, arm.jerk,
                       arm.end_deceleration, arm.end_offset)


def arm_facts(model_name: str) -> ArmFacts:
    try:
        return ARMS[model_name]
    except KeyError:
        raise ValueError(f"no Franka arm named {model_name!r}; choose from {sorted(ARMS)}") from None


_A = np.array([row[0] for row in DH_ROWS])
_D = np.array([row[1] for row in DH_ROWS])
_CA = np.cos([row[2] for row in DH_ROWS])
_SA = np.sin([row[2] for row in DH_ROWS])
_FLANGE = np.eye(4)
_FLANGE[2, 3] = FLANGE_D


# Each modified-DH link is a constant part, RotX(alpha_{i-1}) TransX(a_{i-1}), then RotZ(q_i) TransZ(d_i).
_CONSTANT = np.zeros((7, 4, 4))
_CONSTANT[:, 0, 0], _CONSTANT[:, 0, 3] = 1.0, _A
_CONSTANT[:, 1, 1], _CONSTANT[:, 1, 2] = _CA, -_SA
_CONSTANT[:, 2, 1], _CONSTANT[:, 2, 2] = _SA, _CA
_CONSTANT[:, 3, 3] = 1.0
_TURN = np.zeros((7, 4, 4))
_TURN[:, 2, 2], _TURN[:, 2, 3], _TURN[:, 3, 3] = 1.0, _D, 1.0


def _links(q: np.ndarray) -> np.ndarray:
    turns = _TURN.copy()
    c, s = np.cos(q), np.sin(q)
    turns[:, 0, 0], turns[:, 0, 1], turns[:, 1, 0], turns[:, 1, 1] = c, -s, s, c
    return _CONSTANT @ turns


def dh_forward(q) -> np.ndarray:
    """Flange pose (4, 4) of the modified-DH chain at joints ``q`` (7,): the
    simulated robot's own forward kinematics (independent of any client model)."""
    links = _links(np.asarray(q, dtype=np.float64))
    pose = links[0]
    for link in links[1:]:
        pose = pose @ link
    return pose @ _FLANGE


def dh_pose_and_jacobian(q) -> tuple[np.ndarray, np.ndarray]:
    """Flange pose (4, 4) and geometric Jacobian (6, 7) in the base frame (rows: linear, then
    angular velocity) at joints ``q``: each joint turns about its own frame's z axis."""
    links = _links(np.asarray(q, dtype=np.float64))
    axes = np.empty((7, 3))
    origins = np.empty((7, 3))
    pose = links[0]
    axes[0], origins[0] = pose[:3, 2], pose[:3, 3]
    for i in range(1, 7):
        pose = pose @ links[i]
        axes[i], origins[i] = pose[:3, 2], pose[:3, 3]
    flange = pose @ _FLANGE
    r = flange[:3, 3] - origins
    jacobian = np.empty((6, 7))
    jacobian[0] = axes[:, 1] * r[:, 2] - axes[:, 2] * r[:, 1]  # axis x r, written out (np.cross is slow)
    jacobian[1] = axes[:, 2] * r[:, 0] - axes[:, 0] * r[:, 2]
    jacobian[2] = axes[:, 0] * r[:, 1] - axes[:, 1] * r[:, 0]
    jacobian[3:] = axes.T
    return flange, jacobian


# The Franka Hand. Travel: two fingers of 40 mm each (franka_description's hand: finger joints
# 0..0.04 m), so the opening runs 0..0.08 m. Force: 70 N continuous, 140 N at most (Franka Hand
# data sheet); the hand refuses more. Finger speed: 0.1 m/s at most on the opening (the figure
# libfranka-based tools such as frankx use as the hand's maximum speed).
HAND_MAX_WIDTH = 0.08
HAND_MAX_FORCE = 140.0
HAND_MAX_SPEED = 0.1
