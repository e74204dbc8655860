"""The backend contract suite against every HIL target (default: every bundled simulator)."""

from robohal.testing.contract import BackendContract


class TestContract(BackendContract):
    pass
