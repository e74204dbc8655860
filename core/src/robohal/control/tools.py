"""Tools on the flange and the cell: a gripper and named I/O signals.

:class:`Gripper` is what ``robot.gripper`` is, on every backend: a backend's tool driver
subclasses it and implements the hardware's five commands and its state read
(``_homing``, ``_move``, ``_grasp``, ``_stop``, ``_read``, and ``_connect``/``_disconnect``);
the checks, the one-command-at-a-time rule, ``wait=False`` and the mapping of a stopped
command are written here once. Units are SI: metres, m/s, newtons.

:class:`IoPorts` is what ``robot.io`` is: the digital and analog signals a backend declares,
by name (``robot.io["vacuum"] = True``, ``robot.io["part_present"]``).

:class:`SignalGripper` is a two-state gripper (a pneumatic gripper, a vacuum cup) driven
through such signals: one output closes it, optional inputs confirm it and sense a part.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..errors import HardwareFault, InvalidArgument, RobohalError, UnknownNameError


class GripperBusy(RobohalError):
    """A gripper command was given while another one runs (wait for it, or ``stop()`` it)."""


@dataclass(frozen=True)
class GripperState:
    """What the gripper reports: finger ``width`` and ``max_width`` (m, the opening the last
    homing found), whether it holds an object, and its own clock ``time`` (s)."""

    width: float
    max_width: float
    is_grasped: bool
    time: float


@dataclass(frozen=True)
class GripperLimits:
    """What a gripper accepts: speeds in (0, ``max_speed``] m/s, forces in [``min_force``,
    ``max_force``] N, widths in [0, max_width] m (max_width from its state)."""

    max_speed: float
    max_force: float
    min_force: float = 0.0
    default_speed: float = 0.05
    default_force: float = 20.0


def _finite(value: Any, what: str) -> float:
    if isinstance(value, bool) or (not isinstance(value, (int, float)) and not hasattr(value, "__float__")):
        raise InvalidArgument(f"gripper {what} must be a number, got {value!r:.40}")
    number = float(value)
    if not math.isfinite(number):
        raise InvalidArgument(f"gripper {what} must be finite, got {number}")
    return number


class Gripper:
    """A gripper: every command blocks until the hardware answers and returns its result;
    with ``wait=False`` it returns a :class:`concurrent.futures.Future` at once (the arm can
    move meanwhile). One command runs at a time: another one meanwhile raises
    :class:`GripperBusy`; :meth:`stop` is the exception and ends the running one. A fault
    the hardware reports is a :class:`HardwareFault` with its own text; a lost link a
    :class:`~robohal.errors.ConnectionLost`.
    """

    def __init__(self, limits: GripperLimits, *, name: str = "gripper") -> None:
        self.limits = limits
        self.name = name
        self._lock = threading.Lock()
        self._running: str | None = None
        self._stopping = False
        self._executor: ThreadPoolExecutor | None = None
        self._max_width: float | None = None  # from the last state read: checks need no round trip

    # What a driver implements -------------------------------------------------------

    def _connect(self) -> None:
        """Open the link to the hardware."""

    def _disconnect(self) -> None:
        """Close the link; called once, also after a lost link."""

    def _homing(self) -> bool:
        raise NotImplementedError

    def _move(self, width: float, speed: float) -> bool:
        raise NotImplementedError

    def _grasp(self, width: float, speed: float, force: float, epsilon_inner: float, epsilon_outer: float) -> bool:
        raise NotImplementedError

    def _stop(self) -> bool:
        raise NotImplementedError

    def _read(self) -> GripperState:
        raise NotImplementedError

    # Link ----------------------------------------------------------------------------

    def connect(self) -> Gripper:
        """Open the link (again, after a lost one: the old link is closed first)."""
        if self._executor is not None:
            self.disconnect()
        self._connect()
        try:
            self._max_width = self._read().max_width  # the first state: the link works, and max_width is known
        except BaseException:
            self._disconnect()
            raise
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"robohal-{self.name}")
        return self

    def disconnect(self) -> None:
        executor, self._executor = self._executor, None
        try:
            if self._running is not None:
                self._stop_quietly()
        finally:
            self._disconnect()
            if executor is not None:
                executor.shutdown(wait=True, cancel_futures=True)

    def _stop_quietly(self) -> None:
        try:
            self.stop()
        except RobohalError:
            pass  # the link is going anyway

    # State ---------------------------------------------------------------------------

    @property
    def state(self) -> GripperState:
        state = self._read()
        self._max_width = state.max_width
        return state

    @property
    def max_width(self) -> float:
        """The widest opening (m), as the last state read (or homing) found it."""
        return self.state.max_width if self._max_width is None else self._max_width

    @property
    def busy(self) -> bool:
        """Whether a command runs."""
        return self._running is not None

    # Commands ------------------------------------------------------------------------

    def homing(self, *, wait: bool = True) -> bool | Future:
        """Find the fingers' travel (closing, then opening fully); sets ``state.max_width``."""
        self._max_width = None  # homing measures it anew
        return self._submit("homing()", self._homing, wait)

    def move(self, width: float, speed: float | None = None, *, wait: bool = True) -> bool | Future:
        """Move the fingers to ``width`` m at ``speed`` m/s, without force control. True when
        they got there (an object in the way makes it False)."""
        width, speed = self._width(width), self._speed(speed)
        return self._submit(f"move({width:g}, {speed:g})", lambda: self._move(width, speed), wait)

    def grasp(self, width: float, speed: float | None = None, force: float | None = None, *,
              epsilon_inner: float = 0.005, epsilon_outer: float = 0.005, wait: bool = True) -> bool | Future:
        """Close (or open) on an object expected ``width`` m wide, at ``speed`` m/s, holding it
        with ``force`` N. True (an object is held) when the fingers came to rest between
        ``width - epsilon_inner`` and ``width + epsilon_outer``."""
        width, speed, force = self._width(width), self._speed(speed), self._force(force)
        inner, outer = (_finite(e, name) for e, name in ((epsilon_inner, "epsilon_inner"),
                                                         (epsilon_outer, "epsilon_outer")))
        if inner < 0 or outer < 0:
            raise InvalidArgument(f"gripper epsilons must be >= 0 m, got inner={inner:g}, outer={outer:g}")
        return self._submit(f"grasp({width:g}, {speed:g}, {force:g})",
                            lambda: self._grasp(width, speed, force, inner, outer), wait)

    def open(self, speed: float | None = None, *, wait: bool = True) -> bool | Future:
        """Open the fingers fully (to ``state.max_width``)."""
        return self.move(self.max_width, speed, wait=wait)

    def close(self, speed: float | None = None, force: float | None = None, *, wait: bool = True) -> bool | Future:
        """Close on whatever is between the fingers and hold it with ``force`` N: a grasp that
        accepts any width. True when the fingers came to rest under force; ``state.width`` says
        where (on an object, or on each other)."""
        return self.grasp(0.0, speed, force, epsilon_inner=0.0, epsilon_outer=self.max_width, wait=wait)

    def stop(self) -> bool:
        """End the running command (it returns False); the Franka Hand also releases the grip's
        force, a :class:`SignalGripper` keeps its output as it is (switching a vacuum off drops the part)."""
        self._stopping = self._running is not None
        return self._stop()

    # The one place a command runs ----------------------------------------------------

    def _submit(self, what: str, command: Callable[[], bool], wait: bool) -> bool | Future:
        with self._lock:
            if self._executor is None:
                raise RobohalError(f"{self.name} is not connected")
            if self._running is not None:
                raise GripperBusy(f"{self.name} is busy with {self._running}: wait for it or stop() it first")
            self._running = what
            self._stopping = False
            try:
                future = self._executor.submit(self._run, command)
            except RuntimeError:  # shut down meanwhile
                self._running = None
                raise RobohalError(f"{self.name} is not connected") from None
        if not wait:
            return future
        try:
            return future.result()
        except KeyboardInterrupt:
            self._stop_quietly()
            raise

    def _run(self, command: Callable[[], bool]) -> bool:
        try:
            return bool(command())
        except HardwareFault:
            if self._stopping:
                return False  # the hardware reports a stopped command as aborted: we asked for it
            raise
        finally:
            self._running = None

    # Checks --------------------------------------------------------------------------

    def _width(self, width: Any) -> float:
        width = _finite(width, "width")
        max_width = self.max_width
        if not 0.0 <= width <= max_width:
            raise InvalidArgument(f"gripper width must be within [0, {max_width:g}] m, got {width:g}")
        return width

    def _speed(self, speed: Any) -> float:
        speed = self.limits.default_speed if speed is None else _finite(speed, "speed")
        if not 0.0 < speed <= self.limits.max_speed:
            raise InvalidArgument(f"gripper speed must be within (0, {self.limits.max_speed:g}] m/s, got {speed:g}")
        return speed

    def _force(self, force: Any) -> float:
        force = self.limits.default_force if force is None else _finite(force, "force")
        low, high = self.limits.min_force, self.limits.max_force
        if not low <= force <= high:
            raise InvalidArgument(f"gripper force must be within [{low:g}, {high:g}] N, got {force:g}")
        return force

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}{' busy with ' + self._running if self._running else ''}>"


