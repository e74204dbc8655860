"""The robohal pytest plugin (entry point ``pytest11``).

* ``--hil-target URI`` (repeatable) picks the robots to test; without it, every
  installed backend's bundled simulators (their ``hil_targets``) — never a
  silent all-skip.
* ``hil_target`` (session fixture, one per target, simulators started in their
  own processes and stopped at the end) and ``robot`` (a connected robot per test).
* Markers: ``hil_backend(scheme, ...)`` runs a test only on targets of those
  schemes; ``needs_feature(name, ...)`` skips unless the backend lists the
  features; ``hardware_only`` skips on simulators.
* ``--hil-speed FACTOR`` and ``--hil-workspace BOX`` hold every robot the suites connect
  to a cell's safety settings (:mod:`robohal.testing.safety`), checked before anything moves.
* Every HIL test case records its target as a JUnit property ``hil_target``; with
  ``--hil-report`` the targets' identities go to ``targets.json`` there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..errors import RobohalError
from ..motion import MotionResult
from ..plugins.registry import default_registry
from ..robot import Robot
from ..uri import parse_uri
from .safety import CellSafety, Workspace
from .target import HilTarget


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("robohal", "robohal hardware-in-the-loop testing")
    group.addoption(
        "--hil-target",
        action="append",
        default=[],
        metavar="URI",
        help="robot URI to run HIL tests against (repeatable); default: every installed backend's bundled simulator",
    )
    group.addoption(
        "--hil-report",
        default=None,
        metavar="DIR",
        help="write plots of the motions HIL tests record (hil_motion_log) into DIR",
    )
    group.addoption(
        "--hil-speed",
        type=float,
        default=1.0,
        metavar="FACTOR",
        help="speed factor in (0, 1] on every joint's limits for every robot the HIL tests connect to",
    )
    group.addoption(
        "--hil-workspace",
        default=None,
        metavar="BOX",
        help="xmin,ymin,zmin,xmax,ymax,zmax (m, base frame): every setpoint's flange must stay in this box",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hil_backend(scheme, ...): run only against HIL targets of these URI schemes")
    config.addinivalue_line("markers", "needs_feature(name, ...): skip unless the target's backend has these features")
    config.addinivalue_line("markers", "hardware_only: skip on simulated targets")
    hil_targets(config)  # a mistyped --hil-target stops the run here, with the reason
    hil_safety(config)


def hil_safety(config: pytest.Config) -> CellSafety:
    """The safety settings given on the command line (none: full speed, no box)."""
    box = config.getoption("hil_workspace")
    try:
        return CellSafety(float(config.getoption("hil_speed")), Workspace.parse(box) if box else None)
    except RobohalError as exc:
        raise pytest.UsageError(f"--hil-speed/--hil-workspace: {exc}") from None


def hil_targets(config: pytest.Config) -> list[str]:
    """The targets given on the command line, else every bundled simulator."""
    given = list(config.getoption("hil_target") or [])
    if given:
        for uri in given:
            try:
                parsed = parse_uri(uri)
                default_registry().backend_spec(parsed.scheme)
                if parsed.model:
                    default_registry().model_spec(parsed.model)
            except RobohalError as exc:
                raise pytest.UsageError(f"--hil-target: {exc}") from None
        return given
    return [uri for spec in default_registry().backends() for uri in spec.hil_targets]


def pytest_report_header(config: pytest.Config) -> str | None:
    try:
        return "robohal HIL targets: " + (", ".join(hil_targets(config)) or "none")
    except Exception as exc:  # a broken plugin must not hide the test run
        return f"robohal HIL targets: unavailable ({exc})"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "hil_target" not in metafunc.fixturenames:
        return
    targets = hil_targets(metafunc.config)
    marker = metafunc.definition.get_closest_marker("hil_backend")
    if marker is not None:
        schemes = {str(s).lower() for s in marker.args}
        targets = [t for t in targets if parse_uri(t).scheme in schemes]
        if not targets:
            reason = f"no HIL target for {', '.join(sorted(schemes))} (give --hil-target {sorted(schemes)[0]}://...)"
            metafunc.parametrize(
                "hil_target", [pytest.param(None, marks=pytest.mark.skip(reason=reason))],
                indirect=True, scope="session", ids=["no-target"],
            )
            return
    if not targets:
        raise pytest.UsageError("no HIL targets: no installed backend bundles a simulator; give --hil-target URI")
    metafunc.parametrize("hil_target", targets, indirect=True, scope="session", ids=targets)


@pytest.fixture(scope="session")
def hil_target(request: pytest.FixtureRequest) -> Iterator[HilTarget]:
    """The target of this test: its simulator runs for as long as tests use it."""
    requested = getattr(request, "param", None)
    if requested is None:
        pytest.skip("no HIL target")
    target = HilTarget.start(requested, safety=hil_safety(request.config))
    try:
        target.preflight()
        yield target
    finally:
        request.config.stash.setdefault(_TARGETS, {})[target.requested] = {
            "identity": target.identity, "simulated": target.simulated,
            "speed": target.safety.speed,
            "workspace": target.safety.workspace.as_text() if target.safety.workspace else None}
        target.close()


@pytest.fixture
def robot(hil_target: HilTarget) -> Iterator[Robot]:
    """A robot connected to the test's target, closed after the test."""
    with hil_target.connect() as connected:
        yield connected


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Record each HIL test's target and skip what the target cannot do, before
    any simulator is started for it."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        requested = callspec.params.get("hil_target") if callspec is not None else None
        if requested is None:
            continue
        item.user_properties.append(("hil_target", requested))
        uri = parse_uri(requested)
        try:
            spec = default_registry().backend_spec(uri.scheme)
        except RobohalError as exc:
            item.add_marker(pytest.mark.skip(reason=str(exc)))
            continue
        simulated = uri.wants_simulator or spec.scheme == "sim"
        if item.get_closest_marker("hardware_only") is not None and simulated:
            item.add_marker(pytest.mark.skip(reason=f"needs real hardware; {requested} is a simulator"))
        for marker in item.iter_markers("needs_feature"):
            missing = [f for f in marker.args if f not in spec.features]
            if missing:
                item.add_marker(pytest.mark.skip(reason=f"{spec.scheme} lacks feature(s) {', '.join(missing)}"))


