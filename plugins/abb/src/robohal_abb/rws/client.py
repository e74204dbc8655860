"""``RwsClient``: one client for a controller's Robot Web Services, RobotWare 6 or 7.

    with RwsClient("https://192.168.125.1") as rws:      # dialect detected, certificate pinned on first use
        print(rws.controller_state(), rws.operation_mode(), rws.execution())
        rws.motors(True)
        rws.start()

The dialect comes from the controller itself when not named: an unauthenticated ``GET /rw/system``
is answered with a Digest challenge by RobotWare 6 and a Basic one by RobotWare 7, so the probe
sends no credentials at all. Credentials come from :func:`robohal.net.credentials.credentials_for`
(service ``abb-rws``; ABB's documented defaults last); over plain HTTP they go only to a RobotWare 6
controller, as a Digest (never the password itself), and a RobotWare 7 controller is refused
there. HTTPS is verified against the controller's pinned certificate (:mod:`robohal.net.tls`).

Every call has a deadline (``timeout``, 5 s by default; uploads and module loads 30 s): a
controller that stops answering raises :class:`RwsTimeout` instead of hanging. A refusal raises
an :class:`RwsError` with the HTTP status, the controller's return code and its message.

httpx is the HTTP client: it does Digest and Basic, keeps the session cookies RobotWare wants
reused, and takes an ``ssl.SSLContext``, so the pinned certificate guards the very connection
that carries the credentials.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from robohal.errors import ConnectFailed
from robohal.net.credentials import Credentials, credentials_for, variable_names
from robohal.net.tls import CertificateChanged, KnownCertificates, trusted_context

from . import parse
from .dialects import RWS1, RWS2, Dialect, Request, dialect
from .errors import (
    RapidBuildError,
    RwsAuthError,
    RwsDisconnected,
    RwsError,
    RwsNotFound,
    RwsProtocolError,
    RwsTimeout,
    RwsUnreachable,
    RwsUnsupported,
)
from .values import BuildError, ElogEntry, ExecutionState, Signal, SystemInfo

log = logging.getLogger("robohal.abb.rws")

SERVICE = "abb-rws"  # the credentials' service name: ROBOHAL_ABB_RWS_USER / ROBOHAL_ABB_RWS_PASSWORD
DEFAULT_CREDENTIALS = ("Default User", "robotics")  # ABB's documented defaults of an unconfigured controller
DEFAULT_TIMEOUT = 5.0  # s a call may take; our choice: a controller answers in milliseconds
SLOW_TIMEOUT = 30.0  # s for an upload or a module load (a controller compiles the module meanwhile)
DEFAULT_TASK = "T_ROB1"  # the motion task of a single-robot system
RMMP_POLL = 0.5  # s between polls of a manual-mode privilege request (ABB: poll within 10 s or it lapses)
ELOG_PAGES = 40  # event log pages read at most (a domain keeps about 1000 messages)
OK = (200, 201, 202, 204)
SYS_CTRL_S_OK = 294912  # the controller's own "success" (ABB's return codes)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: httpx.Headers
    body: bytes
    reason: str = ""

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")

    def items(self) -> list[dict[str, Any]]:
        return parse.items(self.body, self.content_type)


def endpoint(url: str) -> tuple[str, str, int]:
    """``http(s)://HOST[:PORT]`` checked: scheme, host, port. Credentials in it are refused (a URL
    is logged and shown), and so is anything after the address."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{url!r} is not an RWS address: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an RWS address: http://HOST[:PORT] (RobotWare 6) or https://HOST[:PORT]"
                         " (RobotWare 7)")
    if parts.username is not None or parts.password is not None:
        raise ValueError("credentials do not go in an RWS address (it is logged and shown): set ROBOHAL_ABB_RWS_USER"
                         " and ROBOHAL_ABB_RWS_PASSWORD, or use the owner-only credentials file")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"{url!r}: an RWS address is http(s)://HOST[:PORT], nothing after it")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


