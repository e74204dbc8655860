"""The last check between a joint torque and the wire, and the one way a torque motion ends.

A backend that takes joint torques passes each torque command through a :class:`TorqueGuard`
before it sends it: numbers, one per joint, finite, each joint within its torque limit, and
each joint's torque changed since the last command by no more than the rate limit allows in one
cycle (libfranka's ``kMaxTorqueRate``). A command that fails raises
:class:`~robohal.errors.LimitViolation` (or :class:`~robohal.errors.InvalidArgument` for NaN or a
wrong shape) and is never sent.

:meth:`TorqueGuard.brake` is how every torque motion ends, completed, stopped or failed: damp the
measured joint velocities to rest (torques that decelerate the arm with a time constant of
:data:`BRAKE_TIME`, through its mass matrix), changing the torque no faster than the rate limit,
inside the torque limits, until the arm rests and the torque is the one that holds it still under
the robot's gravity compensation; then the robot's own hold takes over. Where the model fails it,
the torque is released to zero at the rate limit instead (:meth:`TorqueGuard.release`).
"""

from __future__ import annotations

from array import array

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidArgument, LimitViolation
from ..kinematics import TorqueLimits
from ..kinematics.kernels import torque as _kernels
from ..motion.torque import RATE_SHARE, ModelTerms, rate_limited, within_torque_limits
from ..state import Array, RobotState

#: s: the time constant with which the brake decelerates the joints (our choice: from 2 rad/s the
#: torques stay within an FR3's limits, and the arm rests within a few tenths of a second)
BRAKE_TIME = 0.05
#: rad/s: measured joint speeds below which the arm is at rest (our choice: above a Franka's
#: velocity noise, below any motion a hand would make)
REST_SPEED = 0.01
#: cycles in a row the arm must rest before the robot's hold takes over (our choice: 10 ms)
REST_CYCLES = 10
#: Nm: how far a torque the robot reports applying may sit from one we sent and still be it (a
#: robot may report it in single precision: 87 Nm is resolved to 8e-6 Nm there; our choice, twice that)
REPORT_TOLERANCE = 2e-5
#: commands kept to recognise the one the robot applied
KEPT = 4


