"""Robot models registered by robohal_franka: the FR3 and the Panda (FER).

Kinematics: Craig's modified DH table from Franka's robot specifications (shared
research franka-fci.md), flange 0.107 m past joint 7. ``hand=True`` reports the
Franka Hand's TCP instead: flange -> hand rotated -pi/4 about z, TCP 0.1034 m
further along z.

Limits:
* FR3: the joint ranges of Franka's published FR3 description (franka_description's
  URDF, the FCI table control-parameters-joint-fr3.csv agrees), the rates of the
  FCI documentation's FR3 table (dq_max, ddq_max 10 rad/s^2, dddq_max 5000
  rad/s^3) and its position-based velocity limits near the ends of travel
  (``JointLimits.velocity_bounds``). The tables live in ``facts.py``.
* Panda: the FER (Panda) joint-limit table of the same document.
"""

from __future__ import annotations

import math

import numpy as np
from robohal import ModelSpec, spatial
from robohal.errors import InvalidArgument
from robohal.kinematics.chain import DHChain

from .facts import FR3, PANDA, joint_limits

HALF_PI = math.pi / 2
A = (0.0, 0.0, 0.0, 0.0825, -0.0825, 0.0, 0.088)
D = (0.333, 0.0, 0.316, 0.0, 0.384, 0.0, 0.0)
ALPHA = (0.0, -HALF_PI, HALF_PI, HALF_PI, -HALF_PI, HALF_PI, HALF_PI)
FLANGE_OFFSET = 0.107  # m, joint 7 frame -> flange along z
HAND_ROTATION = -math.pi / 4  # flange -> hand, about z
HAND_TCP = 0.1034  # m, hand -> TCP along z

# The "ready" configuration Franka's examples start from.
READY = (0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2, math.pi / 4)

FR3_LIMITS = joint_limits(FR3)
PANDA_LIMITS = joint_limits(PANDA)


def flange_transform(hand: bool) -> np.ndarray:
    if not isinstance(hand, (bool, np.bool_)):  # "no" would be truthy
        raise InvalidArgument(f"hand must be True or False, got {hand!r}")
    flange = spatial.from_translation([0.0, 0.0, FLANGE_OFFSET])
    if hand:
        flange = flange @ spatial.rotation_z(HAND_ROTATION) @ spatial.from_translation([0.0, 0.0, HAND_TCP])
    return flange


def fr3(hand: bool = False) -> DHChain:
    """Franka Research 3: flange pose (or the Franka Hand's TCP with ``hand=True``)."""
    return DHChain(A, D, ALPHA, modified=True, flange=flange_transform(hand), limits=FR3_LIMITS)


def panda(hand: bool = False) -> DHChain:
    """Franka Emika Panda (FER): flange pose (or the Franka Hand's TCP with ``hand=True``)."""
    return DHChain(A, D, ALPHA, modified=True, flange=flange_transform(hand), limits=PANDA_LIMITS)


def model_specs() -> list[ModelSpec]:
    return [
        ModelSpec("franka.fr3", factory=fr3, dof=7,
                  description="Franka Research 3, 7 joints (modified DH); hand=True for the Franka Hand TCP",
                  tags=("franka", "redundant", "collaborative")),
        ModelSpec("franka.panda", factory=panda, dof=7,
                  description="Franka Emika Panda (FER), 7 joints (modified DH); hand=True for the Franka Hand TCP",
                  tags=("franka", "redundant", "collaborative")),
    ]
