"""The values Robot Web Services calls return, as plain Python: states as the controller's own
words, a speed ratio as a fraction, signal values as bool (digital), float (analog) or int (group),
RAPID data as Python values where they have one."""

from __future__ import annotations

from dataclasses import dataclass, field

#: the controller states ``/rw/panel/ctrlstate`` reports (ABB's RWS reference)
CONTROLLER_STATES = ("init", "motoron", "motoroff", "guardstop", "emergencystop", "emergencystopreset", "sysfail")
#: event log message types (ABB's RWS reference: ``msgtype``)
SEVERITIES = {1: "info", 2: "warning", 3: "error"}


@dataclass(frozen=True)
class SystemInfo:
    """The controller's system: its name, RobotWare version and system id."""

    name: str
    robotware: str
    system_id: str = ""


@dataclass(frozen=True)
class ExecutionState:
    """RAPID execution: ``state`` is ``running`` or ``stopped``; ``cycle`` ``once``, ``forever`` or ``asis``."""

    state: str
    cycle: str = ""

    @property
    def running(self) -> bool:
        return self.state == "running"


@dataclass(frozen=True)
class Signal:
    """An I/O signal: its path (``NETWORK/DEVICE/NAME``, or the name alone), type (``DI``, ``DO``,
    ``AI``, ``AO``, ``GI``, ``GO``) and value (bool, float or int by type)."""

    name: str
    path: str
    type: str
    value: bool | float | int

    @property
    def output(self) -> bool:
        return self.type.endswith("O")


@dataclass(frozen=True)
class ElogEntry:
    """One event log message: ``seqnum`` orders them; ``code`` is ABB's event number (41822:
    no data from the UdpUc device, EGM's CommTimeout); ``msgtype`` 1 info, 2 warning, 3 error."""

    seqnum: int
    code: int
    msgtype: int
    title: str
    description: str = ""
    causes: str = ""
    consequences: str = ""
    actions: str = ""
    timestamp: str = ""
    domain: int = 0
    args: tuple[str, ...] = field(default=())

    @property
    def severity(self) -> str:
        return SEVERITIES.get(self.msgtype, str(self.msgtype))

    def __str__(self) -> str:
        return f"#{self.seqnum} {self.severity} {self.code} {self.title}".rstrip()


@dataclass(frozen=True)
class BuildError:
    """A RAPID build error: where (module, row, column) and the controller's words."""

    module: str
    row: int
    column: int
    error: str

    def __str__(self) -> str:
        return f"{self.module}:{self.row}:{self.column}: {self.error}"


@dataclass(frozen=True)
class Event:
    """One subscription event: ``kind`` is ``controller-state``, ``execution``, ``signal``, ``elog``
    or ``other``; ``resource`` the subscribed URI it is about; ``value`` the new value (a state
    word, a signal's value as text, an elog sequence number)."""

    kind: str
    resource: str
    value: str
    fields: dict[str, str] = field(default_factory=dict, compare=False)
