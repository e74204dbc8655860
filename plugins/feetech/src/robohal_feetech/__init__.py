"""robohal_feetech: arms of Feetech serial-bus servos (``feetech://``), the SO-101 first.

This package is the plugin (entry point ``feetech`` in the ``robohal`` group): its hooks return
records whose callables are dotted references, so listing plugins imports nothing else. The
parts, one module per role as in every robohal plugin:

- ``models``: the SO-101's model; ``arm``: an arm file read for this bus (ids, gripper, limits)
- ``wire``: the STS protocol codec; ``registers``: the STS3215's control table
- ``bus``: the host's side of the bus (transactions, retries, who stopped answering)
- ``backend``: the ``feetech://`` backend; ``telemetry``: what the servos report, in SI units;
  ``protection``: stall, voltage and temperature watch; ``gripper``: the jaw as ``robot.gripper``
- ``calibration``: ticks and radians, ranges first, homing offsets that keep the wrap point out
- ``servo``, ``simbus``: a simulated STS3215 and the simulated bus; ``simulator``: the simulator
  program (``python -m robohal_feetech.simulator``); ``simulation``: its launcher
- ``cli``: ``robohal feetech ...`` (scan, calibrate, set an id or a baud rate); ``demo``: the task
  of ``robohal demo``
"""

from __future__ import annotations

from robohal import BackendSpec, CommandSpec, DemoSpec, SimulatorSpec, ToolSpec, hookimpl

DEFAULT_MODEL = "arm.so101"  # the bundled arm file's: the SO-101 model, wired
SIM_TARGET = "feetech://sim?arm=so101"

#: what the backend and its simulator offer (for @needs_feature)
FEATURES = frozenset({
    "simulated-faults",  # dropped and corrupted status packets, a silent servo, supply, temperature
    "servo-telemetry",  # load, current, voltage and temperature of every servo, each cycle
})

# One encoder tick is 2 pi / 4096 rad (1.5 mrad); a position-controlled STS3215 settles within a
# few ticks of its goal (its dead zone and backlash): 4 ticks.
POSITION_TOLERANCE = 4 * 2 * 3.141592653589793 / 4096
SETTLE_TIME = 0.5  # s: the servo's loop settles in well under this (20 ms time constant)


@hookimpl
def robohal_models():
    from robohal.plugins.arm_files import arm_model_specs

    from .arm import BUNDLED
    from .models import model_specs

    return [*model_specs(), *arm_model_specs([BUNDLED])]  # so_arm.so101, and arm.so101 its arm file's


@hookimpl
def robohal_backends():
    return [
        BackendSpec(
            scheme="feetech",
            factory="robohal_feetech.backend:FeetechBackend",
            description="Feetech serial-bus servos (STS3215: the SO-101) on a half-duplex USB adapter, 1 Mbps",
            simulator=SimulatorSpec(
                start="robohal_feetech.simulation:start_simulator",
                default_model=DEFAULT_MODEL,
                program="robohal_feetech.simulator",
                description="the arm's servos on a simulated bus (a pty): control tables, wire timing, faults",
            ),
            hil_targets=(SIM_TARGET,),
            hil_suite="robohal_feetech.hil",
            features=FEATURES,
            position_tolerance=POSITION_TOLERANCE,
            settle_time=SETTLE_TIME,
            demo=DemoSpec("SO-101 servo arm", where="robohal_feetech.demo:where", task="robohal_feetech.demo:square",
                          pick_place="robohal_feetech.demo:pick_place"),
            params=("arm", "calibration", "baud", "rate", "timeout", "retries", "poll", "sim_*"),
            tools=(ToolSpec("gripper", factory="robohal_feetech.gripper:gripper_for",
                            description="the jaw's servo, where the arm file has a [gripper]"),),
        )
    ]


@hookimpl
def robohal_commands():
    return [CommandSpec("feetech", "robohal_feetech.cli:feetech",
                        description="Feetech servo buses: scan, calibrate, set ids and baud rates")]
