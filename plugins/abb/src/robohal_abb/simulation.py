"""Starting the simulated EGM controller for ``abb-egm://sim?model=...`` URIs.

The simulator options can be given as URI parameters with a ``sim_`` prefix
(``abb-egm://sim?model=abb.irb1410&sim_loss=0.1&sim_seed=3``); each becomes the
command-line option of the same name (``--loss 0.1 --seed 3``).
"""

from __future__ import annotations

from robohal.sim.process import SimulatorError, SimulatorProcess, free_port, python_module
from robohal.uri import RobotUri, parse_uri

#: s after ERR_UDPUC_COMM until the RAPID loop starts a new session. The template's error
#: handler waits 1 s (WaitTime 1) before EGMSetupUC again; 0.3 s is our choice, to keep the
#: fault tests short: only how soon a new session comes differs, not what it does
DEFAULT_RETRY_AFTER = 0.3
BACKEND_PARAMS = ("timeout", "connect_timeout", "mode", "sample_rate", "reply")


def simulator_argv(uri: RobotUri, sensor_port: int, bind_port: int) -> list[str]:
    """``python -m robohal_abb.simulator ...`` for a ``sim`` URI."""
    args = ["--sensor", f"127.0.0.1:{sensor_port}", "--bind", f"127.0.0.1:{bind_port}",
            "--model", uri.model or "abb.irb1410", "--mode", uri.params.get("mode", "joint")]
    if "sample_rate" in uri.params:
        args += ["--sample-rate", uri.params["sample_rate"]]
    options = {"retry-after": str(DEFAULT_RETRY_AFTER)}
    for key, value in uri.params.items():
        if key.startswith("sim_"):
            options[key[4:].replace("_", "-")] = value
    for name, value in sorted(options.items()):
        args += [f"--{name}", value]
    return python_module("robohal_abb.simulator", *args)


def start_simulator(uri: RobotUri) -> SimulatorProcess:
    """Start the simulated controller on free loopback ports; ``.uri`` is the concrete
    ``abb-egm://127.0.0.1:PORT?model=...&robot=127.0.0.1`` to connect to."""
    from .backend import EgmBackend

    EgmBackend.read_options(uri)  # a bad parameter is the URI's error, before anything starts
    sensor_port = free_port()
    bind_port = free_port()
    argv = simulator_argv(uri, sensor_port, bind_port)
    keep = {k: v for k, v in uri.params.items() if k in BACKEND_PARAMS or k == "model"}

    def ready(line: str) -> RobotUri:
        if not line.startswith("READY "):
            raise SimulatorError(f"the EGM simulator printed {line!r} instead of READY")
        concrete = parse_uri(f"abb-egm://127.0.0.1:{sensor_port}")
        return concrete.with_params(**keep, robot="127.0.0.1")

    return SimulatorProcess(argv, ready)
