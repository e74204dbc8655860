"""`robohal hil --cells FILE --cell NAME`: cells by name, one pytest process each, sharded, and
one merged report (JUnit with hil_cell and hil_target, Markdown, a history line per cell)."""

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from robohal.cli.lab import parse_shard, shard
from robohal.errors import InvalidArgument
from robohal.testing.cells import Cell

SIM = "sim://?model=generic.planar2&realtime=0"
SUITE = """
import numpy as np

def test_a_small_move(robot, hil_motion_log):
    result = robot.move_joints(robot.q + np.radians([2.0, 2.0]), speed=0.5)
    hil_motion_log.add("small move", result)
    assert result.completed

def test_the_cell_is_slowed(robot):
    assert robot.speed == {speed}
"""
CELLS = f"""
[cells.left]
uri = "{SIM}"
suites = ["suite"]
speed = 0.5
workspace = {{ min = [0.0, -0.6, -0.1], max = [0.7, 0.6, 0.1] }}
contact = "left's keeper"

[cells.right]
uri = "{SIM}"
suites = ["suite"]
speed = 0.5
"""


def hil(*args, cwd):
    return subprocess.run([sys.executable, "-m", "robohal.cli.main", "hil", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


@pytest.fixture
def lab(tmp_path):
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "test_cell.py").write_text(SUITE.format(speed=0.5))
    (tmp_path / "cells.toml").write_text(CELLS)
    return tmp_path


def test_shards_split_the_cells_by_name_whatever_the_order():
    cells = [Cell(name, SIM, ("suite",)) for name in ("d", "a", "c", "b", "e")]
    assert [c.name for c in shard(cells, 1, 2)] == ["a", "c", "e"]
    assert [c.name for c in shard(cells[::-1], 2, 2)] == ["b", "d"]
    together = [c.name for k in (1, 2, 3) for c in shard(cells, k, 3)]
    assert sorted(together) == ["a", "b", "c", "d", "e"]
    assert parse_shard("2/3") == (2, 3)
    for bad in ("3/2", "0/1", "x", "1/2/3"):
        with pytest.raises(InvalidArgument, match="--shard"):
            parse_shard(bad)


def test_all_cells_in_parallel_give_one_merged_report(lab):
    done = hil("--cells", "cells.toml", "--cell", "all", "--jobs", "2", "--report", "report", "--history", "h.jsonl",
               cwd=lab)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    root = ET.parse(lab / "report" / "junit.xml").getroot()
    suites = root.findall("testsuite")
    assert [suite.get("name") for suite in suites] == ["left", "right"] and root.get("tests") == "4"
    for suite in suites:
        cases = suite.findall("testcase")
        assert len(cases) == 2
        for case in cases:
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            assert props == {"hil_target": SIM, "hil_cell": suite.get("name")}
    markdown = (lab / "report" / "report.md").read_text()
    assert "| left | passed | 2 | 0 | 0 | 0 |" in markdown and "| right | passed | 2 | 0 | 0 | 0 |" in markdown
    assert "left's keeper" in markdown and "workspace box [0, -0.6, -0.1]..[0.7, 0.6, 0.1] m" in markdown
    assert "| `suite` | 2 | 0 | 0 | 0 |" in markdown
    plots = sorted((lab / "report").glob("cells/*/plots/*.png"))
    assert len(plots) == 2 and all(f"({plot.relative_to(lab / 'report')})" in markdown for plot in plots)
    motions = json.loads((lab / "report" / "motions.json").read_text())
    assert {m["cell"] for m in motions} == {"left", "right"}
    history = [json.loads(line) for line in (lab / "h.jsonl").read_text().splitlines()]
    assert [(h["cell"], h["outcome"], h["passed"]) for h in history] == [("left", "passed", 2), ("right", "passed", 2)]
    assert all(h["max_tracking_error_rad"] is not None and h["seconds"] > 0 for h in history)


def test_a_failing_cell_fails_the_run_and_the_shard_runs_its_share(lab):
    (lab / "suite" / "test_cell.py").write_text(SUITE.format(speed=0.25))
    done = hil("--cells", "cells.toml", "--cell", "all", "--shard", "2/2", "--report", "report", cwd=lab)
    assert done.returncode == 1
    markdown = (lab / "report" / "report.md").read_text()
    assert "1 cell(s), shard 2/2" in markdown and "| right | FAILED (exit code 1) | 1 | 1 |" in markdown
    assert "## left" not in markdown
    assert "test_the_cell_is_slowed" in markdown


@pytest.mark.parametrize("args, message", [
    (("--cells", "cells.toml", "--cell", "middle"), "unknown cell 'middle'; the cells are: left, right"),
    (("--cells", "cells.toml"), "--cells FILE and --cell NAME (or --cell all) go together"),
    (("--cells", "cells.toml", "--cell", "all", "--target", SIM), "--target and --suite do not go with --cells"),
    (("--cells", "cells.toml", "--cell", "all", "--shard", "3/2"), "--shard K/N needs 1 <= K <= N"),
    (("--cells", "missing.toml", "--cell", "all"), "cell file missing.toml"),
    (("--labgrid", "127.0.0.1:1",), "--labgrid needs --cells FILE --cell NAME"),
])
def test_mistakes_on_the_command_line_are_said_in_one_line(lab, args, message):
    done = hil(*args, cwd=lab)
    assert done.returncode == 2
    assert message in done.stderr, done.stderr
