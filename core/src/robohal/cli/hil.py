"""``robohal hil``: run the HIL suites with pytest and report.

The suites are the backend contract suite (``robohal.testing.suite``) and every installed
backend family's own (:attr:`robohal.plugins.records.BackendSpec.hil_suite`), found by package, so an
installed robohal runs the same tests as a checkout.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import PluginError, RobohalError
from ..uri import parse_uri

CONTRACT_SUITE = "robohal.testing.suite"


def suite_folder(package: str) -> str:
    """The folder of an importable suite package."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError) as exc:
        raise PluginError(f"HIL suite {package!r} cannot be imported: {exc}") from exc
    if spec is None or not spec.submodule_search_locations:
        raise PluginError(f"HIL suite {package!r} is not an installed package")
    return next(iter(spec.submodule_search_locations))


def default_suites() -> list[str]:
    """The contract suite, then each installed backend family's suite (by package name)."""
    from ..plugins.registry import default_registry

    families = sorted({spec.hil_suite for spec in default_registry().backends() if spec.hil_suite})
    return [CONTRACT_SUITE, *families]


def real_targets(targets: Sequence[str]) -> list[str]:
    """The targets that are real hardware: neither a bundled simulator (host ``sim``) nor the
    in-process ``sim`` backend. (A URI that does not parse, or names no installed backend,
    moves nothing: the run reports it.)"""
    from ..plugins.registry import default_registry

    real = []
    for target in targets:
        try:
            uri = parse_uri(target)
            default_registry().backend_spec(uri.scheme)
        except RobohalError:
            continue
        if not (uri.wants_simulator or uri.scheme == "sim"):
            real.append(target)
    return real


def targets_in_pytest_args(args: Sequence[str]) -> list[str]:
    """The ``--hil-target`` values among arguments passed through to pytest."""
    found = []
    for i, arg in enumerate(args):
        if arg == "--hil-target" and i + 1 < len(args):
            found.append(args[i + 1])
        elif arg.startswith("--hil-target="):
            found.append(arg.split("=", 1)[1])
    return found


def confirm_real_hardware(targets: Sequence[str], *, assume_yes: bool = False, stdin=None, out=None) -> bool:
    """Before the suites move real robots: say so, and wait for Enter at a terminal
    (``assume_yes`` for scripts and CI on a cell). False when nobody confirmed."""
    stdin = sys.stdin if stdin is None else stdin
    out = sys.stderr if out is None else out
    real = real_targets(targets)
    if not real:
        return True
    print("robohal hil: the HIL suites will MOVE these robots:", file=out)
    for target in real:
        print(f"  {target}", file=out)
    print("Keep the user stop (enabling device) in hand and the cell clear.", file=out)
    if assume_yes:
        return True
    if not (hasattr(stdin, "isatty") and stdin.isatty()):
        print("robohal hil: not run: nobody at a terminal to confirm; pass --yes to run on real hardware"
              " from a script", file=out)
        return False
    print("Press Enter to start, Ctrl-C to abort: ", end="", file=out, flush=True)
    return bool(stdin.readline())  # end of input: nobody confirmed


def pytest_command(suites: Sequence[str], targets: Sequence[str], *, report: str | None = None,
                   pytest_args: Sequence[str] = ()) -> list[str]:
    """The pytest command line that runs ``suites`` (folders, or with ``:package`` after the
    folder: an installed package's) against ``targets``, writing JUnit and plots to ``report``."""
    folders, roots = [], []
    for suite in suites:
        folder, _, package = suite.partition(":")
        folders.append(os.path.abspath(folder))
        # tests are named from the folder holding the suites' packages (robohal_abb.hil.test_egm_hil::...)
        roots.append(str(Path(folders[-1]).parents[package.count(".")]) if package else os.path.dirname(folders[-1]))
    # The suites' own settings only: no pytest configuration found around them (a user's
    # project holding the venv) applies; labgrid's pytest plugin (robohal[lab]) stays out.
    args = [sys.executable, "-m", "pytest", *folders, "-c", os.devnull, f"--rootdir={os.path.commonpath(roots)}",
            "-p", "no:cacheprovider", "-p", "no:labgrid", "--import-mode=importlib", "-ra"]
    for target in targets:
        args += ["--hil-target", target]
    if report:
        os.makedirs(report, exist_ok=True)
        args += [f"--junitxml={os.path.join(report, 'junit.xml')}", "--hil-report", report]
    return args + list(pytest_args)


def packaged(packages: Sequence[str]) -> list[str]:
    """Suites as :func:`pytest_command` takes them, from package names."""
    return [f"{suite_folder(package)}:{package}" for package in packages]


def pytest_missing() -> bool:
    if importlib.util.find_spec("pytest") is None:
        print("robohal hil: pytest is not installed (pip install pytest)", file=sys.stderr)
        return True
    return False


def run_hil(targets: Sequence[str], *, report: str | None = None, suites: Sequence[str] = (),
            pytest_args: Sequence[str] = ()) -> int:
    """Run ``suites`` (folders; default: :func:`default_suites`) against ``targets`` (default:
    every bundled simulator); the pytest exit code."""
    import subprocess

    if pytest_missing():
        return 2
    args = pytest_command(list(suites) or packaged(default_suites()), targets, report=report, pytest_args=pytest_args)
    code = subprocess.call(args)  # a fresh interpreter: pytest can rewrite robohal's asserts
    junit = os.path.join(report, "junit.xml") if report else None
    if report and junit and os.path.exists(junit):
        from .report import write_markdown_report

        path = write_markdown_report(junit, report)
        print(f"robohal hil: report written to {path}", file=sys.stderr)
    return code
