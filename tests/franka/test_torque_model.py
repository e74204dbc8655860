"""The model terms torque motions are given, against pylibfranka's own Model as the oracle: the
stubs' Model computes what pylibfranka's computes from the description the simulated robot serves,
and the flange Jacobian the Cartesian laws take from robohal's model is the one libfranka's Model
gives (the simulated robot's end effector is its flange)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import robohal
from robohal_franka import stubs
from robohal_franka.facts import READY_Q

# pylibfranka in a process of its own (it holds the GIL while it blocks): its Model's terms at the
# robot's first state, with that state's joints
ORACLE = """
import json, sys, pylibfranka as lib
robot = lib.Robot(sys.argv[1], lib.RealtimeConfig.kIgnore)
model = robot.load_model()
state = robot.read_once()
print(json.dumps({"q": list(state.q), "dq": list(state.dq), "gravity": list(model.gravity(state)),
                  "coriolis": list(model.coriolis(state)), "mass": list(model.mass(state)),
                  "jacobian": list(model.zero_jacobian(state))}))
"""


class At:
    """A stand-in RobotState for the stubs' Model: joints and their velocities."""

    def __init__(self, q, dq) -> None:
        self.q, self.dq = list(q), list(dq)


def test_the_stubs_model_and_robohal_s_jacobian_agree_with_pylibfranka_s_model(start_simulator):
    simulator = start_simulator()
    done = subprocess.run([sys.executable, "-c", ORACLE, simulator.host], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    oracle = json.loads(done.stdout.strip().splitlines()[-1])
    at = At(oracle["q"], oracle["dq"])
    np.testing.assert_allclose(oracle["q"], READY_Q, atol=1e-3)  # (a standing arm: the state is READY's)
    ours = stubs.Model("franka.fr3")
    np.testing.assert_allclose(ours.gravity(at), oracle["gravity"], atol=1e-6)
    np.testing.assert_allclose(ours.mass(at), oracle["mass"], atol=1e-6)
    np.testing.assert_allclose(ours.coriolis(at), oracle["coriolis"], atol=1e-6)
    jacobian = np.array(oracle["jacobian"]).reshape(6, 7, order="F")  # libfranka's arrays are column-major
    np.testing.assert_allclose(np.array(ours.zero_jacobian(at)).reshape(6, 7, order="F"), jacobian, atol=1e-9)
    np.testing.assert_allclose(robohal.get_model("franka.fr3").jacobian(np.array(oracle["q"])), jacobian, atol=1e-6)
