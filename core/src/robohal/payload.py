"""What the robot carries on its flange: :class:`Payload`, in SI units.

A robot that knows its payload compensates its weight (Franka's ``setLoad``); one that is
told nothing takes a heavy part for a collision. ``robot.payload = Payload(...)`` sends it
where the backend can take one, and is refused where it cannot.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from .errors import InvalidArgument
from .state import Array

#: kg m^2: how far from symmetric an inertia tensor may be (rounding in a CAD export, not a typo)
SYMMETRY_TOLERANCE = 1e-9


@dataclass(frozen=True, eq=False)
class Payload:
    """A rigid load on the flange.

    ``mass`` in kg; ``center_of_mass`` (x, y, z) in metres in the flange frame;
    ``inertia`` the (3, 3) inertia tensor in kg m^2 about the center of mass, in the flange
    frame's axes (zeros: a point mass). ``Payload(0.0)`` is no load.
    """

    mass: float
    center_of_mass: Array = field(default_factory=lambda: np.zeros(3))
    inertia: Array = field(default_factory=lambda: np.zeros((3, 3)))

    def __post_init__(self) -> None:
        if isinstance(self.mass, bool) or not isinstance(self.mass, (int, float, np.integer, np.floating)) \
                or not np.isfinite(self.mass) or self.mass < 0:
            raise InvalidArgument(f"a payload's mass is a finite number of kg >= 0, got {self.mass!r}")
        object.__setattr__(self, "mass", float(self.mass))
        center = _finite(self.center_of_mass, (3,), "center_of_mass (x, y, z in m)")
        inertia = _finite(self.inertia, (3, 3), "inertia (a 3x3 tensor in kg m^2)")
        if np.abs(inertia - inertia.T).max() > SYMMETRY_TOLERANCE:
            raise InvalidArgument("a payload's inertia tensor must be symmetric")
        if np.linalg.eigvalsh(inertia).min() < -SYMMETRY_TOLERANCE:
            raise InvalidArgument("a payload's inertia tensor must be positive semi-definite")
        for name, value in (("center_of_mass", center), ("inertia", inertia)):
            value.setflags(write=False)
            object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"Payload(mass={self.mass:g} kg, center_of_mass={np.round(self.center_of_mass, 4).tolist()} m)"


def _finite(value: ArrayLike, shape: tuple[int, ...], what: str) -> Array:
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidArgument(f"a payload's {what}: got {value!r:.60}") from None
    if array.shape != shape or not np.isfinite(array).all():
        raise InvalidArgument(f"a payload's {what} must be finite numbers of shape {shape}, got shape {array.shape}")
    return array