class MotionLog:
    """Motions a test wants in the HIL report (plots written at the end of the run)."""

    def __init__(self, nodeid: str, target: str | None, sink: list) -> None:
        self.nodeid = nodeid
        self.target = target
        self._sink = sink

    def add(self, name: str, result: MotionResult) -> None:
        self._sink.append((self.nodeid, self.target, name, result))


_RECORDED = pytest.StashKey[list]()
_TARGETS = pytest.StashKey[dict]()


@pytest.fixture
def hil_motion_log(request: pytest.FixtureRequest) -> MotionLog:
    """Record a :class:`MotionResult` for the report: ``hil_motion_log.add("name", result)``."""
    callspec = getattr(request.node, "callspec", None)
    target = callspec.params.get("hil_target") if callspec is not None else None
    sink = request.config.stash.setdefault(_RECORDED, [])
    return MotionLog(request.node.nodeid, target, sink)


def pytest_sessionfinish(session: pytest.Session) -> None:
    folder = session.config.getoption("hil_report")
    recorded = session.config.stash.get(_RECORDED, [])
    targets = session.config.stash.get(_TARGETS, {})
    if folder and targets:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / "targets.json").write_text(json.dumps(targets, indent=2), encoding="utf-8")
    if not folder or not recorded:
        return
    from ..cli.plots import plot_motion

    index = []
    for n, (nodeid, target, name, result) in enumerate(recorded):
        slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{n:03d}-{name}-{target or ''}").strip("-")[:100]
        path = plot_motion(result, Path(folder) / "plots" / f"{slug}.png", f"{name} on {target}")
        index.append({
            "test": nodeid, "target": target, "motion": name,
            "plot": str(path.relative_to(folder)) if path else None,
            "cycles": result.cycles, "duration_s": result.duration,
            "max_tracking_error_rad": float(result.tracking_error.max()) if result.cycles else 0.0,
        })
    Path(folder).mkdir(parents=True, exist_ok=True)
    (Path(folder) / "motions.json").write_text(json.dumps(index, indent=2), encoding="utf-8")
