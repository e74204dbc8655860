"""UrdfChain one configuration at a time, as ratios against pinocchio measured in the
same run on the same joints (forward kinematics and the tip's Jacobian), and one
differential-IK cycle beside the robohal model's. The batched figures against
pinocchio are in benchmarks/kinematics.py.

Peer: pinocchio (PyPI ``pin``) on the same URDF, one configuration per call (see
_chains.py). Arms: the FR3 and Panda URDFs robohal_franka ships, and the IRB 2400
written by ``robohal urdf``. Every figure is the best of a few interleaved repeats
(the machine is shared). Nothing is asserted.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

import numpy as np
import robohal
from _chains import arms, interleaved_best, pinocchio_loops
from robohal.kinematics import DifferentialIk, UrdfChain

SINGLE = 3_000
REPEATS = 3
IK_CYCLES = 3_000


def measure(pin, label: str, path: Path, base: str, tip: str, model_name: str) -> None:
    chain = UrdfChain.from_urdf(path, base, tip)
    q = np.random.default_rng(0).uniform(chain.limits.lower, chain.limits.upper, (SINGLE, chain.dof))
    rows = list(q)
    peer_forward, peer_jacobian = pinocchio_loops(pin, path, tip, q)

    def ours_forward():
        for row in rows:
            chain.forward(row)

    def ours_jacobian():
        for row in rows:
            chain.jacobian(row)

    us = interleaved_best({"forward": (ours_forward, SINGLE), "jacobian": (ours_jacobian, SINGLE),
                           "pin forward": (peer_forward, SINGLE), "pin jacobian": (peer_jacobian, SINGLE)}, REPEATS)
    ik_us = {}
    for kind, model in (("urdf", chain), ("model", robohal.get_model(model_name))):
        if getattr(model, "coupled_limits", False):  # the model's joints are not the URDF's
            continue
        ik_us[kind] = ik_cycle_median(model, chain.limits.centre)
    print(f"{label}, {chain.dof} joints; {SINGLE} random configurations one at a time")
    for what in ("forward", "jacobian"):
        peer_us = us[f"pin {what}"]
        print(f"  {what}: {us[what]:.3f} us, {peer_us / us[what]:.2f}x pinocchio's speed ({peer_us:.3f} us)")
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
