"""The simulator program of ``arduino-firmata``: a simulated Uno running StandardFirmata, announced
as ``READY arduino-firmata:///dev/pts/N``. ``robohal sim arduino-firmata --help`` lists its options
(:mod:`.simulator`, the program of every scheme of this plugin)."""

from __future__ import annotations

import sys

from .simulator import main

if __name__ == "__main__":
    sys.exit(main(scheme="arduino-firmata"))
