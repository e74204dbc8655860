"""Kinematics speed, as ratios against py-opw-kinematics (Rust core) measured in
the same run on the same 100,000 IRB 2400 poses, then how the batch inverse scales
(time per pose and working memory at N = 1e3 to 1e6), the chains' batched forward
kinematics and Jacobian against pinocchio's, the planar batch inverse and one
differential-IK cycle on the FR3.

Peers: py-opw-kinematics 1.3 through its raw 4x4 interface (the fastest way to
call it): ``batch_inverse`` (one solution per pose), ``reach`` (all 8 branches,
one thread), ``batch_forward``, ``inverse`` and ``forward``; and pinocchio (PyPI
``pin``) on the same URDFs, one configuration per call (it has no batch call; see
_chains.py). Batch figures are the best of a few interleaved repeats, single-pose
figures the median of many calls (the machine is shared). Nothing is asserted.
"""

from __future__ import annotations

import math
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import robohal
from _chains import arms, interleaved_best, pinocchio_loops
from robohal.kinematics import OPW, DifferentialIk, PlanarTwoLink, UrdfChain, kernels

POSES = 100_000
# best of this many rounds: a 100,000-pose batch varies by 15-20% from round to round on a
# shared machine (measured); the same count for ours and the peer's calls
REPEATS = 7
SINGLE_CALLS = 3000
IK_CYCLES = 3000
CHAIN_BATCH = 20_000
PIN_CALLS = 3_000
SCALING = (1_000, 10_000, 100_000, 1_000_000)
IRB2400 = dict(a1=0.100, a2=-0.135, b=0.0, c1=0.615, c2=0.705, c3=0.755, c4=0.085)
J3_OFFSET = -math.pi / 2


def best_of(call, repeats: int = REPEATS) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def per_call_medians(calls: dict, count: int = SINGLE_CALLS) -> dict[str, float]:
    """Median microseconds per call of each call, the calls taking turns (all see the same load)."""
    samples = {name: [] for name in calls}
    for _ in range(count):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) * 1e6 for name, values in samples.items()}


def working_memory(call) -> tuple[int, int]:
    """Peak bytes allocated while ``call`` runs, and the bytes of what it returns."""
    tracemalloc.start()
    try:
        result = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, result.nbytes


def main() -> None:
    try:
        import py_opw_kinematics as peer_module
    except ImportError:
        print("py-opw-kinematics is not installed (pip install 'robohal[test]'); no peer to compare with")
        return
    ours = OPW(**IRB2400, offsets=(0, 0, J3_OFFSET, 0, 0, 0))
    peer = peer_module._internal.Robot(
        peer_module.KinematicModel(**IRB2400, offsets=(0.0, 0.0, J3_OFFSET, 0.0, 0.0, 0.0)), False)
    rng = np.random.default_rng(0)
    joints = rng.uniform(-np.pi, np.pi, (POSES, 6))
    poses = ours.forward(joints)
    flat = np.ascontiguousarray(poses.reshape(-1, 16))
    form = "compiled" if kernels.COMPILED else "interpreted (no C compiler at install, or ROBOHAL_PURE_PYTHON set)"
    print(f"kinematics kernels: {form}")

    us = interleaved_best({  # microseconds per pose
        "ours inverse_batch": (lambda: ours.inverse_batch(poses), POSES),
        "peer batch_inverse": (lambda: peer.batch_inverse(flat, None, None), POSES),
        "peer reach": (lambda: peer.reach(flat, None, None, 1), POSES),
        "ours forward": (lambda: ours.forward(joints), POSES),
        "peer batch_forward": (lambda: peer.batch_forward(joints), POSES),
    }, REPEATS)
    pose = poses[123]
    q = joints[123]
    q_tuple = tuple(q)
    single_us = per_call_medians({
        "ours inverse": lambda: ours.inverse(pose),
        "peer inverse": lambda: peer.inverse(pose, None, None),
        "ours forward": lambda: ours.forward(q),
        "peer forward": lambda: peer.forward(q_tuple, None),
        "ours continuing": lambda: ours.inverse_continuing(pose, q),
    })

    batch = ours.inverse_batch(poses)
    branches = int((~np.isnan(batch[..., 0])).sum())
    print(f"IRB 2400, {POSES} random poses; {branches / POSES:.2f} FK-verified branches per pose on average")
    rows = [  # path, ours, peer, unit, the ratio as the goal states it, goal, whether higher is better
        ("inverse_batch, 8 branches FK-verified", us["ours inverse_batch"], us["peer batch_inverse"], "us/pose",
         us["peer batch_inverse"] / us["ours inverse_batch"], "x faster", ">= 4x faster", 4.0, True),
        ("batched forward", us["ours forward"], us["peer batch_forward"], "us/pose",
         us["ours forward"] / us["peer batch_forward"], "x the peer's time", "<= 1.0x", 1.0, False),
        ("single-pose inverse", single_us["ours inverse"], single_us["peer inverse"], "us",
         single_us["ours inverse"] / single_us["peer inverse"], "x the peer's time", "<= 1.5x", 1.5, False),
        ("single-pose forward", single_us["ours forward"], single_us["peer forward"], "us",
         single_us["ours forward"] / single_us["peer forward"], "x the peer's time", "<= 1.2x", 1.2, False),
    ]
    print(f"  {'path':<40} {'robohal':>12} {'py-opw':>12}   {'ratio':<24} {'goal':<14} met")
    for path, mine, theirs, unit, ratio, what, goal, bound, higher in rows:
        met = ratio >= bound if higher else ratio <= bound
        print(f"  {path:<40} {mine:>7.3f} {unit:<4} {theirs:>7.3f} {unit:<4}   {ratio:5.2f}{what:<19} {goal:<14}"
              f" {'yes' if met else 'no'}")
    print(f"  (py-opw reach, all 8 branches, 1 thread: {us['peer reach']:.2f} us/pose ->"
          f" inverse_batch {us['peer reach'] / us['ours inverse_batch']:.2f}x faster;"
          f" inverse_continuing {single_us['ours continuing']:.1f} us)")

    print("inverse_batch as N grows (time per pose should stay flat, working memory beyond the result too):")
    for n in SCALING:
        sample = ours.forward(rng.uniform(-np.pi, np.pi, (n, 6)))
        # The first call at N = 1e6 also pays for the first touch of a fresh 384 MB result (measured:
        # 2.1 us/pose, then 1.3-1.7): best of 3 there, so the row shows the batch, not the pages.
        seconds = best_of(lambda sample=sample: ours.inverse_batch(sample), 3 if n >= 1_000_000 else REPEATS)
        peak, result = working_memory(lambda sample=sample: ours.inverse_batch(sample))
        print(f"  N = {n:>9,}: {seconds / n * 1e6:.3f} us/pose; peak {peak / 1e6:8.2f} MB, of which the"
              f" (N, 8, 6) result {result / 1e6:8.2f} MB: {(peak - result) / 1e3:.1f} kB of working memory")
        del sample

    chains_against_pinocchio(rng)

    planar = PlanarTwoLink(0.3, 0.25)
    planar_poses = planar.forward(rng.uniform(-np.pi, np.pi, (POSES, 2)))
    planar_time = best_of(lambda: planar.inverse_batch(planar_poses))
    print(f"planar two-link inverse_batch: {planar_time / POSES * 1e6:.3f} us/pose")

    fr3 = robohal.get_model("franka.fr3")
    ready = np.array([0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2, math.pi / 4])
    ik = DifferentialIk(fr3)
    ik.reset(ready)
    centre = fr3.forward(ready)
    samples = []
    for i in range(IK_CYCLES):  # a 5 cm circle, one turn per second
        target = centre.copy()
        angle = 2 * math.pi * i / 1000
        target[:3, 3] += 0.05 * np.array([math.cos(angle) - 1, math.sin(angle), 0.0])
        start = time.perf_counter()
        ik.step(target)
        samples.append(time.perf_counter() - start)
    samples_us = np.array(samples) * 1e6
    p50, p90, p99 = np.percentile(samples_us, [50, 90, 99])
    kernel = "compiled kernel" if kernels.COMPILED else "interpreted kernel"
    print(f"FR3 differential IK ({kernel}), one IkOptions() cycle: p50 {p50:.0f} us, p90 {p90:.0f} us, p99 {p99:.0f} us"
          f" (the tail is mostly scheduling on a loaded machine; residual after the circle {ik.last_residual:.1e})")


