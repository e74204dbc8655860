"""The cell's I/O signals over EGM's RAPID data (``robot.io``), and a gripper on them (``robot.gripper``).

The URI names the signals robohal's RAPID template maps (rapid/SETUP.md says how)::

    abb-egm://0.0.0.0:6510?model=abb.irb1410&do=vacuum&di=vacuum_on,part_present
        &gripper=vacuum&gripper_closed=vacuum_on&gripper_part=part_present&gripper_delay=0.2

``do``/``ao`` are the digital/analog outputs robohal sets, ``di``/``ai`` the inputs it reads
(comma-separated names: letters, digits and ``_``, each name once). ``gripper=DO`` makes that
output a two-state gripper (on: closed, or suction on) with an optional closed feedback input
``gripper_closed``, a part sensor ``gripper_part``, its switching time ``gripper_delay`` (s),
a deadline for the feedback ``gripper_timeout`` (s) and the opening it reports when open,
``gripper_width`` (m); see :class:`robohal.control.tools.SignalGripper`.

On the wire, in the order the URI names them:

- every answer carries ``EgmSensor.RAPIDtoRobot.dnum`` = ``[1, do..., ao...]`` (the
  template's ``\\DataFromSensor`` array). The leading 1 says "robohal's outputs follow":
  the template clears the array when a session starts and sets no signal before it sees it,
  so nothing is applied from an older sensor or an empty message.
- every robot message carries ``EgmRobot.RAPIDfromRobot.dnum`` =
  ``[#di, #ai, #do, #ao, di..., ai..., do..., ao...]`` (``\\DataToSensor``): how many signals of
  each kind the RAPID program maps (so a mapping that differs from the URI's is an error, not
  zeros read as signals), the inputs, then the outputs as the controller has them.

Connecting changes no output: each starts as the controller reports it, and from then on is
what the user set, sent with every answer (the controller's value is
:meth:`EgmSignals.controller_outputs`). A controller that maps other signals than the URI
declares is a configuration error, named on the first read or write; nothing is sent then.
"""

from __future__ import annotations

import re
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from robohal import HardwareFault, RobohalError, UriError
from robohal.control.tools import IoPorts, Signal, SignalGripper
from robohal.uri import RobotUri

if TYPE_CHECKING:
    from .backend import EgmBackend

#: what the URI's signal lists are called, and what each declares
KINDS = {"do": ("digital", "output"), "ao": ("analog", "output"),
         "di": ("digital", "input"), "ai": ("analog", "input")}
#: RAPID's dnum arrays in ABB's examples hold 40 values (``PERS dnum ...{40}``), so do the template's:
#: the report is the four counts, the inputs and the outputs; the command 1 + outputs
MAX_VALUES = 40
HEADER = 4  # the report's counts: di, ai, do, ao
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: the gripper's URI parameters besides ``gripper`` itself
GRIPPER_PARAMS = ("gripper_closed", "gripper_part", "gripper_delay", "gripper_timeout", "gripper_width")
#: s to wait for the gripper's feedback. Our choice: longer than the link's default timeout
#: (2 s), so a silent controller is reported as a lost link, not as a gripper that stuck
DEFAULT_GRIPPER_TIMEOUT = 3.0
DEFAULT_GRIPPER_DELAY = 0.2  # s; our choice: a small pneumatic gripper or vacuum cup switches in 0.05-0.2 s
DEFAULT_GRIPPER_WIDTH = 0.05  # m, the opening a two-state gripper reports when open (no sensor measures it)


@dataclass(frozen=True)
class SignalLayout:
    """The signals a URI declares, in wire order."""

    do: tuple[str, ...] = ()
    ao: tuple[str, ...] = ()
    di: tuple[str, ...] = ()
    ai: tuple[str, ...] = ()

    @classmethod
    def from_uri(cls, uri: RobotUri) -> SignalLayout:
        lists: dict[str, tuple[str, ...]] = {}
        seen: set[str] = set()
        for key in KINDS:
            names = tuple(name.strip() for name in uri.params.get(key, "").split(",") if name.strip())
            for name in names:
                if not _NAME.match(name):
                    raise UriError(f"{uri}: signal name {name!r} in {key}= must be letters, digits and _")
                if name in seen:
                    raise UriError(f"{uri}: signal {name!r} is declared twice")
                seen.add(name)
            lists[key] = names
        layout = cls(**lists)
        if HEADER + len(layout.inputs) + len(layout.outputs) > MAX_VALUES:
            raise UriError(f"{uri}: at most {MAX_VALUES - HEADER} signals in all (the RAPID template's arrays hold"
                           f" {MAX_VALUES} values), got {len(layout.inputs) + len(layout.outputs)}")
        return layout

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.do + self.ao

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.di + self.ai

    @property
    def counts(self) -> list[float]:
        """The report's header this layout expects: how many di, ai, do, ao."""
        return [float(len(self.di)), float(len(self.ai)), float(len(self.do)), float(len(self.ao))]

    @property
    def signals(self) -> dict[str, Signal]:
        return {name: Signal(name, *KINDS[key]) for key in KINDS for name in getattr(self, key)}

    def __bool__(self) -> bool:
        return bool(self.outputs or self.inputs)


