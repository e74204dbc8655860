"""A simulated ABB controller running EGM: the robot side of the protocol.

    python -m robohal_abb.simulator --sensor 127.0.0.1:6510 --model abb.irb1410 [--seed N] [--loss P] ...
    robohal sim abb-egm --sensor 127.0.0.1:6510 --model abb.irb1410 ...  (the same program)

Like a real controller it is the UDP client: every 4 ms it sends a complete
``EgmRobot`` (header with seqno from 0 per session, tm and mtype DATA; feedback
and planned joints, pose and time; motor, MCI and RAPID states, convergence
flag, utilisation) to the sensor address, and follows the newest target it
receives with a first-order lag inside the model's speed limits. It reads the sensor's
answers at the start of each cycle, as a controller's servo cycle takes the newest target
it has, each stamped by the kernel on arrival (what counts for the round trip and every
timeout): an answer never wakes it, so a sensor on the same computer keeps its core while
it works on, as it would beside a real controller. It emulates
the RAPID template in ``robohal_abb/rapid/``: ``\\CommTimeout`` (no sensor data
for that long: motion stops, MCI error and RAPID stopped, as ERR_UDPUC_COMM),
``\\CondTime`` (convergence held that long ends the EGM run) and, with
``--retry-after``, the error handler that starts a new session (seqno 0).

Its tool (``--tool vacuum``, the default) is a vacuum gripper at the flange, wired as the
template's I/O mapping and :mod:`robohal_abb.signals` describe: the digital output
``vacuum`` (from ``RAPIDtoRobot``), and the inputs ``vacuum_on`` (the valve's feedback) and
``part_present`` (the vacuum switch), reported in ``RAPIDfromRobot`` with the output's own
state. A part lies at ``--part X,Y,Z`` (m, base frame); the cup picks it while the vacuum
is on with the flange within ``PICK_TOLERANCE`` of it, carries it, and sets it down where
the vacuum goes off.

It sends only to the ``--sensor`` address given on the command line (loopback
by default). The first stdout line is the ready line of every robohal simulator,
``READY abb-egm://SENSOR_HOST:SENSOR_PORT?model=...&robot=HOST[&do=...]``: the URI a sensor
connects with (``robot=`` names this controller's own address, ``do=``/``di=``/``gripper=``
its tool's signals); its own UDP port goes to stderr. Later lines are ``EVENT ...`` and, on exit or on request, ``STATS {json}``. Control lines on stdin (for tests): ``RESTART [j1..j6 deg]``,
``MOTORS OFF``, ``STALL``, ``RESUME``, ``STATS``, ``QUIT``; the end of a pipe (the
launcher's) quits. Started otherwise (a terminal, ``</dev/null``, a background job), it runs
until Ctrl-C or SIGTERM.

With ``--rws 6|7`` it is also the controller behind simulated Robot Web Services
(:mod:`.rws_server` over :mod:`.controller_model`): it starts as after power-up (motors off,
RAPID stopped, silent) and streams only while RAPID runs a module whose main reaches an EGM run
with motors on; the ready URI adds ``rws=`` (and ``rws_fingerprint=`` for RobotWare 7's
certificate). Control lines ``RWS SLOW S``, ``RWS RESTART S``, ``RWS STALL``, ``RWS RESUME``,
``RWS DROP_WEBSOCKETS``, ``RWS PASSWORD P``, ``RWS OPMODE AUTO|MANR``, ``RWS RMMP GRANT|DENY``,
``RWS GUARDSTOP``, ``RWS ESTOP``, ``RWS RESET``, ``RWS SIGNAL NAME VALUE``, ``RWS STATE``.
"""

from __future__ import annotations

import json
import math
import random
import selectors
import socket
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

import click
import numpy as np
from robohal.kinematics import Kinematics
from robohal.sim.process import ControlLines, announce_ready, control_lines
from robohal.uri import RobotUri

from . import stamps, wire
from .controller_model import TOOL_INPUTS, TOOL_OUTPUT
from .signals import SignalLayout

if TYPE_CHECKING:
    from .controller_model import ControllerModel
    from .rws_server import RwsServer

# Where each rule comes from: "manual" is ABB's EGM application manual (RobotWare 7), "template"
# is robohal's RAPID module (rapid/RobohalEgm.mod), "abb_libegm" the acceptance rules of ABB's
# C++ EGM peer, as in the research notes; anything else says that it is our choice, and why.

SAMPLE_PERIOD = 0.004  # s: manual, EGM's default \SampleRate (a real controller measures about 4.032 ms)
#: s of silence before a new session: RAPID runs EGMReset/EGMSetupUC/EGMActJoint first, and
#: whatever the sensor sent to the old session meanwhile is dropped, never applied to the new one.
#: How long those instructions take is not documented: 50 ms is our choice, a dozen periods,
#: enough that answers to the old session arrive inside the gap
RESTART_GAP = 0.05
#: The tool's signals, in wire order, and the URI parameters that declare them to robohal
TOOL_LAYOUT = SignalLayout(do=("vacuum",), di=("vacuum_on", "part_present"))
TOOL_PARAMS = {"do": "vacuum", "di": "vacuum_on,part_present", "gripper": "vacuum",
               "gripper_closed": "vacuum_on", "gripper_part": "part_present"}
