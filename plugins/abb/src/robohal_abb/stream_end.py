"""Why an EGM stream ended, in the controller's own words: its event log read after the stream
stopped, the root cause picked from what it logged.

A stop leaves several messages (an emergency stop also logs motors off and a stopped program);
the cause is the first kind found in this order: an emergency stop, a safety guard stop (a door,
the enabling device), EGM's CommTimeout (event 41822: no data from the UdpUc device: robohal did
not answer in time), a RAPID error, motors off, then any other error. Event numbers are ABB's
(10010-10014 the controller's states, 4xxxx the program domain, 41822 from ABB's EGM manual).
"""

from __future__ import annotations

from collections.abc import Sequence

from .rws.values import ElogEntry

COMM_TIMEOUT = 41822  # "No data from the UdpUc device" (ABB's EGM manual)
MOTORS_OFF = 10010  # "Motors OFF state"
GUARD_STOP = 10012  # "Safety guard stop state"
EMERGENCY_STOP = 10013  # "Emergency stop state"
SYSTEM_FAILURE = 10014  # "System failure state"
ERROR = 3  # msgtype of an error


def _emergency(entry: ElogEntry) -> bool:
    return entry.code == EMERGENCY_STOP or "emergency stop" in entry.title.lower()


def _guard(entry: ElogEntry) -> bool:
    return entry.code == GUARD_STOP or "guard stop" in entry.title.lower()


def _rapid_error(entry: ElogEntry) -> bool:
    return entry.msgtype == ERROR and 40000 <= entry.code < 50000 and entry.code != COMM_TIMEOUT


CAUSES = (
    (_emergency, "an emergency stop"),
    (_guard, "a safety guard stop (a door or gate opened, or the enabling device was released)"),
    (lambda entry: entry.code == COMM_TIMEOUT, "EGM's CommTimeout: the controller had no answer from robohal for"
                                               " \\CommTimeout and stopped the run"),
    (_rapid_error, "a RAPID error"),
    (lambda entry: entry.code == SYSTEM_FAILURE, "a system failure"),
    (lambda entry: entry.code == MOTORS_OFF, "motors off"),
    (lambda entry: entry.msgtype == ERROR, "a controller error"),
)


def explain(entries: Sequence[ElogEntry]) -> str | None:
    """The cause among ``entries`` (the messages logged since the stream began) as a sentence, or
    None when they name none."""
    for matches, cause in CAUSES:
        found = [entry for entry in entries if matches(entry)]
        if found:
            first = found[0]
            words = f"{first.title}: {first.description}" if first.description else first.title
            return f"{cause} (event {first.code} #{first.seqnum}: {words.strip()})"
    return None
