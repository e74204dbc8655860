"""An ABB cell brought up over Robot Web Services: ``robohal abb ...`` and the same in Python.

    from robohal_abb.cell import AbbCell, open_cell

    with AbbCell("https://192.168.125.1") as cell:   # or open_cell("abb-egm://...&rws=https://...")
        print(cell.status())     # motors, mode, RAPID, whether RobohalEgm is loaded
        cell.setup()             # RobohalEgm.mod uploaded, loaded into T_ROB1, built, program pointer to main
        cell.start()             # motors on, RAPID started: the controller streams EGM
        ...
        cell.stop()              # RAPID stopped (and motors off with motors_off=True)

What RWS cannot do, and the pendant must: turn the motors on in manual mode (the enabling device
does), reset an emergency stop, and grant the manual-mode write privilege (RMMP) ``setup`` asks
for in manual mode. The UDP Unicast Device the RAPID module streams to is controller
configuration: see ``rapid/SETUP.md``.
"""

from __future__ import annotations

import logging
import re
import shlex
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robohal.errors import UriError
from robohal.net.credentials import Credentials
from robohal.uri import RobotUri, parse_uri

from . import stream_end
from .rws import RwsClient, RwsError, RwsUnsupported
from .rws.client import DEFAULT_TASK, DEFAULT_TIMEOUT, SERVICE
from .rws.values import BuildError, ElogEntry, ExecutionState, Signal, SystemInfo

log = logging.getLogger("robohal.abb")

#: the RAPID module that runs the EGM loop (shipped in robohal_abb/rapid)
TEMPLATE = Path(__file__).with_name("rapid") / "RobohalEgm.mod"
MODULE = "RobohalEgm"
#: where setup puts it on the controller (the folder ABB's examples load modules from)
REMOTE_FOLDER = "$HOME"
#: s to wait for the controller to reach a state it was asked for (motors on, RAPID running);
#: our choice: a controller answers such a request within a second or two
SETTLE = 10.0
POLL = 0.05  # s between looks while waiting for a state
#: the URI parameters that name the cell's RWS
PARAMS = ("rws", "rws_dialect", "rws_start", "rws_ca", "rws_fingerprint", "rws_timeout", "rws_credentials")


@dataclass(frozen=True)
class CellStatus:
    """The cell as RWS sees it, and what keeps it from streaming EGM (``problems``)."""

    url: str
    robotware: int
    system: SystemInfo
    controller_state: str
    operation_mode: str
    execution: ExecutionState
    speed_ratio: float
    module_loaded: bool
    task: str
    build_errors: tuple[BuildError, ...] = ()
    #: the command that loads the module, as the user types it for this cell
    setup_command: str = "robohal abb setup URI"

    @property
    def problems(self) -> list[str]:
        found = []
        if not self.module_loaded:
            found.append(f"{MODULE} is not loaded in {self.task}: run `{self.setup_command}`")
        if self.build_errors:
            found.append(f"the program in {self.task} does not build: "
                         + "; ".join(map(str, self.build_errors[:5])))
        if self.controller_state != "motoron":
            found.append(f"the motors are not on (controller state {self.controller_state})")
        if not self.execution.running:
            found.append(f"RAPID is {self.execution.state}")
        return found

    @property
    def ready(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {"rws": self.url, "robotware": self.robotware, "system": self.system.name,
                "robotware_version": self.system.robotware, "controller_state": self.controller_state,
                "operation_mode": self.operation_mode, "rapid": self.execution.state, "cycle": self.execution.cycle,
                "speed_ratio": self.speed_ratio, "task": self.task, "module_loaded": self.module_loaded,
                "build_errors": [str(error) for error in self.build_errors], "ready": self.ready,
                "problems": self.problems}


@dataclass(frozen=True)
class CellOptions:
    """What a robot URI says about the cell's RWS (``rws=...`` and its companions)."""

    url: str
    robotware: int | None = None
    start: bool = False
    ca_bundle: str | None = None
    fingerprint: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    #: whose credentials (robohal.net.credentials): ROBOHAL_<SERVICE>_USER/_PASSWORD, [SERVICE."HOST"]
    service: str = SERVICE

    @classmethod
    def from_uri(cls, uri: RobotUri) -> CellOptions | None:
        """The options of a URI that names ``rws=``, else None; a malformed one is a :class:`UriError`."""
        from .rws.client import endpoint

        url = uri.params.get("rws")
        if url is None:
            stray = [key for key in PARAMS if key in uri.params]
            if stray:
                raise UriError(f"{uri.scheme}://...: {', '.join(stray)} need rws=http(s)://HOST, the controller's RWS")
            return None
        try:
            endpoint(url)
        except ValueError as exc:  # its message never repeats a password
            raise UriError(f"{uri.scheme}://...: rws: {exc}") from None
        robotware = uri.params.get("rws_dialect")
        if robotware is not None and robotware not in ("6", "7"):
            raise UriError(f"{uri}: rws_dialect is 6 (RobotWare 6, RWS 1.0) or 7 (RobotWare 7, RWS 2.0),"
                           f" got {robotware!r}")
        service = uri.params.get("rws_credentials", SERVICE)
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,63}", service):
            raise UriError(f"{uri}: rws_credentials names whose credentials robohal looks up (letters, digits, '-',"
                           f" '_'), got {service!r}")
        return cls(url, int(robotware) if robotware else None, uri.get_bool("rws_start", False),
                   uri.params.get("rws_ca"), uri.params.get("rws_fingerprint"),
                   uri.get_float("rws_timeout", DEFAULT_TIMEOUT, minimum=0.1), service)


