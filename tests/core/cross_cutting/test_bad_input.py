"""Bad input gets a clear robohal error, never a silently wrong answer or a bare traceback."""

from __future__ import annotations

import numpy as np
import pytest
import robohal
from robohal import spatial
from robohal.control.guard import SetpointGuard
from robohal.errors import InvalidArgument, LimitViolation, UriError
from robohal.kinematics import (
    OPW,
    Constraints,
    DifferentialIk,
    IkOptions,
    JointLimits,
    Parallelogram,
    PlanarTwoLink,
    Tool,
    pick_best,
)

KR6 = (0.025, -0.035, 0.0, 0.4, 0.315, 0.365, 0.08)


# Poses ----------------------------------------------------------------------------------------


def _mirrored(pose: np.ndarray) -> np.ndarray:
    bad = pose.copy()
    bad[:3, 0] *= -1.0
    return bad


@pytest.mark.parametrize("name", ["franka.fr3", "abb.irb2400", "abb.irb1410", "generic.planar2"])
@pytest.mark.parametrize("spoil", ["zeros", "scaled", "mirrored", "last row"])
def test_inverse_batch_refuses_what_inverse_refuses(name, spoil) -> None:
    model = robohal.get_model(name)
    good = model.forward(model.limits.centre + 0.1)
    bad = {"zeros": np.zeros((4, 4)), "scaled": good @ np.diag([2.0, 2.0, 2.0, 1.0]),
           "mirrored": _mirrored(good), "last row": good + np.array([[0, 0, 0, 0]] * 3 + [[0, 0, 1, 0]])}[spoil]
    with pytest.raises(InvalidArgument):
        model.inverse(bad)
    with pytest.raises(InvalidArgument, match=r"index \(1,\)"):
        model.inverse_batch(np.stack([good, bad]))


def test_one_rotation_tolerance_for_every_model() -> None:
    """The same nearly orthonormal rotation is accepted or refused alike by every model."""
    for offset, accepted in ((5e-7, True), (5e-6, False)):
        for name in ("franka.fr3", "abb.irb2400", "generic.planar2"):
            model = robohal.get_model(name)
            pose = model.forward(model.limits.centre + 0.1)
            pose[0, 0] += offset
            if accepted:
                model.inverse(pose)
                spatial.as_pose(pose)
            else:
                with pytest.raises(InvalidArgument):
                    model.inverse(pose)
                with pytest.raises(InvalidArgument):
                    spatial.as_pose(pose)


def test_huge_quaternions_keep_their_direction() -> None:
    expected = spatial.quat_to_matrix([1.0, 1.0, 0.0, 0.0])
    assert np.allclose(spatial.quat_to_matrix([1e154, 1e154, 0.0, 0.0]), expected)
    assert np.allclose(spatial.quat_to_matrix([1e300, 1e300, 0.0, 0.0]), expected)
    with pytest.raises(InvalidArgument, match="zero length"):
        spatial.quat_to_matrix([0.0, 0.0, 0.0, 0.0])


# Joints and limits -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["abb.irb120", "abb.irb1410", "franka.fr3"])
@pytest.mark.parametrize("joints", ["abc", ["a"] * 6, [[0.1] * 6, [0.1]], {"a": 1}, np.full(6, 1 + 1j),
                                    np.array([None] * 6, dtype=object), [True] * 6])
def test_check_joints_refuses_what_is_not_numbers(name, joints) -> None:
    model = robohal.get_model(name)
    with pytest.raises(InvalidArgument, match="real numbers"):
        model.check_joints(joints)


def test_forward_refuses_complex_and_strings() -> None:
    model = robohal.get_model("abb.irb120")
    for joints in (np.full(6, 0.1 + 1j), ["0"] * 6):
        with pytest.raises(InvalidArgument):
            model.forward(joints)


@pytest.mark.parametrize("rate", ["velocity", "acceleration", "jerk"])
def test_joint_limits_need_finite_rates(rate) -> None:
    values = {"velocity": 1.0, "acceleration": 1.0, "jerk": 1.0, rate: np.inf}
    with pytest.raises(InvalidArgument, match=f"{rate} must be finite"):
        JointLimits(-1.0, 1.0, **values)
    JointLimits(-np.inf, np.inf, 1.0, 1.0, 1.0)  # open position ranges are fine


def test_joint_limits_refuse_mismatched_or_non_numeric_values() -> None:
    with pytest.raises(InvalidArgument, match="upper has 2 values"):
        JointLimits([-1.0] * 3, [1.0] * 2, 1.0, 1.0, 1.0)
    with pytest.raises(InvalidArgument, match="lower must be a number"):
        JointLimits("a", 1.0, 1.0, 1.0, 1.0)
    with pytest.raises(InvalidArgument, match="speed"):
        JointLimits(-1.0, 1.0, 1.0, 1.0, 1.0).scaled("a")  # type: ignore[arg-type]


