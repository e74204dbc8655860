"""Cells locked as labgrid places, against a real labgrid coordinator and exporter on loopback.

The exporter publishes hil/labgrid/exporter.yaml's cells, hil/labgrid/create-places.sh makes
their places, and `robohal hil --labgrid` runs hold them: two runs on one cell never overlap
(the second waits, naming the holder), runs on two cells go on together, and a place is given
back when a run is interrupted or its tests crash.
"""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from robohal.testing.lock import LockError, PlaceLock

pytest.importorskip("labgrid", reason="labgrid is not installed (pip install 'robohal[lab]')")

BIN = Path(sys.executable).parent
HIL = Path(__file__).parents[3] / "hil"
SIM = "sim://?model=generic.planar2&realtime=0"
#: A test that says it is in, records its process (only one may be in a cell at once: the
#: occupant file is created exclusively) and holds the cell until the harness lets it go.
SUITE = """
import os, time
from pathlib import Path

def test_hold_the_cell(robot, hil_target):
    marks = Path(os.environ["MARKS"])
    run = os.environ["RUN"]
    cell = os.environ["ROBOHAL_HIL_CELL"]
    with open(marks / f"occupant-{cell}", "x") as occupant:  # FileExistsError: two runs in one cell
        occupant.write(run)
    (marks / f"{run}.pid").write_text(str(os.getpid()))
    (marks / f"{run}.in").touch()
    deadline = time.monotonic() + 120
    while not (marks / f"{run}.go").exists():
        assert time.monotonic() < deadline, "the harness never let this run go"
        time.sleep(0.02)
    (marks / f"occupant-{cell}").unlink()
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition, what: str, timeout: float = 60.0, every: float = 0.05):
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)
    return found


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def client(coordinator: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "labgrid-client"), "-x", coordinator, *args], capture_output=True, text=True,
                          timeout=60)


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory):
    """A labgrid coordinator and an exporter of hil/labgrid/exporter.yaml on loopback, with the
    places create-places.sh makes; both stopped at the end."""
    folder = tmp_path_factory.mktemp("labgrid")
    address = f"127.0.0.1:{free_port()}"
    started = []
    try:
        started.append(subprocess.Popen([str(BIN / "labgrid-coordinator"), "--listen", address], cwd=folder,
                                        stdout=subprocess.DEVNULL, stderr=open(folder / "coordinator.log", "w")))

        def answers() -> bool:
            assert started[0].poll() is None, (folder / "coordinator.log").read_text()
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", int(address.rsplit(":", 1)[1]))) == 0

        wait_for(answers, "the coordinator to listen")
        started.append(subprocess.Popen([str(BIN / "labgrid-exporter"), "-c", address, "-n", "sims", "--hostname",
                                         "127.0.0.1", str(HIL / "labgrid" / "exporter.yaml")], cwd=folder,
                                        stdout=subprocess.DEVNULL, stderr=open(folder / "exporter.log", "w")))
        wait_for(lambda: "sims/planar-sim/NetworkService" in client(address, "resources").stdout,
                 "the exporter's resources", every=0.5)
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
        subprocess.run(["sh", str(HIL / "labgrid" / "create-places.sh"), address, "sims"], env=env, check=True,
                       capture_output=True, timeout=120)
        yield address
    finally:
        for process in reversed(started):
            stop(process)


@pytest.fixture
def lab(tmp_path, coordinator):
    """A cell file of two in-process simulated cells on two of the exported places."""
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "test_hold.py").write_text(SUITE)
    (tmp_path / "marks").mkdir()
    cells = "".join(f'[cells.{name}]\nuri = "{SIM}"\nsuites = ["suite"]\nplace = "robohal-{place}"\n'
                    for name, place in (("one", "franka-sim"), ("two", "abb-sim")))
    (tmp_path / "cells.toml").write_text(f'[lab]\ncoordinator = "{coordinator}"\nlock_timeout = 120\n\n{cells}')
    return tmp_path


class Runs:
    """`robohal hil` runs started by a test; each stopped at its end."""

    def __init__(self, lab: Path) -> None:
        self.lab = lab
        self.started: dict[str, subprocess.Popen] = {}

    def start(self, run: str, cell: str, *args: str) -> subprocess.Popen:
        env = {**os.environ, "MARKS": str(self.lab / "marks"), "RUN": run}
        self.started[run] = subprocess.Popen(
            [sys.executable, "-m", "robohal.cli.main", "hil", "--cells", "cells.toml", "--cell", cell,
             "--report", f"report-{run}", *args], cwd=self.lab, env=env, stdout=subprocess.DEVNULL,
            stderr=open(self.lab / f"{run}.err", "w"))
        return self.started[run]

    def said(self, run: str) -> str:
        return (self.lab / f"{run}.err").read_text()

    def mark(self, name: str) -> Path:
        return self.lab / "marks" / name

    def finish(self, run: str) -> int:
        self.mark(f"{run}.go").touch()
        return self.started[run].wait(timeout=120)

    def stop_all(self) -> None:
        for process in self.started.values():
            stop(process)


@pytest.fixture
def runs(lab):
    started = Runs(lab)
    yield started
    started.stop_all()


def test_two_runs_on_one_cell_never_overlap_the_second_waits_naming_the_holder(runs):
    first = runs.start("a", "one")
    wait_for(lambda: runs.mark("a.in").exists(), "the first run to enter the cell")
    second = runs.start("b", "one")
    held = wait_for(lambda: "held by" in runs.said("b") and runs.said("b"), "the second run to wait", every=0.2)
    assert f"place 'robohal-franka-sim' is held by {socket.gethostname()}/" in held
    assert f"-hil-{first.pid}; waiting (up to 120 s) (cell one)" in held, "the holder is the first run's process"
    assert not runs.mark("b.in").exists() and second.poll() is None, "the second run waits outside the cell"
    runs.mark("b.go").touch()  # it may go as soon as it is in
    assert runs.finish("a") == 0, runs.said("a")
    assert second.wait(timeout=120) == 0, runs.said("b")
    assert runs.mark("b.in").exists()  # and its test, which refuses a shared cell, passed


def test_runs_on_two_cells_proceed_together(runs):
    first = runs.start("a", "one")
    wait_for(lambda: runs.mark("a.in").exists(), "the first run to enter its cell")
    runs.mark("c.go").touch()
    other = runs.start("c", "two")
    assert other.wait(timeout=120) == 0, runs.said("c")  # ran to its end while the first held its cell
    assert first.poll() is None and not runs.mark("a.go").exists()
    assert runs.finish("a") == 0, runs.said("a")


def test_a_run_that_may_not_wait_fails_clearly(runs):
    runs.start("a", "one")
    wait_for(lambda: runs.mark("a.in").exists(), "the first run to enter the cell")
    refused = runs.start("d", "one", "--lock-timeout", "0")
    assert refused.wait(timeout=120) == 1
    assert "cell one: not run: place 'robohal-franka-sim' is held by" in runs.said("d")
    assert "| one | NOT RUN (place 'robohal-franka-sim' is held by" in (runs.lab / "report-d" / "report.md").read_text()
    assert runs.finish("a") == 0


@pytest.mark.parametrize("how", ["interrupt", "crash"])
def test_the_place_is_given_back_when_a_run_is_interrupted_or_its_tests_crash(runs, coordinator, how):
    run = runs.start("a", "one")
    wait_for(lambda: runs.mark("a.in").exists(), "the run to enter the cell")
    if how == "interrupt":
        run.send_signal(signal.SIGINT)  # to robohal hil alone, as a CI runner cancelling a job does
        assert run.wait(timeout=120) == 130, runs.said("a")
        assert "stopping every cell's run, then releasing its place" in runs.said("a")
    else:
        os.kill(int(runs.mark("a.pid").read_text()), signal.SIGKILL)  # the tests' process dies
        assert run.wait(timeout=120) == 1, runs.said("a")
    with PlaceLock(coordinator, "robohal-franka-sim", timeout=0) as lock:  # free at once
        assert lock.held


def test_an_unknown_place_or_an_absent_coordinator_is_said_plainly(coordinator):
    with pytest.raises(LockError, match=r"cannot acquire place 'no-such-place'.*matches nothing"):
        PlaceLock(coordinator, "no-such-place", timeout=0).acquire()
    with pytest.raises(LockError, match=r"cannot acquire place 'robohal-abb-sim' at 127\.0\.0\.1:1"):
        PlaceLock("127.0.0.1:1", "robohal-abb-sim", timeout=0).acquire()
