"""The pick-and-place task of ``robohal demo``: move, grasp, move, release.

Written once against the core API (the arm's straight lines and ``robot.gripper``) and run
unchanged on every backend whose demo record says where its part lies (``DemoSpec.pick_place``,
a :class:`PickPlace`): the same code picks with the Franka Hand over pylibfranka, with a
vacuum tool over EGM's RAPID data and with the planar arm's servo gripper over serial.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import spatial
from ..connection import open_robot
from ..errors import RobohalError

WIDTH_PERIOD = 0.02  # s between the gripper-width samples of the plot: smooth at the fingers' speeds


@dataclass(frozen=True)
class PickPlace:
    """Where one robot's demo part lies and where it goes.

    ``pick`` and ``place`` are flange positions (m, base frame) at which the gripper closes on
    the part and opens again; the flange keeps the orientation it starts with. ``approach`` is
    the way in and out of both (a base-frame offset, m): straight down onto the part for an arm
    that can, zero for a planar arm that cannot leave its plane. ``width`` (m) is what the
    grasp expects the part to measure, within ``epsilon`` either way. ``start`` (rad) are the
    joints to begin from, and ``speed`` (m/s) the flange speed of every move.
    """

    uri: str
    pick: tuple[float, float, float]
    place: tuple[float, float, float]
    width: float
    approach: tuple[float, float, float] = (0.0, 0.0, 0.05)
    epsilon: float = 0.005
    start: tuple[float, ...] | None = None
    speed: float = 0.2
    description: str = "pick and place"


class WidthRecorder:
    """Samples the gripper's width in a thread of its own while the task runs, for the plot;
    its times count from ``since`` (the host's monotonic clock: when the task began), else
    from its own start."""

    def __init__(self, gripper: Any, period: float = WIDTH_PERIOD, since: float | None = None) -> None:
        self.gripper = gripper
        self.period = period
        self.times: list[float] = []
        self.widths: list[float] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="robohal-gripper-width", daemon=True)
        self._start = time.monotonic() if since is None else since

    def __enter__(self) -> WidthRecorder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._done.is_set():
            try:
                width = self.gripper.state.width
            except RobohalError:
                return  # a lost gripper ends the trace; the task itself reports the loss
            self.times.append(time.monotonic() - self._start)
            self.widths.append(width)
            self._done.wait(self.period)

    @property
    def trace(self) -> np.ndarray:
        """(N, 2): seconds (since ``since``), width (m)."""
        return np.column_stack([self.times, self.widths]) if self.times else np.zeros((0, 2))


def pick_and_place(run: Any, plan: PickPlace) -> None:
    """Pick the part at ``plan.pick`` and put it down at ``plan.place``, filling ``run`` (a
    :class:`~robohal.cli.demo.DemoRun`) with the motions, the grasps and the gripper's width."""
    with open_robot(plan.uri) as robot:
        run.attach(robot)
        gripper = robot.gripper
        if gripper is None:
            raise RobohalError(f"{plan.uri} has no gripper: pick and place needs one")
        if plan.start is not None:
            robot.move_joints(plan.start, speed=0.5)
        # the orientation the setpoints hold, not the measured one: an arm of fewer than six joints
        # reaches only its own orientations, and a servo measures its angle to a tick
        orientation = robot.model.forward(robot.commanded)[:3, :3]
        approach = np.asarray(plan.approach, dtype=float)

        def at(position: np.ndarray) -> np.ndarray:
            pose = spatial.from_translation(position)
            pose[:3, :3] = orientation
            return pose

        pick, place = np.asarray(plan.pick, dtype=float), np.asarray(plan.place, dtype=float)
        path = [pick + approach, pick, pick + approach, place + approach, place, place + approach]
        with WidthRecorder(gripper, since=run.started) as recorder:  # on the clock of the task's motions
            gripper.open()
            robot.move_linear(at(path[0]), speed=plan.speed)  # the way there: not part of the figure
            run.results.append(robot.move_linear(at(path[1]), speed=plan.speed))
            run.grasps.append(bool(gripper.grasp(plan.width, epsilon_inner=plan.epsilon, epsilon_outer=plan.epsilon)))
            for point in path[2:5]:
                run.results.append(robot.move_linear(at(point), speed=plan.speed))
            gripper.open()
            run.released = not gripper.state.is_grasped
            run.results.append(robot.move_linear(at(path[5]), speed=plan.speed))
        run.gripper_trace = recorder.trace
        run.ideal = np.stack(path)
        run.info.update(robot.state.info)
