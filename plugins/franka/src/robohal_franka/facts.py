"""Published Franka facts the simulator and the URDF files are built from.

Kinematics: Craig's modified DH parameters from Franka's robot specifications
(the same table for FR3 and Panda). Limits: FR3 joint ranges from Franka's
published FR3 description (franka_description's FR3 URDF, the same figures as
the FCI documentation's ``control-parameters-joint-fr3.csv`` table), its rates
and Cartesian limits from the FCI documentation ("Control Interface
Specification and Robot Limits", Limits for Franka Research 3); Panda (FER)
from the same documentation's FER tables. Link inertials: franka_description
(see :data:`FR3_LINKS`); the drives' reflected inertia and friction: published
identifications (see :data:`FR3_DRIVES`, :data:`PANDA_DRIVES`).
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



@dataclass(frozen=True)
class Inertial:
    """One link's rigid body in its own (modified-DH) frame: mass (kg), centre of mass (m) and
    inertia about it (kg m^2: xx, xy, xz, yy, yz, zz)."""

    mass: float
    com: tuple[float, float, float]
    inertia: tuple[float, float, float, float, float, float]


# franka_description 1.0.1 (Franka Robotics, Apache-2.0), robots/fr3/inertials.yaml: link0..link7.
# Its joints (robots/fr3/kinematics.yaml: joint1 z 0.333; joint2 roll -pi/2; joint3 y -0.316, roll
# pi/2; joint4 x 0.0825, roll pi/2; joint5 x -0.0825, y 0.384, roll -pi/2; joint6 roll pi/2; joint7
# x 0.088, roll pi/2; the flange z 0.107) are DH_ROWS' frames, so the figures apply as they stand.
# The flange (link8) carries no mass there, nor here.
FR3_LINKS: tuple[Inertial, ...] = (
    Inertial(2.3966, (-0.0172, 0.0004, 0.0745), (0.0090, 0.0, 0.0020, 0.0115, 0.0, 0.0085)),
    Inertial(2.9274653454, (0.0000004128, -0.0181251324, -0.0386035970),
             (0.023927316485107913, 1.3317903455714081e-05, -0.00011404774918616684,
              0.0224821613275756, -0.0019950320628240115, 0.006350098258530016)),
    Inertial(2.9355370338, (0.0031828864, -0.0743221644, 0.0088146084),
             (0.041938946257609425, 0.00020257331521090626, 0.004077784227179924,
              0.02514514885014724, -0.0042252158006570156, 0.06170214472888839)),
    Inertial(2.2449013699, (0.0407015686, -0.0048200565, -0.0289730823),
             (0.02410142547240885, 0.002404694559042109, -0.002856269270114313,
              0.01974053266708178, -0.002104212683891874, 0.019044494482244823)),
    Inertial(2.6155955791, (-0.0459100965, 0.0630492960, -0.0085187868),
             (0.03452998321913202, 0.01322552265982813, 0.01015142998484113,
              0.028881621933049058, -0.0009762833870704552, 0.04125471171146641)),
    Inertial(2.3271207594, (-0.0016039605, 0.0292536262, -0.0972965990),
             (0.051610278463662895, -0.005715173387783472, -0.0035673167625872135,
              0.04787729713371481, 0.010673985108535986, 0.016423625579357254)),
    Inertial(1.8170376524, (0.0597131221, -0.0410294666, -0.0101692726),
             (0.005412333594383447, 0.006193456360285834, 0.0014219289306117652,
              0.014058329545509979, -0.0013140753741120031, 0.016080817924212554)),
    Inertial(0.6271432862, (0.0045225817, 0.0086261921, -0.0161633251),
             (0.00021092389150104718, -2.433299114461931e-05, 4.564480393778983e-05,
              0.00017718568002411474, 8.744070223226438e-05, 5.993190599659971e-05)),
)

# franka_description 1.0.1, robots/fer/inertials.yaml (the Panda, "FER"): link0..link7, in the
# same DH frames (robots/fer/kinematics.yaml has the FR3's joint origins).
PANDA_LINKS: tuple[Inertial, ...] = (
    Inertial(2.3966, (-0.0172, 0.0004, 0.0745), (0.0090, 0.0, 0.0020, 0.0115, 0.0, 0.0085)),
    Inertial(2.7907, (0.00033, -0.02204, -0.04762),
             (0.01564782655, 0.00000531236, -0.00003676721, 0.01439883526, -0.00248480843, 0.00500443991)),
    Inertial(2.5420, (0.00038, -0.09211, 0.01908),
             (0.01662427728, 0.00003086077, 0.00000835940, 0.00462501261, 0.00355899830, 0.01545124526)),
    Inertial(2.2513, (0.05152, 0.01696, -0.02971),
             (0.00631741992, 0.00097309955, 0.00292525834, 0.00866285493, 0.00093469224, 0.00657804051)),
    Inertial(2.2037, (-0.05113, 0.05825, 0.01698),
             (0.00784585566, -0.00339591957, 0.00158704074, 0.00649543136, -0.00181477884, 0.01003079917)),
    Inertial(2.2855, (-0.00005, 0.03730, -0.09280),
             (0.02297014781, -0.00000949345, -0.00002063156, 0.02095060919, 0.00382345782, 0.00430606551)),
    Inertial(1.353, (0.06572, -0.00371, 0.00153),
             (0.00087964522, -0.00021487814, -0.00011911662, 0.00277796968, 0.00001274322, 0.00286701969)),
    Inertial(0.35973, (0.00089, -0.00044, 0.05491),
             (0.00019541063, 0.00000165231, 0.00000148826, 0.00019210361, -0.00000131132, 0.00017936256)),
)


@dataclass(frozen=True)
class Drives:
    """What a joint's drive adds to the links' rigid bodies as a torque-controlled client feels it:
    the reflected inertia (kg m^2, on the joint axis), viscous (Nm s/rad) and Coulomb (Nm) friction,
    and the sigmoid friction of Gaz et al. 2019, tau_f(dq) = phi1 / (1 + exp(-phi2 (dq + phi3)))
    - phi1 / (1 + exp(-phi2 phi3)) (Nm; None: not part of the model)."""

    armature: tuple[float, ...]
    viscous: tuple[float, ...]
    coulomb: tuple[float, ...]
    sigmoid: tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]] | None = None
    source: str = ""


# An FR3 identified in torque control: MuJoCo Menagerie's franka_fr3/fr3.xml (Google DeepMind,
# Apache-2.0; its CHANGELOG, 2025-04-25: "Update armature, damping, friction parameters, identified
# in torque control"): armature 0.195 on joints 1-4 and 0.074 on 5-7, damping 0.21 on every joint,
# frictionloss (Coulomb) 1.137 on joints 1-4, then 0.763, 0.44, 0.248.
FR3_DRIVES = Drives(
    armature=(0.195, 0.195, 0.195, 0.195, 0.074, 0.074, 0.074),
    viscous=(0.21,) * 7,
    coulomb=(1.137, 1.137, 1.137, 1.137, 0.763, 0.44, 0.248),
    source="MuJoCo Menagerie franka_fr3 (identified in torque control, 2025-04-25)",
)

# A Panda identified through its link-side torque sensors: C. Gaz, M. Cognetti, A. Oliva,
# P. Robuffo Giordano, A. De Luca, "Dynamic Identification of the Franka Emika Panda Robot With
# Retrieval of Feasible Parameters Using Penalty-Based Optimization", IEEE RA-L 4(4), 2019: the
# friction parameters phi1, phi2, phi3 per joint (as the authors publish them with their model,
# FrankaEmikaPandaDynModel). It gives no reflected inertia; the FR3's is used (our choice: the two
# arms' drives are of one size, 87/12 Nm), without which a 1 kHz client's damping would make
# the light wrist joints unstable, as on no real arm.
PANDA_DRIVES = Drives(
    armature=FR3_DRIVES.armature,
    viscous=(0.0,) * 7,
    coulomb=(0.0,) * 7,
    sigmoid=((0.54615, 0.87224, 0.64068, 1.2794, 0.83904, 0.30301, 0.56489),
             (5.1181, 9.0657, 10.136, 5.5903, 8.3469, 17.133, 10.336),
             (0.039533, 0.025882, -0.04607, 0.036194, 0.026226, -0.021047, 0.0035526)),
    source="Gaz et al., IEEE RA-L 2019 (friction); the FR3's reflected inertia",
)


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
    links: tuple[Inertial, ...] = FR3_LINKS
    drives: Drives = FR3_DRIVES


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
    links=FR3_LINKS,
    drives=FR3_DRIVES,
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
    links=PANDA_LINKS,
    drives=PANDA_DRIVES,
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
