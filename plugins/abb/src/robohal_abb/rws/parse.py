"""Robot Web Services answers to Python values, both dialects, hardened.

RWS 1.0 (RobotWare 6) answers JSON with ``?json=1`` (items in ``_embedded._state``), XHTML
otherwise and always on its websockets (items as ``<li class=TYPE title=TITLE>`` holding
``<span class=FIELD>`` values). RWS 2.0 (RobotWare 7) answers HAL JSON: one resource's items in
``state``, a list's in ``_embedded.resources``. Either way an answer here becomes a list of items,
each a dict of strings with ``_type`` and ``_title``, and the typed readers below take what they
need from those.

Whatever a controller (or something posing as one) sends, these functions return a value or raise
:class:`RwsProtocolError`: never another exception, never a hang (sizes and depths are bounded;
``tests/abb/test_rws_parse_fuzz.py`` holds them to that).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from html.parser import HTMLParser
from typing import Any

from .errors import RwsProtocolError
from .values import BuildError, ElogEntry, Event, ExecutionState, Signal, SystemInfo

#: the largest answer read (bytes): a controller's largest answers (an event log page, a module
#: file) are far below it; our choice, a bound on what a misbehaving server can make us hold
MAX_BODY = 8 * 1024 * 1024
#: items taken from one answer (a page of the event log holds 50 by default; our bound)
MAX_ITEMS = 10_000
_INTEGER = re.compile(r"^[+-]?\d{1,19}$")
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _fail(what: str) -> RwsProtocolError:
    return RwsProtocolError(f"the controller's answer is not Robot Web Services: {what}")


# Documents to items ------------------------------------------------------------------------


def items(body: bytes, content_type: str = "") -> list[dict[str, Any]]:
    """The items of an answer, JSON (either dialect) or XHTML."""
    if len(body) > MAX_BODY:
        raise _fail(f"{len(body)} bytes, more than the {MAX_BODY} read")
    text = _text(body)
    stripped = text.lstrip()
    if "json" in content_type.lower() or stripped.startswith("{"):
        return json_items(_json(stripped))
    return xhtml_items(stripped)


def _text(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail("not UTF-8 text") from None


def _json(text: str) -> dict[str, Any]:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than any answer has
        raise _fail(f"malformed JSON ({type(exc).__name__})") from None
    if not isinstance(document, dict):
        raise _fail(f"JSON {type(document).__name__}, not an object")
    return document


def json_items(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Items from RWS 1.0's ``_embedded._state``, RWS 2.0's ``state`` and ``_embedded.resources``."""
    found: list[dict[str, Any]] = []
    embedded = document.get("_embedded")
    sources = [document.get("state")]
    if isinstance(embedded, dict):
        sources += [embedded.get("_state"), embedded.get("resources")]
    for source in sources:
        if source is None:
            continue
        if not isinstance(source, list):
            raise _fail(f"a list of items expected, got {type(source).__name__}")
        found += [item for item in source if isinstance(item, dict)]
        if len(found) > MAX_ITEMS:
            raise _fail(f"more than {MAX_ITEMS} items")
    return found


class _Xhtml(HTMLParser):
    """Collects ``li`` items (class, title, span classes' text, links by rel), the page's own
    links, and the ``div class="status"`` an error answer carries. Lenient by design: a stray tag
    costs its content, never an exception."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[dict[str, Any]] = []
        self.links: dict[str, str] = {}
        self.status: dict[str, str] = {}
        self._item: dict[str, Any] | None = None
        self._in_status = 0
        self._span: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {key: value or "" for key, value in attrs}
        if tag == "li":
            if len(self.items) < MAX_ITEMS:
                self._item = {"_type": attributes.get("class", ""), "_title": attributes.get("title", ""), "_links": {}}
                self.items.append(self._item)
        elif tag == "div" and attributes.get("class") == "status":
            self._in_status = 1
        elif tag == "span" and "class" in attributes:
            self._span, self._text = attributes["class"], []
        elif tag == "a":
            rel = attributes.get("rel") or attributes.get("name") or ""
            href = attributes.get("href", "")
            target = self._item["_links"] if self._item is not None else self.links
            if rel and rel not in target:
                target[rel] = href

    def handle_data(self, data: str) -> None:
        if self._span is not None and sum(map(len, self._text)) < MAX_BODY:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "span" and self._span is not None:
            value = "".join(self._text).strip()
            if self._in_status:
                self.status.setdefault(self._span, value)
            elif self._item is not None:
                self._item.setdefault(self._span, value)
            self._span = None
        elif tag == "li":
            self._item = None
        elif tag == "div" and self._in_status:
            self._in_status = 0


def _xhtml(text: str) -> _Xhtml:
    parser = _Xhtml()
    try:
        parser.feed(text)
        parser.close()
    except (ValueError, AssertionError, RecursionError) as exc:  # html.parser's own complaints
        raise _fail(f"malformed XHTML ({type(exc).__name__})") from None
    return parser


def xhtml_items(text: str) -> list[dict[str, Any]]:
    return _xhtml(text).items


def xhtml_links(text: str) -> dict[str, str]:
    """The page's own links by rel (a subscription's ``ws://.../poll/ID``)."""
    return _xhtml(text).links


