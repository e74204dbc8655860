"""The robot side of Franka Desk, simulated: the control token, the joints' brakes, FCI, the
operating mode, the safety self-tests, safety errors and the Pilot's buttons. No I/O here:
:mod:`.desk_server` serves it over HTTPS in both of Desk's dialects, and the FCI simulator
(:mod:`.simulator`) gates the arm on it (:meth:`SimulatedDesk.fci_active`, :meth:`arm_ready`).

Franka publishes no specification of Desk's web API here. Each rule below names where it comes
from: the clients that drive real robots (franky-control 2.0.0 ``franky.desk``, panda-py 1.x
``panda_py.Desk``, jk-ethz/franka_lock_unlock, and smaller third-party Desk clients), libfranka,
or "our choice" where none says.

Not thread-safe: one thread (the server's event loop) calls it; the FCI simulator's loop only
reads :meth:`SimulatedDesk.fci_active` and :meth:`SimulatedDesk.arm_ready`, which change nothing.
Whatever takes time (brakes, self-tests) the server finishes with a timer.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

EXECUTION, PROGRAMMING = "Execution", "Programming"  # franky's OperatingMode values
# The simulated Desk's credentials unless the simulator is given others (our choice: a real robot's
# are set at its first start; robohal's Desk client falls back to these same defaults).
DEFAULT_DESK_USER = "franka"
DEFAULT_DESK_PASSWORD = "franka"
PILOT_BUTTONS = ("circle", "cross", "check", "up", "down", "left", "right")  # franky's PilotButton, panda-py
#: s: how long a forced request waits for the Pilot's circle button; the web dialect announces it as
#: ``tokenForceTimeout`` (GET /admin/api/safety, read by panda-py and franka_lock_unlock). Our figure.
TOKEN_FORCE_TIMEOUT = 20.0
#: s a brake operation takes: both clients call unlocking a blocking request ("API call blocks until
#: the brakes are unlocked", panda-py). Real brakes take seconds; our figure keeps tests quick.
BRAKE_TIME = 0.2
#: s the safety self-tests take ("can take a few minutes" on a real robot, a third-party client's
#: note); our figure, a simulator option.
SELF_TEST_TIME = 1.0
#: s until self-tests fall due again, reported as ``remaining`` (a third-party client reads
#: {'status': ..., 'remaining': seconds}); Franka asks for them about daily. Our figure.
SELF_TEST_INTERVAL = 24 * 3600.0
SELF_TEST_FAILURE = "SelfTestFailed"  # our name for the safety error a failed self-test raises


class DeskRefusal(Exception):
    """What Desk answers instead of doing what was asked: an HTTP status, a code and a message
    (the v1 API answers errors as JSON with a ``code``: franky reads ``{"code": "Timeout"}``)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def encode_password(user: str, password: str) -> str:
    """The older web session's login password: base64 of the comma-joined decimal bytes of
    sha256("PASSWORD#USER@franka") (franky's and panda-py's ``encode_password``; Desk's page does
    this before sending)."""
    digest = hashlib.sha256(f"{password}#{user}@franka".encode()).digest()
    return base64.encodebytes(",".join(str(b) for b in digest).encode()).decode()


@dataclass
class ControlToken:
    """One request for control: active when it holds control, else queued."""

    id: int
    secret: str
    owner: str
    forced: bool = False
    deadline: float | None = None  # a forced request lapses here without the Pilot's circle button

    def __repr__(self) -> str:  # the secret never goes to a log
        return f"ControlToken(id={self.id}, owner={self.owner!r}, forced={self.forced})"


