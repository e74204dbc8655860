"""The numeric inverse of serial chains (robohal.kinematics.numeric and its kernel,
kernels.numeric): compiled and interpreted it finds the same joints to the last bit;
what it returns reaches the pose within the tolerance and the limits, and what it cannot
reach it says so with a reason, within its budget; seeded, unseeded, batched, along a
path, through the wrappers, on every core."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import numpy as np
import pytest
import robohal
from robohal import spatial
from robohal.errors import InvalidArgument
from robohal.kinematics import Base, Tool, UrdfChain, kernels
from robohal.kinematics.numeric import STARTS, search_for

compiled = kernels.load_compiled()
source = kernels.load_source()
compiled_only = pytest.mark.skipif(not compiled.COMPILED, reason="robohal was installed without a C compiler")
BOTH = pytest.mark.parametrize("form", [compiled, source], ids=["compiled", "interpreted"])
URDF_FILES = Path(__file__).resolve().parent / "urdf_files"
# Long enough that no search here ends on the clock: the results then depend on nothing else.
FOREVER = 600.0


def _chains():
    """The FR3 (a modified-DH chain of 7), a URDF chain with a slide, continuous and oblique
    joints, and a URDF six-axis arm."""
    yield robohal.get_model("franka.fr3")
    yield UrdfChain.from_urdf(URDF_FILES / "slider_gripper.urdf", "world", "tool0")
    yield UrdfChain.from_urdf(URDF_FILES / "six_axis.urdf", "base_link", "tool0")


CHAINS = list(_chains())
IDS = ["fr3", "slider", "six-axis"]


def _ranges(chain):
    lower, upper = chain.limits.lower, chain.limits.upper
    low = np.where(np.isfinite(lower), lower, -math.pi)
    high = np.where(np.isfinite(upper), upper, math.pi)
    return lower, upper, low, high


def _reachable(chain, count, seed):
    _, _, low, high = _ranges(chain)
    q = np.random.default_rng(seed).uniform(low, high, (count, chain.dof))
    return q, chain.forward(q)


def _reaches(chain, q, pose, position=1e-6, rotation=1e-6):
    error = spatial.pose_error(pose, chain.forward(q))
    return (np.linalg.norm(error[..., :3], axis=-1) <= position) & (np.linalg.norm(error[..., 3:], axis=-1) <= rotation)


@compiled_only
@pytest.mark.parametrize("chain", CHAINS, ids=IDS)
def test_the_compiled_search_finds_what_the_interpreted_one_finds_bit_for_bit(chain):
    lower, upper, low, high = _ranges(chain)
    constants = chain.chain_constants()
    centre = 0.5 * (low + high)
    _, poses = _reachable(chain, 3, seed=1)
    flat = np.ascontiguousarray(poses.reshape(-1, 16))
    for pose in flat:
        answers = []
        for form in (compiled, source):
            out = np.zeros(chain.dof)
            report = form.numeric.solve(constants, pose, centre, lower, upper, low, high, 1e-6, 1e-6, FOREVER, out)
            answers.append((report, out.tolist()))
        assert answers[0] == answers[1]
        assert answers[0][0][0], "solved"
    every = []
    for form in (compiled, source):
        out = np.full((2, 8, chain.dof), np.nan)
        counts = np.zeros(2, dtype=np.intc)
        form.numeric.solve_all_batch(constants, flat[:2], centre, lower, upper, low, high, 1e-6, 1e-6, FOREVER, 6,
                                     1e-3, out, counts)
        every.append((out, counts))
    np.testing.assert_array_equal(every[0][0], every[1][0])
    np.testing.assert_array_equal(every[0][1], every[1][1])
    assert (every[0][1] >= 1).all()


@compiled_only
def test_the_seeded_batch_and_the_path_agree_compiled_or_not():
    chain = CHAINS[0]
    lower, upper, low, high = _ranges(chain)
    constants = chain.chain_constants()
    start = chain.limits.centre
    poses = chain.forward(start + np.linspace(0, 0.3, 4)[:, None])
    flat = np.ascontiguousarray(poses.reshape(-1, 16))
    for path in (False, True):
        outs = []
        for form in (compiled, source):
            out = np.full((4, chain.dof), np.nan)
            report = np.empty((4, 4))
            form.numeric.solve_batch(constants, flat, start[None], path, lower, upper, low, high, 1e-6, 1e-6, FOREVER,
                                     out, report)
            outs.append((out, report))
        np.testing.assert_array_equal(outs[0][0], outs[1][0])
        np.testing.assert_array_equal(outs[0][1], outs[1][1])


@pytest.mark.parametrize("chain", CHAINS, ids=IDS)
def test_every_solution_reaches_its_pose_within_the_limits(chain):
    q, poses = _reachable(chain, 20, seed=2)
    for goal, pose in zip(q, poses, strict=True):
        every = chain.inverse(pose)
        assert every.found, every.reason
        assert _reaches(chain, np.asarray(every), pose).all() and chain.limits.within(every).all()
        distinct = np.abs(np.asarray(every)[:, None] - np.asarray(every)[None]).max(axis=-1)
        assert (distinct + np.eye(len(every)) * 1.0 > 1e-3).all()  # no two the same
        centre = np.array(chain._bounds()[2])  # (0 for a joint without limits)
        np.testing.assert_array_equal(np.sum(np.abs(np.asarray(every) - np.nan_to_num(centre)), axis=1),
                                      np.sort(np.sum(np.abs(np.asarray(every) - np.nan_to_num(centre)), axis=1)))
        seed = goal + 0.01
        near = chain.inverse_continuing(pose, seed)
        assert near.found and _reaches(chain, near[0], pose)
        if chain.dof == 6:  # from next to it, the one next to it (to 1e-6 where it is well conditioned)
            np.testing.assert_allclose(near[0], goal, atol=1e-6 / min(1.0, np.linalg.svd(chain.jacobian(goal))[1][-1]))
        else:  # a redundant arm: one of its solutions next to the seed (the goal is one)
            assert np.linalg.norm(near[0] - seed) <= 2 * np.linalg.norm(goal - seed)


def test_a_solution_is_polished_far_below_its_tolerance_and_a_loose_one_is_kept_loose():
    chain = CHAINS[0]
    _, poses = _reachable(chain, 10, seed=3)
    for pose in poses:
        found = chain.inverse_continuing(pose, chain.limits.centre)
        assert _reaches(chain, found[0], pose, 1e-10, 1e-10)  # one Gauss-Newton step past 1e-6
        loose = chain.inverse_continuing(pose, chain.limits.centre, tolerance=(1e-3, 1e-2))
        assert _reaches(chain, loose[0], pose, 1e-3, 1e-2)


def test_the_same_pose_gets_the_same_answer():
    chain = CHAINS[0]
    _, poses = _reachable(chain, 5, seed=4)
    for pose in poses:
        np.testing.assert_array_equal(chain.inverse(pose), chain.inverse(pose))
        np.testing.assert_array_equal(chain.inverse_continuing(pose, chain.limits.centre),
                                      chain.inverse_continuing(pose, chain.limits.centre))


@pytest.mark.parametrize("budget", [0.001, 0.02])
def test_an_unreachable_pose_has_no_solution_and_says_why(budget):
    chain = CHAINS[0]
    centre, radius = chain.reach_bound
    pose = np.eye(4)
    pose[:3, 3] = centre + np.array([0.0, 0.0, 0.97 * radius])  # inside the reach sphere, yet out of reach stretched up
    pose[:3, :3] = spatial.rotation_x(math.pi)[:3, :3]
    for found in (chain.inverse(pose, budget=budget), chain.inverse_continuing(pose, chain.limits.centre, budget=budget)):
        assert not found.found and found.shape == (0, 7)
        assert "no joint configuration within the limits reaches the pose to 1e-06 m and 1e-06 rad" in found.reason
        assert f"in {budget * 1e3:g} ms" in found.reason and "the closest came within" in found.reason
    batch = chain.inverse_batch(np.stack([pose, chain.forward(chain.limits.centre)]), chain.limits.centre, budget=budget)
    assert np.isnan(batch[0]).all() and _reaches(chain, batch[1], chain.forward(chain.limits.centre))


def test_what_is_beyond_reach_is_refused_before_any_search():
    chain = CHAINS[0]
    far = spatial.from_translation([5.0, 0.0, 0.0])
    assert "target is 5 m from the base; the arm reaches at most" in chain.inverse(far).reason


@pytest.mark.parametrize(("budget", "tolerance"), [
    (0.0, None), (-1.0, None), (math.nan, None), ("soon", None), (None, 0.0), (None, (1e-6,)), (None, (1e-6, -1.0)),
    (None, (1e-6, math.inf)), (None, "tight"),
])
def test_a_wrong_budget_or_tolerance_is_refused_on_every_model(budget, tolerance):
    pose = CHAINS[0].forward(CHAINS[0].limits.centre)
    for model in (CHAINS[0], robohal.get_model("abb.irb2400")):
        with pytest.raises(InvalidArgument):
            model.inverse(pose, budget=budget, tolerance=tolerance)
        with pytest.raises(InvalidArgument):
            model.inverse_batch(pose[None], budget=budget, tolerance=tolerance)


def test_a_tolerance_is_one_number_or_a_metres_radians_pair():
    one = search_for(tolerance=1e-5)
    assert (one.position, one.rotation) == (1e-5, 1e-5)
    search = search_for(0.002, (1e-5, 1e-4))
    assert (search.budget, search.position, search.rotation) == (0.002, 1e-5, 1e-4)


@pytest.mark.parametrize("chain", CHAINS, ids=IDS)
def test_the_unseeded_batch_holds_what_inverse_holds(chain):
    _, poses = _reachable(chain, 6, seed=5)
    batch = chain.inverse_batch(poses)
    assert batch.shape == (6, chain.max_solutions, chain.dof)
    found = ~np.isnan(batch[..., 0])
    assert found[:, 0].all() and not (found[:, 1:] & ~found[:, :-1]).any()  # packed to the front
    assert _reaches(chain, batch[found], np.repeat(poses, found.sum(axis=1), axis=0)).all()
    for pose, rows, count in zip(poses, batch, found.sum(axis=1), strict=True):
        single = chain._candidates(pose, None)[0]  # the same search, one pose at a time
        np.testing.assert_array_equal(rows[:count], single)


def test_a_seeded_batch_gives_one_solution_per_pose_from_its_seed():
    chain = CHAINS[0]
    q, poses = _reachable(chain, 40, seed=6)
    seeded = chain.inverse_batch(poses, q + 0.01)
    assert seeded.shape == (40, 7) and _reaches(chain, seeded, poses).all()
    # seven joints: one of the solutions next to each seed (the pose's own joints are one)
    assert (np.linalg.norm(seeded - (q + 0.01), axis=1) <= 2 * np.linalg.norm(np.full(7, 0.01))).all()
    one_seed = chain.inverse_batch(poses.reshape(5, 8, 4, 4), chain.limits.centre)
    assert one_seed.shape == (5, 8, 7) and _reaches(chain, one_seed, poses.reshape(5, 8, 4, 4)).all()
    for pose, row in zip(poses[:5], one_seed.reshape(-1, 7)[:5], strict=True):  # each as inverse_continuing finds it
        np.testing.assert_array_equal(row, chain.inverse_continuing(pose, chain.limits.centre)[0])
    with pytest.raises(InvalidArgument, match="seeds"):
        chain.inverse_batch(poses, q[:3])


def test_a_path_follows_its_neighbours_without_jumping_branch():
    chain = CHAINS[0]
    start = np.array([0.3, -0.4, 0.2, -2.0, 0.1, 1.8, 0.5])
    line = np.repeat(chain.forward(start)[None], 200, axis=0)
    line[:, 0, 3] += np.linspace(0.0, 0.15, 200)  # 15 cm in 0.75 mm steps
    followed = chain.inverse_batch(line, start, path=True)
    assert followed.shape == (200, 7) and _reaches(chain, followed, line).all()
    assert np.abs(np.diff(followed, axis=0)).max() < 0.05  # no jump between neighbours
    np.testing.assert_allclose(followed[0], start, atol=1e-6)
    two = chain.inverse_batch(np.stack([line, line[::-1]]), np.stack([start, followed[-1]]), path=True)
    np.testing.assert_array_equal(two[0], followed)  # each path on its own, in parallel
    assert np.abs(np.diff(two[1], axis=0)).max() < 0.05


def test_the_batch_releases_the_gil_while_it_searches():
    chain = CHAINS[0]
    centre, radius = chain.reach_bound
    pose = np.eye(4)
    pose[:3, 3] = centre + np.array([0.0, 0.0, 0.97 * radius])  # no solution: each pose takes its whole budget
    poses = np.repeat(pose[None], 100, axis=0)
    lower, upper, low, high = _ranges(chain)
    out, report = np.full((100, 7), np.nan), np.empty((100, 4))
    inside = threading.Event()
    done = threading.Event()

    def search():
        inside.set()
        compiled.numeric.solve_batch(chain.chain_constants(), poses.reshape(-1, 16), chain.limits.centre[None], False,
                                     lower, upper, low, high, 1e-6, 1e-6, 0.002, out, report)
        done.set()

    worker = threading.Thread(target=search)
    worker.start()
    inside.wait()
    counted = 0
    while not done.is_set():  # this thread runs only while the other one does not hold the GIL
        counted += 1
    worker.join()
    if not compiled.COMPILED:
        pytest.skip("interpreted, the search holds the GIL as any Python code does")
    assert counted > 1000 and not report[:, 0].any()


@pytest.mark.parametrize("wrap", ["tool", "base", "both"])
def test_wrapped_chains_search_their_chain(wrap):
    chain = CHAINS[0]
    tool = spatial.pose_from_xyz_rpy([0.0, 0.02, 0.1], [0.0, 0.0, 0.3])
    mount = spatial.pose_from_xyz_rpy([0.5, -0.2, 0.8], [math.pi, 0.0, 0.4])
    model = {"tool": Tool(chain, tool), "base": Base(chain, mount), "both": Base(Tool(chain, tool), mount)}[wrap]
    q, poses = _reachable(chain, 8, seed=7)
    poses = model.forward(q)
    for goal, pose in zip(q, poses, strict=True):
        near = model.inverse_continuing(pose, goal + 0.01, budget=0.05)
        assert _reaches(model, near[0], pose)
        assert np.linalg.norm(near[0] - goal - 0.01) <= 2 * np.linalg.norm(np.full(7, 0.01))
        assert _reaches(model, np.asarray(model.inverse(pose)), pose).all()
    seeded = model.inverse_batch(poses, q + 0.01)
    assert _reaches(model, seeded, poses).all()
    for row, goal, pose in zip(seeded, q, poses, strict=True):  # what inverse_continuing finds
        np.testing.assert_array_equal(row, model.inverse_continuing(pose, goal + 0.01)[0])


def test_closed_form_models_answer_seeds_and_paths_from_all_their_solutions():
    arm = robohal.get_model("abb.irb2400")
    q = np.random.default_rng(8).uniform(arm.limits.lower, arm.limits.upper, (60, 6)) * 0.8
    q = q[arm._admissible_batch(q)][:30]  # the linkage's own limit too: these are solutions
    poses = arm.forward(q)
    np.testing.assert_allclose(arm.inverse_batch(poses, q + 0.01), q, atol=1e-9)
    line = arm.forward(q[0] + np.linspace(0, 0.2, 20)[:, None])
    followed = arm.inverse_batch(line, q[0], path=True)
    np.testing.assert_allclose(followed, q[0] + np.linspace(0, 0.2, 20)[:, None], atol=1e-9)
    planar = robohal.get_model("generic.planar2")
    xy = planar.forward(np.array([[0.3, 0.5], [0.4, -0.5]]))
    np.testing.assert_allclose(planar.inverse_batch(xy, [[0.3, 0.5], [0.4, -0.5]]), [[0.3, 0.5], [0.4, -0.5]], atol=1e-9)


@BOTH
def test_malformed_calls_are_refused(form):
    chain = CHAINS[0]
    lower, upper, low, high = _ranges(chain)
    constants = chain.chain_constants()
    pose = np.ascontiguousarray(chain.forward(chain.limits.centre).reshape(16))
    with pytest.raises(ValueError):
        form.numeric.solve(constants, pose, np.zeros(6), lower, upper, low, high, 1e-6, 1e-6, 0.01, np.zeros(6))
    with pytest.raises(ValueError):
        form.numeric.solve(constants, pose[:12], np.zeros(7), lower, upper, low, high, 1e-6, 1e-6, 0.01, np.zeros(7))
    with pytest.raises(ValueError):
        form.numeric.solve(constants, pose, np.zeros(7), lower, upper, low, high, 1e-6, 1e-6, 0.01, np.zeros(7), 4)
    with pytest.raises(ValueError):
        form.numeric.solve_all(constants, pose, np.zeros(7), lower, upper, low, high, 1e-6, 1e-6, 0.01, STARTS, 1e-3,
                               np.zeros((17, 7)))
    with pytest.raises(ValueError):
        form.numeric.solve_batch(constants, pose[None], np.zeros((2, 7)), False, lower, upper, low, high, 1e-6, 1e-6,
                                 0.01, np.zeros((1, 7)), np.zeros((1, 4)))
