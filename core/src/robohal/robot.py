"""What a user calls: :func:`robohal.connect` gives a :class:`Robot`, a model and a backend
together, with the motions users ask for by name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import spatial
from .control.backend import Backend
from .control.handle import MotionHandle
from .control.lifecycle import LifecycleState
from .control.tools import Gripper, IoPorts
from .errors import InvalidArgument, RobohalError
from .kinematics import Kinematics
from .motion import MAX_FOLLOW_TIME, JointTrajectory, Motion, MotionResult, PointToPoint
from .motion.linear import LinearMove
from .motion.reactions import Until, with_reactions
from .motion.servo import DEFAULT_TIMEOUT as SERVO_TIMEOUT
from .motion.servo import servo_target
from .motion.torque import Teach
from .motion.waypoints import Waypoints
from .payload import Payload
from .state import Array, RobotState


class Robot:
    """A connected robot: a model and a backend, and what users want to do with them.

    Use it as a context manager; it stops the motion, closes the link and stops
    any simulator it started when the block ends. One dropped without ``close()``
    is closed (and its simulator stopped) once nothing refers to its backend, with
    a :class:`ResourceWarning`, as an unclosed file is.
    """

    def __init__(self, backend: Backend, model: Kinematics, *, simulator: Any = None, name: str = "",
                 gripper: Gripper | None = None, io: IoPorts | None = None) -> None:
        self.backend = backend
        self.model = model
        self.simulator = simulator
        if simulator is not None:  # it serves the backend, which may outlive this Robot
            backend.simulator = simulator
        self.name = name or str(backend.uri)
        #: the gripper on the flange (:class:`~robohal.control.tools.Gripper`), or None when it has none
        self.gripper = gripper
        #: the I/O signals the backend declares, by name (empty when it declares none)
        self.io = io if io is not None else IoPorts(owner=self.name)
        self._speed = 1.0
        #: s without a new servo target after which the arm brakes to rest (for new streams)
        self.servo_timeout = SERVO_TIMEOUT

    # Lifecycle
    def connect(self) -> Robot:
        self.backend.connect()
        if self.gripper is not None:
            try:
                self.gripper.connect()
            except BaseException:
                self.backend.close()
                raise
        return self

    def close(self) -> None:
        try:
            if self.gripper is not None:
                self.gripper.disconnect()  # before the arm: a running grasp is stopped while the link is up
        finally:
            self._close_arm()

    def _close_arm(self) -> None:
        try:
            self.backend.close()
        finally:
            if self.simulator is not None:
                self.simulator.stop()
                if self.backend.simulator is self.simulator:
                    self.backend.simulator = None  # stopped: nothing left for the backend to stop

    def __enter__(self) -> Robot:
        if not self.backend.connected:
            self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # State
    @property
    def lifecycle(self) -> LifecycleState:
        """Where the backend is in its lifecycle: disconnected, ready, moving, fault or lost."""
        return self.backend.lifecycle

    @property
    def state(self) -> RobotState:
        return self.backend.read()

    @property
    def q(self) -> Array:
        return np.array(self.backend.read().q)

    @property
    def pose(self) -> Array:
        """The flange pose from the measured joints."""
        return self.model.forward(self.state.q)

    @property
    def commanded(self) -> Array:
        """The joints (rad) the robot holds or was last told to go to: where the setpoints are.
        Start your own loops and relative moves from here, not from the measured :attr:`q`: a
        real arm rests a little off its command, and a first setpoint at the measured joints
        is a step (a Franka refuses it)."""
        return self.backend.commanded

    @property
    def simulated(self) -> bool:
        """True when no hardware is behind this robot: a bundled simulator robohal started (the
        ``sim`` host), a stand-in, or the in-process ``sim://`` robot."""
        return self.backend.simulated

    @property
    def payload(self) -> Payload | None:
        """What the robot was told it carries (None: nothing said since connect)."""
        return self.backend.payload

    @payload.setter
    def payload(self, payload: Payload) -> None:
        """Tell the robot what it carries: ``robot.payload = Payload(0.5, [0, 0, 0.05])`` (kg, m in
        the flange frame). A backend that cannot take one raises :class:`~robohal.errors.Unsupported`."""
        if not isinstance(payload, Payload):
            raise InvalidArgument(f"robot.payload takes a robohal.Payload(mass, center_of_mass, inertia), got {payload!r:.60}")
        self.backend.set_payload(payload)

    # Motions
    @property
    def speed(self) -> float:
        """The robot-wide dynamics factor in (0, 1]: every motion this robot plans uses its
        velocity, acceleration and jerk limits (and Cartesian speeds) times this factor, on top of
        each call's own ``speed`` (as franky's relative dynamics factor). 1.0 by default."""
        return self._speed

    @speed.setter
    def speed(self, factor: float) -> None:
        if isinstance(factor, bool) or not isinstance(factor, (int, float, np.integer, np.floating)) \
                or not 0.0 < factor <= 1.0:
            raise InvalidArgument(f"robot.speed is a fraction in (0, 1], got {factor!r}")
        self._speed = float(factor)

    def run(self, motion: Motion, *, until: Until = None, wait: bool = True) -> MotionResult | MotionHandle:
        """Run a motion; while another runs, it takes over from it (see :meth:`Backend.run`).
        ``until``: reactions checked every control cycle (:mod:`robohal.motion.reactions`): a
        condition (``force("z") > 5.0``) ends the motion when met; a :class:`Reaction` may hand
        over to another motion instead. A torque motion (:mod:`robohal.motion.torque`: impedance,
        applied torques and wrenches, hand guiding) runs on a robot that takes joint torques; on
        another it raises :class:`~robohal.errors.Unsupported` here. Every motion returns its
        :class:`~robohal.motion.MotionResult`; with ``wait=False`` it returns at once with a
        :class:`~robohal.control.handle.MotionHandle` (``wait()``, ``done()``, ``cancel()``)."""
        return self.backend.run(with_reactions(motion, until), wait=wait)

    def teach(self, *, damping: ArrayLike = 0.0, locked: str | Sequence[str] = (), duration: float | None = None,
              until: Until = None, wait: bool = True) -> MotionResult | MotionHandle:
        """Hand guiding: the arm floats, gravity-compensated, and a hand moves it (a
        :class:`~robohal.motion.torque.Teach` motion, on a robot that takes joint torques).
        ``damping`` (Nm s/rad, one number or one per joint) makes it viscous; ``locked`` holds
        some of the flange's axes where they are (``"x"``, ``"y"``, ``"z"``, ``"rx"``, ``"ry"``,
        ``"rz"``: along and about the base axes). It runs for ``duration`` s, or until stopped
        (``robot.stop()``, the handle's ``cancel()``, Ctrl-C) or a reaction ends it (``until=``),
        then damps the arm to rest and hands it to the robot's own hold. A robot that takes no
        torques raises :class:`~robohal.errors.Unsupported` at the call."""
        return self.run(Teach(damping=damping, locked=tuple(locked) if not isinstance(locked, str) else locked,
                              duration=duration), until=until, wait=wait)

    @property
    def command_interfaces(self) -> frozenset[str]:
        """What this robot takes commands as: ``"joint_position"`` always, ``"joint_torque"`` where
        its backend runs torque motions (:mod:`robohal.motion.torque`)."""
        return self.backend.command_interfaces

    def move_joints(self, q: ArrayLike, *, speed: float = 0.5, until: Until = None,
                    wait: bool = True) -> MotionResult | MotionHandle:
        """Move to joints ``q`` (rad), jerk-limited and time-optimal: from rest on a straight line
        in joint space. ``speed`` is a fraction of the joint limits. While another motion runs,
        this one takes over from it without a stop."""
        target = spatial.as_finite(q, "target joints")
        if target.shape != (self.model.dof,):
            raise InvalidArgument(f"target must have {self.model.dof} joints, got shape {target.shape}")
        self.model.check_joints(target, "target")
        outcome = self.backend.run(with_reactions(PointToPoint(target, speed, dynamics=self._speed), until), wait=wait)
        outcome.target = target
        return outcome

    def move_linear(self, pose: ArrayLike, *, speed: float = 0.25, angular_speed: float = 1.0,
                    joint_speed: float = 1.0, relative: bool = False, frame: str = "base", until: Until = None,
                    wait: bool = True) -> MotionResult | MotionHandle:
        """Move the flange on a straight line to ``pose`` at ``speed`` m/s (and
        ``angular_speed`` rad/s), through the model's inverse kinematics. While another motion
        runs, this one takes over from it without a stop: the flange bends from where it moves
        into the line (tracked by differential IK), and rests on ``pose``.

        ``relative=True``: ``pose`` is a move from where the flange is commanded now, expressed in
        the ``frame`` ``"base"`` (translate along the base axes, rotate about them at the flange)
        or ``"tool"`` (along and about the flange's own axes)."""
        start = self.backend.commanded
        target = self.relative_target(pose, frame, start) if relative else spatial.as_pose(pose, "target pose")
        motion = LinearMove(target, speed, angular_speed, joint_speed, dynamics=self._speed)
        if not self.backend.busy:  # from rest: a line the arm can follow, or an error before anything moves
            motion.plan(start, self.model, self.backend.period)
        return self.backend.run(with_reactions(motion, until), wait=wait)

    # Streams of targets
    def servo(self, q: ArrayLike, *, velocity: ArrayLike | None = None, acceleration: ArrayLike | None = None,
              duration: float | None = None) -> None:
        """Stream joint targets (rad): call at any rate, from any thread; the arm follows the newest,
        time-optimally within the limits, taking over from any running motion. A target outside a
        joint range is clamped into it. ``velocity`` (rad/s, clamped into the velocity limits) is
        the one to pass ``q`` at, a feed-forward: samples of a path streamed with their velocities
        are followed more closely than bare ones, which are each approached to rest (reached, the
        joints go on at it until the next target; a target just ahead at a high velocity needs a
        run-up, so stream paths that start at rest); None comes to rest at ``q``.
        ``acceleration`` (rad/s^2, clamped into the acceleration limits; needs ``velocity``) is the
        one to pass ``q`` with, and ``duration`` (s) the least time to take to reach it (None: as
        soon as the limits allow): a path's samples streamed one ``duration`` ahead of their time,
        each with its velocity and acceleration, are followed on the path and at its pace. When no
        call comes for :attr:`servo_timeout` seconds, the arm brakes to rest. Returns at once.
        While an impedance motion runs (:class:`~robohal.motion.torque.JointImpedance`,
        :class:`~robohal.motion.torque.CartesianImpedance`), each target moves its equilibrium
        instead (positions only: no ``velocity``, ``acceleration`` or ``duration``), and the
        impedance goes on without a timeout until it is stopped."""
        self._steer("joints", q, velocity, acceleration, duration)

    def servo_pose(self, pose: ArrayLike) -> None:
        """Stream flange pose targets ((4, 4), base frame, metres): one differential-IK cycle per
        control cycle toward the newest, inside the joint limits (a pose out of reach is approached
        as closely as they allow). Otherwise as :meth:`servo`; while a
        :class:`~robohal.motion.torque.CartesianImpedance` runs, each pose is its new equilibrium."""
        self._steer("pose", pose)

    def servo_velocity(self, dq: ArrayLike) -> None:
        """Stream joint velocity targets (rad/s, clipped to the velocity limits); the joints keep the
        newest until an end of travel stops them. Otherwise as :meth:`servo`."""
        self._steer("velocity", dq)

    def _steer(self, kind: str, value: ArrayLike, velocity: ArrayLike | None = None,
               acceleration: ArrayLike | None = None, duration: float | None = None) -> None:
        target = servo_target(kind, value, self.model.dof, velocity, acceleration, duration)
        self.backend.steer(target, timeout=self.servo_timeout,
                           dynamics=self._speed)

    def relative_target(self, delta: ArrayLike, frame: str, q: Array) -> Array:
        """The flange pose ``delta`` away from the flange at joints ``q`` (see :meth:`move_linear`)."""
        delta = spatial.as_pose(delta, "relative move")
        current = self.model.forward(q)
        if frame == "tool":
            return current @ delta
        if frame == "base":
            target = current.copy()
            target[:3, :3] = delta[:3, :3] @ current[:3, :3]
            target[:3, 3] = current[:3, 3] + delta[:3, 3]
            return target
        raise InvalidArgument(f"frame is 'base' or 'tool', got {frame!r}")

    def follow(self, points: ArrayLike, times: ArrayLike | None = None, *, speed: float = 0.5, until: Until = None,
               wait: bool = True) -> MotionResult | MotionHandle:
        """Pass through joint waypoints ``points`` (k, dof), rad.

        Without ``times``: time-optimally and without stopping at the points between (each is
        passed at a velocity its neighbours allow; joints that turn back there stop there), at
        rest on the last; ``speed`` as in :meth:`move_joints`. With ``times`` (s, rising, from
        now): each point at its time, on jerk-limited segments that stop at each point when a
        segment's time allows nothing smoother."""
        points = spatial.as_finite(points, "waypoints")
        if points.ndim != 2 or points.shape[1] != self.model.dof or len(points) == 0:
            raise InvalidArgument(f"follow() needs waypoints (k, {self.model.dof})")
        self.model.check_joints(points, "waypoint")
        if times is None:
            return self.backend.run(with_reactions(Waypoints(points, speed, dynamics=self._speed), until), wait=wait)
        if self.backend.busy:  # timed points are planned from rest, where the arm is now
            raise RobohalError("follow() with times starts from rest: wait() for the running motion or stop() it"
                               " first (without times it takes over)")
        times = spatial.as_finite(times, "times")
        if times.shape != (points.shape[0],):
            raise InvalidArgument("follow() needs waypoints (k, dof) and k times")
        if np.any(np.diff(np.concatenate([[0.0], times])) <= 0):
            raise InvalidArgument("waypoint times must rise from 0")
        if times[-1] > MAX_FOLLOW_TIME:
            raise InvalidArgument(f"waypoint times must stay within {MAX_FOLLOW_TIME:g} s, got {times[-1]:g} s")
        period = self.backend.period
        segments = []
        start = self.backend.commanded
        t0 = 0.0
        for k, (point, t) in enumerate(zip(points, times, strict=False)):
            planned = PointToPoint(point).plan(start, self.model, period)
            wanted = round((t - t0) / period)
            if len(planned) > wanted + 1:
                raise InvalidArgument(
                    f"waypoint {k + 1} cannot be reached {t - t0:.3f} s after the previous one within the"
                    f" joint limits (it needs {len(planned) * period:.3f} s)"
                )
            if len(planned) < wanted:  # early: wait at the waypoint until its time
                planned = np.vstack([planned, np.repeat(planned[-1:], wanted - len(planned), axis=0)])
            segments.append(planned)
            start, t0 = point, t
        return self.backend.run(with_reactions(JointTrajectory(np.vstack(segments)), until), wait=wait)

    def wait(self, timeout: float | None = None) -> MotionResult | None:
        """Wait until no motion runs (the arm at rest) and return the newest motion's result;
        raise the error a background motion met. None if one still runs after ``timeout`` s."""
        return self.backend.wait(timeout)

    def stop(self) -> None:
        self.backend.stop()

    def recover(self) -> RobotState:
        return self.backend.recover()

    def __repr__(self) -> str:
        return f"<Robot {self.name} dof={self.model.dof}>"
