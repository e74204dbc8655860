"""Run every benchmark in this folder (``make bench``): each prints its figures
as ratios against the peers named in its docstring. Nothing here is asserted.

A benchmark that fails prints its traceback and the others still run; the run
then exits with 1 and names the ones that failed."""

from __future__ import annotations

import runpy
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    scripts = sorted(p for p in HERE.glob("*.py") if p.name != "run.py" and not p.name.startswith("_"))
    if not scripts:
        print("no benchmarks yet")
        return 0
    failed = []
    for script in scripts:
        print(f"== {script.stem}")
        sys.stdout.flush()
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as exit_:
            if exit_.code not in (None, 0):
                print(f"{script.name} exited with {exit_.code}")
                failed.append(script.stem)
        except Exception:  # one broken benchmark must not hide the figures of the others
            traceback.print_exc(file=sys.stdout)
            failed.append(script.stem)
        sys.stdout.flush()
    if failed:
        print(f"== failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
