"""The kinematics kernels (robohal.kinematics._kernels, one module per domain): each one
source, compiled by Cython where the build had a C compiler and run by the interpreter elsewhere.

Both forms do the same arithmetic in the same order, so they must agree to the last bit:
every kernel is run both ways here, and every model's IK cycle must follow the same path
either way. The damped steps are also checked against numpy's solve (to round-off), and
the source must run where Cython is not installed at all.
"""

import math
import os
import shutil
import subprocess
import sys
import sysconfig
from array import array
from pathlib import Path

import numpy as np
import pytest
import robohal
from robohal.kinematics import UrdfChain, chain, diffik, kernels, opw, urdf
from robohal.kinematics.chain import DHChain
from robohal.kinematics.diffik import DifferentialIk, IkOptions

compiled = kernels.load_compiled()
source = kernels.load_source()
compiled_only = pytest.mark.skipif(not compiled.COMPILED, reason="robohal was installed without a C compiler")

OPW_ARMS = {  # (a1, a2, b, c1, c2, c3, c4), offsets, signs: sign flips (KR6 R700) and b != 0 (TX40)
    "irb2400": ((0.100, -0.135, 0.0, 0.615, 0.705, 0.755, 0.085), (0, 0, -math.pi / 2, 0, 0, 0), (1,) * 6),
    "kr6_r700": ((0.025, -0.035, 0.0, 0.400, 0.315, 0.365, 0.080), (0, -math.pi / 2, 0, 0, 0, 0), (-1, 1, 1, -1, 1, -1)),
    "tx40": ((0.0, 0.0, 0.035, 0.320, 0.225, 0.225, 0.065), (0, 0, -math.pi / 2, 0, 0, 0), (1,) * 6),
}
# A batch this long runs with the GIL released (kernels.common.NOGIL_FROM).
NOGIL_BATCH = 300
MODELS = ["franka.fr3", "franka.panda", "abb.irb1410", "abb.irb2400", "arduino.planar2"]


def test_the_kernels_are_compiled_where_there_is_a_compiler():
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler})")
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        pytest.skip("no Python headers (python3-dev)")
    for name in kernels.DOMAINS:
        module, interpreted = getattr(compiled, name), getattr(source, name)
        assert module.COMPILED, f"a C compiler and Python's headers are here, yet kernels.{name} was not built"
        assert not interpreted.COMPILED and Path(interpreted.__file__) == kernels.SOURCES / f"{name}.py"
        if not os.environ.get("ROBOHAL_PURE_PYTHON"):
            assert getattr(kernels, name) is module
    if not os.environ.get("ROBOHAL_PURE_PYTHON"):
        assert kernels.COMPILED and diffik.COMPILED


def test_the_source_runs_where_cython_is_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "cython", None)  # import cython now fails
    bare = kernels.load_source()
    assert not bare.COMPILED
    arm = opw.OPW(0.1, -0.135, 0.0, 0.615, 0.705, 0.755, 0.085)
    q = [0.1, -0.2, 0.3, 0.4, 0.5, -0.6]
    assert bare.opw.opw_flange(arm._packed, q) == compiled.opw.opw_flange(arm._packed, q)
    poses = arm.forward(np.array([q, [0.0, 0.1, 0.2, 0.0, 0.0, 0.3]])).reshape(-1, 16)
    out_bare, out_compiled = np.empty((2, 8, 6)), np.empty((2, 8, 6))
    limits = np.full(6, -np.inf), np.full(6, np.inf), np.zeros(6)
    bare.opw.opw_inverse_batch(arm._packed, poses, *limits, out_bare)
    compiled.opw.opw_inverse_batch(arm._packed, poses, *limits, out_compiled)
    np.testing.assert_array_equal(out_bare, out_compiled)


