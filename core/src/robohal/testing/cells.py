"""A lab's cell inventory: named HIL cells in a TOML file (see ``hil/cells.example.toml``).

Each ``[cells.NAME]`` table gives the cell's robot ``uri``, the ``suites`` that apply (importable
packages, or folders relative to the file), its safety settings (``speed`` factor, ``workspace``
box in the base frame, m), who to ask (``contact``) and the labgrid ``place`` that locks it.
``bringup = true`` has the backend make the robot ready before the run and safe after (a Franka:
Desk's control, joints and FCI, locked again at the end), with the robot's credentials from where
its URI says (a Franka's ``desk_credentials=``: the environment or the credentials file, never the
cell file). An
optional ``[lab]`` table names the labgrid ``coordinator``, how long a run waits for a held cell
(``lock_timeout``, s) and a ``history`` file. Every mistake is refused on loading, naming the
file, the cell and the key.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InvalidArgument, RobohalError
from ..plugins.registry import Registry, default_registry
from ..uri import parse_uri
from .safety import CellSafety, Workspace

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: the package of the backend contract suite, which applies to every cell
CONTRACT_SUITE = "robohal.testing.suite"
CELL_KEYS = {"uri", "suites", "speed", "workspace", "contact", "place", "bringup"}
LAB_KEYS = {"coordinator", "lock_timeout", "history"}
DEFAULT_LOCK_TIMEOUT = 600.0  # s


class CellFileError(InvalidArgument):
    """A cell file that cannot be used as it is; the message names the file, cell and key."""


@dataclass(frozen=True)
class Cell:
    name: str
    uri: str
    suites: tuple[str, ...]
    safety: CellSafety = field(default_factory=CellSafety)
    contact: str = ""
    place: str = ""
    #: the backend brings the robot up before the run and leaves it safe after (its ``bring_up``)
    bringup: bool = False

    @property
    def simulated(self) -> bool:
        uri = parse_uri(self.uri)
        return uri.wants_simulator or uri.scheme == "sim"


@dataclass(frozen=True)
class Lab:
    """A cell file: its cells by name, in the order written, and the lab's settings."""

    path: Path
    cells: dict[str, Cell]
    coordinator: str | None = None
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    history: Path | None = None

    def select(self, names: list[str] | tuple[str, ...]) -> list[Cell]:
        """The cells named (``all``: every one), each once, in the order given."""
        chosen: list[Cell] = []
        for name in names:
            if name == "all":
                picked = list(self.cells.values())
            elif name in self.cells:
                picked = [self.cells[name]]
            else:
                known = ", ".join(self.cells) or "none"
                raise CellFileError(f"{self.path}: unknown cell {name!r}; the cells are: {known}")
            chosen += [cell for cell in picked if cell not in chosen]
        return chosen