def chains_against_pinocchio(rng: np.random.Generator) -> None:
    """Batched forward kinematics and Jacobian per configuration, of the robohal model and of
    the UrdfChain read from the same arm's URDF, against pinocchio's one call each."""
    try:
        import pinocchio as pin
    except ImportError:
        print("pinocchio is not installed (pip install 'robohal[test]'); no chains compared with it")
        return
    print(f"chains against pinocchio: {CHAIN_BATCH} configurations batched, pinocchio {PIN_CALLS} calls one at a time")
    print(f"  {'arm':<10} {'model':<30} {'path':<9} {'robohal':>13} {'pinocchio':>13}   ratio")
    with tempfile.TemporaryDirectory() as folder:
        for label, path, base, tip, name in arms(Path(folder)):
            chain = UrdfChain.from_urdf(path, base, tip)
            model = robohal.get_model(name)
            q = rng.uniform(chain.limits.lower, chain.limits.upper, (CHAIN_BATCH, chain.dof))
            pin_forward, pin_jacobian = pinocchio_loops(pin, path, tip, q[:PIN_CALLS])
            us = interleaved_best({
                "model forward": (lambda model=model, q=q: model.forward(q), CHAIN_BATCH),
                "model jacobian": (lambda model=model, q=q: model.jacobian(q), CHAIN_BATCH),
                "urdf forward": (lambda chain=chain, q=q: chain.forward(q), CHAIN_BATCH),
                "urdf jacobian": (lambda chain=chain, q=q: chain.jacobian(q), CHAIN_BATCH),
                "pin forward": (pin_forward, PIN_CALLS),
                "pin jacobian": (pin_jacobian, PIN_CALLS),
            }, REPEATS)
            kind = type(model).__name__ + (f" of {type(model.robot).__name__}" if hasattr(model, "robot") else "")
            for source, title in (("model", f"{name} ({kind})"), ("urdf", "UrdfChain")):
                for what in ("forward", "jacobian"):
                    ours, theirs = us[f"{source} {what}"], us[f"pin {what}"]
                    print(f"  {label:<10} {title:<30} {what:<9} {ours:>6.3f} us/cfg {theirs:>6.3f} us/cfg"
                          f"   {theirs / ours:5.2f}x faster")


if __name__ == "__main__":
    main()
