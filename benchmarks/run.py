"""Run every benchmark in this folder (``make bench``): each prints its figures
as ratios against the peers named in its docstring. Nothing here is asserted."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    scripts = sorted(p for p in HERE.glob("*.py") if p.name != "run.py" and not p.name.startswith("_"))
    if not scripts:
        print("no benchmarks yet")
        return 0
    for script in scripts:
        print(f"== {script.stem}")
        sys.stdout.flush()
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as exit_:  # a script's own exit must not end the others
            if exit_.code not in (None, 0):
                print(f"{script.name} exited with {exit_.code}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