def load_cells(path: str | Path, registry: Registry | None = None) -> Lab:
    """Read and check a cell file (:class:`CellFileError` on any mistake)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CellFileError(f"cell file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CellFileError(f"cell file {path} is not valid TOML: {exc}") from None
    unknown = set(data) - {"lab", "cells"}
    if unknown:
        raise CellFileError(f"{path}: unknown table(s) {sorted(unknown)}; a cell file has [lab] and [cells.NAME]")
    lab = data.get("lab", {})
    cells = data.get("cells", {})
    if not isinstance(lab, dict) or not isinstance(cells, dict):
        raise CellFileError(f"{path}: [lab] and [cells] must be tables")
    if not cells:
        raise CellFileError(f"{path}: no cells ([cells.NAME] tables)")
    unknown = set(lab) - LAB_KEYS
    if unknown:
        raise CellFileError(f"{path}: [lab] has unknown key(s) {sorted(unknown)}; known: {sorted(LAB_KEYS)}")
    registry = registry or default_registry()
    parsed = {name: _cell(path, name, table, registry) for name, table in cells.items()}
    uris = [cell.uri for cell in parsed.values() if not cell.simulated]
    twice = sorted({uri for uri in uris if uris.count(uri) > 1})
    if twice:  # two names for one robot would let two runs move it at once
        raise CellFileError(f"{path}: robot {twice[0]} is named by more than one cell")
    places = [cell.place for cell in parsed.values()]
    twice = sorted({place for place in places if places.count(place) > 1})
    if twice:
        raise CellFileError(f"{path}: labgrid place {twice[0]!r} locks more than one cell")
    timeout = lab.get("lock_timeout", DEFAULT_LOCK_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (math.isfinite(timeout) and timeout >= 0):
        raise CellFileError(f"{path}: [lab] lock_timeout must be seconds >= 0, got {timeout!r}")
    coordinator = lab.get("coordinator")
    if coordinator is not None and (not isinstance(coordinator, str) or not coordinator.strip()):
        raise CellFileError(f"{path}: [lab] coordinator must be HOST:PORT, got {coordinator!r}")
    history = lab.get("history")
    if history is not None and not isinstance(history, str):
        raise CellFileError(f"{path}: [lab] history must be a file name, got {history!r}")
    return Lab(path=path, cells=parsed, coordinator=coordinator, lock_timeout=float(timeout),
               history=(path.parent / history) if history else None)


def _cell(path: Path, name: str, table: object, registry: Registry) -> Cell:
    where = f"{path}: cell {name!r}"
    if not isinstance(table, dict):
        raise CellFileError(f"{where} must be a table")
    if name == "all" or not name.replace("-", "").replace("_", "").isalnum():
        raise CellFileError(f"{where}: a cell name is letters, digits, '-' and '_' (and not 'all')")
    unknown = set(table) - CELL_KEYS
    if unknown:
        raise CellFileError(f"{where} has unknown key(s) {sorted(unknown)}; known: {sorted(CELL_KEYS)}")
    uri = table.get("uri")
    if not isinstance(uri, str):
        raise CellFileError(f"{where} needs uri = \"scheme://...\" (the robot's URI)")
    try:
        parsed = parse_uri(uri)
        spec = registry.backend_spec(parsed.scheme)
        if parsed.model:
            registry.model_spec(parsed.model)
    except RobohalError as exc:
        raise CellFileError(f"{where}: uri {uri!r}: {exc} (no installed backend serves it)") from None
    suites = table.get("suites")
    if suites is None:
        suites = [CONTRACT_SUITE, *([spec.hil_suite] if spec.hil_suite else [])]
    if not isinstance(suites, list) or not suites or not all(isinstance(s, str) for s in suites):
        raise CellFileError(f"{where}: suites must be a list of packages or folders, got {suites!r}")
    for suite in suites:
        _check_suite(where, path, suite)
    try:
        speed = table.get("speed", 1.0)
        if isinstance(speed, bool) or not isinstance(speed, (int, float)):
            raise InvalidArgument(f"speed factor must be a number in (0, 1], got {speed!r}")
        safety = CellSafety(float(speed), _workspace(table.get("workspace")))
    except InvalidArgument as exc:
        raise CellFileError(f"{where}: {exc}") from None
    contact = table.get("contact", "")
    if not isinstance(contact, str):
        raise CellFileError(f"{where}: contact must be text (who to ask about the cell)")
    place = table.get("place", name)
    if not isinstance(place, str) or not place.strip():
        raise CellFileError(f"{where}: place must be a labgrid place name")
    bringup = table.get("bringup", False)
    if not isinstance(bringup, bool):
        raise CellFileError(f"{where}: bringup is true or false")
    if bringup and spec.bring_up is None:
        raise CellFileError(f"{where}: bringup: the {spec.scheme} backend brings no robot up (it has nothing to do)")
    return Cell(name=name, uri=uri, suites=tuple(suites), safety=safety, contact=contact, place=place,
                bringup=bringup)


def _workspace(value: object) -> Workspace | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"min", "max"}:
        raise InvalidArgument(f"workspace must be {{ min = [x, y, z], max = [x, y, z] }} (m), got {value!r}")
    for key in ("min", "max"):
        corner = value[key]
        if not isinstance(corner, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                   for v in corner):
            raise InvalidArgument(f"workspace {key} must be three numbers [x, y, z] (m), got {corner!r}")
    return Workspace(value["min"], value["max"])


def _check_suite(where: str, path: Path, suite: str) -> None:
    if (path.parent / suite).is_dir():
        return
    try:
        found = importlib.util.find_spec(suite) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise CellFileError(f"{where}: suite {suite!r} is neither a folder next to the cell file nor an installed"
                            " package")

