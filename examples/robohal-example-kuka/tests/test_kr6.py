"""The example plugin's own tests: its model, and the backend contract suite on the sim backend."""

import numpy as np
import robohal
from robohal.testing.contract import BackendContract


def test_registered_and_consistent():
    model = robohal.get_model("kuka.kr6_r700_sixx")
    q = np.radians([10.0, -80.0, 90.0, 20.0, 30.0, 40.0])
    pose = model.forward(q)
    solutions = model.inverse(pose)
    assert any(np.allclose(s, q, atol=1e-9) for s in solutions)


def test_drives_on_the_sim_backend():
    with robohal.connect("sim://?model=kuka.kr6_r700_sixx&realtime=0&q0=0,-1.5708,1.5708,0,0.5,0") as robot:
        assert robot.move_joints(robot.state.q + 0.05).completed


class TestContractOnSim(BackendContract):
    """Run with: pytest --hil-target 'sim://?model=kuka.kr6_r700_sixx&q0=0,-1.5708,1.5708,0,0.5,0'"""
