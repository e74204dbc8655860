"""Online motion over EGM against the simulated controller: a new motion takes over a running
one, a stream of targets is followed and its end brakes the arm, and a reaction on the force
sensor's measuredForce ends a motion and hands over to a retract."""

from __future__ import annotations

import threading
import time

import numpy as np
import robohal
from robohal import LifecycleState
from robohal.control.backend import wait_until
from robohal.motion import PointToPoint
from robohal.motion.reactions import Reaction, force

# The IRB 1410 away from its wrist singularity, the flange about 0.66 m above the base.
HOME = np.radians([0.0, 10.0, 10.0, 0.0, 40.0, 0.0])


def test_a_new_move_takes_over_over_egm(egm_sim):
    sim = egm_sim()
    with robohal.connect(sim.connect_uri()) as robot:
        robot.move_joints(HOME, speed=1.0)
        robot.move_joints(HOME + np.radians([40, 0, 0, 0, 0, 0]), speed=0.5, wait=False)
        first = robot.backend._last_job
        assert wait_until(lambda: robot.state.q[0] > np.radians(5), timeout=10.0)
        second = robot.move_joints(HOME + np.radians([-10, 5, 0, 0, 0, 0]), speed=0.5)
        assert first.result.taken_over and second.completed
        assert np.allclose(robot.backend.commanded, HOME + np.radians([-10, 5, 0, 0, 0, 0]))
        assert robot.state.mode.value != "fault"


def test_a_servo_stream_over_egm_is_followed_then_braked(egm_sim):
    sim = egm_sim()
    with robohal.connect(sim.connect_uri()) as robot:
        robot.move_joints(HOME, speed=1.0)
        targets = [HOME + np.radians([15.0, 0, 0, 0, 0, 10.0]) * s for s in np.linspace(0.0, 1.0, 60)]

        def stream() -> None:
            for target in targets:
                robot.servo(target)
                time.sleep(1 / 60)

        thread = threading.Thread(target=stream)
        thread.start()
        thread.join()
        # the stream's end, held until it is reached: each target is approached in the loop's
        # cycles and the servo timeout counts on the robot's clock, so a host that stalls the loop
        # could otherwise brake the arm short of a target it was still approaching
        def reached() -> bool:
            return np.allclose(robot.backend.commanded, targets[-1], atol=1e-3)

        assert wait_until(lambda: robot.servo(targets[-1]) or reached(), timeout=10.0)
        assert wait_until(lambda: robot.lifecycle is LifecycleState.READY, timeout=5.0)  # then braked
        assert reached()


def test_move_until_the_force_sensor_feels_contact_then_retract(egm_sim):
    sim = egm_sim("--contact", "0.60,5000")
    with robohal.connect(sim.connect_uri()) as robot:
        robot.move_joints(HOME, speed=1.0)
        start = robot.backend.commanded.copy()
        above = robot.model.forward(start)[2, 3]
        assert above > 0.62 and np.array_equal(robot.state.wrench, np.zeros(6))
        down = robot.model.forward(start)
        down[2, 3] = 0.50  # 10 cm into the plane: 500 N if nothing stopped the arm
        result = robot.move_linear(down, speed=0.05,
                                   until=Reaction(force("z") > 20.0, then=PointToPoint(start, 0.5)))
        assert result.completed and result.reaction == "force z (N) > 20"
        assert np.allclose(robot.backend.commanded, start, atol=1e-9), "retracted"
        deepest = min(robot.model.forward(q)[2, 3] for q in result.measured)
        assert 0.60 - 0.02 < deepest < 0.60, "felt the plane and stopped in it, not 10 cm below"
