"""Robot models registered by robohal_arduino_planar: ``arduino.planar2``, and the bundled arm
files' ``arm.mearm`` and ``arm.braccio`` (:mod:`.arms`).

A desk-top two-link arm on two hobby servos: both joints turn in the xy plane,
angles measured counter-clockwise, 0 rad = the servo's centre (1500 us). The
defaults fit a typical kit: 0.10 m + 0.08 m links, +-90 deg per joint (the
1000-2000 us pulse range of a hobby servo spans about 180 deg), a modest
180 deg/s. Every value is a factory option, in SI units.
"""

from __future__ import annotations

import math

from robohal import ModelSpec
from robohal.kinematics import JointLimits, PlanarTwoLink

DEFAULT_L1 = 0.10  # m, shoulder -> elbow
DEFAULT_L2 = 0.08  # m, elbow -> pen/tip
DEFAULT_RANGE = math.radians(90.0)  # +- per joint
DEFAULT_SPEED = math.radians(180.0)  # rad/s
# Servos reach full speed in about 0.2 s and full acceleration in about 0.05 s.
ACCELERATION_TIME = 0.2
JERK_TIME = 0.05


def planar2(
    l1: float = DEFAULT_L1,
    l2: float = DEFAULT_L2,
    lower: tuple[float, float] = (-DEFAULT_RANGE, -DEFAULT_RANGE),
    upper: tuple[float, float] = (DEFAULT_RANGE, DEFAULT_RANGE),
    speed: float = DEFAULT_SPEED,
) -> PlanarTwoLink:
    """The servo arm: link lengths (m), joint ranges (rad) and top joint speed (rad/s)."""
    acceleration = speed / ACCELERATION_TIME
    limits = JointLimits(lower=list(lower), upper=list(upper), velocity=[speed, speed],
                         acceleration=[acceleration] * 2, jerk=[acceleration / JERK_TIME] * 2)
    return PlanarTwoLink(l1, l2, limits)


def model_specs() -> list[ModelSpec]:
    """The planar arm, and the models of the bundled arm files (arm.mearm, arm.braccio) that no
    user's arm file of the same name stands in for."""
    from robohal.plugins.arm_files import arm_model_specs

    from .arms import ARMS

    return [
        *arm_model_specs([ARMS]),
        ModelSpec("arduino.planar2", factory=planar2, dof=2,
                  description="Two-servo planar arm, 0.10 m + 0.08 m links, +-90 deg joints, 180 deg/s",
                  tags=("planar", "hobby", "servo")),
    ]
