"""The host's pacing of a link without a clock: ticks a period apart, never a burst."""

from __future__ import annotations

from robohal.control import pacing


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 9))
        self.now += seconds


def test_each_wait_ends_on_the_next_tick_and_a_late_loop_starts_again_from_now(monkeypatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(pacing, "time", clock)
    pacer = pacing.Pacer(0.01)
    pacer.restart(clock.now)
    pacer.wait()  # the first tick is now
    clock.now += 0.004  # the cycle's own work
    pacer.wait()
    assert clock.slept == [0.006]
    clock.now += 0.05  # five periods late
    pacer.wait()
    pacer.wait()
    assert clock.slept == [0.006, 0.01], "after the late cycle, one period: not the missed ticks back to back"