@dataclass(frozen=True)
class Signal:
    """A named I/O signal: ``digital`` (bool) or ``analog`` (float, SI units of the signal),
    an ``input`` (read only) or an ``output`` (written, and read back as last set)."""

    name: str
    kind: str = "digital"
    direction: str = "output"

    def __post_init__(self) -> None:
        if self.kind not in ("digital", "analog"):
            raise InvalidArgument(f"signal {self.name!r}: kind is 'digital' or 'analog', got {self.kind!r}")
        if self.direction not in ("input", "output"):
            raise InvalidArgument(f"signal {self.name!r}: direction is 'input' or 'output', got {self.direction!r}")


class IoPorts(Mapping):
    """``robot.io``: the signals a backend declares, read and written by name.

    ``read(name)`` and ``write(name, value)`` are the backend's; here are the checks: an
    unknown name is an :class:`~robohal.errors.UnknownNameError` listing the known ones, an
    input cannot be written, a digital value is a bool and an analog one a finite number.
    """

    def __init__(self, signals: Mapping[str, Signal] | None = None, *,
                 read: Callable[[str], Any] | None = None, write: Callable[[str, Any], None] | None = None,
                 owner: str = "this robot") -> None:
        self.signals = dict(signals or {})
        self._reader = read
        self._writer = write
        self.owner = owner

    def signal(self, name: str) -> Signal:
        try:
            return self.signals[name]
        except (KeyError, TypeError):
            raise UnknownNameError(f"I/O signal of {self.owner}", str(name), sorted(self.signals)) from None

    def __getitem__(self, name: str) -> bool | float:
        signal = self.signal(name)
        assert self._reader is not None
        value = self._reader(signal.name)
        return bool(value) if signal.kind == "digital" else float(value)

    def __setitem__(self, name: str, value: bool | float) -> None:
        signal = self.signal(name)
        if signal.direction == "input":
            raise InvalidArgument(f"I/O signal {name!r} is an input: it can be read, not set")
        if signal.kind == "digital":
            if not isinstance(value, (bool, int)) or value not in (0, 1):
                raise InvalidArgument(f"I/O signal {name!r} is digital: set it to True or False, got {value!r:.40}")
            value = bool(value)
        else:
            value = _finite(value, f"signal {name!r} value")
        assert self._writer is not None
        self._writer(signal.name, value)

    def __iter__(self) -> Iterator[str]:
        return iter(self.signals)

    def __len__(self) -> int:
        return len(self.signals)

    def __repr__(self) -> str:
        return f"<IoPorts of {self.owner}: {', '.join(self.signals) or 'none'}>"



