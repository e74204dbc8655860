"""What a motion did: per-cycle commanded and measured joints (:class:`MotionResult`), and for a
torque motion the torques sent and the measured external wrench, collected cycle by cycle by a
:class:`MotionRecorder`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..state import Array, RobotState


@dataclass
class MotionResult:
    """What a motion did: per-cycle commanded and measured joints, and figures."""

    completed: bool
    stopped: bool
    times: Array
    commanded: Array
    measured: Array
    period: float
    target: Array | None = None
    info: dict[str, Any] = field(default_factory=dict)
    #: a newer motion took over before this one ended (it went on from where this one was)
    taken_over: bool = False
    #: the condition of the reaction that ended the motion or handed it over, if one did
    reaction: str | None = None
    #: a torque motion's joint torques sent, per cycle (Nm, on top of the robot's gravity
    #: compensation; NaN for cycles of the same run in position control); None for a position motion
    torques: Array | None = None
    #: the measured external wrench on the flange per cycle (N, Nm, base frame), recorded with the
    #: torques (NaN where the robot measures none); else None
    wrenches: Array | None = None

    @property
    def cycles(self) -> int:
        return len(self.times)

    @property
    def duration(self) -> float:
        return float(self.times[-1] - self.times[0]) if len(self.times) > 1 else 0.0

    @property
    def tracking_error(self) -> Array:
        """Largest joint deviation (rad) between command and measurement, per cycle."""
        if self.cycles == 0:
            return np.zeros(0)
        return np.abs(self.commanded - self.measured).max(axis=-1)

    def __repr__(self) -> str:
        worst = float(self.tracking_error.max()) if self.cycles else 0.0
        return (
            f"MotionResult(completed={self.completed}, cycles={self.cycles}, duration={self.duration:.3f} s,"
            f" max tracking error={np.degrees(worst):.3f} deg)"
        )


class MotionRecorder:
    def __init__(self, period: float, dof: int) -> None:
        self.period = period
        self.dof = dof
        self._times: list[float] = []
        self._commanded: list[Array] = []
        self._measured: list[Array] = []
        self._torques: list[Array] = []
        self._wrenches: list[Array] = []

    def add(self, state: RobotState, commanded: Array | None, torque: Array | None = None) -> None:
        """One cycle: the state measured, the joints commanded (None: the measured ones) and, in a
        torque session, the torque sent. Once a run has sent torques, each of its cycles gets a
        torque and a wrench row (NaN where it sent joint positions or nothing was measured), so
        they line up with the times."""
        if torque is not None or self._torques:
            missing = len(self._times) - len(self._torques)  # position cycles before the first torque
            nan = np.full(self.dof, np.nan)
            self._torques += [nan] * missing + [nan if torque is None else torque]
            self._wrenches += [np.full(6, np.nan)] * missing + [np.full(6, np.nan) if state.wrench is None else state.wrench]
        self._times.append(state.time)
        self._measured.append(state.q)
        self._commanded.append(state.q if commanded is None else commanded)

    def take(self, earlier: MotionRecorder) -> None:
        """Begin with what ``earlier`` recorded: the part of the same run before a reaction handed
        it over to this recorder's motion (of the other interface)."""
        self._times = [*earlier._times, *self._times]
        self._commanded = [*earlier._commanded, *self._commanded]
        self._measured = [*earlier._measured, *self._measured]
        self._torques = [*earlier._torques, *self._torques]
        self._wrenches = [*earlier._wrenches, *self._wrenches]

    def result(self, *, completed: bool, stopped: bool = False, taken_over: bool = False,
               reaction: str | None = None) -> MotionResult:
        empty = np.zeros((0, self.dof))
        return MotionResult(
            completed=completed,
            stopped=stopped,
            times=np.array(self._times),
            commanded=np.array(self._commanded) if self._commanded else empty,
            measured=np.array(self._measured) if self._measured else empty,
            period=self.period,
            taken_over=taken_over,
            reaction=reaction,
            torques=np.array(self._torques) if self._torques else None,
            wrenches=np.array(self._wrenches) if self._torques else None,
        )
