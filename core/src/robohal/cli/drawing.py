"""Drawing 2-D shapes with a position-only planar arm (a pen on a two-link arm).

A shape is a list of :class:`Segment` (a line, an arc, ...) in the arm's xy plane, metres.
:func:`plan_drawing` gives each segment a jerk-limited time profile along its arc length
(:class:`~robohal.motion.trajectory.DoubleS`, rest to rest, so the pen stops at a square's corners
and never turns a corner at speed), samples it at the control period, solves the inverse
kinematics on the chosen elbow branch and checks the whole joint path *before* anything
moves: a point out of reach or a joint outside its limits raises
:class:`~robohal.errors.UnreachableError`; a path too fast for the joints is slowed down
until it fits. :func:`draw` then moves to the first point and plays the path.

Strokes and the pen lift: consecutive segments that meet (a square, a circle, a polyline) are one
stroke; where the next segment starts elsewhere (a polyline file's ``up`` lines, text), a new
stroke begins. A robot that can lift its pen declares it as a digital output named ``pen_down``
in ``robot.io`` (True: the pen is on the paper; writing it returns once the pen is there), e.g.
``arduino-planar://...?tool=pen``. :func:`draw` then lifts the pen before each travel to a
stroke's start, lowers it there, and lifts it after the last stroke. On a robot without one,
``draw`` works unchanged: the pen stays where it is, so a travel between strokes draws too.

:func:`draw` plays each stroke as its planned, checked joint trajectory. :func:`stream` (what
``robohal draw`` does) sends the same samples through :meth:`~robohal.Robot.servo` instead, from
this thread at 50 Hz, as a pen tablet would: each two stream periods ahead of its time, with the
joints' velocity and acceleration there and those periods as its duration. Without the duration
ruckig reaches each sample as early as the limits allow and the arm runs ahead, cutting
corners; without the acceleration each sample would have to be passed at none, which a curved
path cannot do within one period, and the arm lags and cuts across. Measured on the Arduino
emulator at 50 mm/s, the pen's largest distance from the path (:func:`path_deviation`): 30 mm
square 0.31 mm played, 0.36 mm streamed (0.56 mm streamed with velocities only); 15 mm-radius
circle 0.26 mm and 0.27-0.30 mm (0.29-0.37 mm), most of it the servos' own lag. The streamed
setpoints stay within 0.06 mm of the path, with both cores of the machine kept busy too.

    from robohal.cli.drawing import circle, plan_drawing, stream, path_deviation
    plan = plan_drawing(robot.model, circle((0.12, 0.0), 0.03), period=robot.backend.period)
    results = stream(robot, plan)   # or draw(robot, plan): the planned setpoints, played
    print(path_deviation(robot.model, plan, results))   # m

A 6- or 7-axis arm draws the same shapes on a horizontal plane, the tool pointing down
(:mod:`.plane_drawing`); :func:`draw`, :func:`stream` and :func:`path_deviation` (in 3-D) take
its plans too.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument, LimitViolation, RobohalError, UnreachableError
from ..kinematics import Kinematics
from ..motion.trajectory import DoubleS, sample_times
from ..state import Array

ELBOWS = ("auto", "up", "down")
DEFAULT_SPEED = 0.05  # m/s along the path
DEFAULT_ACCELERATION = 0.25  # m/s^2
DEFAULT_JERK = 2.5  # m/s^3
#: targets per second :func:`stream` sends (our choice: the Arduino arm's own 50 Hz; a Python
#: thread keeps this pace with a few milliseconds of jitter on a loaded machine)
DEFAULT_STREAM_RATE = 50.0
#: stream periods ahead of its time :func:`stream` sends each sample (our choice: the arm then
#: always has a target in the future when this thread is up to a period late, as on a loaded
#: machine; further ahead ruckig's answers bend away from the path: 0.03 mm off a square at 2,
#: 0.1 mm at 3, 0.6 mm at 5)
STREAM_LEAD = 2
SLOWDOWN_ATTEMPTS = 8
# slot of each branch in PlanarTwoLink.inverse_batch: 0 = q2 >= 0 (elbow down), 1 = q2 <= 0 (elbow up)
BRANCH_SLOT = {"down": 0, "up": 1}
#: the ``robot.io`` signal of a pen lift: a digital output, True = pen on the paper
PEN_SIGNAL = "pen_down"
#: m: a segment starting farther than this from where the last one ended begins a new stroke
#: (our choice: far below any pen's line width, far above floating-point noise)
STROKE_GAP = 1e-6
UP = "up"  # a polyline file's line that lifts the pen
#: rad: a plan on a plane lifts the tool after its last stroke only from this close to the
#: stroke's end (not from wherever a stopped stroke left the arm)
AT_STROKE_END = 1e-6
#: a pen whose fastest planned speed is this share of the one planned for has reached it (the
#: samples of a profile's cruise fall on its speed to rounding; a profile that never cruises peaks lower)
SPEED_REACHED = 0.99


@dataclass(frozen=True)
class Segment:
    """A piece of a path: ``at(s)`` gives the (..., 2) points at arc lengths ``s`` in [0, length]."""

    length: float
    at: Callable[[Array], Array]
    name: str = "segment"


def line(start: ArrayLike, end: ArrayLike) -> list[Segment]:
    """A straight line from ``start`` to ``end`` (x, y in metres)."""
    a = _point(start, "line start")
    b = _point(end, "line end")
    length = float(np.hypot(*(b - a)))
    if length == 0:
        raise InvalidArgument("a line needs two different points")
    return [Segment(length, lambda s: a + np.multiply.outer(s / length, b - a), "line")]


def circle(center: ArrayLike, radius: float, *, start_angle: float = 0.0, clockwise: bool = False) -> list[Segment]:
    """A full circle, starting at ``start_angle`` (rad from +x), counter-clockwise by default."""
    c = _point(center, "circle center")
    r = _positive(radius, "radius")
    sign = -1.0 if clockwise else 1.0

    def at(s: Array) -> Array:
        angle = start_angle + sign * np.asarray(s) / r
        return c + r * np.stack([np.cos(angle), np.sin(angle)], -1)

    return [Segment(2 * math.pi * r, at, "circle")]


def square(center: ArrayLike, side: float, *, rotation: float = 0.0) -> list[Segment]:
    """A square of ``side`` metres around ``center`` (rotated by ``rotation`` rad), corner to corner."""
    c = _point(center, "square center")
    half = _positive(side, "side") / 2
    corners = np.array([[-half, -half], [half, -half], [half, half], [-half, half], [-half, -half]])
    rot = np.array([[math.cos(rotation), -math.sin(rotation)], [math.sin(rotation), math.cos(rotation)]])
    return polyline(c + corners @ rot.T)


def polyline(points: ArrayLike) -> list[Segment]:
    """Straight segments through ``points`` (k, 2), stopping at each vertex."""
    pts = spatial.as_finite(points, "polyline points")
    if pts.ndim != 2 or pts.shape[1] != 2 or len(pts) < 2:
        raise InvalidArgument(f"a polyline needs at least two (x, y) points, got shape {pts.shape}")
    segments = []
    for a, b in itertools.pairwise(pts):
        if np.hypot(*(b - a)) > 0:
            segments.extend(line(a, b))
    if not segments:
        raise InvalidArgument("a polyline needs at least two different points")
    return segments


def read_polyline(path: str | Path) -> Array:
    """Points from a text file: one ``x y`` (or ``x,y``) per line, metres; ``#`` starts a comment
    (the strokes of :func:`read_strokes`, one after the other)."""
    return np.vstack(read_strokes(path))


def read_strokes(path: str | Path) -> list[Array]:
    """The strokes of a polyline file: points as :func:`read_polyline` reads them, and a line
    ``up`` lifts the pen: the next point starts a new stroke. Each stroke has two points or more."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidArgument(f"cannot read polyline file {path}: {exc.strerror or exc}") from None
    strokes: list[list[list[float]]] = [[]]
    points = strokes[0]
    for number, raw in enumerate(text.splitlines(), 1):
        content = raw.split("#", 1)[0].replace(",", " ").split()
        if not content:
            continue
        if content == [UP]:
            if points:
                points = []
                strokes.append(points)
            continue
        try:
            values = [float(v) for v in content]
        except ValueError:
            raise InvalidArgument(f"{path}:{number}: expected 'x y' in metres, got {raw.strip()!r}") from None
        if len(values) != 2 or not all(math.isfinite(v) for v in values):
            raise InvalidArgument(f"{path}:{number}: expected two finite numbers 'x y', got {raw.strip()!r}")
        points.append(values)
    if not points:
        strokes.pop()
    if not strokes or any(len(stroke) < 2 for stroke in strokes):
        found = ", ".join(str(len(stroke)) for stroke in strokes) or "0"
        raise InvalidArgument(f"{path}: each stroke of a polyline needs at least two points, found {found}")
    return [np.array(stroke) for stroke in strokes]


