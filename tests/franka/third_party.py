"""Third-party Franka parts for the tests: the franky-sim FCI simulator and the
franky-control client, both in the venv that ``make franky-sim`` builds.

Imported by the tests (standard library only at the top), this module starts
franky-sim in its own process and runs franky client scenarios in theirs. Run as a
script by that venv's Python, it is the client:

    .venv-franky-sim/bin/python tests/franka/third_party.py SCENARIO HOST

which prints one JSON line: what the scenario asked for and where the robot ended.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-franky-sim"
MAKE_TARGET = "make franky-sim"
FCI_PORTS = (1337, 1338)  # franky-sim binds both on its host: robot commands, gripper
START_TIMEOUT = 60.0  # s: importing MuJoCo and pinocchio and loading the FR3 model (about 2 s here)
STOP_TIMEOUT = 5.0  # s
READY_TEXT = "Connect to the server using"  # franky-sim 1.0.4's line before it serves


def venv_python() -> Path:
    return VENV / "bin" / "python"


def missing_reason(module: str) -> str | None:
    """Why the venv cannot serve ``module`` (None when it can): the skip reason."""
    failed = VENV / "install-failed.txt"  # written by the make target when pip could not install
    if failed.exists():
        lines = failed.read_text(errors="replace").strip().splitlines()
        return f"the {VENV.name} packages could not install ({MAKE_TARGET}): {lines[-1] if lines else ''}"
    if not venv_python().exists():
        return f"{VENV.name} is missing (build it with `{MAKE_TARGET}`)"
    done = subprocess.run([str(venv_python()), "-c", f"import {module}"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        return f"{module} does not import in {VENV.name} (rebuild it with `{MAKE_TARGET}`): {last}"
    return None


def ports_free(host: str) -> bool:
    for port in FCI_PORTS:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                return False
    return True


def listening(host: str, port: int) -> bool:
    """A TCP connect succeeds. (franky-sim takes a connection that closes before Connect
    as a client that left, and waits for the next one.)"""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


# franky-sim's own entry point (its `franky-sim` console script), behind a thread that turns the
# end of stdin into Ctrl-C: closing the pipe stops it cleanly, and it never outlives the test
# process that started it, however that ends.
FRANKY_SIM_LAUNCHER = """
import os, signal, sys, threading
def stop_at_end_of_input():
    sys.stdin.buffer.read()
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=stop_at_end_of_input, daemon=True).start()
from franky_sim.run_server import main
sys.argv[0] = "franky-sim"
main()
"""


class FrankySim:
    """franky-sim (MuJoCo) on ``host`` in its own process, stopped by :meth:`stop`."""

    def __init__(self, host: str, timeout: float = START_TIMEOUT) -> None:
        self.host = host
        self._log = tempfile.NamedTemporaryFile(prefix="franky-sim-", suffix=".log", delete=False)
        # `-s mujoco`: the default `-s auto` fails without the optional genesis package.
        self.process = subprocess.Popen(
            [str(venv_python()), "-c", FRANKY_SIM_LAUNCHER, "-s", "mujoco", "--hostname", host],
            stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while not self.ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                what = (f"exited with code {self.process.returncode}" if self.process.poll() is not None
                        else f"was not serving {host}:{FCI_PORTS[0]} within {timeout:g} s")
                self.stop()
                raise RuntimeError(f"franky-sim {what}:\n{self.log_tail()}")
            time.sleep(0.05)  # polling a condition with a deadline, not a synchronisation sleep

    def ready(self) -> bool:
        """Serving: franky-sim binds its ports before it loads the model, and prints this line
        once its loop is about to run; then the port takes connections."""
        return READY_TEXT in self.log_tail() and listening(self.host, FCI_PORTS[0])

    def log_tail(self, lines: int = 30) -> str:
        return "".join(Path(self._log.name).read_text(errors="replace").splitlines(keepends=True)[-lines:])

    def stop(self) -> None:
        """End of stdin (a clean shutdown), then SIGKILL to its process group; idempotent."""
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.close()
                self.process.wait(timeout=STOP_TIMEOUT)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=STOP_TIMEOUT)
        if self.process.stdin is not None:
            self.process.stdin.close()
        self._log.close()

    def remove_log(self) -> None:
        Path(self._log.name).unlink(missing_ok=True)


def run_client(scenario: str, host: str, timeout: float = 60.0) -> dict:
    """Run a franky client scenario in its own process; its JSON result."""
    done = subprocess.run([str(venv_python()), __file__, scenario, host],
                          capture_output=True, text=True, timeout=timeout)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise AssertionError(f"franky client {scenario} exited with {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return json.loads(lines[-1])


# The franky client (runs in the franky venv; franky is imported only here) --------------------

# A shortcoming of the client, not of the robot: franky plans with the Panda's limits (its defaults,
# read from franky 2.0.0: up to 20 rad/s^2 and 10000 rad/s^3 on joints 6 and 7; 1.7 m/s, 13 m/s^2,
# 6500 m/s^3 in translation), while the FR3 allows 10 rad/s^2 and 5000 rad/s^3 on every joint and
# 9 m/s^2, 4500 m/s^3 in translation (Franka's FR3 limit table, robohal_franka/facts.py), and its
# filtered commands overshoot the limits it plans with (measured: 5254 rad/s^3 against 5000 at full
# dynamics; 10.08 rad/s^2 on joint 7 at 0.5). A robot that checks its limits refuses those. At 0.4
# of franky's dynamics every limit keeps a 20 % margin.
DYNAMICS_FACTOR = 0.4
# Cartesian motions, further: franky limits their Cartesian acceleration and jerk only, and near
# the ready pose the robot's inverse kinematics turns each m/s^2 at the flange into about 2.4 rad/s^2
# on joints 2 and 6 (measured on the bundled simulator, whose IK follows the DH model). At 0.4 a
# 5 cm move reached 10.7 rad/s^2 and 7300 rad/s^3 on those joints within 3 ms (aborted as
# cartesian_motion_generator_joint_*_discontinuity, as franky users report from real arms); at 0.2 still
# 5900 rad/s^3. This factor on top (0.12 in all) keeps them inside the FR3's joint limits.
CARTESIAN_FACTOR = 0.3
SETTLE_TIMEOUT = 2.0  # s: for the measured joints to come to rest after a motion
IMPEDANCE_TIME = 1.5  # s: how long franky's torque motions run (their springs settle well within it)
JOINT_STIFFNESS = [600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0]  # Nm/rad: libfranka's joint impedance example's
REST_SPEED = 1e-3  # rad/s: our choice, far below any commanded speed here


def _settled(robot):
    """The robot state once every joint moves slower than REST_SPEED (or at the deadline)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    state = robot.state
    while max(abs(v) for v in state.dq) > REST_SPEED and time.monotonic() < deadline:
        state = robot.state
    return state


