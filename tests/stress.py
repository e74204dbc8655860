"""Run the whole test suite several times in a row beside a busy process (``make stress``).

A test that passes alone but fails now and then under load is a bug: this is how
we look for one before it reaches CI. One process spins on a core for the whole
run, as a second job on a shared machine would; each run must pass.

    python tests/stress.py --runs 5 [-- PYTEST_ARGS...]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Spins until its time is up or this script is gone (it is never left behind, even after a kill).
SPIN = ("import os, time\nparent, end = os.getppid(), time.monotonic() + {seconds}\n"
        "while time.monotonic() < end and os.getppid() == parent:\n    pass\n")
SUMMARY = re.compile(r"^=* ?(\d+ (?:passed|failed|errors?)\b.*?) ?=*$", re.MULTILINE)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-load", action="store_true", help="no busy process beside the runs")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args(argv)
    # bounded: the busy process ends by itself even if this script is killed
    busy = None if args.no_load else subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=4 * 3600)])
    outcomes = []
    try:
        for run in range(1, args.runs + 1):
            started = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.pytest_args],
                                  cwd=ROOT, capture_output=True, text=True)
            elapsed = time.monotonic() - started
            found = SUMMARY.findall(done.stdout)
            summary = found[-1] if found else f"exit {done.returncode}"
            outcomes.append(done.returncode == 0)
            print(f"run {run}/{args.runs}: {'pass' if done.returncode == 0 else 'FAIL'} in {elapsed / 60:.1f} min: {summary}",
                  flush=True)
            if done.returncode != 0:
                failed = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
                print("\n".join(f"    {line}" for line in failed) or done.stdout[-3000:], flush=True)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    print(f"{sum(outcomes)} of {len(outcomes)} runs passed{'' if args.no_load else ' beside a busy process'}")
    return 0 if all(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