class EgmSignals:
    """The live signals of one EGM backend: the outputs to send and the inputs last reported.

    The backend encodes :attr:`to_robot` into every answer; a write replaces it at once (one
    attribute, so an answer carries either the old values or the new ones, never a mix).
    """

    def __init__(self, layout: SignalLayout, backend: EgmBackend) -> None:
        self.layout = layout
        self._backend = weakref.ref(backend)  # robot.io must not keep a dropped robot's link open
        self._lock = threading.Lock()
        self._outputs: dict[str, float] | None = None  # None until the controller reported them
        #: the RAPIDtoRobot values every answer carries, or None: nothing to send (yet)
        self.to_robot: tuple[float, ...] | None = None
        self.ports = IoPorts(layout.signals, read=self.read, write=self.write, owner=str(backend.uri))

    def reset(self) -> None:
        """A new connection: the outputs are the controller's again, as its next report says."""
        with self._lock:
            self._outputs, self.to_robot = None, None

    def start(self, rapid: list[float] | None) -> None:
        """Take the outputs as the controller reports them (``RAPIDfromRobot.dnum``), if it does."""
        if not self.layout.outputs:
            return
        with self._lock:
            if self._outputs is None and self._fits(rapid):
                assert rapid is not None
                self._outputs = dict(zip(self.layout.outputs, rapid[self._outputs_start:self._report_size], strict=True))
                self._encode()

    def _fits(self, rapid: list[float] | None) -> bool:
        return rapid is not None and len(rapid) >= self._report_size and rapid[:HEADER] == self.layout.counts

    @property
    def _outputs_start(self) -> int:
        return HEADER + len(self.layout.inputs)

    @property
    def _report_size(self) -> int:
        return self._outputs_start + len(self.layout.outputs)

    def _encode(self) -> None:
        assert self._outputs is not None
        self.to_robot = (1.0, *(self._outputs[name] for name in self.layout.outputs))

    def _report(self) -> list[float]:
        """The newest ``RAPIDfromRobot.dnum``, complete; the link's or the setup's error otherwise."""
        backend = self._backend()
        if backend is None:
            raise RobohalError(f"{self.ports.owner} is closed")
        message = backend.fresh_message()
        rapid = message.rapid
        if not self._fits(rapid):
            if rapid is None or len(rapid) < HEADER:
                got = "no RAPID data" if rapid is None else f"only {len(rapid)} RAPID values"
            else:
                got = "RAPID data mapping " + _counted(rapid[:HEADER])
                if rapid[:HEADER] == self.layout.counts:
                    got += f" in {len(rapid)} values, fewer than those take"
            raise HardwareFault(
                f"abb-egm: the controller reports {got}; the URI declares {_counted(self.layout.counts)}"
                f" ({', '.join(self.layout.inputs + self.layout.outputs)}): check that the RAPID program passes"
                " \\DataToSensor and \\DataFromSensor to EGMActJoint and names these signals, in this order,"
                " in DO_NAMES .. AI_NAMES (rapid/SETUP.md)", names=("rapid_data_mismatch",))
        self.start(rapid)
        return rapid

    def read(self, name: str) -> float:
        """An input as the newest robot message reports it; an output as last set."""
        rapid = self._report()
        if name in self.layout.inputs:
            return rapid[HEADER + self.layout.inputs.index(name)]
        assert self._outputs is not None
        return self._outputs[name]

    def write(self, name: str, value: float) -> None:
        """Set an output: the next answer (within a period) carries it, and every answer after."""
        self._report()  # connected, the robot heard from, the outputs known
        with self._lock:
            assert self._outputs is not None
            self._outputs = {**self._outputs, name: float(value)}
            self._encode()

    def controller_outputs(self) -> dict[str, float]:
        """The outputs as the controller reports them now (what it really set)."""
        rapid = self._report()
        return dict(zip(self.layout.outputs, rapid[self._outputs_start:self._report_size], strict=True))


def _counted(counts: list[float]) -> str:
    return ", ".join(f"{count:g} {kind}" for kind, count in zip(("di", "ai", "do", "ao"), counts, strict=True))


# The tool factories (ToolSpec) ------------------------------------------------------------------


def io_for(uri: RobotUri, backend: EgmBackend) -> IoPorts | None:
    """``robot.io``: the signals the URI declares (none: None)."""
    return backend.signals.ports if backend.signals.layout else None


def gripper_for(uri: RobotUri, backend: EgmBackend) -> SignalGripper | None:
    """``robot.gripper``: the two-state gripper ``gripper=DO`` names, or None."""
    output = uri.params.get("gripper")
    if output is None:
        stray = [key for key in GRIPPER_PARAMS if key in uri.params]
        if stray:
            raise UriError(f"{uri}: {', '.join(stray)} without gripper=OUTPUT (the output that closes it)")
        return None
    layout = backend.signals.layout
    _declared(uri, "gripper", output, layout.do, "do")
    closed, part = uri.params.get("gripper_closed"), uri.params.get("gripper_part")
    for key, name in (("gripper_closed", closed), ("gripper_part", part)):
        if name is not None:
            _declared(uri, key, name, layout.di, "di")
    return SignalGripper(
        backend.signals.ports, output, closed_input=closed, part_input=part,
        delay=uri.get_float("gripper_delay", DEFAULT_GRIPPER_DELAY, minimum=0.0),
        timeout=uri.get_float("gripper_timeout", DEFAULT_GRIPPER_TIMEOUT, minimum=0.01),
        width=uri.get_float("gripper_width", DEFAULT_GRIPPER_WIDTH, minimum=1e-4), name="ABB gripper")


def _declared(uri: RobotUri, key: str, name: str, names: tuple[str, ...], kind: str) -> None:
    if name not in names:
        raise UriError(f"{uri}: {key}={name} is not one of the {kind}= signals ({', '.join(names) or 'none'});"
                       f" add it there")

