"""The simulated ABB controller's state, shared by its EGM loop and its Robot Web Services.

One controller: the operating mode, the controller state (motors), RAPID execution and the
program pointer, task T_ROB1's loaded modules (:mod:`.rapid_module`), the speed ratio, the I/O
signals, the file system (:mod:`.file_store`), mastership and RMMP, and the event log. RWS
(:mod:`.rws_server`) changes it on a client's request; the EGM loop (:mod:`.simulator`) reads it
every period (:meth:`ControllerModel.egm_program`) and reports what happens on its side (a
CommTimeout, the tool's inputs). Every method takes the one lock; none blocks or waits.

A refusal is a :class:`Refusal`: an HTTP status and the controller's return code, as RWS answers
it. Where each rule and each code comes from is said next to it: "RWS manual" is ABB's
Application manual Robot Web Services (RWS 1.0 pages on developercenter.robotstudio.com),
"return codes" ABB's list of controller return codes in it (names and numbers as transcribed
by the public RWS clients), "OmniCore" what public RWS 2.0 clients record of RobotWare 7
controllers; "our choice" where we found no source.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .file_store import FileStore, PathRefused
from .rapid_module import BuildError, RapidModule, Symbol, check_literal, parse_module

# Controller return codes (return codes) -----------------------------------------------------------
OK = 294912  # SYS_CTRL_S_OK
S_RAPID_SYNTAX_ERROR = 299008  # SYS_CTRL_S_RAPID_SYNTAX_ERROR: done, but the program has syntax errors
E_INVALIDARG = -1073445879  # SYS_CTRL_E_INVALIDARG (OmniCore: "Task NO_SUCH_TASK does not exist")
E_REJECT = -1073445881  # SYS_CTRL_E_REJECT
E_UNRESOLVED_URL = -1073445866  # SYS_CTRL_E_UNRESOLVED_URL (OmniCore: a path it does not serve)
E_RESOURCE_HELD = -1073445862  # SYS_CTRL_E_RESOURCE_HELD
E_MODE_REJECT = -1073445860  # SYS_CTRL_E_MODE_REJECT
E_MASTER_REJECT = -1073445859  # SYS_CTRL_E_MASTER_REJECT: "does not have required mastership"
E_MAX_LIMIT = -1073445871  # SYS_CTRL_E_MAX_LIMIT_REACHED
E_NO_SUCH_REQUEST = -1073445870  # RWS manual, rmmp poll example: "NO SUCH REQUEST" (its name: our label)
E_NO_SUCH_SYMBOL = -1073442816  # SYS_CTRL_E_NO_SUCH_SYMBOL
E_INVALID_PROGRAMFILE = -1073442814  # SYS_CTRL_E_INVALID_PROGRAMFILE
E_MOD_AMBNAME = -1073442813  # SYS_CTRL_E_MOD_AMBNAME
E_EXEC_STATE = -1073442809  # SYS_CTRL_E_EXEC_STATE (a public client: loadmod while RAPID runs)
E_RAPID_SYNTAX_ERROR = -1073442803  # SYS_CTRL_E_RAPID_SYNTAX_ERROR
E_RAPID_SEMANTIC_ERROR = -1073442802  # SYS_CTRL_E_RAPID_SEMANTIC_ERROR (OmniCore: PP to main, two mains)
E_NO_PP = -1073442783  # SYS_CTRL_E_NO_PP
E_INVALID_PATH = -1073438716  # SYS_CTRL_E_INVALID_PATH
E_FILE_NOT_FOUND = -1073438708  # SYS_CTRL_E_FILE_NOT_FOUND
E_FAIL = -1073414146  # SYS_CTRL_E_FAIL (RWS manual: a RAPID datum set without mastership answers it)

# Event log codes ---------------------------------------------------------------------------------------
# "OmniCore elog": an OmniCore's event log (RobotWare 7, 2025) as captured in a public client's tests;
# "IRC5 event list": an IRC5 plant's event statistics (code, title) in a public repository.
# RWS manual, its ElogSubscriber example's output: 10002 "The program pointer of task T_ROB1 has been
# reset", 10016 "ordered to go to the Automatic mode", 10017 "Automatic mode"
EV_PP_RESET, EV_AUTO_REQUESTED, EV_AUTO = 10002, 10016, 10017
# OmniCore elog and IRC5 event list: 10010 Motors OFF state, 10011 Motors ON state, 10012 (Safety)
# guard stop state; OmniCore elog: 10013 Emergency stop state
EV_MOTORS_OFF, EV_MOTORS_ON, EV_GUARD_STOP, EV_EMERGENCY_STOP = 10010, 10011, 10012, 10013
# OmniCore elog: 10151 "Program started" (from the first instruction of the entry routine, by an
# external client) and 10125 "Program stopped" (by an external or internal stop, here after an
# emergency stop); IRC5 event list: 10005 "Program stopped" and 10008 "Program restarted". Which of
# each pair a cause gets is our reading of their texts: a start just after resetpp is 10151, any
# other 10008; a stop request is 10005, the Motors ON circuit opening or a fault 10125
EV_PROGRAM_STARTED, EV_PROGRAM_RESTARTED = 10151, 10008
EV_PROGRAM_STOPPED, EV_TASK_STOPPED = 10005, 10125
EV_UDPUC_COMM = 41822  # EGM manual (research notes): ERR_UDPUC_COMM "No data from the UdpUc device"
# Our choice: events a controller logs under numbers we could not find; a range of our own
# (9xxxx) so that no client mistakes them for ABB's. 10015 for manual mode is ABB's number as we
# recall it from its event list, not checked against a source here
EV_MANUAL = 10015
EV_MODULE_LOADED, EV_MODULE_ERROR, EV_MODULE_UNLOADED, EV_SPEED_RATIO, EV_RESTARTED = 90001, 90002, 90003, 90004, 90005
#: descriptions as the OmniCore elog words them, where it has the code
DESCRIPTIONS = {
    EV_MOTORS_OFF: "The system is in the Motors OFF state. It enters this state either after switching from Manual"
                   " mode to Automatic, or after the Motors ON circuit has been opened during program execution.",
    EV_MOTORS_ON: "The system is in the Motors ON state.",
    EV_GUARD_STOP: "The system is in the Guard stop state. It enters this state either after switching from"
                   " Automatic- to Manual mode, or after the Motors ON circuit has been opened by an Emergency Stop"
                   " or Automatic Stop, or in Manual mode if Enabling device was released.",
    EV_EMERGENCY_STOP: "The system is in the Emergency stop state, since the Motors ON circuit has been opened by an"
                       " Emergency Stop device.",
}
INFO, WARNING, ERROR = 1, 2, 3  # msgtype (RWS manual: elog message types 1 info, 2 warning, 3 error)

TASK = "T_ROB1"  # the one motion task of a single-robot controller (ABB's default task name)
CTRL_STATES = ("motoroff", "motoron", "guardstop", "emergencystop")  # RWS manual: rw/panel/ctrlstate
OPMODES = ("AUTO", "MANR")  # RWS manual: rw/panel/opmode (MANF and the transitions are not simulated)
MASTERSHIP_DOMAINS = ("rapid", "motion", "cfg")  # RWS manual; RWS 2.0 calls rapid's "edit"
RMMP_KEEPALIVE = 10.0  # s; RWS manual (rmmp poll): an unpolled request is removed after 10 seconds
ELOG_SIZE = 1000  # entries kept in domain 0 (RWS manual: its elog resources sample, buffsize 1000)
#: the signals of the simulated cell: the tool as rapid/SETUP.md section 4 names it, plus one of
#: each other kind for clients to exercise (our choice). Network and device: abb-robot-client's
#: defaults (Local/DRV_1), which a virtual controller's own signals use
SIGNALS = (
    ("Local/DRV_1/doVacuum", "DO", 0.0, 1.0),
    ("Local/DRV_1/diVacuumOn", "DI", 0.0, 1.0),
    ("Local/DRV_1/diPartPresent", "DI", 0.0, 1.0),
    ("Local/DRV_1/DO1", "DO", 0.0, 1.0),
    ("Local/DRV_1/DI1", "DI", 0.0, 1.0),
    ("Local/DRV_1/aoFlow", "AO", 0.0, 10.0),
    ("Local/DRV_1/aiPressure", "AI", 0.0, 10.0),
    ("Local/DRV_1/goProgram", "GO", 0.0, 255.0),
    ("Local/DRV_1/giStatus", "GI", 0.0, 255.0),
)
#: the tool's signals as the EGM loop drives them (the output it reads, the inputs it reports)
TOOL_OUTPUT = "Local/DRV_1/doVacuum"
TOOL_INPUTS = ("Local/DRV_1/diVacuumOn", "Local/DRV_1/diPartPresent")
#: system modules every task has (an OmniCore capture lists BASE as SysMod; ``user`` holds
#: reg1..reg5, the datum the RWS manual's example writes: /rw/rapid/symbol/data/RAPID/T_ROB1/user/reg1)
SYSTEM_MODULES = {
    "BASE": "MODULE BASE (SYSMODULE, NOSTEPIN, VIEWONLY)\nENDMODULE\n",
    "user": "MODULE user (SYSMODULE)\n" + "".join(f"    VAR num reg{i} := 0;\n" for i in range(1, 6)) + "ENDMODULE\n",
}


class Refusal(Exception):
    """What the controller answers instead: an HTTP status, its return code and a message."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class Signal:
    path: str  # NETWORK/DEVICE/NAME
    type: str  # DO, DI, AO, AI, GO, GI
    minimum: float
    maximum: float
    value: float = 0.0

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def lvalue(self) -> str:
        return f"{self.value:g}" if self.type in ("AO", "AI") else str(int(self.value))

    @property
    def output(self) -> bool:
        return self.type.endswith("O")


