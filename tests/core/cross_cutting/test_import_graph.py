"""The shape of the core's imports: dependencies point one way (no cycle, lazy imports
inside functions included) and no module takes another's private name.

Imports under ``if TYPE_CHECKING:`` are left out: they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import robohal

PACKAGE = Path(robohal.__file__).parent


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(module: str, path: Path, known: dict[str, Path]) -> tuple[set[str], list[str]]:
    """The robohal modules ``module`` imports at run time, and the private names it imports."""
    tree = ast.parse(path.read_text())
    typing_only = {id(node) for block in ast.walk(tree)
                   if isinstance(block, ast.If) and getattr(block.test, "id", getattr(block.test, "attr", None)) == "TYPE_CHECKING"
                   for node in ast.walk(block)}
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    targets, private = set(), []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module
            submodules = {f"{base}.{alias.name}" for alias in node.names} & known.keys()
            targets.update(submodules or {base})
            private += [f"{base}.{alias.name}" for alias in node.names
                        if alias.name.startswith("_") and not alias.name.startswith("__")]
    return {t for t in targets if t in known and t != module}, private


def graph() -> tuple[dict[str, set[str]], list[str]]:
    known = modules()
    edges, private = {}, []
    for module, path in known.items():
        edges[module], names = imported(module, path, known)
        private += [f"{module} imports {name}" for name in names]
    return edges, private


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in edges:
        if node not in index:
            visit(node)
    return found


# The layers the README's "How robohal is built" draws, top first; a module imports only from
# its own layer or those below it. Each is a folder of robohal (or a module at its top).
LAYERS = [
    ("applications", {"cli", "testing", "view"}),
    ("robot API", {"robohal", "connection", "robot", "cartesian"}),
    ("plugins", {"plugins"}),
    ("simulation", {"sim"}),
    ("control", {"control"}),
    ("motions", {"motion"}),
    ("network", {"net"}),
    ("basics", {"kinematics", "spatial", "state", "payload", "uri", "errors"}),
]


def layer(module: str) -> int:
    name = "robohal" if module == "robohal" else module.split(".")[1]
    for depth, (_, members) in enumerate(LAYERS):
        if name in members:
            return depth
    raise AssertionError(f"{module} is in no layer: add it to LAYERS and to the README's picture")


def test_imports_point_down_the_layers():
    edges, _ = graph()
    upward = [f"{module} ({LAYERS[layer(module)][0]}) imports {target} ({LAYERS[layer(target)][0]})"
              for module, targets in edges.items() for target in targets if layer(target) < layer(module)]
    assert upward == []


def test_the_core_has_no_import_cycle():
    edges, _ = graph()
    assert len(edges) > 20 and edges["robohal.robot"] >= {"robohal.control.backend", "robohal.motion"}
    assert cycles(edges) == []


def test_no_core_module_imports_a_private_name():
    assert graph()[1] == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_backend_brakes_with_the_guard_s_one_brake():
    """Braking to rest is written once (SetpointGuard.brake); no plugin steps a stop itself."""
    plugins = Path(__file__).resolve().parents[3] / "plugins"
    stepping = [str(path.relative_to(plugins)) for path in plugins.rglob("*.py")
                if "braking_step" in path.read_text() or "REST_VELOCITY" in path.read_text()]
    assert stepping == []