def next_page(body: bytes) -> str | None:
    """The path and query of a list's next page (HAL ``_links.next``), or None on the last page.
    Only a path on the same controller: a link elsewhere is not followed."""
    import html
    from urllib.parse import urljoin, urlsplit

    try:
        document = _json(_text(body[:MAX_BODY]).strip())
    except RwsProtocolError:
        return None
    links = document.get("_links")
    if not isinstance(links, dict):
        return None
    following, base = links.get("next"), links.get("base")
    href = following.get("href") if isinstance(following, dict) else None
    if not isinstance(href, str) or not href:
        return None
    root = base.get("href") if isinstance(base, dict) and isinstance(base.get("href"), str) else "/"
    try:
        target = urlsplit(urljoin(urlsplit(root).path or "/", html.unescape(href)))
    except ValueError:
        return None
    if target.scheme or target.netloc or not target.path.startswith("/"):
        return None
    return target.path + (f"?{target.query}" if target.query else "")


def error_of(body: bytes) -> tuple[int | None, str]:
    """The controller's return code and message in an error answer (RWS 2.0's ``status``, RWS
    1.0's ``_embedded.status`` or XHTML ``div class="status"``); (None, "") when it names none."""
    try:
        text = _text(body[:MAX_BODY]).strip()
    except RwsProtocolError:
        return None, ""
    status: Any = None
    if text.startswith("{"):
        try:
            document = _json(text)
        except RwsProtocolError:
            return None, ""
        status = document.get("status")
        embedded = document.get("_embedded")
        if not isinstance(status, dict) and isinstance(embedded, dict):
            status = embedded.get("status")
    elif text:
        try:
            status = _xhtml(text).status
        except RwsProtocolError:
            return None, ""
    if not isinstance(status, dict):
        return None, ""
    code = status.get("code")
    message = status.get("msg", "")
    return _int_or_none(code), message if isinstance(message, str) else str(message)


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _INTEGER.match(value.strip()):
        return int(value.strip())
    return None


# Fields ------------------------------------------------------------------------------------


def field(found: Iterable[Mapping[str, Any]], key: str, what: str) -> str:
    """The first item's text ``key``; :class:`RwsProtocolError` naming ``what`` when none has it."""
    for item in found:
        value = item.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
    raise _fail(f"no {key!r} in the {what} answer")


def integer(text: str, what: str) -> int:
    if not _INTEGER.match(text.strip()):
        raise _fail(f"{what} {text[:40]!r} is not an integer")
    return int(text.strip())


def number(text: str, what: str) -> float:
    stripped = text.strip()
    if not _NUMBER.match(stripped):
        raise _fail(f"{what} {text[:40]!r} is not a number")
    value = float(stripped)
    if not math.isfinite(value):
        raise _fail(f"{what} {text[:40]!r} is not finite")
    return value


# Typed answers -----------------------------------------------------------------------------


def controller_state(found: list[dict[str, Any]]) -> str:
    return field(found, "ctrlstate", "controller state").strip().lower()


def operation_mode(found: list[dict[str, Any]]) -> str:
    return field(found, "opmode", "operation mode").strip().upper()


def speed_ratio(found: list[dict[str, Any]]) -> float:
    """The speed ratio as a fraction (the controller says percent, 0..100)."""
    percent = number(field(found, "speedratio", "speed ratio"), "speed ratio")
    if not 0.0 <= percent <= 100.0:
        raise _fail(f"speed ratio {percent} % is outside 0..100")
    return percent / 100.0


def execution_state(found: list[dict[str, Any]]) -> ExecutionState:
    state = field(found, "ctrlexecstate", "RAPID execution").strip().lower()
    cycle = next((item["cycle"] for item in found if isinstance(item.get("cycle"), str)), "")
    return ExecutionState(state, cycle.strip().lower())


def system_info(found: list[dict[str, Any]]) -> SystemInfo:
    name = field(found, "name", "system")
    version = next((item[key] for item in found for key in ("rwversion", "rwversionname")
                    if isinstance(item.get(key), str)), "")
    system_id = next((item["sysid"] for item in found if isinstance(item.get("sysid"), str)), "")
    return SystemInfo(name, version, system_id)


def module_names(found: list[dict[str, Any]]) -> list[str]:
    names = []
    for item in found:
        name = item.get("name")
        if not isinstance(name, str):
            title = item.get("_title")
            name = title.rsplit("/", 1)[-1] if isinstance(title, str) else None
        if name:
            names.append(name)
    return names


def build_errors(found: list[dict[str, Any]]) -> list[BuildError]:
    errors = []
    for item in found:
        if not str(item.get("_type", "")).startswith("rap-builderr"):
            continue
        module = item.get("ModuleName", item.get("modulename", ""))
        error = item.get("error", "")
        errors.append(BuildError(module if isinstance(module, str) else "",
                                 _int_or_none(item.get("row")) or 0, _int_or_none(item.get("column")) or 0,
                                 error if isinstance(error, str) else str(error)))
    return errors


