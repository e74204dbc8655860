"""``robohal jog URI``: move an arm's end point or tool from the terminal.

A planar two-link arm's pen moves in its plane, a servo arm from an arm file its tool's tip
(:class:`JogSession`); any other spatial arm of five or more joints (the SO-101, an industrial
arm) moves its tool about its base, keeping the tool's orientation (:class:`SpatialJogSession`):
left and right turn the base, up and down move the tool out from the base and back in, ``r``
and ``f`` raise and lower it.

On a planar arm, arrow keys (or w/a/s/d, or h/j/k/l) move the pen's target by one step in the xy plane;
``+``/``-`` double or halve the step; ``e`` switches the elbow branch for the next moves
(through a joint move); ``0`` returns to the joints' centre; ``q`` (or Ctrl-C, or the end of
input) quits. On a servo arm from an arm file (a base that turns and links in one vertical
plane: the MeArm, the Braccio; :class:`~robohal.kinematics.vertical_plane.VerticalPlaneArm`) the
arrows move its tool's tip in the horizontal plane and ``r``/``f`` raise and lower it; the tool
keeps its pitch (turned with the base), the elbow its branch. The arm follows its target as a
stream (:meth:`~robohal.Robot.servo`): a held key moves it on smoothly, time-optimally within the joint limits, and it brakes to rest when
the keys stop. Each target is checked before it is streamed: a step out of reach, or beyond a
servo's pulse range, is refused with the reason, and the target stays. The status line shows
the pen's target, its distance from the base against the reach, the joints and (where the
backend reports them) the servo pulse widths.

In a terminal a top view of the workspace (:func:`render_pad`) shows where the pen is and where
it can go. When stdin is not a terminal the keys are read from it as text (``printf 'ddwq' | robohal jog
URI``), one status line per key once the arm has reached that key's target: that is how the jog
is scripted and tested.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

import numpy as np

from ..errors import HardwareFault, RobohalError, UnreachableError
from ..kinematics.vertical_plane import VerticalPlaneArm
from ..robot import Robot
from .drawing import joints_for, planar_two_link, reach_within_limits

DIRECTIONS = {"up": (0.0, 1.0), "down": (0.0, -1.0), "left": (-1.0, 0.0), "right": (1.0, 0.0)}
LETTERS = {"w": "up", "s": "down", "a": "left", "d": "right",
           "k": "up", "j": "down", "h": "left", "l": "right",
           "r": "raise", "f": "lower",
           "+": "bigger", "=": "bigger", "-": "smaller", "e": "elbow", "0": "centre", "q": "quit", "\x03": "quit"}
ARROWS = {"A": "up", "B": "down", "C": "right", "D": "left"}
MIN_STEP, MAX_STEP = 0.0005, 0.05  # m
#: rad: a step that turns any joint further than this is a branch change, not a step (refused)
MAX_JOINT_STEP = 0.5
#: s between the target's repeats while the arm is on its way (well inside the servo timeout)
KEEP_ALIVE = 0.05
#: s the jog waits for the arm to reach a target before it stops streaming it
REACH_TIMEOUT = 10.0


def parse_keys(chars: Iterable[str]) -> Iterator[str]:
    """Key names from a character stream (arrow escape sequences and letters); others are skipped."""
    pending = ""
    for char in chars:
        pending += char
        if pending.startswith("\x1b"):
            if len(pending) < 3:
                continue
            key = ARROWS.get(pending[2]) if pending[1] in "[O" else None
            pending = ""
            if key:
                yield key
            continue
        key = LETTERS.get(pending.lower())
        pending = ""
        if key:
            yield key


class JogSession:
    """The jog logic without the terminal: ``press(key)`` moves the target and returns whether the
    session goes on. ``wait=True`` (scripted keys): each press returns once the arm is there.
    ``speed`` is the jog's dynamics factor, a fraction of the joint limits."""

    def __init__(self, robot: Robot, *, step: float = 0.005, speed: float = 0.3, elbow: str | None = None,
                 wait: bool = True) -> None:
        self.planar = planar_two_link(robot.model)
        if not (self.planar or isinstance(robot.model, VerticalPlaneArm)):
            raise RobohalError("jog needs a position-only planar two-link model (like arduino.planar2) or a servo"
                               " arm from an arm file (like arm.mearm)")
        self.robot = robot
        self.step = float(step)
        self.speed = float(speed)
        self.wait = wait
        self.target = robot.backend.commanded.copy()
        self.elbow = (elbow or ("up" if self.target[1] < 0 else "down")) if self.planar else "as is"
        self.message = "ready"
        self._streamer: threading.Thread | None = None

    @property
    def xy(self) -> np.ndarray:
        """Where the pen is asked to be (m)."""
        return self.robot.model.forward(self.target)[:2, 3]

    @property
    def position(self) -> np.ndarray:
        """Where the tool's tip is asked to be (m, x y z)."""
        return self.robot.model.forward(self.target)[:3, 3]

    def press(self, key: str) -> bool:
        """Handle one key; False when the session should end."""
        try:
            if key == "quit":
                return False
            if key in DIRECTIONS:
                self._move(np.array(DIRECTIONS[key]) * self.step)
            elif key in ("raise", "lower"):
                self._move_spatial(np.array([0.0, 0.0, self.step if key == "raise" else -self.step]))
            elif key == "bigger":
                self.step = min(self.step * 2, MAX_STEP)
                self.message = f"step {self.step * 1000:.1f} mm"
            elif key == "smaller":
                self.step = max(self.step / 2, MIN_STEP)
                self.message = f"step {self.step * 1000:.1f} mm"
            elif key == "elbow":
                self._switch_elbow()
            elif key == "centre":
                self._jump(self.robot.model.limits.centre)
                self.message = "at the joints' centre"
            elif key in ("raise", "lower"):
                self.message = "a planar arm moves in its plane: arrows only"
        except HardwareFault as fault:
            self.robot.recover()
            self.target = self.robot.backend.commanded.copy()
            self.message = f"{fault}; recovered, holding"
        except RobohalError as exc:
            self.message = f"refused: {exc}"
        return True

    def _move(self, delta: np.ndarray) -> None:
        if not self.planar:
            self._move_spatial(np.array([delta[0], delta[1], 0.0]))
            return
        end = self.xy + delta
        why = getattr(self.robot.model, "unreachable_reason", lambda *_: None)(*end)
        if why:  # name the point asked for
            raise UnreachableError(f"({end[0]:.4f}, {end[1]:.4f}) m is out of reach: {why}")
        q = joints_for(self.robot.model, end[None], self.elbow)[0]
        q += 2 * np.pi * np.round((self.target - q) / (2 * np.pi))  # the same turn as now
        self.robot.backend.check_setpoints(q)  # the hardware's own limits (servo pulses), before it streams
        self.target = q
        self._stream()
        self.message = "moved"

    def _move_spatial(self, delta: np.ndarray) -> None:
        """The tool's tip by ``delta`` (m): the pose turned with the base about z, so a tool that
        pitches in the arm's plane keeps its pitch; the IK branch nearest the joints now."""
        if self.planar:
            raise RobohalError("a planar arm moves in its own plane (r/f raise and lower a servo arm's tool)")
        model = self.robot.model
        pose = model.forward(self.target)
        start, end = pose[:3, 3], pose[:3, 3] + delta
        if np.hypot(*start[:2]) > 1e-6 and np.hypot(*end[:2]) > 1e-6:
            turn = math.atan2(end[1], end[0]) - math.atan2(start[1], start[0])
            c, s = math.cos(turn), math.sin(turn)
            pose[:3, :3] = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ pose[:3, :3]
        pose[:3, 3] = end
        found = model.inverse_continuing(pose, self.target)
        if len(found) == 0:
            raise UnreachableError(f"({end[0]:.4f}, {end[1]:.4f}, {end[2]:.4f}) m is out of reach: {found.reason}")
        q = np.asarray(found[0], dtype=float)
        self.robot.backend.check_setpoints(q)  # the servos' own pulse limits, before it streams
        self.target = q
        self._stream()
        self.message = "moved"

    def _switch_elbow(self) -> None:
        if not self.planar:
            self.message = "refused: the elbow keeps its branch on this arm (e switches it on a planar arm)"
            return
        other = "up" if self.elbow == "down" else "down"
        solutions = self.robot.model.inverse_xy(self.xy)
        wanted = [q for q in solutions if (q[1] < 0) == (other == "up") and abs(math.sin(q[1])) > 1e-9]
        if not wanted:
            self.message = f"refused: no elbow-{other} solution here (within the joint limits)"
            return
        self._jump(wanted[0])
        self.elbow = other
        self.message = f"elbow {other}"

    def _jump(self, q: np.ndarray) -> None:
        """A joint move elsewhere (not a step): it takes over from the stream, and waits."""
        self._stop_streaming()
        self.robot.move_joints(q, speed=self.speed)
        self.target = self.robot.backend.commanded.copy()

    def _stream(self) -> None:
        """Stream the target until the arm is there (in the background unless ``wait``)."""
        robot = self.robot
        robot.speed = self.speed
        robot.servo(self.target)
        if self.wait:
            self._keep_alive()
        elif self._streamer is None or not self._streamer.is_alive():
            self._streamer = threading.Thread(target=self._keep_alive, name="robohal-jog-stream", daemon=True)
            self._streamer.start()

    def _keep_alive(self) -> None:
        """Repeat the newest target while the arm is on its way, so the stream's timeout does not
        brake it short of a far target; stop once it is there."""
        deadline = time.monotonic() + REACH_TIMEOUT
        while time.monotonic() < deadline:
            target = self.target
            if np.allclose(self.robot.backend.commanded, target, rtol=0.0, atol=1e-9):
                return
            self.robot.servo(target)
            time.sleep(KEEP_ALIVE)

    def _stop_streaming(self) -> None:
        if self._streamer is not None:
            self._streamer.join(REACH_TIMEOUT)

    def status(self) -> str:
        state = self.robot.state
        if not self.planar:
            x, y, z = self.position
            pulses = state.info.get("pulses_us")
            pulse_text = f"  pulses {' '.join(f'{p:>4}' for p in pulses)} us" if pulses is not None else ""
            return (f"x {x * 1000:7.1f} y {y * 1000:7.1f} z {z * 1000:7.1f} mm  q {' '.join(f'{a:7.2f}' for a in np.degrees(state.q))}"
                    f" deg{pulse_text}  step {self.step * 1000:.1f} mm  | {self.message}")
        x, y = self.xy
        inner, outer = reach_within_limits(self.robot.model)
        r = math.hypot(x, y)
        q = np.degrees(state.q)
        pulses = state.info.get("pulses_us")
        pulse_text = f"  pulses {pulses[0]:>4} {pulses[1]:>4} us" if pulses is not None else ""
        return (f"x {x * 1000:7.1f} y {y * 1000:7.1f} mm  r {r * 1000:6.1f} mm (reach {inner * 1000:.0f}..{outer * 1000:.0f})"
                f"  q {q[0]:7.2f} {q[1]:7.2f} deg{pulse_text}  elbow {self.elbow}  step {self.step * 1000:.1f} mm"
                f"  | {self.message}")


