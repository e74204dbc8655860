"""Drawing on a horizontal plane with a 6- or 7-axis arm, the tool pointing down.

The 2-D shapes of :mod:`.drawing` (x, y in metres) are laid on a horizontal plane through
``origin``, their axes along the base's x and y; the pen is the model's flange (its TCP, where
the model has one), pointing straight down (:func:`tool_down`). :func:`plan_on_plane` samples
each stroke, and each pen-up move between strokes (rise by ``lift`` along the tool axis, travel
over, lower), on its own rest-to-rest jerk-limited profile along its arc length, one sample per
control cycle, and solves the model's inverse kinematics for every sample from the solution
before it, so the arm stays on one branch (and a redundant arm moves its elbow smoothly). The
whole joint path is checked before anything moves: a point out of reach, a joint that jumps (a
singularity or a change of branch on the way), a joint or linkage limit, or a setpoint the
backend refuses raises :class:`~robohal.errors.UnreachableError`; a path too fast for the
joints' velocity, acceleration or jerk limits is slowed down until it fits, and the plan says so
(``DrawPlan.speed_note``). :func:`~.drawing.draw` and :func:`~.drawing.stream` then move the arm
onto the first travel's start and play it: travels as planned setpoints, strokes as the planar
arm's are.

    from robohal.cli.drawing import circle, stream, path_deviation
    from robohal.cli.plane_drawing import plan_on_plane
    plan = plan_on_plane(robot.model, circle((0, 0), 0.03), period=robot.backend.period)
    results = stream(robot, plan)
    print(path_deviation(robot.model, plan, results))   # m, the tool from the planned path
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike

from .. import spatial
from ..errors import InvalidArgument, LimitViolation, UnreachableError
from ..kinematics import Kinematics
from ..kinematics.numeric import starts_for
from ..kinematics.vertical_plane import VerticalPlaneArm
from ..motion.motions import end_of_travel_ratio
from ..state import Array
from .drawing import (
    DEFAULT_ACCELERATION,
    DEFAULT_JERK,
    DEFAULT_SPEED,
    SLOWDOWN_ATTEMPTS,
    DrawPlan,
    Segment,
    sample_path,
    speed_note,
    strokes_of,
)

#: m the tool rises between strokes (our choice: clears a pen's tip and a sheet's curl, and
#: keeps the pen-up moves short)
DEFAULT_LIFT = 0.03
#: rad a joint may move from one sample to the next before the path counts as a jump (a
#: singularity or a change of branch): far above any drawing's step, as in plan_linear
JUMP = 0.5
#: Gauss-Newton steps per sample for a model without a closed-form inverse, and how close (m,
#: rad) they must land on the sample's pose (else the model's inverse_continuing solves it)
NEWTON_STEPS = 2
TRACKED = 1e-10
#: the default origin, as shares of the arm's horizontal reach: this far in front of the base,
#: this high above it. Mapped on every bundled 6- and 7-axis model (FR3, Panda, the ten ABB
#: arms), this is in the middle of the region where the tool reaches straight down with its
#: joints far from their limits and from singularities.
ORIGIN_SHARES = (0.6, 0.35)
#: shares tried in turn when the first does not fit a model (a user's URDF arm)
OTHER_SHARES = tuple(itertools.product((0.6, 0.5, 0.7, 0.4, 0.8), (0.35, 0.5, 0.2, 0.65, 0.05)))[1:]
#: radius of the ring around a default origin that must be reachable too, as a share of the reach
ROOM_SHARE = 0.1
#: seeded joint configurations the reach is estimated from
REACH_SAMPLES = 2000


def spatial_arm(model: Kinematics) -> bool:
    """Whether ``model`` orients its tool (6 or more joints, not position-only): one that draws on a
    plane. So does a servo arm whose base turns its links' plane and whose wrist pitches and rolls
    (five joints, the Braccio's): its roll keeps a pen pointing down in one orientation wherever
    the base turns."""
    if isinstance(model, VerticalPlaneArm):
        return model.dof == 5
    return not getattr(model, "position_only", False) and model.dof >= 6


def tool_down(model: Kinematics) -> Array:
    """The flange's rotation (3, 3) pointing straight down: its orientation at the zero joints,
    turned the shortest way until its z axis points down (so the last joint stays near where it
    is at zero, in the middle of its range on the bundled arms)."""
    rotation = model.forward(np.zeros(model.dof))[:3, :3]
    axis = rotation[:, 2]
    down = np.array([0.0, 0.0, -1.0])
    turn = np.cross(axis, down)
    size, cosine = float(np.linalg.norm(turn)), float(axis @ down)
    if size < 1e-9:  # already down, or straight up: half a turn about the flange's x
        return rotation if cosine > 0 else rotation @ spatial.rotation_x(math.pi)[:3, :3]
    return spatial.rotvec_to_matrix(turn / size * math.atan2(size, cosine)) @ rotation


def horizontal_reach(model: Kinematics) -> float:
    """How far (m) the flange gets from the base's z axis, over seeded joint configurations
    within the limits (an estimate from below, the same on every run)."""
    positions = model.forward(starts_for(model, REACH_SAMPLES))[:, :3, 3]
    return float(np.hypot(positions[:, 0], positions[:, 1]).max())


def default_origin(model: Kinematics) -> Array:
    """A reachable drawing origin (x, y, z) m in front of the arm: on the base's +x axis at
    :data:`ORIGIN_SHARES` of its horizontal reach (out, up), where the tool reaches straight down
    at the origin and on a ring of :data:`ROOM_SHARE` of the reach around it; other shares in
    turn where that does not fit the model. UnreachableError when none does."""
    reach = horizontal_reach(model)
    rotation = tool_down(model)
    for out, up in (ORIGIN_SHARES, *OTHER_SHARES):
        origin = np.array([out * reach, 0.0, up * reach])
        if _has_room(model, rotation, origin, ROOM_SHARE * reach):
            return origin
    raise UnreachableError(f"found no point in front of the arm where {type(model).__name__}'s tool reaches straight"
                           " down; give the drawing plane's origin (robohal draw --origin X,Y,Z)")


def _has_room(model: Kinematics, rotation: Array, origin: Array, radius: float) -> bool:
    """Whether the tool reaches down at ``origin`` and at eight points on a ring around it."""
    found = model.inverse(_pose(rotation, origin))
    if not len(found):
        return False
    q = found[0]
    for angle in np.linspace(0.0, 2 * math.pi, 8, endpoint=False):
        point = origin + radius * np.array([math.cos(angle), math.sin(angle), 0.0])
        ring = model.inverse_continuing(_pose(rotation, point), q)
        if not len(ring):
            return False
    return True


def _pose(rotation: Array, position: Array) -> Array:
    pose = np.eye(4)
    pose[:3, :3] = rotation
    pose[:3, 3] = position
    return pose


def plan_on_plane(model: Kinematics, segments: Sequence[Segment], *, period: float,
                  origin: ArrayLike | None = None, lift: float = DEFAULT_LIFT, speed: float = DEFAULT_SPEED,
                  acceleration: float = DEFAULT_ACCELERATION, jerk: float = DEFAULT_JERK,
                  start: ArrayLike | None = None, check: Callable[[Array], None] | None = None) -> DrawPlan:
    """Plan and check a drawing on the horizontal plane through ``origin`` (x, y, z m; default
    :func:`default_origin`), the tool pointing down and lifted by ``lift`` m between strokes
    (nothing moves). The shape's points are x, y on the plane from ``origin``. The inverse
    kinematics starts from ``start`` joints (the arm's, where known) and, where the path from
    there fails, from the solution nearest the middle of the joint ranges. ``check`` (joints
    (N, dof) -> None or LimitViolation, a backend's ``check_setpoints``) refuses setpoints beyond
    the model's limits."""
    if not spatial_arm(model):
        raise InvalidArgument(f"drawing on a plane needs an arm that points its tool (6 or more joints);"
                              f" {type(model).__name__} has {model.dof}")
    if origin is None:
        origin = default_origin(model)
    origin = spatial.as_finite(origin, "drawing origin")
    if origin.shape != (3,):
        raise InvalidArgument(f"the drawing origin must be one (x, y, z) point in metres, got shape {origin.shape}")
    lift = float(lift)
    if not (math.isfinite(lift) and lift > 0):
        raise InvalidArgument(f"the lift between strokes must be a positive number of metres, got {lift}")
    plane = np.eye(4)
    plane[:3, 3] = origin
    rotation = tool_down(model)
    strokes = strokes_of(segments)
    asked, binding = speed, ""
    for _ in range(SLOWDOWN_ATTEMPTS):
        travels, drawn = _pieces(strokes, lift, period, speed, acceleration, jerk)
        order = [piece for pair in itertools.zip_longest(travels, drawn) for piece in pair if piece is not None]
        joints = _solve(model, rotation, origin, order, start, check)
        pieces = np.split(joints, np.cumsum([len(piece) for piece in order])[:-1])
        overload, what = _overload(model, pieces, period)
        if overload <= 0.9:
            bounds = np.cumsum([0] + [len(stroke) for stroke in drawn])
            ranges = tuple((int(a), int(b)) for a, b in itertools.pairwise(bounds))
            plan = DrawPlan(np.vstack([stroke[:, :2] for stroke in drawn]), np.vstack(pieces[1::2]), period,
                            model.solution_label(pieces[0][0]), speed, ranges, travels=tuple(pieces[0::2]),
                            plane=plane)
            return replace(plan, speed_note=speed_note(plan, asked, acceleration, binding))
        binding = binding or what
        scale = 0.8 / overload  # velocity scales with the path's speed, acceleration with its square
        speed, acceleration, jerk = speed * scale, acceleration * scale**2, jerk * scale**3
    raise UnreachableError("the shape passes too close to a singularity for the joints' speed limits;"
                           " move it (--origin) or make it smaller")


def _pieces(strokes: list[list[Segment]], lift: float, period: float, speed: float, acceleration: float,
            jerk: float) -> tuple[list[Array], list[Array]]:
    """The pen's samples (M, 3) on the plane (x, y, height) of every travel and every stroke:
    lower onto the first stroke, then after each stroke rise, move over and lower onto the next,
    and rise after the last."""
    up = np.array([0.0, 0.0, lift])
    travels, drawn = [], []
    end = None
    for stroke in strokes:
        start = _flat(stroke[0].at(np.zeros(1))[0])
        corners = [start + up, start] if end is None else [end, end + up, start + up, start]
        travels.append(sample_path(_lines(corners), period, speed, acceleration, jerk))
        drawn.append(_flat(sample_path(stroke, period, speed, acceleration, jerk)))
        end = drawn[-1][-1]
    travels.append(sample_path(_lines([end, end + up]), period, speed, acceleration, jerk))
    return travels, drawn


def _flat(points: Array) -> Array:
    """Points on the plane (..., 2) as (..., 3) at height zero."""
    return np.concatenate([points, np.zeros((*np.shape(points)[:-1], 1))], axis=-1)


def _lines(corners: list[Array]) -> list[Segment]:
    """Straight segments (in 3-D) through ``corners``, leaving out any of zero length."""
    segments = []
    for a, b in itertools.pairwise(corners):
        length = float(np.linalg.norm(b - a))
        if length > 0:
            segments.append(Segment(length, lambda s, a=a, b=b, length=length: a + np.multiply.outer(s / length, b - a),
                                    "travel"))
    return segments


def _solve(model: Kinematics, rotation: Array, origin: Array, pieces: list[Array], start: ArrayLike | None,
           check: Callable[[Array], None] | None) -> Array:
    """Joints for every sample of ``pieces`` (each (M, 3) on the plane), checked: from ``start``
    where that works, else from the solution nearest the middle of the joint ranges."""
    positions = np.vstack(pieces) + origin
    if start is not None:
        try:
            return _checked(model, _inverse(model, rotation, positions, origin, start), positions, check)
        except UnreachableError:
            pass  # the arm's own posture may lead into a limit: the middle of the ranges may not
    return _checked(model, _inverse(model, rotation, positions, origin, None), positions, check)


def _inverse(model: Kinematics, rotation: Array, positions: Array, origin: Array, start: ArrayLike | None) -> Array:
    """Each position's joints, the tool down, each solved from the joints before (the first
    from ``start``, or nearest the middle of the ranges)."""
    joints = np.empty((len(positions), model.dof))
    pose = _pose(rotation, positions[0])
    found = model.inverse(pose) if start is None else model.inverse_continuing(pose, start)
    track = not model.closed_form  # a closed form is faster than any iteration
    for i, position in enumerate(positions):
        if i:
            if np.array_equal(position, positions[i - 1]):  # a profile's rest: the same joints
                joints[i] = joints[i - 1]
                continue
            pose[:3, 3] = position
            tracked = _track(model, pose.tolist(), joints[i - 1].tolist()) if track else None
            if tracked is not None:
                joints[i] = tracked
                continue
            found = model.inverse_continuing(pose, joints[i - 1])
        if not len(found):
            raise UnreachableError(f"{_where(position, origin)} cannot be reached with the tool pointing down:"
                                   f" {found.reason or 'no solution'}")
        joints[i] = found[0]
    return joints


def _track(model: Kinematics, goal: list[list[float]], q: list[float]) -> list[float] | None:
    """The joints that reach ``goal`` (a pose's rows) next to ``q``, those of the sample before:
    Gauss-Newton steps from there (a sample is a control period from the last, so
    :data:`NEWTON_STEPS` land far inside :data:`TRACKED`); None where they do not, or leave the
    joint limits: then the model's own solver takes that sample."""
    for step in range(NEWTON_STEPS + 1):
        (x, y, z, p), jacobian = model.frame_and_jacobian_lists(q)
        error = [goal[0][3] - p[0], goal[1][3] - p[1], goal[2][3] - p[2], *spatial.rotation_error_rows(goal, x, y, z)]
        if max(map(abs, error)) < TRACKED:
            return q if model.limits.contains_values(q) else None
        if step == NEWTON_STEPS:
            return None
        j = np.array(jacobian)
        try:
            move = j.T @ np.linalg.solve(j @ j.T, error)
        except np.linalg.LinAlgError:  # singular here: the model's solver says why
            return None
        q = (np.array(q) + move).tolist()
    return None


def _checked(model: Kinematics, joints: Array, positions: Array, check: Callable[[Array], None] | None) -> Array:
    steps = np.abs(np.diff(joints, axis=0)).max(axis=1)
    if steps.size and steps.max() > JUMP:
        at = int(np.argmax(steps))
        raise UnreachableError(f"the path passes a singularity or changes the arm's configuration near"
                               f" ({', '.join(f'{v:.4g}' for v in positions[at])}) m: a joint would jump"
                               f" {math.degrees(steps[at]):.0f} deg; move the shape (--origin) or make it smaller")
    try:
        model.check_joints(joints, "drawing path")
        if check is not None:
            check(joints)
    except LimitViolation as exc:
        raise UnreachableError(f"the path needs setpoints the robot refuses: {exc}") from None
    return joints


def _where(position: Array, origin: Array) -> str:
    x, y, height = position - origin
    place = f"point ({x * 1000:.1f}, {y * 1000:.1f}) mm of the shape"
    if abs(height) > 1e-9:
        place = f"the pen-up move {height * 1000:.0f} mm above ({x * 1000:.1f}, {y * 1000:.1f}) mm"
    return f"{place}, at ({', '.join(f'{v:.4g}' for v in position)}) m,"


def _overload(model: Kinematics, pieces: list[Array], period: float) -> tuple[float, str]:
    """How far the fastest piece goes past the joints' limits (above 1: too fast; the path's
    speed must shrink by that much) and which limit that is."""
    limits = model.limits
    worst = {"velocity": 0.0, "acceleration": 0.0, "jerk": 0.0, "end-of-travel speed": 0.0}
    for piece in pieces:  # each piece starts and ends at rest: its own move
        rates = [np.diff(piece, n=n, axis=0) / period**n for n in (1, 2, 3)]
        worst["velocity"] = max(worst["velocity"], float((np.abs(rates[0]) / limits.velocity).max(initial=0.0)))
        worst["acceleration"] = max(worst["acceleration"],
                                    math.sqrt(float((np.abs(rates[1]) / limits.acceleration).max(initial=0.0))))
        worst["jerk"] = max(worst["jerk"], float(np.cbrt((np.abs(rates[2]) / limits.jerk).max(initial=0.0))))
        worst["end-of-travel speed"] = max(worst["end-of-travel speed"],
                                           end_of_travel_ratio(limits, piece[0], piece[1:], period))
    what = max(worst, key=worst.__getitem__)
    if not math.isfinite(worst[what]):
        raise UnreachableError("the path moves a joint toward a position limit it is too close to (the arm allows"
                               " no speed toward it there); move the shape (--origin)")
    return worst[what], what