@dataclass
class SimulatedDesk:
    """Desk's state for one robot. ``locked``: start as a real robot does, joints locked and FCI
    off (the simulator's ``--locked 1``); else ready to move, as ``franka://sim`` always was."""

    user: str
    password: str = field(repr=False)
    locked: bool = False
    clock: Callable[[], float] = time.monotonic
    brake_time: float = BRAKE_TIME
    self_test_time: float = SELF_TEST_TIME
    token_force_timeout: float = TOKEN_FORCE_TIMEOUT
    #: called after every change (the server wakes its waiting requests; the simulator re-gates)
    on_change: Callable[[], None] = lambda: None
    #: called with each Pilot event, ``{"circle": True}`` (the navigation-events websocket's payload)
    on_pilot: Callable[[dict], None] = lambda event: None

    def __post_init__(self) -> None:
        self.unlocked = not self.locked
        self.fci = not self.locked
        self.mode = EXECUTION
        self.active: ControlToken | None = None
        self.waiting: list[ControlToken] = []  # queued requests, oldest first
        self.sessions: dict[str, str] = {}  # web session cookie -> user
        self.safety_errors: list[str] = []
        self.self_test_running = False
        self.self_test_status = "OK"
        self.self_test_passed_at = self.clock()
        self.fail_next_self_test = False
        self.busy_until = 0.0  # brakes moving: no other brake operation meanwhile
        self.changes = 0  # counted by whoever serves this desk, for those that wait on its changes
        self._ids = itertools.count(1)

    # Credentials ------------------------------------------------------------------------

    def basic_ok(self, user: str, password: str) -> bool:
        """HTTP Basic credentials of the v1 API (every request carries them: franky's Desk)."""
        return hmac.compare_digest(user.encode(), self.user.encode()) and \
            hmac.compare_digest(password.encode(), self.password.encode())

    def login(self, user: str, encoded: str) -> str:
        """The web session's login: the cookie value on success (franky and panda-py set it as
        the ``authorization`` cookie), else 401 (our choice of status)."""
        expected = encode_password(self.user, self.password)
        if not (hmac.compare_digest(user.encode(), self.user.encode())
                and hmac.compare_digest(encoded.strip().encode(), expected.strip().encode())):
            raise DeskRefusal(401, "Unauthorized", "wrong user name or password")
        cookie = secrets.token_urlsafe(24)
        self.sessions[cookie] = user
        return cookie

    def session_user(self, cookie: str | None) -> str | None:
        return None if cookie is None else self.sessions.get(cookie)

    def logout(self, cookie: str) -> None:
        self.sessions.pop(cookie, None)

    # The control token -------------------------------------------------------------------

    def request_control(self, owner: str, *, force: bool = False) -> ControlToken:
        """A request for control. Granted at once when nobody holds it; otherwise queued (the v1
        API "queues the request": franky; the web API returns a token that "might not be active
        yet": franka_lock_unlock), and the holder is asked to release it. A forced request (web
        dialect) takes control from the holder when the Pilot's circle button is pressed within
        :attr:`token_force_timeout` (panda-py, franky)."""
        self._lapse()
        token = ControlToken(next(self._ids), secrets.token_urlsafe(24), owner or "unknown", forced=force,
                             deadline=self.clock() + self.token_force_timeout if force else None)
        if self.active is None:
            self.active = token
        else:
            self.waiting.append(token)
        self.on_change()
        return token

    def holds_control(self, token: ControlToken) -> bool:
        self._lapse()
        return self.active is token

    def withdraw(self, token: ControlToken) -> None:
        """A queued request gives up (v1: its ``timeout`` passed; the server answers 424)."""
        if token in self.waiting:
            self.waiting.remove(token)
            self.on_change()

    def require_control(self, secret: str | None) -> ControlToken:
        """The active token whose secret a control call carries (``X-Control-Token``: franky,
        panda-py). A missing, queued or stale one is refused with 403 (our choice of status; the
        web API's code ControlTokenUnknown is the one panda-py handles on release)."""
        self._lapse()
        active = self.active
        if not secret:
            raise DeskRefusal(403, "ControlTokenMissing", "this call needs the control token (X-Control-Token)")
        if active is None or not hmac.compare_digest(secret.encode(), active.secret.encode()):
            raise DeskRefusal(403, "ControlTokenUnknown", "the control token is not the active one")
        return active

    def release_control(self, secret: str | None) -> None:
        """Release control (or withdraw a queued request); the next request in the queue gets it.
        FCI ends with the control it belongs to: the web API files FCI under the control token
        (/admin/api/control-token/fci, and ``fciActive`` beside ``activeToken``: panda-py,
        positronic). Our reading: releasing control deactivates FCI."""
        for token in self.waiting:
            if secret and hmac.compare_digest(secret.encode(), token.secret.encode()):
                self.withdraw(token)
                return
        self.require_control(secret)
        self._hand_on()

    def holder(self) -> ControlToken | None:
        self._lapse()
        return self.active

    def _hand_on(self) -> None:
        """The active token is gone: FCI ends with it, the oldest plain request gets control."""
        self.active = None
        self.fci = False
        plain = [token for token in self.waiting if not token.forced]
        if plain:
            self.active = plain[0]
            self.waiting.remove(plain[0])
        self.on_change()

    def _lapse(self) -> None:
        """Forced requests whose time for the circle button has passed are dropped (panda-py and
        franka_lock_unlock give up then)."""
        now = self.clock()
        lapsed = [t for t in self.waiting if t.forced and t.deadline is not None and now > t.deadline]
        for token in lapsed:
            self.waiting.remove(token)
        if lapsed:
            self.on_change()

    def take_by_someone_else(self, owner: str) -> ControlToken:
        """Fault injection (stdin ``DESK_HOLDER OWNER``): another user, say Desk's own page, takes
        control; it keeps it until :meth:`release_by_someone_else`."""
        if self.active is not None:
            self.active = None
            self.fci = False
        token = ControlToken(next(self._ids), secrets.token_urlsafe(24), owner)
        self.active = token
        self.on_change()
        return token

    def release_by_someone_else(self) -> None:
        """Fault injection (stdin ``DESK_RELEASE``): the holder releases control (a queued request
        gets it), as a user does when Desk's page prompts them."""
        if self.active is not None:
            self._hand_on()

    # The Pilot ---------------------------------------------------------------------------

    def press(self, button: str) -> None:
        """A Pilot button pressed and released (stdin ``PILOT BUTTON``): two events on the
        navigation-events websocket, ``{"circle": true}`` then ``{"circle": false}`` (franky,
        panda-py). The circle button confirms the oldest forced request still in time."""
        if button not in PILOT_BUTTONS:
            raise ValueError(f"the Pilot's buttons are {', '.join(PILOT_BUTTONS)}, not {button!r}")
        self.on_pilot({button: True})
        if button == "circle":
            self._lapse()
            forced = [token for token in self.waiting if token.forced]
            if forced:
                self.waiting.remove(forced[0])
                self.active, self.fci = forced[0], False
                self.on_change()
        self.on_pilot({button: False})

    # The arm -------------------------------------------------------------------------------

    def arm_ready(self) -> bool:
        """Whether the FCI may move the arm: joints unlocked, no self-test running, no safety error."""
        return self.unlocked and not self.self_test_running and not self.safety_errors

    def fci_active(self) -> bool:
        return self.fci

    def brakes_free(self) -> None:
        if self.clock() < self.busy_until:
            raise DeskRefusal(409, "BrakesBusy", "the brakes are still moving")  # our choice

    def unlock(self, secret: str | None) -> None:
        """Open the brakes (needs control: every client sends the token). Refused while a safety
        error waits for recovery or a self-test runs (our choice: 409)."""
        self.require_control(secret)
        if self.safety_errors:
            raise DeskRefusal(409, "SafetyError", f"confirm the safety error first: {', '.join(self.safety_errors)}")
        if self.self_test_running:
            raise DeskRefusal(409, "SelfTestRunning", "the safety self-tests are running")
        self.brakes_free()
        self.busy_until = self.clock() + self.brake_time

    def lock(self) -> None:
        """Close the brakes. No token needed: panda-py and a third-party v1 client lock without one."""
        self.brakes_free()
        self.busy_until = self.clock() + self.brake_time

    def set_brakes(self, unlocked: bool) -> None:
        """The brakes have moved (the server calls this :attr:`brake_time` after unlock/lock)."""
        self.unlocked = unlocked
        self.busy_until = 0.0
        self.on_change()

    def activate_fci(self, secret: str | None) -> None:
        """Needs control. Refused in Programming mode (our choice: FCI drives the arm in Execution
        mode, Franka's FCI set-up instructions)."""
        self.require_control(secret)
        if self.mode != EXECUTION:
            raise DeskRefusal(409, "OperatingModeInvalid", "FCI needs the Execution mode")
        self.fci = True
        self.on_change()

    def deactivate_fci(self, secret: str | None) -> None:
        self.require_control(secret)
        self.fci = False
        self.on_change()

    def change_mode(self, secret: str | None, desired: str) -> None:
        self.require_control(secret)
        if desired not in (EXECUTION, PROGRAMMING):
            raise DeskRefusal(400, "InvalidArgument", f"no operating mode {desired!r}")
        if desired == PROGRAMMING and self.fci:
            raise DeskRefusal(409, "FciActive", "deactivate FCI before the Programming mode")  # our choice
        self.mode = desired
        self.on_change()

    # Safety -----------------------------------------------------------------------------------

    def execute_self_test(self, secret: str | None) -> float:
        """Start the safety self-tests (needs control: franky sends the token). While they run the
        joints are held by their brakes (a third-party client: "Joints are locked during and
        re-unlocked after"), so the FCI cannot move the arm; they pass, or fail on injection
        (stdin ``SELFTEST_FAIL``) with a safety error that needs recovery. Returns how long they
        take; the server then calls :meth:`finish_self_test`."""
        self.require_control(secret)
        if self.self_test_running:
            raise DeskRefusal(409, "SelfTestRunning", "the safety self-tests are already running")
        self.self_test_running = True
        self.self_test_status = "Running"
        self.on_change()
        return self.self_test_time

    def finish_self_test(self) -> None:
        if not self.self_test_running:
            return
        self.self_test_running = False
        if self.fail_next_self_test:
            self.fail_next_self_test = False
            self.self_test_status = "Failed"  # our choice of word
            self.raise_safety_error(SELF_TEST_FAILURE)
        else:
            self.self_test_status = "OK"
            self.self_test_passed_at = self.clock()
        self.on_change()

    def self_test(self) -> dict:
        """v1 ``GET /api/safety/self-tests``: ``status`` (Running, OK, Failed) and ``remaining``
        seconds until they fall due (a third-party client's reading of the real reply)."""
        remaining = max(0.0, self.self_test_passed_at + SELF_TEST_INTERVAL - self.clock())
        return {"status": self.self_test_status, "remaining": round(remaining)}

    def raise_safety_error(self, name: str) -> None:
        """A safety error (stdin ``SAFETY_ERROR NAME``): the brakes close and the arm stays held
        until the error is confirmed (franky's ``Desk.recover`` confirms ``SafetyError`` with its
        list of ``safetyErrors``), then unlocked again. Our model of the robot's reaction."""
        if name not in self.safety_errors:
            self.safety_errors.append(name)
        self.unlocked = False
        self.on_change()

    def recovery(self) -> dict | None:
        """v1 ``GET /api/safety/recovery``'s ``recovery``: None, or what to confirm (franky)."""
        if not self.safety_errors:
            return None
        return {"type": "SafetyError", "safetyErrors": list(self.safety_errors)}

    def confirm_recovery(self, kind: str, errors: list[str] | None) -> None:
        """v1 ``POST /api/safety/recovery:confirm`` (franky sends ``type`` and, for SafetyError,
        ``safetyErrors``; no token). A confirmation that names other errors is refused (our
        choice: 409), and so is one when nothing waits (our choice: 409)."""
        pending = self.recovery()
        if pending is None:
            raise DeskRefusal(409, "NoRecoveryPending", "no safety error waits for confirmation")
        if kind != pending["type"] or sorted(errors or []) != sorted(pending["safetyErrors"]):
            raise DeskRefusal(409, "RecoveryMismatch", f"confirm {pending['type']} {pending['safetyErrors']}")
        self.safety_errors.clear()
        if self.self_test_status == "Failed":
            self.self_test_status = "Elapsed"  # due again: it has not passed (our choice)
        self.on_change()

    def acknowledge(self, error: str) -> None:
        """The web dialect's ``/admin/api/safety/recoverable-safety-errors/acknowledge?error_id=``
        (franky acknowledges TD2Timeout there): clears that error (our matching: its name)."""
        if error not in self.safety_errors:
            raise DeskRefusal(409, "NoRecoveryPending", f"no safety error {error!r} waits")
        self.safety_errors.remove(error)
        self.on_change()

    # The system ----------------------------------------------------------------------------

    def reboot(self) -> None:
        """``POST /api/system:reboot``: "The reboot deactivates FCI, locks the brakes and drops
        the control token" (positronic's Desk operations). Ours is instant."""
        self.active = None
        self.waiting.clear()
        self.fci = False
        self.unlocked = False
        self.sessions.clear()
        self.on_change()

    def snapshot(self) -> dict:
        """Everything at once, for ``DESK_STATE`` on the simulator's stdin (tests)."""
        holder = self.holder()
        return {"fci": self.fci, "unlocked": self.unlocked, "mode": self.mode, "arm_ready": self.arm_ready(),
                "holder": None if holder is None else holder.owner, "waiting": [t.owner for t in self.waiting],
                "self_test": self.self_test(), "safety_errors": list(self.safety_errors)}
