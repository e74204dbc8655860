"""``robohal hil``: run the HIL suites with pytest and report."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path


def default_suite() -> str:
    local = Path.cwd() / "hil"
    if local.is_dir():
        return str(local)
    return str(Path(__file__).resolve().parent / "testing" / "suite")


def run_hil(targets: Sequence[str], *, report: str | None = None, suite: str | None = None,
            pytest_args: Sequence[str] = ()) -> int:
    import subprocess

    args = [sys.executable, "-m", "pytest", suite or default_suite(), "-p", "no:cacheprovider", "--import-mode=importlib", "-ra"]
    for target in targets:
        args += ["--hil-target", target]
    junit = None
    if report:
        os.makedirs(report, exist_ok=True)
        junit = os.path.join(report, "junit.xml")
        args += [f"--junitxml={junit}", "--hil-report", report]
    args += list(pytest_args)
    code = subprocess.call(args)  # a fresh interpreter: pytest can rewrite robohal's asserts
    if report and junit and os.path.exists(junit):
        from .hil_report import write_markdown_report

        path = write_markdown_report(junit, report)
        print(f"robohal hil: report written to {path}", file=sys.stderr)
    return code
