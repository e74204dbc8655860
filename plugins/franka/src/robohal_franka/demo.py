"""The Franka tasks of ``robohal demo``: the FR3 follows a Cartesian circle through differential
IK at 1 kHz, over the real pylibfranka; it presses gently on the simulated plane under Cartesian
impedance (in torque control, its equilibrium streamed down and up as a policy would); and it
picks and places a part with the Franka Hand, through the real ``pylibfranka.Gripper``."""

from __future__ import annotations

import time

import numpy as np
from robohal import connect, get_model
from robohal.cli.pick_place import PickPlace
from robohal.motion.cartesian import CartesianPath
from robohal.motion.torque import CartesianImpedance
from robohal.motion.trajectory import DoubleS

from . import DEFAULT_MODEL
from .facts import READY_Q

PART_WIDTH = 0.03  # m: the simulated part between the fingers (sim_object)
# The press: a plane 4 cm under the flange at READY, as stiff as a wooden table top felt through a
# gripper (our choice); the flange starts 1 cm above it and the equilibrium goes PRESS_DEPTH under
# it and back up, at 50 Hz, on a 500 N/m spring: about 5 N at the deepest (friction in the joints holds some).
PLANE = 0.55  # m
PLANE_STIFFNESS = 3000.0  # N/m
PRESS_DEPTH = 0.015  # m
PRESS_STIFFNESS = (500.0, 50.0)  # N/m, Nm/rad
STREAM_PERIOD = 0.02  # s


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


def press_where() -> tuple[str, str]:
    return (f"franka://sim?model={DEFAULT_MODEL}&sim_contact={PLANE},{PLANE_STIFFNESS:g}&gripper=0",
            "a gentle press on a plane under Cartesian impedance, its equilibrium streamed (torque control)")


def press(run) -> None:
    """From 1 cm above the plane, a Cartesian impedance whose equilibrium is streamed down to
    PRESS_DEPTH under the plane over 1.5 s, held 1 s and streamed back up over 1 s; the measured
    force, the flange's height and the equilibrium's go to ``run.contact_trace``."""
    with connect(run.uri) as robot:
        run.attach(robot)
        robot.move_joints(READY_Q, speed=0.3)
        above = robot.model.forward(robot.commanded)
        above[2, 3] = PLANE + 0.01
        robot.move_linear(above, speed=0.05)
        pressing = robot.run(CartesianImpedance(*PRESS_STIFFNESS), wait=False)
        start = robot.state.time
        profile = np.concatenate([np.linspace(0.0, 1.0, 76), np.ones(50), np.linspace(1.0, 0.0, 51)])
        heights, trace = above[2, 3] - (0.01 + PRESS_DEPTH) * profile, []
        began = time.monotonic()
        for k, height in enumerate(heights):  # 50 Hz, as a learned policy would stream its poses
            target = above.copy()
            target[2, 3] = height
            robot.servo_pose(target)
            trace.append((robot.state.time - start, height))
            time.sleep(max(0.0, began + STREAM_PERIOD * (k + 1) - time.monotonic()))  # pacing a stream
        robot.stop()  # the impedance damps the arm to rest; the robot's own hold takes it
        result = pressing.wait()
        run.results.append(result)
        seconds = result.times - start
        flange = robot.model.forward(result.measured)[:, 2, 3]
        equilibrium = np.interp(seconds, *np.array(trace).T)
        run.contact_trace = np.stack([run.task_seconds(result.times), result.wrenches[:, 2], flange - PLANE,
                                      equilibrium - PLANE], -1)
        run.info.update(robot.state.info)
        robot.move_joints(READY_Q, speed=0.3)

