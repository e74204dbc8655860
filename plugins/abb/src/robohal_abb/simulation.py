"""Starting the simulated EGM controller for ``abb-egm://sim?model=...`` URIs.

The simulator's options ride on the URI with a ``sim_`` prefix, as on every robohal
simulator (``abb-egm://sim?model=abb.irb1410&sim_loss=0.1&sim_seed=3`` runs
``python -m robohal_abb.simulator ... --loss 0.1 --seed 3``); ``mode`` and ``sample_rate``
are the backend's and the controller's both.
"""

from __future__ import annotations

from robohal.sim.process import SimulatorProcess, free_port, launch
from robohal.uri import RobotUri

from . import DEFAULT_MODEL

PROGRAM = "robohal_abb.simulator"
#: s after ERR_UDPUC_COMM until the RAPID loop starts a new session. The template's error
#: handler waits 1 s (WaitTime 1) before EGMSetupUC again; 0.3 s is our choice, to keep the
#: fault tests short: only how soon a new session comes differs, not what it does
DEFAULT_RETRY_AFTER = 0.3


def simulator_args(uri: RobotUri, sensor_port: int, bind_port: int) -> list[str]:
    """The launcher's fixed arguments for a ``sim`` URI (the ``sim_*`` options follow them, so a
    ``sim_retry_after`` given in the URI wins over the default here)."""
    args = ["--sensor", f"127.0.0.1:{sensor_port}", "--bind", f"127.0.0.1:{bind_port}",
            "--model", uri.model or DEFAULT_MODEL, "--mode", uri.params.get("mode", "joint"),
            "--retry-after", str(DEFAULT_RETRY_AFTER)]
    if "sample_rate" in uri.params:
        args += ["--sample-rate", uri.params["sample_rate"]]
    return args


def start_simulator(uri: RobotUri) -> SimulatorProcess:
    """Start the simulated controller on free loopback ports; ``.uri`` is the concrete
    ``abb-egm://127.0.0.1:PORT?model=...&robot=127.0.0.1`` to connect to."""
    from .backend import EgmBackend

    EgmBackend.read_options(uri)  # a bad parameter is the URI's error, before anything starts
    return launch(PROGRAM, uri, simulator_args(uri, free_port(), free_port()))