def _joint_target(q0, delta):
    return [a + b for a, b in zip(q0, delta, strict=True)]


def _scenario(robot, franky, name: str) -> dict:
    """Run one motion; what was asked and where the robot ended (the test judges)."""
    q0 = list(robot.current_joint_state.position)
    pose0 = robot.current_pose.end_effector_pose
    asked: dict = {}
    if name == "joint":
        target = _joint_target(q0, [0.2, -0.15, 0.1, 0.2, -0.1, 0.15, 0.3])
        robot.move(franky.JointMotion(franky.JointState(target)))
        asked["q"] = target
    elif name == "joint_waypoint":
        first = _joint_target(q0, [0.15, 0.1, 0.0, 0.15, 0.0, -0.1, 0.2])
        last = _joint_target(q0, [-0.1, 0.05, 0.1, 0.1, 0.1, 0.1, -0.2])
        robot.move(franky.JointWaypointMotion([franky.JointWaypoint(franky.JointState(first)),
                                               franky.JointWaypoint(franky.JointState(last))]))
        asked["q"] = last
    elif name == "joint_velocity":
        velocity = [0.2, 0.0, -0.2, 0.0, 0.3, 0.0, 0.0]
        hold = 0.5  # s at the asked velocity, then franky brings the joints to rest
        robot.move(franky.JointVelocityMotion(velocity, franky.Duration(int(hold * 1000))))
        asked["dq"], asked["hold_s"] = velocity, hold
    elif name in ("cartesian", "cartesian_waypoint"):
        shifts = [[0.05, 0.03, -0.04]] if name == "cartesian" else [[0.04, 0.0, 0.0], [0.04, -0.05, 0.03]]
        targets = [[p + d for p, d in zip(pose0.translation, shift, strict=True)] for shift in shifts]
        poses = [franky.RobotPose(franky.Affine(t, pose0.quaternion)) for t in targets]
        if name == "cartesian":
            robot.move(franky.CartesianMotion(franky.CartesianState(poses[0]), relative_dynamics_factor=CARTESIAN_FACTOR))
        else:
            robot.move(franky.CartesianWaypointMotion(
                [franky.CartesianWaypoint(franky.CartesianState(pose)) for pose in poses],
                relative_dynamics_factor=CARTESIAN_FACTOR))
        asked["translation"], asked["quaternion"] = targets[-1], list(pose0.quaternion)
    elif name in ("joint_impedance", "cartesian_impedance", "torque"):
        # franky's torque motions run until stopped: a reaction ends each after IMPEDANCE_TIME with
        # franky's own graceful stop (damping to rest), as its documentation has it
        if name == "joint_impedance":
            target = _joint_target(q0, [0.1, -0.05, 0.05, 0.1, 0.0, 0.05, 0.15])
            motion = franky.JointImpedanceMotion(target, stiffness=JOINT_STIFFNESS)
            asked["q"] = target
        elif name == "cartesian_impedance":
            translation = [p + d for p, d in zip(pose0.translation, [0.03, -0.02, -0.03], strict=True)]
            motion = franky.CartesianImpedanceMotion(franky.Affine(translation, pose0.quaternion),
                                                     translational_stiffness=1000.0, rotational_stiffness=100.0)
            asked["translation"], asked["quaternion"] = translation, list(pose0.quaternion)
        else:  # zero torque on top of the robot's gravity compensation: the arm floats where it is
            motion = franky.SimpleTorqueMotion(signal_timeout=None, compensate_coriolis=True)
            asked["q"] = q0
        motion.add_reaction(franky.TorqueReaction(franky.Measure.REL_TIME > IMPEDANCE_TIME, franky.TorqueStopMotion()))
        robot.move(motion)
    else:
        raise SystemExit(f"unknown scenario {name!r}")
    state = _settled(robot)
    pose = robot.current_pose.end_effector_pose
    return {**asked, "q0": q0, "q_end": list(state.q), "dq_end": list(state.dq),
            "translation_end": list(pose.translation), "quaternion_end": list(pose.quaternion)}


