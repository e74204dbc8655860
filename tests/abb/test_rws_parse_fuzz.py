"""Fuzzing the RWS answer parsers: whatever bytes come back, each parser returns a value or raises
RwsProtocolError, nothing else (the client's callers rely on that)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from robohal_abb.rws import parse
from robohal_abb.rws.errors import RwsProtocolError

from . import rws_documents as doc

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TYPED = [parse.controller_state, parse.operation_mode, parse.speed_ratio, parse.execution_state, parse.system_info,
         parse.module_names, parse.build_errors, parse.rmmp_status, lambda found: parse.signal(found, "Local/D/S"),
         lambda found: parse.elog_entries(found, 0), lambda found: parse.symbol_value(found, "x")]

DOCUMENTS = [value for name, value in vars(doc).items() if name.isupper() and isinstance(value, bytes)]

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                             st.dictionaries(st.text(max_size=12), inner, max_size=5)),
                           max_leaves=30)
keys = st.sampled_from(["_type", "_title", "ctrlstate", "opmode", "speedratio", "ctrlexecstate", "cycle", "name",
                        "rwversion", "lvalue", "type", "code", "msgtype", "seqnum", "value", "status", "row", "column",
                        "ModuleName", "error", "argv", "title", "desc"])
items = st.lists(st.dictionaries(keys, json_values, max_size=6), max_size=5)
documents = st.fixed_dictionaries({}, optional={
    "state": st.one_of(items, json_values), "_embedded": st.fixed_dictionaries({}, optional={
        "_state": st.one_of(items, json_values), "resources": st.one_of(items, json_values),
        "status": json_values}), "status": json_values, "_links": json_values})


def parse_every_way(body: bytes) -> None:
    for content_type in ("", "application/hal+json;v=2.0", "application/xhtml+xml"):
        try:
            found = parse.items(body, content_type)
        except RwsProtocolError:
            continue
        for reader in TYPED:
            try:
                reader(found)
            except RwsProtocolError:
                pass
    parse.error_of(body)
    parse.next_page(body)
    text = body.decode("utf-8", "replace")
    try:
        parse.subscription_events(text)
        parse.xhtml_links(text)
    except RwsProtocolError:
        pass


@FUZZ
@given(st.binary(max_size=2048))
def test_arbitrary_bytes(body):
    parse_every_way(body)


@FUZZ
@given(documents)
def test_json_shaped_like_rws(document):
    parse_every_way(json.dumps(document).encode())


@FUZZ
@given(st.sampled_from(DOCUMENTS), st.data())
def test_documented_answers_cut_and_spliced(body, data):
    start = data.draw(st.integers(0, len(body)))
    end = data.draw(st.integers(start, len(body)))
    junk = data.draw(st.binary(max_size=40))
    parse_every_way(body[:start] + junk + body[end:])


markup = st.lists(st.one_of(
    st.sampled_from(["<li class=\"pnl-ctrlstate\" title=\"x\">", "</li>", "<span class=\"ctrlstate\">", "</span>",
                     "<div class=\"status\">", "</div>", "<span class=\"code\">", "<a href=\"/poll/1\" rel=\"self\"/>",
                     "<li class=\"elog-message-ev\">", "<li class=\"ios-signalstate-ev\">", "<![CDATA[", "<!--", "-->",
                     "<!DOCTYPE html", "&#", "&amp;", "<?xml ?>", "<", ">", "\"", "'"]),
    st.text(max_size=10)), max_size=40).map("".join)


@FUZZ
@given(markup)
def test_xhtml_like_markup(text):
    parse_every_way(text.encode("utf-8", "surrogatepass"))


@FUZZ
@given(st.text(max_size=40))
def test_rapid_literals(literal):
    parse.rapid_to_python(literal)