def spatial_arm(model) -> bool:
    """Whether :class:`SpatialJogSession` moves ``model``: five or more joints, the tool's
    orientation part of its pose (not a position-only arm)."""
    return model.dof >= 5 and not getattr(model, "position_only", False)


class SpatialJogSession(JogSession):
    """A spatial arm's jog (see the module docstring): the tool's orientation stays, each step
    goes through the model's IK next to the present joints. Turning the base is a move of the
    first joint alone, so that an arm of five joints, which reaches an orientation only in the
    plane its shoulder turns it in, turns that plane with it; out and in are along that plane
    (across the shoulder's axis, joint 2)."""

    def __init__(self, robot: Robot, *, step: float = 0.005, speed: float = 0.3, elbow: str | None = None,
                 wait: bool = True) -> None:
        if not spatial_arm(robot.model):
            raise RobohalError("this jog needs a spatial arm of five or more joints")
        self.planar = False
        self.robot = robot
        self.step = float(step)
        self.speed = float(speed)
        self.wait = wait
        self.target = robot.backend.commanded.copy()
        self.elbow = "-"
        self.message = "ready"
        self._streamer = None

    @property
    def xy(self) -> np.ndarray:
        return self.robot.model.forward(self.target)[:2, 3]

    def press(self, key: str) -> bool:
        if key in ("elbow", "centre"):
            self.message = "arrows turn the base and move out and in, r/f raise and lower, +/- the step"
            return True
        if key not in (*DIRECTIONS, "raise", "lower"):
            return super().press(key)
        try:
            if key in ("left", "right"):
                self._turn_base(1.0 if key == "left" else -1.0)
            else:
                self._shift(key)
        except HardwareFault as fault:
            self.robot.recover()
            self.target = self.robot.backend.commanded.copy()
            self.message = f"{fault}; recovered, holding"
        except RobohalError as exc:
            self.message = f"refused: {exc}"
        return True

    def _turn_base(self, sign: float) -> None:
        """The base turns so that the tool moves one step along its arc (counter-clockwise: left)."""
        radius = max(float(np.linalg.norm(self.xy)), 0.05)  # near the axis: as at 5 cm
        q = self.target.copy()
        q[0] += sign * self.step / radius
        self._go(q)

    def _shift(self, key: str) -> None:
        model = self.robot.model
        pose = model.forward(self.target)
        if key in ("raise", "lower"):
            direction = np.array([0.0, 0.0, 1.0 if key == "raise" else -1.0])
        else:
            axis = model.jacobian(self.target)[3:, 1]  # the shoulder's axis: the arm's plane is across it
            out = np.cross(axis, [0.0, 0.0, 1.0])
            if np.linalg.norm(out) < 1e-6:
                raise UnreachableError("the shoulder's axis is upright: no plane to move out in")
            out /= np.linalg.norm(out)
            if out @ np.array([*self.xy, 0.0]) < 0:
                out = -out
            direction = out if key == "up" else -out
        pose[:3, 3] += direction * self.step
        found = model.inverse_continuing(pose, self.target)
        if found.shape[0] == 0:
            x, y, z = pose[:3, 3]
            raise UnreachableError(f"({x:.4f}, {y:.4f}, {z:.4f}) m with the tool as it is is out of reach:"
                                   f" {found.reason or 'no IK solution'}")
        self._go(found[0])

    def _go(self, q: np.ndarray) -> None:
        self.robot.model.check_joints(q, "the jog's target")
        jump = float(np.abs(q - self.target).max())
        if jump > MAX_JOINT_STEP:
            raise UnreachableError(f"that step turns a joint {math.degrees(jump):.0f} deg (a branch change):"
                                   " try a smaller step")
        self.robot.backend.check_setpoints(q)
        self.target = q
        self._stream()
        self.message = "moved"

    def status(self) -> str:
        state = self.robot.state
        x, y, z = self.robot.model.forward(self.target)[:3, 3]
        q = " ".join(f"{v:7.2f}" for v in np.degrees(state.q))
        return (f"x {x * 1000:7.1f} y {y * 1000:7.1f} z {z * 1000:7.1f} mm  r {math.hypot(x, y) * 1000:6.1f} mm"
                f"  q {q} deg  step {self.step * 1000:.1f} mm  | {self.message}")


