"""A live 3D view of robots in the browser, on viser (``pip install robohal[view]``).

    from robohal.view import serve
    with robohal.connect("franka://sim?model=franka.fr3") as robot, serve(robot) as view:
        print(view.url)            # http://127.0.0.1:8080
        robot.move_joints(...)     # the page shows it live

The page draws each arm from its model (links, joints coloured by their limit margin, the
flange frame, the commanded pose as a translucent ghost), or from a URDF's meshes where one
agrees with the model (:mod:`.body`), the measured external force on the flange as an arrow
while the arm feels one (:mod:`.wrench`), the backend's figures and the robot's mode, and, where commands are allowed, joint sliders, a flange gizmo (a pad for a
planar arm, with the pen's trace) and Stop / Recover.

Who may move the arm: the page has no login, so whoever opens it may command the robot.
Bound to a loopback address that is the local user. Bound anywhere else the view only
watches, unless ``allow_control=True``: then a page must first give the view's token (printed
with the address), and commands from any other page are refused. The token is typed into the
page: viser's client leaves the address's query out of its connection and its server API
offers no page address, so a ``?token=`` could never reach the view.
"""

from __future__ import annotations

import contextlib
import hmac
import io
import ipaddress
import logging
import secrets
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import viser  # the optional extra: robohal[view]

from .. import spatial
from ..control.lifecycle import LifecycleState
from ..errors import InvalidArgument, RobohalError
from ..robot import Robot
from ..state import Array
from .body import UrdfBody, Visuals, find_visuals
from .controls import RobotControls
from .scene import ArmScene, arm_size
from .wrench import WrenchArrow

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
FRAME_RATE = 40.0  # frames per second drawn from the measured state (the page asks >= 30)
FIGURES_EVERY = 10  # frames between updates of the figures and the controls
TRACE_POINTS = 4000  # pen positions kept in a planar arm's trace
ACTIONS = ("joints", "pose", "pen", "stop", "recover")
ARRIVED = 1e-9  # rad: the setpoints have the page's joint target
POSE_ARRIVED = 1e-6  # m and rad: ... its pose target (differential IK closes in on it, never exactly)
GROUND = 4.0  # m: the grid's side at the least
HOLD_AT_MOST = 30.0  # s: a target the arm cannot reach (IK off a limit) stops being sent


