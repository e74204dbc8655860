"""RAPID module text as the simulated controller loads it: declarations, routines, EGM use, errors.

The simulated controller (:mod:`.controller_model`) does not run RAPID. It reads what a module
declares and what its ``main`` leads to, enough to behave like a controller that runs it:

- the data it declares (``VAR``/``PERS``/``CONST``, with the value written or the type's
  default), which RWS reads and writes back;
- whether ``main`` reaches an EGM run (``EGMRunJoint``/``EGMRunPose``, directly or through the
  routines it calls), which is what makes the EGM stream flow while the program runs;
- whether an error handler takes ``ERR_UDPUC_COMM`` and goes on (``TRYNEXT``/``RETRY``), as the
  template's does: then a CommTimeout starts a new EGM session instead of stopping RAPID;
- the names the template maps to EGM's RAPID data (``DO_NAMES``, ``AO_NAMES``, ``DI_NAMES``,
  ``AI_NAMES``), so the signals RWS sets are the ones EGM carries;
- the syntax errors a controller reports when such a module is loaded. The check is ours and
  coarse (blocks that do not close, declarations that do not read, strings that do not end):
  enough that a broken module loads with errors and will not run, as on a controller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: the RAPID data types whose default value we know (RAPID reference: a VAR without a value
#: starts at 0, "", FALSE); any other type without a value reads back as written, ``[]``-free
DEFAULTS = {"num": "0", "dnum": "0", "string": '""', "bool": "FALSE"}
#: the EGM instructions that start a stream of robot messages (ABB's EGM manual)
EGM_RUN = {"egmrunjoint": "joint", "egmrunpose": "pose"}
#: the template's signal-name arrays, in the order robohal's RAPID data carry them (rapid/SETUP.md)
SIGNAL_ARRAYS = ("DO_NAMES", "AO_NAMES", "DI_NAMES", "AI_NAMES")
#: blocks that open on a line's first word and the word that closes each (RAPID reference)
OPENERS = {"PROC": "ENDPROC", "FUNC": "ENDFUNC", "TRAP": "ENDTRAP", "RECORD": "ENDRECORD"}
INNER_OPENERS = {"WHILE": "ENDWHILE", "FOR": "ENDFOR", "TEST": "ENDTEST"}
MAX_MODULE_SIZE = 512 * 1024  # characters; our choice, far above any cell's module, below the upload limit

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_DECLARATION = re.compile(
    r"^(?:(?:LOCAL|TASK)\s+)?(VAR|PERS|CONST)\s+([A-Za-z][A-Za-z0-9_]*)\s+([A-Za-z][A-Za-z0-9_]*)"
    r"\s*(\{[^}]*\})?\s*(?::=\s*(.*))?$", re.IGNORECASE | re.DOTALL)
_ROUTINE = re.compile(r"^(?:LOCAL\s+)?(PROC|FUNC|TRAP)\s+(?:[A-Za-z][A-Za-z0-9_]*\s+)?([A-Za-z][A-Za-z0-9_]*)",
                      re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


@dataclass
class Symbol:
    """One declared datum: ``kind`` VAR, PERS or CONST; ``value`` a RAPID literal, spaces removed."""

    name: str
    kind: str
    type: str
    value: str
    dims: tuple[int, ...] = ()


@dataclass
class RapidModule:
    """What the controller knows of a loaded module (see the module docstring)."""

    name: str
    text: str
    kind: str = "ProgMod"  # "SysMod" for a (SYSMODULE) one
    symbols: dict[str, Symbol] = field(default_factory=dict)  # by lower-case name: RAPID names ignore case
    routines: dict[str, str] = field(default_factory=dict)  # lower-case name -> body text
    errors: list[str] = field(default_factory=list)  # "line N: what", as the controller's elog says them

    @property
    def has_main(self) -> bool:
        return "main" in self.routines

    def egm_mode(self) -> str | None:
        """"joint" or "pose" if ``main`` reaches an EGM run, through the routines it calls; else None.
        Where both are reachable (the template picks one by its EGM_MODE constant), EGM_MODE decides."""
        seen: set[str] = set()
        found: set[str] = set()
        todo = ["main"] if self.has_main else []
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for word in _WORD.findall(self.routines.get(name, "")):
                lowered = word.lower()
                if lowered in EGM_RUN:
                    found.add(EGM_RUN[lowered])
                elif lowered in self.routines and lowered not in seen:
                    todo.append(lowered)
        if len(found) > 1:
            chosen = self.symbols.get("egm_mode")
            mode = chosen.value.strip('"') if chosen is not None else ""
            return mode if mode in found else "joint"
        return found.pop() if found else None

    def retries_comm_error(self) -> bool:
        """Whether an error handler takes ERR_UDPUC_COMM and goes on (the template's TRYNEXT)."""
        for body in self.routines.values():
            upper = body.upper()
            if "ERR_UDPUC_COMM" in upper and ("TRYNEXT" in upper or "RETRY" in upper):
                return True
        return False

    def signal_names(self) -> dict[str, tuple[str, ...]]:
        """The template's mapping: {"do": (...), "ao": ..., "di": ..., "ai": ...}, names up to the first ""."""
        mapping: dict[str, tuple[str, ...]] = {}
        for array in SIGNAL_ARRAYS:
            symbol = self.symbols.get(array.lower())
            names: list[str] = []
            if symbol is not None and symbol.type.lower() == "string":
                for item in split_array(symbol.value):
                    name = item.strip('"')
                    if not name:
                        break  # the template: the first "" ends the list
                    names.append(name)
            mapping[array[:2].lower()] = tuple(names)
        return mapping


def strip_comment(line: str) -> tuple[str, bool]:
    """The line without its ``!`` comment (outside strings), and whether its strings all end."""
    out = []
    quoted = False
    for char in line:
        if char == '"':
            quoted = not quoted
        elif char == "!" and not quoted:
            break
        out.append(char)
    return "".join(out).strip(), not quoted


def compact(value: str) -> str:
    """A literal with the spaces outside strings removed (``[0, 0]`` -> ``[0,0]``)."""
    out = []
    quoted = False
    for char in value:
        if char == '"':
            quoted = not quoted
        if quoted or not char.isspace():
            out.append(char)
    return "".join(out)


def split_array(value: str) -> list[str]:
    """The top-level items of an array literal ``[a,b,[c,d]]`` -> ``["a", "b", "[c,d]"]``."""
    text = value.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return [text]
    items, depth, quoted, current = [], 0, False, []
    for char in text[1:-1]:
        if char == '"':
            quoted = not quoted
        if not quoted:
            if char == "[":
                depth += 1
            elif char == "]":
                depth -= 1
            elif char == "," and depth == 0:
                items.append("".join(current))
                current = []
                continue
        current.append(char)
    if current or items:
        items.append("".join(current))
    return items


def default_value(type_name: str, dims: tuple[int, ...]) -> str:
    scalar = DEFAULTS.get(type_name.lower(), "0")
    for size in reversed(dims):
        scalar = "[" + ",".join([scalar] * size) + "]"
    return scalar


def _dims(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return ()
    try:
        dims = tuple(int(part) for part in text.strip("{}").split(","))
    except ValueError:
        return None
    return dims if all(0 < size <= 10_000 for size in dims) else None


def parse_module(text: str) -> RapidModule:
    """Read a module's text (see the module docstring). Never raises: what does not read is in ``errors``."""
    if len(text) > MAX_MODULE_SIZE:
        return RapidModule(name="", text="", errors=[f"line 1: the module is larger than {MAX_MODULE_SIZE} characters"])
    module = RapidModule(name="", text=text)
    statement: list[str] = []  # a declaration or statement spanning lines, until its ";"
    statement_line = 0
    blocks: list[tuple[str, int]] = []  # open blocks: (closing word, line)
    routine: str | None = None
    body: list[str] = []
    ended = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line, closed = strip_comment(raw)
        if not closed:
            module.errors.append(f"line {number}: string not terminated")
            continue
        if not line:
            continue
        first = line.split(None, 1)[0].upper().rstrip(";")
        if ended:
            module.errors.append(f"line {number}: text after ENDMODULE")
            break
        if not module.name:
            match = re.match(r"^MODULE\s+([A-Za-z][A-Za-z0-9_]*)\s*(\(.*\))?$", line, re.IGNORECASE)
            if match is None:
                module.errors.append(f"line {number}: MODULE name expected")
                return module
            module.name = match.group(1)
            if match.group(2) and "SYSMODULE" in match.group(2).upper():
                module.kind = "SysMod"
            continue
        if first == "ENDMODULE":
            if statement:
                module.errors.append(f"line {statement_line}: ';' expected")
            for closing, opened in blocks:
                module.errors.append(f"line {opened}: {closing} expected before ENDMODULE")
            ended = True
            blocks = []
            continue
        if routine is not None:
            body.append(line)
        # blocks: a routine, or a compound statement inside one
        if first in OPENERS and not blocks:
            match = _ROUTINE.match(line)
            if first != "RECORD" and match is None:
                module.errors.append(f"line {number}: routine name expected")
            elif first != "RECORD":
                routine = match.group(2).lower()
                body = [line]
            blocks.append((OPENERS[first], number))
            continue
        if first in INNER_OPENERS or (first == "IF" and line.upper().endswith("THEN")):
            if not blocks:
                module.errors.append(f"line {number}: {first} outside a routine")
            blocks.append((INNER_OPENERS.get(first, "ENDIF"), number))
            continue
        if first.startswith("END") and first != "ENDMODULE":
            if not blocks or blocks[-1][0] != first:
                expected = blocks[-1][0] if blocks else "a declaration"
                module.errors.append(f"line {number}: {first} where {expected} was expected")
                continue
            blocks.pop()
            if not blocks and routine is not None:
                module.routines[routine] = "\n".join(body)
                routine, body = None, []
            continue
        if blocks:
            continue  # a statement inside a routine: read for its words only (egm_mode)
        # a declaration at module level, perhaps over several lines
        statement.append(line)
        statement_line = statement_line or number
        if not line.endswith(";"):
            continue
        declaration = " ".join(statement)[:-1].strip()
        statement, at = [], statement_line
        statement_line = 0
        _declare(module, declaration, at)
    if module.name and not ended:
        module.errors.append("ENDMODULE expected at the end")
    if not module.name and not module.errors:
        module.errors.append("line 1: MODULE name expected")
    return module


def _declare(module: RapidModule, text: str, line: int) -> None:
    match = _DECLARATION.match(text)
    if match is None:
        module.errors.append(f"line {line}: declaration expected, found {text[:40]!r}")
        return
    kind, type_name, name, dims_text, value = match.groups()
    dims = _dims(dims_text)
    if dims is None:
        module.errors.append(f"line {line}: array size {dims_text} is not valid")
        return
    if kind.upper() == "CONST" and value is None:
        module.errors.append(f"line {line}: CONST {name} needs a value")
        return
    literal = compact(value) if value is not None else default_value(type_name, dims)
    if not literal or not balanced(literal):
        module.errors.append(f"line {line}: the value of {name} does not read")
        return
    if name.lower() in module.symbols:
        module.errors.append(f"line {line}: {name} is declared twice")
        return
    module.symbols[name.lower()] = Symbol(name, kind.upper(), type_name, literal, dims)


def balanced(literal: str) -> bool:
    depth, quoted = 0, False
    for char in literal:
        if char == '"':
            quoted = not quoted
        elif not quoted:
            depth += {"[": 1, "]": -1}.get(char, 0)
            if depth < 0:
                return False
    return depth == 0 and not quoted


def check_literal(symbol: Symbol, literal: str) -> str | None:
    """The literal, compacted, if it can be the value of ``symbol`` (its type and shape); else None.
    Our check: numbers for num/dnum, TRUE/FALSE for bool, a quoted string for string, the same
    array shape for arrays; other types (records) only need balanced brackets."""
    value = compact(literal)
    if not value or not balanced(value) or len(value) > 64 * 1024:
        return None
    if symbol.dims:
        items = split_array(value)
        if not value.startswith("[") or len(items) != symbol.dims[0]:
            return None
        inner = Symbol(symbol.name, symbol.kind, symbol.type, "", symbol.dims[1:])
        return value if all(check_literal(inner, item) is not None for item in items) else None
    kind = symbol.type.lower()
    if kind in ("num", "dnum"):
        try:
            number = float(value)
        except ValueError:
            return None
        return value if number == number and abs(number) != float("inf") else None
    if kind == "bool":
        return value.upper() if value.upper() in ("TRUE", "FALSE") else None
    if kind == "string":
        ok = len(value) >= 2 and value[0] == value[-1] == '"' and '"' not in value[1:-1] and len(value) <= 82
        return value if ok else None  # RAPID strings hold at most 80 characters
    return value


def valid_name(name: str) -> bool:
    return bool(_NAME.match(name)) and len(name) <= 32  # RAPID identifiers: at most 32 characters
