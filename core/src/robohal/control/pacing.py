"""Pacing a backend's control cycles on the host's clock, for links with no clock of their own
to keep time (the Arduino's serial line, a servo bus): the backend's send waits for its tick."""

from __future__ import annotations

import time


class Pacer:
    """Ticks ``period`` seconds apart. :meth:`wait` sleeps until the next tick; a loop that is
    more than a period late starts again from now instead of sending its missed ticks back to
    back (a servo wants its setpoints spaced out, not bunched)."""

    def __init__(self, period: float) -> None:
        self.period = period
        self._next = 0.0

    def restart(self, at: float) -> None:
        """The next tick is ``at`` (time.monotonic()'s clock): at connect."""
        self._next = at

    def wait(self) -> None:
        now = time.monotonic()
        if self._next > now:
            time.sleep(self._next - now)
        elif now - self._next > self.period:  # late: no burst to catch up
            self._next = now
        self._next += self.period
