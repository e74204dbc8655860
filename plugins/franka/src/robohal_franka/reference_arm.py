"""A plain 7-DOF Kinematics of the simulated arm, from :mod:`.facts`.

The simulator's own geometry wrapped as a :class:`~robohal.kinematics.Kinematics`
(finite-difference Jacobian, numeric inverse). It lets the backend and its tests
run with any 7-DOF model; the registered ``franka.fr3``/``franka.panda`` models
are the ones users get.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from robohal.kinematics import Kinematics

from .facts import arm_facts, dh_forward, joint_limits


class ReferenceArm(Kinematics):
    dof = 7

    def __init__(self, model_name: str = "franka.fr3") -> None:
        arm = arm_facts(model_name)
        self.model_name = model_name
        self.limits = joint_limits(arm)

    def forward(self, q: ArrayLike) -> np.ndarray:
        q = self._joints(q)
        if q.ndim == 1:
            return dh_forward(q)
        return np.stack([dh_forward(row) for row in q.reshape(-1, 7)]).reshape(*q.shape[:-1], 4, 4)

    def __reduce__(self):
        return (ReferenceArm, (self.model_name,))
