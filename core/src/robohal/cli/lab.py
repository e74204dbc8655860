"""``robohal hil --cells FILE --cell NAME``: the HIL suites on a lab's named cells.

Each cell runs in a pytest process of its own (its simulator, its safety settings, its report
folder), so one cell's crash is that cell's alone. ``jobs`` cells run at once; a cell is never
run by two workers, since a run lists each cell once and, with a labgrid coordinator, holds the
cell's place for as long as its process runs (another run waits). ``--shard K/N`` keeps every
N-th cell, so N CI jobs share the cells. When all are done the cells' JUnit files, motions and
identities are merged into one report (:mod:`robohal.cli.report`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InvalidArgument, RobohalError
from ..plugins.registry import default_registry
from ..testing.cells import Cell, Lab
from ..testing.lock import LockError, PlaceLock
from ..uri import parse_uri
from .hil import packaged, pytest_command, pytest_missing

#: the environment variable that tells a cell's pytest process (and its suites) the cell's name
CELL_VARIABLE = "ROBOHAL_HIL_CELL"
#: s a cell's pytest process has to end by itself after a Ctrl-C (the terminal sent it one too)
#: before it is sent one, then to brake, stop its simulator and end before it is killed
OWN_STOP = 10.0
STOP_GRACE = 60.0


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> (K, N), 1 <= K <= N."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise InvalidArgument(f"--shard must be K/N (this job's number K of N jobs), got {text!r}") from None
    if not 1 <= k <= n:
        raise InvalidArgument(f"--shard K/N needs 1 <= K <= N, got {text!r}")
    return k, n


def shard(cells: Sequence[Cell], k: int, n: int) -> list[Cell]:
    """The cells job ``k`` of ``n`` runs: every ``n``-th, starting at the ``k``-th (by name, so
    every job splits alike whatever order it was given the cells in)."""
    return sorted(cells, key=lambda cell: cell.name)[k - 1::n]


@dataclass
class CellRun:
    """One cell's run: its report folder, exit code (None: it never ran), times and error."""

    cell: Cell
    folder: Path
    code: int | None = None
    seconds: float = 0.0  # s the pytest process ran
    waited: float = 0.0  # s spent waiting for the cell's place
    error: str = ""
    log: Path | None = None

    @property
    def passed(self) -> bool:
        return self.code == 0


@dataclass
class LabRun:
    """What runs the cells: the settings shared by every cell's worker."""

    lab: Lab
    coordinator: str | None = None
    lock_timeout: float | None = None
    pytest_args: Sequence[str] = ()
    capture: bool = False  # each cell's output to its log file (parallel runs), else to the terminal
    stopping: threading.Event = field(default_factory=threading.Event)

    def command(self, cell: Cell, folder: Path) -> list[str]:
        suites = []
        for suite in cell.suites:
            beside = self.lab.path.parent / suite
            suites += [str(beside.resolve())] if beside.is_dir() else packaged([suite])
        args = [f"--hil-speed={cell.safety.speed!r}"]
        if cell.safety.workspace is not None:
            args.append(f"--hil-workspace={cell.safety.workspace.as_text()}")  # "=": a box may start with "-"
        return pytest_command(suites, [cell.uri], report=str(folder), pytest_args=[*args, *self.pytest_args])

    def run_cell(self, run: CellRun) -> CellRun:
        say = _say
        begun = time.monotonic()
        lock = None
        if self.coordinator:
            timeout = self.lab.lock_timeout if self.lock_timeout is None else self.lock_timeout
            lock = PlaceLock(self.coordinator, run.cell.place, timeout=timeout,
                             say=lambda text: say(f"{text} (cell {run.cell.name})"))
        try:
            if lock is not None:
                lock.acquire(self.stopping)
            run.waited = time.monotonic() - begun
            if self.stopping.is_set():
                run.error = "stopped before it began"
                return run
            held = f", place {run.cell.place!r} held at {self.coordinator}" if lock is not None else ""
            say(f"robohal hil: cell {run.cell.name}: {run.cell.uri}{held}")
            run.folder.mkdir(parents=True, exist_ok=True)
            run.log = run.folder / "pytest.log" if self.capture else None
            started = time.monotonic()
            with cell_bringup(run.cell, say), \
                    open(run.log, "w", encoding="utf-8") if run.log else nullcontext() as out:
                child = subprocess.Popen(self.command(run.cell, run.folder), stdout=out, stderr=subprocess.STDOUT
                                         if out else None, stdin=subprocess.DEVNULL,
                                         env={**os.environ, CELL_VARIABLE: run.cell.name})
                run.code = _wait_or_stop(child, self.stopping)
            run.seconds = time.monotonic() - started
        except LockError as exc:
            run.waited = time.monotonic() - begun
            run.error = str(exc)
            say(f"robohal hil: cell {run.cell.name}: not run: {exc}")
        except RobohalError as exc:  # the bring-up failed, or leaving the robot safe did
            run.error = f"bring-up: {exc}"
            say(f"robohal hil: cell {run.cell.name}: {run.error}")
        finally:
            if lock is not None:
                lock.release()
        outcome = "passed" if run.passed else run.error or f"failed (pytest exit code {run.code})"
        say(f"robohal hil: cell {run.cell.name}: {outcome} in {run.seconds:.1f} s"
            + (f"; log {run.log}" if run.log else ""))
        return run