def test_limit_messages_stay_short_for_huge_values() -> None:
    model = robohal.get_model("abb.irb120")
    with pytest.raises(LimitViolation) as caught:
        model.check_joints(np.full(6, 1e300))
    assert len(str(caught.value)) < 200


def test_joints_given_in_degrees_get_a_hint_and_radians_just_out_of_range_do_not() -> None:
    model = robohal.get_model("abb.irb120")
    with pytest.raises(LimitViolation, match=r"joint 2 at 30 rad .*np\.radians\(\) if these were degrees"):
        model.check_joints([0.0, 30.0, 20.0, 0.0, 45.0, 0.0])
    with pytest.raises(LimitViolation) as caught:  # 600 deg does not fit either: no hint
        model.check_joints([0.0, 600.0, 0.0, 0.0, 0.0, 0.0])
    assert "degrees" not in str(caught.value)


# Model construction ----------------------------------------------------------------------------


def test_opw_constraints_must_cover_its_six_joints() -> None:
    with pytest.raises(InvalidArgument, match="6 joints, got 3 joints"):
        OPW(*KR6, constraints=Constraints([-3.0] * 3, [3.0] * 3))
    arm = OPW(*KR6)
    arm.constraints = Constraints([-3.0] * 2, [3.0] * 2)  # set afterwards: refused when used
    with pytest.raises(InvalidArgument, match="constraints"):
        arm.inverse(arm.forward(np.full(6, 0.3)))


@pytest.mark.parametrize("kwargs", [{"offsets": None}, {"offsets": "abcdef"}, {"signs": [1] * 5},
                                    {"limits": "x"}, {"c2": True}])
def test_opw_refuses_bad_parameters(kwargs) -> None:
    params = dict(zip(("a1", "a2", "b", "c1", "c2", "c3", "c4"), KR6, strict=True))
    params.update(kwargs)
    with pytest.raises(InvalidArgument):
        OPW(**params)


@pytest.mark.parametrize("driven, coupled", [(1.5, 2), (True, 2), ("1", 2), (None, 2), (1, 1)])
def test_parallelogram_joints_are_indices(driven, coupled) -> None:
    with pytest.raises(InvalidArgument, match="joint indices"):
        Parallelogram(OPW(*KR6), driven=driven, coupled=coupled)


def test_tool_is_one_transform() -> None:
    with pytest.raises(InvalidArgument, match="one"):
        Tool(OPW(*KR6), np.stack([np.eye(4), np.eye(4)]))


def test_model_options_are_checked_by_name_and_type() -> None:
    with pytest.raises(InvalidArgument, match="no option 'bogus'; its options: l1, l2"):
        robohal.get_model("generic.planar2", bogus=1)
    with pytest.raises(InvalidArgument, match="l1 must be a finite number"):
        robohal.get_model("generic.planar2", l1="a")
    with pytest.raises(InvalidArgument, match="lower must be a number"):
        robohal.get_model("arduino.planar2", lower="ab")
    with pytest.raises(InvalidArgument, match="controller_joints must be True or False"):
        robohal.get_model("abb.irb1410", controller_joints="no")
    with pytest.raises(InvalidArgument, match="hand must be True or False"):
        robohal.get_model("franka.fr3", hand="no")
    with pytest.raises(InvalidArgument, match="finite"):
        robohal.get_model("arduino.planar2", speed=float("inf"))


# Differential IK -------------------------------------------------------------------------------


@pytest.mark.parametrize("damping", [1e-10, 1e-155, 1e300])
def test_extreme_damping_never_gives_nan_goals(damping) -> None:
    model = robohal.get_model("abb.irb120")
    ik = DifferentialIk(model, IkOptions(damping=damping))
    ik.reset(np.zeros(6))  # J5 = 0: a wrist singularity
    for _ in range(5):
        goal = ik.step(model.forward(np.full(6, 0.01)))
        assert np.isfinite(goal).all()
        model.check_joints(goal)


@pytest.mark.parametrize("period", [1e-200, 0.0, True, "0.001", 1e9])
def test_ik_period_must_be_sensible(period) -> None:
    with pytest.raises(InvalidArgument, match="period"):
        DifferentialIk(robohal.get_model("abb.irb120"), period=period)


def test_ik_options_are_numbers_not_bools() -> None:
    for field in ("damping", "rotation_weight", "tolerance", "nullspace_gain"):
        with pytest.raises(InvalidArgument, match=field):
            IkOptions(**{field: True}).validate()
    with pytest.raises(InvalidArgument, match="IkOptions"):
        DifferentialIk(robohal.get_model("abb.irb120"), options=None)  # type: ignore[arg-type]