# Our choice: the client runs at the highest normal priority (nice -20), not SCHED_FIFO. franky's two
# threads spin while they wait (measured: 142 % and 91 % of a core during a motion); as real-time
# threads on a two-core machine they would use up the kernel's real-time budget
# (sched_rt_runtime_us) and have it throttle every real-time thread, the simulator's clock with them.
# A real robot is another computer, which no client can starve.
CLIENT_NICENESS = -20


def raise_priority() -> bool:
    """The highest normal priority for this process and the threads it starts, where the OS permits
    (root or CAP_SYS_NICE): a busy machine then rarely delays franky's 1 kHz loop."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, CLIENT_NICENESS)
        return True
    except (AttributeError, OSError):
        return False


def desk_main(dialect: str, host: str, desk_host: str, password: str) -> int:
    """franky's Desk (v1) or DeskWebSession (web) brings the robot up, franky moves the arm, the
    Desk locks it again; a Pilot button pressed meanwhile (the test injects it once this prints
    LISTENING) arrives on franky's poll_buttons."""
    raise_priority()
    import franky

    session = franky.Desk if dialect == "v1" else franky.DeskWebSession
    result: dict = {"dialect": dialect, "error": None}
    with session(desk_host, "franka", password) as desk:
        try:
            result["brakes_before"] = desk.brake_state.value
            desk.take_control(wait_timeout=10.0)
            result["has_control"] = bool(desk.has_control)
            desk.unlock_brakes()
            desk.enable_fci()
            result["brakes_unlocked"] = desk.brake_state.value
            desk.poll_buttons(timeout=0.0)  # opens the Pilot's websocket
            print("LISTENING", flush=True)
            events: list = []
            deadline = time.monotonic() + 30.0
            while not any(not event.pressed for event in events) and time.monotonic() < deadline:  # press, release
                events += desk.poll_buttons(timeout=max(deadline - time.monotonic(), 0.0))
            result["buttons"] = [[event.button.value, event.pressed] for event in events]
            robot = franky.Robot(host, realtime_config=franky.RealtimeConfig.Ignore)
            robot.relative_dynamics_factor = DYNAMICS_FACTOR
            q0 = list(robot.current_joint_state.position)
            target = _joint_target(q0, [0.1, -0.1, 0.1, 0.1, -0.1, 0.1, 0.1])
            robot.move(franky.JointMotion(franky.JointState(target)))
            state = _settled(robot)
            result.update(q=target, q_end=list(state.q), robot_mode=str(state.robot_mode))
            del robot
            desk.lock_brakes()
            result["brakes_after"] = desk.brake_state.value
        except (franky.Exception, franky.DeskError) as exc:
            result["error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(result), flush=True)
    return 0


def client_main(argv: list[str]) -> int:
    if argv[0] == "desk":
        return desk_main(*argv[1:])
    scenario, host = argv
    raised = raise_priority()
    import franky

    robot = franky.Robot(host, realtime_config=franky.RealtimeConfig.Ignore)
    robot.relative_dynamics_factor = DYNAMICS_FACTOR
    result: dict = {"scenario": scenario, "error": None, "raised_priority": raised}
    try:
        result.update(_scenario(robot, franky, scenario))
    except franky.Exception as exc:  # a refused or reflex-aborted motion: the test reports it
        result["error"] = f"{type(exc).__name__}: {exc}"
    state = robot.state
    result["robot_mode"] = str(state.robot_mode)
    result["last_motion_errors"] = str(state.last_motion_errors)
    result["has_errors"] = bool(robot.has_errors)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(client_main(sys.argv[1:]))
