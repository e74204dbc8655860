"""Watching the servos: stalls, the supply voltage and the temperatures, from each cycle's readings.

No I/O: the backend feeds :class:`StallTimer` and :class:`BoundWatch` every reading and acts on
what they say.

- **Stall** (a servo pushing against something instead of moving): its current above the
  arm file's ``stall_current``, or its load at 90 % of the torque limit it was given (a grasp's
  reduced torque draws less than ``stall_current``), while it stays more than ``stall_error``
  from its goal and turns slower than 0.1 rad/s (our choice), all without a break for ``stall_time``. A stalled servo is then held where it is, at
  ``hold_torque``, or released (torque off), as the arm file says: it pushes no longer at full
  torque, so it does not burn. A grasp is the jaw's stall on a part, and the same rule holds it.
- **Voltage and temperature**: the arm file's bounds; past a warning bound a warning is logged
  once (again only after the value came back), past a fault bound it is a fault.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from robohal.plugins.arm_files import Bounds, StallRule

STALL_SPEED = 0.1  # rad/s: a servo turning faster is moving, not stalled
AT_LIMIT = 0.9  # a load this close to the torque limit is pushing as hard as it may (our choice)


@dataclass
class StallTimer:
    """One servo's stall: since when its current and its error have both been high."""

    rule: StallRule
    since: float | None = None
    stalled: bool = False

    def update(self, now: float, current: float, error: float, speed: float = 0.0, load: float = 0.0,
               load_limit: float = 1.0) -> bool:
        """Feed a reading (A, rad from its goal, rad/s, its load and torque limit as shares of the
        stall torque); True on the cycle the stall is declared."""
        pushing = abs(current) >= self.rule.current or abs(load) >= AT_LIMIT * load_limit
        if pushing and abs(error) >= self.rule.error and abs(speed) < STALL_SPEED:
            if self.since is None:
                self.since = now
            if not self.stalled and now - self.since >= self.rule.time:
                self.stalled = True
                return True
        else:
            self.since = None
        return False

    def clear(self) -> None:
        self.since, self.stalled = None, False


@dataclass
class BoundWatch:
    """A quantity's warning and fault bounds; ``judge`` says what is new."""

    bounds: Bounds
    warned: set[int] = field(default_factory=set)

    def judge(self, servo_id: int, value: float) -> str | None:
        """``"fault"`` past a fault bound, ``"warn"`` the first time past a warning bound, else None."""
        verdict = self.bounds.judge(value)
        if verdict == "fault":
            return "fault"
        if verdict == "warn":
            if servo_id in self.warned:
                return None
            self.warned.add(servo_id)
            return "warn"
        self.warned.discard(servo_id)
        return None
