"""The robot model: a KUKA KR6 R700 sixx, as an OPW arm.

Imported only when robohal builds the model (``__init__`` names it by reference).
"""

from __future__ import annotations

import numpy as np
from robohal import JointLimits
from robohal.kinematics import OPW


def kr6_r700_sixx() -> OPW:
    """KUKA KR6 R700 sixx as an OPW arm.

    KUKA counts joints 1, 4 and 6 the other way round from the OPW convention
    and its joint 2 zero points forward, not up: hence the signs and the offset.
    Limits and speeds from KUKA's data sheet (degrees, deg/s).
    """
    limits = JointLimits.from_degrees(
        lower=[-170.0, -190.0, -120.0, -185.0, -120.0, -350.0],
        upper=[170.0, 45.0, 156.0, 185.0, 120.0, 350.0],
        velocity=[360.0, 300.0, 360.0, 381.0, 388.0, 615.0],
    )
    return OPW(
        a1=0.025, a2=-0.035, b=0.0, c1=0.400, c2=0.315, c3=0.365, c4=0.080,
        offsets=[0.0, -np.pi / 2, 0.0, 0.0, 0.0, 0.0],
        signs=[-1, 1, 1, -1, 1, -1],
        limits=limits,
    )
