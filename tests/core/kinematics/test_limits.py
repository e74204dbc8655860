"""Joint limits: the end-of-travel velocity curves."""

import numpy as np
import pytest
from robohal.errors import InvalidArgument
from robohal.kinematics import JointLimits


def test_end_of_travel_velocity_bounds_follow_the_curve():
    limits = JointLimits([-1.0, -2.0], [1.0, 2.0], [2.0, 3.0], 10.0, 5000.0,
                         end_deceleration=[6.0, 2.5], end_offset=[0.3, 0.2])
    low, high = limits.velocity_bounds([0.9, -1.995])
    assert high[0] == pytest.approx(np.sqrt(2 * 6.0 * 0.1) - 0.3)  # toward the upper end: the curve
    assert low[0] == -2.0  # away from it: the speed limit
    assert low[1] == 0.0  # within the offset's reach of the end: no speed toward it at all
    assert high[1] == 3.0
    assert limits.scaled(0.5).end_deceleration.tolist() == [6.0, 2.5]
    plain = JointLimits([-1.0], [1.0], [2.0], 10.0, 5000.0)
    assert plain.velocity_bounds([0.999])[1].tolist() == [2.0]
    with pytest.raises(InvalidArgument, match="together"):
        JointLimits([-1.0], [1.0], [2.0], 10.0, 5000.0, end_deceleration=[6.0])
