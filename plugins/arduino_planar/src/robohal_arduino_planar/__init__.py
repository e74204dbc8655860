"""robohal_arduino_planar: a planar two-link servo arm on an Arduino (``arduino-planar://``),
with a third servo as its tool: a gripper or a pen lift; and any servo arm from an arm file
(the MeArm, the Braccio, ...) on the same firmware's channels (``arduino-arm://``) or on stock
StandardFirmata (``arduino-firmata://``).

This package is the plugin (entry point ``arduino_planar`` in the ``robohal`` group): its two
hooks return records whose callables are dotted references, so listing plugins imports
nothing else. The parts, one module per role as in every robohal plugin:

- ``models``: the arm's model; ``backend``: the serial backend; ``wire``: the line-protocol codec
  (PROTOCOL.md); ``link``: the line link both firmware backends share; ``calibration``, ``servo``:
  pulse widths and the servos' motion
- ``arm_backend``: what every arm file's backend shares; ``arm_firmware``: an arm file on the
  robohal firmware; ``firmata_backend``, ``firmata_wire``, ``firmata_board``: on StandardFirmata
- ``tool``: the third servo as ``robot.gripper`` (``tool=gripper``) or a pen lift (``tool=pen``)
- ``simulator``: the simulator program (``python -m robohal_arduino_planar.simulator``), which runs
  the real firmware in simavr (``firmware``: its build) or the emulated MCU (``emulator``);
  ``arm_simulator``, ``firmata_simulator``: the same program for ``arduino-arm`` and ``arduino-firmata``
- ``simulation``: its launcher for ``arduino-planar://sim?...``; ``demo``: the task of ``robohal demo``
"""

from __future__ import annotations

import functools

from robohal import BackendSpec, DemoSpec, SimulatorSpec, ToolSpec, hookimpl

DEFAULT_MODEL = "arduino.planar2"
SIMAVR_TARGET = f"arduino-planar://sim?model={DEFAULT_MODEL}&firmware=simavr"
EMULATOR_TARGET = f"arduino-planar://sim?model={DEFAULT_MODEL}&firmware=emulator"
FIRMATA_TARGET = "arduino-firmata://sim?arm=mearm"
ARM_SIMAVR_TARGET = "arduino-arm://sim?arm=mearm&firmware=simavr"
ARM_EMULATOR_TARGET = "arduino-arm://sim?arm=mearm&firmware=emulator"
#: what the Firmata backend offers: pulses in its simulator, a reset seen (StandardFirmata's start-up
#: report arriving unasked) and recovered, and no acknowledgement and no host watchdog (it declares
#: neither "acknowledged-setpoints" nor "host-watchdog")
FIRMATA_FEATURES = frozenset({"servo-pulses", "mcu-reset"})

