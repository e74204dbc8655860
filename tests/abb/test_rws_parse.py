"""The parsers read answers shaped as ABB documents them, in both dialects (rws_documents.py)."""

from __future__ import annotations

import pytest
from robohal_abb.rws import parse
from robohal_abb.rws.errors import RwsProtocolError
from robohal_abb.rws.values import BuildError

from . import rws_documents as doc


def test_controller_state_in_every_form():
    assert parse.controller_state(parse.items(doc.RW6_CTRLSTATE_XHTML)) == "motoron"
    assert parse.controller_state(parse.items(doc.RW6_CTRLSTATE_JSON, "application/json")) == "motoroff"
    assert parse.controller_state(parse.items(doc.RW7_CTRLSTATE, "application/hal+json;v=2.0")) == "motoroff"


def test_execution_operation_mode_and_speed_ratio():
    execution = parse.execution_state(parse.items(doc.RW6_EXECUTION_JSON))
    assert execution.running and execution.cycle == "forever"
    assert parse.operation_mode(parse.items(doc.RW6_OPMODE_JSON)) == "AUTO"
    assert parse.speed_ratio(parse.items(doc.RW6_SPEEDRATIO_JSON)) == 0.75


def test_signals_have_their_type_s_value():
    signal = parse.signal(parse.items(doc.RW6_SIGNAL_JSON), "Local/DRV_1/DO1")
    assert (signal.name, signal.type, signal.value, signal.output) == ("DO1", "DO", True, True)
    page = parse.items(doc.RW7_SIGNALS_PAGE)
    assert [item["_title"] for item in page] == ["Net/Dev/doGripper", "Net/Dev/diSensor"]
    assert parse.signal_value("AO", "2.5") == 2.5 and parse.signal_value("GO", "12") == 12
    with pytest.raises(RwsProtocolError):
        parse.signal_value("DO", "2")


def test_a_next_page_is_followed_on_the_same_controller_only():
    assert parse.next_page(doc.RW7_SIGNALS_PAGE) == "/rw/iosystem/signals?start=3&limit=3"
    elsewhere = b'{"_links": {"base": {"href": "https://x/rw/"}, "next": {"href": "https://evil.example/steal"}}}'
    assert parse.next_page(elsewhere) is None
    assert parse.next_page(doc.RW7_ELOG) is None


def test_event_log_messages_in_both_dialects():
    [rw7] = parse.elog_entries(parse.items(doc.RW7_ELOG), 0)
    assert (rw7.seqnum, rw7.code, rw7.severity, rw7.title) == (1, 10046, "info", "System reset")
    assert "original system" in rw7.description
    [rw6] = parse.elog_entries(parse.items(doc.RW6_ELOG_MESSAGE_XHTML), 0)
    assert (rw6.seqnum, rw6.code, rw6.msgtype, rw6.timestamp) == (8, 20573, 2, "2013-09-08 T 11:22:10")


def test_system_and_modules():
    info = parse.system_info(parse.items(doc.RW7_SYSTEM))
    assert (info.name, info.robotware) == ("IRB1600_6_120_3", "7.21.0+229")
    assert parse.module_names(parse.items(doc.RW7_MODULES)) == ["BASE", "MainModule"]


def test_build_errors():
    assert parse.build_errors(parse.items(doc.RW6_BUILD_ERRORS_XHTML)) == [
        BuildError("MainModule", 15, 8, "S:\"';'\""), BuildError("MainModule", 19, 8, "S:\"';'\"")]


def test_the_controller_s_own_error_code_and_message():
    code, message = parse.error_of(doc.RW6_ERROR_XHTML)
    assert code == -1073414146 and "rws_resource_rapid_symbol_data" in message
    assert parse.error_of(doc.RW6_ERROR_JSON) == (-1073445879, "Task NO_SUCH_TASK does not exist")
    code, message = parse.error_of(doc.RW7_TASK_NOT_FOUND)
    assert code == -1073445879 and "NO_SUCH_TASK does not exist" in message
    assert parse.error_of(b"") == (None, "")
    assert parse.error_of(b"<html>plain text</html>") == (None, "")


def test_rmmp_poll_and_subscription_links():
    assert parse.rmmp_status(parse.items(doc.RW6_RMMP_POLL_XHTML)) == "NO SUCH REQUEST"
    assert parse.xhtml_links(doc.RW6_SUBSCRIBED_XHTML.decode())["self"] == "ws://localhost/poll/4"


def test_subscription_events():
    [execution] = parse.subscription_events(doc.RW6_SUBSCRIBED_XHTML.decode())
    assert (execution.kind, execution.value, execution.resource) == ("execution", "stopped",
                                                                      "/rw/rapid/execution;ctrlexecstate")
    [elog] = parse.subscription_events(doc.ELOG_EVENT_XHTML)
    assert (elog.kind, elog.value) == ("elog", "15")
    [signal] = parse.subscription_events(doc.SIGNAL_EVENT_XHTML)
    assert (signal.kind, signal.value, signal.resource) == ("signal", "1", "/rw/iosystem/signals/Local/DRV_1/DO1;state")


@pytest.mark.parametrize(("literal", "value"), [("TRUE", True), ("FALSE", False), ("12", 12), ("-1.5", -1.5),
                                                 ("1E3", 1000.0), ('"a""b"', 'a"b'), ("[1,2,3]", "[1,2,3]")])
def test_rapid_literals_both_ways(literal, value):
    assert parse.rapid_to_python(literal) == value
    if not isinstance(value, str) or literal.startswith('"'):
        assert parse.rapid_to_python(parse.python_to_rapid(value)) == value


def test_values_without_a_rapid_literal_are_refused():
    with pytest.raises(ValueError):
        parse.python_to_rapid(float("nan"))
    with pytest.raises(ValueError):
        parse.python_to_rapid(object())


@pytest.mark.parametrize("body", [b"[]", b"{", b'{"state": 3}', b"\xff\xfe", b"[" * 100_000, b'{"state": [{"a": 1}]}'])
def test_what_is_not_rws_is_a_protocol_error(body):
    with pytest.raises(RwsProtocolError):
        parse.controller_state(parse.items(body))
