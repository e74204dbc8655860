"""Reactions: conditions on the measured state that end a motion or hand over to another,
checked by the motion executor every control cycle (in Franka's control process at 1 kHz).

    from robohal.motion.reactions import force, flange, Reaction
    down = robot.model.forward(robot.backend.commanded)
    down[2, 3] -= 0.10
    retract = PointToPoint(robot.backend.commanded)
    robot.move_linear(down, until=Reaction(force("z") > 5.0, then=retract))

A quantity is measured from each cycle's :class:`~robohal.state.RobotState`:

- :func:`joint` ``(i)``: joint ``i``'s measured position (rad, joints counted from 0);
- :func:`flange` ``(axis)``: the flange's position along ``"x"``, ``"y"`` or ``"z"`` of the base
  frame (m), from the measured joints;
- :func:`force` ``(axis)`` and :func:`torque` ``(axis)``: the external wrench on the flange in the
  base frame (N, Nm), where the backend measures it (``RobotState.wrench``);
- :data:`ELAPSED`: seconds since the motion started (the robot's clock).

Compare one with a number (``force("z") > 5.0``, ``joint(0) < -1.2``) to get a :class:`Condition`;
combine conditions with ``|`` and ``&``. A reaction on a quantity the backend does not measure is
refused when the motion starts. Everything here is plain picklable data.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import spatial
from ..errors import InvalidArgument
from ..kinematics import Kinematics
from ..state import RobotState

AXES = {"x": 0, "y": 1, "z": 2}
_COMPARE = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le}


@dataclass(frozen=True)
class Quantity:
    """One measured quantity (see the module docstring)."""

    kind: str  # "joint", "flange", "force", "torque", "elapsed"
    index: int = 0

    def value(self, state: RobotState, model: Kinematics, elapsed: float) -> float:
        if self.kind == "joint":
            return float(state.q[self.index])
        if self.kind == "flange":
            return float(model.forward(state.q)[self.index, 3])
        if self.kind in ("force", "torque"):
            if state.wrench is None:
                raise InvalidArgument(f"{self}: the backend does not measure the external wrench")
            return float(state.wrench[self.index + (3 if self.kind == "torque" else 0)])
        return elapsed

    def check(self, state: RobotState, model: Kinematics) -> None:
        """Raise if this quantity cannot be measured from ``state`` (at the motion's start)."""
        if self.kind in ("force", "torque") and state.wrench is None:
            raise InvalidArgument(f"a reaction on {self} needs the external wrench, which this backend does not"
                                  " measure (RobotState.wrench is None): the condition would never fire")
        if self.kind == "joint" and not 0 <= self.index < model.dof:
            raise InvalidArgument(f"{self}: the robot has joints 0 to {model.dof - 1}")

    def _compare(self, op: str, threshold: float) -> Condition:
        value = spatial.as_number(threshold, f"the threshold of {self}")
        if not math.isfinite(value):
            raise InvalidArgument(f"the threshold of {self} must be finite, got {threshold!r}")
        return Condition(self, op, value)

    def __gt__(self, threshold: float) -> Condition:  # type: ignore[override]
        return self._compare(">", threshold)

    def __lt__(self, threshold: float) -> Condition:  # type: ignore[override]
        return self._compare("<", threshold)

    def __ge__(self, threshold: float) -> Condition:  # type: ignore[override]
        return self._compare(">=", threshold)

    def __le__(self, threshold: float) -> Condition:  # type: ignore[override]
        return self._compare("<=", threshold)

    def __str__(self) -> str:
        if self.kind == "elapsed":
            return "elapsed time (s)"
        if self.kind == "joint":
            return f"joint {self.index} (rad)"
        axis = "xyz"[self.index]
        unit = {"flange": "m", "force": "N", "torque": "Nm"}[self.kind]
        return f"{self.kind} {axis} ({unit})"


@dataclass(frozen=True)
class Condition:
    """``quantity`` compared with ``threshold``; or, with ``parts``, any (``|``) or all (``&``) of them."""

    quantity: Quantity | None = None
    op: str = ">"
    threshold: float = 0.0
    parts: tuple[Condition, ...] = ()
    every: bool = False  # with parts: all of them (&), else any (|)

    def met(self, state: RobotState, model: Kinematics, elapsed: float) -> bool:
        if self.parts:
            results = (part.met(state, model, elapsed) for part in self.parts)
            return all(results) if self.every else any(results)
        assert self.quantity is not None
        return _COMPARE[self.op](self.quantity.value(state, model, elapsed), self.threshold)

    def check(self, state: RobotState, model: Kinematics) -> None:
        for part in self.parts or (self,):
            if part.parts:
                part.check(state, model)
            else:
                assert part.quantity is not None
                part.quantity.check(state, model)

    def __or__(self, other: Condition) -> Condition:
        return Condition(parts=(self, _condition(other)), every=False)

    def __and__(self, other: Condition) -> Condition:
        return Condition(parts=(self, _condition(other)), every=True)

    def __str__(self) -> str:
        if self.parts:
            joiner = " and " if self.every else " or "
            return "(" + joiner.join(str(part) for part in self.parts) + ")"
        return f"{self.quantity} {self.op} {self.threshold:g}"


@dataclass(frozen=True)
class Reaction:
    """When ``condition`` is met, end the motion (``then=None``: brake to rest) or hand over to
    ``then``, a motion that starts from where the setpoints are."""

    condition: Condition
    then: Any = None  # a Motion

    def __post_init__(self) -> None:
        object.__setattr__(self, "condition", _condition(self.condition))
        if self.then is not None and not (callable(getattr(self.then, "start", None))
                                          and callable(getattr(self.then, "step", None))):
            raise InvalidArgument(f"a reaction hands over to a motion (start and step), got {self.then!r:.60}")


#: what ``until=`` of the robot's motions takes
Until = Condition | Reaction | Sequence[Condition | Reaction] | None


def reactions_of(until: Until) -> tuple[Reaction, ...]:
    """``until=`` of the robot's motions, as reactions: a condition alone stops the motion."""
    if until is None:
        return ()
    if isinstance(until, (Condition, Reaction)):
        until = [until]
    return tuple(item if isinstance(item, Reaction) else Reaction(_condition(item)) for item in until)


def with_reactions(motion: Any, until: Until) -> Any:
    """``motion`` carrying the reactions of ``until`` (the motion itself when there are none)."""
    reactions = reactions_of(until)
    return Reacting(motion, reactions) if reactions else motion


class Reacting:
    """``motion`` with reactions: the executor checks them every cycle (see the module docstring)."""

    def __init__(self, motion: Any, reactions: Sequence[Reaction]) -> None:
        self.motion = motion
        self.reactions = tuple(reactions)

    def start(self, state: RobotState, *args: Any, **kwargs: Any) -> None:  # a position or a torque motion's
        self.motion.start(state, *args, **kwargs)

    def step(self, state: RobotState, *args: Any) -> Any:
        return self.motion.step(state, *args)

    def __getattr__(self, name: str) -> Any:  # start_moving, setpoint_state, summary, update...: the motion's own
        if name in ("motion", "reactions"):
            raise AttributeError(name)
        return getattr(self.motion, name)


class ReactionWatch:
    """A running motion's reactions as an executor checks them: each refused at the start when the
    backend does not measure what it needs, then, every cycle, the first one met."""

    def __init__(self) -> None:
        self.reactions: tuple[Reaction, ...] = ()
        self._started_at = 0.0  # the robot's clock when the motion started

    def start(self, motion: Any, state: RobotState, model: Kinematics) -> None:
        self.reactions = tuple(getattr(motion, "reactions", ()))
        for reaction in self.reactions:
            reaction.condition.check(state, model)
        self._started_at = state.time

    def first_met(self, state: RobotState, model: Kinematics) -> Reaction | None:
        """The first reaction ``state`` meets, or None (what a condition raises, it raises)."""
        elapsed = state.time - self._started_at
        for reaction in self.reactions:
            if reaction.condition.met(state, model, elapsed):
                return reaction
        return None


def joint(index: int) -> Quantity:
    return Quantity("joint", _index(index, "joint"))


def flange(axis: str) -> Quantity:
    return Quantity("flange", _axis(axis))


def force(axis: str) -> Quantity:
    return Quantity("force", _axis(axis))


def torque(axis: str) -> Quantity:
    return Quantity("torque", _axis(axis))


#: seconds since the motion started
ELAPSED = Quantity("elapsed")


def _axis(axis: str) -> int:
    if axis not in AXES:
        raise InvalidArgument(f"axis is one of x, y, z, got {axis!r}")
    return AXES[axis]


def _index(index: int, what: str) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise InvalidArgument(f"{what} is counted from 0, got {index!r}")
    return index


def _condition(value: Any) -> Condition:
    if not isinstance(value, Condition):
        raise InvalidArgument(f"expected a condition such as force('z') > 5.0, got {value!r:.60}")
    return value
