"""Robot models registered by robohal_abb: ABB six-axis arms as OPW models.

Every model reports ABB's ``tool0`` pose (metres) and takes joints in the
controller's convention (what EGM and RAPID ``jointtarget`` carry, in radians).

OPW parameters: the sets used by public OPW solvers and ROS-Industrial support
packages (see shared research abb-egm.md). Joint ranges and axis speeds: ABB
product specifications (datasheet "working range" and "maximum speed" tables),
checked against the ROS-Industrial support packages' URDFs for the same variant.
Where the two disagree the narrower range and the lower speed are kept (IRB 1200
axis 2, IRB 1300 axis 3 and speeds, IRB 1600 axis 2), except on the IRB 2600: ROS
mirrors its axis 2 (-155/+95, against every other ABB arm there) and repeats that
-155 as the lower end of axis 3 (datasheet -180). The IRB 1600 speeds are those of
the 10 kg variant. The IRB 1410 has no ROS-Industrial model to compare.
No acceleration or jerk limits are published; :meth:`JointLimits.from_degrees`
derives conservative ones from the speeds.

On parallelogram robots (IRB 1410, and the "J23 coupled" IRB 2400) the
controller measures axis 3 from the horizontal: the model is the OPW arm
wrapped in :class:`~robohal.kinematics.Parallelogram` (driven J2, coupled J3,
scaling 1). The datasheet's axis-3 range is the geometric angle (j3 - j2); it
is checked on the inner model by every inverse, while the controller's axis 3
gets the box it implies. The coupled j3 - j2 range is the model's
``linkage_limits``: backends check every setpoint against it, and the
differential IK keeps its goals inside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from robohal import ModelSpec
from robohal.errors import InvalidArgument
from robohal.kinematics import OPW, JointLimits, Kinematics, Parallelogram

J3_OFFSET = -math.pi / 2  # every ABB OPW set: the forearm is horizontal at j3 = 0


@dataclass(frozen=True)
class AbbArm:
    name: str
    description: str
    opw: tuple[float, float, float, float, float, float, float]  # a1, a2, b, c1, c2, c3, c4 (m)
    lower_deg: tuple[float, ...]
    upper_deg: tuple[float, ...]
    speed_deg: tuple[float, ...]  # deg/s
    coupled_j3: bool = False


ARMS = (
    AbbArm("irb2400", "ABB IRB 2400/10 (1.55 m, 10 kg); J3 coupled to J2 in the controller",
           (0.100, -0.135, 0.0, 0.615, 0.705, 0.755, 0.085),
           (-180, -100, -60, -200, -120, -400), (180, 110, 65, 200, 120, 400),
           (150, 150, 150, 360, 360, 450), coupled_j3=True),
    AbbArm("irb2600", "ABB IRB 2600-12/1.65",
           (0.150, -0.115, 0.0, 0.445, 0.700, 0.795, 0.085),
           (-180, -95, -180, -400, -120, -400), (180, 155, 75, 400, 120, 400),
           (175, 175, 175, 360, 360, 500)),
    AbbArm("irb4600_60", "ABB IRB 4600-60/2.05",
           (0.175, -0.175, 0.0, 0.495, 0.900, 0.960, 0.135),
           (-180, -90, -180, -400, -125, -400), (180, 150, 75, 400, 120, 400),
           (175, 175, 175, 250, 250, 360)),
    AbbArm("irb4600_40", "ABB IRB 4600-40/2.55",
           (0.175, -0.175, 0.0, 0.495, 1.095, 1.270, 0.135),
           (-180, -90, -180, -400, -125, -400), (180, 150, 75, 400, 120, 400),
           (175, 175, 175, 250, 250, 360)),
    AbbArm("irb120", "ABB IRB 120-3/0.58",
           (0.0, -0.070, 0.0, 0.290, 0.270, 0.302, 0.072),
           (-165, -110, -110, -160, -120, -400), (165, 110, 70, 160, 120, 400),
           (250, 250, 250, 320, 320, 420)),
    AbbArm("irb1200", "ABB IRB 1200-5/0.90",
           (0.0, -0.042, 0.0, 0.3991, 0.448, 0.451, 0.082),
           (-170, -100, -200, -270, -130, -400), (170, 130, 70, 270, 130, 400),
           (288, 240, 297, 400, 405, 600)),
    AbbArm("irb1600", "ABB IRB 1600-10/1.45",
           (0.150, 0.0, 0.0, 0.4865, 0.700, 0.600, 0.065),
           (-180, -90, -245, -200, -115, -400), (180, 120, 65, 200, 115, 400),
           (180, 180, 185, 385, 400, 460)),
    AbbArm("irb1300", "ABB IRB 1300-10/1.15",
           (0.150, -0.040, 0.0, 0.544, 0.575, 0.425, 0.090),
           (-180, -95, -210, -230, -130, -400), (180, 155, 65, 230, 130, 400),
           (230, 200, 260, 400, 400, 600)),
    AbbArm("irb140", "ABB IRB 140T-6/0.81",
           (0.070, 0.0, 0.0, 0.352, 0.360, 0.380, 0.065),
           (-180, -90, -230, -200, -115, -400), (180, 110, 50, 200, 115, 400),
           (250, 250, 260, 360, 360, 450)),
    AbbArm("irb1410", "ABB IRB 1410 (1.44 m, 5 kg); parallelogram: axis 3 from the horizontal",
           (0.150, -0.120, 0.0, 0.475, 0.600, 0.720, 0.085),
           (-170, -70, -65, -150, -115, -300), (170, 70, 70, 150, 115, 300),
           (120, 120, 120, 280, 280, 280), coupled_j3=True),
)


def build(arm: AbbArm, controller_joints: bool = True) -> Kinematics:
    """The arm's model. ``controller_joints=False`` gives the plain OPW arm in
    geometric joints (j3 measured from the upper arm) for coupled robots."""
    if not isinstance(controller_joints, (bool, np.bool_)):  # "no" would be truthy
        raise InvalidArgument(f"controller_joints must be True or False, got {controller_joints!r}")
    geometric = JointLimits.from_degrees(arm.lower_deg, arm.upper_deg, arm.speed_deg)
    opw = OPW(*arm.opw, offsets=(0.0, 0.0, J3_OFFSET, 0.0, 0.0, 0.0), limits=geometric)
    if not arm.coupled_j3 or not controller_joints:
        return opw
    # Controller axis 3 = geometric j3 + j2: the box of what the two ranges allow.
    lower = list(arm.lower_deg)
    upper = list(arm.upper_deg)
    lower[2] = arm.lower_deg[2] + arm.lower_deg[1]
    upper[2] = arm.upper_deg[2] + arm.upper_deg[1]
    controller = JointLimits.from_degrees(lower, upper, arm.speed_deg)
    return Parallelogram(opw, scaling=1.0, driven=1, coupled=2, limits=controller)


def _factory(arm: AbbArm):
    def factory(controller_joints: bool = True) -> Kinematics:
        return build(arm, controller_joints)

    factory.__name__ = f"abb_{arm.name}"
    factory.__doc__ = f"{arm.description}: tool0 pose in metres, joints in radians."
    return factory


def model_specs() -> list[ModelSpec]:
    return [
        ModelSpec(
            f"abb.{arm.name}",
            factory=_factory(arm),
            dof=6,
            description=arm.description,
            tags=("abb", "opw", "industrial") + (("parallelogram",) if arm.coupled_j3 else ()),
        )
        for arm in ARMS
    ]
