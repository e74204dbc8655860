"""Robot kinematics: the :class:`Kinematics` protocol and reusable solvers."""

from .base import Kinematics, Solutions, no_solution, pick_best
from .constraints import Constraints
from .limits import JointLimits
from .opw import OPW
from .planar import PlanarTwoLink
from .wrappers import Base, Parallelogram, Tool

__all__ = [
    "OPW", "Base", "Constraints", "JointLimits", "Kinematics", "Parallelogram", "PlanarTwoLink", "Solutions",
    "Tool", "no_solution", "pick_best",
]
