"""Hardware-in-the-loop testing: the pytest plugin and the backend contract suite.

Run the HIL suites against the bundled simulators (the default) or a real
robot::

    robohal hil                                   # every installed backend's simulator
    robohal hil --target franka://172.16.0.2      # a real Franka

A plugin author runs the contract suite on their own backend with a test
module containing::

    from robohal.testing.contract import BackendContract

    class TestMyBackend(BackendContract):
        pass

and ``pytest --hil-target myscheme://...``.
"""

from .target import HilTarget

__all__ = ["HilTarget"]
