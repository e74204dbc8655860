"""Starting the bundled simulators for ``arduino-planar://sim?...`` URIs.

``arduino-planar://sim?model=arduino.planar2&firmware=simavr`` runs the real firmware ELF in the
simavr harness; ``firmware=emulator`` runs the Python emulator (the default when the AVR
toolchain is missing is an error naming ``make avr-deps``, never a silent swap). Both are the
simulator program (``python -m robohal_arduino_planar.simulator``, :mod:`.simulator`) in its own
process on a pseudo-terminal; ``.uri`` of the started simulator is the ``arduino-planar://<pty>``
it announces, plus the backend parameters of the sim URI. The simulator's options ride on the URI
with a ``sim_`` prefix, as on every robohal simulator: ``sim_boot_ms=300`` (the reset-on-open
hold), ``sim_fast=1`` (simavr free-running instead of real time), ``sim_servo_speed=10.47`` (the
servos' slew rate in rad/s; default the SG90's rated 0.1 s/60 deg, see :mod:`.servo`) and
``sim_ideal=1`` (the horns follow each pulse at once: perfect tracking, for unit tests that need it;
never a HIL default).

:class:`ArduinoSimulator` keeps reading the simulator's stdout (so the pipe never fills and
stalls it) and collects its ``PULSE``, ``HORN`` and ``RESET`` lines for HIL suites (the launcher
asks the program for them with ``--pulses 1``); :meth:`control` sends the harness control lines
(``RESET``, ``INJECT_RX``, ``INJECT_TX``, ``DROP_RX``) and :meth:`stats` asks where the horns are now.

The backend cannot see the horns (a hobby servo has no position feedback): its ``q`` is the
acknowledged pulse widths. The horns are what the arm physically does, for tests to compare.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass

from robohal.errors import UriError
from robohal.sim.process import SimulatorError, SimulatorProcess, launch
from robohal.uri import RobotUri

from . import firmware
from .servo import SG90_SPEED
from .simulator import DEFAULT_BOOT_MS, KINDS

PROGRAM = "robohal_arduino_planar.simulator"
#: each scheme's simulator program: the same program, whose ready line names the scheme
PROGRAMS = {"arduino-planar": PROGRAM, "arduino-arm": "robohal_arduino_planar.arm_simulator",
            "arduino-firmata": "robohal_arduino_planar.firmata_simulator"}
PULSE_HISTORY = 20000  # pulses (and horn reports) kept: about 100 s of both servos at 50 Hz


@dataclass(frozen=True)
class Pulse:
    """One servo pulse the simulator saw: simulated time (us), Arduino pin, width (us)."""

    time_us: float
    pin: int
    width_us: float


@dataclass(frozen=True)
class Horn:
    """Where a servo's horn was as one of its pulses ended: simulated time (us), Arduino pin, and
    the horn's angle written as the pulse width (us) whose target it is (see :mod:`.servo`)."""

    time_us: float
    pin: int
    position_us: float