def signal(found: list[dict[str, Any]], path: str) -> Signal:
    """The signal at ``path`` in a signal answer; value by type (digital bool, analog float, group int)."""
    kind = next((item["type"] for item in found if isinstance(item.get("type"), str)), "").strip().upper()
    raw = field(found, "lvalue", f"signal {path}")
    name = next((item["name"] for item in found if isinstance(item.get("name"), str)), path.rsplit("/", 1)[-1])
    return Signal(name, path, kind, signal_value(kind, raw, path))


def signal_value(kind: str, raw: str, path: str = "signal") -> bool | float | int:
    if kind.startswith("A"):
        return number(raw, f"{path}'s value")
    value = integer(raw, f"{path}'s value")
    if kind.startswith("D"):
        if value not in (0, 1):
            raise _fail(f"digital {path} reads {value}, not 0 or 1")
        return bool(value)
    return value


def elog_entries(found: list[dict[str, Any]], domain: int) -> list[ElogEntry]:
    """Event log messages, by sequence number (oldest first); items that are no message are skipped."""
    entries = []
    for item in found:
        if not str(item.get("_type", "")).startswith("elog-message"):
            continue
        title = item.get("_title", "")
        seqnum = _int_or_none(item.get("seqnum"))
        if seqnum is None and isinstance(title, str):
            seqnum = _int_or_none(title.rstrip("/").rsplit("/", 1)[-1])
        code = _int_or_none(item.get("code"))
        if seqnum is None or code is None:
            raise _fail(f"an event log message without sequence number or code: {str(item)[:120]}")
        args = item.get("argv", [])
        values = tuple(str(arg.get("value", "")) for arg in args if isinstance(arg, dict)) \
            if isinstance(args, list) else ()

        def text(key: str, item: dict[str, Any] = item) -> str:
            value = item.get(key, "")
            return value if isinstance(value, str) else ""

        entries.append(ElogEntry(seqnum=seqnum, code=code, msgtype=_int_or_none(item.get("msgtype")) or 0,
                                 title=text("title"), description=text("desc"), causes=text("causes"),
                                 consequences=text("conseqs"), actions=text("actions"), timestamp=text("tstamp"),
                                 domain=domain, args=values[:64]))
    return sorted(entries, key=lambda entry: entry.seqnum)


def symbol_value(found: list[dict[str, Any]], name: str) -> str:
    return field(found, "value", f"RAPID symbol {name}")


def rmmp_status(found: list[dict[str, Any]]) -> str:
    """What became of a request for manual mode privileges: ``GRANTED``, ``PENDING``, ``DENIED``, ..."""
    return field(found, "status", "RMMP poll").strip().upper()


def subscription_events(text: str) -> list[Event]:
    """The events of one websocket message (XHTML in both dialects)."""
    events = []
    for item in xhtml_items(text):
        kind = str(item.get("_type", ""))
        resource = item["_links"].get("self", "") if isinstance(item.get("_links"), dict) else ""
        fields = {key: value for key, value in item.items() if isinstance(value, str) and not key.startswith("_")}
        if kind.startswith("pnl-ctrlstate"):
            events.append(Event("controller-state", resource, fields.get("ctrlstate", ""), fields))
        elif kind.startswith("rap-ctrlexecstate"):
            events.append(Event("execution", resource, fields.get("ctrlexecstate", ""), fields))
        elif kind.startswith("ios-signalstate"):
            events.append(Event("signal", resource, fields.get("lvalue", ""), fields))
        elif kind.startswith("elog-message"):
            seqnum = fields.get("seqnum") or resource.rstrip("/").rsplit("/", 1)[-1]
            events.append(Event("elog", resource, seqnum, fields))
        elif kind:
            events.append(Event("other", resource, "", {"type": kind, **fields}))
    return events


# RAPID values --------------------------------------------------------------------------------


def rapid_to_python(literal: str) -> Any:
    """A RAPID literal as Python: ``TRUE`` -> True, ``12`` -> 12, ``1.5`` -> 1.5, ``"a""b"`` ->
    ``a"b``; anything else (records, arrays) stays the literal text."""
    text = literal.strip()
    if text in ("TRUE", "FALSE"):
        return text == "TRUE"
    if _INTEGER.match(text):
        return int(text)
    if _NUMBER.match(text):
        return float(text)
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('""', '"').replace("\\\\", "\\")
    return literal


def python_to_rapid(value: Any) -> str:
    """A Python value as a RAPID literal: bool, int, finite float, str (a RAPID string), or a
    list/tuple of those (an array)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"RAPID has no literal for {value}")
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '""') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(python_to_rapid(item) for item in value) + "]"
    raise ValueError(f"no RAPID literal for a {type(value).__name__}; give its literal text")
