"""Numeric inverse kinematics on arms without a closed form in robohal's hands: solve
rate and time per pose against TRAC-IK, the field's reference, and two Python peers, all
on the same poses in one run; then the batch's throughput per core.

Arms (URDFs): the FR3 and the IRB 2400 chain written by ``robohal urdf``, the Panda and
the UR5 from example-robot-data (their meshes dropped: a kinematic copy every solver
reads). Poses: 300 per arm, the forward kinematics of random joints within the limits
(so each is reachable); every solver starts from the middle of the joint ranges.
Solved: the returned joints lie within the limits and their forward kinematics (robohal's
UrdfChain of the same file) reach the pose within 1e-5 m and 1e-4 rad.

* robohal ``inverse_continuing(pose, centre)``: its own tolerance (1e-6 m and rad, stricter
  than the check) and budget (5 ms); ``inverse(pose)``: every distinct solution, unseeded.
* TRAC-IK (PyPI ``pytracik`` 0.0.3): Speed mode, 5 ms, eps 1e-5, one call per pose.
* roboticstoolbox-python 1.5 ``ik_LM`` (30 iterations, 100 searches, joint limits: its defaults;
  tolerance 1e-10 on |e|^2 / 2, where its default 1e-6 accepts errors of 1e-3).
* ikpy 4.2 ``inverse_kinematics_frame`` (orientation too).

Times are the mean per pose over the 300 (the machine is shared: repeat and compare
ranges); a peer that is not installed is skipped and said so. Nothing is asserted.

    python benchmarks/ik.py [--poses 300] [--skip-ikpy]
"""

from __future__ import annotations

import argparse
import math
import re
import tempfile
import time
from pathlib import Path

import numpy as np
import robohal
from robohal import spatial
from robohal.kinematics import UrdfChain, urdf_text
from robohal.kinematics.numeric import workers

POSITION = 1e-5  # m: solved when within this ...
ROTATION = 1e-4  # rad: ... and this
BUDGET = 0.005  # s: TRAC-IK's
BATCH = 3000  # poses in the batch rows
# roboticstoolbox's ik_LM stops when |e|^2 / 2 <= tol (its default 1e-6 lets 1e-3 m through)
RTB_TOLERANCE = 1e-10


def kinematic_copy(source: Path, folder: Path) -> Path:
    """The URDF without its visual and collision elements (their meshes name packages some
    peers try to find) and without safety controllers (pytracik 0.0.3 reads their soft
    limits as 0 and then has every joint's range at 0)."""
    text = re.sub(r"<(visual|collision)\b.*?</\1>", "", source.read_text(), flags=re.S)
    text = re.sub(r"<safety_controller\b[^>]*/>", "", text)
    path = folder / source.name
    path.write_text(text)
    return path


def arms(folder: Path) -> list[tuple[str, Path, str, str]]:
    """(label, URDF, base link, tip link) of every arm there is a URDF for here."""
    found = []
    for label, name in (("FR3", "franka.fr3"), ("IRB 2400", "abb.irb2400")):
        path = folder / f"{name}.urdf"
        path.write_text(urdf_text(robohal.get_model(name), name))
        found.append((label, path, "base_link", "flange"))
    share = _example_robot_data()
    if share is None:
        print("example-robot-data is not installed (pip install 'robohal[bench]'): no Panda or UR5 from it")
    else:
        found.insert(1, ("Panda", kinematic_copy(share / "panda_description/urdf/panda.urdf", folder),
                         "panda_link0", "panda_link8"))
        found.append(("UR5", kinematic_copy(share / "ur_description/urdf/ur5_robot.urdf", folder), "base_link", "tool0"))
    return found


def _example_robot_data() -> Path | None:
    """Where example-robot-data (a cmeel package: files, no Python module) put its robots."""
    import sysconfig

    for root in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        share = Path(root) / "cmeel.prefix/share/example-robot-data/robots"
        if share.is_dir():
            return share
    return None