def test_ik_history_outside_the_limits_is_refused() -> None:
    model = robohal.get_model("abb.irb120")
    ik = DifferentialIk(model)
    ik.reset(np.zeros(6))
    with pytest.raises(LimitViolation, match="history"):
        ik.history = np.tile(model.limits.upper + 0.5, (3, 1))
    with pytest.raises(InvalidArgument):
        ik.history = "x"


# URIs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("uri, unknown", [
    ("sim://?model=generic.planar2&rat=100", "rat"),
    ("abb-egm://sim?model=abb.irb120&timeot=1", "timeot"),
    ("franka://sim?model=franka.fr3&impl=stubs&realtme=enforce", "realtme"),
    ("arduino-planar://sim?model=arduino.planar2&firmware=emulator&bogus=1", "bogus"),
])
def test_misspelt_uri_parameters_are_refused_before_anything_starts(uri, unknown) -> None:
    with pytest.raises(UriError, match=f"unknown .* parameter '{unknown}'"):
        robohal.connect(uri)


def test_backend_parameters_are_checked_before_a_simulator_starts() -> None:
    with pytest.raises(UriError, match="mode must be joint or pose"):
        robohal.connect("abb-egm://sim?model=abb.irb120&mode=bogus")
    with pytest.raises(UriError, match="finite and positive"):
        robohal.connect("franka://sim?model=franka.fr3&impl=stubs&collision=inf,inf")
    with pytest.raises(UriError, match="below 1"):
        robohal.connect("franka://sim?model=franka.fr3&sim_loss=5")
    with pytest.raises(UriError, match="does not simulate sim_stall_after"):
        robohal.connect("franka://sim?model=franka.fr3&impl=stubs&sim_stall_after=1")


@pytest.mark.parametrize("uri", [None, 123, b"sim://?model=generic.planar2"])
def test_connect_needs_a_uri_string(uri) -> None:
    with pytest.raises(UriError, match="must be a string"):
        robohal.connect(uri)  # type: ignore[arg-type]


# More constructors, helpers and extreme numbers ----------------------------------------------


@pytest.mark.parametrize("make", [
    lambda: PlanarTwoLink("a", 0.2), lambda: PlanarTwoLink(None, 0.2), lambda: PlanarTwoLink([1, 2], 0.2),
    lambda: PlanarTwoLink(1e200, 1e200), lambda: PlanarTwoLink(0.3, 0.2, "x"),
    lambda: Constraints("a", "b"), lambda: Constraints([0.0], [1.0], "a"),
    lambda: Constraints([0.0], [1.0]).random(-1), lambda: Constraints([0.0], [1.0]).compliant("ab"),
    lambda: pick_best("ab", [0.0, 0.0]), lambda: pick_best(np.empty((1, 0, 2)), [0.0, 0.0]),
    lambda: pick_best(np.zeros((1, 2, 2)), np.zeros((3, 2))),
    lambda: OPW(*KR6).inverse_5dof(OPW(*KR6).forward(np.full(6, 0.1)), "a"),
    lambda: SetpointGuard(JointLimits(-1.0, 1.0, 1.0, 1.0, 1.0), 1e-300),
    lambda: robohal.get_model("franka.fr3").solution_label(None),
])
def test_helpers_refuse_bad_arguments_by_name(make) -> None:
    with pytest.raises(InvalidArgument):
        make()


def test_robot_motions_refuse_bad_speeds_and_times() -> None:
    with robohal.connect("sim://?model=generic.planar2&realtime=0") as robot:
        for call in (lambda: robot.move_joints([0.1, 0.1], speed="a"),
                     lambda: robot.move_linear(robot.pose, speed="a"),
                     lambda: robot.follow([[0.1, 0.1]], [1e300])):
            with pytest.raises(InvalidArgument):
                call()
        robot.move_joints([0.1, 0.1])  # nothing was lost
        assert np.allclose(robot.backend.commanded, [0.1, 0.1])


def test_a_target_beyond_any_reach_is_unreachable_with_the_distance() -> None:
    """The numeric solver (Franka) says how far the target is instead of overflowing into
    'joints contains NaN', and spends no search on it in a batch."""
    model = robohal.get_model("franka.fr3")
    centre, radius = model.reach_bound
    sample = model.forward(np.random.default_rng(1).uniform(model.limits.lower, model.limits.upper, (2000, 7)))
    assert (np.linalg.norm(sample[:, :3, 3] - centre, axis=1) <= radius).all(), "the bound holds"
    far = model.forward(model.limits.centre)
    far[0, 3] = 1e160
    result = model.inverse(far)
    assert len(result) == 0 and "1e+160 m from the base" in result.reason
    batch = model.inverse_batch(np.stack([far, model.forward(model.limits.centre)]))
    assert np.isnan(batch[0]).all() and np.isfinite(batch[1, 0]).all()
