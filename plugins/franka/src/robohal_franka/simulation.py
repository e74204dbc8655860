"""Starting the FCI simulator for ``franka://sim?model=franka.fr3`` URIs.

The reserved host ``sim`` starts the FCI simulator (:mod:`.simulator`) on a free loopback
address in its own process; with ``impl=stubs`` nothing is started: the
pylibfranka-compatible stubs run the same simulated robot inside the backend's control
process. The simulator's options ride on the URI with a ``sim_`` prefix, as on every robohal
simulator: ``sim_loss=P``, ``sim_stall_after=S``, ``sim_max_missed=N``, ``sim_seed=N`` (the seed
of the simulated arm's tracking error and noise) and ``sim_ideal=1`` (perfect tracking,
``q == q_d``: for unit tests that need exact figures, never the default), ``sim_hold=measured`` (a
finished motion's q_d is where the arm is measured, not the last command); each is the program's
option of the same name (``--loss P``, ``--ideal 1``). The simulator serves a Franka Hand too, so
the robot it gives comes with ``robot.gripper`` (``gripper=1`` on its URI; ``gripper=0`` leaves it
off); ``sim_object=0.03`` puts a part 0.03 m wide between the fingers. The stubs have no hand.
``sim_desk=v1|web`` serves a simulated Desk (:mod:`.desk_server`), ``sim_locked=1`` starts the robot
as a real one (joints locked, FCI off; with a Desk); ``desk_bringup=1`` and ``sim_locked=1`` bring a
v1 Desk where none is named. Its credentials are the simulator's defaults, never a URI's.
"""

from __future__ import annotations

from dataclasses import dataclass

from robohal.errors import UriError
from robohal.sim.process import SimulatorError, SimulatorProcess, free_loopback_host, launch
from robohal.uri import RobotUri

from . import DEFAULT_MODEL
from .facts import ARMS, HAND_MAX_WIDTH
from .simulated_robot import HOLDS
from .wire import TCP_PORT

PROGRAM = "robohal_franka.simulator"


@dataclass
class InProcessStubs:
    """The "simulator" of ``impl=stubs``: nothing to start; the stubs live in the
    backend's control process."""

    uri: RobotUri

    def stop(self) -> None:
        pass


def simulator_args(uri: RobotUri, host: str) -> list[str]:
    """The launcher's fixed arguments (address, model) for a ``sim`` URI, once its simulator
    options are checked: a bad one is the URI's error, before anything starts."""
    model = uri.model or DEFAULT_MODEL
    if model not in ARMS:
        raise SimulatorError(f"the Franka simulator knows {', '.join(sorted(ARMS))}, not {model!r}")
    loss = uri.get_float("sim_loss", 0.0, minimum=0.0)
    if loss >= 1.0:
        raise UriError(f"{uri}: sim_loss is a probability below 1, got {loss:g}")
    uri.get_float("sim_stall_after", 0.0, minimum=0.0)
    uri.get_int("sim_max_missed", 20, minimum=1)
    uri.get_int("sim_seed", 0, minimum=0)
    uri.get_bool("sim_ideal", False)
    if uri.params.get("sim_hold", HOLDS[0]) not in HOLDS:
        raise UriError(f"{uri}: sim_hold is one of {', '.join(HOLDS)}")
    desk = uri.params.get("sim_desk")
    if desk not in (None, "v1", "web", "off"):
        raise UriError(f"{uri}: sim_desk is v1, web or off")
    locked = uri.get_bool("sim_locked", False)
    needed = locked or uri.get_bool("desk_bringup", False)
    if needed and desk == "off":
        raise UriError(f"{uri}: sim_locked=1 and desk_bringup=1 need the simulated Desk (sim_desk=v1 or web)")
    if needed and desk is None:
        return ["--address", host, "--model", model, "--desk", "v1"]  # a Desk to bring it up with
    part = uri.get_float("sim_object", 0.0, minimum=0.0)
    if part >= HAND_MAX_WIDTH:
        raise UriError(f"{uri}: sim_object is the width (m) of a part between the hand's fingers, below"
                       f" {HAND_MAX_WIDTH:g}, got {part:g}")
    return ["--address", host, "--model", model]


def start_simulator(uri: RobotUri) -> SimulatorProcess | InProcessStubs:
    """Start the simulator for ``franka://sim?...`` and return it (``.uri`` is where it listens)."""
    if uri.params.get("impl") == "stubs":
        unsupported = sorted({"sim_loss", "sim_stall_after", "sim_object", "sim_desk", "sim_locked", "desk_bringup"}
                             & set(uri.params))
        if unsupported:  # the in-process stubs inject no link faults: refuse rather than ignore
            raise UriError(f"{uri}: impl=stubs does not simulate {' or '.join(unsupported)}; use the FCI simulator"
                           " (drop impl=stubs)")
        if uri.get_bool("gripper", False):
            raise UriError(f"{uri}: impl=stubs has no Franka Hand; use the FCI simulator (drop impl=stubs)")
        simulator_args(uri, "127.0.0.1")  # the same checks as for the simulator (model, sim_max_missed)
        return InProcessStubs(uri)  # the backend serves the stubs for the host sim only
    host = free_loopback_host(TCP_PORT)  # the robot's port is fixed: simulators side by side differ by address
    simulator = launch(PROGRAM, uri, simulator_args(uri, host))
    simulator.uri = simulator.uri.with_params(gripper=uri.params.get("gripper", "1"))  # it serves a hand
    return simulator
