"""The robot's collision behaviour: the thresholds a client sets with ``setCollisionBehavior``
and what the robot makes of the external torques and wrench it estimates against them.

libfranka's robot.h (setCollisionBehavior): "Forces or torques between lower and upper threshold
are shown as contacts in the RobotState. Forces or torques above the upper threshold are
registered as collision and cause the robot to stop moving." robot_state.h: ``joint_contact`` /
``cartesian_contact`` turn to zero when the contact disappears; ``joint_collision`` /
``cartesian_collision`` stay set "until a reset command is sent" (automatic error recovery).
errors.h: ``joint_reflex`` when a torque threshold was passed, ``cartesian_reflex`` when a
Cartesian one was.

Our choices, where Franka publishes nothing: the nominal thresholds apply in every phase (the
acceleration-phase ones are stored; libfranka's four-argument overload, which robohal and most
examples use, sets both alike); a threshold of 0 watches nothing (the robot's defaults before a
client sets any are not published); the wrench is compared in the base frame, as the robot
reports it (``O_F_ext_hat_K``).
"""

from __future__ import annotations

import numpy as np

#: set_collision_behavior's 52 values on the wire: lower and upper torque thresholds for the
#: acceleration phase, then for the nominal phase (7 each); lower and upper force thresholds for
#: the acceleration phase, then for the nominal phase (6 each)
VALUES = 52
LOWER_TORQUE_NOMINAL = slice(14, 21)
UPPER_TORQUE_NOMINAL = slice(21, 28)
LOWER_FORCE_NOMINAL = slice(40, 46)
UPPER_FORCE_NOMINAL = slice(46, 52)


class CollisionBehavior:
    """The thresholds in force and the contact and collision flags they give."""

    def __init__(self) -> None:
        self.thresholds = np.zeros(VALUES)
        self.joint_contact = np.zeros(7)
        self.cartesian_contact = np.zeros(6)
        self.joint_collision = np.zeros(7)
        self.cartesian_collision = np.zeros(6)

    def set(self, values) -> None:
        """Store a client's thresholds as sent; one that is not a positive number watches nothing
        (our choice: what the robot answers to such a request is not published)."""
        self.thresholds = np.asarray(values, dtype=np.float64).reshape(VALUES)

    def observe(self, tau_ext: np.ndarray, wrench: np.ndarray) -> tuple[str, ...]:
        """Update the flags from this cycle's external torques (7, Nm) and wrench (6, N and Nm);
        the reflexes it calls for (``joint_reflex``, ``cartesian_reflex``), if any."""
        if not (tau_ext.any() or wrench.any()):  # nothing pushes: no contact (collisions stay)
            if self.joint_contact.any() or self.cartesian_contact.any():
                self.joint_contact, self.cartesian_contact = np.zeros(7), np.zeros(6)
            return ()
        t = self.thresholds
        torque, force = np.abs(tau_ext), np.abs(wrench)
        self.joint_contact = _above(torque, t[LOWER_TORQUE_NOMINAL])
        self.cartesian_contact = _above(force, t[LOWER_FORCE_NOMINAL])
        joint = _above(torque, t[UPPER_TORQUE_NOMINAL])
        cartesian = _above(force, t[UPPER_FORCE_NOMINAL])
        self.joint_collision = np.maximum(self.joint_collision, joint)
        self.cartesian_collision = np.maximum(self.cartesian_collision, cartesian)
        return (("joint_reflex",) if joint.any() else ()) + (("cartesian_reflex",) if cartesian.any() else ())

    def reset(self) -> None:
        """Automatic error recovery: the collision flags clear."""
        self.joint_collision = np.zeros(7)
        self.cartesian_collision = np.zeros(6)


def _above(values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # a NaN threshold compares False: it watches nothing
        return ((thresholds > 0.0) & (values > thresholds)).astype(np.float64)
