"""Plots of motions: joint trajectories (commanded vs measured) and tracking error."""

from __future__ import annotations

from pathlib import Path

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


def plot_motion(result: MotionResult, path: Path, title: str) -> Path | None:
    """Write a two-panel PNG of ``result``; None without matplotlib or data."""
    plt = matplotlib_pyplot()
    if plt is None or result.cycles == 0:
        return None
    t = result.times - result.times[0]
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    axes[0].plot(t, np.degrees(result.commanded), "--", linewidth=1)
    axes[0].set_prop_cycle(None)
    axes[0].plot(t, np.degrees(result.measured), linewidth=1)
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
