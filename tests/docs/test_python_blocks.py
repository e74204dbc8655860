"""Every Python block in the READMEs works as written.

A block whose robots are all simulators (``sim://``, ``SCHEME://sim``), or that connects to none,
runs as a script of its own, in a fresh interpreter, as a user who pastes it would run it: a missing
import fails it. A block for a real cell (any other address: ``172.16.0.2``, ``/dev/ttyACM0``) cannot
run here, so it is compiled, its imports are imported, and every name it uses must be bound in the
block or be a builtin, every attribute it takes from an imported module must exist.
"""

from __future__ import annotations

import ast
import builtins
import symtable
import sys
import types
from urllib.parse import urlsplit

import pytest
from sybil import Example
from sybil.parsers.markdown import CodeBlockParser

# Runs the block read from stdin under the README's path, so a traceback names the README's lines.
SCRIPT_RUNNER = "import sys; exec(compile(sys.stdin.read(), sys.argv[1], 'exec'), {'__name__': '__main__'})"


def check_block(block: Example) -> None:
    source = "\n" * block.line + block.parsed  # the block's code on the README's own line numbers
    tree = ast.parse(source, block.path)
    if any(not is_simulator(uri) for uri in robot_uris(tree)):
        check_names(tree, source, block.path)
    else:
        result = block.namespace["run_bounded"]([sys.executable, "-c", SCRIPT_RUNNER, block.path], input=source,
                                                cwd=block.namespace["cwd"])
        if result.returncode != 0:
            pytest.fail(f"the block failed as written:\n{result.stdout}\n{result.stderr}", pytrace=False)


PARSERS = [CodeBlockParser(language="python", evaluator=check_block)]


def test_python_block(block: Example, run_bounded, tmp_path) -> None:
    block.namespace.update(run_bounded=run_bounded, cwd=tmp_path)  # a file a block writes goes there
    block.evaluate()


def robot_uris(tree: ast.AST) -> list[str]:
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "://" in node.value]


def is_simulator(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme == "sim" or parts.hostname == "sim"


def check_names(tree: ast.Module, source: str, path: str) -> None:
    imports = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    imported: dict[str, object] = {}
    exec(compile(ast.Module(body=imports, type_ignores=[]), path, "exec"), imported)

    table = symtable.symtable(source, path, "exec")
    bound = {symbol.get_name() for symbol in table.get_symbols()
             if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace()}
    unbound = sorted(name for name in global_references(table) if name not in bound and not hasattr(builtins, name))
    loads = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id in unbound]
    assert not unbound, "the block uses names it never defines: " + ", ".join(
        f"{node.id} (line {node.lineno})" for node in loads)

    modules = {name: value for name, value in imported.items() if isinstance(value, types.ModuleType)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            check_attribute(node, modules)


def global_references(table: symtable.SymbolTable) -> set[str]:
    """The names a block reads from its module's namespace, in any function or class too."""
    at_top = table.get_type() == "module"
    names = {symbol.get_name() for symbol in table.get_symbols()
             if symbol.is_referenced() and (at_top or symbol.is_global())}
    for child in table.get_children():
        names |= global_references(child)
    return names


def check_attribute(node: ast.Attribute, modules: dict[str, object]) -> None:
    chain = []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in modules:
        return  # an attribute of a value the block makes, which only running it could check
    value, path = modules[node.id], node.id
    for attribute in reversed(chain):
        assert hasattr(value, attribute), f"{path} has no attribute {attribute!r} (line {node.lineno})"
        value, path = getattr(value, attribute), f"{path}.{attribute}"
