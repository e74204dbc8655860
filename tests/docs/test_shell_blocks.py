"""Every shell command in the READMEs runs, or a rule below says why it cannot here.

A block's commands that need no hardware run in order as one bash script (``set -euo pipefail``, so
a ``| grep`` that finds nothing fails too), in a temporary folder that stands for the checkout: its
``.venv`` is the venv running these tests, ``examples/`` is the repository's, and ``letters.txt`` is
the polyline file a user would bring. HOME and XDG_CONFIG_HOME are temporary too, so the model files
that "Robots from URDF" writes go nowhere else. Every command reads an empty stdin: none waits on the
user (``robohal jog`` ends at the end of its keys). A command no rule matches fails the test, so a
new one is classified when it is written.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from robohal_arduino_planar import firmware
from sybil import Example
from sybil.parsers.markdown import CodeBlockParser

REPO = Path(__file__).resolve().parents[2]
# Two strokes in the middle of the Arduino arm's reach, for `robohal draw ... polyline --file letters.txt`.
LETTERS = "0.12 0.05\n0.12 0.08\nup\n0.13 0.05\n0.13 0.08\n"


@dataclass(frozen=True)
class Rule:
    pattern: str  # searched in the command's words, quotes removed and `.venv/bin/` left out
    why: str
    run: bool = False
    missing: Callable[[], str | None] = lambda: None  # what this machine lacks to run it, if anything
    instead: tuple[str, str] | None = None  # (old, new): run the command with this replacement


# First match wins: what needs a robot is skipped even when it would otherwise run.
RULES = (
    Rule(r"^labgrid-|hil/labgrid/", "needs a labgrid coordinator on the lab's network"),
    Rule(r"/dev/tty|172\.16\.|192\.168\.|0\.0\.0\.0|ROBOT_IP", "needs a robot: it names a real cell's address"),
    Rule(r"^make\b", "make sets up .venv and runs whole suites, demos or benchmarks: CI runs `make test` itself"),
    Rule(r"\[options\]", "a synopsis: `[options]` stands for options of the user's choice"),
    Rule(r"^robohal hil\b|\bpytest\b", "runs whole test suites for minutes: `make test` runs the same suites"),
    Rule(r"^python benchmarks/", "a benchmark: minutes of figures, for `make bench`"),
    Rule(r"^robohal (view|demo)\b", "serves its page until Ctrl-C or runs the demo for minutes: "
                                    "tests/core/view and tests/core/cli/test_demo.py drive them"),
    Rule(r"^pip install \./examples/", "installs into a temporary folder on PYTHONPATH instead of the venv "
                                       "the tests run in", run=True,
         instead=("pip install", 'pip install --quiet --no-deps --no-build-isolation --target "$README_SITE"')),
    Rule(r"^robohal (plugins|models|fk|ik|urdf)\b", "reads the installed plugins and models", run=True),
    Rule(r"^robohal arm new\b", "writes an arm file into the temporary config folder", run=True),
    Rule(r"^robohal sim \S+ --help$", "prints the simulator's options", run=True),
    Rule(r"^robohal (draw|jog) arduino-planar://sim\?firmware=simavr", "the real firmware in simavr, on a pty",
         run=True, missing=firmware.toolchain_missing),
    Rule(r"^robohal (draw|jog) arduino-arm://sim\?(?!.*firmware=emulator)", "the real firmware in simavr, on a pty",
         run=True, missing=firmware.toolchain_missing),
    Rule(r"^robohal (draw|jog) [a-z-]+://sim\b", "a bundled simulator on loopback", run=True),
    Rule(r"^robohal abb \S+( \S+)? URI\b", "a synopsis: URI stands for the cell's robot URI or RWS address"),
    Rule(r"^robohal abb \S+ abb-egm://sim\b", "a simulated controller with RWS on loopback", run=True),
    Rule(r"^python -m robohal_arduino_planar\.firmware$", "builds the firmware", run=True,
         missing=lambda: firmware.toolchain_missing(simulation=False)),
    Rule(r"\bsudo\b", "changes this machine's users or devices: the user's to run, once"),
    Rule(r"^(mkdir|cd|cat|cp) ", "files in the temporary HOME", run=True),
    Rule(r"^python -c ", "a one-line script that needs no robot", run=True),
)


@dataclass(frozen=True)
class Command:
    line: int  # in the README
    text: str  # as written: continuation lines and a here-document's body included
    words: str  # what the rules read: its first line's words

    def rule(self) -> Rule | None:
        return next((rule for rule in RULES if re.search(rule.pattern, self.words)), None)


def commands(block: Example) -> list[Command]:
    """A block's commands; in a ``console`` block, the lines after a ``$`` prompt (the rest is output)."""
    lines = block.parsed.splitlines()
    prompt = "$ " if block.region.lexemes["arguments"] == "console" else ""
    found, index = [], 0
    while index < len(lines):
        first, text = index, lines[index]
        index += 1
        if not text.startswith(prompt) or not text[len(prompt):].strip() or text.lstrip().startswith("#"):
            continue
        text = text[len(prompt):]
        while text.endswith("\\") and index < len(lines):
            text, index = text + "\n" + lines[index], index + 1
        words = " ".join(shlex.split(text.replace("\\\n", " "), comments=True))
        here_document = re.search(r"<<-?\s*['\"]?(\w+)", text)
        if here_document:
            body_end = lines.index(here_document.group(1), index)
            text, index = "\n".join([text, *lines[index:body_end + 1]]), body_end + 1
        found.append(Command(block.line + 1 + first, text, re.sub(r"^\.venv/bin/", "", words)))
    return found