class ArduinoSimulator(SimulatorProcess):
    """A running planar-arm simulator (firmware in simavr, or the emulator).

    ``servo_speed`` (rad/s, None when ``ideal``) and ``ideal`` are the servo model it runs.
    """

    def __init__(self, argv: list[str], *, kind: str, servo_speed: float | None = None, ideal: bool = False,
                 **options) -> None:
        self.kind = kind
        self.ideal = ideal
        self.servo_speed = None if ideal else (SG90_SPEED if servo_speed is None else servo_speed)
        self.pulses: deque[Pulse] = deque(maxlen=PULSE_HISTORY)
        self.horns: deque[Horn] = deque(maxlen=PULSE_HISTORY)
        self.events: list[str] = []  # RESET lines and anything else that is not a pulse
        self.writes: deque[str] = deque(maxlen=PULSE_HISTORY)  # the Firmata board's SERVO lines
        self.pin_writes: deque[tuple[float, int, int]] = deque(maxlen=PULSE_HISTORY)  # its PIN lines: (t, pin, level)
        self._stats_lines: deque[str] = deque(maxlen=16)
        self.pulse_count = 0
        self.horn_count = 0
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        super().__init__(argv, **options)
        self.pty_path = self.uri.path
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"robohal-arduino-sim-{self.pid}")
        self._reader.start()

    def _read(self) -> None:
        while not self._stopping.is_set():
            try:
                if not self._fill(0.05):
                    if not self.alive():
                        break
                    continue
                lines = self.lines()
            except (OSError, ValueError):
                break
            with self._cond:
                for line in lines:
                    parts = line.split()
                    if len(parts) == 4 and parts[0] == "PULSE":
                        try:
                            self.pulses.append(Pulse(float(parts[1]), int(parts[2]), float(parts[3])))
                            self.pulse_count += 1
                        except ValueError:
                            self.events.append(line)
                    elif len(parts) == 4 and parts[0] == "HORN":
                        try:
                            self.horns.append(Horn(float(parts[1]), int(parts[2]), float(parts[3])))
                            self.horn_count += 1
                        except ValueError:
                            self.events.append(line)
                    elif parts and parts[0] == "SERVO":
                        self.writes.append(line)
                    elif len(parts) == 4 and parts[0] == "PIN":
                        self.pin_writes.append((float(parts[1]), int(parts[2]), int(parts[3])))
                    elif line.startswith("STATS "):
                        self._stats_lines.append(line[len("STATS "):])
                    elif line:
                        self.events.append(line)
                self._cond.notify_all()

    # Observations ---------------------------------------------------------------------------------

    def mark(self) -> int:
        """A position in the pulse stream (see :meth:`pulses_since`)."""
        with self._cond:
            return self.pulse_count

    def pulses_since(self, mark: int, pin: int | None = None) -> list[Pulse]:
        with self._cond:
            skip = max(0, len(self.pulses) - (self.pulse_count - mark))
            found = list(self.pulses)[skip:]
        return [pulse for pulse in found if pin is None or pulse.pin == pin]

    def wait_pulses(self, mark: int, count: int, pin: int, timeout: float = 10.0) -> list[Pulse]:
        """At least ``count`` pulses on ``pin`` after ``mark`` (fewer if ``timeout`` s pass)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.pulses_since(mark, pin)) < count and time.monotonic() < deadline and self.alive():
                self._cond.wait(min(0.1, max(deadline - time.monotonic(), 0.0)))
        return self.pulses_since(mark, pin)

    def horn_mark(self) -> int:
        """A position in the horn reports (see :meth:`horns_since`)."""
        with self._cond:
            return self.horn_count

    def horns_since(self, mark: int, pin: int | None = None) -> list[Horn]:
        with self._cond:
            skip = max(0, len(self.horns) - (self.horn_count - mark))
            found = list(self.horns)[skip:]
        return [horn for horn in found if pin is None or horn.pin == pin]

    def applied_at(self, pin: int, width_us: int, after: float, timeout: float = 5.0) -> float | None:
        """When the Firmata board applied ``width_us`` on ``pin`` at or after ``after`` (its ``SERVO``
        lines carry the host's monotonic clock, so a latency is that minus the write's time); None
        if it did not within ``timeout`` s."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in reversed(self.writes):
                    _, t, p, us = line.split()
                    if float(t) < after:
                        break
                    if int(p) == pin and int(us) == width_us:
                        return float(t)
                left = deadline - time.monotonic()
                if left <= 0 or not self.alive():
                    return None
                self._cond.wait(min(left, 0.05))

    def stats(self, timeout: float = 5.0) -> dict:
        """The simulator's answer to ``STATS``: ``horn_us`` and ``target_us`` per servo (D9, D10)
        now, ``moving``, ``servo_speed`` (rad/s, None when ideal), ``ideal`` and ``sim_us``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._stats_lines.clear()
            self.send("STATS")
            while not self._stats_lines:
                left = deadline - time.monotonic()
                if left <= 0 or not self.alive():
                    raise SimulatorError(f"the {self.kind} simulator did not answer STATS within {timeout:g} s")
                self._cond.wait(min(left, 0.1))
            return json.loads(self._stats_lines.popleft())

    def resets(self) -> list[str]:
        with self._cond:
            return [line for line in self.events if line.startswith("RESET ")]

    def control(self, line: str) -> None:
        """Send a control line (``RESET``, ``INJECT_TX 41420a``, ...) to the simulator."""
        self.send(line)

    def stop(self, timeout: float = 5.0) -> int | None:
        """Stop the reader, then the process (stdin EOF ends both simulators); idempotent."""
        self._stopping.set()
        reader = getattr(self, "_reader", None)
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout=2.0)
        return super().stop(timeout)


def simulator_kind(uri: RobotUri) -> str:
    kind = uri.params.get("firmware", "simavr")
    if kind not in KINDS or kind == "firmata":  # StandardFirmata has its own scheme, arduino-firmata
        raise UriError(f"{uri}: firmware={kind!r}; choose simavr (the real firmware in simavr) or emulator")
    return kind


def start_firmata_simulator(uri: RobotUri) -> ArduinoSimulator:
    """``SimulatorSpec.start`` for ``arduino-firmata://sim?arm=...``: a simulated Uno running
    StandardFirmata (:mod:`.firmata_board`)."""
    uri.get_int("sim_boot_ms", DEFAULT_BOOT_MS, minimum=0)
    ideal = uri.get_bool("sim_ideal", False)
    servo_speed = uri.get_float("sim_servo_speed", SG90_SPEED, minimum=0.0)
    if servo_speed <= 0:
        raise UriError(f"{uri}: sim_servo_speed is the servos' slew rate in rad/s and must be above 0")
    if uri.params.get("sim_fast"):
        raise UriError(f"{uri}: sim_fast runs simavr free; the Firmata board runs in real time")
    return launch(PROGRAMS["arduino-firmata"], uri, ["--pulses", "1"], process=ArduinoSimulator,
                  kind="firmata", servo_speed=servo_speed, ideal=ideal)


def start_arm_simulator(uri: RobotUri) -> ArduinoSimulator:
    """``SimulatorSpec.start`` for ``arduino-arm://sim?arm=...&firmware=simavr|emulator``: the robohal
    firmware (or its emulator), whose channels the backend configures from the arm file."""
    return start_simulator(uri, tool=None, scheme="arduino-arm")


def start_simulator(uri: RobotUri, tool: str | None = "gripper", scheme: str = "arduino-planar") -> ArduinoSimulator:
    """``SimulatorSpec.start`` for ``arduino-planar://sim?model=...&firmware=simavr|emulator``."""
    kind = simulator_kind(uri)
    uri.get_int("sim_boot_ms", DEFAULT_BOOT_MS, minimum=0)  # bad options are the URI's errors, before anything starts
    uri.get_bool("sim_fast", False)
    ideal = uri.get_bool("sim_ideal", False)
    servo_speed = uri.get_float("sim_servo_speed", SG90_SPEED, minimum=0.0)
    if servo_speed <= 0:
        raise UriError(f"{uri}: sim_servo_speed is the servos' slew rate in rad/s and must be above 0"
                       " (sim_ideal=1 gives perfect tracking)")
    if kind == "simavr":
        missing = firmware.toolchain_missing()
        if missing:
            raise SimulatorError(f"the firmware simulator needs the AVR toolchain and simavr: {missing}"
                                 " (or use firmware=emulator)")
        # Built here, so that the program finds both up to date and its start timeout counts no build.
        firmware.build_firmware()
        firmware.build_harness()
    if tool is not None:  # the planar arm's simulators come with their tool: the third servo is a gripper unless named
        uri = uri.with_params(tool=uri.params.get("tool", tool))
    return launch(PROGRAMS[scheme], uri, ["--firmware", kind, "--pulses", "1"], leave_out=("firmware",),
                  process=ArduinoSimulator, kind=kind, servo_speed=servo_speed, ideal=ideal)