@contextmanager
def cell_bringup(cell: Cell, say) -> Iterator[None]:
    """The cell's robot made ready for the run and safe after, where the cell asks for it
    (``bringup = true``): its backend's ``bring_up(uri)`` around the suites' whole run, once."""
    if not cell.bringup:
        yield
        return
    uri = parse_uri(cell.uri)
    spec = default_registry().backend_spec(uri.scheme)
    assert spec.bring_up is not None  # (load_cells refuses the key otherwise)
    bringing = spec.bring_up(uri)
    if bringing is None:
        raise RobohalError(f"bringup = true, but {cell.uri} names nothing the {spec.scheme} backend brings a robot"
                           " up with")
    say(f"robohal hil: cell {cell.name}: bringing the robot up")
    with bringing:
        yield
    say(f"robohal hil: cell {cell.name}: robot left safe")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _wait_or_stop(child: subprocess.Popen, stopping: threading.Event) -> int:
    """The child's exit code; once ``stopping`` is set and it has not ended within
    :data:`OWN_STOP`, it gets a SIGINT (its Ctrl-C: the suites brake the robot and stop their
    simulators), then :data:`STOP_GRACE` to end before it is killed."""
    while True:
        try:
            return child.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            if stopping.is_set():
                break
    try:
        return child.wait(timeout=OWN_STOP)
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGINT)
    try:
        return child.wait(timeout=STOP_GRACE)
    except subprocess.TimeoutExpired:
        child.kill()
        return child.wait()


def run_cells(lab: Lab, cells: Sequence[Cell], *, report: str | None = None, coordinator: str | None = None,
              jobs: int = 1, lock_timeout: float | None = None, pytest_args: Sequence[str] = (),
              history: str | None = None, shard_text: str = "") -> int:
    """Run every cell's suites (``jobs`` at a time), merge the reports; 0 when every cell passed."""
    if pytest_missing():
        return 2
    if jobs < 1:
        raise InvalidArgument(f"--jobs must be at least 1, got {jobs}")
    coordinator = coordinator or lab.coordinator
    with tempfile.TemporaryDirectory(prefix="robohal-hil-") as scratch:
        folder = Path(report) if report else Path(scratch)
        setup = LabRun(lab, coordinator=coordinator, lock_timeout=lock_timeout, pytest_args=pytest_args,
                       capture=jobs > 1 and len(cells) > 1)
        runs = [CellRun(cell, folder / "cells" / cell.name) for cell in cells]
        begun = time.monotonic()
        interrupted = _run_all(setup, runs, jobs)
        wall = time.monotonic() - begun
        from .report import append_history, write_lab_report

        path = write_lab_report(folder, runs, wall=wall, jobs=jobs, shard=shard_text)
        if report:
            _say(f"robohal hil: report written to {path}")
        else:
            _say(path.read_text(encoding="utf-8").split("\n## ", 1)[0].rstrip())
            for run in runs:
                if run.log is not None and not run.passed and run.log.exists():
                    _say(f"--- cell {run.cell.name}: the end of its log ---\n"
                         + "\n".join(run.log.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]))
        target = history or (str(lab.history) if lab.history else None)
        if target:
            append_history(target, folder, runs)
    if interrupted:
        return 130
    return 0 if all(run.passed for run in runs) else 1


def _run_all(setup: LabRun, runs: list[CellRun], jobs: int) -> bool:
    """Run the cells in worker threads (each drives one pytest process); True if interrupted.
    A Ctrl-C or SIGTERM stops every cell's process the gentle way and waits for the workers,
    so each place is released before this returns."""
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="robohal-hil-cell")
    try:
        futures = [pool.submit(setup.run_cell, run) for run in runs]
        pending = set(futures)
        while pending:
            _, pending = wait(pending, timeout=0.5)
        for future in futures:
            future.result()
        return False
    except KeyboardInterrupt:
        _say("robohal hil: interrupted: stopping every cell's run, then releasing its place")
        setup.stopping.set()
        pool.shutdown(wait=True, cancel_futures=True)
        return True
    finally:
        pool.shutdown(wait=True)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")



def run_lab(cells_file: str | None, cell_names: Sequence[str], *, targets: Sequence[str] = (),
            suites: Sequence[str] = (), shard_text: str | None = None, assume_yes: bool = False, **options) -> int:
    """``robohal hil --cells FILE --cell NAME ...``: check the options and the cell file, confirm
    real hardware, then :func:`run_cells`."""
    from ..testing.cells import load_cells
    from .hil import confirm_real_hardware

    if not cells_file or not cell_names:
        raise InvalidArgument("--cells FILE and --cell NAME (or --cell all) go together")
    if targets or suites:
        raise InvalidArgument("--target and --suite do not go with --cells: the cell file names both")
    lab = load_cells(cells_file)
    cells = lab.select(cell_names)
    if shard_text:
        cells = shard(cells, *parse_shard(shard_text))
        if not cells:
            _say(f"robohal hil: shard {shard_text} has no cell to run")
            return 0
    real = [cell for cell in cells if not cell.simulated]
    for cell in real:
        _say(f"robohal hil: cell {cell.name}" + (f" (ask {cell.contact})" if cell.contact else ""))
    if not confirm_real_hardware([cell.uri for cell in real], assume_yes=assume_yes):
        return 2
    return run_cells(lab, cells, shard_text=shard_text or "", **options)
