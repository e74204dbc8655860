"""`robohal hil --report`: JUnit, a Markdown report and plots of recorded motions."""

import io
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import robohal.testing
from robohal.cli.hil import confirm_real_hardware, real_targets, targets_in_pytest_args


def test_hil_runner_writes_junit_report_and_plots(tmp_path):
    suite = Path(robohal.testing.__file__).parent / "suite"
    report = tmp_path / "report"
    result = subprocess.run(
        [sys.executable, "-m", "robohal.cli.main", "hil", "--suite", str(suite), "--report", str(report),
         "--target", "sim://?model=generic.planar2&realtime=0", "-q"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    cases = list(ET.parse(report / "junit.xml").iter("testcase"))
    assert len(cases) == 14 + 4  # the tool part's four skip: sim:// declares no tools
    markdown = (report / "report.md").read_text()
    assert "## sim://?model=generic.planar2&realtime=0" in markdown and "14 passed" in markdown
    plots = sorted((report / "plots").glob("*.png"))
    assert len(plots) == 2 and all(plot.stat().st_size > 1000 for plot in plots)  # the small move, the take-over
    assert all(f"(plots/{plot.name})" in markdown for plot in plots)


def test_hil_runner_fails_when_the_target_fails(tmp_path):
    suite = Path(robohal.testing.__file__).parent / "suite"
    result = subprocess.run(
        [sys.executable, "-m", "robohal.cli.main", "hil", "--suite", str(suite), "--target", "nonexistent://x", "-q"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert result.returncode != 0


def test_default_suites_are_the_contract_and_each_installed_family(tmp_path):
    # Found by package, not by the working directory: an installed robohal runs them too.
    listed = subprocess.run([sys.executable, "-m", "robohal.cli.main", "hil", "--list-suites"], capture_output=True,
                            text=True, timeout=120, cwd=tmp_path, check=True).stdout.splitlines()
    suites = dict(line.split("\t") for line in listed)
    assert next(iter(suites)) == "robohal.testing.suite"
    assert {"robohal_abb.hil", "robohal_franka.hil", "robohal_arduino_planar.hil"} <= set(suites)
    collected = subprocess.run([sys.executable, "-m", "robohal.cli.main", "hil", "--collect-only", "-q"],
                               capture_output=True, text=True, timeout=300, cwd=tmp_path).stdout
    for folder in suites.values():
        modules = sorted(Path(folder).glob("test_*.py"))
        assert modules, folder
        for module in modules:
            assert f"{module.name}::" in collected.replace("\\", "/"), (module, collected[-1500:])


def test_missing_pytest_is_said_plainly(monkeypatch, capsys):
    from robohal.cli import hil as hil_runner

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
        [sys.executable, "-m", "robohal.cli.main", "hil", "--suite", str(project / "suite"), "--report", str(report),
         "--target", "sim://?model=generic.planar2&realtime=0", "-q"],
        capture_output=True, text=True, timeout=300, cwd=project,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    names = {case.get("classname") for case in ET.parse(report / "junit.xml").iter("testcase")}
    assert names == {"suite.test_contract.TestContract"}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


REAL = "abb-egm://127.0.0.1:6510?model=abb.irb1410"


def test_real_hardware_is_told_apart_from_simulators():
    assert real_targets([REAL, "abb-egm://sim?model=abb.irb1410", "sim://?model=generic.planar2",
                         "arduino-planar:///dev/ttyACM0", "no uri", "nonexistent://x"]) == [REAL, "arduino-planar:///dev/ttyACM0"]


def test_targets_given_to_pytest_are_found():
    assert targets_in_pytest_args(["-x", "--hil-target", REAL, f"--hil-target={REAL}2", "-k", "move"]) == [REAL, REAL + "2"]


def test_moving_real_hardware_waits_for_enter_at_a_terminal():
    out = io.StringIO()
    assert confirm_real_hardware([REAL], stdin=Terminal("\n"), out=out)
    assert REAL in out.getvalue() and "MOVE" in out.getvalue() and "Enter" in out.getvalue()
    assert not confirm_real_hardware([REAL], stdin=Terminal(""), out=io.StringIO())  # end of input
    assert confirm_real_hardware(["sim://?model=generic.planar2"], stdin=io.StringIO(), out=io.StringIO())


def test_without_a_terminal_real_hardware_needs_yes(tmp_path):
    # Nothing may start: the refusal comes before pytest (no robot answers here anyway).
    command = [sys.executable, "-m", "robohal.cli.main", "hil", "--target", REAL]
    for given in (command, [*command[:-2], "--", "--hil-target", REAL], [*command[:-2], f"--hil-target={REAL}"]):
        # (also when the target reaches pytest as one of its own arguments)
        refused = subprocess.run(given, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=tmp_path)
        assert refused.returncode == 2, given
        assert "--yes" in refused.stderr and "test session starts" not in refused.stdout
    out = io.StringIO()
    assert confirm_real_hardware([REAL], assume_yes=True, stdin=io.StringIO(), out=out)
    assert REAL in out.getvalue()  # still said, not asked
