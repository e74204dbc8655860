"""The compiled kernels (robohal.kinematics._kernels) against their Python reference.

The box, the chain FK and the OPW solver are the same arithmetic in the same order,
so they must agree to the last bit; the damped steps solve instead of inverting, so
they agree to round-off. Every model's IK cycle must then follow the same path either way.
"""

import math
import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest
import robohal
from robohal.kinematics import chain, diffik, opw
from robohal.kinematics.chain import DHChain
from robohal.kinematics.diffik import DifferentialIk, IkOptions

try:
    from robohal.kinematics import _kernels
except ImportError:  # installed without a C compiler: only the first test has something to say
    _kernels = None
compiled_only = pytest.mark.skipif(_kernels is None, reason="robohal was installed without a C compiler")

MODELS = ["franka.fr3", "franka.panda", "abb.irb1410", "abb.irb2400", "arduino.planar2"]


def test_the_accelerator_is_built_where_there_is_a_compiler():
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler})")
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        pytest.skip("no Python headers (python3-dev)")
    assert diffik.COMPILED, "a C compiler and Python's headers are here, yet robohal.kinematics._kernels was not built"
    assert diffik._box is _kernels.box and chain._compiled_chain is _kernels.chain
    assert opw._compiled_solve is _kernels.opw and opw._compiled_forward is _kernels.opw_forward


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
def test_the_compiled_box_equals_the_python_box_bit_for_bit(name, period):
    limits = robohal.get_model(name).limits
    joints = diffik._joint_constants(diffik._limit_lists(limits), period)
    rng = np.random.default_rng(7)
    narrowed = 0
    for h3, h2, h1 in _histories(rng, limits, period, 1500):
        goal = (np.array(h1) + rng.normal(0, 1, limits.dof) * rng.choice([1e-5, 1e-3, 0.1])).tolist()
        follow = (rng.normal(0, 1, limits.dof) * rng.choice([0.0, 1e-5, 1e-3])).tolist()
        assert _kernels.box(h3, h2, h1, period, joints) == diffik._box_python(h3, h2, h1, period, joints)
        compiled = _kernels.box(h3, h2, h1, period, joints, goal, follow)
        assert compiled == diffik._box_python(h3, h2, h1, period, joints, goal, follow)
        narrowed += compiled != _kernels.box(h3, h2, h1, period, joints)
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
def test_the_compiled_chain_equals_the_python_chain_bit_for_bit(model):
    while not isinstance(model, DHChain):  # the Franka models wrap their chain
        model = model.robot
    rng = np.random.default_rng(8)
    for _ in range(2000):
        q = rng.uniform(-4, 4, model.dof).tolist()
        jac = [[0.0] * model.dof for _ in range(6)]
        frame = model._fk(q, jac)
        assert _kernels.chain(model._packed, q, True) == (frame, jac)
        assert _kernels.chain(model._packed, q, False) == (frame, None)


def _without_accelerator(monkeypatch):
    monkeypatch.setattr(diffik, "_box", diffik._box_python)
    monkeypatch.setattr(diffik, "_compiled_steps", None)
    monkeypatch.setattr(chain, "_compiled_chain", None)
    monkeypatch.setattr(opw, "_compiled_solve", None)
    monkeypatch.setattr(opw, "_compiled_forward", None)


@compiled_only
@pytest.mark.parametrize("name", MODELS)
def test_the_compiled_steps_agree_with_numpy_to_round_off(name, monkeypatch):
    model = robohal.get_model(name)
    compiled = DifferentialIk(model, IkOptions(damping=0.05, rotation_weight=0.3))
    reference = DifferentialIk(model, IkOptions(damping=0.05, rotation_weight=0.3))
    rng = np.random.default_rng(9)
    cases = []
    for _ in range(300):
        _, jac = model.frame_and_jacobian_lists(rng.uniform(model.limits.lower, model.limits.upper).tolist())
        cases.append((jac, rng.normal(0, 0.01, 6).tolist(), rng.normal(0, 1e-4, 6).tolist(),
                      rng.normal(0, 0.3, model.dof).tolist()))
    ours = [compiled._damped_steps(*case) for case in cases]
    only_error = [compiled._damped_steps(jac, error, None, None) for jac, error, _, _ in cases]
    _without_accelerator(monkeypatch)
    for case, got, error_only in zip(cases, ours, only_error, strict=True):
        expected = reference._damped_steps(*case)
        # Round-off of a solve grows with the system's condition number; the nullspace part of
        # a 6-joint arm's offset is a cancellation, so it is measured against the offset.
        weighted = np.array(case[0]) * np.array(reference._weights)[:, None]
        systems = weighted @ weighted.T + np.eye(6) * np.array([[reference._damping2], [diffik.NULLSPACE_DAMPING**2]])[:, :, None]
        damped, barely_damped = np.linalg.cond(systems)
        scales = [max(map(abs, expected[0])) * damped, max(map(abs, expected[1])) * damped,
                  max(map(abs, case[3])) * barely_damped]
        for ours_part, numpy_part, scale in zip(got, expected, scales, strict=True):
            np.testing.assert_allclose(ours_part, numpy_part, rtol=0, atol=1e-13 * scale)
        assert error_only[1] is None and error_only[2] is None
        np.testing.assert_allclose(error_only[0], got[0], rtol=0, atol=1e-15)


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

    compiled, compiled_residual = circle()
    _without_accelerator(monkeypatch)
    python, python_residual = circle()
    assert np.ptp(compiled, axis=0).max() > 1e-3  # it moved
    # round-off apart: after the jump the box's bound searches can grow it to ~1e-8 rad
    np.testing.assert_allclose(compiled, python, rtol=0, atol=1e-6)
    assert compiled_residual == pytest.approx(python_residual, rel=1e-3, abs=1e-9)


