"""Cartesian control on any joint-position backend.

:class:`CartesianBackend` wraps a connected (or connectable) :class:`Backend`
and a model: each :meth:`~CartesianBackend.cycle` takes a flange pose, turns it
into the next joint goal with one differential-IK cycle
(:class:`~robohal.kinematics.diffik.DifferentialIk`, inside the cycle's joint
box, so no setpoint breaks a position, velocity, acceleration or jerk limit)
and sends it through the backend's own cycle and guard.

The paths it follows are :class:`~robohal.motion.cartesian.CartesianPath` motions, which
run inside the backend's control loop.

    with CartesianBackend(robohal.connect("franka://sim").backend) as arm:
        pose = arm.pose
        pose[2, 3] += 0.05
        arm.move_linear(pose, duration=1.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import spatial
from .control.backend import Backend
from .errors import InvalidArgument
from .kinematics import Kinematics
from .kinematics.diffik import DifferentialIk, IkOptions
from .motion.cartesian import DEFAULT_OPTIONS, CartesianPath
from .motion.result import MotionResult
from .state import Array, RobotState


class CartesianBackend:
    """A pose per cycle on any joint-position backend (see the module docstring)."""

    def __init__(self, backend: Backend, model: Kinematics | None = None, options: IkOptions = DEFAULT_OPTIONS,
                 posture: ArrayLike | None = None) -> None:
        model = backend.model if model is None else model
        if model.dof != backend.model.dof:
            raise InvalidArgument(f"the model has {model.dof} joints, the backend's robot {backend.model.dof}")
        options.validate()
        self.backend = backend
        self.model = model
        self.options = options
        self.posture = None if posture is None else spatial.as_finite(posture, "posture")
        self._ik = DifferentialIk(model, options, backend.period, self.posture)
        self._in_sync = False

    # Lifecycle -----------------------------------------------------------------------

    @property
    def period(self) -> float:
        return self.backend.period

    @property
    def connected(self) -> bool:
        return self.backend.connected

    def connect(self) -> RobotState:
        state = self.backend.connect()
        self._in_sync = False
        return state

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> CartesianBackend:
        if not self.backend.connected:
            self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # State -------------------------------------------------------------------------------

    def read(self) -> RobotState:
        return self.backend.read()

    @property
    def pose(self) -> Array:
        """The flange pose of the measured joints."""
        return self.model.forward(self.backend.read().q)

    @property
    def commanded_pose(self) -> Array:
        """The flange pose of the last joint setpoint sent."""
        return self.model.forward(self.backend.commanded)

    @property
    def last_residual(self) -> float:
        """The weighted pose error (m) the last cycle left."""
        return self._ik.last_residual

    # Control -----------------------------------------------------------------------------

    def _sync(self) -> None:
        """Start the IK from the backend's last three setpoints (they may come from joint moves)."""
        commanded = self.backend.commanded
        if self._in_sync and np.array_equal(self._ik.history[2], commanded):
            return
        v, a = self.backend.guard.derivatives()
        dt = self.backend.period
        self._ik.reset(commanded)
        self._ik.history = [commanded - 2 * v * dt + a * dt**2, commanded - v * dt, commanded]
        self._in_sync = True

    def cycle(self, pose: ArrayLike) -> RobotState:
        """One control cycle toward flange ``pose`` (4, 4): one IK cycle, one joint setpoint."""
        target = spatial.as_pose(pose, "target pose")
        self._sync()
        q = self._ik.step(target)
        try:
            return self.backend.cycle(q)
        except BaseException:
            self._in_sync = False  # the IK moved on, the robot did not
            raise

    def run(self, motion: Any, *, wait: bool = True) -> MotionResult | None:
        self._in_sync = False
        return self.backend.run(motion, wait=wait)  # the executor adds the path's figures to its result

    def move_linear(self, pose: ArrayLike, duration: float | None = None, *, speed: float = 0.1,
                    angular_speed: float = 0.5, wait: bool = True) -> MotionResult | None:
        """A straight line of the flange to ``pose``, tracked in the control loop."""
        return self.run(CartesianPath(end=pose, duration=duration, speed=speed, angular_speed=angular_speed,
                                      options=self.options, posture=self.posture), wait=wait)

    def follow(self, poses: ArrayLike, times: ArrayLike, *, wait: bool = True) -> MotionResult | None:
        """Pass through flange ``poses`` (N, 4, 4) at ``times`` (s from now), tracked in the control loop."""
        return self.run(CartesianPath(poses, times, options=self.options, posture=self.posture), wait=wait)

    def wait(self, timeout: float | None = None) -> MotionResult | None:
        return self.backend.wait(timeout)

    def stop(self) -> None:
        self.backend.stop()
        self._in_sync = False

    def recover(self) -> RobotState:
        state = self.backend.recover()
        self._in_sync = False
        return state
