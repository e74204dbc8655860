"""UrdfChain: the shipped Franka URDFs against the DH models, small URDFs against
pinocchio, the Kinematics protocol (IK, differential IK) and the file errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from robohal import spatial
from robohal.errors import InvalidArgument
from robohal.kinematics import DifferentialIk, IkOptions, UrdfChain
from robohal_franka import models as franka_models

pin = pytest.importorskip("pinocchio", reason="pinocchio (PyPI pin) is a test dependency: core[test]")

HERE = Path(__file__).resolve().parent / "urdf_files"
FRANKA = Path(franka_models.__file__).resolve().parent / "urdf"
# (file, base link, tip link): one with prismatic, fixed, continuous joints, oblique axes,
# rpy origins and fingers off the path; a six-axis arm with rpy origins; the FR3.
PIN_CASES = [
    (HERE / "slider_gripper.urdf", "world", "tool0"),
    (HERE / "slider_gripper.urdf", "base_link", "wrist"),
    (HERE / "six_axis.urdf", "base_link", "tool0"),
    (FRANKA / "fr3.urdf", "link0", "link8"),
]


def random_joints(chain: UrdfChain, count: int, seed: int = 0) -> np.ndarray:
    lower = np.where(np.isfinite(chain.limits.lower), chain.limits.lower, -np.pi)
    upper = np.where(np.isfinite(chain.limits.upper), chain.limits.upper, np.pi)
    return np.random.default_rng(seed).uniform(lower, upper, (count, chain.dof))


@pytest.mark.parametrize("name", ["fr3", "panda"])
def test_the_shipped_franka_urdfs_equal_the_dh_models(name):
    dh = getattr(franka_models, name)()
    chain = UrdfChain.from_urdf(FRANKA / f"{name}.urdf", "link0", "link8")
    q = random_joints(chain, 200, seed=1)
    assert np.abs(chain.forward(q) - dh.forward(q)).max() < 1e-12
    assert np.abs(chain.jacobian(q) - dh.jacobian(q)).max() < 1e-12
    for row in q[:20]:  # the scalar paths too
        assert np.abs(chain.forward(row) - dh.forward(row)).max() < 1e-12
        assert np.abs(chain.jacobian(row) - dh.jacobian(row)).max() < 1e-12
    # Link frames: joint i's child link is the DH frame i (Franka's modified DH).
    assert np.abs(chain.joint_poses(q) - dh.joint_poses(q)).max() < 1e-12
    # Limits and velocities from the file.
    assert np.allclose(chain.limits.lower, dh.limits.lower) and np.allclose(chain.limits.upper, dh.limits.upper)
    assert np.allclose(chain.limits.velocity, dh.limits.velocity)
    assert chain.joint_names == tuple(f"joint{i}" for i in range(1, 8))


def pinocchio_reference(path: Path, base: str, tip: str, chain: UrdfChain, q: np.ndarray):
    """Tip pose in the base link and geometric Jacobian in base axes, from pinocchio."""
    model = pin.buildModelFromUrdf(str(path))
    data = model.createData()
    config = pin.neutral(model)
    base_id, tip_id = model.getFrameId(base), model.getFrameId(tip)
    columns = []
    for name, value, kind in zip(chain.joint_names, q, chain.kinds, strict=True):
        joint = model.joints[model.getJointId(name)]
        if kind == "continuous":  # pinocchio keeps a continuous joint as (cos, sin)
            config[joint.idx_q:joint.idx_q + 2] = np.cos(value), np.sin(value)
        else:
            config[joint.idx_q] = value
        columns.append(joint.idx_v)
    pin.framesForwardKinematics(model, data, config)
    base_pose = data.oMf[base_id].homogeneous
    pose = np.linalg.solve(base_pose, data.oMf[tip_id].homogeneous)
    jac = pin.computeFrameJacobian(model, data, config, tip_id, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:, columns]
    turn = base_pose[:3, :3].T
    return pose, np.vstack([turn @ jac[:3], turn @ jac[3:]])


@pytest.mark.parametrize(("path", "base", "tip"), PIN_CASES, ids=lambda c: getattr(c, "stem", c))
def test_urdf_chains_match_pinocchio(path, base, tip):
    chain = UrdfChain.from_urdf(path, base, tip)
    for row in random_joints(chain, 30, seed=2):
        pose, jac = pinocchio_reference(path, base, tip, chain, row)
        assert np.abs(chain.forward(row) - pose).max() < 1e-12
        assert np.abs(chain.jacobian(row) - jac).max() < 1e-12
        assert np.abs(chain.forward(row[None])[0] - pose).max() < 1e-12  # the batched path
        assert np.abs(chain.jacobian(row[None])[0] - jac).max() < 1e-12


def test_the_test_arm_is_read_as_written():
    chain = UrdfChain.from_urdf(HERE / "slider_gripper.urdf", "world", "tool0")
    assert chain.joint_names == ("turn", "lift", "shoulder", "elbow", "wrist_roll")  # fingers ignored
    assert chain.kinds == ("revolute", "prismatic", "revolute", "revolute", "continuous")
    assert chain.link_names == ("column", "carriage", "arm", "forearm", "wrist", "tool0")
    assert chain.periodic == (True, False, True, True, True)
    assert chain.limits.lower[1] == -0.1 and chain.limits.upper[1] == 0.4  # metres
    assert chain.limits.lower[4] == -np.inf and chain.limits.upper[4] == np.inf  # continuous
    assert chain.limits.velocity.tolist() == [2, 0.5, 1.5, 2.5, 4]
    # No rates in a URDF: full speed in 0.2 s, full acceleration in 0.05 s, unless given.
    assert np.allclose(chain.limits.acceleration, chain.limits.velocity / 0.2)
    given = UrdfChain.from_urdf(HERE / "slider_gripper.urdf", "world", "tool0", acceleration=[1, 2, 3, 4, 5], jerk=50)
    assert given.limits.acceleration.tolist() == [1, 2, 3, 4, 5] and given.limits.jerk.tolist() == [50] * 5


def test_joint_poses_are_the_child_links_and_the_tip():
    path = HERE / "slider_gripper.urdf"
    chain = UrdfChain.from_urdf(path, "world", "tool0")
    model = pin.buildModelFromUrdf(str(path))
    data = model.createData()
    q = random_joints(chain, 1, seed=3)[0]
    config = pin.neutral(model)
    for name, value, kind in zip(chain.joint_names, q, chain.kinds, strict=True):
        index = model.joints[model.getJointId(name)].idx_q
        config[index:index + (2 if kind == "continuous" else 1)] = (
            (np.cos(value), np.sin(value)) if kind == "continuous" else value)
    pin.framesForwardKinematics(model, data, config)
    frames = chain.joint_poses(q)
    assert frames.shape == (6, 4, 4)
    for frame, link in zip(frames, chain.link_names, strict=True):
        assert np.abs(frame - data.oMf[model.getFrameId(link)].homogeneous).max() < 1e-12


def test_batches_of_any_shape_and_bad_joints():
    chain = UrdfChain.from_urdf(HERE / "six_axis.urdf", "base_link", "tool0")
    q = random_joints(chain, 12, seed=4).reshape(3, 4, 6)
    assert chain.forward(q).shape == (3, 4, 4, 4)
    assert chain.jacobian(q).shape == (3, 4, 6, 6)
    assert chain.joint_poses(q).shape == (3, 4, 7, 4, 4)
    assert np.allclose(chain.forward(q)[1, 2], chain.forward(q[1, 2]), atol=1e-15)
    with pytest.raises(InvalidArgument, match="NaN"):
        chain.forward([0, 0, np.nan, 0, 0, 0])
    with pytest.raises(InvalidArgument, match="6 values"):
        chain.forward([0, 0, 0])


@pytest.mark.parametrize(("path", "base", "tip"), PIN_CASES[::2], ids=lambda c: getattr(c, "stem", c))
def test_numeric_inverse_reaches_what_forward_gives(path, base, tip):
    chain = UrdfChain.from_urdf(path, base, tip)
    goals = random_joints(chain, 3, seed=5)
    for goal in goals:
        target = chain.forward(goal)
        solutions = chain.inverse(target)
        assert len(solutions) >= 1, solutions.reason
        assert np.abs(chain.forward(np.asarray(solutions)) - target).max() < 1e-6
        near = chain.inverse_continuing(target, goal + 0.01)
        assert np.abs(np.asarray(near)[0] - goal).max() < 1e-6
    batch = chain.inverse_batch(chain.forward(goals))
    assert batch.shape == (3, chain.max_solutions, chain.dof)
    assert not np.isnan(batch[:, 0]).any()
    far = spatial.from_translation([50.0, 0.0, 0.0])
    assert len(chain.inverse(far)) == 0 and "reaches at most" in chain.inverse(far).reason


def test_differential_ik_runs_the_same_cycle_as_the_dh_model():
    dh = franka_models.fr3()
    # The rates the URDF lacks, as the DH model has them (the box of every cycle depends on them).
    chain = UrdfChain.from_urdf(FRANKA / "fr3.urdf", "link0", "link8", acceleration=dh.limits.acceleration,
                                jerk=dh.limits.jerk)
    start = np.array(franka_models.READY)
    runs = []
    for model in (dh, chain):
        ik = DifferentialIk(model, IkOptions(), period=0.001)
        ik.reset(start)
        target = model.forward(start)
        q = start
        for k in range(300):
            target = target.copy()
            target[0, 3] += 1e-4 if k < 200 else 0.0  # 2 cm along x at 0.1 m/s, then hold
            q = ik.step(target)
        runs.append(q)
        assert np.abs(model.forward(q)[:3, 3] - target[:3, 3]).max() < 1e-4
    # Round-off apart (the chains' frames differ by 1e-16), the same joints: the redundant joint
    # drifts only in the nullspace, micro-radians.
    assert np.abs(runs[0] - runs[1]).max() < 1e-5


def test_a_prismatic_chain_is_steered_by_the_differential_ik():
    chain = UrdfChain.from_urdf(HERE / "slider_gripper.urdf", "world", "tool0")
    start = np.array([0.2, 0.1, 0.3, -0.4, 0.5])
    ik = DifferentialIk(chain, IkOptions(), period=0.004)
    ik.reset(start)
    target = chain.forward(start + np.array([0.05, 0.02, -0.05, 0.05, 0.1]))  # five joints: a pose they can reach
    for _ in range(2000):  # 8 s: the default rates of a URDF (no acceleration or jerk in it) are gentle
        q = ik.step(target)
    assert np.abs(chain.forward(q) - target).max() < 1e-6


def test_the_chain_is_picklable_and_fixed():
    import pickle

    chain = UrdfChain.from_urdf(HERE / "six_axis.urdf", "base_link", "tool0")
    copy = pickle.loads(pickle.dumps(chain))
    q = random_joints(chain, 4)
    assert np.array_equal(copy.forward(q), chain.forward(q))
    with pytest.raises(AttributeError, match="fixed"):
        chain.tip = np.eye(4)


def write(tmp_path: Path, joints: str, links: str = "a b c") -> Path:
    path = tmp_path / "robot.urdf"
    link_text = "".join(f'<link name="{name}"/>' for name in links.split())
    path.write_text(f'<?xml version="1.0"?><robot name="r">{link_text}{joints}</robot>')
    return path


def joint(name: str, parent: str, child: str, kind: str = "revolute", extra: str = "",
          limit: str = '<limit lower="-1" upper="1" effort="1" velocity="1"/>') -> str:
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<axis xyz="0 0 1"/>{limit}{extra}</joint>')


def test_file_errors_are_one_line_naming_the_file_and_the_problem(tmp_path):
    missing = tmp_path / "nothing.urdf"
    with pytest.raises(InvalidArgument, match=f"{missing}: no such URDF file"):
        UrdfChain.from_urdf(missing, "a", "b")
    broken = tmp_path / "broken.urdf"
    broken.write_text("<robot name='r'><link name='a'></robot>")
    with pytest.raises(InvalidArgument, match=r"broken\.urdf: not well-formed XML"):
        UrdfChain.from_urdf(broken, "a", "b")
    path = write(tmp_path, joint("j1", "a", "b") + joint("j2", "b", "c"))
    with pytest.raises(InvalidArgument, match=r"robot.urdf: tip link 'tool0' is not in the file \(links: a, b, c\)"):
        UrdfChain.from_urdf(path, "a", "tool0")
    with pytest.raises(InvalidArgument, match="base link 'world' is not in the file"):
        UrdfChain.from_urdf(path, "world", "c")
    with pytest.raises(InvalidArgument, match="tip link 'a' does not hang below base link 'c'"):
        UrdfChain.from_urdf(path, "c", "a")
    for case in (
        UrdfChain.from_urdf(path, "a", "c"),
        UrdfChain.from_urdf(path, "b", "c"),
    ):
        assert "\n" not in repr(case)
    errors = {
        "joint 'j2' mimics 'j1'": joint("j1", "a", "b") + joint("j2", "b", "c", extra='<mimic joint="j1"/>'),
        "revolute joint 'j2' has no lower and upper <limit>": joint("j1", "a", "b")
        + joint("j2", "b", "c", limit='<limit effort="1" velocity="1"/>'),
        "joint 'j2' has no positive velocity": joint("j1", "a", "b") + joint("j2", "b", "c", limit=""),
        "joint 'j1' has no positive velocity": joint("j1", "a", "b", kind="continuous", limit="")
        + joint("j2", "b", "c"),
        "joint 'j2' is a floating joint": joint("j1", "a", "b") + joint("j2", "b", "c", kind="floating", limit=""),
        "joint 'j1' has limits": joint("j1", "a", "b", limit='<limit lower="1" upper="-1" effort="1" velocity="1"/>')
        + joint("j2", "b", "c"),
        "no moving joint between 'a' and 'c'": joint("j1", "a", "b", kind="fixed", limit="")
        + joint("j2", "b", "c", kind="fixed", limit=""),
    }
    for message, joints in errors.items():
        path = write(tmp_path, joints)
        with pytest.raises(InvalidArgument) as caught:
            UrdfChain.from_urdf(path, "a", "c")
        assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value), str(caught.value)
        assert "\n" not in str(caught.value)
    with pytest.raises(InvalidArgument, match=r"robot\.urdf: joint limits: .* has 2 values, the other limits 3"):
        UrdfChain.from_urdf(write(tmp_path, joint("j1", "a", "b") + joint("j2", "b", "c")), "a", "c",
                            acceleration=[1, 2, 3])
    with pytest.raises(InvalidArgument, match=r"robot\.urdf: acceleration must be an array of real numbers"):
        UrdfChain.from_urdf(write(tmp_path, joint("j1", "a", "b") + joint("j2", "b", "c")), "a", "c",
                            acceleration="fast")


def test_a_mimic_joint_off_the_path_is_ignored(tmp_path):
    joints = (joint("j1", "a", "b") + joint("j2", "b", "c")
              + joint("finger", "b", "d", kind="prismatic", extra='<mimic joint="j1"/>'))
    chain = UrdfChain.from_urdf(write(tmp_path, joints, "a b c d"), "a", "c")
    assert chain.joint_names == ("j1", "j2")


def test_the_constructor_refuses_what_is_no_chain():
    with pytest.raises(InvalidArgument, match="non-zero"):
        UrdfChain(np.eye(4)[None], [[0, 0, 0]], ["revolute"])
    with pytest.raises(InvalidArgument, match="kinds"):
        UrdfChain(np.eye(4)[None], [[0, 0, 1]], ["ball"])
    with pytest.raises(InvalidArgument, match="limits"):
        from robohal.kinematics import JointLimits

        UrdfChain(np.eye(4)[None], [[0, 0, 1]], ["revolute"], limits=JointLimits([-1, -1], [1, 1], 1, 1, 1))


def random_chain(rng: np.random.Generator, n: int, same_axis_at: int | None = None) -> UrdfChain:
    rotations = spatial.rotvec_to_matrix(rng.normal(size=(n, 3)))
    origins = np.tile(np.eye(4), (n, 1, 1))
    origins[:, :3, :3] = rotations
    origins[:, :3, 3] = rng.uniform(-0.3, 0.3, (n, 3))
    axes = rng.normal(size=(n, 3))
    if same_axis_at is not None:  # two joints turning about one line
        origins[same_axis_at] = np.eye(4)
        axes[same_axis_at] = axes[same_axis_at - 1]
    tip = spatial.pose_from_xyz_rpy(rng.uniform(-0.1, 0.1, 3), rng.uniform(-1, 1, 3))
    return UrdfChain(origins, axes, ["revolute"] * n, tip)


@pytest.mark.parametrize("same_axis_at", [None, 2])
def test_turning_chains_run_one_configuration_on_the_dh_path(same_axis_at):
    """Any chain of turning joints is a DH chain: the scalar path agrees with the batched one."""
    rng = np.random.default_rng(8)
    chains = [random_chain(rng, 6, same_axis_at) for _ in range(5)]
    chains += [UrdfChain.from_urdf(HERE / "six_axis.urdf", "base_link", "tool0"),
               UrdfChain.from_urdf(FRANKA / "fr3.urdf", "link0", "link8")]
    for chain in chains:
        assert chain.uses_dh_path
        for row in random_joints(chain, 20, seed=9):
            _, jac = chain.frame_and_jacobian_lists(row.tolist())
            assert np.abs(chain.forward(row) - chain.forward(row[None])[0]).max() < 1e-12
            assert np.abs(np.array(jac) - chain.jacobian(row[None])[0]).max() < 1e-12
    slider = UrdfChain.from_urdf(HERE / "slider_gripper.urdf", "world", "tool0")
    assert not slider.uses_dh_path  # a prismatic joint: its own scalar path