def solved(chain: UrdfChain, pose: np.ndarray, q) -> bool:
    if q is None:
        return False
    q = np.asarray(q, dtype=np.float64)
    if q.shape != (chain.dof,) or not np.isfinite(q).all() or not chain.limits.within(q, 1e-9):
        return False
    error = spatial.pose_error(pose, chain.forward(q))
    return bool(np.linalg.norm(error[:3]) <= POSITION and np.linalg.norm(error[3:]) <= ROTATION)


def timed(solve, poses: np.ndarray, chain: UrdfChain) -> tuple[int, float]:
    """Poses solved and mean microseconds per pose of ``solve(pose) -> joints or None``."""
    count, total = 0, 0.0
    for pose in poses:
        start = time.perf_counter()
        q = solve(pose)
        total += time.perf_counter() - start
        count += solved(chain, pose, q)
    return count, total / len(poses) * 1e6


def robohal_solvers(chain: UrdfChain, centre: np.ndarray) -> dict:
    def continuing(pose):
        found = chain.inverse_continuing(pose, centre)
        return found[0] if found.found else None

    def every(pose):
        found = chain.inverse(pose)
        return found[0] if found.found else None

    return {"robohal inverse_continuing": continuing, "robohal inverse (all)": every}


def tracik_solver(path: Path, base: str, tip: str, chain: UrdfChain, centre: np.ndarray):
    try:
        import pytracik
    except ImportError:
        return None
    solver = pytracik.TRAC_IK(base, tip, path.read_text(), BUDGET, POSITION, pytracik.Speed)
    seed = centre.copy()

    def solve(pose):
        x, y, z = pose[:3, 3]
        w, qx, qy, qz = spatial.matrix_to_quat(pose[:3, :3])
        result = pytracik.ik(solver, seed, x, y, z, qx, qy, qz, w)
        return np.asarray(result[1:], dtype=np.float64) if result[0] >= 0 else None

    return solve


def rtb_solver(path: Path, tip: str, centre: np.ndarray):
    try:
        import roboticstoolbox as rtb
    except ImportError:
        return None
    import warnings

    with warnings.catch_warnings():  # (Robot.URDF is deprecated in favour of a subclass: the same robot)
        warnings.simplefilter("ignore", DeprecationWarning)
        robot = rtb.Robot.URDF(str(path))

    def solve(pose):  # its tolerance is on |e|^2 / 2: 1e-10 asks for what the check asks
        result = robot.ik_LM(pose, end=tip, q0=centre, tol=RTB_TOLERANCE)
        return np.asarray(result.q, dtype=np.float64) if result.success else None

    return solve


def ikpy_solver(path: Path, base: str, tip: str, centre: np.ndarray):
    try:
        import ikpy.chain
    except ImportError:
        return None
    import warnings

    path, elements = path_only(path, base, tip)
    with warnings.catch_warnings():  # (that the first, inactive link is fixed)
        warnings.simplefilter("ignore")
        links = ikpy.chain.Chain.from_urdf_file(str(path), base_elements=elements)
    active = [link.joint_type != "fixed" for link in links.links]
    links = ikpy.chain.Chain.from_urdf_file(str(path), base_elements=elements, active_links_mask=active)
    start = np.zeros(len(links.links))
    start[np.flatnonzero(active)] = centre

    def solve(pose):
        full = links.inverse_kinematics_frame(pose, initial_position=start, orientation_mode="all")
        return np.asarray(full)[np.flatnonzero(active)]

    return solve


def path_only(path: Path, base: str, tip: str) -> tuple[Path, list[str]]:
    """A copy of the URDF with only the links and joints from ``base`` down to ``tip`` (ikpy
    follows a link's first child, which may lead to another tip), and those elements,
    alternating links and joints, as ikpy takes them."""
    import xml.etree.ElementTree as ElementTree

    tree = ElementTree.parse(path)
    root = tree.getroot()
    parent_of = {joint.find("child").get("link"): joint for joint in root.findall("joint")}
    elements, link = [tip], tip
    while link != base:
        joint = parent_of[link]
        link = joint.find("parent").get("link")
        elements += [joint.get("name"), link]
    elements.reverse()
    for element in list(root):
        if element.tag in ("link", "joint") and element.get("name") not in elements:
            root.remove(element)
        elif element.tag not in ("link", "joint"):
            root.remove(element)
    copy = path.with_name(f"{path.stem}.path.urdf")
    tree.write(copy)
    return copy, elements


