"""The two dialects of Robot Web Services: the one place that knows how each spells a call.

RWS 1.0 (RobotWare 6, IRC5): HTTP, Digest authentication, session cookies, JSON on request with
``?json=1``, a verb as ``?action=VERB`` on the resource, plain form bodies, websocket
subprotocol ``robapi2_subscription``.

RWS 2.0 (RobotWare 7, OmniCore): HTTPS with the controller's self-signed certificate, Basic
authentication, ``Accept: application/hal+json;v=2.0``, the verb as a path segment, form bodies
as ``application/x-www-form-urlencoded;v=2.0`` (a controller answers 406 or 415 without the
``;v=2.0``), websocket subprotocol ``rws_subscription``; some resources renamed
(``ctrlstate`` -> ``ctrl-state``, RAPID data under ``.../symbol/RAPID/...../data``).

Sources: ABB's RWS 1.0 reference (developercenter.robotstudio.com/api/rwsApi) and RWS 2.0 API
files (developercenter.robotstudio.com/api/RWS), and the public clients' use of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

Request = tuple[str, dict[str, str]]  # a path and its query parameters


def _segment(text: str) -> str:
    """One path segment of a name a user gave (a signal, a task): nothing in it can reach another resource."""
    if not text or text in (".", "..") or "/" in text or any(ord(c) < 32 for c in text):
        raise ValueError(f"{text!r} is not a name on the controller")
    return quote(text, safe="$-_.~")


def _path(text: str) -> str:
    """A slash-separated name (``Local/DRV_1/DO1``, ``$HOME/x.mod``), each segment checked."""
    return "/".join(_segment(part) for part in text.strip("/").split("/"))


@dataclass(frozen=True)
class Dialect:
    robotware: int  # 6 or 7
    name: str
    auth: str  # "digest" or "basic"
    accept: str  # the Accept header of every call ("" for none)
    form: str  # the Content-Type of form bodies
    text_upload: str  # the Content-Type of a file upload
    file_accept: str  # the Accept header of file-service calls ("" for the dialect's own)
    subprotocol: str  # the websocket subprotocol of subscriptions
    json_query: bool  # add json=1 to every call (RWS 1.0)
    verb_in_path: bool  # POST .../start rather than ...?action=start
    ctrlstate: str  # the controller-state resource

    def query(self, params: dict[str, str] | None = None) -> dict[str, str]:
        merged = dict(params or {})
        if self.json_query:
            merged["json"] = "1"
        return merged

    def action(self, resource: str, verb: str, params: dict[str, str] | None = None) -> Request:
        """A verb on a resource: ``POST /rw/rapid/execution?action=start`` (RWS 1.0) or
        ``POST /rw/rapid/execution/start`` (RWS 2.0)."""
        if self.verb_in_path:
            return f"{resource}/{verb}", self.query(params)
        return resource, self.query({"action": verb, **(params or {})})

    # The resources ---------------------------------------------------------------------------

    def system(self) -> Request:
        return "/rw/system", self.query()

    def controller_state(self) -> Request:
        return self.ctrlstate, self.query()

    def set_controller_state(self) -> Request:
        if self.verb_in_path:  # RWS 2.0: POST to the resource itself
            return self.ctrlstate, self.query()
        return self.action(self.ctrlstate, "setctrlstate")

    def operation_mode(self) -> Request:
        return "/rw/panel/opmode", self.query()

    def speed_ratio(self) -> Request:
        return "/rw/panel/speedratio", self.query()

    def set_speed_ratio(self) -> Request:
        # RWS 2.0 kept RWS 1.0's ?action= form here (abb_librws' RWS 2.0 client; the simulator agrees)
        return "/rw/panel/speedratio", self.query({"action": "setspeedratio"})

    def execution(self) -> Request:
        return "/rw/rapid/execution", self.query()

    def execution_verb(self, verb: str) -> Request:
        """``start``, ``stop`` or ``resetpp``."""
        return self.action("/rw/rapid/execution", verb)

    def mastership(self, domain: str, verb: str) -> Request:
        """``request`` or ``release`` mastership of ``edit`` (RAPID and configuration) or ``motion``."""
        if domain not in ("edit", "motion"):
            raise ValueError(f"mastership domain {domain!r}: edit or motion")
        # RWS 1.0 names the RAPID domain where RWS 2.0 has edit
        name = domain if self.robotware >= 7 else {"edit": "rapid", "motion": "motion"}[domain]
        return self.action(f"/rw/mastership/{name}", verb)

    def rmmp(self) -> Request:
        return "/users/rmmp", self.query()

    def rmmp_poll(self) -> Request:
        return "/users/rmmp/poll", self.query()

    def rmmp_cancel(self) -> Request:
        return self.action("/users/rmmp", "cancel")

    def file(self, path: str) -> str:
        return f"/fileservice/{_path(path)}"

    def modules(self, task: str) -> Request:
        if self.verb_in_path:
            return f"/rw/rapid/tasks/{_segment(task)}/modules", self.query()
        return "/rw/rapid/modules", self.query({"task": task})

    def task_verb(self, task: str, verb: str) -> Request:
        """``loadmod`` or ``unloadmod`` on a task."""
        return self.action(f"/rw/rapid/tasks/{_segment(task)}", verb)

    def build_errors(self, task: str) -> Request:
        return f"/rw/rapid/tasks/{_segment(task)}/program/builderror", self.query()

    def symbol(self, task: str, module: str, name: str) -> Request:
        if self.verb_in_path:
            return f"/rw/rapid/symbol/RAPID/{_segment(task)}/{_segment(module)}/{_segment(name)}/data", self.query()
        return f"/rw/rapid/symbol/data/RAPID/{_segment(task)}/{_segment(module)}/{_segment(name)}", self.query()

    def set_symbol(self, task: str, module: str, name: str) -> Request:
        path, params = self.symbol(task, module, name)
        if self.verb_in_path:
            return path, params
        return path, {**params, "action": "set"}

    def signal(self, path: str) -> Request:
        return f"/rw/iosystem/signals/{_path(path)}", self.query()

    def set_signal(self, path: str) -> Request:
        return self.action(f"/rw/iosystem/signals/{_path(path)}", "set-value" if self.verb_in_path else "set")

    def signals(self, params: dict[str, str] | None = None) -> Request:
        return "/rw/iosystem/signals", self.query(params)

    def elog(self, domain: int, params: dict[str, str] | None = None) -> Request:
        return f"/rw/elog/{int(domain)}", self.query({"lang": "en", **(params or {})})

    def subscription(self) -> Request:
        return "/subscription", self.query()

    def logout(self) -> Request:
        return "/logout", self.query()

    # What a subscription names -------------------------------------------------------------------

    def watch_controller_state(self) -> str:
        return self.ctrlstate

    def watch_execution(self) -> str:
        return "/rw/rapid/execution;ctrlexecstate"

    def watch_signal(self, path: str) -> str:
        return f"/rw/iosystem/signals/{_path(path)};state"

    def watch_elog(self, domain: int = 0) -> str:
        return f"/rw/elog/{int(domain)}"


RWS1 = Dialect(
    robotware=6, name="RWS 1.0 (RobotWare 6)", auth="digest", accept="", form="application/x-www-form-urlencoded",
    text_upload="text/plain", file_accept="", subprotocol="robapi2_subscription", json_query=True, verb_in_path=False,
    ctrlstate="/rw/panel/ctrlstate")

RWS2 = Dialect(
    robotware=7, name="RWS 2.0 (RobotWare 7)", auth="basic", accept="application/hal+json;v=2.0",
    # files are no HAL resources: a public RWS 2.0 client captured from OmniCore reads them with XHTML's type
    form="application/x-www-form-urlencoded;v=2.0", text_upload="text/plain;v=2.0",
    file_accept="application/xhtml+xml;v=2.0", subprotocol="rws_subscription",
    json_query=False, verb_in_path=True, ctrlstate="/rw/panel/ctrl-state")

DIALECTS = {6: RWS1, 7: RWS2}


def dialect(robotware: int | str) -> Dialect:
    """The dialect of RobotWare ``6`` or ``7``."""
    try:
        return DIALECTS[int(robotware)]
    except (KeyError, ValueError):
        raise ValueError(f"RWS dialect {robotware!r}: 6 (RobotWare 6, RWS 1.0) or 7 (RobotWare 7, RWS 2.0)") from None