class TorqueGuard:
    """Checks torque commands and brakes torque motions (see the module docstring)."""

    def __init__(self, limits: TorqueLimits, period: float) -> None:
        if not isinstance(limits, TorqueLimits):
            raise InvalidArgument(f"a torque guard needs TorqueLimits, got {type(limits).__name__}")
        if not 1e-6 <= period <= 10.0:
            raise InvalidArgument(f"the control period must be within [1e-6, 10] s, got {period!r}")
        self.limits = limits
        self.period = float(period)
        self._step = limits.rate * self.period  # Nm: the most a joint's torque may change in a cycle
        self._limits = array("d", limits.torque.tolist())  # both as the kernel reads them
        self._steps = array("d", self._step.tolist())
        self._unbounded = array("d", [np.inf] * limits.dof)  # (follow_robot compares; it bounds nothing)
        self._tolerances = array("d", [REPORT_TOLERANCE] * limits.dof)
        self._last: Array | None = None
        self._sent: list[Array] = []  # the last commands sent, newest last
        self._resting = 0  # cycles in a row the brake has found the arm at rest

    @property
    def last(self) -> Array | None:
        """The torque last sent (Nm), or None before any."""
        return None if self._last is None else self._last.copy()

    @property
    def applied(self) -> Array:
        """The torque the robot applies now, which the next command is judged from (Nm; not a copy:
        read it, never write it)."""
        assert self._last is not None, "reset() first"
        return self._last

    def reset(self, torque: ArrayLike | None = None) -> None:
        """A torque session starts: the robot takes the first command from ``torque`` (zero: a
        Franka starts torque control from no torque of the client's)."""
        self._last = np.zeros(self.limits.dof) if torque is None else np.array(torque, dtype=np.float64)
        self._sent = [self._last]
        self._resting = 0

    def check(self, torque: ArrayLike) -> Array:
        """``torque`` as a float array if it may be sent now; else raise, sending nothing. Hot path:
        a kernel's one pass over the joints answers a clear yes (``_kernels.torque_within``);
        anything else goes to the thorough check below, which decides and words the refusal."""
        if (type(torque) is np.ndarray and torque.shape == (self.limits.dof,) and self._last is not None
                and _kernels.torque_within(torque, self._last, self._limits, self._steps)):
            return torque.astype(np.float64, copy=True)
        try:
            tau = np.array(torque, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidArgument(f"a torque command must be numeric, got {torque!r:.60}") from None
        if tau.shape != (self.limits.dof,):
            raise InvalidArgument(f"a torque command has {self.limits.dof} joint torques, got shape {tau.shape}")
        if not np.isfinite(tau).all():
            raise InvalidArgument(f"torque command refused: it contains NaN or inf ({tau.tolist()})")
        over = np.abs(tau) - self.limits.torque
        if (over > 0).any():
            joint = int(np.argmax(over))
            raise LimitViolation(f"torque command refused: joint {joint + 1} would be commanded {tau[joint]:.4g} Nm,"
                                 f" limit {self.limits.torque[joint]:.4g} Nm", joint=joint, quantity="torque",
                                 value=float(tau[joint]), limit=float(self.limits.torque[joint]))
        if self._last is not None:
            jump = np.abs(tau - self._last) - self._step
            if (jump > 0).any():
                joint = int(np.argmax(jump))
                rate = (tau[joint] - self._last[joint]) / self.period
                raise LimitViolation(f"torque command refused: joint {joint + 1}'s torque would change at {rate:.4g} Nm/s,"
                                     f" limit {self.limits.rate[joint]:.6g} Nm/s", joint=joint, quantity="torque_rate",
                                     value=float(rate), limit=float(self.limits.rate[joint]))
        return tau

    def commit(self, torque: Array) -> None:
        """Record ``torque`` as sent."""
        self._last = np.array(torque, dtype=np.float64)
        self._sent = [*self._sent[1 - KEPT:], self._last]

    def follow_robot(self, applied: ArrayLike) -> bool:
        """The robot reports the torque it applies now (a Franka's ``tau_J_d``). Where that is not
        our last command but an earlier one (ours came after its cycle, and the robot held the one
        before, as the FCI does with a late command), the next command is judged from that one, as
        the robot judges it. Returns whether it was; a report matching none of ours changes nothing."""
        if self._last is None or len(applied) != self.limits.dof:
            return False
        if _kernels.torque_within(applied, self._last, self._unbounded, self._tolerances):  # (every cycle: a kernel)
            return False
        applied = np.asarray(applied, dtype=np.float64)
        for earlier in reversed(self._sent[:-1]):
            if np.abs(applied - earlier).max() <= REPORT_TOLERANCE:
                self._last = earlier.copy()
                self._sent = [*self._sent[:-1]]
                return True
        return False

    def brake(self, state: RobotState, terms: ModelTerms) -> tuple[Array, bool]:
        """The next torque of the brake (see the module docstring), and whether the arm is at rest
        and the torque on the brake's (then it is the last torque again: the robot's hold may take
        over). Raises where the model gives no usable terms; :meth:`release` then."""
        assert self._last is not None, "reset() first"
        dq = np.asarray(state.dq, dtype=np.float64)
        wanted = terms.coriolis() - terms.mass() @ dq / BRAKE_TIME
        if not np.isfinite(wanted).all():
            raise InvalidArgument("the robot's model gave no usable torques to brake with (NaN or inf)")
        return self._toward(within_torque_limits(wanted, self.limits), float(np.abs(dq).max()))

    def release(self, state: RobotState) -> tuple[Array, bool]:
        """Without the model: the torque back to zero at the rate limit, and whether it is there
        with the arm at rest."""
        assert self._last is not None, "reset() first"
        return self._toward(np.zeros(self.limits.dof), float(np.abs(np.asarray(state.dq)).max()))

    def _toward(self, wanted: Array, speed: float) -> tuple[Array, bool]:
        tau = rate_limited(wanted, self._last, self.limits, self.period)
        reached = bool((np.abs(wanted - self._last) <= self.limits.rate * (self.period * RATE_SHARE)).all())
        self._resting = self._resting + 1 if speed < REST_SPEED and reached else 0
        if self._resting >= REST_CYCLES:
            return self._last.copy(), True
        return tau, False
