"""Robot kinematics: the :class:`Kinematics` protocol and reusable solvers."""

from .base import Kinematics, Solutions, no_solution
from .limits import JointLimits
from .planar import PlanarTwoLink

__all__ = ["JointLimits", "Kinematics", "PlanarTwoLink", "Solutions", "no_solution"]