@compiled_only
def test_a_list_shrunk_while_it_converts_is_an_error_not_a_crash():
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
        lambda: _kernels.chain(model._packed, shrinking(7), True),
        lambda: _kernels.box(shrinking(7), [0.0] * 7, [0.0] * 7, 0.001, joints),
        lambda: _kernels.steps([shrinking(7)] + [[0.0] * 7] * 5, [1.0] * 6, 1e-4, 1e-10, [0.0] * 6, None, None),
        lambda: _kernels.opw(opw.OPW(0.1, -0.1, 0, 0.6, 0.7, 0.7, 0.1)._packed, [shrinking(4), *np.eye(4).tolist()[1:]],
                             [0.0] * 6, None),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="changed size"):
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


@compiled_only
@pytest.mark.parametrize("call", [
    lambda: _kernels.box([0.0], [0.0], [0.0], 0.001, [(0.0,) * 9]),
    lambda: _kernels.box([0.0], [0.0], [0.0], 0.001, [(0.0,) * 10], [0.0, 1.0], [0.0]),
    lambda: _kernels.chain(b"\0" * 27 * 8, [0.0], True),
    lambda: _kernels.steps([[0.0] * 3] * 5, [1.0] * 6, 1e-4, 1e-10, [0.0] * 6, None, None),
    lambda: _kernels.steps([[0.0] * 3] * 6, [1.0] * 6, 1e-4, 1e-10, [0.0] * 5, None, None),
    lambda: _kernels.steps([[0.0] * 3] * 6, [1.0] * 6, 1e-4, 1e-10, [0.0] * 6, None, [0.0] * 2),
    lambda: _kernels.opw_forward(b"\0" * 8, [0.0] * 6),
    lambda: _kernels.opw_forward(opw.OPW(0.1, -0.1, 0, 0.6, 0.7, 0.7, 0.1)._packed, [0.0] * 5),
    lambda: _kernels.opw(opw.OPW(0.1, -0.1, 0, 0.6, 0.7, 0.7, 0.1)._packed, [[1.0, 0, 0, 0]] * 2, [0.0] * 6, None),
    lambda: _kernels.opw(opw.OPW(0.1, -0.1, 0, 0.6, 0.7, 0.7, 0.1)._packed, np.eye(4).tolist(), [0.0] * 5, None),
])
def test_malformed_calls_raise_instead_of_reading_past_the_end(call):
    with pytest.raises((ValueError, TypeError)):
        call()


OPW_ARMS = {  # (a1, a2, b, c1, c2, c3, c4), offsets, signs: sign flips (KR6 R700) and b != 0 (TX40)
    "irb2400": ((0.100, -0.135, 0.0, 0.615, 0.705, 0.755, 0.085), (0, 0, -math.pi / 2, 0, 0, 0), (1,) * 6),
    "kr6_r700": ((0.025, -0.035, 0.0, 0.400, 0.315, 0.365, 0.080), (0, -math.pi / 2, 0, 0, 0, 0), (-1, 1, 1, -1, 1, -1)),
    "tx40": ((0.0, 0.0, 0.035, 0.320, 0.225, 0.225, 0.065), (0, 0, -math.pi / 2, 0, 0, 0), (1,) * 6),
}


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
def test_the_compiled_opw_solver_and_forward_equal_the_python_ones_bit_for_bit(name):
    lengths, offsets, signs = OPW_ARMS[name]
    model = opw.OPW(*lengths, offsets=offsets, signs=signs)
    rng = np.random.default_rng(10)
    outcomes = set()
    for pose in _opw_poses(model, rng, 3000):
        rows = pose.tolist()
        previous = rng.uniform(-math.pi, math.pi, 6).tolist()
        for args in ((None,), (previous,), (None, 0.3), (previous, -2.0)):  # previous, then j6 (5-DOF)
            compiled = model._solve(rows, *args)
            assert compiled == model._solve_python(rows, *args)
            for q in compiled[0]:
                assert model._fk_scalar(q) == model._fk_scalar_python(q)
            reason = compiled[1] or ""
            outcomes.add("reach" if "reaches" in reason else "offset" if "offset b" in reason else reason or "solved")
    assert outcomes >= ({"solved", "reach", "offset"} if model.b else {"solved", "reach"})
