"""Robot kinematics: the :class:`Kinematics` protocol and reusable solvers."""

from .base import Kinematics, Solutions, no_solution, pick_best
from .chain import DHChain
from .constraints import Constraints
from .diffik import MAX_POSTURE_RATE, DifferentialIk, IkOptions, cycle_box
from .limits import JointLimits, TorqueLimits
from .opw import OPW
from .planar import PlanarTwoLink
from .urdf import UrdfChain
from .urdf_export import urdf_text
from .wrappers import Base, Parallelogram, Tool

__all__ = [
    "MAX_POSTURE_RATE", "OPW", "Base", "Constraints", "DHChain", "DifferentialIk", "IkOptions", "JointLimits",
    "Kinematics", "Parallelogram", "PlanarTwoLink", "Solutions", "Tool", "TorqueLimits", "UrdfChain", "cycle_box", "no_solution",
    "pick_best", "urdf_text",
]