#: s from switching the vacuum output until the valve's feedback follows (and the cup holds or lets
#: go). Our choice: solenoid valves with an ejector switch in 10-50 ms; 50 ms is the slow end
VALVE_TIME = 0.05
#: m: the cup picks the part when the flange's origin is this close to it. Our choice: a suction cup
#: seals when it sits within a few millimetres of the part's flat centre; orientation is not modelled
PICK_TOLERANCE = 0.005
#: m, base frame: where the part lies unless --part says otherwise; our choice: the IRB 1410 (the
#: default model) reaches it with the cup facing down, away from its start pose
DEFAULT_PART = (0.85, 0.25, 0.90)
#: s the stream goes on after RAPID stops or the motors go off, reporting why, before it ends (with
#: RWS). Our choice: 25 periods, so a sensor learns the reason (motors off, RAPID stopped) from the
#: robot's own messages before they stop, as the EGM backend expects
STOP_REPORT = 0.1
#: s the RAPID template's ERR_UDPUC_COMM handler waits before a new session (its WaitTime 1)
TEMPLATE_RETRY = 1.0
#: the interpreter's thread switch interval while RWS runs in this process (see ``command``)
RWS_SWITCH_INTERVAL = 0.0005


@dataclass
class ControllerOptions:
    """Behaviour and fault injection of the simulated controller (SI units)."""

    period: float = SAMPLE_PERIOD
    mode: str = "joint"  # "joint" (EGMRunJoint) or "pose" (EGMRunPose, flange in base frame)
    # s, first-order time constant of the motion control. Manual: 10-20 ms control lag, a new
    # reference acts after about 20 ms. The first-order form is our choice (the manual gives no
    # model); 15 ms makes the feedback trail a steady ramp by 13-17 ms of motion, inside that range
    lag: float = 0.015
    convergence: float = math.radians(0.5)  # rad: manual, EGMActJoint's default +-0.5 deg per axis (also the template's)
    # s, \CondTime; 0: the run never ends by convergence. The manual's default is 1 s; the template
    # sets 86400 s (robohal holds between motions), which "never" stands for here
    cond_time: float = 0.0
    comm_timeout: float = 1.0  # s: \CommTimeout, the template's and the common setting; 0: off
    # rad/s: \MaxSpeedDeviation caps how fast EGM moves an axis (manual: 1 deg/s by default, which
    # is why the template sets it); the template's 250 deg/s binds the IRB 1410's wrist (280 deg/s)
    max_speed_deviation: float = math.radians(250.0)
    retry_after: float | None = None  # s after an ended run until the RAPID loop starts a new session
    seed: int | None = None
    loss: float = 0.0  # probability, each datagram in each direction
    delay: float = 0.0  # s added to every robot message
    duplicate: float = 0.0  # probability a robot message is sent twice
    reorder: float = 0.0  # probability a robot message is held back behind the next one
    stall_after: float | None = None  # s: stop sending (a hung controller or a pulled cable)
    motors_off_after: float | None = None  # s: motors off (RAPID stops)
    duration: float | None = None  # s: exit after this long
    q0: np.ndarray | None = None  # rad, start joints (default: zeros clipped to the limits)
    # (height m, stiffness N/m): a plane under the flange and a force sensor that measures it
    # pushing back (measuredForce); None: no force sensor, no measuredForce in the messages
    contact: tuple[float, float] | None = None
    tool: str = "vacuum"  # "vacuum": the vacuum gripper and its signals; "none": no RAPID data at all
    part: tuple[float, float, float] = DEFAULT_PART  # m, base frame


@dataclass
class Statistics:
    """Figures printed on exit: pacing, traffic and round trips.

    A round trip runs from a robot message's ``sendto`` to the kernel's receive stamp
    of the sensor's answer: the sensor's time alone (the controller reads the answer at
    its next cycle).
    """

    period: float = SAMPLE_PERIOD
    intervals: deque = field(default_factory=lambda: deque(maxlen=100_000))
    round_trips: deque = field(default_factory=lambda: deque(maxlen=100_000))
    counters: Counter = field(default_factory=Counter)

    def summary(self, elapsed: float) -> dict[str, Any]:
        def percentiles(values: deque) -> dict[str, float | None]:
            if not values:
                return {"p50_ms": None, "p99_ms": None, "max_ms": None}
            array = np.array(values) * 1000.0
            return {"p50_ms": float(np.percentile(array, 50)), "p99_ms": float(np.percentile(array, 99)),
                    "max_ms": float(array.max())}

        sent = self.counters["robot_messages_sent"]
        # how far a tick strays from the sample period (a real controller's are steady): the median,
        # and the best tenth's bound (a loaded host delays many ticks; a coarse clock every one)
        strays = np.abs(np.array(self.intervals) - self.period) * 1000.0
        jitter = {f"jitter_p{q}_ms": float(np.percentile(strays, q)) if self.intervals else None for q in (10, 50)}
        return {
            "elapsed_s": elapsed,
            "rate_hz": sent / elapsed if elapsed > 0 else 0.0,
            "period": {**percentiles(self.intervals), **jitter, "late_ticks": self.counters["late_ticks"]},
            "round_trip": percentiles(self.round_trips),
            "counters": dict(self.counters),
        }