def strokes_of(segments: Sequence[Segment]) -> list[list[Segment]]:
    """The segments grouped into strokes: a segment that starts where the last one ended
    continues its stroke, one that starts elsewhere begins a new one."""
    strokes: list[list[Segment]] = []
    end = None
    for segment in segments:
        start = segment.at(np.zeros(1))[0]
        if end is None or float(np.hypot(*(start - end))) > STROKE_GAP:
            strokes.append([])
        strokes[-1].append(segment)
        end = segment.at(np.array([segment.length]))[0]
    return strokes


def reach_within_limits(model: Kinematics) -> tuple[float, float]:
    """Inner and outer radius (m) of the ring a planar two-link arm reaches with its elbow
    inside the joint limits (narrower than the links' own ``reach`` when the elbow is limited)."""
    l1, l2 = float(model.l1), float(model.l2)
    low, high = float(model.limits.lower[1]), float(model.limits.upper[1])
    elbow = np.array([float(np.clip(0.0, low, high)), low, high])
    r = np.sqrt(l1 * l1 + l2 * l2 + 2 * l1 * l2 * np.cos(elbow))
    return float(r.min()), float(r.max())


def workspace_middle(model: Kinematics) -> tuple[Array, float]:
    """A point in the middle of that ring (on the shoulder's centre direction) and the largest
    circle radius around it that stays inside the ring: a default for shapes."""
    r_low, r_high = reach_within_limits(model)
    angle = float(np.clip(0.0, model.limits.lower[0], model.limits.upper[0]))
    middle = (r_low + r_high) / 2
    return middle * np.array([math.cos(angle), math.sin(angle)]), (r_high - r_low) / 2