def batch_throughput(chain: UrdfChain, poses: np.ndarray, centre: np.ndarray) -> tuple[float, int, float]:
    """Poses per second of the seeded batch on every core, the cores, and the share solved."""
    many = np.concatenate([poses] * math.ceil(BATCH / len(poses)))[:BATCH]
    chain.inverse_batch(many[:50], centre)  # threads and caches warm
    start = time.perf_counter()
    found = chain.inverse_batch(many, centre)
    seconds = time.perf_counter() - start
    return BATCH / seconds, workers(), float(np.isfinite(found[:, 0]).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--poses", type=int, default=300)
    parser.add_argument("--skip-ikpy", action="store_true", help="ikpy takes about 20 ms a pose")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for label, path, base, tip in arms(Path(folder)):
            chain = UrdfChain.from_urdf(path, base, tip)
            low = np.where(np.isfinite(chain.limits.lower), chain.limits.lower, -np.pi)
            high = np.where(np.isfinite(chain.limits.upper), chain.limits.upper, np.pi)
            centre = 0.5 * (low + high)
            rng = np.random.default_rng(0)
            poses = chain.forward(rng.uniform(low, high, (args.poses, chain.dof)))
            solvers = robohal_solvers(chain, centre)
            peers = {"TRAC-IK (pytracik)": tracik_solver(path, base, tip, chain, centre),
                     "roboticstoolbox ik_LM": rtb_solver(path, tip, centre),
                     "ikpy": None if args.skip_ikpy else ikpy_solver(path, base, tip, centre)}
            for name, solve in peers.items():
                if solve is None:
                    print(f"{label}: {name} is not installed or skipped (pip install 'robohal[bench]')")
                else:
                    solvers[name] = solve
            results = {name: timed(solve, poses, chain) for name, solve in solvers.items()}
            rows.append((label, chain.dof, results, batch_throughput(chain, poses, centre)))
    report(rows, args.poses)


def report(rows: list, count: int) -> None:
    print(f"numeric IK, {count} reachable poses per arm, every solver from the middle of the joint ranges;"
          f" solved: within the limits, {POSITION:g} m and {ROTATION:g} rad")
    print(f"  {'arm':<9} {'solver':<28} {'solved':>8} {'us/pose':>9}   vs TRAC-IK: time   solved")
    for label, dof, results, _ in rows:
        reference = results.get("TRAC-IK (pytracik)")
        for name, (done, us) in results.items():
            versus = ""
            if reference is not None and name != "TRAC-IK (pytracik)":
                versus = f"{us / reference[1]:9.2f}x  {done - reference[0]:+5d}"
            print(f"  {label + f' ({dof})':<9} {name:<28} {done:>4}/{count:<3} {us:>9.1f}   {versus}")
    print("  goals: robohal inverse_continuing solves at least as often as TRAC-IK on every arm, in at most 0.5x its time")
    for label, _, results, _ in rows:
        ours, peer = results["robohal inverse_continuing"], results.get("TRAC-IK (pytracik)")
        if peer is not None:
            met = ours[0] >= peer[0] and ours[1] <= 0.5 * peer[1]
            print(f"    {label}: solved {ours[0]} vs {peer[0]}, time {ours[1] / peer[1]:.2f}x -> {'met' if met else 'NOT met'}")
    print(f"  inverse_batch(poses, seeds), {BATCH} poses, the GIL released on every core:")
    for label, _, _, (rate, cores, share) in rows:
        print(f"    {label}: {rate:,.0f} poses/s on {cores} cores = {rate / cores:,.0f} poses/s per core"
              f" ({share:.1%} solved)")


if __name__ == "__main__":
    main()