class SimulatedController:
    """The controller: one UDP socket, one paced loop (see the module docstring)."""

    def __init__(self, model: Kinematics, sensor: tuple[str, int], bind: tuple[str, int] = ("127.0.0.1", 0),
                 options: ControllerOptions | None = None, out: TextIO | None = None,
                 model_name: str | None = None, cell: ControllerModel | None = None,
                 rws: RwsServer | None = None) -> None:
        if model.dof != 6:
            raise click.UsageError(f"EGM streams 6 robot joints; the model has {model.dof}")
        self.model = model
        self.model_name = model_name  # for the ready URI
        self.sensor = sensor
        self.options = options or ControllerOptions()
        if self.options.mode not in ("joint", "pose"):
            raise click.UsageError("--mode is joint or pose")
        self.out = out or sys.stdout
        self.rng = random.Random(self.options.seed)
        self.stats = Statistics(period=self.options.period)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        stamps.enable(self.sock)
        self.sock.bind(bind)
        self.sock.setblocking(False)
        self.address = self.sock.getsockname()
        limits = model.limits
        q0 = self.options.q0 if self.options.q0 is not None else np.zeros(6)
        self.q = limits.clip(np.asarray(q0, dtype=np.float64))
        self.dq = np.zeros(6)
        self.started = time.monotonic()
        self.running = True
        self.sending = True
        self._outbox: list[tuple[float, bytes]] = []  # (due, datagram), kept sorted by due
        self._held_back: bytes | None = None
        self._last_sent: float | None = None  # wall-clock time of the last sendto
        self.quiet_until = 0.0
        self._new_session()
        self.quiet_until = 0.0  # the first session starts at once
        if self.options.tool not in ("vacuum", "none"):
            raise click.UsageError("--tool is vacuum or none")
        # the tool: the controller's output, its switching time, the part (position, held or not)
        self.vacuum = False
        self.vacuum_switched = self.started - VALVE_TIME
        self.part = np.array(self.options.part, dtype=np.float64)
        self.held: np.ndarray | None = None  # the part's offset from the flange while the cup holds it
        # With RWS the controller is one: RAPID, the motors and the I/O are the cell's (controller_model),
        # and EGM flows only while its program runs an EGM instruction (see _follow_rapid)
        self.cell = cell
        self.rws = rws
        self.egm_active = False
        self.silent_at: float | None = None  # when the stream ends after a stop (STOP_REPORT)
        if cell is not None:
            self.motors, self.rapid, self.mci = "off", "stopped", "stopped"
            self.sending = False  # after power-up: motors off, RAPID stopped, no EGM until started
            self.stats.counters["sessions"] = 0

    # The robot's state machine ---------------------------------------------------------

    def _event(self, name: str, **fields: Any) -> None:
        details = " ".join(f"{key}={value}" for key, value in fields.items())
        self.out.write(f"EVENT {name} {details}".rstrip() + "\n")
        self.out.flush()

    def _new_session(self, q: np.ndarray | None = None) -> None:
        """Start an EGM run (EGMActJoint + EGMRunJoint): seqno 0, hold where the robot is."""
        if q is not None:
            self.q = self.model.limits.clip(q)
        self.dq = np.zeros(6)
        self.target = self.q.copy()
        self.seqno = 0
        self.motors = "on"
        self.mci = "running"
        self.rapid = "running"
        self.quiet_until = time.monotonic() + RESTART_GAP
        self.session_started = self.quiet_until
        self.last_sensor_data = self.session_started
        self.converged_since: float | None = None
        self.ended_at: float | None = None
        self.stats.counters["sessions"] += 1

    def _end_run(self, now: float, mci: str, rapid: str, why: str) -> None:
        self.mci, self.rapid = mci, rapid
        self.target = self.q.copy()  # motion stops where it is
        self.ended_at = now
        self._event(why, seqno=self.seqno)

    def command(self, line: str) -> None:
        """One control line (see the module docstring)."""
        words = line.strip().upper().split()
        if not words:
            return
        self.stats.counters[f"command_{words[0].lower()}"] += 1
        if words[0] == "RWS":
            self._rws_line(line.strip().split()[1:])
        elif words[0] == "RESTART" and self.cell is not None and not self.egm_active:
            self._event("restart_ignored", why="RAPID runs no EGM session")  # the cell's RAPID decides
        elif words[0] == "RESTART":
            q = None
            if len(words) == 7:
                q = np.radians([float(w) for w in words[1:]])
            self._new_session(q)
            self.sending = True
            self._event("restart", q_deg=",".join(f"{v:.3f}" for v in np.degrees(self.q)))
        elif words[:2] == ["MOTORS", "OFF"]:
            self._motors_off(time.monotonic())
        elif words[0] == "STALL":
            self.sending = False
            self._event("stall")
        elif words[0] == "RESUME":
            self.sending = True
            self._event("resume")
        elif words[0] == "STATS":
            self._print_stats()
        elif words[0] == "QUIT":
            self.running = False
        else:
            self._event("unknown_command", line=line.strip())

    def _rws_line(self, words: list[str]) -> None:
        """``RWS ...`` control lines: fault injection and the operator at the FlexPendant (the module
        docstring lists them). Answers ``RWS {json}`` to STATE and ``ERROR ...`` to what it cannot do."""
        cell, rws = self.cell, self.rws
        if cell is None or rws is None:
            self._event("error", why="this controller has no RWS (--rws 6 or --rws 7)")
            return
        verb = words[0].upper() if words else ""
        argument = words[1] if len(words) > 1 else ""
        try:
            if verb == "SLOW" and len(words) == 2:
                rws.call(rws.set_slow, _seconds(argument))
            elif verb == "RESTART" and len(words) == 2:
                rws.call(rws.restart, _seconds(argument))
            elif verb == "STALL":
                rws.call(rws.stall, True)
            elif verb == "RESUME":
                rws.call(rws.stall, False)
            elif verb == "DROP_WEBSOCKETS":
                rws.call(rws.drop_websockets)
            elif verb == "PASSWORD" and len(words) == 2:
                rws.call(setattr, rws.sessions, "password", argument)
            elif verb == "OPMODE" and len(words) == 2:
                cell.set_opmode(argument.upper())
            elif verb == "RMMP" and argument.upper() in ("GRANT", "DENY"):
                cell.operator_rmmp(argument.upper() == "GRANT")
            elif verb in ("GUARDSTOP", "ESTOP"):
                cell.cell_stop("guardstop" if verb == "GUARDSTOP" else "emergencystop")
            elif verb == "RESET":
                cell.reset_stop()
            elif verb == "SIGNAL" and len(words) == 3:
                cell.set_signal(argument, words[2], from_cell=True)
            elif verb == "STATE":
                state = {**cell.snapshot(), "egm_active": self.egm_active, "sending": self.sending, **rws.counters,
                         "websockets": rws.websocket_count()}
                self.out.write("RWS " + json.dumps(state, sort_keys=True) + "\n")
                self.out.flush()
                return
            else:
                raise ValueError(f"unknown RWS control line {' '.join(words)!r}")
        except Exception as exc:  # a refusal of the model, a bad number: said, never fatal
            self.out.write(f"ERROR {getattr(exc, 'message', exc)}\n")
            self.out.flush()
            return
        self._event("rws", line=" ".join(words))

    def _motors_off(self, now: float) -> None:
        if self.cell is not None:
            self.cell.cell_stop("motoroff")  # RAPID stops with it; _follow_rapid ends the stream
            return
        self.motors, self.rapid, self.mci = "off", "stopped", "stopped"
        self.target = self.q.copy()
        self.dq = np.zeros(6)
        self.ended_at = None  # only a restart (motors on, program started) brings it back
        self._event("motors_off", seqno=self.seqno)

    def step(self, now: float) -> None:
        """Advance the robot by one sample period."""
        o = self.options
        elapsed = now - self.started
        if self.cell is not None:
            self._follow_rapid(now)
        if o.motors_off_after is not None and self.motors == "on" and elapsed >= o.motors_off_after:
            o.motors_off_after = None
            self._motors_off(now)
        if o.stall_after is not None and elapsed >= o.stall_after:
            o.stall_after = None
            self.sending = False
            self._event("stall")
        # manual / abb_libegm: targets are followed only with motors on, MCI and RAPID running
        active = self.motors == "on" and self.mci == "running" and self.rapid == "running"
        # manual: no sensor data for \CommTimeout s raises ERR_UDPUC_COMM (event 41822), the run stops
        # (measured here: it fires 1.004 s after the sensor stopped, with 1 s)
        if active and o.comm_timeout > 0 and now - self.last_sensor_data > o.comm_timeout:
            self.stats.counters["comm_timeouts"] += 1
            self._end_run(now, "error", "stopped", "comm_timeout")  # ERR_UDPUC_COMM, event 41822
            active = False
            if self.cell is not None:
                # the template's handler: EGMReset (the stream ends), WaitTime, a new session; without
                # a handler RAPID stops with the error and _follow_rapid ends the run for good
                self.silent_at = now + STOP_REPORT
                if not self.cell.egm_comm_timeout():
                    self.ended_at = None
        if self.motors == "on":
            self._follow(o.period)
        if o.tool != "none":
            self._tool_step(now)
        if active:
            # manual: the run ends once every axis has been within its convergence band for \CondTime
            error = np.abs(self.target - self.q).max()
            if error < o.convergence:
                self.converged_since = self.converged_since or now
                if o.cond_time > 0 and now - self.converged_since >= o.cond_time:
                    self._end_run(now, "stopped", "running", "cond_time")
            else:
                self.converged_since = None
        retry = o.retry_after if o.retry_after is not None or self.cell is None else TEMPLATE_RETRY
        if self.ended_at is not None and retry is not None and now - self.ended_at >= retry:
            self._new_session()  # the RAPID loop runs EGMSetupUC/EGMActJoint/EGMRunJoint again
            if self.cell is not None:
                self.sending, self.silent_at = True, None
            self._event("new_session")

    def _follow_rapid(self, now: float) -> None:
        """With RWS: start an EGM session when the cell's program starts running an EGM instruction
        (motors on, RAPID running); end it when RAPID stops or the motors go off, reporting that for
        STOP_REPORT, then silence, as a controller whose EGM run has ended."""
        assert self.cell is not None
        program = self.cell.egm_program()
        if program is not None and not self.egm_active:
            self.egm_active = True
            self._new_session()
            self.sending, self.silent_at = True, None
            self._event("egm_started", module=program.name, mode=program.egm_mode())
        elif program is None and self.egm_active:
            self.egm_active = False
            self.motors = "on" if self.cell.ctrlstate == "motoron" else "off"
            self.rapid, self.mci = "stopped", "stopped"
            self.target = self.q.copy()  # motion stops where it is
            self.dq = np.zeros(6)
            self.ended_at = None
            self.silent_at = now + STOP_REPORT
            self._event("egm_ended", motors=self.motors, rapid=self.cell.execution)
        if self.silent_at is not None and now >= self.silent_at:
            self.sending, self.silent_at = False, None

    def _follow(self, dt: float) -> None:
        """One period of motion control: a first-order lag towards the target (see ``lag``), never
        faster than the axes' rated speeds (the model's velocity limits: no real axis exceeds them)
        nor than \\MaxSpeedDeviation."""
        limits = self.model.limits
        alpha = 1.0 if self.options.lag <= 0 else 1.0 - math.exp(-dt / self.options.lag)
        speed = np.minimum(limits.velocity, self.options.max_speed_deviation)
        step = np.clip((self.target - self.q) * alpha, -speed * dt, speed * dt)
        self.q = limits.clip(self.q + step)
        self.dq = step / dt

    def message(self, now_wall: float) -> bytes:
        """The EgmRobot for this sample."""
        limits = self.model.limits
        # manual: mciConvergenceMet, every axis within its convergence band
        converged = bool(np.abs(self.target - self.q).max() < self.options.convergence)
        data = wire.encode_robot(
            seqno=self.seqno,
            tm=int((time.monotonic() - self.started) * 1000.0),
            time=now_wall,
            q=self.q,
            q_planned=self.target,
            pose=self.model.forward(self.q),
            pose_planned=self.model.forward(self.target),
            motor_state=self.motors,
            mci_state=self.mci,
            rapid_state=self.rapid,
            converged=converged,
            # a percentage on the wire (manual); what it measures here is our choice: the fastest
            # axis's share of its rated speed, 0 at rest (nothing reads it as more than a figure)
            utilization=float(np.abs(self.dq / limits.velocity).max() * 100.0),
            force=self._measured_force(),
            rapid=self._rapid_report(time.monotonic()),
        )
        self.seqno += 1  # manual / abb_libegm: seqno counts from 0 in each session
        return data

    def _measured_force(self) -> np.ndarray | None:
        """measuredForce from the contact plane: the plane pushing the flange up (base z), N.
        Our model: a force sensor reporting in the base frame, a plane that does not stop the arm
        (EGM keeps following its targets; robohal's reactions are what stop it)."""
        if self.options.contact is None:
            return None
        height, stiffness = self.options.contact
        force = np.zeros(6)
        force[2] = max(height - float(self.model.forward(self.q)[2, 3]), 0.0) * stiffness
        return force

    # The tool ----------------------------------------------------------------------------

    def _apply_outputs(self, rapid: list[float], now: float) -> None:
        """The template's I/O loop: the outputs robohal sent, once its leading 1 says they are its."""
        counters = self.stats.counters
        if self.cell is not None:
            self._apply_cell_outputs(rapid)
            return
        if not rapid or rapid[0] != 1.0 or len(rapid) < 1 + len(TOOL_LAYOUT.outputs):
            counters["rapid_data_not_applied"] += 1
            return
        vacuum = rapid[1] >= 0.5  # template: SetDO with the value rounded (robohal sends 0 or 1)
        if vacuum != self.vacuum:
            self.vacuum, self.vacuum_switched = vacuum, now
            self._event("output", vacuum=int(vacuum))

    def _vacuum_on(self, now: float) -> bool:
        """The valve's feedback: the output's state once the valve has switched."""
        return self.vacuum if now - self.vacuum_switched >= VALVE_TIME else not self.vacuum

    def _apply_cell_outputs(self, rapid: list[float]) -> None:
        """With RWS: the template's ApplyOutputs sets the cell's signals its DO_NAMES/AO_NAMES map."""
        assert self.cell is not None
        mapping = self.cell.rapid_mapping()
        outputs = (mapping or {}).get("do", ()) + (mapping or {}).get("ao", ())
        if not mapping or not rapid or rapid[0] != 1.0 or len(rapid) < 1 + len(outputs):
            self.stats.counters["rapid_data_not_applied"] += 1
            return
        for signal, value in zip(outputs, rapid[1:], strict=False):
            digital = signal.type == "DO"
            text = ("1" if value >= 0.5 else "0") if digital else f"{min(max(value, signal.minimum), signal.maximum):g}"
            self.cell.set_signal(signal.path, text)

    def _tool_step(self, now: float) -> None:
        if self.cell is not None:
            vacuum = self.cell.signals[TOOL_OUTPUT].value >= 0.5  # the cell's output, set by RWS or EGM
            if vacuum != self.vacuum:
                self.vacuum, self.vacuum_switched = vacuum, now
                self._event("output", vacuum=int(vacuum))
        flange = self.model.forward(self.q)[:3, 3]
        if self.held is not None:
            self.part = flange + self.held
            if not self._vacuum_on(now):
                self.held = None
                self._event("released", at=",".join(f"{v:.4f}" for v in self.part))
        elif self._vacuum_on(now) and self.vacuum and np.linalg.norm(self.part - flange) <= PICK_TOLERANCE:
            self.held = self.part - flange
            self._event("picked", at=",".join(f"{v:.4f}" for v in self.part))
        if self.cell is not None:  # the valve's feedback and the vacuum switch, as the cell's inputs
            for path, value in zip(TOOL_INPUTS, (self._vacuum_on(now), self.held is not None), strict=True):
                if self.cell.signals[path].value != float(value):
                    self.cell.set_signal(path, str(int(value)), from_cell=True)

    def _rapid_report(self, now: float) -> list[float] | None:
        """RAPIDfromRobot as the template fills it: the counts, the inputs, then the output as
        the controller has it (TOOL_LAYOUT's order)."""
        if self.options.tool == "none":
            return None
        if self.cell is not None:
            mapping = self.cell.rapid_mapping()  # the running module's *_NAMES; None: no RAPID data
            if mapping is None:
                return None
            kinds = ("di", "ai", "do", "ao")
            return [*(float(len(mapping[kind])) for kind in kinds),
                    *(signal.value for kind in kinds for signal in mapping[kind])]
        return [*TOOL_LAYOUT.counts, float(self._vacuum_on(now)), float(self.held is not None), float(self.vacuum)]

    # Sensor data ----------------------------------------------------------------------

    def receive(self, datagram: bytes, now: float, arrival: float | None = None) -> None:
        """Take one sensor datagram that arrived at ``now`` (monotonic); ``arrival`` is its
        kernel receive stamp (wall clock) when the socket gave one."""
        counters = self.stats.counters
        if self.options.loss and self.rng.random() < self.options.loss:
            counters["sensor_messages_lost"] += 1
            return
        try:
            sensor = wire.decode_sensor(datagram, 6)
        except wire.BadMessage as bad:
            counters[f"bad_sensor_{bad.reason}"] += 1
            return
        if now < self.quiet_until:  # see RESTART_GAP: nothing of the old session reaches the new one
            counters["sensor_messages_between_sessions"] += 1
            return
        counters["sensor_messages"] += 1
        self.last_sensor_data = now
        if self._last_sent is not None and arrival is not None:
            self.stats.round_trips.append(arrival - self._last_sent)
        if not (self.motors == "on" and self.mci == "running" and self.rapid == "running"):
            counters["targets_while_not_running"] += 1  # manual: outside EGMRun* nothing is followed
            return
        if sensor.rapid is not None and self.options.tool != "none":
            self._apply_outputs(sensor.rapid, now)
        # manual: EGMRunJoint follows planned.joints, EGMRunPose planned.cartesian
        if self.options.mode == "joint":
            if sensor.q is None:
                counters["targets_wrong_mode"] += 1
                return
            target = sensor.q
        else:
            if sensor.pose is None:
                counters["targets_wrong_mode"] += 1
                return
            found = self.model.inverse_continuing(sensor.pose, self.target)
            if len(found) == 0:
                counters["targets_unreachable"] += 1
                return
            target = np.asarray(found[0])
        if not self.model.limits.within(target):
            # A real controller's motion supervision stops at an axis limit with an error; the
            # documents we have do not say how it treats an EGM target beyond one. Our choice:
            # refuse the target (hold the last) and count it, so a test can assert a sensor never
            # sends one (robohal's backend checks every setpoint before the wire)
            counters["targets_out_of_limits"] += 1
            return
        counters["targets_applied"] += 1
        self.target = np.array(target, dtype=np.float64)

    # Sending with fault injection ----------------------------------------------------------

    def _queue(self, datagram: bytes, now: float) -> None:
        o, counters = self.options, self.stats.counters
        if o.loss and self.rng.random() < o.loss:
            counters["robot_messages_lost"] += 1
            return
        copies = 2 if o.duplicate and self.rng.random() < o.duplicate else 1
        counters["robot_messages_duplicated"] += copies - 1
        if self._held_back is None and o.reorder and self.rng.random() < o.reorder:
            self._held_back = datagram  # goes out right after the next one
            counters["robot_messages_reordered"] += 1
            return
        # from now, not from the loop's tick: the message was stamped after the tick began
        due = time.monotonic() + o.delay if o.delay else now
        batch = [datagram] * copies
        if self._held_back is not None:
            batch.append(self._held_back)
            self._held_back = None
        for item in batch:
            self._outbox.append((due, item))

    def _flush(self, now: float) -> None:
        while self._outbox and self._outbox[0][0] <= now:
            _, datagram = self._outbox.pop(0)
            # stamped before sendto: on loopback the receiver may run (and answer) inside the call
            self._last_sent = time.time()
            try:
                self.sock.sendto(datagram, self.sensor)
                self.stats.counters["datagrams_sent"] += 1
            except OSError:
                self.stats.counters["send_errors"] += 1

    # The loop --------------------------------------------------------------------------------

    def _print_stats(self) -> None:
        summary = self.stats.summary(time.monotonic() - self.started)
        self.out.write("STATS " + json.dumps(summary, sort_keys=True) + "\n")
        self.out.flush()

    def ready_uri(self) -> RobotUri:
        """What a sensor connects with: the address this sends to, the model, the mode where it is
        not the default, and this controller's own host as ``robot=`` (not for a wildcard bind)."""
        host = self.address[0]
        params = {"model": self.model_name} if self.model_name else {}
        if self.options.mode != "joint":
            params["mode"] = self.options.mode
        if host != "0.0.0.0":
            params["robot"] = host
        if self.options.tool != "none":
            params.update(TOOL_PARAMS)
        if self.rws is not None:  # where its Robot Web Services are, and the certificate it made (RW7)
            params["rws"] = self.rws.url
            if self.rws.fingerprint:
                params["rws_fingerprint"] = self.rws.fingerprint
        return RobotUri("abb-egm", host=self.sensor[0], port=self.sensor[1], params=params)

    def run(self, control: ControlLines | None = None) -> dict[str, Any]:
        """Run until QUIT, the end of a launcher's pipe, ``duration`` or Ctrl-C; return the statistics."""
        o = self.options
        # the control lines; the sensor's answers wait for the cycle. select(), not epoll: epoll waits
        # whole milliseconds, and the ticks would alternate 3.5 and 4.5 ms apart
        selector = selectors.SelectSelector()
        if control is not None:
            selector.register(control, selectors.EVENT_READ, "stdin")
        announce_ready(self.ready_uri(), self.out)
        host, port = self.address
        print(f"# simulated EGM controller on {host}:{port}, sending to {self.sensor[0]}:{self.sensor[1]} every"
              f" {self.options.period * 1000:g} ms ({self.options.mode} mode)", file=sys.stderr, flush=True)
        next_tick = time.monotonic()
        last_tick: float | None = None
        try:
            while self.running:
                now = time.monotonic()
                if o.duration is not None and now - self.started >= o.duration:
                    break
                wake = next_tick if not self._outbox else min(next_tick, self._outbox[0][0])
                for _ in selector.select(max(0.0, wake - now)):
                    if (lines := control.read()) is None:
                        selector.unregister(control)
                        if control.ends_run:  # the launcher went away
                            self.running = False
                    else:
                        for line in lines:
                            self.command(line)
                now = time.monotonic()
                if now >= next_tick:
                    if last_tick is not None:
                        self.stats.intervals.append(now - last_tick)
                    last_tick = now
                    self._drain()
                    self.step(now)
                    if self.sending and now >= self.quiet_until:
                        self._queue(self.message(time.time()), now)
                        self.stats.counters["robot_messages_sent"] += 1
                    next_tick += o.period
                    # late by more than a period: re-anchor, never burst. Our choice: a real controller
                    # samples on its own clock and sends each sample once; a burst of old samples
                    # would only show a host's scheduling, not a robot
                    if now - next_tick > o.period:
                        self.stats.counters["late_ticks"] += 1
                        next_tick = now + o.period
                self._flush(time.monotonic())
        except KeyboardInterrupt:
            pass
        finally:
            selector.close()
            self.sock.close()
            if self.rws is not None:
                self.rws.stop()
            if self.cell is not None:
                self.cell.close()
        self._print_stats()
        return self.stats.summary(time.monotonic() - self.started)

    def _drain(self) -> None:
        """Take every sensor datagram waiting, oldest first, each at its arrival time."""
        while True:
            try:
                datagram, ancillary, _, _ = self.sock.recvmsg(65536, stamps.ANCILLARY_SIZE)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # e.g. ICMP port unreachable reported on the socket
                self.stats.counters["receive_errors"] += 1
                return
            arrival = stamps.arrival_time(ancillary)
            # when it arrived on the loop's clock: the kernel's stamp, not this later read
            self.receive(datagram, time.monotonic() - max(0.0, time.time() - arrival), arrival)