#: what the backend and its simulators offer (for @needs_feature)
FEATURES = frozenset({
    "servo-pulses",  # the simulators report every pulse width on D9/D10 (and the tool's D6)
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
def toolchain_present() -> bool:
    """Whether the AVR toolchain and simavr are installed (asked once; ``cache_clear()`` asks again)."""
    from .firmware import toolchain_missing

    return toolchain_missing() is None


def hil_targets() -> tuple[str, ...]:
    """The emulator always; the firmware in simavr where the AVR toolchain is installed (where
    it is not, the HIL test robohal_arduino_planar.hil.test_toolchain skips naming the fix)."""
    return (SIMAVR_TARGET, EMULATOR_TARGET) if toolchain_present() else (EMULATOR_TARGET,)


def arm_hil_targets() -> tuple[str, ...]:
    """The MeArm on the firmware's emulator always, on the firmware in simavr where the toolchain is."""
    return (ARM_SIMAVR_TARGET, ARM_EMULATOR_TARGET) if toolchain_present() else (ARM_EMULATOR_TARGET,)


@hookimpl
def robohal_models():
    from .models import model_specs

    return model_specs()


@hookimpl
def robohal_backends():
    return [
        BackendSpec(
            scheme="arduino-planar",
            factory="robohal_arduino_planar.backend:ArduinoPlanarBackend",
            description="Two hobby servos (and a tool servo) on an Arduino running robohal_planar, over USB serial"
                        " (pyserial), 50 Hz",
            simulator=SimulatorSpec(
                start="robohal_arduino_planar.simulation:start_simulator",
                default_model=DEFAULT_MODEL,
                program="robohal_arduino_planar.simulator",
                description="the real firmware in simavr (firmware=simavr) or a Python emulator (firmware=emulator) on a pty",
                params=("firmware",),
            ),
            hil_targets=hil_targets(),
            hil_suite="robohal_arduino_planar.hil",
            features=FEATURES,
            position_tolerance=POSITION_TOLERANCE,
            settle_time=SETTLE_TIME,
            demo=DemoSpec("planar servo arm", where="robohal_arduino_planar.demo:where",
                          task="robohal_arduino_planar.demo:star", pick_place="robohal_arduino_planar.demo:pick_place"),
            params=("rate", "baud", "boot", "timeout", "retries", "watchdog_ms", "watchdog_action", "keepalive",
                    "poll", "q0", "calibration", "s1_*", "s2_*", "tool", "tool_*", "firmware", "sim_*"),
            tools=(ToolSpec("gripper", factory="robohal_arduino_planar.tool:gripper_for",
                            description="a claw on the third servo, D6 (tool=gripper; the simulators' default)"),
                   ToolSpec("io", factory="robohal_arduino_planar.tool:io_for",
                            description="a pen lift on the third servo, D6, as io['pen_down'] (tool=pen)")),
        ),
        BackendSpec(
            scheme="arduino-arm",
            factory="robohal_arduino_planar.arm_firmware:ArduinoArmBackend",
            description="An arm file's servos (up to 12, any pins) on an Arduino running the robohal firmware, over"
                        " USB serial (pyserial), 50 Hz, every write acknowledged, with the firmware's watchdog",
            simulator=SimulatorSpec(
                start="robohal_arduino_planar.simulation:start_arm_simulator",
                default_model="arm.mearm",
                program="robohal_arduino_planar.arm_simulator",
                description="the real firmware in simavr (firmware=simavr) or its Python emulator (firmware=emulator)"
                            " on a pty",
                params=("firmware",),
            ),
            hil_targets=arm_hil_targets(),
            hil_suite="robohal_arduino_planar.hil",
            features=FEATURES,
            position_tolerance=POSITION_TOLERANCE,
            settle_time=SETTLE_TIME,
            params=("arm", "rate", "baud", "boot", "timeout", "retries", "watchdog_ms", "watchdog_action", "keepalive",
                    "poll", "q0", "firmware", "sim_*"),
            tools=(ToolSpec("gripper", factory="robohal_arduino_planar.tool:gripper_for",
                            description="the arm file's gripper servo, on the channel after the joints'"),),
            demo=DemoSpec("Braccio on the robohal firmware", where="robohal_arduino_planar.demo:braccio_where",
                          task="robohal_arduino_planar.demo:braccio_square",
                          pick_place="robohal_arduino_planar.demo:braccio_pick_place"),
        ),
        BackendSpec(
            scheme="arduino-firmata",
            factory="robohal_arduino_planar.firmata_backend:ArduinoFirmataBackend",
            description="An arm file's servos on an Arduino running stock StandardFirmata (no reflashing), over"
                        " USB serial at 57600 baud; writes are not acknowledged and there is no watchdog",
            simulator=SimulatorSpec(
                start="robohal_arduino_planar.simulation:start_firmata_simulator",
                default_model="arm.mearm",
                program="robohal_arduino_planar.firmata_simulator",
                description="a simulated Uno running StandardFirmata on a pty (the program's --firmware firmata)",
            ),
            hil_targets=(FIRMATA_TARGET,),
            features=FIRMATA_FEATURES,
            position_tolerance=POSITION_TOLERANCE,
            settle_time=SETTLE_TIME,
            params=("arm", "rate", "boot", "timeout", "q0", "poll", "sampling_ms", "sim_*"),
            tools=(ToolSpec("gripper", factory="robohal_arduino_planar.tool:gripper_for",
                            description="the arm file's gripper servo"),),
            demo=DemoSpec("MeArm on StandardFirmata", where="robohal_arduino_planar.demo:mearm_where",
                          task="robohal_arduino_planar.demo:mearm_triangle",
                          pick_place="robohal_arduino_planar.demo:mearm_pick_place"),
        ),
    ]