@dataclass
class ElogEntry:
    seqnum: int
    msgtype: int
    code: int
    title: str
    desc: str
    args: tuple[str, ...] = ()
    tstamp: float = field(default_factory=time.time)

    @property
    def stamp(self) -> str:
        """The controller's time format (RWS manual: ``2013-09-08 T 11:22:10``)."""
        return time.strftime("%Y-%m-%d T %H:%M:%S", time.localtime(self.tstamp))


class ControllerModel:
    """The controller (see the module docstring). ``listeners`` are called, under the lock, with
    each change: ("ctrlstate"|"opmode"|"execution"|"speedratio", None), ("signal", path),
    ("symbol", "MODULE/NAME"), ("elog", seqnum); they must not block."""

    def __init__(self, opmode: str = "AUTO") -> None:
        if opmode not in OPMODES:
            raise ValueError(f"the operating mode is one of {', '.join(OPMODES)}")
        self.lock = threading.RLock()
        self.files = FileStore()
        self.listeners: list[Callable[[str, Any], None]] = []
        self.opmode = opmode
        # After power-up a controller is in motors off with RAPID stopped (RWS manual: "init ... will
        # shift to state motors off when it has started")
        self.ctrlstate = "motoroff"
        self.execution = "stopped"
        self.cycle = "forever"
        self.speed_ratio = 100
        self.program: str | None = None  # the module whose main the program pointer is in
        self.pp_at_entry = False  # the program pointer at main's first instruction (just reset)
        self.modules: dict[str, RapidModule] = {}
        for name, text in SYSTEM_MODULES.items():
            self.modules[name.lower()] = parse_module(text)
        self.signals = {path: Signal(path, kind, low, high) for path, kind, low, high in SIGNALS}
        self.masters: dict[str, str] = {}  # domain -> session id holding it
        self.rmmp: dict[str, str] = {}  # session id -> pending | granted | denied
        self.rmmp_polled: dict[str, float] = {}  # session id -> when it last polled its request
        self.clock = time.monotonic
        self.elog: deque[ElogEntry] = deque(maxlen=ELOG_SIZE)
        self._seqnums = itertools.count(1)
        self.egm_stops = 0  # times the EGM loop was told its program ended (for the STATE line)
        self.log(INFO, EV_AUTO if opmode == "AUTO" else EV_MANUAL,
                 "Automatic mode" if opmode == "AUTO" else "Manual mode selected",
                 f"The system is in the {'Automatic' if opmode == 'AUTO' else 'Manual reduced speed'} mode.")
        self.log(INFO, EV_MOTORS_OFF, "Motors OFF state", DESCRIPTIONS[EV_MOTORS_OFF])

    def close(self) -> None:
        self.files.close()

    # Notifications and the event log ----------------------------------------------------------

    def _changed(self, kind: str, key: Any = None) -> None:
        for listener in list(self.listeners):
            listener(kind, key)

    def log(self, msgtype: int, code: int, title: str, desc: str, *args: str) -> ElogEntry:
        """Add an event log entry (domain 0, "Common") with the next sequence number."""
        with self.lock:
            entry = ElogEntry(next(self._seqnums), msgtype, code, title, desc, tuple(str(arg) for arg in args))
            self.elog.append(entry)
            self._changed("elog", entry.seqnum)
            return entry

    def elog_entries(self, since: int | None = None, newest_first: bool = False) -> list[ElogEntry]:
        with self.lock:
            entries = [entry for entry in self.elog if since is None or
                       (entry.seqnum <= since if newest_first else entry.seqnum >= since)]
        return entries[::-1] if newest_first else entries

    # Mastership and RMMP -------------------------------------------------------------------------

    def request_mastership(self, session: str, domain: str) -> None:
        """RWS manual: mastership of a domain is held by one client at a time; in manual mode only
        after RMMP is granted. A second client's request: 403 (OmniCore answers 403 "held by someone
        else"); the code RESOURCE_HELD is our choice among the documented ones."""
        with self.lock:
            holder = self.masters.get(domain)
            if holder is not None and holder != session:
                raise Refusal(403, E_RESOURCE_HELD, f"{domain} mastership is held by another client")
            if self.opmode != "AUTO" and self.rmmp.get(session) != "granted":
                raise Refusal(403, E_MODE_REJECT, "manual mode: request RMMP (privilege=modify) first")
            self.masters[domain] = session

    def release_mastership(self, session: str, domain: str) -> None:
        with self.lock:
            if self.masters.get(domain) == session:
                del self.masters[domain]
            # releasing what one does not hold: done (our choice, as an idempotent release)

    def check_mastership(self, session: str, domain: str, required: bool, implicit: bool = False) -> None:
        """Whether ``session`` may change ``domain``: never while another holds it; when ``required``
        (RWS manual: loadmod "Rapid Mastership Required"; OmniCore: resetpp, start, RAPID data and the
        speed ratio need edit mastership) only holding it or asking for it implicitly."""
        with self.lock:
            holder = self.masters.get(domain)
            if holder is not None and holder != session:
                raise Refusal(403, E_MASTER_REJECT, f"{domain} mastership is held by another client")
            if required and holder != session and not implicit:
                raise Refusal(403, E_MASTER_REJECT, f"the operation needs {domain} mastership; request it first")
            if implicit and self.opmode != "AUTO" and self.rmmp.get(session) != "granted":
                raise Refusal(403, E_MODE_REJECT, "manual mode: request RMMP (privilege=modify) first")

    def request_rmmp(self, session: str, privilege: str) -> None:
        """RWS manual: RMMP asks the FlexPendant's operator for manual-mode privileges; here the
        operator is the control line ``RWS RMMP GRANT|DENY``. In automatic mode it is granted at once
        (our choice: nothing needs it there)."""
        if privilege not in ("modify", "exec"):
            raise Refusal(400, E_INVALIDARG, "privilege is modify or exec")
        with self.lock:
            self.rmmp[session] = "granted" if self.opmode == "AUTO" else "pending"
            self.rmmp_polled[session] = self.clock()

    def rmmp_state(self, session: str, poll: bool = False) -> str | None:
        """This session's RMMP request: pending, granted, denied or None. RWS manual: a pending
        request not polled (``/users/rmmp/poll``) for :data:`RMMP_KEEPALIVE` s is removed."""
        with self.lock:
            self._expire_rmmp()
            if poll and session in self.rmmp:
                self.rmmp_polled[session] = self.clock()
            return self.rmmp.get(session)

    def cancel_rmmp(self, session: str) -> None:
        with self.lock:
            self.rmmp.pop(session, None)
            self.rmmp_polled.pop(session, None)

    def _expire_rmmp(self) -> None:
        now = self.clock()
        for session in [s for s, state in self.rmmp.items()
                        if state == "pending" and now - self.rmmp_polled.get(s, now) > RMMP_KEEPALIVE]:
            self.cancel_rmmp(session)

    def operator_rmmp(self, grant: bool) -> int:
        """The FlexPendant's answer to every pending RMMP request; how many it answered."""
        with self.lock:
            self._expire_rmmp()
            pending = [session for session, state in self.rmmp.items() if state == "pending"]
            for session in pending:
                self.rmmp[session] = "granted" if grant else "denied"
            return len(pending)

    def drop_session(self, session: str) -> None:
        """A session ended (logout, expiry, restart): what it held is released."""
        with self.lock:
            for domain in [d for d, holder in self.masters.items() if holder == session]:
                del self.masters[domain]
            self.rmmp.pop(session, None)
            self.rmmp_polled.pop(session, None)

    # Panel --------------------------------------------------------------------------------------

    def set_motors(self, on: bool) -> None:
        """RWS manual: setctrlstate motoron/motoroff. Manual mode needs the enabling device for
        motors on, so a remote request is refused there (our reading of the manual's modes); so is
        motors on from a guard or emergency stop until the operator resets it (our choice)."""
        with self.lock:
            if on:
                if self.opmode != "AUTO":
                    raise Refusal(403, E_MODE_REJECT, "manual mode: motors on needs the enabling device")
                if self.ctrlstate in ("guardstop", "emergencystop"):
                    raise Refusal(400, E_REJECT, f"the controller is in {self.ctrlstate}; reset it first")
                if self.ctrlstate != "motoron":
                    self.ctrlstate = "motoron"
                    self.log(INFO, EV_MOTORS_ON, "Motors ON state", DESCRIPTIONS[EV_MOTORS_ON])
                    self._changed("ctrlstate")
            elif self.ctrlstate != "motoroff":
                self._motors_down("motoroff", EV_MOTORS_OFF, "Motors OFF state")

    def cell_stop(self, state: str) -> None:
        """The cell opens the Motors ON circuit (a guard stop, an emergency stop, motors off from the
        cell): RAPID stops with it (RWS manual, code 10010: "after the Motors ON circuit has been
        opened during program execution")."""
        codes = {"motoroff": (EV_MOTORS_OFF, "Motors OFF state"), "guardstop": (EV_GUARD_STOP, "Safety guard stop state"),
                 "emergencystop": (EV_EMERGENCY_STOP, "Emergency stop state")}
        with self.lock:
            self._motors_down(state, *codes[state])

    def reset_stop(self) -> None:
        """The operator resets a guard or emergency stop: motors off (our choice)."""
        with self.lock:
            if self.ctrlstate in ("guardstop", "emergencystop"):
                self._motors_down("motoroff", EV_MOTORS_OFF, "Motors OFF state")

    def _motors_down(self, state: str, code: int, title: str) -> None:
        self.ctrlstate = state
        # OmniCore elog: these state entries are information (msgtype 1), a stop's cause comes separately
        self.log(INFO, code, title, DESCRIPTIONS[code])
        self._changed("ctrlstate")
        self._stop_program(EV_TASK_STOPPED)

    def set_opmode(self, opmode: str) -> None:
        """The key switch (control line ``RWS OPMODE``): a change takes motors off and RMMP away."""
        if opmode not in OPMODES:
            raise ValueError(f"the operating mode is one of {', '.join(OPMODES)}")
        with self.lock:
            if opmode == self.opmode:
                return
            self.opmode = opmode
            if opmode == "AUTO":
                self.log(INFO, EV_AUTO_REQUESTED, "Automatic mode requested",
                         "The system has been ordered to go to the Automatic mode.")
                self.log(INFO, EV_AUTO, "Automatic mode", "The system is in the Automatic mode.")
            else:
                self.log(INFO, EV_MANUAL, "Manual mode selected", "The system is in the Manual mode.")
            self.rmmp.clear()
            self.rmmp_polled.clear()
            self._changed("opmode")
            if self.ctrlstate == "motoron":
                self._motors_down("motoroff", EV_MOTORS_OFF, "Motors OFF state")

    def set_speed_ratio(self, text: str) -> None:
        """RWS manual: speed-ratio 0..100 (whole percent)."""
        try:
            ratio = int(text)
        except (TypeError, ValueError):
            raise Refusal(400, E_INVALIDARG, "speed-ratio is a whole number 0..100") from None
        if not 0 <= ratio <= 100:
            raise Refusal(400, E_INVALIDARG, "speed-ratio is a whole number 0..100")
        with self.lock:
            if ratio != self.speed_ratio:
                self.speed_ratio = ratio
                self.log(INFO, EV_SPEED_RATIO, "Speed ratio changed", f"The speed ratio is {ratio}%.", str(ratio))
                self._changed("speedratio")

    # RAPID execution ----------------------------------------------------------------------------

    def reset_pp(self) -> None:
        """Program pointer to main (RWS manual: resetpp). Refused while RAPID runs, with syntax errors in
        the task, without a main routine, or with two (OmniCore: RAPID_SEMANTIC_ERROR for two mains)."""
        with self.lock:
            if self.execution == "running":
                raise Refusal(400, E_EXEC_STATE, "RAPID is running; stop it first")
            broken = [m.name for m in self.modules.values() if m.errors]
            if broken:
                raise Refusal(400, E_RAPID_SYNTAX_ERROR, f"module {', '.join(broken)} has errors; see the event log")
            mains = [m for m in self.modules.values() if m.has_main and m.kind == "ProgMod"]
            if len(mains) > 1:
                raise Refusal(400, E_RAPID_SEMANTIC_ERROR, "more than one main routine in task " + TASK)
            if not mains:
                raise Refusal(400, E_NO_PP, f"task {TASK} has no main routine; load a program module")
            self.program = mains[0].name.lower()
            self.pp_at_entry = True
            self.log(INFO, EV_PP_RESET, "Program pointer reset",
                     f"The program pointer of task {TASK} has been reset.", TASK)

    def start(self, cycle: str = "asis") -> None:
        """Start RAPID (RWS manual: execution start). Needs motors on (our reading: the start button
        is ignored in motors off), a program pointer, and RAPID stopped."""
        if cycle not in ("once", "forever", "asis"):
            raise Refusal(400, E_INVALIDARG, "cycle is once, forever or asis")
        with self.lock:
            if self.execution == "running":
                raise Refusal(400, E_EXEC_STATE, "RAPID is running already")
            if self.ctrlstate != "motoron":
                raise Refusal(400, E_REJECT, f"the controller is in {self.ctrlstate}; motors on first")
            if self.program is None or self.program not in self.modules:
                raise Refusal(400, E_NO_PP, f"task {TASK} has no program pointer; reset it to main (resetpp)")
            if cycle != "asis":
                self.cycle = cycle
            self.execution = "running"
            if self.pp_at_entry:
                self.log(INFO, EV_PROGRAM_STARTED, "Program started",
                         f"Execution of task {TASK} has been started from the first instruction of the task's entry"
                         " routine. The originator is an external client.", TASK)
            else:
                self.log(INFO, EV_PROGRAM_RESTARTED, "Program restarted",
                         f"Execution of task {TASK} has been restarted from where it was stopped.", TASK)
            self.pp_at_entry = False
            self._changed("execution")

    def stop(self) -> None:
        with self.lock:
            self._stop_program(EV_PROGRAM_STOPPED)

    def _stop_program(self, code: int, msgtype: int = INFO, why: str = "") -> None:
        """RAPID stops: ``code`` 10005 for a stop request, 10125 for any other stop (see the codes).
        10125's text is the OmniCore elog's; 10005's (and 10008's in :meth:`start`) are ours."""
        if self.execution != "running":
            return
        self.execution = "stopped"
        desc = f"The task {TASK} has stopped on a stop request." if code == EV_PROGRAM_STOPPED else \
            f"The task {TASK} has stopped. The reason is that an external or internal stop has occurred."
        self.log(msgtype, code, "Program stopped", desc + (f" {why}" if why else ""), TASK)
        self._changed("execution")

    # Modules and data ---------------------------------------------------------------------------

    def _task(self, task: str) -> None:
        if task.upper() != TASK:
            raise Refusal(404, E_INVALIDARG, f"Task {task} does not exist")

    def load_module(self, task: str, path: str, replace: bool) -> RapidModule:
        """Load a module file (RWS manual: loadmod, ``.mod``/``.modx``/``.sys``). It loads even with
        syntax errors, which go to the event log and keep the program from running (the PC SDK's
        manual: "If a RAPID module with syntax errors is loaded then an appropriate message will be
        displayed in the EventLog")."""
        self._task(task)
        if not path.lower().endswith((".mod", ".modx", ".sys", ".sysx")):
            raise Refusal(400, E_INVALID_PROGRAMFILE, "a module file ends in .mod, .modx or .sys")
        try:
            text = self.files.read(path).decode("utf-8", "replace")
        except PathRefused as refused:
            raise Refusal(404 if refused.missing else 400, E_FILE_NOT_FOUND if refused.missing else E_INVALID_PATH,
                          str(refused)) from None
        module = parse_module(text)
        with self.lock:
            if self.execution == "running":
                raise Refusal(400, E_EXEC_STATE, "RAPID is running; stop it first")
            if not module.name:
                raise Refusal(400, E_RAPID_SYNTAX_ERROR, "; ".join(map(str, module.errors)))
            key = module.name.lower()
            if key in {name.lower() for name in SYSTEM_MODULES}:
                raise Refusal(400, E_MOD_AMBNAME, f"{module.name} is a system module of the controller")
            if key in self.modules and not replace:
                raise Refusal(400, E_MOD_AMBNAME, f"module {module.name} is loaded already (replace=true replaces it)")
            self.modules[key] = module
            if self.program == key or module.has_main:
                self.program = None  # structure changed: the program pointer is lost (our choice)
            self.log(INFO, EV_MODULE_LOADED, "Module loaded", f"Module {module.name} was loaded into task {TASK}.",
                     module.name, TASK)
            for error in module.errors:
                self.log(ERROR, EV_MODULE_ERROR, "RAPID syntax error", f"Module {module.name}, {error}.",
                         module.name, str(error))
            return module

    def unload_module(self, task: str, name: str) -> None:
        self._task(task)
        with self.lock:
            module = self.modules.get(name.lower())
            if module is None or name.lower() in {n.lower() for n in SYSTEM_MODULES}:
                raise Refusal(404 if module is None else 400, E_NO_SUCH_SYMBOL if module is None else E_REJECT,
                              f"no program module {name} in task {TASK}")
            if self.execution == "running":
                raise Refusal(400, E_EXEC_STATE, "RAPID is running; stop it first")
            del self.modules[name.lower()]
            if self.program == name.lower():
                self.program = None
            self.log(INFO, EV_MODULE_UNLOADED, "Module unloaded", f"Module {module.name} was unloaded.", module.name)

    def build_errors(self, task: str) -> list[tuple[str, BuildError]]:
        """Every loaded module's build errors as (module name, error), in load order."""
        with self.lock:
            return [(module.name, error) for module in self.module_list(task) for error in module.errors]

    def module_list(self, task: str) -> list[RapidModule]:
        self._task(task)
        with self.lock:
            return list(self.modules.values())

    def find_symbol(self, task: str, module: str | None, name: str) -> tuple[RapidModule, Symbol]:
        """A datum by task, module (None: any module, as RWS 1.0 allows) and name."""
        self._task(task)
        with self.lock:
            if module is not None:
                found = self.modules.get(module.lower())
                if found is None:
                    raise Refusal(404, E_NO_SUCH_SYMBOL, f"no module {module} in task {TASK}")
                candidates = [found]
            else:
                candidates = list(self.modules.values())
            for candidate in candidates:
                symbol = candidate.symbols.get(name.lower())
                if symbol is not None:
                    return candidate, symbol
        raise Refusal(404, E_NO_SUCH_SYMBOL, f"no RAPID datum {name} in task {TASK}")

    def write_symbol(self, task: str, module: str | None, name: str, literal: str) -> None:
        """Set a VAR or PERS (a CONST is refused, our choice of code) to a RAPID literal of its type."""
        owner, symbol = self.find_symbol(task, module, name)
        if symbol.kind == "CONST":
            raise Refusal(400, E_REJECT, f"{symbol.name} is a CONST")
        value = check_literal(symbol, literal)
        if value is None:
            raise Refusal(400, E_INVALIDARG, f"{literal[:40]!r} is not a {symbol.type} value")
        with self.lock:
            symbol.value = value
            self._changed("symbol", f"{owner.name}/{symbol.name}")

    # EGM's view ----------------------------------------------------------------------------------

    def egm_program(self) -> RapidModule | None:
        """The module whose main runs EGM, if it runs now: motors on, RAPID running, main reaches
        EGMRunJoint/EGMRunPose. The EGM loop streams exactly while this is not None."""
        with self.lock:
            if self.ctrlstate != "motoron" or self.execution != "running" or self.program is None:
                return None
            module = self.modules.get(self.program)
            return module if module is not None and module.egm_mode() is not None else None

    def egm_comm_timeout(self) -> bool:
        """ERR_UDPUC_COMM (event 41822): True if the program's handler goes on (the template's
        TRYNEXT), else RAPID stops with the error."""
        with self.lock:
            self.log(WARNING, EV_UDPUC_COMM, "No data from the UdpUc device",
                     "No data from the sensor within \\CommTimeout (ERR_UDPUC_COMM).", TASK)
            module = self.modules.get(self.program or "")
            if module is not None and module.retries_comm_error():
                return True
            self._stop_program(EV_TASK_STOPPED, ERROR, "ERR_UDPUC_COMM: no error handler takes it.")
            return False

    def rapid_mapping(self) -> dict[str, tuple[Signal, ...]] | None:
        """The running program's RAPID data mapping (the template's *_NAMES): signals by kind; None
        if the program has no ``robohal_to_pc`` (then EGM carries no RAPID data)."""
        with self.lock:
            module = self.modules.get(self.program or "")
            if module is None or "robohal_to_pc" not in module.symbols:
                return None
            return {kind: tuple(self.signal(name) for name in names if self._known(name))
                    for kind, names in module.signal_names().items()}

    def _known(self, name: str) -> bool:
        try:
            self.signal(name)
        except Refusal:
            return False
        return True

    # I/O ---------------------------------------------------------------------------------------

    def signal(self, path: str) -> Signal:
        """A signal by NETWORK/DEVICE/NAME, or by its name alone (our choice: names are unique here)."""
        with self.lock:
            found = self.signals.get(path)
            if found is None and "/" not in path:
                matches = [s for s in self.signals.values() if s.name.lower() == path.lower()]
                found = matches[0] if len(matches) == 1 else None
        if found is None:
            raise Refusal(404, E_INVALIDARG, f"no signal {path}")
        return found

    def set_signal(self, path: str, text: str, from_cell: bool = False) -> Signal:
        """Set an output to ``text`` (lvalue): 0/1 for digital, within its range for analog and
        group signals. Inputs are the cell's (our choice: refused to clients, ``from_cell`` sets them)."""
        signal = self.signal(path)
        if not signal.output and not from_cell:
            raise Refusal(400, E_REJECT, f"{signal.name} is an input")
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise Refusal(400, E_INVALIDARG, f"{text!r} is not a value for {signal.name}") from None
        whole = signal.type not in ("AO", "AI")
        if not (signal.minimum <= value <= signal.maximum) or (whole and value != int(value)):
            raise Refusal(400, E_INVALIDARG, f"{signal.name} takes {signal.minimum:g}..{signal.maximum:g}"
                          + (" (whole numbers)" if whole else ""))
        with self.lock:
            if value != signal.value:
                signal.value = value
                self._changed("signal", signal.path)
        return signal

    # Controller restart (fault injection) ---------------------------------------------------------

    def restart(self) -> None:
        """A warm start: motors off, RAPID stopped, mastership and RMMP gone; modules and the program
        pointer kept (our choice; a warm start keeps the program)."""
        with self.lock:
            self._stop_program(EV_TASK_STOPPED)
            self.masters.clear()
            self.rmmp.clear()
            self.rmmp_polled.clear()
            if self.ctrlstate != "motoroff":
                self.ctrlstate = "motoroff"
                self._changed("ctrlstate")
            self.log(INFO, EV_RESTARTED, "Controller restarted", "The controller was restarted (warm start).")
            self.log(INFO, EV_MOTORS_OFF, "Motors OFF state", DESCRIPTIONS[EV_MOTORS_OFF])

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {"opmode": self.opmode, "ctrlstate": self.ctrlstate, "execution": self.execution,
                    "program": self.program, "speedratio": self.speed_ratio,
                    "modules": sorted(m.name for m in self.modules.values()),
                    "masters": dict(self.masters), "signals": {s.path: s.value for s in self.signals.values()},
                    "elog": self.elog[-1].seqnum if self.elog else 0}
