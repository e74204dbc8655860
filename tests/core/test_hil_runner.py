"""`robohal hil --report`: JUnit, a Markdown report and plots of recorded motions."""

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import robohal.testing


def test_hil_runner_writes_junit_report_and_plots(tmp_path):
    suite = Path(robohal.testing.__file__).parent / "suite"
    report = tmp_path / "report"
    result = subprocess.run(
        [sys.executable, "-m", "robohal.cli", "hil", "--suite", str(suite), "--report", str(report),
         "--target", "sim://?model=generic.planar2&realtime=0", "-q"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    cases = list(ET.parse(report / "junit.xml").iter("testcase"))
    assert len(cases) == 9
    markdown = (report / "report.md").read_text()
    assert "## sim://?model=generic.planar2&realtime=0" in markdown and "9 passed" in markdown
    plots = list((report / "plots").glob("*.png"))
    assert len(plots) == 1 and plots[0].stat().st_size > 1000
    assert f"(plots/{plots[0].name})" in markdown


def test_hil_runner_fails_when_the_target_fails(tmp_path):
    suite = Path(robohal.testing.__file__).parent / "suite"
    result = subprocess.run(
        [sys.executable, "-m", "robohal.cli", "hil", "--suite", str(suite), "--target", "nonexistent://x", "-q"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert result.returncode != 0
