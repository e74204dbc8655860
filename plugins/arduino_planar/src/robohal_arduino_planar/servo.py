"""The physical hobby servo behind a pulse pin: its horn slews toward the pulse's target.

A hobby servo has no position feedback to the Arduino: the firmware only knows the pulse widths
it puts on D9/D10 (and the tool's D6). What the horn actually does is the servo's business, and a real servo is not
instant: it turns toward the angle its latest pulse asks for at a rated speed.

The rating used by default is the TowerPro SG90 datasheet's (the common 9 g micro servo of desk
arms): "Operating speed: 0.1 s/60 degree" at "Operating voltage: 4.8 V", with the pulse mapped as
"-90 deg ~1 ms, 0 deg 1.5 ms, +90 deg ~2 ms" (SG90 datasheet, TowerPro). So the horn turns
60 deg per 0.1 s = 10.47 rad/s, and 1000 us of pulse span pi rad of horn: 3333 us/s in pulse
units. That is the no-load rating; a loaded servo is slower (set ``speed`` lower to model it).

The simavr harness (avr/simavr_harness.c) implements the same model in C from the pulses it
measures on the pins; both report the horn as ``HORN <sim_us> <pin> <position_us>``, the horn's
angle written as the pulse width whose target it is.

Not modelled (each would be a new option, not a silent change): the dead band (the SG90
datasheet gives 10 us), acceleration and overshoot of the motor, mechanical end stops, and the
sag of a shared supply.
"""

from __future__ import annotations

import math

#: SG90 datasheet: "-90 deg ~1 ms ... +90 deg ~2 ms": 1000 us of pulse per pi rad of horn.
US_PER_RAD = 1000.0 / math.pi
#: SG90 datasheet: "Operating speed: 0.1 s/60 degree" (4.8 V, no load), in rad/s.
SG90_SPEED = math.radians(60.0) / 0.1
#: SG90 datasheet: "Position 0 (1.5 ms pulse) is middle". Where a horn starts when the simulator
#: starts: our choice (a servo is where it was left; the backend assumes q0 = 0, i.e. 1500 us).
NEUTRAL_US = 1500.0
#: How long a servo keeps driving toward its target after a pulse. An analog servo's control IC
#: drives the motor only in response to pulses: with none, the servo is unpowered and goes limp
#: (the firmware's DETACH relies on that). 20 ms, one frame of the firmware's 50 Hz output
#: (servo_timer1.h), is our choice: the servo never outruns the pulse train, and a detached servo
#: stops within a frame (no inertia modelled).
DRIVE_AFTER_PULSE_S = 0.020


class ServoHorn:
    """One servo's horn, in pulse-width units (us), driven by the pulses it receives.

    ``speed`` is the slew rate in rad/s (default: the SG90's rating); ``ideal=True`` makes the
    horn jump to each pulse's target at once (perfect tracking, for tests that want it).
    Times are seconds on any monotonic clock the caller keeps (simulated or wall time).
    """

    def __init__(self, speed: float = SG90_SPEED, ideal: bool = False, start_us: float = NEUTRAL_US) -> None:
        if not ideal and not (math.isfinite(speed) and speed > 0):
            raise ValueError(f"servo speed must be a positive number of rad/s, got {speed!r}")
        self.speed_us_per_s = speed * US_PER_RAD
        self.ideal = ideal
        self.position_us = float(start_us)
        self.target_us: float | None = None  # None: no pulse received yet
        self._updated = 0.0
        self._drive_until = -math.inf

    def advance(self, now: float) -> float:
        """Moves the horn up to ``now`` (toward the last target, while it is driven); returns
        its position (us)."""
        if self.target_us is not None and not self.ideal:
            driven = min(now, self._drive_until) - self._updated
            if driven > 0:
                step = self.speed_us_per_s * driven
                error = self.target_us - self.position_us
                self.position_us = self.target_us if abs(error) <= step else self.position_us + math.copysign(step, error)
        self._updated = max(self._updated, now)
        return self.position_us

    def pulse(self, now: float, width_us: float) -> float:
        """A pulse of ``width_us`` ended at ``now``: the horn so far (returned), then the new target."""
        position = self.advance(now)
        self.target_us = float(width_us)
        self._drive_until = now + DRIVE_AFTER_PULSE_S
        if self.ideal:
            self.position_us = position = self.target_us
        return position

    def unpowered(self, now: float) -> None:
        """The pulses stop for certain now (the MCU is held in reset): no more driving."""
        self.advance(now)
        self._drive_until = min(self._drive_until, now)

    @property
    def moving(self) -> bool:
        return self.target_us is not None and self.position_us != self.target_us and self._updated < self._drive_until
