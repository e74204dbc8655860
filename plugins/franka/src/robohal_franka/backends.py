"""Backends registered by robohal_franka: ``franka://HOST?model=franka.fr3``.

The reserved host ``sim`` starts the FCI simulator (:mod:`.simulator`) on a
free loopback address in its own process; with ``impl=stubs`` nothing is
started: the pylibfranka-compatible stubs run the same simulated robot inside
the backend's control process. Simulator options ride on the URI:
``sim_loss=P``, ``sim_stall_after=S``, ``sim_max_missed=N``, ``sim_seed=N`` (the seed of the
simulated arm's tracking error and noise) and ``sim_ideal=1`` (perfect tracking,
``q == q_d``: for unit tests that need exact figures, never the default).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import click
from robohal import BackendSpec, DemoSpec, SimulatorSpec
from robohal.errors import UriError
from robohal.kinematics import Kinematics
from robohal.sim.process import SimulatorError, SimulatorProcess, free_loopback_host, python_module
from robohal.uri import RobotUri

from .facts import ARMS

SIMULATOR_MODULE = "robohal_franka.simulator"


def make_backend(uri: RobotUri, model: Kinematics):
    from .backend import FrankaBackend

    return FrankaBackend(uri, model)


@dataclass
class InProcessStubs:
    """The "simulator" of ``impl=stubs``: nothing to start; the stubs live in the
    backend's control process."""

    uri: RobotUri

    def stop(self) -> None:
        pass


def simulator_args(uri: RobotUri, host: str) -> list[str]:
    model = uri.model or "franka.fr3"
    if model not in ARMS:
        raise SimulatorError(f"the Franka simulator knows {', '.join(sorted(ARMS))}, not {model!r}")
    args = ["--address", host, "--model", model]
    if "sim_loss" in uri.params:
        loss = uri.get_float("sim_loss", 0.0, minimum=0.0)
        if loss >= 1.0:
            raise UriError(f"{uri}: sim_loss is a probability below 1, got {loss:g}")
        args += ["--loss", str(loss)]
    if "sim_stall_after" in uri.params:
        args += ["--stall-after", str(uri.get_float("sim_stall_after", 0.0, minimum=0.0))]
    if "sim_max_missed" in uri.params:
        args += ["--max-missed", str(uri.get_int("sim_max_missed", 20, minimum=1))]
    if "sim_seed" in uri.params:
        args += ["--seed", str(uri.get_int("sim_seed", 0, minimum=0))]
    if sim_ideal(uri):
        args.append("--ideal")
    return args


def sim_ideal(uri: RobotUri) -> bool:
    """Whether ``sim_ideal=1`` asks the simulated arm to track perfectly (absent: it does not)."""
    return uri.get_bool("sim_ideal", False)


def start_simulator(uri: RobotUri):
    """Start the simulator for ``franka://sim?...`` and return it (``.uri`` is where it listens)."""
    if uri.params.get("impl") == "stubs":
        unsupported = sorted({"sim_loss", "sim_stall_after"} & set(uri.params))
        if unsupported:  # the in-process stubs inject no link faults: refuse rather than ignore
            raise UriError(f"{uri}: impl=stubs does not simulate {' or '.join(unsupported)}; use the FCI simulator"
                           " (drop impl=stubs)")
        simulator_args(uri, "127.0.0.1")  # the same checks as for the simulator (model, sim_max_missed)
        return InProcessStubs(uri.with_address("stubs"))
    host = free_loopback_host(1337)

    def ready(line: str) -> RobotUri:
        if not line.startswith("READY franka "):
            raise SimulatorError(f"unexpected first line from the Franka simulator: {line!r}")
        return uri.with_address(host)

    return SimulatorProcess(python_module(SIMULATOR_MODULE, *simulator_args(uri, host)), ready)


@click.command("franka", help="Run the Franka FCI simulator (pylibfranka connects to ADDRESS:1337) until Ctrl-C.")
@click.option("--address", default="127.0.0.2", show_default=True, help="loopback address to bind")
@click.option("--model", default="franka.fr3", show_default=True, type=click.Choice(sorted(ARMS)))
@click.option("--loss", default=0.0, type=float, help="probability of dropping each state datagram")
@click.option("--stall-after", default=None, type=float, help="stop the state stream S s after a client connects")
@click.option("--max-missed", default=None, type=int, help="command cycles a client may miss in a row [default: 20]")
@click.option("--seed", default=None, type=int, help="seed of the loss injection and the arm's tracking error and noise")
@click.option("--ideal", is_flag=True, help="perfect tracking, measured q equals q_d (tests only)")
@click.option("--no-realtime", is_flag=True, help="do not ask for FIFO scheduling")
def sim_command(address: str, model: str, loss: float, stall_after: float | None, max_missed: int | None,
                seed: int | None, ideal: bool, no_realtime: bool) -> None:
    from .simulator import main

    argv = ["--address", address, "--model", model, "--loss", str(loss)]
    if stall_after is not None:
        argv += ["--stall-after", str(stall_after)]
    if max_missed is not None:
        argv += ["--max-missed", str(max_missed)]
    if seed is not None:
        argv += ["--seed", str(seed)]
    if ideal:
        argv.append("--ideal")
    if no_realtime:
        argv.append("--no-realtime")
    sys.exit(main(argv))


def _demo_task(run) -> None:
    from .demo import cartesian_circle

    cartesian_circle(run)


DEMO = DemoSpec("Franka FR3", lambda: ("franka://sim?model=franka.fr3", "a Cartesian circle, differential IK at 1 kHz"),
                _demo_task)


def backend_specs() -> list[BackendSpec]:
    return [
        BackendSpec(
            scheme="franka",
            factory=make_backend,
            description="Franka FR3/Panda over libfranka (pylibfranka), 1 kHz joint-position control",
            simulator=SimulatorSpec(
                start=start_simulator,
                default_model="franka.fr3",
                command=sim_command,
                description="FCI protocol simulator (TCP 1337 + 1 kHz UDP) on a loopback address",
            ),
            hil_targets=("franka://sim?model=franka.fr3", "franka://sim?model=franka.fr3&impl=stubs"),
            hil_suite="robohal_franka.hil",
            features=frozenset({"cartesian", "collision_behavior", "recover", "reflex", "stall"}),
            # A joint-impedance arm settles a little off its command (its stiffness against
            # friction and model error): franky-sim's MuJoCo FR3 holds joint 7 1.8 mrad off at rest.
            position_tolerance=3e-3,
            settle_time=0.5,
            demo=DEMO,
            params=("realtime", "impl", "collision", "sim_loss", "sim_stall_after", "sim_max_missed", "sim_seed", "sim_ideal"),
        )
    ]
