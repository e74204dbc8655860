"""The planar arm's task of ``robohal demo``: it draws a star through IK, on the real firmware in
simavr where the AVR toolchain is installed, else on the Python emulator of it."""

from __future__ import annotations

import numpy as np
from robohal import connect, get_model
from robohal.cli.demo import polygon_through_ik
from robohal.cli.pick_place import PickPlace

from . import DEFAULT_MODEL, EMULATOR_TARGET, SIMAVR_TARGET
from .firmware import toolchain_missing


def where() -> tuple[str, str]:
    if toolchain_missing() is None:
        return SIMAVR_TARGET, "the real firmware in simavr"
    return EMULATOR_TARGET, "the firmware emulator"


PART_WIDTH = 0.015  # m: a light part, well inside the claw's 40 mm opening


def pick_place() -> PickPlace:
    """The claw on the third servo (D6) carries a light part across the arm's reach, in the
    plane: the arm cannot leave it, so there is no way in from above."""
    uri, firmware = where()
    model = get_model(DEFAULT_MODEL)
    pick, place = (model.forward(np.radians(q))[:3, 3] for q in ([-20.0, 70.0], [30.0, 50.0]))
    return PickPlace(uri=uri, pick=tuple(pick), place=tuple(place), width=PART_WIDTH, approach=(0.0, 0.0, 0.0),
                     epsilon=0.002, start=tuple(np.radians([10.0, 60.0])), speed=0.05,
                     description=f"pick and place with the servo claw on D6, {firmware}")


def star(run) -> None:
    with connect(run.uri) as robot:
        run.attach(robot)
        _, outer = robot.model.reach
        robot.move_joints(np.radians([10.0, 60.0]), speed=0.5)  # elbow bent, inside the servos' +-90 deg
        centre = robot.model.forward(robot.backend.commanded)[:3, 3]
        radius = 0.1 * outer
        angles = np.linspace(0.0, 2 * np.pi, 6)[[0, 2, 4, 1, 3, 0]] + np.pi / 2  # a five-pointed star
        corners = centre + radius * np.stack([np.cos(angles), np.sin(angles), 0 * angles], -1)
        polygon_through_ik(robot, corners, speed=0.05, run=run)
        run.info.update(robot.state.info)



# The MeArm, from its arm file, on stock StandardFirmata ---------------------------------------------

MEARM_PART = 0.015  # m: a light part, half the MeArm claw's 30 mm opening (arms/mearm.toml)


def mearm_where() -> tuple[str, str]:
    from . import FIRMATA_TARGET

    return FIRMATA_TARGET, "a MeArm from its arm file, on a simulated board running stock StandardFirmata"


def mearm_triangle(run) -> None:
    """The claw's tip along a triangle in front of the arm, straight lines through the MeArm's IK."""
    with connect(mearm_where()[0]) as robot:
        run.attach(robot)
        robot.move_joints(np.radians([0.0, 10.0, -20.0]), speed=0.5)
        centre = robot.model.forward(robot.backend.commanded)[:3, 3]
        angles = np.radians([90.0, 210.0, 330.0, 90.0])
        corners = centre + 0.02 * np.stack([0 * angles, np.cos(angles), np.sin(angles)], -1)  # in the y-z plane
        polygon_through_ik(robot, corners, speed=0.03, run=run)
        run.info.update(robot.state.info)


def mearm_pick_place() -> PickPlace:
    """The MeArm's claw takes a light part from its right front and puts it down at its left front,
    in and out from 3 cm above each."""
    uri, firmware = mearm_where()
    model = get_model("arm.mearm")
    pick, place = (model.forward(np.radians(q))[:3, 3] for q in ([-30.0, 5.0, -35.0], [30.0, 5.0, -35.0]))
    return PickPlace(uri=uri, pick=tuple(pick), place=tuple(place), width=MEARM_PART, approach=(0.0, 0.0, 0.03),
                     epsilon=0.003, start=tuple(np.radians([0.0, 10.0, -20.0])), speed=0.05,
                     description=f"pick and place with the MeArm's claw: {firmware}")


# The Braccio, from its arm file, on the robohal firmware's channels ------------------------------

BRACCIO_PART = 0.02  # m: a light part, well inside the Braccio claw's 55 mm opening (arms/braccio.toml)
# Joints (deg) the Braccio works from: base ahead, the claw pitched level-forward by the shoulder,
# elbow and wrist (their sum is the claw's pitch, kept by every move: the flange keeps its
# orientation, and a 5-joint arm can keep one only in the plane its base points into).
BRACCIO_START = (0.0, 0.0, 75.0, 15.0, 0.0)
# Where the square is drawn around: the claw raised in front (a 6 cm square fits the joint limits
# there, found by sampling the model).
BRACCIO_SQUARE_AT = (0.0, 30.0, -60.0, 0.0, 0.0)


def braccio_where() -> tuple[str, str]:
    if toolchain_missing() is None:
        return "arduino-arm://sim?arm=braccio&firmware=simavr", "a Braccio from its arm file, the real firmware in simavr"
    return "arduino-arm://sim?arm=braccio&firmware=emulator", "a Braccio from its arm file, the firmware emulator"


def braccio_square(run) -> None:
    """The claw's tip along a square in the Braccio's vertical plane, straight lines through its IK,
    six servos streamed on the firmware's channels."""
    with connect(run.uri) as robot:
        run.attach(robot)
        robot.move_joints(np.radians(BRACCIO_SQUARE_AT), speed=0.5)
        centre = robot.model.forward(robot.backend.commanded)[:3, 3]
        offsets = 0.03 * np.array([[1, 0, 1], [-1, 0, 1], [-1, 0, -1], [1, 0, -1], [1, 0, 1]], dtype=float)
        polygon_through_ik(robot, centre + offsets, speed=0.03, run=run)
        run.info.update(robot.state.info)


def braccio_pick_place() -> PickPlace:
    """The Braccio's claw takes a light part out in front and sets it down nearer and higher, in
    and out from 3 cm above each: both in the plane its base points into, where its five joints
    keep the claw's pitch."""
    uri, firmware = braccio_where()
    model = get_model("arm.braccio")
    pick, place = (model.forward(np.radians(q))[:3, 3] for q in ([0.0, 10.0, 70.0, 10.0, 0.0],
                                                                 [0.0, -10.0, 80.0, 20.0, 0.0]))
    return PickPlace(uri=uri, pick=tuple(pick), place=tuple(place), width=BRACCIO_PART, approach=(0.0, 0.0, 0.03),
                     epsilon=0.004, start=tuple(np.radians(BRACCIO_START)), speed=0.05,
                     description=f"pick and place with the Braccio's claw: {firmware}")
