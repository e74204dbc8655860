"""Robot models registered by robohal_feetech: ``so_arm.so101``, the SO-101 arm.

The SO-101 (TheRobotStudio and Hugging Face) is five STS3215 joints and a sixth that works the
gripper's jaw. The model is the five arm joints, from the base to the point between the jaws;
the jaw is the robot's gripper (:mod:`.gripper`). Its joint frames, axes and ranges are the
published ones of TheRobotStudio's SO-ARM100 repository (``Simulation/SO101/so101_new_calib.urdf``:
each joint's ``<origin>`` and ``<limit>``, and the ``gripperframe`` between the jaws as the tip).
In that description every joint is at 0 rad in the middle of its range, as LeRobot's
calibration centres it: a calibration file from LeRobot gives the same angles here.

The URDF's velocity (10 rad/s) is a placeholder; the speed here is the servo's: an STS3215 turns
60 deg in 0.192 s unloaded at 7.4 V (about 5.4 rad/s), and we keep the arm at 3 rad/s, where it
still has torque to carry itself (our choice). Accelerations are our choice too, as for every
servo arm: full speed in 0.2 s, full acceleration in 0.05 s.
"""

from __future__ import annotations

import math

import numpy as np
from robohal import ModelSpec, spatial
from robohal.kinematics import JointLimits
from robohal.kinematics.urdf import UrdfChain

NAME = "so_arm.so101"
ARM_JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
LINKS = ("shoulder", "upper_arm", "lower_arm", "wrist", "gripper", "gripperframe")
# so101_new_calib.urdf, joint by joint: <origin xyz rpy> in the parent link, and <limit lower upper>
_ORIGINS = (
    ((0.0207909, -0.0230745, 0.0948817), (-3.14159, 6.03684e-16, 1.5708)),
    ((-0.0303992, -0.0182778, -0.0542), (-1.5708, -1.5708, 0.0)),
    ((-0.11257, -0.028, 2.46331e-16), (-1.22818e-15, 5.75928e-16, 1.5708)),
    ((-0.1349, 0.0052, 1.65232e-16), (3.2474e-15, 2.86219e-15, -1.5708)),
    ((0.0, -0.0611, 0.0181), (1.5708, -9.38083e-08, 3.14159)),
)
_RANGES = ((-1.91986, 1.91986), (-1.74533, 1.74533), (-1.69, 1.69), (-1.65806, 1.65806), (-2.79253, 2.79253))
# the gripperframe fixed joint: the point between the jaws, in the gripper link
_TIP = ((-0.0079, -0.000218121, -0.0981274), (1.5708, 1.22465e-16, 1.5708))
#: the jaw's range (the URDF's gripper joint): closed a little past 0 rad, open to 100 deg
JAW_RANGE = (-0.174533, 1.74533)

SPEED = 3.0  # rad/s: see the module docstring
ACCELERATION_TIME = 0.2
JERK_TIME = 0.05


def so101(speed: float = SPEED) -> UrdfChain:
    """The SO-101's five arm joints (rad), base to the point between the jaws; ``speed`` in rad/s."""
    origins = np.array([spatial.pose_from_xyz_rpy(xyz, rpy) for xyz, rpy in _ORIGINS])
    acceleration = speed / ACCELERATION_TIME
    limits = JointLimits(lower=[low for low, _ in _RANGES], upper=[high for _, high in _RANGES],
                         velocity=[speed] * 5, acceleration=[acceleration] * 5,
                         jerk=[acceleration / JERK_TIME] * 5)
    tip = spatial.pose_from_xyz_rpy(*_TIP)
    return UrdfChain(origins, np.tile([0.0, 0.0, 1.0], (5, 1)), ["revolute"] * 5, tip, limits,
                     joint_names=ARM_JOINTS, link_names=LINKS)


def model_specs() -> list[ModelSpec]:
    return [
        ModelSpec(NAME, factory=so101, dof=5,
                  description="SO-101 arm (TheRobotStudio/Hugging Face): five STS3215 joints to the jaws,"
                              f" {math.degrees(SPEED):.0f} deg/s",
                  tags=("serial", "hobby", "servo", "feetech")),
    ]
