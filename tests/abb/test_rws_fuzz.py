"""Fuzzing the simulated RWS's request parsing (both dialects, in this process): whatever the path,
query, form body and headers, every answer is an HTTP status below 500, and the server goes on."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from robohal_abb.controller_model import ControllerModel
from robohal_abb.rws_server import RwsServer

PREFIXES = ["/rw/rapid/execution", "/rw/panel/ctrlstate", "/rw/panel/ctrl-state", "/rw/iosystem/signals/",
            "/rw/rapid/symbol/data/RAPID/T_ROB1/", "/rw/rapid/symbol/RAPID/T_ROB1/user/", "/rw/rapid/tasks/T_ROB1",
            "/rw/elog/0", "/rw/mastership", "/users/rmmp", "/fileservice/$HOME/", "/subscription", "/poll/",
            "/logout", "/"]
segment = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=24)
#: every resource either dialect serves, written out, so most requests reach a handler and its parsing
ROUTES = ["/rw/rapid/execution", "/rw/rapid/execution/start", "/rw/rapid/execution/stop",
          "/rw/rapid/execution/resetpp", "/rw/rapid/tasks", "/rw/rapid/tasks/T_ROB1", "/rw/rapid/tasks/T_ROB1/modules",
          "/rw/rapid/tasks/T_ROB1/loadmod", "/rw/rapid/tasks/T_ROB1/unloadmod", "/rw/rapid/modules",
          "/rw/rapid/symbol/data/RAPID/T_ROB1/reg1", "/rw/rapid/symbol/data/RAPID/T_ROB1/user/reg1",
          "/rw/rapid/symbol/RAPID/T_ROB1/user/reg1/data", "/rw/panel/ctrlstate", "/rw/panel/ctrl-state",
          "/rw/panel/opmode", "/rw/panel/speedratio", "/rw/iosystem/signals", "/rw/iosystem/signals/Local/DRV_1/DO1",
          "/rw/iosystem/signals/Local/DRV_1/aoFlow/set-value", "/rw/elog/0", "/rw/elog/0/1", "/rw/mastership",
          "/rw/mastership/edit/request", "/rw/mastership/rapid", "/users/rmmp", "/users/rmmp/poll", "/subscription",
          "/subscription/1", "/poll/1", "/fileservice/$HOME", "/fileservice/$HOME/a.mod", "/rw/system",
          "/rw/motionsystem/mechunits/ROB_1/jointtarget", "/logout", "/rw/rapid/tasks/T_ROB1/program/builderror",
          "/users/rmmp/cancel"]
#: RWS 1.0 names its verbs in the query: (path, action) pairs that reach its handlers
ACTIONS = [("/rw/rapid/execution", "start"), ("/rw/rapid/execution", "stop"), ("/rw/rapid/execution", "resetpp"),
           ("/rw/rapid/tasks/T_ROB1", "loadmod"), ("/rw/rapid/tasks/T_ROB1", "unloadmod"),
           ("/rw/panel/ctrlstate", "setctrlstate"), ("/rw/panel/speedratio", "setspeedratio"),
           ("/rw/iosystem/signals/Local/DRV_1/DO1", "set"), ("/rw/rapid/symbol/data/RAPID/T_ROB1/reg1", "set"),
           ("/rw/mastership", "request"), ("/rw/mastership/rapid", "release"), ("/users/rmmp", "cancel")]
paths = st.one_of(st.sampled_from([f"{path}?action={action}" for path, action in ACTIONS]), st.sampled_from(ROUTES), st.builds(lambda prefix, rest: prefix + rest, st.sampled_from(PREFIXES),
                                                     st.lists(segment, max_size=4).map("/".join)))
queries = st.dictionaries(st.sampled_from(["action", "json", "mastership", "start", "limit", "elogseqnum", "order",
                                           "task", "x"]),
                          st.one_of(st.sampled_from(["start", "stop", "resetpp", "set", "setctrlstate", "loadmod", "1",
                                                     "implicit", "-1", "99999999999"]), segment), max_size=4)
forms = st.one_of(st.binary(max_size=300),
                  st.dictionaries(st.sampled_from(["ctrl-state", "value", "lvalue", "modulepath", "module", "resources",
                                                   "1", "1-p", "speed-ratio", "privilege", "cycle", "regain"]),
                                  segment, max_size=6).map(lambda d: "&".join(f"{k}={v}" for k, v in d.items()).encode()))
headers = st.dictionaries(st.sampled_from(["Accept", "Content-Type", "Cookie", "Authorization", "Sec-WebSocket-Protocol"]),
                          st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=60), max_size=3)


@pytest.fixture(scope="module", params=[6, 7])
def server(request):
    model = ControllerModel()
    rws = RwsServer(model, request.param)
    rws.start()
    yield rws
    rws.stop()
    model.close()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(["GET", "POST", "POST", "PUT", "DELETE", "PATCH"]), path=paths, query=queries, body=forms,
       extra=headers, logged_in=st.booleans())
def test_any_request_gets_an_http_answer_and_no_server_error(server, method, path, query, body, extra, logged_in):
    # the controller's sessions are bounded (503 beyond): a fuzzed Cookie header opens one per
    # request, so each example starts from none, as a fresh controller
    server.run(server.sessions.drop_all)
    auth = httpx.DigestAuth("Default User", "robotics") if server.version == 6 else \
        httpx.BasicAuth("Default User", "robotics")
    accept = {"Accept": "application/hal+json;v=2.0"} if server.version == 7 else {}
    with httpx.Client(base_url=server.url, verify=False, timeout=10.0, auth=auth if logged_in else None) as client:
        try:
            path, _, action = path.partition("?action=")
            query = {**query, "action": action} if action else query
            request = client.build_request(method, path, params=query, content=body, headers={**accept, **extra})
        except (httpx.InvalidURL, UnicodeEncodeError, ValueError):
            return  # not a request a client can send
        try:
            answer = client.send(request)
        except httpx.LocalProtocolError:
            return  # the client would not send it (a header value HTTP does not allow)
        except httpx.RemoteProtocolError:
            answer = None  # the server closed an invalid request: no crash either
        if answer is not None:
            assert 100 <= answer.status_code < 500, (method, path, answer.status_code, answer.text[:200])
        assert client.get("/rw/panel/opmode", headers=accept).status_code in (200, 401)
    assert server.counters["errors_500"] == 0
    assert server.counters["requests"] > 0