#: s between two looks at a signal gripper's inputs. Our choice: about one period of the links that
#: carry them (EGM reports every 4 ms); a shorter poll sees nothing newer
SIGNAL_POLL = 0.004
#: what a two-state gripper accepts: it moves at its own speed and holds with its own force (its air
#: pressure, its vacuum), so speed and force are only checked to be numbers in these ranges
SIGNAL_LIMITS = GripperLimits(max_speed=1.0, max_force=1000.0, default_speed=1.0, default_force=0.0)


class SignalGripper(Gripper):
    """A two-state gripper on I/O signals: the digital ``output`` on closes it (or turns the
    suction on), off opens it.

    A command sets the output and waits until the optional ``closed_input`` confirms the new
    state (a :class:`HardwareFault` if it has not within ``timeout`` s) and at least ``delay``
    s have passed since the switch (the tool's switching time: without a feedback input, the
    only way to know it is done). Widths are nominal: ``width`` m when open, 0 when closed; a
    :meth:`move` goes to one of the two. :meth:`grasp` and :meth:`close` return whether
    ``part_input`` reports a part (without one: that the gripper closed). A lost link is the
    I/O's own error (:class:`~robohal.errors.ConnectionLost`), raised by the command waiting.
    """

    def __init__(self, io: IoPorts, output: str, *, closed_input: str | None = None, part_input: str | None = None,
                 delay: float = 0.2, timeout: float = 3.0, width: float = 0.05, limits: GripperLimits = SIGNAL_LIMITS,
                 name: str = "gripper") -> None:
        super().__init__(limits, name=name)
        for signal, direction in ((output, "output"), (closed_input, "input"), (part_input, "input")):
            if signal is not None and (io.signal(signal).direction != direction or io.signal(signal).kind != "digital"):
                raise InvalidArgument(f"{name}: {signal!r} must be a digital {direction}")
        delay, timeout, width = (_finite(v, what) for v, what in ((delay, "delay"), (timeout, "timeout"),
                                                                    (width, "width")))
        if delay < 0 or timeout <= 0 or width <= 0 or delay > timeout:
            raise InvalidArgument(f"{name}: needs 0 <= delay <= timeout and width > 0, got delay={delay:g} s,"
                                  f" timeout={timeout:g} s, width={width:g} m")
        self.io, self.output = io, output
        self.closed_input, self.part_input = closed_input, part_input
        self.delay, self.timeout, self.width = delay, timeout, width
        self._wake = threading.Event()  # set by stop(): a waiting command looks at once

    def _read(self) -> GripperState:
        closed = bool(self.io[self.closed_input if self.closed_input is not None else self.output])
        held = bool(self.io[self.part_input]) if self.part_input is not None else closed
        return GripperState(width=0.0 if closed else self.width, max_width=self.width, is_grasped=held,
                            time=time.monotonic())

    def move(self, width: float, speed: float | None = None, *, wait: bool = True) -> bool | Future:
        """Open (``width`` = ``max_width``) or close (0): a two-state gripper has no other width."""
        width = self._width(width)
        if width not in (0.0, self.width):
            raise InvalidArgument(f"{self.name} is open ({self.width:g} m) or closed (0 m), got width {width:g}")
        return super().move(width, speed, wait=wait)

    def _homing(self) -> bool:
        return self._switch(closed=False)

    def _move(self, width: float, speed: float) -> bool:
        return self._switch(closed=width == 0.0)

    def _grasp(self, width: float, speed: float, force: float, epsilon_inner: float, epsilon_outer: float) -> bool:
        if not self._switch(closed=True):
            return False
        return bool(self.io[self.part_input]) if self.part_input is not None else True

    def _stop(self) -> bool:
        self._wake.set()
        return True

    def _switch(self, closed: bool) -> bool:
        """Set the output and wait for the tool (see the class); False when stop() ended the wait."""
        self._wake.clear()
        switched = time.monotonic()
        self.io[self.output] = closed
        deadline = switched + self.timeout
        while not self._stopping:
            now = time.monotonic()
            confirmed = self.closed_input is None or bool(self.io[self.closed_input]) == closed
            if confirmed and now - switched >= self.delay:
                return True
            if now >= deadline:
                raise HardwareFault(f"{self.name}: {self.closed_input} did not report {'closed' if closed else 'open'}"
                                    f" within {self.timeout:g} s of setting {self.output} to {closed}"
                                    " (no air, no vacuum, a jammed tool, or the signal is not mapped)",
                                    names=("gripper_timeout",))
            self._wake.wait(min(SIGNAL_POLL, deadline - now))
        return False
