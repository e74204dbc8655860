"""The Franka task of ``robohal demo``: the FR3 follows a Cartesian circle through differential
IK at 1 kHz, over the real pylibfranka."""

from __future__ import annotations

import numpy as np
from robohal import connect
from robohal.motion.cartesian import CartesianPath
from robohal.motion.trajectory import DoubleS

from . import DEFAULT_MODEL


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