class RwsClient:
    """A controller's Robot Web Services (see the module docstring). Not connected until
    :meth:`open` (or ``with``); every call after that has a deadline."""

    def __init__(self, url: str, *, robotware: int | str | None = None, credentials: Credentials | None = None,
                 timeout: float = DEFAULT_TIMEOUT, ca_bundle: str | None = None, fingerprint: str | None = None,
                 known: KnownCertificates | None = None, service: str = SERVICE) -> None:
        self.scheme, self.host, self.port = endpoint(url)
        #: whose credentials are looked up (robohal.net.credentials): ROBOHAL_<SERVICE>_USER/_PASSWORD
        self.service = service
        netloc = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"{self.scheme}://{netloc}:{self.port}"
        if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"an RWS timeout is a positive number of seconds, got {timeout!r}")
        self.timeout = float(timeout)
        self.dialect: Dialect | None = dialect(robotware) if robotware is not None else None
        self._credentials = credentials
        self._ca_bundle = ca_bundle
        self._fingerprint = fingerprint
        self._known = known
        self._http: httpx.Client | None = None
        self._ssl = None
        self._lock = threading.RLock()  # one call at a time: Digest counts its nonces
        self._signal_paths: dict[str, str] = {}
        self._held: set[str] = set()  # mastership domains this session holds
        self.system_info: SystemInfo | None = None

    def __repr__(self) -> str:
        user = self._credentials.user if self._credentials is not None else "?"
        robotware = self.dialect.robotware if self.dialect is not None else "?"
        return f"RwsClient({self.url!r}, robotware={robotware}, user={user!r})"

    @property
    def user(self) -> str:
        return self._credentials.user if self._credentials is not None else ""

    # Opening and closing -------------------------------------------------------------------------

    def __enter__(self) -> RwsClient:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def is_open(self) -> bool:
        return self._http is not None

    def open(self) -> RwsClient:
        """Reach the controller, learn its dialect, log in (a refused login is an
        :class:`RwsAuthError` naming the user); idempotent."""
        if self._http is not None:
            return self
        if self.scheme == "https":
            try:
                self._ssl = trusted_context(self.host, self.port, timeout=self.timeout, ca_bundle=self._ca_bundle,
                                            expected=self._fingerprint, known=self._known)
            except CertificateChanged:
                raise
            except ConnectFailed as unanswered:  # as a call that finds nobody says it
                raise RwsUnreachable(f"RWS: {unanswered}; is the controller on, is this its address, and does it run"
                                     " RobotWare 7 (RobotWare 6 serves http://)?", address=self.url) from None
        # trust_env=False: no proxy or .netrc from the environment may see the controller's credentials
        http = httpx.Client(base_url=self.url, verify=self._ssl if self._ssl is not None else True,
                            timeout=self.timeout, follow_redirects=False, trust_env=False)
        self._http = http
        try:
            if self.dialect is None:
                self.dialect = self._detect()
            if self.dialect.auth == "basic" and self.scheme != "https":
                raise RwsUnsupported(f"{self.url} speaks {self.dialect.name}, which takes Basic authentication: robohal"
                                     " sends no credentials over plain HTTP. Use https://" + self.host)
            if self._credentials is None:
                self._credentials = credentials_for(self.service, self.host, self.port, defaults=DEFAULT_CREDENTIALS)
            user, password = self._credentials.user, self._credentials.password
            http.auth = httpx.DigestAuth(user, password) if self.dialect.auth == "digest" else \
                httpx.BasicAuth(user, password)
            if self.dialect.accept:
                http.headers["Accept"] = self.dialect.accept
            self.system_info = parse.system_info(self._call("GET", self.dialect.system()).items())
        except BaseException:
            self._http = None
            http.close()
            raise
        log.info("RWS %s: %s, %s %s, as %s", self.url, self.dialect.name, self.system_info.name,
                 self.system_info.robotware, self._credentials)
        return self

    def _detect(self) -> Dialect:
        """The dialect, from how the controller answers an unauthenticated ``GET /rw/system``."""
        answer = self._call("GET", ("/rw/system", {}), authenticate=False,
                            headers={"Accept": RWS2.accept}, ok=(200, 401))
        if answer.status == 401:
            challenge = answer.headers.get("www-authenticate", "").strip().lower()
            if challenge.startswith("digest"):
                return RWS1
            if challenge.startswith("basic"):
                return RWS2
            raise RwsProtocolError(f"RWS at {self.url} asks for {challenge.split(' ', 1)[0] or 'no'} authentication,"
                                   " neither RobotWare 6's Digest nor RobotWare 7's Basic", status=401)
        return RWS2 if "hal+json" in answer.content_type else RWS1

    def close(self) -> None:
        """Log out (the controller holds a limited number of sessions) and close; idempotent."""
        http = self._http
        if http is None:
            return
        try:
            self._call("GET", self._dialect().logout(), timeout=min(self.timeout, 2.0), ok=(*OK, 401, 404))
        except RwsError as exc:
            log.debug("RWS %s: logout: %s", self.url, exc)
        finally:
            self._http = None
            http.close()

    # The one way a call goes -----------------------------------------------------------------------

    def _call(self, method: str, request: Request, *, data: Any = None, content: bytes | None = None,
              headers: dict[str, str] | None = None, timeout: float | None = None, ok: Sequence[int] = OK,
              authenticate: bool = True) -> Answer:
        http = self._http
        if http is None:
            raise RwsError(f"RWS {self.url} is not open (call open() or use `with`)")
        path, params = request
        budget = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        headers = dict(headers or {})
        if data is not None:
            headers["Content-Type"] = self.dialect.form if self.dialect is not None else RWS1.form
        fields = {"method": method, "path": path}
        what = f"RWS {method} {path}"
        with self._lock:
            began = time.monotonic()
            try:
                built = http.build_request(method, path, params=params, data=data, content=content, headers=headers,
                                           timeout=httpx.Timeout(max(deadline - time.monotonic(), 0.001)))
                response = http.send(built, stream=True, auth=http.auth if authenticate else None)
                try:
                    body = bytearray()
                    for chunk in response.iter_bytes():
                        body += chunk
                        if len(body) > parse.MAX_BODY:
                            raise RwsProtocolError(f"{what}: the answer is longer than {parse.MAX_BODY} bytes",
                                                   status=response.status_code, **fields)
                        if time.monotonic() > deadline:
                            raise httpx.ReadTimeout("the answer kept coming past the deadline")
                finally:
                    response.close()
            except httpx.TimeoutException:
                raise RwsTimeout(f"{what}: the controller at {self.url} did not answer within {budget:g} s", **fields) \
                    from None
            except httpx.ConnectError as exc:
                if "CERTIFICATE_VERIFY_FAILED" in str(exc) and self.scheme == "https":
                    # the pin held at open(): learn what it shows now, for the message with both fingerprints
                    trusted_context(self.host, self.port, timeout=self.timeout, ca_bundle=self._ca_bundle,
                                    expected=self._fingerprint, known=self._known)
                raise RwsUnreachable(f"{what}: nothing answers at {self.url} ({exc}); is the controller on and is"
                                     " this its address?", address=self.url, **fields) from None
            except (httpx.RemoteProtocolError, httpx.NetworkError) as exc:
                raise RwsDisconnected(f"{what}: the connection to {self.url} broke ({exc})", **fields) from None
            except httpx.HTTPError as exc:
                raise RwsError(f"{what}: {exc}", **fields) from None
        answer = Answer(response.status_code, response.headers, bytes(body), response.reason_phrase)
        log.debug("%s -> %d (%.1f ms)", what, answer.status, (time.monotonic() - began) * 1e3)
        if answer.status in ok:
            return answer
        raise self._refusal(answer, what, fields)

    def _refusal(self, answer: Answer, what: str, fields: dict[str, Any]) -> RwsError:
        code, detail = parse.error_of(answer.body)
        said = f" (controller code {code}: {detail})" if code is not None or detail else ""
        status = answer.status
        fields = {**fields, "status": status, "code": code, "detail": detail}
        if status == 401:
            source = f" ({self._credentials.source})" if self._credentials is not None and self._credentials.source else ""
            user_variable, password_variable = variable_names(self.service)
            return RwsAuthError(f"{what}: the controller at {self.url} refused user {self.user!r}{source}: wrong user or"
                                f" password (HTTP 401); nothing was changed. Set {user_variable} and {password_variable},"
                                f" or [{self.service}.\"{self.host}\"] in the owner-only credentials file",
                                user=self.user, address=self.url, **fields)
        if status == 404:
            return RwsNotFound(f"{what}: not found on the controller (HTTP 404){said}", **fields)
        if status in (406, 415):
            return RwsUnsupported(f"{what}: the controller refuses this call's media type (HTTP {status}){said}; is it"
                                  f" really {self.dialect.name if self.dialect else 'that RobotWare'}? Name the"
                                  " dialect with rws_dialect=6|7", **fields)
        reason = {503: "busy (too many clients?)"}.get(status, answer.reason)
        return RwsError(f"{what}: refused, HTTP {status}{f' {reason}' if reason else ''}{said}", **fields)

    def _form(self, method: str, request: Request, fields: dict[str, Any] | None = None, **options: Any) -> Answer:
        return self._call(method, request, data=fields or {}, **options)

    # The controller ----------------------------------------------------------------------------------

    def _dialect(self) -> Dialect:
        if self.dialect is None:
            raise RwsError(f"RWS {self.url} is not open (call open() or use `with`)")
        return self.dialect

    def system(self) -> SystemInfo:
        info = parse.system_info(self._call("GET", self._dialect().system()).items())
        self.system_info = info
        return info

    def controller_state(self) -> str:
        """``motoron``, ``motoroff``, ``guardstop``, ``emergencystop``, ``emergencystopreset``, ``init`` or ``sysfail``."""
        return parse.controller_state(self._call("GET", self._dialect().controller_state()).items())

    def operation_mode(self) -> str:
        """``AUTO``, ``MANR`` (manual reduced speed), ``MANF`` (manual full speed), ..."""
        return parse.operation_mode(self._call("GET", self._dialect().operation_mode()).items())

    def motors(self, on: bool) -> None:
        """Motors on or off. On needs automatic mode (in manual mode the enabling device turns them on)."""
        self._form("POST", self._dialect().set_controller_state(), {"ctrl-state": "motoron" if on else "motoroff"})

    def speed_ratio(self) -> float:
        """The speed override as a fraction (the pendant shows it in percent)."""
        return parse.speed_ratio(self._call("GET", self._dialect().speed_ratio()).items())

    def set_speed_ratio(self, fraction: float) -> None:
        if not (isinstance(fraction, (int, float)) and 0.0 <= fraction <= 1.0):
            raise ValueError(f"a speed ratio is a fraction in [0, 1], got {fraction!r}")
        self._form("POST", self._implicit(self._dialect().set_speed_ratio()), {"speed-ratio": str(round(fraction * 100))})

    # RAPID execution ---------------------------------------------------------------------------------

    def _implicit(self, request: Request) -> Request:
        """RobotWare 7 takes mastership for one call when asked (``?mastership=implicit``)."""
        path, params = request
        return (path, {**params, "mastership": "implicit"}) if self._dialect().robotware >= 7 else request

    def execution(self) -> ExecutionState:
        return parse.execution_state(self._call("GET", self._dialect().execution()).items())

    def start(self, *, cycle: str = "asis") -> None:
        """Start RAPID from the program pointer (motors must be on)."""
        if cycle not in ("once", "forever", "asis"):
            raise ValueError(f"cycle is once, forever or asis, got {cycle!r}")
        self._form("POST", self._implicit(self._dialect().execution_verb("start")), {
            "regain": "continue", "execmode": "continue", "cycle": cycle, "condition": "none",
            "stopatbp": "disabled", "alltaskbytsp": "false"})

    def stop(self) -> None:
        self._form("POST", self._dialect().execution_verb("stop"), {"stopmode": "stop", "usetsp": "normal"}
                   if self._dialect().robotware >= 7 else {"stopmode": "stop"})

    def reset_program_pointer(self) -> None:
        """Program pointer to ``main`` (the program must have built)."""
        self._form("POST", self._implicit(self._dialect().execution_verb("resetpp")))

    # Mastership and manual-mode privileges -----------------------------------------------------------

    def request_mastership(self, domain: str = "edit") -> None:
        self._form("POST", self._dialect().mastership(domain, "request"))
        self._held.add(domain)

    def release_mastership(self, domain: str = "edit") -> None:
        self._held.discard(domain)
        self._form("POST", self._dialect().mastership(domain, "release"))

    @contextmanager
    def mastership(self, domain: str = "edit") -> Iterator[None]:
        """Hold mastership of ``edit`` (RAPID and configuration) or ``motion`` inside a ``with``
        (already held: kept, and not released at the end)."""
        if domain in self._held:
            yield
            return
        self.request_mastership(domain)
        try:
            yield
        finally:
            try:
                self.release_mastership(domain)
            except RwsError as exc:  # the with-block's own error matters more
                log.warning("RWS %s: releasing %s mastership failed: %s", self.url, domain, exc)

    @contextmanager
    def _edit(self) -> Iterator[None]:
        """Edit mastership for one change: RobotWare 6 must hold it (RWS 1.0: "Rapid Mastership
        Required"); RobotWare 7 takes it for the call itself (``?mastership=implicit``)."""
        if self._dialect().robotware >= 7:
            yield
        else:
            with self.mastership("edit"):
                yield

    def request_rmmp(self, timeout: float = 30.0) -> None:
        """Request the manual-mode privilege to modify (RMMP), which someone at the FlexPendant must grant
        within ``timeout``; polled meanwhile, as ABB asks. :class:`RwsTimeout` if nobody does,
        :class:`RwsError` if it is denied."""
        self._form("POST", self._dialect().rmmp(), {"privilege": "modify"})
        deadline = time.monotonic() + timeout
        status = "PENDING"
        while time.monotonic() < deadline:
            status = parse.rmmp_status(self._call("GET", self._dialect().rmmp_poll()).items())
            if status == "GRANTED":
                return
            if status != "PENDING":
                raise RwsError(f"RWS {self.url}: the manual-mode privilege request was {status.lower()}")
            time.sleep(min(RMMP_POLL, max(deadline - time.monotonic(), 0.0)))
        raise RwsTimeout(f"RWS {self.url}: nobody granted the manual-mode privilege at the FlexPendant within"
                         f" {timeout:g} s (it was {status.lower()})")

    def cancel_rmmp(self) -> None:
        self._form("POST", self._dialect().rmmp_cancel())

    # Files and modules ---------------------------------------------------------------------------------

    def _file_headers(self) -> dict[str, str]:
        accept = self._dialect().file_accept
        return {"Accept": accept} if accept else {}

    def upload(self, path: str, data: bytes, *, timeout: float = SLOW_TIMEOUT) -> None:
        """Write ``data`` to the controller's ``path`` (``$HOME/RobohalEgm.mod``), replacing a file there."""
        self._call("PUT", (self._dialect().file(path), {}), content=bytes(data), timeout=timeout,
                   headers={"Content-Type": self._dialect().text_upload, **self._file_headers()})

    def download(self, path: str, *, timeout: float = SLOW_TIMEOUT) -> bytes:
        return self._call("GET", (self._dialect().file(path), {}), timeout=timeout, headers=self._file_headers()).body

    def delete_file(self, path: str) -> None:
        self._call("DELETE", (self._dialect().file(path), {}), headers=self._file_headers())

    def modules(self, task: str = DEFAULT_TASK) -> list[str]:
        return parse.module_names(self._call("GET", self._dialect().modules(task)).items())

    def build_errors(self, task: str = DEFAULT_TASK) -> list[BuildError]:
        return parse.build_errors(self._call("GET", self._dialect().build_errors(task)).items())

    def load_module(self, path: str, *, task: str = DEFAULT_TASK, replace: bool = True,
                    timeout: float = SLOW_TIMEOUT) -> None:
        """Load the module file at the controller's ``path`` into ``task`` (needs edit mastership on
        RobotWare 6; RobotWare 7 takes it for the call). A module that does not build raises
        :class:`RapidBuildError` listing each error."""
        try:
            with self._edit():
                answer = self._form("POST", self._implicit(self._dialect().task_verb(task, "loadmod")),
                                    {"modulepath": path, "replace": "true" if replace else "false"}, timeout=timeout)
        except RwsNotFound:
            raise
        except RwsError as exc:
            if exc.status != 400:
                raise
            errors = self.build_errors_if_offered(task)
            if errors:
                raise RapidBuildError(f"{path} did not load into {task}: {len(errors)} build error(s): "
                                      + "; ".join(map(str, errors[:10])) + f" ({exc.detail or exc})", errors=errors,
                                      status=exc.status, code=exc.code, detail=exc.detail) from None
            raise
        # a module with errors may load all the same: the answer then carries a return code other
        # than SYS_CTRL_S_OK (a syntax error's is a success code), and the build-error list names them
        code, detail = parse.error_of(answer.body) if answer.body else (None, "")
        errors = self.build_errors_if_offered(task)
        if errors or (code is not None and code != SYS_CTRL_S_OK):
            listed = "; ".join(map(str, errors[:10])) or detail or f"controller code {code}"
            raise RapidBuildError(f"{path} loaded into {task}, but it does not build: {listed}", errors=errors,
                                  status=answer.status, code=code, detail=detail)

    def build_errors_if_offered(self, task: str = DEFAULT_TASK) -> list[BuildError]:
        """The build errors, or none when the controller offers no build-error list (404)."""
        try:
            return self.build_errors(task)
        except RwsNotFound:  # a controller without the build-error resource: its loadmod answer is all we know
            return []

    def unload_module(self, name: str, *, task: str = DEFAULT_TASK) -> None:
        with self._edit():
            self._form("POST", self._implicit(self._dialect().task_verb(task, "unloadmod")), {"module": name})

    # RAPID data -----------------------------------------------------------------------------------------

    def read_symbol(self, name: str, *, module: str, task: str = DEFAULT_TASK) -> Any:
        """A RAPID variable's value: bool, int, float or str where it has one, else its RAPID literal."""
        return parse.rapid_to_python(self.read_literal(name, module=module, task=task))

    def read_literal(self, name: str, *, module: str, task: str = DEFAULT_TASK) -> str:
        return parse.symbol_value(self._call("GET", self._dialect().symbol(task, module, name)).items(), name)

    def write_symbol(self, name: str, value: Any, *, module: str, task: str = DEFAULT_TASK) -> None:
        """Write a RAPID variable: bool, int, float, str (a RAPID string) or a list of them."""
        self.write_literal(name, parse.python_to_rapid(value), module=module, task=task)

    def write_literal(self, name: str, literal: str, *, module: str, task: str = DEFAULT_TASK) -> None:
        """Write a RAPID variable from its literal text (``[1,2,3]``, a record)."""
        with self._edit():
            self._form("POST", self._implicit(self._dialect().set_symbol(task, module, name)), {"value": literal})

    # I/O signals ------------------------------------------------------------------------------------------

    def read_signal(self, name: str) -> Signal:
        """A signal by its path (``Local/DRV_1/DO1``) or its name alone (found in the signal list)."""
        path = self._signal_path(name)
        return parse.signal(self._call("GET", self._dialect().signal(path)).items(), path)

    def write_signal(self, name: str, value: bool | int | float) -> None:
        """Set an output: digital True/False (or 1/0), analog a number, group an integer."""
        if isinstance(value, bool):
            text = "1" if value else "0"
        elif isinstance(value, int):
            text = str(value)
        elif isinstance(value, float) and math.isfinite(value):
            text = repr(value)
        else:
            raise ValueError(f"a signal value is a bool, int or finite float, got {value!r}")
        self._form("POST", self._dialect().set_signal(self._signal_path(name)), {"lvalue": text})

    def _signal_path(self, name: str) -> str:
        if "/" in name.strip("/"):
            return name.strip("/")
        known = self._signal_paths.get(name)
        if known is not None:
            return known
        try:
            self._call("GET", self._dialect().signal(name))
            self._signal_paths[name] = name
            return name
        except RwsNotFound:
            pass
        for item in self._pages(self._dialect().signals()):
            title = item.get("_title")
            if item.get("name") == name and isinstance(title, str) and title:
                self._signal_paths[name] = title
                return title
        raise RwsNotFound(f"RWS {self.url}: no I/O signal named {name!r}")

    def _pages(self, request: Request, pages: int = ELOG_PAGES) -> Iterator[dict[str, Any]]:
        """Every item of a list resource, following its next-page links (at most ``pages``)."""
        for _ in range(pages):
            answer = self._call("GET", request)
            yield from answer.items()
            following = parse.next_page(answer.body)
            if following is None:
                return
            path, _, query = following.partition("?")
            from urllib.parse import parse_qsl

            request = (path, self._dialect().query(dict(parse_qsl(query))))

    # The event log ---------------------------------------------------------------------------------------

    def elog(self, domain: int = 0, *, since: int | None = None, limit: int | None = None) -> list[ElogEntry]:
        """The event log of ``domain`` (0: common), oldest first: only messages after sequence
        number ``since`` if given, and only the newest ``limit`` if given. Asked as narrowly as the
        controller allows (``elogseqnum`` from ``since``; newest first with a ``limit``), then
        filtered here too, whatever it sent."""
        params: dict[str, str] = {}
        if since is not None:
            params["elogseqnum"] = str(since + 1)
        elif limit:
            params["order"] = "lifo"
            if self._dialect().robotware >= 7:
                params["limit"] = str(limit)
        pages = 1 if limit and since is None else ELOG_PAGES
        entries = parse.elog_entries(list(self._pages(self._dialect().elog(domain, params), pages)), domain)
        if since is not None:
            entries = [entry for entry in entries if entry.seqnum > since]
        return entries[-limit:] if limit else entries

    def last_elog_seqnum(self, domain: int = 0) -> int:
        """The newest message's sequence number (0 for an empty log): where "since" starts."""
        entries = self.elog(domain, limit=1)
        return entries[-1].seqnum if entries else 0

    # Subscriptions -----------------------------------------------------------------------------------------

    def subscribe(self, resources: Sequence[str], *, priority: int = 1):
        """A websocket subscription to ``resources`` (see :mod:`.subscriptions`; the dialect names them:
        ``rws.dialect.watch_execution()``...)."""
        from .subscriptions import Subscription

        return Subscription.open(self, list(resources), priority=priority)

    # for the subscriptions module: the session's cookies and what the websocket handshake needs
    def _session(self) -> tuple[httpx.Client, Any]:
        if self._http is None:
            raise RwsError(f"RWS {self.url} is not open (call open() or use `with`)")
        return self._http, self._ssl

    def _basic_authorization(self) -> str | None:
        """The Basic header for a websocket handshake: RobotWare 7 over TLS only (never plain HTTP)."""
        if self._dialect().auth != "basic" or self.scheme != "https" or self._credentials is None:
            return None
        import base64

        token = f"{self._credentials.user}:{self._credentials.password}".encode()
        return "Basic " + base64.b64encode(token).decode()
