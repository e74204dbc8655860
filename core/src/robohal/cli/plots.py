"""Plots of motions: joint trajectories (commanded vs measured) and tracking error."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..motion import MotionResult


def matplotlib_pyplot():
    """pyplot on a file-only backend, or None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def joint_labels(model: Any, dof: int) -> list[str]:
    """The model's joint names where it has them (a URDF chain's), else ``joint 1`` .. ``joint n``."""
    names = getattr(model, "joint_names", None)
    if names is not None and len(names) == dof:
        return [str(name) for name in names]
    return [f"joint {i + 1}" for i in range(dof)]


def with_gaps(parts: Sequence[np.ndarray]) -> np.ndarray:
    """The parts one after the other with a row of NaN between each two. A line drawn through
    them breaks there (matplotlib leaves NaN points out): nothing is drawn where nothing was
    recorded, between two motions."""
    parts = [np.asarray(part, dtype=float) for part in parts]
    if not parts:
        return np.zeros(0)
    gap = np.full((1, *parts[0].shape[1:]), np.nan)
    joined: list[np.ndarray] = []
    for part in parts:
        joined += [gap, part] if joined else [part]
    return np.concatenate(joined)


def draw_joints(axis: Any, t: np.ndarray, commanded: np.ndarray, measured: np.ndarray, labels: Sequence[str]) -> None:
    """Each joint in a colour of its own, commanded dashed and measured solid (degrees), the
    measured lines named in a legend."""
    axis.plot(t, np.degrees(commanded), "--", linewidth=1)
    axis.set_prop_cycle(None)  # the same colours again: a joint's two lines match
    for line, label in zip(axis.plot(t, np.degrees(measured), linewidth=1), labels, strict=True):
        line.set_label(label)
    axis.legend(fontsize="small", loc="best")


def plot_motion(result: MotionResult, path: Path, title: str) -> Path | None:
    """Write a two-panel PNG of ``result``; None without matplotlib or data."""
    plt = matplotlib_pyplot()
    if plt is None or result.cycles == 0:
        return None
    t = result.times - result.times[0]
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    draw_joints(axes[0], t, result.commanded, result.measured, joint_labels(None, result.commanded.shape[1]))
    axes[0].set_ylabel("joints [deg]\n(dashed: commanded)")
    axes[1].plot(t, np.degrees(result.tracking_error))
    axes[1].set_ylabel("tracking error [deg]")
    axes[1].set_xlabel("time [s]")
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
