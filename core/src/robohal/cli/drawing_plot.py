"""A picture of a drawing: the target path against the path the pen drew (``robohal draw --plot``).

Both are shown in the drawing's plane, in millimetres: a planar arm's own xy, or for a plan on a
plane (:mod:`.plane_drawing`) x and y from its origin. The target is each stroke's planned
points; the drawn path is the flange at each measured joint position of the strokes' results
(on a dry run, the planned joints: what the plan would draw), with the pen-up travels of a plan
on a plane as a thin dotted line. The title gives the largest distance from the target
(:func:`~.drawing.path_deviation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import RobohalError
from ..kinematics import Kinematics
from ..state import Array
from .drawing import DrawPlan
from .plots import matplotlib_pyplot


def require_writable(path: str | Path) -> None:
    """Raise a one-line error, before anything moves, where the plot could not be written after:
    matplotlib missing, no folder to write it in, or a file ending matplotlib writes no format for."""
    plt = matplotlib_pyplot()
    if plt is None:
        raise RobohalError("--plot needs matplotlib: pip install 'robohal[plots]'")
    folder = Path(path).parent
    if not folder.is_dir():
        raise RobohalError(f"--plot {path}: there is no folder {folder}")
    fig = plt.figure()
    formats = fig.canvas.get_supported_filetypes()
    plt.close(fig)
    if Path(path).suffix.lstrip(".").lower() not in formats:
        raise RobohalError(f"--plot {path}: name a file ending in one of {', '.join('.' + f for f in sorted(formats))}")


def plot_drawing(model: Kinematics, plan: DrawPlan, drawn: Sequence[Array], path: str | Path, title: str,
                 deviation: float | None) -> Path:
    """Write the PNG: ``drawn`` holds each stroke's measured joints (M, dof), and ``deviation``
    (m) their distance from the target; on a dry run the planned joints and None."""
    require_writable(path)
    plt = matplotlib_pyplot()
    path = Path(path)
    fig, axes = plt.subplots(figsize=(7, 7))
    target = _in_plane(plan, plan.positions)
    for number, (a, b) in enumerate(plan.strokes):
        axes.plot(*target[a:b].T, color="tab:blue", linewidth=2.5, alpha=0.5, label="target" if number == 0 else None)
    for number, joints in enumerate(drawn):
        if len(joints):
            pen = _in_plane(plan, model.forward(joints)[:, :3, 3])
            label = "drawn" if deviation is not None else "planned"
            axes.plot(*pen.T, color="tab:red", linewidth=1, label=label if number == 0 else None)
    for number, joints in enumerate(plan.travels):
        pen = _in_plane(plan, model.forward(joints)[:, :3, 3])
        axes.plot(*pen.T, ":", color="grey", linewidth=0.8, label="pen up" if number == 0 else None)
    axes.set_aspect("equal", adjustable="datalim")
    axes.set_xlabel("x [mm]" + (" from the origin" if plan.plane is not None else ""))
    axes.set_ylabel("y [mm]" + (" from the origin" if plan.plane is not None else ""))
    axes.grid(True, linewidth=0.3)
    axes.margins(0.08)
    axes.legend(loc="best")
    if deviation is not None:
        title += f"\nthe pen within {deviation * 1000:.3f} mm of the target"
    axes.set_title(title)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=100)
    except OSError as exc:
        raise RobohalError(f"cannot write the plot {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return path


def _in_plane(plan: DrawPlan, positions: Array) -> Array:
    """Positions (N, 3) in the base frame as x, y (mm) in the drawing's plane."""
    if plan.plane is not None:
        positions = (positions - plan.plane[:3, 3]) @ plan.plane[:3, :3]
    return positions[:, :2] * 1000.0
