"""The ABB EGM HIL suite, run by `robohal hil` (see BackendSpec.hil_suite)."""

from __future__ import annotations

import numpy as np
from robohal import UnreachableError

#: the cup's orientation when it picks: tool z pointing down (a turn of pi about base y)
FACING_DOWN = np.array([[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]])


def move_over(robot, position, *, speed: float = 0.5):
    """Move (in joint space) until the flange, facing down, is at ``position`` (m, base frame)."""
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = FACING_DOWN, position
    solutions = robot.model.inverse_continuing(pose, robot.backend.commanded)
    if not len(solutions):
        raise UnreachableError(f"the flange cannot be at {list(position)} facing down: {solutions.reason}")
    return robot.move_joints(solutions[0], speed=speed)
