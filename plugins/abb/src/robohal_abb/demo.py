"""The ABB task of ``robohal demo``: the IRB 1410 follows a straight line over EGM, through IK."""

from __future__ import annotations

import numpy as np
from robohal import connect

from . import DEFAULT_MODEL


def where() -> tuple[str, str]:
    return f"abb-egm://sim?model={DEFAULT_MODEL}", "a straight line over EGM through IK"


def straight_line(run) -> None:
    with connect(run.uri) as robot:
        run.attach(robot)
        robot.move_joints(np.radians([0.0, 10.0, 20.0, 0.0, 40.0, 0.0]), speed=0.5)
        start = robot.model.forward(robot.backend.commanded)
        end = start.copy()
        end[:3, 3] += [0.0, 0.30, -0.10]
        run.results.append(robot.move_linear(end, speed=0.25))
        run.ideal = np.stack([start[:3, 3], end[:3, 3]])
        run.info.update(robot.state.info)

