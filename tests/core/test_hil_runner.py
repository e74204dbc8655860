"""`robohal hil --report`: JUnit, a Markdown report and plots of recorded motions."""

import shutil
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
    assert len(cases) == 10
    markdown = (report / "report.md").read_text()
    assert "## sim://?model=generic.planar2&realtime=0" in markdown and "10 passed" in markdown
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


def test_default_suites_are_the_contract_and_each_installed_family(tmp_path):
    # Found by package, not by the working directory: an installed robohal runs them too.
    listed = subprocess.run([sys.executable, "-m", "robohal.cli", "hil", "--list-suites"], capture_output=True,
                            text=True, timeout=120, cwd=tmp_path, check=True).stdout.splitlines()
    suites = dict(line.split("\t") for line in listed)
    assert next(iter(suites)) == "robohal.testing.suite"
    assert {"robohal_abb.hil", "robohal_franka.hil", "robohal_arduino_planar.hil"} <= set(suites)
    collected = subprocess.run([sys.executable, "-m", "robohal.cli", "hil", "--collect-only", "-q"],
                               capture_output=True, text=True, timeout=300, cwd=tmp_path).stdout
    for folder in suites.values():
        modules = sorted(Path(folder).glob("test_*.py"))
        assert modules, folder
        for module in modules:
            assert f"{module.name}::" in collected.replace("\\", "/"), (module, collected[-1500:])


def test_missing_pytest_is_said_plainly(monkeypatch, capsys):
    from robohal import hil_runner

    monkeypatch.setattr(hil_runner.importlib.util, "find_spec", lambda name, *a: None)
    assert hil_runner.run_hil(["sim://?model=generic.planar2"]) == 2
    assert "pytest is not installed" in capsys.readouterr().err


def test_a_pytest_configuration_around_the_suites_does_not_apply(tmp_path):
    # A user's project holding the venv may have its own pytest settings; robohal hil ignores them.
    project = tmp_path / "project"
    shutil.copytree(Path(robohal.testing.__file__).parent / "suite", project / "suite")
    (project / "pytest.ini").write_text("[pytest]\naddopts = -k this_matches_nothing\n")
    report = tmp_path / "report"
    result = subprocess.run(
        [sys.executable, "-m", "robohal.cli", "hil", "--suite", str(project / "suite"), "--report", str(report),
         "--target", "sim://?model=generic.planar2&realtime=0", "-q"],
        capture_output=True, text=True, timeout=300, cwd=project,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    names = {case.get("classname") for case in ET.parse(report / "junit.xml").iter("testcase")}
    assert names == {"suite.test_contract.TestContract"}