# Planning ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DrawPlan:
    """A checked drawing: the pen's points and the joints for them, one per control cycle;
    ``strokes`` are the (start, stop) rows of each stroke (the pen is lifted between them).

    A planar arm's points are its own xy. A plan on a plane (:mod:`.plane_drawing`, a 6- or
    7-axis arm) has the plane's frame in ``plane`` (its points are x, y in it) and its pen-up
    moves in ``travels``: joint paths that lower the tool onto the first stroke, lift it from
    each stroke over to the next and lower it there, and lift it after the last
    (``len(strokes) + 1`` of them)."""

    points: Array  # (N, 2) m
    joints: Array  # (N, dof) rad
    period: float
    elbow: str  # "up" or "down" on a planar arm; on a plane, the model's name of the branch (or "")
    speed: float  # m/s the path was planned at (lower than asked when the joints needed it)
    strokes: tuple[tuple[int, int], ...] = ()
    #: what made the pen slower than asked, in words (empty when nothing did): said by ``robohal draw``
    speed_note: str = ""
    travels: tuple[Array, ...] = ()
    plane: Array | None = None  # (4, 4) the drawing plane's frame in the base frame, for a plan on a plane

    def __post_init__(self) -> None:
        if not self.strokes:
            object.__setattr__(self, "strokes", ((0, len(self.points)),))

    @property
    def duration(self) -> float:
        """The time the pen is on the paper (s), without the travels between strokes."""
        return len(self.points) * self.period

    @property
    def length(self) -> float:
        """The length drawn (m), without the travels between strokes."""
        return sum(float(np.hypot(*np.diff(self.points[a:b], axis=0).T).sum()) for a, b in self.strokes)

    @property
    def top_speed(self) -> float:
        """The fastest the pen moves along the strokes (m/s), as planned: the speed it draws at."""
        steps = [np.hypot(*np.diff(self.points[a:b], axis=0).T) for a, b in self.strokes]
        return max((float(step.max(initial=0.0)) for step in steps), default=0.0) / self.period

    @property
    def positions(self) -> Array:
        """The pen's points (N, 3) in the robot's base frame (m)."""
        flat = np.column_stack([self.points, np.zeros(len(self.points))])
        if self.plane is None:
            return flat
        return flat @ self.plane[:3, :3].T + self.plane[:3, 3]


