"""Motions: what the control loop steps, one setpoint per cycle, and what they did.

- :mod:`.motions`: the :class:`Motion` protocol and the joint-space motions
  (:class:`PointToPoint`, :class:`JointTrajectory`, :class:`Hold`)
- :mod:`.linear`: Cartesian straight lines planned up front through IK (:func:`plan_linear`)
- :mod:`.cartesian`: pose paths tracked by differential IK inside the loop (:class:`CartesianPath`)
- :mod:`.trajectory`: jerk-limited time profiles (:class:`DoubleS`) and the braking step
- :mod:`.result`: :class:`MotionResult` and its recorder
"""

from .linear import plan_linear
from .motions import MAX_FOLLOW_TIME, Hold, JointTrajectory, Motion, PointToPoint, end_of_travel_ratio
from .result import MotionRecorder, MotionResult

__all__ = ["MAX_FOLLOW_TIME", "Hold", "JointTrajectory", "Motion", "MotionRecorder", "MotionResult", "PointToPoint",
           "end_of_travel_ratio", "plan_linear"]