# Command line --------------------------------------------------------------------------------


def _seconds(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 3600.0:  # bounded (our choice): a fault lasts at most an hour
        raise ValueError("seconds in 0..3600")
    return value


def parse_address(text: str, default_port: int) -> tuple[str, int]:
    host, _, port = text.rpartition(":") if ":" in text else (text, "", str(default_port))
    try:
        return socket.gethostbyname(host or "127.0.0.1"), int(port)
    except (OSError, ValueError):
        raise click.BadParameter(f"{text!r} is not HOST:PORT") from None


def _probability(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise click.BadParameter("a probability in [0, 1]")
    return value


@click.command(name="abb-egm", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--sensor", default=f"127.0.0.1:{wire.DEFAULT_PORT}", show_default=True,
              help="Where the sensor (the PC side) listens; the only address this sends to.")
@click.option("--bind", default="127.0.0.1:0", show_default=True, help="The controller's own UDP address.")
@click.option("--model", "model_name", default="abb.irb1410", show_default=True, help="Robot model (robohal models).")
@click.option("--mode", type=click.Choice(["joint", "pose"]), default="joint", show_default=True,
              help="EGMRunJoint (joint targets) or EGMRunPose (flange pose targets in the base frame).")
@click.option("--q0", default=None, help="Start joints, degrees, comma-separated.")
@click.option("--seed", type=int, default=None, help="Seed of the fault injection.")
@click.option("--loss", type=float, default=0.0, callback=_probability, help="Datagram loss probability, each direction.")
@click.option("--delay", "delay_ms", type=float, default=0.0, help="Added delay of robot messages, ms.")
@click.option("--duplicate", type=float, default=0.0, callback=_probability, help="Probability a message is sent twice.")
@click.option("--reorder", type=float, default=0.0, callback=_probability, help="Probability a message is swapped with the next.")
@click.option("--stall-after", type=float, default=None, help="Stop sending after S seconds.")
@click.option("--motors-off-after", type=float, default=None, help="Motors off (RAPID stops) after S seconds.")
@click.option("--comm-timeout", type=float, default=1.0, show_default=True,
              help="\\CommTimeout, s: no sensor data that long stops the run (0: off).")
@click.option("--retry-after", type=float, default=None,
              help="Seconds after a run ended until the RAPID loop starts a new session (default: never).")
@click.option("--max-speed-deviation", "max_speed_deg", type=float, default=250.0, show_default=True,
              help="\\MaxSpeedDeviation, deg/s: the fastest EGM moves an axis (the RAPID template's value).")
@click.option("--lag", "lag_ms", type=float, default=15.0, show_default=True, help="Motion control time constant, ms.")
@click.option("--cond-time", type=float, default=0.0, show_default=True,
              help="\\CondTime, s: convergence held that long ends the run (0: never).")
@click.option("--convergence", "convergence_deg", type=float, default=0.5, show_default=True,
              help="Joint convergence threshold, degrees.")
@click.option("--sample-rate", "sample_ms", type=float, default=4.0, show_default=True, help="\\SampleRate, ms.")
@click.option("--duration", type=float, default=None, help="Exit after S seconds.")
@click.option("--contact", default=None, metavar="HEIGHT,STIFFNESS",
              help="A plane at HEIGHT m (base z) pushing back with STIFFNESS N/m, as a force sensor measures it.")
@click.option("--tool", type=click.Choice(["vacuum", "none"]), default="vacuum", show_default=True,
              help="The tool: a vacuum gripper on RAPID data signals (vacuum; vacuum_on, part_present), or none.")
@click.option("--part", default=",".join(map(str, DEFAULT_PART)), show_default=True, metavar="X,Y,Z",
              help="Where the part to pick lies, m in the base frame.")
@click.option("--rws", "rws_version", type=click.Choice(["6", "7"]), default=None,
              help="Serve Robot Web Services as RobotWare 6 (RWS 1.0, HTTP) or 7 (RWS 2.0, HTTPS); the controller"
                   " then starts as after power-up (motors off, RAPID stopped, no EGM until RAPID runs it).")
@click.option("--rws-user", default="Default User", show_default=True, help="RWS user name (ABB's default).")
@click.option("--rws-password", default="robotics", show_default=True, help="RWS password (ABB's default).")
@click.option("--rws-port", type=int, default=0, show_default=True, help="RWS TCP port on the --bind host (0: a free one).")
@click.option("--opmode", type=click.Choice(["auto", "manr"]), default="auto", show_default=True,
              help="Operating mode with --rws: automatic, or manual reduced speed (RMMP needed for mastership).")
def command(sensor: str, bind: str, model_name: str, mode: str, q0: str | None, seed: int | None, loss: float,
            delay_ms: float, duplicate: float, reorder: float, stall_after: float | None,
            motors_off_after: float | None, comm_timeout: float, retry_after: float | None, max_speed_deg: float,
            lag_ms: float,
            cond_time: float, convergence_deg: float, sample_ms: float, duration: float | None,
            contact: str | None, tool: str, part: str, rws_version: str | None, rws_user: str, rws_password: str,
            rws_port: int, opmode: str) -> None:
    """A simulated ABB controller streaming EGM to a sensor (stdin: RESTART, MOTORS OFF, STALL, RESUME, STATS, QUIT)."""
    import robohal

    model = robohal.get_model(model_name)
    start = None
    if q0:
        try:
            start = np.radians([float(v) for v in q0.split(",")])
        except ValueError:
            raise click.BadParameter("--q0 takes comma-separated degrees") from None
        if start.shape != (model.dof,):
            raise click.BadParameter(f"--q0 needs {model.dof} values")
    if sample_ms <= 0:
        raise click.BadParameter("--sample-rate must be positive")
    if max_speed_deg <= 0:
        raise click.BadParameter("--max-speed-deviation must be positive")
    plane = None
    if contact is not None:
        try:
            height, stiffness = (float(v) for v in contact.split(","))
        except ValueError:
            raise click.BadParameter("--contact takes HEIGHT,STIFFNESS (m, N/m), e.g. 0.4,5000") from None
        if not (math.isfinite(height) and math.isfinite(stiffness) and stiffness > 0):
            raise click.BadParameter("--contact needs a finite height and a positive stiffness")
        plane = (height, stiffness)
    try:
        where = tuple(float(v) for v in part.split(","))
    except ValueError:
        raise click.BadParameter("--part takes X,Y,Z in metres, e.g. 0.9,0.2,1.1") from None
    if len(where) != 3 or not all(math.isfinite(v) for v in where):
        raise click.BadParameter("--part takes three finite numbers X,Y,Z (m)")
    options = ControllerOptions(
        period=sample_ms / 1000.0, mode=mode, lag=lag_ms / 1000.0, convergence=math.radians(convergence_deg),
        max_speed_deviation=math.radians(max_speed_deg),
        cond_time=cond_time, comm_timeout=comm_timeout, retry_after=retry_after, seed=seed, loss=loss,
        delay=delay_ms / 1000.0, duplicate=duplicate, reorder=reorder, stall_after=stall_after,
        motors_off_after=motors_off_after, duration=duration, q0=start, contact=plane, tool=tool, part=where,
    )
    address = parse_address(bind, 0)
    cell = rws = None
    if rws_version is not None:
        # aiohttp and cryptography only when RWS is asked for
        from .controller_model import ControllerModel
        from .rws_server import RwsServer

        cell = ControllerModel(opmode=opmode.upper())
        try:
            rws = RwsServer(cell, int(rws_version), host=address[0], port=rws_port, user=rws_user,
                            password=rws_password, joints=lambda: [float(v) for v in np.degrees(controller.q)])
        except (OSError, ValueError) as exc:
            cell.close()
            raise click.UsageError(f"cannot serve RWS on {address[0]}:{rws_port}: {exc}") from None
        rws.start()
        # RWS answers in a thread of this process: the EGM loop must not wait CPython's default 5 ms
        # for the interpreter lock behind a request being answered (our choice: 0.5 ms; measured
        # with benchmarks/egm_rws_pacing.py)
        sys.setswitchinterval(RWS_SWITCH_INTERVAL)
    controller = SimulatedController(model, parse_address(sensor, wire.DEFAULT_PORT), address, options,
                                     model_name=model_name, cell=cell, rws=rws)
    controller.run(control_lines(sys.stdin))


if __name__ == "__main__":
    command(prog_name="robohal sim abb-egm")