def is_loopback(host: str) -> bool:
    """Whether ``host`` binds only this machine (a loopback address or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve anywhere


@dataclass
class Station:
    """One robot on the page: where it stands and how it is drawn."""

    robot: Robot
    name: str
    offset: Array
    size: float
    scene: ArmScene | None = None
    arrow: WrenchArrow | None = None  # the measured force on the flange, where the robot measures one
    figures: object = None
    trace: object = None
    pen: list = field(default_factory=list)
    held: tuple | None = None  # the page's last target: (kind, value, monotonic time given)

    def remove(self) -> None:
        for part in (self.scene, self.arrow, self.figures, self.trace):
            if part is not None:
                part.remove()


class RobotView:
    """The page for ``robots``, served while this object is open (see the module's text);
    :meth:`add` and :meth:`remove` change which robots it shows."""

    def __init__(self, robots: Robot | Iterable[Robot] = (), *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 watch: bool = False, allow_control: bool = False, frame_rate: float = FRAME_RATE,
                 urdf: str | Path | None = None) -> None:
        robots = [robots] if isinstance(robots, Robot) else list(robots)
        if not all(isinstance(r, Robot) for r in robots):
            raise InvalidArgument("the view shows connected robots (robohal.Robot)")
        if not 1.0 <= frame_rate <= 240.0:
            raise InvalidArgument(f"frame_rate must be within 1-240 frames per second, got {frame_rate}")
        self.host, self.watch = host, watch
        # commands: never when watching; from a loopback bind, the local user; elsewhere only
        # when allowed, and then only from pages that gave the token
        self.commands_allowed = not watch and (is_loopback(host) or allow_control)
        self.token = secrets.token_urlsafe(12) if self.commands_allowed and not is_loopback(host) else None
        self.frames = 0
        self.refused = 0
        self._period = 1.0 / frame_rate
        self._lock = threading.RLock()
        self._stations: list[Station] = []
        self._controls: dict[int, dict[int, RobotControls]] = {}  # client id -> station id -> its controls
        self._clients: dict[int, object] = {}  # the clients that may command
        with _quiet():
            self._server = viser.ViserServer(host=host, port=port, label="robohal", verbose=False)
        self.port = self._server.get_port()
        self._stop = threading.Event()
        try:
            self._server.scene.add_grid("/ground", width=GROUND, height=GROUND, cell_size=0.1, section_size=0.5)
            if not self.commands_allowed:
                self._server.gui.add_markdown("**Watching**: this page shows the robots and commands none of them.")
            for robot in robots:
                self.add(robot, urdf=urdf)
        except BaseException:
            with _quiet():
                self._server.stop()
            raise
        self._server.on_client_connect(self._connected)
        self._server.on_client_disconnect(self._disconnected)
        self._thread = threading.Thread(target=self._run, name="robohal-view", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        shown = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{shown}:{self.port}"

    @property
    def robots(self) -> list[Robot]:
        with self._lock:
            return [station.robot for station in self._stations]

    def add(self, robot: Robot, *, urdf: str | Path | None = None) -> None:
        """Show ``robot`` too, beside the others (with its controls on pages that may command);
        drawn from ``urdf``'s meshes where given, else as :func:`~.body.find_visuals` finds."""
        if not isinstance(robot, Robot):
            raise InvalidArgument(f"the view shows connected robots (robohal.Robot), got {type(robot).__name__}")
        visuals = find_visuals(robot.model, urdf)
        loaded = None if visuals is None else _load(visuals, named=urdf is not None)
        state = robot.state
        size = arm_size(robot.model, state.q)
        with self._lock:
            last = self._stations[-1] if self._stations else None
            y = 0.0 if last is None else last.offset[1] + (last.size + size) * 0.75
            name = robot.name or f"robot {len(self._stations) + 1}"
            station = Station(robot, name, np.array([0.0, y, 0.0]), size)
            key = f"/robot{id(station)}"
            server = self._server
            body = None if loaded is None else UrdfBody(server, key, visuals, loaded, offset=station.offset)
            station.scene = ArmScene(server.scene, key, robot.model, state.q, offset=station.offset, body=body)
            station.arrow = WrenchArrow(server.scene, f"{key}/wrench", station.scene.radius * 0.35)
            station.figures = server.gui.add_markdown(_figures(station, state, 0.0))
            if getattr(robot.model, "position_only", False):
                station.trace = server.scene.add_line_segments(
                    f"{key}/trace", np.zeros((0, 2, 3)), (30, 30, 30), thickness=0.004)
            self._stations.append(station)
            for client in self._clients.values():
                self._give_controls(client, station)
            self._frame_camera()

    def remove(self, robot: Robot) -> None:
        """Stop showing ``robot`` (do this before closing it)."""
        with self._lock:
            for station in [s for s in self._stations if s.robot is robot]:
                self._stations.remove(station)
                for controls in self._controls.values():
                    control = controls.pop(id(station), None)
                    if control is not None:
                        control.remove()
                station.remove()

    def close(self) -> None:
        """Stop drawing and serving (the robots stay connected)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)
        with _quiet():
            self._server.stop()

    def __enter__(self) -> RobotView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def command(self, index: int, action: str, value: object, *, client_id: int | None = None) -> None:
        """Carry out a page's command on the ``index``-th robot shown; the one gate every control
        goes through. Raises :class:`~robohal.errors.InvalidArgument` when this view may not command."""
        if not self.commands_allowed or (self.token is not None and client_id not in self._clients):
            self.refused += 1
            raise InvalidArgument("this view only watches: it was started with --watch, or bound to a"
                                  " non-loopback address without --allow-control and the token")
        if action not in ACTIONS:
            raise InvalidArgument(f"unknown view command {action!r}; known: {', '.join(ACTIONS)}")
        with self._lock:
            station = self._stations[index]
        robot = station.robot
        if action in ("stop", "recover"):
            station.held = None
            if action == "stop":
                robot.stop()
            else:
                robot.recover()
            return
        if action == "pen":
            action, value = "joints", self._pen_joints(robot, value)
        if action == "joints":
            robot.servo(value)
        else:
            robot.servo_pose(value)
        # A control let go leaves its last value: the view holds that target (sends it again
        # every frame) until the arm has it, so the stream's timeout does not stop it short.
        station.held = (action, np.array(value, dtype=np.float64), time.monotonic())

    # The page's clients -------------------------------------------------------------------------

    def _connected(self, client) -> None:
        if not self.commands_allowed:
            return
        if self.token is None:
            self._authorise(client)
            return
        entry = client.gui.add_text("Access token", "")
        enter = client.gui.add_button("Take control")

        def check(_event) -> None:
            if hmac.compare_digest(entry.value.strip().encode(), self.token.encode()):
                entry.remove()
                enter.remove()
                self._authorise(client)
            else:
                client.add_notification("robohal", "wrong token: this page only watches", color="red",
                                        auto_close_seconds=5.0)

        enter.on_click(check)

    def _authorise(self, client) -> None:
        with self._lock:
            self._clients[client.client_id] = client
            for station in self._stations:
                self._give_controls(client, station)

    def _disconnected(self, client) -> None:
        with self._lock:
            self._clients.pop(client.client_id, None)
            self._controls.pop(client.client_id, None)

    def _give_controls(self, client, station: Station) -> None:
        def command(action: str, value: object) -> None:
            try:
                with self._lock:
                    index = self._stations.index(station)
                self.command(index, action, value, client_id=client.client_id)
            except (RobohalError, ValueError) as exc:
                client.add_notification("robohal", str(exc), color="red", auto_close_seconds=5.0)

        self._controls.setdefault(client.client_id, {})[id(station)] = RobotControls(client, station, command)

    def _frame_camera(self) -> None:
        """Look at the robots from the front and above, all of them in sight, on ground under
        them all: for pages that open from now on and for the open ones (a robot added to a
        page being watched, as ``robohal demo --view`` does, comes into sight)."""
        ys = [s.offset[1] for s in self._stations]
        size = max(s.size for s in self._stations)
        middle = np.array([0.0, (min(ys) + max(ys)) / 2, size * 0.35])
        span = max(ys) - min(ys) + size
        # several robots: a little closer, and looking past the middle so the panel (right) hides none
        distance = 1.44 * size if len(ys) == 1 else 0.9 * span
        middle[1] += 0.1 * (span - size)
        position = middle + np.array([1.1, -0.35, 0.45]) * distance
        self._server.scene.add_grid("/ground", width=max(GROUND, 2.5 * size), height=max(GROUND, span + 1.5 * size),
                                    cell_size=0.1, section_size=0.5, position=(0.0, middle[1], 0.0))
        camera = self._server.initial_camera
        camera.look_at, camera.position, camera.up = tuple(middle), tuple(position), (0.0, 0.0, 1.0)
        for client in self._server.get_clients().values():
            try:
                with client.atomic():
                    client.camera.position = position  # moves look_at along: set it after
                    client.camera.look_at = middle
            except AssertionError:  # viser's: the page has not reported its camera yet; it opens on the initial one
                continue

    # Drawing ------------------------------------------------------------------------------------

    def _run(self) -> None:
        deadline = began = time.monotonic()
        while not self._stop.is_set():
            try:
                self._draw(self.frames % FIGURES_EVERY == 0, self.frames / max(time.monotonic() - began, 1e-9))
            except Exception:  # a robot that went away: keep serving the others, say it once a second
                log.exception("the view could not draw a frame")
                self._stop.wait(1.0)
            self.frames += 1
            deadline = max(deadline + self._period, time.monotonic() - self._period)
            self._stop.wait(max(0.0, deadline - time.monotonic()))

    def _draw(self, figures: bool, rate: float) -> None:
        with self._lock:
            stations = list(self._stations)
            controls = [list(c.values()) for c in self._controls.values()] if figures else []
        states = {}
        for station in stations:
            if station.robot.lifecycle is LifecycleState.DISCONNECTED:
                if figures:  # closed: its last picture stays until it is removed
                    station.figures.content = f"**{station.robot.name or station.name}**: closed"
                continue
            try:
                states[id(station)] = station.robot.state
            except RobohalError:  # a lost link: the same, and the figures already say why
                continue
        with self._server.atomic():
            for station in stations:
                state = states.get(id(station))
                if state is None:
                    continue
                station.scene.show(state.q, state.q_commanded)
                station.arrow.show(station.scene.flange.position, state.wrench)
                if station.held is not None:
                    _hold(station, state)
                if station.trace is not None:
                    _extend_trace(station, state.q)
                if figures:
                    station.figures.content = _figures(station, state, rate)
        for client_controls in controls:
            for control in client_controls:
                state = states.get(id(control.station))
                if state is not None:
                    control.follow(state.q)

    @staticmethod
    def _pen_joints(robot: Robot, xy: object) -> Array:
        """The pad: joints that put the pen at ``xy`` (m, in the arm's plane), on the elbow
        branch nearest now."""
        xy = np.asarray(xy, dtype=np.float64)
        if xy.shape != (2,) or not np.isfinite(xy).all():
            raise InvalidArgument(f"the pen target must be two finite numbers (x, y) in metres, got {xy!r:.60}")
        q = robot.state.q
        pose = robot.model.forward(q)
        pose[:2, 3] = xy
        solutions = robot.model.inverse_continuing(pose, q)
        if len(solutions) == 0:
            raise InvalidArgument(f"the pen cannot reach ({xy[0]:.3f}, {xy[1]:.3f}) m: {solutions.reason}")
        return np.asarray(solutions[0], dtype=np.float64)


def _hold(station: Station, state) -> None:
    """Send a held target again, until the setpoints have reached it (or HOLD_AT_MOST passed)."""
    action, target, since = station.held
    commanded = state.q if state.q_commanded is None else state.q_commanded
    if action == "joints":
        arrived = float(np.abs(commanded - target).max()) < ARRIVED
    else:
        error = spatial.pose_error(target, station.robot.model.forward(commanded))
        arrived = float(np.abs(error).max()) < POSE_ARRIVED
    if arrived or time.monotonic() - since > HOLD_AT_MOST:
        station.held = None
        return
    try:
        if action == "joints":
            station.robot.servo(target)
        else:
            station.robot.servo_pose(target)
    except RobohalError:  # stopped, faulted or refused meanwhile: the page's next command decides
        station.held = None


@contextlib.contextmanager
def _quiet():
    """viser prints a banner on start and a line on stop to stdout whatever ``verbose`` says;
    robohal prints the address itself, and a script reading our stdout must not get them."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def _extend_trace(station: Station, q: Array) -> None:
    pen = station.robot.model.forward(q)[:3, 3] + station.offset
    if station.pen and np.linalg.norm(pen - station.pen[-1]) < 1e-4:
        return
    station.pen = [*station.pen[-TRACE_POINTS:], pen]
    if len(station.pen) > 1:
        points = np.array(station.pen)
        station.trace.points = np.stack([points[:-1], points[1:]], 1)


def _load(visuals: Visuals, *, named: bool):
    """The URDF's meshes for one robot, or None where they will not load: then the stick
    figure (a URDF the caller named must load)."""
    try:
        return visuals.load()
    except Exception as exc:  # a mesh file trimesh cannot read, missing, or an unknown format
        if named:
            raise InvalidArgument(f"{visuals.path}: its meshes cannot be drawn: {exc}") from None
        log.warning("%s: drawing the links instead of its meshes, which cannot be loaded: %s", visuals.path, exc)
        return None


def serve(robots: Robot | Iterable[Robot], **options) -> RobotView:
    """Serve the live page for one robot or several (see :class:`RobotView` for the options)."""
    return RobotView(robots, **options)


def _figures(station: Station, state, rate: float) -> str:
    robot = station.robot
    period = getattr(robot.backend, "period", None)
    lines = [f"**{robot.name or station.name}**: {robot.lifecycle.value}, {state.mode.value}"]
    if period:
        lines.append(f"control rate {1.0 / period:.0f} Hz, view {rate:.0f} frames/s")
    if state.faults:
        lines.append("faults: " + ", ".join(state.faults))
    shown = [f"{key.replace('_', ' ')} {_number(value)}" for key, value in state.info.items()
             if isinstance(value, (int, float)) and not isinstance(value, bool)]
    if shown:
        lines.append(", ".join(shown))
    return "  \n".join(lines)


def _number(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
