import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from robohal import spatial
from robohal.errors import InvalidArgument

finite = st.floats(-10, 10, allow_nan=False)
quats = arrays(np.float64, (4,), elements=st.floats(-1, 1)).filter(lambda q: np.linalg.norm(q) > 0.1)


@given(quats)
def test_quaternion_matrix_round_trip(q):
    q = q / np.linalg.norm(q)
    back = spatial.matrix_to_quat(spatial.quat_to_matrix(q))
    assert np.allclose(back, q, atol=1e-9) or np.allclose(back, -q, atol=1e-9)  # q and -q are one rotation
    assert back[0] >= 0
    rotation = spatial.quat_to_matrix(q)
    assert np.allclose(rotation @ rotation.T, np.eye(3), atol=1e-12)


@given(arrays(np.float64, (3,), elements=st.floats(-3.0, 3.0)))
def test_rotation_vector_round_trip(v):
    rotation = spatial.rotvec_to_matrix(v)
    assert np.allclose(spatial.rotvec_to_matrix(spatial.matrix_to_rotvec(rotation)), rotation, atol=1e-9)


@given(arrays(np.float64, (3,), elements=st.floats(-1.5, 1.5)))
def test_rpy_round_trip(rpy):
    assert np.allclose(spatial.matrix_to_rpy(spatial.rpy_to_matrix(rpy)), rpy, atol=1e-9)


def test_rpy_convention_is_z_y_x():
    rotation = spatial.rpy_to_matrix([0.0, 0.0, np.pi / 2])
    assert np.allclose(rotation @ [1, 0, 0], [0, 1, 0])
    rotation = spatial.rpy_to_matrix([np.pi / 2, 0.0, 0.0])
    assert np.allclose(rotation @ [0, 1, 0], [0, 0, 1])


def test_everything_broadcasts_over_batches():
    rng = np.random.default_rng(1)
    quat = rng.normal(size=(5, 3, 4))
    xyz = rng.normal(size=(5, 3, 3))
    poses = spatial.pose_from_xyz_quat(xyz, quat)
    assert poses.shape == (5, 3, 4, 4)
    back_xyz, back_quat = spatial.pose_to_xyz_quat(poses)
    assert np.allclose(back_xyz, xyz)
    assert np.allclose(np.abs(np.sum(back_quat * quat / np.linalg.norm(quat, axis=-1, keepdims=True), -1)), 1)
    inverse = spatial.invert(poses)
    assert np.allclose(inverse @ poses, np.eye(4), atol=1e-12)


def test_interpolation_ends_on_both_poses_and_moves_straight():
    a = spatial.pose_from_xyz_rpy([0.1, 0.2, 0.3], [0.1, 0.2, 0.3])
    b = spatial.pose_from_xyz_rpy([0.5, -0.2, 0.1], [-0.4, 0.1, 1.2])
    path = spatial.interpolate(a, b, np.linspace(0, 1, 11))
    assert np.allclose(path[0], a) and np.allclose(path[-1], b)
    steps = np.linalg.norm(np.diff(path[:, :3, 3], axis=0), axis=1)
    assert np.allclose(steps, steps[0])
    _, angles = spatial.distance(path[1:], path[:-1])
    assert np.allclose(angles, angles[0])


def test_interpolation_broadcasts_over_pose_pairs():
    rng = np.random.default_rng(3)
    a = spatial.pose_from_xyz_rpy(rng.uniform(-1, 1, (6, 3)), rng.uniform(-3, 3, (6, 3)))
    b = spatial.pose_from_xyz_rpy(rng.uniform(-1, 1, (6, 3)), rng.uniform(-3, 3, (6, 3)))
    s = rng.uniform(0, 1, 6)
    batched = spatial.interpolate(a, b, s)
    assert batched.shape == (6, 4, 4)
    for i in range(6):
        assert np.allclose(batched[i], spatial.interpolate(a[i], b[i], s[i]), atol=1e-12)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_is_refused(bad):
    with pytest.raises(InvalidArgument, match="NaN or inf"):
        spatial.pose_from_xyz_quat([0, 0, bad], [1, 0, 0, 0])
    pose = np.eye(4)
    pose[0, 3] = bad
    with pytest.raises(InvalidArgument):
        spatial.as_pose(pose)


def test_malformed_poses_are_refused():
    with pytest.raises(InvalidArgument, match="shape"):
        spatial.as_pose(np.eye(3))
    skewed = np.eye(4)
    skewed[0, 1] = 0.5
    with pytest.raises(InvalidArgument, match="orthonormal"):
        spatial.as_pose(skewed)
    with pytest.raises(InvalidArgument, match="zero length"):
        spatial.quat_to_matrix([0, 0, 0, 0])


@settings(max_examples=50)
@given(arrays(np.float64, (2, 3), elements=finite), arrays(np.float64, (2, 3), elements=st.floats(-3, 3)))
def test_pose_error_is_zero_only_at_the_pose(xyz, rv):
    a = spatial.identity()
    a[:3, :3] = spatial.rotvec_to_matrix(rv[0])
    a[:3, 3] = xyz[0]
    assert np.allclose(spatial.pose_error(a, a), 0)
    b = a.copy()
    b[:3, 3] += [0.01, 0, 0]
    assert np.allclose(spatial.pose_error(b, a), [0.01, 0, 0, 0, 0, 0], atol=1e-12)


def test_matrix_to_quat_takes_poses_too():
    pose = spatial.rotation_z(0.5) @ spatial.from_translation([1.0, 2.0, 3.0])
    assert np.allclose(spatial.matrix_to_quat(pose), spatial.matrix_to_quat(pose[:3, :3]))
    assert np.allclose(spatial.matrix_to_quat(np.stack([pose, pose])), [[np.cos(0.25), 0, 0, np.sin(0.25)]] * 2)
