"""What benchmarks/kinematics.py and benchmarks/urdf.py share: the arms compared with
pinocchio (PyPI ``pin``) and pinocchio's calls, one configuration each, the way Python
calls it: ``framesForwardKinematics`` then the tip frame's placement, and
``computeFrameJacobian`` (LOCAL_WORLD_ALIGNED, the same geometric Jacobian as robohal's).
pinocchio has no batch call. (Not a benchmark itself: run.py skips names starting with _.)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import robohal
import robohal_franka
from robohal.kinematics import urdf_text


def arms(folder: Path) -> list[tuple[str, Path, str, str, str]]:
    """(label, URDF, base link, tip link, robohal model name): the FR3 and Panda URDFs
    robohal_franka ships, and the IRB 2400 written into ``folder`` by ``robohal urdf``."""
    franka = Path(robohal_franka.__file__).parent
    irb2400 = folder / "irb2400.urdf"
    irb2400.write_text(urdf_text(robohal.get_model("abb.irb2400"), "abb.irb2400"))
    return [("FR3", franka / "urdf" / "fr3.urdf", "link0", "link8", "franka.fr3"),
            ("Panda", franka / "urdf" / "panda.urdf", "link0", "link8", "franka.panda"),
            ("IRB 2400", irb2400, "base_link", "flange", "abb.irb2400")]


def pinocchio_loops(pin, path: Path, tip: str, rows: np.ndarray) -> tuple[Callable[[], None], Callable[[], None]]:
    """Pinocchio's forward kinematics and Jacobian of the tip over ``rows``, one call per configuration."""
    model = pin.buildModelFromUrdf(str(path))
    data = model.createData()
    frame = model.getFrameId(tip)
    world = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    configurations = list(rows)

    def forward() -> None:
        for row in configurations:
            pin.framesForwardKinematics(model, data, row)
            data.oMf[frame].homogeneous  # the pose, as a caller would take it

    def jacobian() -> None:
        for row in configurations:
            pin.computeFrameJacobian(model, data, row, frame, world)

    return forward, jacobian


def interleaved_best(calls: dict[str, tuple[Callable[[], object], int]], repeats: int) -> dict[str, float]:
    """Microseconds per item of each call (which handles ``count`` items): the best of
    ``repeats`` rounds, each round running every call once (so all see the same load)."""
    best = dict.fromkeys(calls, math.inf)
    for _ in range(repeats):
        for name, (call, count) in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], (time.perf_counter() - start) / count * 1e6)
    return best