def sample_path(segments: Sequence[Segment], period: float, speed: float = DEFAULT_SPEED,
                acceleration: float = DEFAULT_ACCELERATION, jerk: float = DEFAULT_JERK) -> Array:
    """The pen's points, one per control cycle: each segment on its own rest-to-rest profile."""
    if not segments:
        raise InvalidArgument("a shape needs at least one segment")
    for name, value in (("speed", speed), ("acceleration", acceleration), ("jerk", jerk), ("period", period)):
        _positive(value, name)
    chunks = [segments[0].at(np.zeros(1))]
    for segment in segments:
        profile = DoubleS(speed, acceleration, jerk, distance=segment.length)
        s, _, _ = profile.sample(sample_times(profile.duration, period))
        chunks.append(segment.at(s))
    return np.vstack(chunks)


def planar_two_link(model: Kinematics) -> bool:
    """Whether ``model`` is a position-only planar two-link arm (links ``l1``, ``l2``, the elbow
    branches of :class:`~robohal.kinematics.PlanarTwoLink`): one that draws in its own plane."""
    return (bool(getattr(model, "position_only", False)) and model.dof == 2
            and hasattr(model, "l1") and hasattr(model, "l2"))


def joints_for(model: Kinematics, points: Array, elbow: str) -> Array:
    """Inverse kinematics of every point on one elbow branch; UnreachableError names the first
    point the arm cannot reach (out of reach, or outside the joint limits on that branch)."""
    if not planar_two_link(model):
        raise InvalidArgument("drawing needs a position-only planar two-link model")
    poses = np.zeros((len(points), 4, 4))
    poses[:] = np.eye(4)
    poses[:, :2, 3] = points
    q = model.inverse_batch(poses)[:, BRANCH_SLOT[elbow]]
    bad = np.flatnonzero(~np.isfinite(q).all(axis=1))
    if bad.size:
        x, y = points[bad[0]]
        reason = getattr(model, "unreachable_reason", lambda *_: None)(x, y)
        why = reason or f"the elbow-{elbow} solution leaves the joint limits there"
        raise UnreachableError(f"point ({x:.6g}, {y:.6g}) m of the shape cannot be reached: {why}")
    # one branch, no wrap-around jumps
    return np.unwrap(q, axis=0)


