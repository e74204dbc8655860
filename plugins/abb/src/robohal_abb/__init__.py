"""robohal_abb: ABB robot models and the EGM backend (``abb-egm://``).

This package is the plugin (entry point ``abb`` in the ``robohal`` group): its two hooks
return records whose callables are dotted references, so listing plugins imports
nothing else. The parts, one module per role as in every robohal plugin:

- ``models``: the robot models; ``backend``: the EGM backend; ``wire``: the EGM codec
- ``simulator``: the simulated controller program (``python -m robohal_abb.simulator``)
- ``signals``: the I/O signals and the gripper over EGM's RAPID data (``robot.io``, ``robot.gripper``)
- ``simulation``: its launcher for ``abb-egm://sim?...``; ``demo``: the task of ``robohal demo``
- ``rws``: the Robot Web Services client (RobotWare 6 and 7); ``cell``: the cell brought up over it
  (``robohal abb ...``); ``cell_link``: the backend's use of it (``rws=`` URIs); ``stream_end``:
  why an EGM stream ended, from the controller's event log; ``cli``: the ``robohal abb`` commands
"""

from __future__ import annotations

from robohal import BackendSpec, CommandSpec, DemoSpec, SimulatorSpec, ToolSpec, hookimpl

DEFAULT_MODEL = "abb.irb1410"

#: what the abb-egm backend and its bundled simulator offer (for @needs_feature)
FEATURES = frozenset({
    "simulated-faults",  # the simulator takes loss/delay/duplicate/reorder/stall/motors-off/restart injection
    "pose-mode",  # mode=pose: EGMRunPose targets from the model's forward kinematics
    "session-restart",  # a controller restart (seqno 0) is recognised and the measured position held
    "udp",  # the robot link is UDP: loss and reordering are part of normal life
    "io",  # I/O signals over EGM's RAPID data; the simulator's tool is a vacuum gripper with a part to pick
})


@hookimpl
def robohal_models():
    from .models import model_specs

    return model_specs()


@hookimpl
def robohal_backends():
    return [
        BackendSpec(
            scheme="abb-egm",
            factory="robohal_abb.backend:EgmBackend",
            description="ABB Externally Guided Motion over UDP (robohal is the EGM sensor), 250 Hz",
            simulator=SimulatorSpec(
                start="robohal_abb.simulation:start_simulator",
                default_model=DEFAULT_MODEL,
                program="robohal_abb.simulator",
                description="simulated ABB controller streaming EGM on loopback, with fault injection",
            ),
            hil_targets=(f"abb-egm://sim?model={DEFAULT_MODEL}",),
            hil_suite="robohal_abb.hil",
            features=FEATURES,
            position_tolerance=2e-3,
            settle_time=1.0,
            demo=DemoSpec("ABB IRB 1410", where="robohal_abb.demo:where", task="robohal_abb.demo:straight_line",
                          pick_place="robohal_abb.demo:pick_place"),
            params=("robot", "timeout", "connect_timeout", "mode", "sample_rate", "reply", "sim_*",
                    "do", "di", "ao", "ai", "gripper", "gripper_closed", "gripper_part", "gripper_delay",
                    "gripper_timeout", "gripper_width",  # as robohal_abb.signals reads them
                    "rws", "rws_dialect", "rws_start", "rws_ca", "rws_fingerprint", "rws_timeout",
                    "rws_credentials"),  # robohal_abb.cell (the simulator announces rws and rws_fingerprint)
            tools=(ToolSpec("gripper", factory="robohal_abb.signals:gripper_for",
                            description="a two-state gripper on a digital output (gripper=DO; the simulator's vacuum)"),
                   ToolSpec("io", factory="robohal_abb.signals:io_for",
                            description="digital and analog signals over EGM's RAPID data (do=, di=, ao=, ai=)")),
            bring_up="robohal_abb.cell:cell_bring_up",
        )
    ]


@hookimpl
def robohal_commands():
    return [CommandSpec("abb", "robohal_abb.cli:abb",
                        "an ABB cell over Robot Web Services: status, setup, start, stop, motors, io, elog")]
