"""The SO-101's tasks of ``robohal demo``, on the simulated servo bus: a wave of every joint, and
the pick and place (the core's, :mod:`robohal.cli.pick_place`) with the jaw closing on a 3 cm part.

The SO-101 is five joints: it holds the jaw pointing straight down (its wrist roll axis
vertical) and moves it along straight lines in the plane its shoulder, elbow and wrist turn in,
where that orientation stays reachable. The simulated part is between the jaws whenever they
close (``sim_object``): the jaw stalls on it, and the stall protection holds it at the arm
file's hold torque.
"""

from __future__ import annotations

import numpy as np
from robohal import connect, get_model
from robohal.cli.pick_place import PickPlace

from . import DEFAULT_MODEL, SIM_TARGET

PART_WIDTH = 0.03  # m
#: the jaw pointing down, 22 cm in front of the base, 4 cm above it (its roll axis vertical)
START = (0.1413, 0.1313, 0.3496, 1.0899, -1.9862)
PLACE_SHIFT = 0.07  # m towards the base, in the arm's plane
URI = f"{SIM_TARGET}&sim_object={PART_WIDTH}"


def where() -> tuple[str, str]:
    return SIM_TARGET, "six STS3215 on the simulated servo bus"


def pick_place() -> PickPlace:
    model = get_model(DEFAULT_MODEL)
    start = np.array(START)
    pick = model.forward(start)[:3, 3]
    poses = model.joint_poses(start)
    inward = poses[1][:3, 3] - poses[3][:3, 3]  # from the wrist back to the shoulder, level
    inward[2] = 0.0
    place = pick + PLACE_SHIFT * inward / np.linalg.norm(inward)
    return PickPlace(uri=URI, pick=tuple(pick), place=tuple(place), width=PART_WIDTH, approach=(0.0, 0.0, 0.05),
                     epsilon=0.005, start=START, speed=0.1,
                     description="pick and place with the SO-101's jaw on the simulated servo bus")


def wave(run) -> None:
    """Every joint in turn, then home: the joints' tracking on the simulated servos."""
    with connect(run.uri) as robot:
        run.attach(robot)
        home = robot.commanded.copy()
        for joint in range(robot.model.dof):
            target = home.copy()
            target[joint] += 0.4 if home[joint] <= robot.model.limits.centre[joint] else -0.4
            run.results.append(robot.move_joints(target, speed=0.5))
            run.results.append(robot.move_joints(home, speed=0.5))
        run.info.update(robot.state.info)
