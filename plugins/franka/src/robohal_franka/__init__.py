"""robohal_franka: Franka FR3/Panda models and the libfranka backend (``franka://``).

This package is the plugin (entry point ``franka`` in the ``robohal`` group): its two hooks
return records whose callables are dotted references, so listing plugins imports
nothing else. The parts, one module per role as in every robohal plugin:

- ``models``: the robot models; ``backend``: the libfranka backend (its 1 kHz loop in
  ``control``); ``wire``: the FCI codec
- ``hand``: the Franka Hand as ``robot.gripper`` (``gripper=1``); ``hand_wire``: its codec
- ``simulator``: the FCI simulator program (``python -m robohal_franka.simulator``)
- ``simulation``: its launcher for ``franka://sim?...``; ``demo``: the task of ``robohal demo``
- ``desk``: Franka Desk without the browser (both dialects); ``cli``: ``robohal franka ...``;
  ``simulated_desk`` and ``desk_server``: the simulator's Desk
"""

from __future__ import annotations

from robohal import BackendSpec, CommandSpec, DemoSpec, SimulatorSpec, ToolSpec, hookimpl

DEFAULT_MODEL = "franka.fr3"

#: what the franka backend and its bundled simulator offer (for @needs_feature)
FEATURES = frozenset({"cartesian", "collision_behavior", "recover", "reflex", "stall"})


@hookimpl
def robohal_models():
    from .models import model_specs

    return model_specs()


@hookimpl
def robohal_backends():
    return [
        BackendSpec(
            scheme="franka",
            factory="robohal_franka.backend:FrankaBackend",
            description="Franka FR3/Panda over libfranka (pylibfranka), 1 kHz joint-position and torque control",
            simulator=SimulatorSpec(
                start="robohal_franka.simulation:start_simulator",
                default_model=DEFAULT_MODEL,
                program="robohal_franka.simulator",
                description="FCI protocol simulator (TCP 1337 + 1 kHz UDP) on a loopback address",
            ),
            # The FCI simulator twice: it holds a finished motion at its last command, or (sim_hold=measured)
            # where it measures the arm, as another simulator does; Franka documents neither.
            hil_targets=(f"franka://sim?model={DEFAULT_MODEL}", f"franka://sim?model={DEFAULT_MODEL}&sim_hold=measured",
                         f"franka://sim?model={DEFAULT_MODEL}&impl=stubs"),
            hil_suite="robohal_franka.hil",
            features=FEATURES,
            # A joint-impedance arm settles a little off its command (its stiffness against
            # friction and model error): franky-sim's MuJoCo FR3 holds joint 7 1.8 mrad off at rest.
            position_tolerance=3e-3,
            settle_time=0.5,
            demo=(DemoSpec("Franka FR3", where="robohal_franka.demo:where", task="robohal_franka.demo:cartesian_circle",
                           pick_place="robohal_franka.demo:pick_place"),
                  DemoSpec("Franka FR3 contact", where="robohal_franka.demo:press_where",
                           task="robohal_franka.demo:press")),
            params=("realtime", "impl", "collision", "sim_loss", "sim_stall_after", "sim_max_missed", "sim_seed",
                    "sim_ideal", "sim_contact", "gripper", "sim_object", "sim_hold", "desk", "desk_fingerprint",
                    "desk_credentials", "desk_bringup", "desk_force", "sim_desk", "sim_locked", "sim_selftest_time",
                    "sim_force_timeout", "sim_brake_time"),
            tools=(ToolSpec("gripper", factory="robohal_franka.hand:hand_for",
                            description="the Franka Hand through pylibfranka.Gripper (gripper=1)"),),
            bring_up="robohal_franka.desk.bringup:cell_bring_up",
        )
    ]


@hookimpl
def robohal_commands():
    return [CommandSpec("franka", "robohal_franka.cli:franka",
                        description="a Franka's Desk: control, joints, FCI, self-tests, recovery")]
