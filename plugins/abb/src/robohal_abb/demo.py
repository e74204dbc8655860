"""The ABB tasks of ``robohal demo``: the IRB 1410 follows a straight line over EGM, through IK;
and it picks and places the simulated controller's part with its vacuum gripper, the signals
riding on EGM's RAPID data."""

from __future__ import annotations

import numpy as np
from robohal import connect, get_model
from robohal.cli.pick_place import PickPlace

from . import DEFAULT_MODEL
from .hil import FACING_DOWN
from .simulator import DEFAULT_PART


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



def pick_place() -> PickPlace:
    """The simulated controller's part (where it lies by default) carried 0.5 m along y, the
    suction cup facing down, in and out 10 cm straight up."""
    part, approach = np.array(DEFAULT_PART), np.array([0.0, 0.0, 0.10])
    above = np.eye(4)
    above[:3, :3], above[:3, 3] = FACING_DOWN, part + approach
    start = get_model(DEFAULT_MODEL).inverse(above)[0]
    return PickPlace(
        uri=f"abb-egm://sim?model={DEFAULT_MODEL}", pick=tuple(part), place=tuple(part - [0.0, 0.5, 0.0]),
        width=0.0, approach=tuple(approach), start=tuple(start), speed=0.25,
        description="pick and place with a vacuum gripper, I/O over EGM's RAPID data",
    )
