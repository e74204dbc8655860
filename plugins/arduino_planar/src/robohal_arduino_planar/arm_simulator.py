"""The simulator program of ``arduino-arm``: the robohal firmware in simavr or emulated, announced
as ``READY arduino-arm:///dev/pts/N``. ``robohal sim arduino-arm --help`` lists its options
(:mod:`.simulator`, the program of every scheme of this plugin)."""

from __future__ import annotations

import sys

from .simulator import main

if __name__ == "__main__":
    sys.exit(main(scheme="arduino-arm"))