def plan_drawing(model: Kinematics, segments: Sequence[Segment], *, period: float,
                 speed: float = DEFAULT_SPEED, acceleration: float = DEFAULT_ACCELERATION,
                 jerk: float = DEFAULT_JERK, elbow: str = "auto", start: ArrayLike | None = None,
                 check: Callable[[Array], None] | None = None) -> DrawPlan:
    """Plan and check a drawing (nothing moves). ``elbow`` is ``up``, ``down`` or ``auto`` (the
    branch that reaches the whole shape, nearest to ``start`` joints when both do). ``check``
    (joints (N, dof) -> None or LimitViolation, e.g. a backend's ``check_setpoints``) refuses a
    branch for limits beyond the model's. The path is slowed down, if needed, until every joint
    stays within its velocity and acceleration limits."""
    if elbow not in ELBOWS:
        raise InvalidArgument(f"elbow must be one of {', '.join(ELBOWS)}, got {elbow!r}")
    limits = model.limits
    strokes = strokes_of(segments)
    asked, binding = speed, ""
    for _ in range(SLOWDOWN_ATTEMPTS):
        chunks = [sample_path(stroke, period, speed, acceleration, jerk) for stroke in strokes]
        bounds = np.cumsum([0] + [len(chunk) for chunk in chunks])
        ranges = tuple((int(a), int(b)) for a, b in itertools.pairwise(bounds))
        points = np.vstack(chunks)
        joints, chosen = _choose_branch(model, points, elbow, start, check)
        over = {"velocity": 0.0, "acceleration": 0.0}
        for a, b in ranges:  # within each stroke: the travels between them are moves of their own
            dq = np.diff(joints[a:b], axis=0) / period
            ddq = np.diff(joints[a:b], n=2, axis=0) / period**2
            over["velocity"] = max(over["velocity"], float((np.abs(dq) / limits.velocity).max(initial=0.0)))
            over["acceleration"] = max(over["acceleration"],
                                       math.sqrt(float((np.abs(ddq) / limits.acceleration).max(initial=0.0))))
        factor = max(over.values())
        if factor <= 0.9:
            plan = DrawPlan(points, joints, period, chosen, speed, ranges)
            return replace(plan, speed_note=speed_note(plan, asked, acceleration, binding))
        binding = binding or max(over, key=over.__getitem__)  # what first made it slow down
        # slower along the path: velocity scales with it, acceleration with its square
        speed, acceleration, jerk = speed * 0.8 / factor, acceleration * (0.8 / factor) ** 2, jerk * (0.8 / factor) ** 3
    raise UnreachableError("the shape passes too close to a singularity for the joints' speed limits;"
                           " move it away from the workspace rims")


def speed_note(plan: DrawPlan, asked: float, acceleration: float, binding: str) -> str:
    """In words, what keeps the pen of ``plan`` slower than the ``asked`` speed (m/s): the joints'
    ``binding`` limits (velocity, acceleration...) that made the planner slow the path down, and
    segments too short to reach the speed at the path's ``acceleration`` (m/s^2), rest to rest;
    empty when the pen reaches what was asked."""
    reasons = []
    if binding:
        reasons.append(f"slowed to {plan.speed * 1000:.0f} mm/s for the joints' {binding} limits")
    if plan.top_speed < plan.speed * SPEED_REACHED:
        reasons.append(f"its segments are too short to reach {plan.speed * 1000:.0f} mm/s at"
                       f" {acceleration * 1000:.0f} mm/s^2 (the pen stops at each corner)")
    if not reasons:
        return ""
    return f"asked {asked * 1000:.0f} mm/s; " + "; ".join(reasons)


def _branch_joints(model: Kinematics, points: Array, branch: str, check: Callable[[Array], None] | None) -> Array:
    joints = joints_for(model, points, branch)
    if check is not None:
        try:
            check(joints)
        except LimitViolation as exc:
            raise UnreachableError(f"the elbow-{branch} path needs setpoints the robot refuses: {exc}") from None
    return joints


def _choose_branch(model: Kinematics, points: Array, elbow: str, start: ArrayLike | None,
                   check: Callable[[Array], None] | None) -> tuple[Array, str]:
    if elbow != "auto":
        return _branch_joints(model, points, elbow, check), elbow
    found: dict[str, Array] = {}
    errors = []
    for branch in ("up", "down"):
        try:
            found[branch] = _branch_joints(model, points, branch, check)
        except UnreachableError as exc:
            errors.append(f"elbow {branch}: {exc}")
    if not found:
        raise UnreachableError("the shape cannot be drawn on either elbow branch; " + "; ".join(errors))
    if start is None:
        start = model.limits.centre
    start = np.asarray(start, dtype=np.float64)
    branch = min(found, key=lambda b: float(np.abs(found[b][0] - start).max()))
    return found[branch], branch