def render_pad(model, xy, rows: int = 13) -> list[str]:
    """A top view of the arm's workspace as text: ``.`` where the pen can go (within the joint
    limits), ``+`` the base, ``@`` the pen at ``xy``; +y is up. Columns are half as wide as rows
    are tall, as terminal cells are."""
    outer = reach_within_limits(model)[1]
    cols = 2 * rows + 1
    xs = np.linspace(-outer, outer, cols)
    ys = np.linspace(outer, -outer, rows)
    grid_x, grid_y = np.meshgrid(xs, ys)
    poses = np.broadcast_to(np.eye(4), (grid_x.size, 4, 4)).copy()
    poses[:, 0, 3], poses[:, 1, 3] = grid_x.ravel(), grid_y.ravel()
    reachable = np.isfinite(model.inverse_batch(poses)).all(axis=-1).any(axis=-1).reshape(rows, cols)
    cells = np.where(reachable, ".", " ").astype("<U1")
    cells[int(np.argmin(np.abs(ys))), int(np.argmin(np.abs(xs)))] = "+"
    cells[int(np.argmin(np.abs(ys - xy[1]))), int(np.argmin(np.abs(xs - xy[0])))] = "@"
    return ["".join(row) for row in cells]


def run_jog(robot: Robot, stdin: TextIO | None = None, out: Callable[[str], None] | None = None, **options) -> int:
    """Run a jog session on ``robot``: a terminal UI when stdin is a TTY, else keys read as text."""
    stdin = stdin or sys.stdin
    interactive = stdin.isatty()
    # a servo arm from an arm file (VerticalPlaneArm) moves its tip as JogSession moves it
    spatial = spatial_arm(robot.model) and not isinstance(robot.model, VerticalPlaneArm)
    if spatial:
        options.pop("elbow", None)
    session = (SpatialJogSession if spatial else JogSession)(robot, wait=not interactive, **options)
    if out is None:
        def out(text: str) -> None:
            if interactive and spatial:
                text = "\x1b[2K\rarrows turn the base and move out/in, r/f up/down, +/- step, q quit  " + text
            elif interactive and session.planar:  # redraw the pad and the status line in place
                pad = render_pad(robot.model, session.xy)
                text = "\x1b[H\x1b[J" + "\n".join([*pad, "arrows/wasd move, +/- step, e elbow, 0 centre, q quit", text])
            elif interactive:
                text = "\x1b[H\x1b[J" + "\n".join(["arrows/wasd move, r/f up and down, +/- step, 0 centre, q quit", text])
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
    out(session.status())
    chars = _terminal_chars(stdin) if interactive else iter(lambda: stdin.read(1), "")
    try:
        for key in parse_keys(chars):
            if not session.press(key):
                break
            out(session.status())
    except KeyboardInterrupt:
        pass
    return 0


def _terminal_chars(stdin: TextIO) -> Iterator[str]:
    """Characters from a TTY in cbreak mode (restored on exit)."""
    import termios
    import tty

    fd = stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        while True:
            data = os.read(fd, 16)
            if not data:
                return
            yield from data.decode("utf-8", "ignore")
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