def test_robohal_runs_the_source_when_asked_to():
    script = ("import numpy as np, robohal; from robohal.kinematics import diffik, kernels; "
              "arm = robohal.get_model('abb.irb2400'); q = arm.limits.centre; "
              "print(kernels.COMPILED, diffik.COMPILED, bool(np.allclose(arm.forward(arm.inverse(arm.forward(q))[0]), arm.forward(q))))")
    result = subprocess.run([sys.executable, "-c", script], env={**os.environ, "ROBOHAL_PURE_PYTHON": "1"},
                            capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.split() == ["False", "False", "True"]


def _histories(rng, limits, period, count):
    """Histories at rest, creeping and at full speed and acceleration (some past the limits)."""
    for _ in range(count):
        q = rng.uniform(limits.lower, limits.upper)
        v = rng.uniform(-1.2, 1.2, limits.dof) * limits.velocity * rng.choice([0.0, 0.01, 1.0])
        a = rng.uniform(-1.2, 1.2, limits.dof) * limits.acceleration * rng.choice([0.0, 0.01, 1.0])
        h2 = q - v * period
        yield (2 * h2 - q + a * period**2).tolist(), h2.tolist(), q.tolist()


@compiled_only
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("period", [0.001, 0.004, 1 / 91, 1 / 972, 1 / 1904])  # (odd rates once found 1-ulp slips)
def test_the_compiled_box_equals_the_interpreted_box_bit_for_bit(name, period):
    limits = robohal.get_model(name).limits
    joints = diffik._joint_constants(diffik._limit_lists(limits), period)
    rng = np.random.default_rng(7)
    narrowed = 0
    for h3, h2, h1 in _histories(rng, limits, period, 1500):
        goal = (np.array(h1) + rng.normal(0, 1, limits.dof) * rng.choice([1e-5, 1e-3, 0.1])).tolist()
        follow = (rng.normal(0, 1, limits.dof) * rng.choice([0.0, 1e-5, 1e-3])).tolist()
        assert compiled.cycle.box(h3, h2, h1, period, joints) == source.cycle.box(h3, h2, h1, period, joints)
        narrowing = compiled.cycle.box(h3, h2, h1, period, joints, goal, follow)
        assert narrowing == source.cycle.box(h3, h2, h1, period, joints, goal, follow)
        narrowed += narrowing != compiled.cycle.box(h3, h2, h1, period, joints)
    assert narrowed > 100  # the goal narrowing ran, not only the plain box


def _chains():
    yield from (robohal.get_model(name) for name in ("franka.fr3", "franka.panda"))
    turned = np.array([[0.0, -1, 0, 0.1], [1, 0, 0, 0.2], [0, 0, 1, 0.3], [0, 0, 0, 1]])
    # standard DH with every kind of twist, an offset, a base and a turning flange
    yield DHChain([0.1, 0.4, 0.05, 0, 0, 0], [0.3, 0, 0, 0.4, 0, 0.08], [math.pi / 2, 0, 0.3, -math.pi / 2, math.pi / 2, 0],
                  offsets=[0, 0.2, 0, 0, 0, 0], base=turned, flange=turned)
    yield DHChain([0.1, 0.4, 0.05, 0], [0.3, 0, 0.1, 0.4], [math.pi / 2, 0.7, -math.pi / 2, 0], modified=True, flange=turned)


@compiled_only
@pytest.mark.parametrize("model", list(_chains()), ids=["fr3", "panda", "dh", "modified-dh"])
def test_the_compiled_chain_equals_the_interpreted_chain_bit_for_bit(model):
    while not isinstance(model, DHChain):  # the Franka models wrap their chain
        model = model.robot
    rng = np.random.default_rng(8)
    for _ in range(2000):
        q = rng.uniform(-4, 4, model.dof).tolist()
        frame, jac = source.chains.chain(model._packed, q, True)
        assert compiled.chains.chain(model._packed, q, True) == (frame, jac)
        assert compiled.chains.chain(model._packed, q, False) == (frame, None)
    # the frame and Jacobian are the chain's (joint_poses and the batch kernel compute them independently)
    q = rng.uniform(-4, 4, (5, model.dof))
    for one in q:
        frame, jac = compiled.chains.chain(model._packed, one.tolist(), True)
        pose = np.eye(4)
        pose[:3, :3] = np.array(frame[:3]).T
        pose[:3, 3] = frame[3]
        np.testing.assert_allclose(pose, model.joint_poses(one[None])[0, -1], atol=1e-12)
    np.testing.assert_allclose(np.array([compiled.chains.chain(model._packed, one.tolist(), True)[1] for one in q]),
                               model.jacobian(q), atol=1e-12)


URDF_FILES = Path(__file__).resolve().parent / "urdf_files"


def _product_models():
    """UrdfChains, DH chains and OPW arms (their Jacobian): the batch kernels run them all."""
    yield UrdfChain.from_urdf(URDF_FILES / "slider_gripper.urdf", "world", "tool0")  # a slide, oblique axes, a turned flange
    yield UrdfChain.from_urdf(URDF_FILES / "six_axis.urdf", "base_link", "tool0")
    for model in _chains():
        while not isinstance(model, DHChain):  # the Franka models wrap their chain
            model = model.robot
        yield model
    for lengths, offsets, signs in OPW_ARMS.values():
        yield opw.OPW(*lengths, offsets=offsets, signs=signs)


@compiled_only
@pytest.mark.parametrize("model", list(_product_models()),
                         ids=["slider", "six-axis", "fr3", "panda", "dh", "modified-dh", *OPW_ARMS])
def test_the_compiled_batch_chains_equal_the_interpreted_ones_bit_for_bit(model):
    packed = model._packed if isinstance(model, UrdfChain) else model._product
    q = np.random.default_rng(9).uniform(-4, 4, (NOGIL_BATCH, model.dof))  # long enough to release the GIL
    batches = []
    for kernel, width in ((compiled.chains.product_forward_batch, 16), (compiled.chains.product_jacobian_batch, 6 * model.dof)):
        fast, slow = np.empty((len(q), width)), np.empty((len(q), width))
        kernel(packed, q, fast)
        getattr(source.chains, kernel.__name__)(packed, q, slow)
        np.testing.assert_array_equal(fast, slow)
        batches.append(fast[:50])
    poses, jacobians = batches[0].reshape(-1, 4, 4), batches[1].reshape(-1, 6, model.dof)
    for row, pose, jac in zip(q[:50].tolist(), poses, jacobians, strict=True):
        frame, rows = compiled.chains.product_chain(packed, row, True)  # one configuration: the same numbers
        assert source.chains.product_chain(packed, row, True) == (frame, rows)
        assert compiled.chains.product_chain(packed, row, False) == (frame, None)
        np.testing.assert_array_equal(np.column_stack(frame), pose[:3])
        np.testing.assert_array_equal(rows, jac)
        for form in (compiled, source):  # and as new arrays, from a list or an array
            np.testing.assert_array_equal(form.chains.product_pose(packed, row), pose)
            np.testing.assert_array_equal(form.chains.product_jacobian(packed, np.array(row)), jac)
    # and they are the chain's frames and Jacobians (joint_poses in numpy and the scalar path compute them independently)
    np.testing.assert_allclose(model.forward(q[:50]), model.joint_poses(q[:50])[:, -1], atol=1e-12)
    np.testing.assert_allclose(model.jacobian(q[:50]), [model.frame_and_jacobian_lists(row)[1] for row in q[:50].tolist()],
                               atol=1e-12)


def _interpreted(monkeypatch):
    """The models and the IK run the kernels' source from here on."""
    monkeypatch.setattr(diffik, "_cycle", source.cycle)
    monkeypatch.setattr(chain, "_chains", source.chains)
    monkeypatch.setattr(urdf, "_chains", source.chains)
    monkeypatch.setattr(opw, "_opw", source.opw)


def _numpy_steps(jac, weights, damping2, null_damping2, error, motion, offset):
    """The damped steps by numpy's inverse: the maths of kernels.cycle.steps, written independently."""
    jw = np.array(jac) * np.array(weights)[:, None]
    square = jw @ jw.T
    gain = jw.T @ np.linalg.inv(square + damping2 * np.eye(6))
    null_gain = jw.T @ np.linalg.inv(square + null_damping2 * np.eye(6))
    offset = np.array(offset)
    return gain @ np.array(error), gain @ np.array(motion), offset - null_gain @ (jw @ offset), square


@compiled_only
@pytest.mark.parametrize("name", MODELS)
def test_the_steps_agree_compiled_or_not_and_with_numpy_to_round_off(name):
    model = robohal.get_model(name)
    ik = DifferentialIk(model, IkOptions(damping=0.05, rotation_weight=0.3))
    weights, damping2, null_damping2 = ik._weights, ik._damping2, diffik.NULLSPACE_DAMPING**2
    rng = np.random.default_rng(9)
    for _ in range(300):
        _, jac = model.frame_and_jacobian_lists(rng.uniform(model.limits.lower, model.limits.upper).tolist())
        error, motion = rng.normal(0, 0.01, 6).tolist(), rng.normal(0, 1e-4, 6).tolist()
        offset = rng.normal(0, 0.3, model.dof).tolist()
        ours = compiled.cycle.steps(jac, weights, damping2, null_damping2, error, motion, offset)
        assert ours == source.cycle.steps(jac, weights, damping2, null_damping2, error, motion, offset)
        only_error = compiled.cycle.steps(jac, weights, damping2, null_damping2, error, None, None)
        assert only_error == source.cycle.steps(jac, weights, damping2, null_damping2, error, None, None)
        assert only_error[1] is None and only_error[2] is None
        np.testing.assert_allclose(only_error[0], ours[0], rtol=0, atol=1e-15)
        # Round-off of a solve grows with the system's condition number; the nullspace part of
        # a 6-joint arm's offset is a cancellation, so it is measured against the offset.
        *expected, square = _numpy_steps(jac, weights, damping2, null_damping2, error, motion, offset)
        damped, barely_damped = np.linalg.cond(square + np.eye(6) * np.array([[[damping2]], [[null_damping2]]]))
        scales = [np.abs(expected[0]).max() * damped, np.abs(expected[1]).max() * damped,
                  max(map(abs, offset)) * barely_damped]
        for ours_part, numpy_part, scale in zip(ours, expected, scales, strict=True):
            np.testing.assert_allclose(ours_part, numpy_part, rtol=0, atol=1e-13 * scale)


@compiled_only
@pytest.mark.parametrize("name", MODELS)
def test_the_cycle_follows_the_same_path_compiled_or_not(name, monkeypatch):
    model = robohal.get_model(name)
    start = model.limits.centre
    centre = model.forward(start)

    def circle(cycles=400):
        ik = DifferentialIk(model)
        ik.reset(start)
        goals = []
        for i in range(cycles):  # 2 cm at one turn a second, then a 5 cm jump held
            target = centre.copy()
            angle = 2 * math.pi * i / 1000
            target[:3, 3] += [0.02 * (math.cos(angle) - 1), 0.02 * math.sin(angle), 0.0] if i < 300 else [0.05, 0, 0]
            goals.append(ik.step(target))
        return np.array(goals), ik.last_residual

    fast, fast_residual = circle()
    _interpreted(monkeypatch)
    slow, slow_residual = circle()
    assert np.ptp(fast, axis=0).max() > 1e-3  # it moved
    np.testing.assert_array_equal(fast, slow)
    assert fast_residual == slow_residual


@pytest.mark.parametrize("kernels", [compiled, source], ids=["compiled", "interpreted"])
def test_a_list_shrunk_while_it_converts_is_an_error_not_a_crash(kernels):
    class Shrinking:  # a number whose conversion empties the list that holds it
        def __init__(self, values: list) -> None:
            self.values = values

        def __float__(self) -> float:
            del self.values[1:]
            return 0.0

    def shrinking(length: int) -> list:
        values = [0.0] * length
        values[0] = Shrinking(values)
        return values

    model = robohal.get_model("franka.fr3")
    while not isinstance(model, DHChain):
        model = model.robot
    joints = diffik._joint_constants(diffik._limit_lists(model.limits), 0.001)
    calls = [
        lambda: kernels.chains.chain(model._packed, shrinking(7), True),
        lambda: kernels.cycle.box(shrinking(7), [0.0] * 7, [0.0] * 7, 0.001, joints),
        lambda: kernels.cycle.steps([shrinking(7)] + [[0.0] * 7] * 5, [1.0] * 6, 1e-4, 1e-10, [0.0] * 6, None, None),
        lambda: kernels.opw.opw(opw.OPW(0.1, -0.1, 0, 0.6, 0.7, 0.7, 0.1)._packed, [shrinking(4), *np.eye(4).tolist()[1:]],
                            [0.0] * 6, None),
    ]
    for call in calls:
        with pytest.raises(IndexError):
            call()


def test_a_models_geometry_is_fixed_so_its_packed_constants_stay_true():
    import pickle

    arm = opw.OPW(*OPW_ARMS["tx40"][0], offsets=OPW_ARMS["tx40"][1])
    with pytest.raises(AttributeError, match="fixed at construction"):
        arm.c2 = 0.5
    with pytest.raises(AttributeError, match="fixed at construction"):
        arm.offsets = (0.0,) * 6
    fr3 = robohal.get_model("franka.fr3")
    flange_chain = fr3
    while not isinstance(flange_chain, DHChain):
        flange_chain = flange_chain.robot
    with pytest.raises(AttributeError, match="fixed at construction"):
        flange_chain.a = (0.0,) * 7
    with pytest.raises((TypeError, ValueError)):
        flange_chain.offsets[0] = 0.5  # a tuple
    with pytest.raises(ValueError, match="read-only"):
        flange_chain.flange[0, 3] = 0.1
    arm.limits = arm.limits.scaled(0.5)  # limits may change
    q = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    for model in (arm, fr3):
        copy = pickle.loads(pickle.dumps(model))
        joints = q + [0.7] * (model.dof - 6)
        np.testing.assert_array_equal(copy.forward(np.array(joints)), model.forward(np.array(joints)))


ARM = opw.OPW(0.1, -0.1, 0, 0.6, 0.7, 0.7, 0.1)


@pytest.mark.parametrize("kernels", [compiled, source], ids=["compiled", "interpreted"])
@pytest.mark.parametrize("call", [
    lambda k: k.cycle.box([0.0], [0.0], [0.0], 0.001, [(0.0,) * 9]),
    lambda k: k.cycle.box([0.0], [0.0], [0.0], 0.001, [(0.0,) * 10], [0.0, 1.0], [0.0]),
    lambda k: k.chains.chain(array("d", [0.0] * 27), [0.0], True),
    lambda k: k.cycle.steps([[0.0] * 3] * 5, [1.0] * 6, 1e-4, 1e-10, [0.0] * 6, None, None),
    lambda k: k.cycle.steps([[0.0] * 3] * 6, [1.0] * 6, 1e-4, 1e-10, [0.0] * 5, None, None),
    lambda k: k.cycle.steps([[0.0] * 3] * 6, [1.0] * 6, 1e-4, 1e-10, [0.0] * 6, None, [0.0] * 2),
    lambda k: k.cycle.steps([[0.0] * 40] * 6, [1.0] * 6, 1e-4, 1e-10, [0.0] * 6, None, None),
    lambda k: k.opw.opw_flange(array("d", [0.0]), [0.0] * 6),
    lambda k: k.opw.opw_flange(ARM._packed, [0.0] * 5),
    lambda k: k.opw.opw_pose(array("d", [0.0]), [0.0] * 6),
    lambda k: k.chains.product_forward_batch(array("d", [0.0] * 25), np.zeros((3, 1)), np.empty((3, 16))),
    lambda k: k.chains.product_forward_batch(array("d", [0.0] * 26), np.zeros((3, 2)), np.empty((3, 16))),
    lambda k: k.chains.product_forward_batch(array("d", [0.0] * 26), np.zeros((3, 1)), np.empty((2, 16))),
    lambda k: k.chains.product_jacobian_batch(array("d", [0.0] * 26), np.zeros((3, 1)), np.empty((3, 7))),
    lambda k: k.chains.product_chain(array("d", [0.0] * 26), [0.0] * 2, True),
    lambda k: k.chains.product_chain(array("d", [0.0] * 27), [0.0], True),
    lambda k: k.chains.product_pose(array("d", [0.0] * 27), [0.0]),
    lambda k: k.chains.product_jacobian(array("d", [0.0] * (12 + 14 * 40)), [0.0] * 40),
    lambda k: k.chains.product_jacobian_batch(array("d", [0.0] * (12 + 14 * 40)), np.zeros((3, 40)), np.empty((3, 240))),
    lambda k: k.opw.opw(ARM._packed, [[1.0, 0, 0, 0]] * 2, [0.0] * 6, None),
    lambda k: k.opw.opw(ARM._packed, np.eye(4).tolist(), [0.0] * 5, None),
    lambda k: k.opw.opw_forward_batch(ARM._packed, np.zeros((3, 5)), np.empty((3, 16))),
    lambda k: k.opw.opw_forward_batch(ARM._packed, np.zeros((3, 6)), np.empty((2, 16))),
    lambda k: k.opw.opw_inverse_batch(ARM._packed, np.zeros((3, 16)), np.zeros(6), np.zeros(6), np.zeros(6),
                                  np.empty((3, 7, 6))),
    lambda k: k.opw.opw_inverse_batch(ARM._packed, np.zeros((3, 16)), np.zeros(5), np.zeros(6), np.zeros(6),
                                  np.empty((3, 8, 6))),
])
def test_malformed_calls_raise_instead_of_reading_past_the_end(call, kernels):
    with pytest.raises((ValueError, TypeError, IndexError)):
        call(kernels)


@pytest.mark.parametrize("kernels", [compiled, source], ids=["compiled", "interpreted"])
@pytest.mark.parametrize("q", [
    [0.0] * 5, [0.0] * 7, (0.0,) * 5, [0.0] * 5 + [math.nan], (0.0,) * 5 + (math.inf,), [0] * 6,
    [0.0] * 5 + [np.float64(0.0)], np.zeros(5), np.zeros(6, dtype=np.float32), np.zeros((1, 6)),
    np.array([0.0] * 5 + [-math.inf]), "abcdef", None,
], ids=repr)
def test_the_one_pose_paths_leave_whatever_is_not_six_finite_floats_to_their_caller(kernels, q):
    assert kernels.opw.opw_pose(ARM._packed, q) is None
    assert kernels.chains.product_pose(ARM._product, q) is None
    assert kernels.chains.product_jacobian(ARM._product, q) is None


def _opw_poses(model, rng, count):
    """Poses of random joints, at the wrist singularities, on the J1 axis, out of reach and inside b."""
    for i in range(count):
        q = rng.uniform(-math.pi, math.pi, 6)
        kind = i % 6
        if kind == 1:
            q[4] = model.offsets[4] * model.signs[4] + rng.choice([0.0, math.pi, 1e-9])
        pose = model.forward(q)
        if kind == 2:  # the wrist centre at the base origin, on the J1 axis
            pose[:3, 3] = model.c4 * pose[:3, 2]
        elif kind == 3:
            pose[:3, 3] *= rng.choice([3.0, 1e-3])
        yield pose


@compiled_only
@pytest.mark.parametrize("name", list(OPW_ARMS))
def test_the_compiled_opw_solver_and_forward_equal_the_interpreted_ones_bit_for_bit(name):
    lengths, offsets, signs = OPW_ARMS[name]
    model = opw.OPW(*lengths, offsets=offsets, signs=signs)
    c = model._packed
    rng = np.random.default_rng(10)
    outcomes = set()
    for pose in _opw_poses(model, rng, 3000):
        rows = pose.tolist()
        previous = rng.uniform(-math.pi, math.pi, 6).tolist()
        for reference, j6 in ((model._bounds()[2], None), (previous, None), (previous, 0.3)):  # j6: 5-DOF
            solved = compiled.opw.opw(c, rows, reference, j6)
            assert solved == source.opw.opw(c, rows, reference, j6)
            for q in solved[0]:
                assert compiled.opw.opw_flange(c, q) == source.opw.opw_flange(c, q)
                fast = compiled.opw.opw_pose(c, q)
                np.testing.assert_array_equal(fast, source.opw.opw_pose(c, q))
                np.testing.assert_array_equal(fast, compiled.opw.opw_pose(c, np.array(q)))
            failure = solved[1]
            outcomes.add(failure[0] if failure else "solved")
    assert outcomes >= ({"solved", "reach", "offset"} if model.b else {"solved", "reach"})


@compiled_only
@pytest.mark.parametrize("name", list(OPW_ARMS))
def test_the_compiled_opw_batches_equal_the_interpreted_ones_bit_for_bit(name):
    lengths, offsets, signs = OPW_ARMS[name]
    model = opw.OPW(*lengths, offsets=offsets, signs=signs)
    c = model._packed
    rng = np.random.default_rng(11)
    poses = np.array(list(_opw_poses(model, rng, 300))).reshape(-1, 16)
    joints = rng.uniform(-4, 4, (300, 6))
    fast, slow = np.empty((300, 16)), np.empty((300, 16))
    compiled.opw.opw_forward_batch(c, joints, fast)
    source.opw.opw_forward_batch(c, joints, slow)
    np.testing.assert_array_equal(fast, slow)
    narrow = np.array([-math.pi, -1.7, -1.0, -3.5, -2.0, -7.0]), np.array([math.pi, 1.9, 1.1, 3.5, 2.0, 7.0])
    for lower, upper in ((np.full(6, -np.inf), np.full(6, np.inf)), narrow):
        reference = (lower + upper) / 2 if np.isfinite(lower).all() else np.zeros(6)
        fast, slow = np.empty((300, 8, 6)), np.empty((300, 8, 6))
        compiled.opw.opw_inverse_batch(c, poses, lower, upper, reference, fast)
        source.opw.opw_inverse_batch(c, poses, lower, upper, reference, slow)
        np.testing.assert_array_equal(fast, slow)
        assert 0 < np.isnan(fast[..., 0]).sum() < fast[..., 0].size  # some branches kept, some refused


@pytest.mark.parametrize("name", list(OPW_ARMS))
def test_the_one_call_inverse_gives_what_the_general_path_gives(name):
    from robohal.kinematics import JointLimits
    from robohal.kinematics.base import pose_rows

    lengths, offsets, signs = OPW_ARMS[name]
    narrow = JointLimits(lower=[-math.pi, -1.7, -1.0, -3.5, -2.0, -7.0], upper=[math.pi, 1.9, 1.1, 3.5, 2.0, 7.0],
                         velocity=[2.0] * 6, acceleration=10.0, jerk=200.0)
    rng = np.random.default_rng(12)
    taken = 0
    for limits in (None, narrow):
        model = opw.OPW(*lengths, offsets=offsets, signs=signs, limits=limits)
        lower, upper, centre = model._bound_arrays()
        for pose in _opw_poses(model, rng, 600):
            rows, reason, may_repeat = model._solve(pose_rows(pose), None)
            general = model._finish(rows, None, reason, may_repeat, normalised=True)
            fast = model.inverse(pose)
            np.testing.assert_array_equal(fast, general)
            assert fast.reason == general.reason
            out, slow = np.empty((8, 6)), np.empty((8, 6))
            count = compiled.opw.opw_sorted(model._packed, pose, lower, upper, centre, out)
            assert count == source.opw.opw_sorted(model._packed, pose, lower, upper, centre, slow)
            np.testing.assert_array_equal(out[:count], slow[:count])
            taken += count > 0
    assert taken > 300  # the one call served most poses
