"""Backends registered by robohal_arduino_planar: ``arduino-planar`` and its two simulators."""

from __future__ import annotations

import functools

from robohal import BackendSpec, DemoSpec, SimulatorSpec
from robohal.uri import RobotUri

DEFAULT_MODEL = "arduino.planar2"
SIMAVR_TARGET = f"arduino-planar://sim?model={DEFAULT_MODEL}&firmware=simavr"
EMULATOR_TARGET = f"arduino-planar://sim?model={DEFAULT_MODEL}&firmware=emulator"

#: what the backend and its simulators offer (for @needs_feature)
FEATURES = frozenset({
    "servo-pulses",  # the simulators report every pulse width on D9/D10
    "simulated-faults",  # reset, garbage bytes either way, dropped bytes
    "mcu-reset",  # a reset in mid-stream is detected and recovered
})

# The wire carries whole microseconds: a commanded angle lands within 0.5 us, which is
# 0.5 * pi / 1000 rad (1.6 mrad) with the default calibration.
POSITION_TOLERANCE = 2e-3
# The servos are there this long after the last setpoint: a full 180 deg at the SG90's rated
# 0.1 s/60 deg takes 0.3 s (servo.py), plus margin. The HIL suite checks it on the simulators.
SETTLE_TIME = 0.5


@functools.lru_cache(maxsize=1)
def _toolchain_present() -> bool:
    from .firmware import toolchain_missing

    return toolchain_missing() is None


def hil_targets() -> tuple[str, ...]:
    """The emulator always; the firmware in simavr where the AVR toolchain is installed (where
    it is not, the HIL test robohal_arduino_planar.hil.test_toolchain skips naming the fix)."""
    return (SIMAVR_TARGET, EMULATOR_TARGET) if _toolchain_present() else (EMULATOR_TARGET,)


def _factory(uri: RobotUri, model):
    from .backend import ArduinoPlanarBackend

    return ArduinoPlanarBackend(uri, model)


def _start_simulator(uri: RobotUri):
    from .simulation import start_simulator

    return start_simulator(uri)


def _command():
    from .simulator_cli import command

    return command


def _demo_where() -> tuple[str, str]:
    from .demo import where

    return where()


def _demo_task(run) -> None:
    from .demo import star

    star(run)


def backend_specs() -> list[BackendSpec]:
    return [
        BackendSpec(
            scheme="arduino-planar",
            factory=_factory,
            description="Two hobby servos on an Arduino running robohal_planar, over USB serial (pyserial), 50 Hz",
            simulator=SimulatorSpec(
                start=_start_simulator,
                default_model=DEFAULT_MODEL,
                command=_command(),
                description="the real firmware in simavr (firmware=simavr) or a Python emulator (firmware=emulator) on a pty",
            ),
            hil_targets=hil_targets(),
            hil_suite="robohal_arduino_planar.hil",
            features=FEATURES,
            position_tolerance=POSITION_TOLERANCE,
            settle_time=SETTLE_TIME,
            demo=DemoSpec("planar servo arm", _demo_where, _demo_task),
            params=("rate", "baud", "boot", "timeout", "retries", "watchdog_ms", "watchdog_action", "keepalive",
                    "poll", "q0", "calibration", "s1_*", "s2_*", "firmware", "sim_*"),
        )
    ]
