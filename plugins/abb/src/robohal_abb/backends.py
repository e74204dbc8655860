"""Backends registered by robohal_abb: ``abb-egm`` and its simulated controller."""

from __future__ import annotations

from robohal import BackendSpec, DemoSpec, SimulatorSpec
from robohal.uri import RobotUri

DEFAULT_MODEL = "abb.irb1410"

#: what the abb-egm backend and its bundled simulator offer (for @needs_feature)
FEATURES = frozenset({
    "simulated-faults",  # the simulator takes loss/delay/duplicate/reorder/stall/motors-off/restart injection
    "pose-mode",  # mode=pose: EGMRunPose targets from the model's forward kinematics
    "session-restart",  # a controller restart (seqno 0) is recognised and the measured position held
    "udp",  # the robot link is UDP: loss and reordering are part of normal life
})


def _factory(uri: RobotUri, model):
    from .backend import EgmBackend

    return EgmBackend(uri, model)


def _start_simulator(uri: RobotUri):
    from .simulation import start_simulator

    return start_simulator(uri)


def _command():
    from .simulator import command

    return command


def _demo_task(run) -> None:
    from .demo import straight_line

    straight_line(run)


DEMO = DemoSpec("ABB IRB 1410", lambda: (f"abb-egm://sim?model={DEFAULT_MODEL}", "a straight line over EGM through IK"),
                _demo_task)


def backend_specs() -> list[BackendSpec]:
    return [
        BackendSpec(
            scheme="abb-egm",
            factory=_factory,
            description="ABB Externally Guided Motion over UDP (robohal is the EGM sensor), 250 Hz",
            simulator=SimulatorSpec(
                start=_start_simulator,
                default_model=DEFAULT_MODEL,
                command=_command(),
                description="simulated ABB controller streaming EGM on loopback, with fault injection",
            ),
            hil_targets=(f"abb-egm://sim?model={DEFAULT_MODEL}",),
            hil_suite="robohal_abb.hil",
            features=FEATURES,
            position_tolerance=2e-3,
            settle_time=1.0,
            demo=DEMO,
            params=("robot", "timeout", "connect_timeout", "mode", "sample_rate", "reply", "sim_*"),
        )
    ]
