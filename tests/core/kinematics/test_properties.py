"""Property tests (hypothesis) over every solver: shapes and broadcasting, round
trips that never return a wrong answer, and clear errors (never a hang) on NaN/inf."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import numpy as np
import pytest
import robohal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from robohal import spatial
from robohal.errors import InvalidArgument
from robohal.kinematics import OPW, Base, JointLimits, Parallelogram, PlanarTwoLink, Tool, UrdfChain
from robohal.kinematics.chain import DHChain

HALF_PI = math.pi / 2
URDF_FILES = Path(__file__).resolve().parent / "urdf_files"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def models():
    irb2400 = OPW(0.100, -0.135, 0.0, 0.615, 0.705, 0.755, 0.085, offsets=(0, 0, -HALF_PI, 0, 0, 0))
    kr6 = OPW(0.025, -0.035, 0.0, 0.400, 0.315, 0.365, 0.080, offsets=(0, -HALF_PI, 0, 0, 0, 0), signs=(-1, 1, 1, -1, 1, -1))
    tx40 = OPW(0.0, 0.0, 0.035, 0.320, 0.225, 0.225, 0.065, offsets=(0, 0, -HALF_PI, 0, 0, 0))
    return {
        "irb2400": irb2400,
        "kr6": kr6,
        "tx40": tx40,
        "stacked": Base(Tool(Parallelogram(irb2400, 1.0, 1, 2), spatial.from_translation([0, 0.01, 0.1])),
                        spatial.pose_from_xyz_rpy([0.2, 0.1, 0.0], [0.0, 0.0, 0.5])),
        "irb1410": robohal.get_model("abb.irb1410"),
        "fr3": robohal.get_model("franka.fr3"),
        "chain": DHChain([0.1, 0.3, 0.05], [0.2, 0.0, 0.1], [HALF_PI, 0.0, -HALF_PI]),
        "planar": PlanarTwoLink(0.3, 0.25),
        "urdf": UrdfChain.from_urdf(URDF_FILES / "six_axis.urdf", "base_link", "tool0"),
        "urdf_prismatic": UrdfChain.from_urdf(URDF_FILES / "slider_gripper.urdf", "world", "tool0"),
    }


MODELS = models()
angles = st.floats(-math.pi, math.pi, allow_nan=False)
batch_shapes = hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=4)


@pytest.mark.parametrize("name", sorted(MODELS))
@SETTINGS
@given(data=st.data())
def test_forward_broadcasts_over_leading_dimensions(name, data):
    model = MODELS[name]
    shape = data.draw(batch_shapes)
    q = data.draw(hnp.arrays(np.float64, (*shape, model.dof), elements=angles))
    poses = model.forward(q)
    assert poses.shape == (*shape, 4, 4)
    flat = q.reshape(-1, model.dof)
    singles = np.array([model.forward(row) for row in flat])
    np.testing.assert_allclose(poses.reshape(-1, 4, 4), singles, atol=1e-12)
    np.testing.assert_allclose(poses[..., 3, :], np.broadcast_to([0, 0, 0, 1.0], (*shape, 4)))
    if hasattr(model, "jacobian") and name != "planar":
        assert model.jacobian(q).shape == (*shape, 6, model.dof)


@pytest.mark.parametrize("name", ["irb2400", "kr6", "tx40", "stacked", "irb1410"])
@SETTINGS
@given(q=hnp.arrays(np.float64, 6, elements=st.floats(-3.0, 3.0)))
def test_every_returned_solution_reaches_the_pose(name, q):
    model = MODELS[name]
    pose = model.forward(q)
    for found in (model.inverse(pose), model.inverse_continuing(pose, q)):
        for row in found:
            np.testing.assert_allclose(model.forward(row), pose, atol=1e-6)  # the verification tolerance
        assert model.limits.within(found).all()
    batch = model.inverse_batch(pose)
    rows = batch[0][~np.isnan(batch[0, :, 0])]
    if len(rows):
        np.testing.assert_allclose(model.forward(rows), np.broadcast_to(pose, (len(rows), 4, 4)), atol=1e-6)  # the verification tolerance


@pytest.mark.parametrize("name", ["irb2400", "tx40"])
@SETTINGS
@given(xyz=hnp.arrays(np.float64, 3, elements=st.floats(-3.0, 3.0)),
       rotvec=hnp.arrays(np.float64, 3, elements=st.floats(-3.0, 3.0)))
def test_arbitrary_poses_give_verified_solutions_or_a_reason(name, xyz, rotvec):
    model = MODELS[name]
    pose = spatial.identity()
    pose[:3, :3] = spatial.rotvec_to_matrix(rotvec)
    pose[:3, 3] = xyz
    found = model.inverse(pose)
    if found.found:
        np.testing.assert_allclose(model.forward(np.asarray(found)), np.broadcast_to(pose, (len(found), 4, 4)), atol=1e-6)  # the verification tolerance
    else:
        assert isinstance(found.reason, str) and found.reason


def bounded(call, *args):
    """Run ``call``; the test fails (instead of hanging) if it does not return."""
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = call(*args)
        except BaseException as error:
            outcome["error"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "the call did not return"
    return outcome


bad_values = st.sampled_from([math.nan, math.inf, -math.inf])


@pytest.mark.parametrize("name", sorted(MODELS))
@SETTINGS
@given(data=st.data(), bad=bad_values)
def test_nan_or_inf_input_is_a_clear_error(name, data, bad):
    model = MODELS[name]
    q = np.zeros(model.dof) + 0.3
    pose = model.forward(q)
    index = data.draw(st.integers(0, model.dof - 1))
    bad_q = q.copy()
    bad_q[index] = bad
    row, col = data.draw(st.integers(0, 2)), data.draw(st.integers(0, 3))
    bad_pose = pose.copy()
    bad_pose[row, col] = bad
    calls = [(model.forward, bad_q), (model.inverse, bad_pose), (model.inverse_continuing, pose, bad_q),
             (model.inverse_continuing, bad_pose, q), (model.inverse_batch, np.stack([pose, bad_pose]))]
    if hasattr(model, "inverse_5dof"):
        calls.append((model.inverse_5dof, bad_pose, 0.0))
    for call, *args in calls:
        outcome = bounded(call, *args)
        assert isinstance(outcome.get("error"), InvalidArgument), f"{call.__name__} gave {outcome}"


def test_opw_continuing_at_the_singularity_with_inf_previous_is_an_error_not_a_hang():
    model = MODELS["irb2400"]
    pose = model.forward(np.array([0.1, 0.2, 0.3, 0.4, 0.0, 0.5]))  # J5 = 0
    outcome = bounded(model.inverse_continuing, pose, [0.1, 0.2, 0.3, math.inf, 0.0, 0.5])
    assert isinstance(outcome.get("error"), InvalidArgument)


@SETTINGS
@given(lower=hnp.arrays(np.float64, 3, elements=st.floats(-3, -0.1)),
       upper=hnp.arrays(np.float64, 3, elements=st.floats(0.1, 3)))
def test_joint_limits_round_trip(lower, upper):
    limits = JointLimits(lower, upper, 1.0, 2.0, 3.0)
    assert limits.dof == 3
    assert limits.within(limits.centre)
    np.testing.assert_allclose(limits.clip(upper + 1.0), upper)
    assert limits.margin(limits.centre) > 0
