"""UrdfChain speed per configuration, as ratios against pinocchio measured in the
same run on the same joints: batched forward kinematics and Jacobian of the tip,
one configuration at a time, and one differential-IK cycle beside the DH chain's.

Peer: pinocchio (PyPI ``pin``) on the same URDF, the way Python calls it:
``framesForwardKinematics`` then the tip frame's placement, and
``computeFrameJacobian`` (LOCAL_WORLD_ALIGNED, the same geometric Jacobian), one
configuration per call (pinocchio has no batch call). Arms: the FR3 and Panda
URDFs robohal_franka ships, and the IRB 2400 written by ``robohal urdf``. Every
figure is the best of a few interleaved repeats (the machine is shared). Nothing
is asserted.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

import numpy as np
import robohal
import robohal_franka
from robohal.kinematics import DifferentialIk, UrdfChain, urdf_text

BATCH = 20_000
SINGLE = 3_000
REPEATS = 3
IK_CYCLES = 3_000


def best_of(call, count: int) -> float:
    """Seconds per item: the best of REPEATS timings of ``call`` (which handles ``count`` items)."""
    best = math.inf
    for _ in range(REPEATS):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best / count


def arms(folder: Path) -> list[tuple[str, Path, str, str, str]]:
    """(label, URDF, base link, tip link, robohal model name)."""
    franka = Path(robohal_franka.__file__).parent
    irb2400 = folder / "irb2400.urdf"
    irb2400.write_text(urdf_text(robohal.get_model("abb.irb2400"), "abb.irb2400"))
    return [("FR3", franka / "urdf" / "fr3.urdf", "link0", "link8", "franka.fr3"),
            ("Panda", franka / "urdf" / "panda.urdf", "link0", "link8", "franka.panda"),
            ("IRB 2400 (robohal urdf)", irb2400, "base_link", "flange", "abb.irb2400")]


def measure(pin, label: str, path: Path, base: str, tip: str, model_name: str) -> None:
    chain = UrdfChain.from_urdf(path, base, tip)
    peer = pin.buildModelFromUrdf(str(path))
    data = peer.createData()
    frame = peer.getFrameId(tip)
    world = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    q = np.random.default_rng(0).uniform(chain.limits.lower, chain.limits.upper, (BATCH, chain.dof))
    rows = list(q[:SINGLE])

    def peer_forward():
        for row in rows:
            pin.framesForwardKinematics(peer, data, row)
            data.oMf[frame].homogeneous  # the pose, as a caller would take it

    def peer_jacobian():
        for row in rows:
            pin.computeFrameJacobian(peer, data, row, frame, world)

    def ours_forward_one():
        for row in rows:
            chain.forward(row)

    def ours_jacobian_one():
        for row in rows:
            chain.jacobian(row)

    us = {}
    for _ in range(REPEATS):  # interleaved: both see the same load
        for name, call, count in (("forward batch", lambda: chain.forward(q), BATCH),
                                  ("jacobian batch", lambda: chain.jacobian(q), BATCH),
                                  ("forward one", ours_forward_one, SINGLE),
                                  ("jacobian one", ours_jacobian_one, SINGLE),
                                  ("pin forward", peer_forward, SINGLE),
                                  ("pin jacobian", peer_jacobian, SINGLE)):
            us[name] = min(us.get(name, math.inf), best_of(call, count) * 1e6)
    ik_us = {}
    for kind, model in (("urdf", chain), ("model", robohal.get_model(model_name))):
        if getattr(model, "coupled_limits", False):  # the model's joints are not the URDF's
            continue
        ik_us[kind] = ik_cycle_median(model, chain.limits.centre)
    print(f"{label}, {chain.dof} joints; {BATCH} random configurations batched, {SINGLE} one at a time")
    for what in ("forward", "jacobian"):
        peer_us = us[f"pin {what}"]
        print(f"  {what}: batched {us[f'{what} batch']:.3f} us/config, {peer_us / us[f'{what} batch']:.2f}x pinocchio's"
              f" speed ({peer_us:.3f} us/config, one call each); one at a time {us[f'{what} one']:.3f} us,"
              f" {peer_us / us[f'{what} one']:.2f}x pinocchio's speed")
    path = "the DH chain's scalar path" if chain.uses_dh_path else "its own scalar path"
    print(f"  differential-IK cycle along a 5 cm circle ({path}): median {ik_us['urdf']:.1f} us"
          + (f"; the robohal model's {ik_us['model']:.1f} us" if "model" in ik_us else ""))


def ik_cycle_median(model, start: np.ndarray) -> float:
    """Median microseconds of one IkOptions() cycle, the target on a 5 cm circle at one turn a second."""
    ik = DifferentialIk(model, period=0.001)
    ik.reset(start)
    centre = model.forward(start)
    samples = []
    for i in range(IK_CYCLES):
        target = centre.copy()
        angle = 2 * math.pi * i / 1000
        target[:3, 3] += 0.05 * np.array([math.cos(angle) - 1, math.sin(angle), 0.0])
        begin = time.perf_counter()
        ik.step(target)
        samples.append(time.perf_counter() - begin)
    return float(np.median(samples)) * 1e6


def main() -> None:
    try:
        import pinocchio as pin
    except ImportError:
        print("pinocchio is not installed (pip install 'robohal[test]'); no peer to compare with")
        return
    with tempfile.TemporaryDirectory() as folder:
        for arm in arms(Path(folder)):
            measure(pin, *arm)


if __name__ == "__main__":
    main()