def check_with_backend(robot, plan: DrawPlan) -> None:
    """Let the backend refuse the whole path before anything moves, where it has limits of its
    own beyond the model's (:meth:`~robohal.control.backend.Backend.check_setpoints`, e.g. servo pulse limits)."""
    try:
        robot.backend.check_setpoints(np.vstack([plan.joints, *plan.travels]))
    except LimitViolation as exc:
        raise UnreachableError(f"the shape needs setpoints the robot refuses: {exc}") from None


def has_pen_lift(robot) -> bool:
    """Whether ``robot`` can lift its pen: its ``robot.io`` declares the digital output ``pen_down``."""
    io = getattr(robot, "io", None)
    signal = getattr(io, "signals", {}).get(PEN_SIGNAL)
    return signal is not None and signal.kind == "digital" and signal.direction == "output"


def draw(robot, plan: DrawPlan, *, approach_speed: float = 0.3) -> list:
    """Draw the plan stroke by stroke: move (joint space) to a stroke's first point, then play its
    planned path; with a pen lift (:func:`has_pen_lift`) the pen is up for each move and down for
    each stroke, and up at the end. Returns each stroke's MotionResult."""
    from ..motion import JointTrajectory

    check_with_backend(robot, plan)
    if robot.backend.period != plan.period:
        raise InvalidArgument(f"the plan was made for a {plan.period} s period; the robot runs at {robot.backend.period} s")
    results = []
    with _stroke_by_stroke(robot, plan, approach_speed) as strokes:
        for a, b in strokes:
            result = robot.run(JointTrajectory(plan.joints[a:b]))
            results.append(result)
            if not result.completed:
                break
    return results


@contextlib.contextmanager
def _stroke_by_stroke(robot, plan: DrawPlan, approach_speed: float) -> Iterator[Iterator[tuple[int, int]]]:
    """Gives the strokes' (start, stop) rows, each once the arm is at its first point: moved there
    with the pen up, then the pen down (where the robot has a pen lift). When the block ends,
    however it ends, the pen is lifted. A plan on a plane lifts the pen by moving the arm: the
    arm moves to the start of its first travel, and each travel, planned, brings the tool down
    onto the next stroke; the last lifts it when the block ends without an error."""
    from ..motion import JointTrajectory

    lift = has_pen_lift(robot)

    def pen(down: bool) -> None:
        if lift:
            robot.io[PEN_SIGNAL] = down

    def strokes() -> Iterator[tuple[int, int]]:
        for index, (a, b) in enumerate(plan.strokes):
            pen(False)
            if plan.travels:
                if index == 0:
                    robot.move_joints(plan.travels[0][0], speed=approach_speed)
                if not robot.run(JointTrajectory(plan.travels[index])).completed:
                    return  # stopped on the way: nothing more to draw
            else:
                robot.move_joints(plan.joints[a], speed=approach_speed)
            pen(True)
            yield a, b

    try:
        yield strokes()
    except BaseException:
        with contextlib.suppress(RobohalError):  # the first error is the one to report
            pen(False)
        raise
    pen(False)
    last = plan.travels[-1] if plan.travels else None
    if last is not None and np.abs(robot.commanded - last[0]).max() <= AT_STROKE_END:  # not where a stop left it
        robot.run(JointTrajectory(last))


def _point(value: ArrayLike, name: str) -> Array:
    point = spatial.as_finite(value, name)
    if point.shape != (2,):
        raise InvalidArgument(f"{name} must be one (x, y) point in metres, got shape {point.shape}")
    return point


def _positive(value: float, name: str) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise InvalidArgument(f"{name} must be a positive number, got {value}")
    return value


def path_velocities(joints: Array, period: float) -> Array:
    """The joints' velocities (rad/s) along a path sampled every ``period`` seconds (central
    differences; at rest at both ends, where each stroke starts and stops)."""
    velocities = np.zeros_like(joints)
    velocities[1:-1] = (joints[2:] - joints[:-2]) / (2.0 * period)
    return velocities


