"""Published Franka facts the simulator and the URDF files are built from.

Kinematics: Craig's modified DH parameters from Franka's robot specifications
(the same table for FR3 and Panda). Limits: FR3 from Franka's current FCI
documentation table ("Robot and interface specifications", FR3), Panda (FER)
from the same documentation's Panda table. Link masses and inertias are round
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


FR3 = ArmFacts(
    name="fr3",
    lower=(-2.9007, -1.8361, -2.9007, -3.0770, -2.8763, 0.4398, -3.0508),
    upper=(2.9007, 1.8361, 2.9007, -0.1169, 2.8763, 4.6216, 3.0508),
    velocity=(2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26),
    acceleration=(10.0,) * 7,
    jerk=(5000.0,) * 7,
    torque=(87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0),
    torque_rate=1000.0,
    # The position-based velocity limits of the same FR3 table (its dq_max(q) curves: 2 d = 12,
    # 5.17, 7, 8, 34, 11, 34 and offsets 0.30-0.35 rad/s), applied at today's position limits.
    end_deceleration=(6.0, 2.585, 3.5, 4.0, 17.0, 5.5, 17.0),
    end_offset=(0.30, 0.20, 0.20, 0.30, 0.35, 0.35, 0.35),
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
)

ARMS = {"franka.fr3": FR3, "franka.panda": PANDA}

# The "ready" pose used by Franka's examples; the simulator starts there.
READY_Q = (0.0, -PI / 4, 0.0, -3 * PI / 4, 0.0, PI / 2, PI / 4)


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


def dh_forward(q) -> np.ndarray:
    """Flange pose (4, 4) of the modified-DH chain at joints ``q`` (7,): the
    simulated robot's own forward kinematics (independent of any client model)."""
    q = np.asarray(q, dtype=np.float64)
    ct, st = np.cos(q), np.sin(q)
    links = np.zeros((7, 4, 4))
    links[:, 0, 0], links[:, 0, 1], links[:, 0, 3] = ct, -st, _A
    links[:, 1, 0], links[:, 1, 1], links[:, 1, 2], links[:, 1, 3] = st * _CA, ct * _CA, -_SA, -_D * _SA
    links[:, 2, 0], links[:, 2, 1], links[:, 2, 2], links[:, 2, 3] = st * _SA, ct * _SA, _CA, _D * _CA
    links[:, 3, 3] = 1.0
    pose = links[0]
    for link in links[1:]:
        pose = pose @ link
    return pose @ _FLANGE
