"""The Franka tasks of ``robohal demo``: the FR3 follows a Cartesian circle through differential
IK at 1 kHz, over the real pylibfranka; and it picks and places a part with the Franka Hand,
through the real ``pylibfranka.Gripper``."""

from __future__ import annotations

import numpy as np
from robohal import connect, get_model
from robohal.cli.pick_place import PickPlace
from robohal.motion.cartesian import CartesianPath
from robohal.motion.trajectory import DoubleS

from . import DEFAULT_MODEL
from .facts import READY_Q

PART_WIDTH = 0.03  # m: the simulated part between the fingers (sim_object)


def where() -> tuple[str, str]:
    return f"franka://sim?model={DEFAULT_MODEL}", "a Cartesian circle, differential IK at 1 kHz"


def cartesian_circle(run) -> None:
    with connect(run.uri) as robot:
        run.attach(robot)
        start = robot.model.forward(robot.backend.commanded)
        # a 6 cm circle in a tilted plane, timed by a jerk-limited profile: the path is
        # smooth, so the tracking error shows the IK, not corners the limits must round
        profile = DoubleS(0.4, 0.4, 1.0)  # of the turn fraction: about 4 s
        times = np.linspace(0.0, profile.duration, 401)
        turn = 2 * np.pi * profile.sample(times)[0]
        radius = 0.06
        offsets = radius * np.stack([np.cos(turn) - 1.0, np.sin(turn), 0.5 * np.sin(turn)], -1)
        poses = np.repeat(start[None], len(times), axis=0)
        poses[:, :3, 3] += offsets
        run.results.append(robot.run(CartesianPath(poses, times + 0.2)))
        run.ideal = poses[:, :3, 3]
        run.info.update(robot.state.info)



def pick_place() -> PickPlace:
    """A part 3 cm wide, 15 cm below and to the right of the ready pose's flange, put down as
    far to the left: a reach the FR3 covers with its flange kept pointing down."""
    ready = get_model(DEFAULT_MODEL).forward(np.asarray(READY_Q))[:3, 3]
    return PickPlace(
        uri=f"franka://sim?model={DEFAULT_MODEL}&sim_object={PART_WIDTH}",
        pick=tuple(ready + np.array([0.05, -0.15, -0.15])), place=tuple(ready + np.array([0.05, 0.15, -0.15])),
        width=PART_WIDTH, approach=(0.0, 0.0, 0.08), start=READY_Q, speed=0.2,
        description="pick and place with the Franka Hand, through pylibfranka.Gripper",
    )
