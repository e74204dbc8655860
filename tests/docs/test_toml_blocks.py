"""Every TOML block in the READMEs is a file robohal reads, and robohal's own reader takes it: a key
renamed in the code, or misspelt in the README, fails here. A block that no reader below claims
fails too, so a new kind of file shown in a README gets a reader here when it is written."""

from __future__ import annotations

import re
from pathlib import Path

from robohal.plugins.arm_files import read_arm_file
from robohal.testing.cells import load_cells
from robohal_arduino_planar.calibration import Calibration
from sybil import Example
from sybil.parsers.markdown import CodeBlockParser

REPO = Path(__file__).resolve().parents[2]


def read_calibration(path: Path) -> None:
    """An Arduino arm's calibration file."""
    Calibration.from_file(path)


def read_cells(path: Path) -> None:
    """A HIL cell file."""
    (path.parent / "scenarios").symlink_to(REPO / "hil" / "scenarios")  # a suite it names, beside the file
    load_cells(path)


def read_arm(path: Path) -> None:
    """An arm file, built into its model (every key checked)."""
    read_arm_file(path).build()


# A table the file has, and the reader of such files.
READERS = (
    (r"^\[arm\]", read_arm),
    (r"^\[(servo[12]|tool)\]", read_calibration),
    (r"^\[cells\.", read_cells),
)


def read_block(block: Example) -> None:
    reader = next((read for table, read in READERS if re.search(table, block.parsed, re.MULTILINE)), None)
    assert reader is not None, f"no reader in {__file__} claims this TOML block; add the robohal code that reads it"
    path = block.namespace["tmp_path"] / "block.toml"
    path.write_text(block.parsed)
    reader(path)


PARSERS = [CodeBlockParser(language="toml", evaluator=read_block)]


def test_toml_block(block: Example, tmp_path: Path) -> None:
    block.namespace["tmp_path"] = tmp_path
    block.evaluate()