def run_block(block: Example) -> None:
    to_run, skipped, unclassified = [], {}, []
    for command in commands(block):
        rule = command.rule()
        if rule is None:
            unclassified.append(f"line {command.line}: {command.words}")
            continue
        reason = rule.why if not rule.run else rule.missing()
        if reason:
            skipped.setdefault(reason, []).append(str(command.line))
        else:
            to_run.append(command.text.replace(*rule.instead) if rule.instead else command.text)
    assert not unclassified, (f"no rule in {__file__} says whether to run these; add one that runs them "
                              "or says why they cannot run here:\n" + "\n".join(unclassified))
    readme = Path(block.path).relative_to(REPO)
    skips = "; ".join(f"{readme} line {', '.join(lines)}: {reason}" for reason, lines in skipped.items())
    if not to_run:
        pytest.skip(skips)
    print("skipped:", skips or "none")
    result = block.namespace["run_bounded"](["bash", "-c", "set -euo pipefail\n" + "\n".join(to_run)],
                                            **block.namespace["checkout"])
    if result.returncode != 0:
        pytest.fail(f"the commands failed:\n{result.args[2]}\n{result.stdout}\n{result.stderr}", pytrace=False)


PARSERS = [CodeBlockParser(language="sh", evaluator=run_block),
           CodeBlockParser(language="console", evaluator=run_block)]


@pytest.fixture
def checkout(tmp_path: Path) -> dict:
    """Where the commands run, as ``run_bounded`` options: a folder that stands for the checkout."""
    (tmp_path / ".venv").symlink_to(sys.prefix)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    (tmp_path / "letters.txt").write_text(LETTERS)
    home, site = tmp_path / "home", tmp_path / "site"
    home.mkdir()
    env = {**os.environ,
           "PATH": os.pathsep.join([str(Path(sys.prefix) / "bin"), os.environ["PATH"]]),
           "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           # the firmware build cache stays the user's: built once, not once per test (it holds no settings)
           "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"),
           "README_SITE": str(site),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    env.pop("ROBOHAL_MODEL_PATH", None)
    return {"cwd": tmp_path, "env": env}


def test_shell_block(block: Example, run_bounded, checkout) -> None:
    block.namespace.update(run_bounded=run_bounded, checkout=checkout)
    block.evaluate()