class AbbCell:
    """A cell's controller over RWS (see the module docstring). Connects on first use."""

    def __init__(self, url: str, *, robotware: int | None = None, task: str = DEFAULT_TASK,
                 credentials: Credentials | None = None, timeout: float = DEFAULT_TIMEOUT,
                 ca_bundle: str | None = None, fingerprint: str | None = None, service: str = SERVICE) -> None:
        self.task = task
        #: the robot's URI (abb-egm://...), when the cell was named by one
        self.robot_uri: RobotUri | None = None
        self.rws = RwsClient(url, robotware=robotware, credentials=credentials, timeout=timeout, ca_bundle=ca_bundle,
                             fingerprint=fingerprint, service=service)

    @classmethod
    def from_options(cls, options: CellOptions, **kwargs: Any) -> AbbCell:
        return cls(options.url, robotware=options.robotware, timeout=options.timeout, ca_bundle=options.ca_bundle,
                   fingerprint=options.fingerprint, service=options.service, **kwargs)

    @classmethod
    def from_uri(cls, uri: str | RobotUri, **kwargs: Any) -> AbbCell:
        """From an ``abb-egm://...?rws=...`` URI, or an RWS address ``http(s)://HOST[:PORT]``."""
        text = str(uri)
        if text.startswith(("http://", "https://")):
            return cls(text, **kwargs)
        parsed = parse_uri(text) if isinstance(uri, str) else uri
        options = CellOptions.from_uri(parsed)
        if options is None:
            raise UriError(f"{parsed} names no controller RWS: add rws=http://HOST (RobotWare 6) or rws=https://HOST"
                           " (RobotWare 7)")
        cell = cls.from_options(options, **kwargs)
        cell.robot_uri = parsed
        return cell

    def __repr__(self) -> str:
        return f"AbbCell({self.rws!r}, task={self.task!r})"

    def __enter__(self) -> AbbCell:
        self.rws.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.rws.close()

    def _client(self) -> RwsClient:
        return self.rws.open()

    def setup_command(self) -> str:
        """``robohal abb setup`` for this cell, ready to paste into a shell (a URI or an RWS address
        carries no credentials: they are refused there)."""
        named = self.robot_uri if self.robot_uri is not None else self.rws.url
        task = "" if self.task == DEFAULT_TASK else f" --task {shlex.quote(self.task)}"
        return f"robohal abb setup {shlex.quote(str(named))}{task}"

    # Looking ---------------------------------------------------------------------------------------

    def status(self) -> CellStatus:
        rws = self._client()
        modules = rws.modules(self.task)
        loaded = any(name.lower() == MODULE.lower() for name in modules)
        errors = tuple(rws.build_errors_if_offered(self.task)) if loaded else ()
        return CellStatus(rws.url, rws.dialect.robotware, rws.system(), rws.controller_state(), rws.operation_mode(),
                          rws.execution(), rws.speed_ratio(), loaded, self.task, errors, self.setup_command())

    def elog(self, *, since: int | None = None, limit: int | None = 20, domain: int = 0) -> list[ElogEntry]:
        return self._client().elog(domain, since=since, limit=limit)

    def last_elog_seqnum(self) -> int:
        return self._client().last_elog_seqnum()

    def why_stream_ended(self, since: int) -> str | None:
        """Why EGM stopped, from the event log messages after sequence number ``since`` (see
        :mod:`.stream_end`), or None when it names no cause."""
        return stream_end.explain(self._client().elog(since=since))

    # Doing -----------------------------------------------------------------------------------------

    def setup(self, module: str | Path | None = None) -> str:
        """Upload the RAPID module (default: the template, RobohalEgm.mod), load it into the task
        in place of an older one, check that the program builds and set the program pointer to
        main. RAPID must be stopped. In manual mode the pendant must grant write access (RMMP).
        Returns the module's path on the controller."""
        rws = self._client()
        source = Path(module) if module is not None else TEMPLATE
        data = source.read_bytes()
        remote = f"{REMOTE_FOLDER}/{source.name}"
        if rws.execution().running:
            raise RwsError(f"RAPID is running on {rws.url}: stop it first (robohal abb stop), then set up")
        rws.upload(remote, data)
        log.info("%s: uploaded %s to %s", rws.url, source.name, remote)
        if rws.operation_mode() != "AUTO":
            rws.request_rmmp()  # someone at the pendant grants it
        with rws.mastership("edit"):
            rws.load_module(remote, task=self.task, replace=True)  # RapidBuildError lists what does not build
            rws.reset_program_pointer()
        log.info("%s: %s loaded into %s, program pointer at main", rws.url, source.stem, self.task)
        return remote

    def motors(self, on: bool) -> None:
        rws = self._client()
        if on and rws.operation_mode() != "AUTO":
            raise RwsUnsupported(f"{rws.url} is in manual mode ({rws.operation_mode()}): its motors go on with the"
                                 " enabling device at the pendant, not over RWS")
        rws.motors(on)
        self._wait(lambda: rws.controller_state() == ("motoron" if on else "motoroff"),
                   f"the motors {'on' if on else 'off'}", rws.controller_state)

    def start(self) -> bool:
        """Motors on and RAPID started (each only if needed); False if the cell was already up.
        An emergency stop or a program that does not build is refused with the reason."""
        rws = self._client()
        state = rws.controller_state()
        if state in ("emergencystop", "emergencystopreset", "guardstop", "sysfail"):
            raise RwsUnsupported(f"{rws.url} is in {state}: reset it at the cell first; RWS cannot")
        modules = rws.modules(self.task)
        if not any(name.lower() == MODULE.lower() for name in modules):
            raise RwsError(f"{MODULE} is not loaded in {self.task} on {rws.url}: run `{self.setup_command()}` first")
        motors_turned_on = False
        if state != "motoron":
            self.motors(True)
            motors_turned_on = True
        if rws.execution().running:
            return motors_turned_on
        try:
            rws.start()
            self._wait(lambda: rws.execution().running, "RAPID running", lambda: rws.execution().state)
        except BaseException:
            if motors_turned_on:  # a start that failed leaves the motors as it found them
                try:
                    self.motors(False)
                except RwsError as exc:
                    log.warning("%s: RAPID did not start, and the motors stayed on: %s", rws.url, exc)
            raise
        return True

    def stop(self, *, motors_off: bool = False) -> None:
        """RAPID stopped (and the motors off if asked): the cell left as robohal found it before ``start``."""
        rws = self._client()
        if rws.execution().running:
            rws.stop()
            self._wait(lambda: not rws.execution().running, "RAPID stopped", lambda: rws.execution().state)
        if motors_off and rws.controller_state() == "motoron":
            self.motors(False)

    def io(self, name: str, value: bool | int | float | None = None) -> Signal:
        """Read a signal, or set it to ``value`` first (then read back what the controller has)."""
        rws = self._client()
        if value is not None:
            rws.write_signal(name, value)
        return rws.read_signal(name)

    def _wait(self, done, what: str, now) -> None:
        deadline = time.monotonic() + SETTLE
        while not done():
            if time.monotonic() > deadline:
                raise RwsError(f"{self.rws.url}: asked for {what}, but it is still {now()} after {SETTLE:g} s")
            time.sleep(POLL)


