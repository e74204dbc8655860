"""The packaged contract suite, run by ``robohal hil`` outside the repository."""

from robohal.testing.contract import BackendContract


class TestContract(BackendContract):
    pass
