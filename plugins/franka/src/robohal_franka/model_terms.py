"""The arm's dynamics at one state, from the robot's own model, as robohal's torque motions take
them (:class:`robohal.motion.torque.ModelTerms`).

pylibfranka's ``Model`` (``robot.load_model()``, which libfranka builds from the description the
robot serves) computes each term from a ``RobotState``; the stubs' ``Model`` does the same from
the simulated arm's description. Each term is computed when a motion first asks for it in a cycle:
an impedance needs the Coriolis torques every cycle, the mass matrix only at its start and while
braking, the gravity torques never (the robot compensates gravity itself).
"""

from __future__ import annotations

from typing import Any

import numpy as np

DOF = 7


class RobotModelTerms:
    """The terms of ``model`` (pylibfranka's ``Model``, or the stubs') at ``state`` (its ``RobotState``)."""

    __slots__ = ("_coriolis", "_gravity", "_mass", "_model", "_state")

    def __init__(self, model: Any, state: Any) -> None:
        self._model = model
        self._state = state
        self._coriolis: np.ndarray | None = None
        self._gravity: np.ndarray | None = None
        self._mass: np.ndarray | None = None

    def coriolis(self) -> np.ndarray:
        if self._coriolis is None:
            self._coriolis = np.array(self._model.coriolis(self._state), dtype=np.float64)
        return self._coriolis

    def gravity(self) -> np.ndarray:
        if self._gravity is None:
            self._gravity = np.array(self._model.gravity(self._state), dtype=np.float64)
        return self._gravity

    def mass(self) -> np.ndarray:
        if self._mass is None:  # libfranka's matrices are column-major (and this one is symmetric)
            self._mass = np.array(self._model.mass(self._state), dtype=np.float64).reshape(DOF, DOF, order="F")
        return self._mass
