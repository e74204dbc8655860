"""The robot's own joint motion generator behind libfranka's asynchronous position control.

libfranka's ``AsyncPositionControlHandler`` (``Robot::startAsyncJointPositionControl``) sends a
Move with ``use_async_motion_generator`` and the client's maximum joint velocities, then writes
joint position *targets* at its own rate (libfranka's example: 50 Hz, each 0.25 rad away): the
robot plans its own way to the newest one and reports that motion as ``q_d``/``dq_d``. The
client's target feedback (``getTargetFeedback``) is computed from them: reached when
``|q_d - target| < goal_tolerance`` and ``|dq_d| < 0.01 rad/s`` (libfranka's
async_position_control_handler.cpp). Ending the motion (``stopControl``) sends a command with
``motion_finished`` whose positions are all zero (the same file): they are not a target.

How the robot plans is not published. Our model: a time-optimal, jerk-limited profile (ruckig,
the online generator franky uses on top of libfranka) from the current desired state to the
newest target, within the client's velocities (the arm's rated ones where it gives none or more)
and the arm's acceleration and jerk limits with a margin, replanned whenever a target arrives;
``motion_finished`` brakes to rest the same way.
"""

from __future__ import annotations

import numpy as np
from ruckig import ControlInterface, InputParameter, OutputParameter, Result, Ruckig

from .facts import ArmFacts

PERIOD = 0.001
#: share of the arm's acceleration and jerk limits the planner uses (our choice: the robot's own
#: profile must pass its own finite-difference checks after round-off)
MARGIN = 0.95


class AsyncJointMotion:
    """One asynchronous joint position motion, stepped once per robot cycle."""

    def __init__(self, arm: ArmFacts, q_d: np.ndarray, maximum_velocities) -> None:
        rated = np.array(arm.velocity)
        asked = np.asarray(maximum_velocities, dtype=np.float64) if maximum_velocities is not None else rated
        # no (or a meaningless) velocity from the client: the arm's rated one, as libfranka documents
        usable = np.isfinite(asked) & (asked > 0)
        self.maximum_velocities = np.where(usable, np.minimum(asked, rated), rated)
        self.lower, self.upper = np.array(arm.lower), np.array(arm.upper)
        self._ruckig = Ruckig(7, PERIOD)
        self._input = InputParameter(7)
        self._output = OutputParameter(7)
        self._input.current_position = list(q_d)
        self._input.current_velocity = [0.0] * 7
        self._input.current_acceleration = [0.0] * 7
        self._input.max_velocity = list(self.maximum_velocities)
        self._input.max_acceleration = list(np.array(arm.acceleration) * MARGIN)
        self._input.max_jerk = list(np.array(arm.jerk) * MARGIN)
        self._moving = False
        self.stopping = False

    def target(self, q: np.ndarray) -> bool:
        """Plan toward ``q`` from the current desired state; False (nothing changes) for a target
        the arm cannot hold: not finite, or outside the joint ranges."""
        if not np.isfinite(q).all() or (q < self.lower).any() or (q > self.upper).any():
            return False
        self._input.control_interface = ControlInterface.Position
        self._input.target_position = list(q)
        self._input.target_velocity = [0.0] * 7
        self._input.target_acceleration = [0.0] * 7
        self._moving = True
        return True

    def stop(self) -> None:
        """Brake to rest where the current motion allows."""
        self.stopping = True
        self._input.control_interface = ControlInterface.Velocity
        self._input.target_velocity = [0.0] * 7
        self._input.target_acceleration = [0.0] * 7
        self._moving = True

    def step(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """The next cycle's desired position, velocity and acceleration, and whether the arm is at
        rest on its target (or, stopping, at rest). ValueError when the planner fails."""
        inp = self._input
        if not self._moving:
            q = np.array(inp.current_position)
            return q, np.zeros(7), np.zeros(7), True
        result = self._ruckig.update(inp, self._output)
        if result not in (Result.Working, Result.Finished):
            raise ValueError(f"the robot's planner failed ({result})")
        out = self._output
        q, dq, ddq = np.array(out.new_position), np.array(out.new_velocity), np.array(out.new_acceleration)
        out.pass_to_input(inp)
        done = result == Result.Finished
        if done:
            self._moving = False
        return q, dq, ddq, done
