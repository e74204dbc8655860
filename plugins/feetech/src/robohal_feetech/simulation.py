"""Starting the bundled simulator for ``feetech://sim?...`` URIs.

``feetech://sim?arm=so101`` runs the simulator program (``python -m robohal_feetech.simulator``,
:mod:`.simulator`) in its own process on a pseudo-terminal, with the servos of the arm file,
calibrated; ``.uri`` of the started simulator is the ``feetech:///dev/pts/N?...&calibration=FILE``
it announces, plus the sim URI's other parameters. The simulator's options ride on the URI with a
``sim_`` prefix, as on every robohal simulator: ``sim_supply=4.2`` (volts), ``sim_object=0.03``
(a part between the jaws, m), ``sim_firmware=3:2.9`` (servo 3 runs firmware 2.9), ``sim_baud=115200``.
:meth:`FeetechSimulator.control` sends its control lines (``DROP 1``, ``SILENT 3``, ``HAND 1 0.5``, ...).
"""

from __future__ import annotations

from robohal.errors import UriError
from robohal.sim.process import SimulatorProcess, launch
from robohal.uri import RobotUri

from .arm import DEFAULT_ARM, load_arm

PROGRAM = "robohal_feetech.simulator"


class FeetechSimulator(SimulatorProcess):
    """A running simulated servo bus; ``pty_path`` is the line to open."""

    def __init__(self, argv: list[str], **options) -> None:
        super().__init__(argv, **options)
        self.pty_path = self.uri.path

    def control(self, line: str) -> None:
        """Send a control line (``DROP 2``, ``SILENT 3``, ``SUPPLY 3.9``, ...)."""
        self.send(line)


def start_simulator(uri: RobotUri) -> FeetechSimulator:
    """``SimulatorSpec.start`` for ``feetech://sim?arm=NAME``."""
    arm = uri.params.get("arm", DEFAULT_ARM)
    load_arm(arm)  # a bad arm file is the URI's error, before anything starts
    if uri.params.get("calibration"):
        raise UriError(f"{uri}: the simulator brings its own calibration; calibration= names a real arm's file")
    return launch(PROGRAM, uri, ["--arm", arm], process=FeetechSimulator)
