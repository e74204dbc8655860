"""The SO-101's tasks of ``robohal demo``, on the simulated servo bus: an upright square, and
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
from robohal.cli.demo import polygon_through_ik
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


def square(run) -> None:
    """A 4 cm square upright in the arm's own plane (the jaw pointing down all the way): the
    shoulder, elbow and wrist draw it through the model's IK, the pan stays. With the jaw held
    down, the wrist's limits leave a small window: a 6 cm square leaves it."""
    with connect(run.uri) as robot:
        run.attach(robot)
        robot.move_joints(START, speed=0.5)
        model = robot.model
        start = np.array(START)
        poses = model.joint_poses(start)
        inward = poses[1][:3, 3] - poses[3][:3, 3]
        inward[2] = 0.0
        inward /= np.linalg.norm(inward)
        up = np.array([0.0, 0.0, 1.0])
        # 2.5 cm up and 1 cm out from the start: inside that window with a centimetre to spare
        corner = model.forward(start)[:3, 3] + 0.025 * up - 0.01 * inward
        side = 0.04
        corners = np.array([corner, corner + side * inward, corner + side * (inward + up), corner + side * up, corner])
        polygon_through_ik(robot, corners, speed=0.05, run=run)
        run.info.update(robot.state.info)
