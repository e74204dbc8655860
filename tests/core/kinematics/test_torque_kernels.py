"""The torque laws' kernels (robohal.kinematics.kernels.torque: joint_impedance, cartesian_impedance,
pose_filter, shaped_torque, torque_within): compiled and interpreted they agree to the last bit.
What they compute is tested through the motions (tests/core/motion/test_torque.py)."""

from __future__ import annotations

from array import array

import numpy as np
import pytest
import robohal
from robohal.kinematics import kernels

Q0 = np.array([0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6])


@pytest.fixture(scope="module")
def model():
    return robohal.get_model("franka.fr3")


compiled = kernels.load_compiled().torque
source = kernels.load_source().torque


@pytest.mark.skipif(not compiled.COMPILED, reason="robohal was installed without a C compiler")
def test_the_torque_kernels_agree_compiled_or_not(model):
    rng = np.random.default_rng(5)
    for _ in range(50):
        q = model.limits.clip(Q0 + rng.normal(0, 0.3, 7))
        dq = rng.normal(0, 0.5, 7)
        frame, jac = model.frame_and_jacobian_lists(q.tolist())
        goal = model.forward(model.limits.clip(q + rng.normal(0, 0.1, 7))).tolist()
        gains = array("d", rng.uniform(0, 500, 18).tolist())
        null = array("d", rng.uniform(0, 5, 7).tolist())
        arguments = (frame, jac, q.tolist(), dq.tolist(), goal, rng.normal(0, 0.1, 6).tolist(), gains, 0.05, 0.2,
                     rng.normal(0, 1, 7).tolist(), (q + 0.1).tolist(), 7.0, null)
        assert compiled.cartesian_impedance(*arguments) == source.cartesian_impedance(*arguments)
        tau, last = rng.normal(0, 50, 7).tolist(), rng.normal(0, 50, 7).tolist()
        caps, steps = array("d", [85.0] * 4 + [11.0] * 3), array("d", [0.95] * 7)
        for scale in (True, False):
            assert compiled.shaped_torque(tau, last, caps, steps, scale) == source.shaped_torque(tau, last, caps, steps, scale)
        k, d = array("d", rng.uniform(0, 600, 7).tolist()), array("d", rng.uniform(0, 50, 7).tolist())
        for share in (0.02, 1.0):
            one, other = q.tolist(), q.tolist()  # (each kernel moves its equilibrium in place)
            rest = ((q + 0.1).tolist(), share, 0.001, q.tolist(), dq.tolist(), rng.normal(0, 1, 7).tolist())
            assert compiled.joint_impedance(k, d, one, *rest) == source.joint_impedance(k, d, other, *rest)
            assert one == other
            pose = model.forward(q).tolist()
            assert compiled.pose_filter(goal, pose, share, 0.001) == source.pose_filter(goal, pose, share, 0.001)
        assert compiled.torque_within(tau, last, caps, steps) == source.torque_within(tau, last, caps, steps)