@contextmanager
def open_cell(uri: str | RobotUri, **options: Any) -> Iterator[AbbCell]:
    """The cell a URI names, open inside the ``with``: an ``abb-egm://...?rws=...`` URI, an RWS
    address, or ``abb-egm://sim?sim_rws=6|7&...``, for which a simulated controller is started
    (and stopped at the end). ``cell.robot_uri`` is the robot's URI to connect to (the simulator's)."""
    text = str(uri)
    simulator = None
    robot_uri: RobotUri | None = None
    if not text.startswith(("http://", "https://")):
        robot_uri = parse_uri(text) if isinstance(uri, str) else uri
        if robot_uri.wants_simulator:
            if "sim_rws" not in robot_uri.params:
                raise UriError(f"{robot_uri}: the simulated controller serves RWS with sim_rws=6 (RobotWare 6) or"
                               " sim_rws=7 (RobotWare 7)")
            from .simulation import start_simulator

            simulator = start_simulator(robot_uri)
            robot_uri = simulator.uri
    try:
        cell = AbbCell.from_uri(robot_uri if robot_uri is not None else text, **options)
        cell.robot_uri = robot_uri
        with cell:
            yield cell
    finally:
        if simulator is not None:
            simulator.stop()


@contextmanager
def bring_up(uri: RobotUri) -> Iterator[AbbCell]:
    """For ``robohal hil --cells``: the cell started (motors on, RAPID running) for the suites, and
    RAPID stopped after them. Without ``rws=`` in the URI: not offered (see :func:`cell_bring_up`)."""
    with AbbCell.from_uri(uri) as cell:
        started = cell.start()
        log.info("%s: %s", cell.rws.url, "motors on, RAPID started" if started else "already running")
        try:
            yield cell
        finally:
            cell.stop()
            log.info("%s: RAPID stopped", cell.rws.url)


def cell_bring_up(uri: RobotUri):
    """``BackendSpec.bring_up``: a bring-up for a URI that names the cell's RWS, else None."""
    return bring_up(uri) if CellOptions.from_uri(uri) is not None else None