def path_accelerations(joints: Array, period: float) -> Array:
    """The joints' accelerations (rad/s^2) along a path sampled every ``period`` seconds (central
    differences; zero at both ends)."""
    accelerations = np.zeros_like(joints)
    accelerations[1:-1] = (joints[2:] - 2.0 * joints[1:-1] + joints[:-2]) / period**2
    return accelerations


def stream(robot, plan: DrawPlan, *, rate: float = DEFAULT_STREAM_RATE, approach_speed: float = 0.3) -> list:
    """Draw ``plan`` as a stream of targets (:meth:`~robohal.Robot.servo`) sent ``rate`` per
    second from this thread, as a pen tablet or a camera would drive the arm: each sample of the
    planned path :data:`STREAM_LEAD` stream periods ahead of its time, with the joints' velocity
    and acceleration there and the time to it as its duration, so the arm follows the path at
    its pace. The travel between strokes and the pen lift are as in :func:`draw`. Returns each
    stroke's stream MotionResult (the servo motion's: its setpoints, and the rest after the
    last until the stream's timeout)."""
    import time

    check_with_backend(robot, plan)
    if robot.backend.period != plan.period:
        raise InvalidArgument(f"the plan was made for a {plan.period} s period; the robot runs at {robot.backend.period} s")
    every = max(1, round(1.0 / (_positive(rate, "stream rate") * plan.period)))
    results = []
    with _stroke_by_stroke(robot, plan, approach_speed) as strokes:
        for a, b in strokes:
            joints = plan.joints[a:b]
            # the derivatives from every planned sample; streamed: every ``every``-th and the last
            rows = np.unique(np.append(np.arange(0, len(joints), every), len(joints) - 1))
            velocities = path_velocities(joints, plan.period)[rows]
            accelerations = path_accelerations(joints, plan.period)[rows]
            times = rows * plan.period  # each streamed sample's time from the stroke's start
            began = time.monotonic()
            for k in range(1, len(rows)):  # sample k is sent at the time of sample k - STREAM_LEAD
                sent = times[max(k - STREAM_LEAD, 0)]
                robot.servo(joints[rows[k]], velocity=velocities[k], acceleration=accelerations[k],
                            duration=times[k] - sent)
                if k >= STREAM_LEAD:
                    time.sleep(max(0.0, began + times[k - STREAM_LEAD + 1] - time.monotonic()))
            robot.servo(joints[-1])  # the last point, at rest
            results.append(robot.wait())
    return results


def path_deviation(model: Kinematics, plan: DrawPlan, results: Sequence) -> float:
    """The largest distance (m) from the pen (the flange, in 3-D), at each measured joint position
    of ``results`` (one MotionResult per stroke, as :func:`draw` and :func:`stream` return), to
    its stroke's planned path (the polyline through the planned points, :attr:`DrawPlan.positions`)."""
    worst = 0.0
    positions = plan.positions
    for result, (a, b) in zip(results, plan.strokes, strict=False):
        if result is not None and len(result.measured):
            pen = model.forward(result.measured)[:, :3, 3]
            worst = max(worst, distance_to_polyline(pen, positions[a:b]))
    return worst


def distance_to_polyline(points: Array, polyline: Array, *, chunk: int = 256) -> float:
    """The largest distance (m) from any of ``points`` (N, d) to the polyline through
    ``polyline`` (M, d), point by point to its nearest segment (in chunks of points, to keep the
    N x M table small)."""
    if len(polyline) == 1:
        return float(np.linalg.norm(points - polyline[0], axis=-1).max())
    start, edge = polyline[:-1], np.diff(polyline, axis=0)
    squared = np.maximum((edge * edge).sum(axis=1), 1e-300)
    worst = 0.0
    for first in range(0, len(points), chunk):
        p = points[first:first + chunk, None, :]
        t = np.clip(((p - start) * edge).sum(axis=2) / squared, 0.0, 1.0)
        nearest = start + t[..., None] * edge
        worst = max(worst, float(np.sqrt(((nearest - p) ** 2).sum(axis=2).min(axis=1)).max()))
    return worst
