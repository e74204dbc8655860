"""The two dialects of the simulated RWS as route tables over one controller (:mod:`.controller_model`).

Each route is (method, path pattern, ``action`` query value or None) -> handler. RWS 1.0
(RobotWare 6) names the verb with ``?action=VERB`` on the resource; RWS 2.0 (RobotWare 7) as a
path segment (``/rw/rapid/execution/start``), kept only where OmniCore kept the old form (the
speed ratio's ``?action=setspeedratio``). A path or verb the dialect does not have is a 404
(SYS_CTRL_E_UNRESOLVED_URL), so each refuses the other's spellings. Paths and fields: ABB's RWS
manual (RWS 1.0 pages), abb-robot-client (RWS 1.0), abb_librws's v1_0 and v2_0 clients, and the
research notes' table of both dialects.

Mastership (which domain an operation needs, and whether the session must hold it): RWS 1.0
takes RAPID mastership implicitly for start, stop and resetpp (abb-robot-client never asks for
it) but needs it held for loadmod/unloadmod (RWS manual: "Rapid Mastership Required") and for
setting RAPID data (RWS manual: 400 without it). RWS 2.0 needs edit mastership held, or
``?mastership=implicit``, for start, resetpp, loadmod, unloadmod, RAPID data and the speed ratio
(abb_librws v2_0 passes ``mastership=`` on those; OmniCore users report resetpp and the speed
ratio refused without it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from .controller_model import (
    E_INVALIDARG,
    E_NO_SUCH_REQUEST,
    E_REJECT,
    OK,
    S_RAPID_SYNTAX_ERROR,
    TASK,
    ControllerModel,
    ElogEntry,
    Refusal,
    Signal,
)
from .rws_render import Answer

#: RWS 2.0 names RWS 1.0's "rapid" mastership domain "edit" (abb_librws v2_0: edit, motion)
DOMAINS_7 = {"edit": "rapid", "motion": "motion"}
ELOG_PAGE = 50  # entries per page of RWS 2.0's HAL paging when the client names no limit (our choice)
START_FIELDS = ("regain", "execmode", "cycle", "condition", "stopatbp", "alltaskbytsp")  # RWS manual: all required


@dataclass
class Call:
    """One request as the handlers see it."""

    model: ControllerModel
    version: int
    session: str
    query: dict[str, str]
    form: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    origin: str = ""
    joints: Callable[[], list[float]] | None = None

    def implicit(self) -> bool:
        return self.version == 7 and self.query.get("mastership") == "implicit"

    def needs(self, field_name: str) -> str:
        value = self.form.get(field_name)
        if value is None:
            raise Refusal(400, E_INVALIDARG, f"Invalid input form data: {field_name} is missing")
        return value


Handler = Callable[..., Answer]


# Resources as both dialects list them ------------------------------------------------------------


def execution_item(model: ControllerModel) -> dict[str, Any]:
    return {"_type": "rap-execution", "_title": "execution", "ctrlexecstate": model.execution, "cycle": model.cycle}


def signal_item(signal: Signal, listing: bool = False) -> dict[str, Any]:
    return {"_type": "ios-signal-li" if listing else "ios-signal", "_title": signal.path, "name": signal.name,
            "type": signal.type, "category": "user", "lvalue": signal.lvalue, "lstate": "not simulated"}


def elog_item(entry: ElogEntry, version: int) -> dict[str, Any]:
    item: dict[str, Any] = {
        "_type": "elog-message-li", "_title": f"/rw/elog/0/{entry.seqnum}", "msgtype": str(entry.msgtype),
        "code": str(entry.code), "src-name": "robohal", "tstamp": entry.stamp, "title": entry.title,
        "desc": entry.desc, "conseqs": "", "causes": "", "actions": "", "argc": str(len(entry.args)),
        "argv": [{"type": "string", "value": arg} for arg in entry.args]}  # OmniCore elog: lower-case types
    if version == 7:
        item["_links"] = {"self": {"href": f"0/{entry.seqnum}?lang=en"}}
    return item


# Handlers shared by both dialects ----------------------------------------------------------------


def get_execution(call: Call) -> Answer:
    return Answer(items=[execution_item(call.model)], base="/rw/rapid/", title="rapid")


def start(call: Call) -> Answer:
    for name in START_FIELDS:
        call.needs(name)
    if call.form["execmode"] != "continue" or call.form["regain"] not in ("continue", "regain", "clear"):
        raise Refusal(400, E_REJECT, "only execmode=continue is simulated")
    call.model.check_mastership(call.session, "rapid", required=call.version == 7, implicit=call.implicit())
    call.model.start(call.form["cycle"])
    return Answer(status=204)


def stop(call: Call) -> Answer:
    if call.form.get("stopmode", "stop") not in ("stop", "cycle", "instr"):
        raise Refusal(400, E_INVALIDARG, "stopmode is stop, cycle or instr")
    if call.version == 7 and call.form.get("usetsp", "normal") not in ("normal", "alltsk", "alltask"):
        raise Refusal(400, E_INVALIDARG, "usetsp is normal or alltask")
    call.model.check_mastership(call.session, "rapid", required=False)
    call.model.stop()
    return Answer(status=204)


def resetpp(call: Call) -> Answer:
    call.model.check_mastership(call.session, "rapid", required=call.version == 7, implicit=call.implicit())
    call.model.reset_pp()
    return Answer(status=204)


def get_tasks(call: Call) -> Answer:
    model = call.model
    state = "started" if model.execution == "running" else ("ready" if model.program else "stopped")
    item = {"_type": "rap-task-li", "_title": TASK, "name": TASK, "type": "normal", "taskstate": "linked",
            "excstate": state, "active": "On", "motiontask": "TRUE"}
    return Answer(items=[item], listing=True, base="/rw/rapid/", title="rapid")


def get_task(call: Call, task: str) -> Answer:
    call.model.module_list(task)  # an unknown task: 404
    answer = get_tasks(call)
    answer.items[0]["_type"] = "rap-task"
    answer.listing = False
    return answer


def activate(call: Call, task: str) -> Answer:
    call.model.module_list(task)
    return Answer(status=204)  # T_ROB1 is always active (the only motion task)


def deactivate(call: Call, task: str) -> Answer:
    call.model.module_list(task)
    raise Refusal(400, E_REJECT, f"{TASK} is the controller's only motion task")


def get_modules(call: Call, task: str) -> Answer:
    items = [{"_type": "rap-module-info-li", "_title": f"{TASK}/{m.name}", "name": m.name, "type": m.kind}
             for m in call.model.module_list(task)]
    return Answer(items=items, listing=call.version == 6, base="/rw/rapid/", title="rapid")


def get_modules_6(call: Call) -> Answer:
    return get_modules(call, call.query.get("task", TASK))


def loadmod(call: Call, task: str) -> Answer:
    path = call.needs("modulepath")
    replace = call.form.get("replace", "false").lower()
    if replace not in ("true", "false"):
        raise Refusal(400, E_INVALIDARG, "replace is true or false")
    call.model.check_mastership(call.session, "rapid", required=True, implicit=call.implicit())
    module = call.model.load_module(task, path, replace == "true")
    if module.errors:
        # loaded, with errors (return codes: SYS_CTRL_S_RAPID_SYNTAX_ERROR is a success code)
        return Answer(status=200, code=S_RAPID_SYNTAX_ERROR, base="/rw/rapid/", title="rapid",
                      message=f"module {module.name} loaded with errors: " + "; ".join(map(str, module.errors[:10])))
    return Answer(status=204)


def build_errors(call: Call, task: str) -> Answer:
    """``/rw/rapid/tasks/T/program/builderror``: one ``rap-builderrs`` per error with ModuleName, row,
    column and error (ABB's RWS 1.0 reference example; public OmniCore clients read the same on
    RobotWare 7). Paging is not simulated: a module keeps at most MAX_ERRORS."""
    items = [{"_type": "rap-builderrs", "_title": "builderrs", "ModuleName": name, "row": str(error.row),
              "column": str(error.column), "error": error.message} for name, error in call.model.build_errors(task)]
    return Answer(items=items, listing=True, base="/rw/rapid/", title="rapid")


def unloadmod(call: Call, task: str) -> Answer:
    call.model.check_mastership(call.session, "rapid", required=True, implicit=call.implicit())
    call.model.unload_module(task, call.needs("module"))
    return Answer(status=204)


def _symbol_answer(call: Call, task: str, module: str | None, name: str) -> Answer:
    owner, symbol = call.model.find_symbol(task, module, name)
    item = {"_type": "rap-data", "_title": f"RAPID/{TASK}/{owner.name}/{symbol.name}", "value": symbol.value}
    return Answer(items=[item], base="/rw/rapid/symbol/", title="rapid")


def _set_symbol(call: Call, task: str, module: str | None, name: str) -> Answer:
    literal = call.needs("value")
    call.model.find_symbol(task, module, name)  # unknown: 404 before mastership is asked about
    if call.version == 6 and call.model.masters.get("rapid") != call.session:
        # RWS manual's example: a RAPID datum set without mastership is a 400 with SYS_CTRL_E_FAIL
        raise Refusal(400, -1073414146, "the operation needs RAPID mastership; request it first")
    call.model.check_mastership(call.session, "rapid", required=True, implicit=call.implicit())
    call.model.write_symbol(task, module, name, literal)
    return Answer(status=204)


def get_symbol_6(call: Call, rest: str) -> Answer:
    task, module, name = _symbol_path(rest)
    return _symbol_answer(call, task, module, name)


def set_symbol_6(call: Call, rest: str) -> Answer:
    task, module, name = _symbol_path(rest)
    return _set_symbol(call, task, module, name)


def _symbol_path(rest: str) -> tuple[str, str | None, str]:
    parts = [unquote(part) for part in rest.split("/")]
    if len(parts) == 2:
        return parts[0], None, parts[1]
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    raise Refusal(404, E_INVALIDARG, "a RAPID datum is TASK/NAME or TASK/MODULE/NAME")


def get_symbol_7(call: Call, task: str, module: str, name: str) -> Answer:
    return _symbol_answer(call, task, module, name)


def set_symbol_7(call: Call, task: str, module: str, name: str) -> Answer:
    return _set_symbol(call, task, module, name)


def get_ctrlstate(call: Call) -> Answer:
    title = "ctrl-state" if call.version == 7 else "ctrlstate"
    return Answer(items=[{"_type": "pnl-ctrlstate", "_title": title, "ctrlstate": call.model.ctrlstate}],
                  base=f"/rw/panel/{title}/", title="panel")


def set_ctrlstate(call: Call) -> Answer:
    state = call.needs("ctrl-state")
    if state not in ("motoron", "motoroff"):
        raise Refusal(400, E_INVALIDARG, "ctrl-state is motoron or motoroff")
    call.model.set_motors(state == "motoron")
    return Answer(status=204)


def get_opmode(call: Call) -> Answer:
    return Answer(items=[{"_type": "pnl-opmode", "_title": "opmode", "opmode": call.model.opmode}],
                  base="/rw/panel/opmode/", title="panel")


def get_speedratio(call: Call) -> Answer:
    item = {"_type": "pnl-speedratio", "_title": "speedratio", "speedratio": str(call.model.speed_ratio)}
    return Answer(items=[item], base="/rw/panel/speedratio/", title="panel")


def set_speedratio(call: Call) -> Answer:
    ratio = call.needs("speed-ratio")
    call.model.check_mastership(call.session, "rapid", required=call.version == 7, implicit=call.implicit())
    call.model.set_speed_ratio(ratio)
    return Answer(status=204)


def get_signals(call: Call) -> Answer:
    with call.model.lock:
        items = [signal_item(signal, listing=True) for signal in call.model.signals.values()]
    return Answer(items=items, listing=True, base="/rw/iosystem/", title="iosystem")


def get_signal(call: Call, path: str) -> Answer:
    signal = call.model.signal(unquote(path))
    return Answer(items=[signal_item(signal)], base="/rw/iosystem/signals/", title="iosystem")


def set_signal(call: Call, path: str) -> Answer:
    call.model.set_signal(unquote(path), call.needs("lvalue"))
    return Answer(status=204)


def get_elog(call: Call, domain: str) -> Answer:
    """RWS 1.0: ``elogseqnum=N`` starts at N, ``order=fifo|lifo`` (RWS manual; fifo when not named is
    our choice). RWS 2.0 adds HAL paging ``start``/``limit`` with a ``next`` link (OmniCore capture)."""
    if domain != "0":
        raise Refusal(404, E_INVALIDARG, f"elog domain {domain}: this controller logs to domain 0")
    order = call.query.get("order", "fifo")
    if order not in ("fifo", "lifo"):
        raise Refusal(400, E_INVALIDARG, "order is fifo or lifo")
    since = _whole(call.query.get("elogseqnum"), "elogseqnum")
    entries = call.model.elog_entries(since, newest_first=order == "lifo")
    answer = Answer(listing=True, base="/rw/elog/", title="elog")
    if call.version == 7:
        first = _whole(call.query.get("start"), "start") or 0
        limit = _whole(call.query.get("limit"), "limit") or ELOG_PAGE
        if limit <= 0:
            raise Refusal(400, E_INVALIDARG, "limit is at least 1")
        if first + limit < len(entries):
            # "&amp;" as an OmniCore writes it in HAL links (a list page captured by a public client)
            answer.next_link = f"0?start={first + limit}&amp;limit={limit}"
        entries = entries[first:first + limit]
    answer.items = [elog_item(entry, call.version) for entry in entries]
    return answer


def get_elog_entry(call: Call, domain: str, seqnum: str) -> Answer:
    wanted = _whole(seqnum, "sequence number")
    for entry in call.model.elog_entries(wanted):
        if entry.seqnum == wanted and domain == "0":
            item = elog_item(entry, call.version)
            item["_type"] = "elog-message"
            return Answer(items=[item], base="/rw/elog/", title="elog")
    raise Refusal(404, E_INVALIDARG, f"no elog message {domain}/{seqnum}")


def _whole(text: str | None, name: str) -> int | None:
    if text is None:
        return None
    if not text.isdigit() or len(text) > 9:
        raise Refusal(400, E_INVALIDARG, f"{name} is a whole number")
    return int(text)


def _mastership_item(call: Call, domain: str, shown: str) -> dict[str, Any]:
    holder = call.model.masters.get(domain)
    return {"_type": "msh-resource", "_title": shown, "mastership": "nomaster" if holder is None else "remote",
            "mastershipheldbyme": "TRUE" if holder == call.session else "FALSE"}


def get_masterships(call: Call) -> Answer:
    shown = DOMAINS_7 if call.version == 7 else {d: d for d in ("cfg", "motion", "rapid")}
    return Answer(items=[_mastership_item(call, domain, name) for name, domain in shown.items()], listing=True,
                  base="/rw/mastership/", title="mastership")


def get_mastership(call: Call, name: str) -> Answer:
    domain = _domain(call, name)
    return Answer(items=[_mastership_item(call, domain, name)], base=f"/rw/mastership/{name}/", title="mastership")


def _domain(call: Call, name: str) -> str:
    domains = DOMAINS_7 if call.version == 7 else {d: d for d in ("cfg", "motion", "rapid")}
    if name not in domains:
        raise Refusal(404, E_INVALIDARG, f"no mastership domain {name}")
    return domains[name]


def mastership(call: Call, name: str | None, verb: str) -> Answer:
    domains = [_domain(call, name)] if name is not None else \
        (list(DOMAINS_7.values()) if call.version == 7 else ["cfg", "motion", "rapid"])
    if verb == "request":
        # all or nothing: a domain held by another refuses the whole request
        for domain in domains:
            holder = call.model.masters.get(domain)
            if holder is not None and holder != call.session:
                call.model.request_mastership(call.session, domain)  # raises the refusal
        for domain in domains:
            call.model.request_mastership(call.session, domain)
    else:
        for domain in domains:
            call.model.release_mastership(call.session, domain)
    return Answer(status=204)


def rmmp_request(call: Call) -> Answer:
    call.model.request_rmmp(call.session, call.needs("privilege"))
    return Answer(status=202 if call.model.rmmp_state(call.session) == "pending" else 204)


def rmmp_state(call: Call) -> Answer:
    """RWS manual (Get RMMP state): ``privilege`` none, pending modify, modify or exec, and
    ``rmmpheldbyme`` true or false; who the user is (userid, alias, ...) is not simulated."""
    state = call.model.rmmp_state(call.session)
    privilege = {"granted": "modify", "pending": "pending modify"}.get(state or "", "none")
    item = {"_type": "user-rmmp", "_title": "state", "privilege": privilege,
            "rmmpheldbyme": "true" if state == "granted" else "false"}
    return Answer(items=[item], base="/users/rmmp/", title="users")


def rmmp_poll(call: Call) -> Answer:
    """RWS manual (Poll for RMMP grant status): ``status`` with the controller's ``code``; without
    a request "NO SUCH REQUEST" (the manual's example, with its code). GRANTED and PENDING are what
    abb-robot-client waits for; REJECTED for a denied request is our choice."""
    state = call.model.rmmp_state(call.session, poll=True)
    status = {"granted": "GRANTED", "pending": "PENDING", "denied": "REJECTED"}.get(state or "", "NO SUCH REQUEST")
    item = {"_type": "user-rmmp-poll", "_title": "state", "code": str(OK if state else E_NO_SUCH_REQUEST),
            "status": status}
    return Answer(items=[item], base="/users/rmmp/poll/", title="users")


def rmmp_cancel(call: Call) -> Answer:
    """Withdraw this session's RMMP request or privilege (our choice of spelling: each dialect's verb
    form on /users/rmmp; we found no page for it)."""
    call.model.cancel_rmmp(call.session)
    return Answer(status=204)


def get_jointtarget(call: Call, unit: str) -> Answer:
    if unit != "ROB_1" or call.joints is None:
        raise Refusal(404, E_INVALIDARG, f"no mechanical unit {unit}")
    item: dict[str, Any] = {"_type": "ms-jointtarget", "_title": unit}
    item.update({f"rax_{i + 1}": f"{value:.4f}" for i, value in enumerate(call.joints())})
    item.update({f"eax_{axis}": "9E+09" for axis in "abcdef"})
    return Answer(items=[item], base=f"/rw/motionsystem/mechunits/{unit}/jointtarget/", title="motionsystem")


def get_system(call: Call) -> Answer:
    version = "6.15.00" if call.version == 6 else "7.15.0"  # our figures: recent releases of each
    item = {"_type": "sys-system", "_title": "system", "name": "robohal-sim", "rwversion": version,
            "major": version.split(".")[0], "minor": version.split(".")[1]}
    return Answer(items=[item], base="/rw/system/", title="system")


# The route tables ------------------------------------------------------------------------------

_SEGMENT = r"([^/;]+)"
_TASK_PATH = r"/rw/rapid/tasks/" + _SEGMENT


def _routes(table: list[tuple[str, str, str | None, Handler]]) -> list[tuple[str, re.Pattern[str], str | None, Handler]]:
    return [(method, re.compile(pattern + r"\Z"), action, handler) for method, pattern, action, handler in table]


RW6_ROUTES = _routes([
    ("GET", r"/rw/rapid/execution", None, get_execution),
    ("POST", r"/rw/rapid/execution", "start", start),
    ("POST", r"/rw/rapid/execution", "stop", stop),
    ("POST", r"/rw/rapid/execution", "resetpp", resetpp),
    ("GET", r"/rw/rapid/tasks", None, get_tasks),
    ("GET", _TASK_PATH, None, get_task),
    ("POST", _TASK_PATH, "activate", activate),
    ("POST", _TASK_PATH, "deactivate", deactivate),
    ("POST", _TASK_PATH, "loadmod", loadmod),
    ("POST", _TASK_PATH, "unloadmod", unloadmod),
    ("GET", _TASK_PATH + "/program/builderror", None, build_errors),
    ("GET", r"/rw/rapid/modules", None, get_modules_6),
    ("GET", r"/rw/rapid/symbol/data/RAPID/([^;]+)", None, get_symbol_6),
    ("POST", r"/rw/rapid/symbol/data/RAPID/([^;]+)", "set", set_symbol_6),
    ("GET", r"/rw/panel/ctrlstate", None, get_ctrlstate),
    ("POST", r"/rw/panel/ctrlstate", "setctrlstate", set_ctrlstate),
    ("GET", r"/rw/panel/opmode", None, get_opmode),
    ("GET", r"/rw/panel/speedratio", None, get_speedratio),
    ("POST", r"/rw/panel/speedratio", "setspeedratio", set_speedratio),
    ("GET", r"/rw/iosystem/signals", None, get_signals),
    ("GET", r"/rw/iosystem/signals/([^;]+)", None, get_signal),
    ("POST", r"/rw/iosystem/signals/([^;]+)", "set", set_signal),
    ("GET", r"/rw/elog/" + _SEGMENT, None, get_elog),
    ("GET", r"/rw/elog/" + _SEGMENT + "/" + _SEGMENT, None, get_elog_entry),
    ("GET", r"/rw/mastership", None, get_masterships),
    ("POST", r"/rw/mastership", "request", lambda call: mastership(call, None, "request")),
    ("POST", r"/rw/mastership", "release", lambda call: mastership(call, None, "release")),
    ("GET", r"/rw/mastership/" + _SEGMENT, None, get_mastership),
    ("POST", r"/rw/mastership/" + _SEGMENT, "request", lambda call, name: mastership(call, name, "request")),
    ("POST", r"/rw/mastership/" + _SEGMENT, "release", lambda call, name: mastership(call, name, "release")),
    ("POST", r"/users/rmmp", None, rmmp_request),
    ("POST", r"/users/rmmp", "cancel", rmmp_cancel),
    ("GET", r"/users/rmmp", None, rmmp_state),
    ("GET", r"/users/rmmp/poll", None, rmmp_poll),
    ("GET", r"/rw/motionsystem/mechunits/" + _SEGMENT + "/jointtarget", None, get_jointtarget),
    ("GET", r"/rw/system", None, get_system),
])

RW7_ROUTES = _routes([
    ("GET", r"/rw/rapid/execution", None, get_execution),
    ("POST", r"/rw/rapid/execution/start", None, start),
    ("POST", r"/rw/rapid/execution/stop", None, stop),
    ("POST", r"/rw/rapid/execution/resetpp", None, resetpp),
    ("GET", r"/rw/rapid/tasks", None, get_tasks),
    ("GET", _TASK_PATH, None, get_task),
    ("GET", _TASK_PATH + "/modules", None, get_modules),
    ("POST", _TASK_PATH + "/activate", None, activate),
    ("POST", _TASK_PATH + "/deactivate", None, deactivate),
    ("POST", _TASK_PATH + "/loadmod", None, loadmod),
    ("POST", _TASK_PATH + "/unloadmod", None, unloadmod),
    ("GET", _TASK_PATH + "/program/builderror", None, build_errors),
    ("GET", r"/rw/rapid/symbol/RAPID/" + _SEGMENT + "/" + _SEGMENT + "/" + _SEGMENT + "/data", None, get_symbol_7),
    ("POST", r"/rw/rapid/symbol/RAPID/" + _SEGMENT + "/" + _SEGMENT + "/" + _SEGMENT + "/data", None, set_symbol_7),
    ("GET", r"/rw/panel/ctrl-state", None, get_ctrlstate),
    ("POST", r"/rw/panel/ctrl-state", None, set_ctrlstate),
    ("GET", r"/rw/panel/opmode", None, get_opmode),
    ("GET", r"/rw/panel/speedratio", None, get_speedratio),
    ("POST", r"/rw/panel/speedratio", "setspeedratio", set_speedratio),  # OmniCore kept RWS 1.0's form here
    ("GET", r"/rw/iosystem/signals", None, get_signals),
    ("GET", r"/rw/iosystem/signals/([^;]+?)", None, get_signal),
    ("POST", r"/rw/iosystem/signals/([^;]+)/set-value", None, set_signal),
    ("GET", r"/rw/elog/" + _SEGMENT, None, get_elog),
    ("GET", r"/rw/elog/" + _SEGMENT + "/" + _SEGMENT, None, get_elog_entry),
    ("GET", r"/rw/mastership", None, get_masterships),
    ("POST", r"/rw/mastership/request", None, lambda call: mastership(call, None, "request")),
    ("POST", r"/rw/mastership/release", None, lambda call: mastership(call, None, "release")),
    ("GET", r"/rw/mastership/" + _SEGMENT, None, get_mastership),
    ("POST", r"/rw/mastership/" + _SEGMENT + "/request", None, lambda call, name: mastership(call, name, "request")),
    ("POST", r"/rw/mastership/" + _SEGMENT + "/release", None, lambda call, name: mastership(call, name, "release")),
    ("POST", r"/users/rmmp", None, rmmp_request),
    ("POST", r"/users/rmmp/cancel", None, rmmp_cancel),
    ("GET", r"/users/rmmp", None, rmmp_state),
    ("GET", r"/users/rmmp/poll", None, rmmp_poll),
    ("GET", r"/rw/motionsystem/mechunits/" + _SEGMENT + "/jointtarget", None, get_jointtarget),
    ("GET", r"/rw/system", None, get_system),
])


def find_route(version: int, method: str, path: str, action: str | None) -> tuple[Handler, tuple[str, ...]] | None:
    """The handler and its path arguments, or None: not a resource of this dialect. A GET with an
    action (``?action=show``) is not simulated."""
    table = RW6_ROUTES if version == 6 else RW7_ROUTES
    for route_method, pattern, route_action, handler in table:
        if route_method != method or route_action != action:
            continue
        match = pattern.match(path)
        if match is not None:
            return handler, match.groups()
    return None


# Subscribable resources -------------------------------------------------------------------------


def subscription_target(model: ControllerModel, version: int, uri: str) -> tuple[str, str | None]:
    """(kind, key) of a subscription resource URI in this dialect (RWS manual's subscribe pages;
    abb-robot-client's and abb_librws's resource strings); :class:`Refusal` for anything else."""
    panel = "/rw/panel/ctrl-state" if version == 7 else "/rw/panel/ctrlstate"
    fixed = {panel: "ctrlstate", "/rw/panel/opmode": "opmode", "/rw/panel/speedratio": "speedratio",
             "/rw/rapid/execution;ctrlexecstate": "execution", "/rw/elog/0": "elog"}
    if uri in fixed:
        return fixed[uri], None
    if uri.startswith("/rw/iosystem/signals/") and uri.endswith(";state"):
        return "signal", model.signal(unquote(uri[len("/rw/iosystem/signals/"):-len(";state")])).path
    if version == 6 and uri.startswith("/rw/rapid/symbol/data/RAPID/") and uri.endswith(";value"):
        task, module, name = _symbol_path(uri[len("/rw/rapid/symbol/data/RAPID/"):-len(";value")])
    elif version == 7 and uri.startswith("/rw/rapid/symbol/RAPID/") and uri.endswith("/data;value"):
        parts = uri[len("/rw/rapid/symbol/RAPID/"):-len("/data;value")].split("/")
        if len(parts) != 3:
            raise Refusal(400, E_INVALIDARG, f"{uri} is not a RAPID datum")
        task, module, name = (unquote(part) for part in parts)
    else:
        raise Refusal(400, E_INVALIDARG, f"{uri[:80]} is not a resource one can subscribe to here")
    owner, symbol = model.find_symbol(task, module, name)
    return "symbol", f"{owner.name}/{symbol.name}"


def event_item(model: ControllerModel, kind: str, key: Any) -> dict[str, Any] | None:
    """The event ``<li>`` of a change (RWS manual's subscription samples; abb-robot-client's classes)."""
    with model.lock:
        if kind == "ctrlstate":
            return {"_type": "pnl-ctrlstate-ev", "_title": "ctrlstate", "ctrlstate": model.ctrlstate}
        if kind == "opmode":
            return {"_type": "pnl-opmode-ev", "_title": "opmode", "opmode": model.opmode}
        if kind == "speedratio":
            return {"_type": "pnl-speedratio-ev", "_title": "speedratio", "speedratio": str(model.speed_ratio)}
        if kind == "execution":
            return {"_type": "rap-ctrlexecstate-ev", "_title": "ctrlexecstate", "ctrlexecstate": model.execution}
        if kind == "signal":
            signal = model.signals[key]
            return {"_type": "ios-signalstate-ev", "_title": signal.path, "lvalue": signal.lvalue,
                    "lstate": "not simulated"}
        if kind == "elog":
            return {"_type": "elog-message-ev", "_title": "message", "seqnum": str(key)}
        if kind == "symbol":
            module, name = key.split("/", 1)
            found = model.modules.get(module.lower())
            symbol = found.symbols.get(name.lower()) if found is not None else None
            if symbol is None:
                return None
            return {"_type": "rap-data", "_title": key, "value": symbol.value}
    return None
