"""The READMEs' code blocks as test parameters, and a bounded way to run one.

The blocks are found by Sybil (10.x), chosen over pytest-markdown-docs because it is a library as
much as a plugin: its parsers find a language's fenced blocks anywhere, also inside list items, and
hand each with its file and line to an evaluator of ours, so one parametrized test module can run
Python blocks, check real-cell ones without running them and run shell commands, all collected with
the rest of tests/ (pytest-markdown-docs runs Python fences only, and only from .md files that
pytest itself collects with --markdown-docs).

A test that takes a ``readme`` argument runs once per README. A test module that declares
``PARSERS``, Sybil code-block parsers (a language and the evaluator that checks such a block), and a
test that takes a ``block`` argument gets that test run once per block of those languages in every
README, named by the README's path and line.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sybil import Example, Sybil

REPO = Path(__file__).resolve().parents[2]
# Every README a user copies code from; a new README belongs here.
README_PATTERNS = ("README.md", "core/README.md", "hil/README.md", "plugins/*/README.md", "examples/*/README.md")
# Not a time the test asserts: only a bound so that a block that hangs fails instead of stalling CI.
HANG_LIMIT_S = 300


def readmes() -> list[Path]:
    return sorted({path for pattern in README_PATTERNS for path in REPO.glob(pattern)})


def blocks(parsers) -> Iterator[Example]:
    sybil = Sybil(parsers)
    for path in readmes():
        yield from sybil.parse(path)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "readme" in metafunc.fixturenames:
        metafunc.parametrize("readme", readmes(), ids=lambda path: str(path.relative_to(REPO)))
    if "block" in metafunc.fixturenames:
        found = list(blocks(metafunc.module.PARSERS))
        ids = [f"{Path(block.path).relative_to(REPO)}:{block.line}" for block in found]
        metafunc.parametrize("block", found, ids=ids)


@pytest.fixture
def run_bounded():
    """Runs a command in a session of its own, then stops whatever of it still runs (a process of
    a block that failed half way), so no test leaves a simulator behind."""

    def run(argv: list[str], *, input: str | None = None, **options) -> subprocess.CompletedProcess:
        process = subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True, **options)
        try:
            stdout, stderr = process.communicate(input, timeout=HANG_LIMIT_S)
        except subprocess.TimeoutExpired:
            _stop_group(process.pid)
            stdout, stderr = process.communicate()
            pytest.fail(f"still running after {HANG_LIMIT_S} s, so it hangs: {argv}\n{stdout}\n{stderr}")
        finally:
            _stop_group(process.pid)
        return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)

    return run


def _stop_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # nothing of it left
