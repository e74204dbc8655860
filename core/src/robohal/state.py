"""What a backend reports each cycle."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


class RobotMode(str, Enum):
    """Where a robot is in its lifecycle."""

    DISCONNECTED = "disconnected"
    IDLE = "idle"  # connected, holding its position, accepting commands
    MOVING = "moving"  # a motion is running
    STOPPED = "stopped"  # stopped by the user or a protocol stop; commands resume it
    FAULT = "fault"  # the robot reports a fault; recover() clears it if recoverable


@dataclass(frozen=True, eq=False)
class RobotState:
    """One sample of the robot, in SI units and radians.

    ``time`` is seconds on the robot's clock where it has one (else the host's
    monotonic clock) and rises from sample to sample. ``q_commanded`` is the
    last setpoint the backend sent. ``info`` carries backend-specific figures
    (EGM's motor state, Franka's success rate, servo pulse widths, ...). ``wrench`` is
    the external force and torque on the flange, (fx, fy, fz, tx, ty, tz) in N and Nm in
    the base frame, where the robot measures or estimates it (Franka's ``O_F_ext_hat_K``,
    EGM's ``measuredForce``); None where it does not.
    """

    time: float
    q: Array
    dq: Array
    mode: RobotMode = RobotMode.IDLE
    faults: tuple[str, ...] = ()
    q_commanded: Array | None = None
    info: Mapping[str, Any] = field(default_factory=dict)
    wrench: Array | None = None

    def __post_init__(self) -> None:
        for name in ("q", "dq", "q_commanded", "wrench"):
            value = getattr(self, name)
            if value is not None:
                array = np.array(value, dtype=np.float64)
                array.setflags(write=False)
                object.__setattr__(self, name, array)
        object.__setattr__(self, "faults", tuple(self.faults))
        object.__setattr__(self, "info", MappingProxyType(dict(self.info)))

    @classmethod
    def handed_over(cls, time: float, q: Array, dq: Array, mode: RobotMode, faults: tuple[str, ...],
                    q_commanded: Array | None, info: dict[str, Any], wrench: Array | None = None) -> RobotState:
        """The state a backend builds on each cycle, without the constructor's copies: ``q``,
        ``dq`` and ``wrench`` are float64 arrays made for this state, ``info`` a dict made for it,
        ``faults`` a tuple; none is changed afterwards (they become read-only here).
        ``q_commanded`` is copied: a backend keeps its target."""
        q.setflags(write=False)
        dq.setflags(write=False)
        if wrench is not None:
            wrench.setflags(write=False)
        if q_commanded is not None:
            q_commanded = q_commanded.copy()
            q_commanded.setflags(write=False)
        state = object.__new__(cls)
        # one update of the instance's dict instead of a frozen setattr per field
        state.__dict__.update(time=time, q=q, dq=dq, mode=mode, faults=faults, q_commanded=q_commanded,
                              info=MappingProxyType(info), wrench=wrench)
        return state

    def __reduce__(self):  # picklable (a mappingproxy is not): states cross process boundaries
        return (RobotState, (self.time, self.q, self.dq, self.mode, self.faults, self.q_commanded, dict(self.info),
                             self.wrench))

    @property
    def dof(self) -> int:
        return int(self.q.shape[0])

    def __repr__(self) -> str:
        q = np.round(self.q, 4).tolist()
        faults = f", faults={list(self.faults)}" if self.faults else ""
        return f"RobotState(time={self.time:.4f}, mode={self.mode.value}, q={q}{faults})"
