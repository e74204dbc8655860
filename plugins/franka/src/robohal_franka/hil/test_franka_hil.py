"""Franka HIL suite: runs against every ``franka`` target (default: the FCI simulator
through the real pylibfranka, and the pylibfranka-compatible stubs).

    robohal hil                                     # with the other suites, on the bundled simulators
    pytest --pyargs robohal_franka.hil              # this suite alone
    robohal hil --target 'franka://172.16.0.2?model=franka.fr3'

Motions are small. The fault tests (raw bad stream, injected reflex, UDP stall)
need the simulator and are skipped on a real arm.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from robohal import ConnectionLost, HardwareFault, LimitViolation, RobotMode
from robohal.cartesian import CartesianBackend
from robohal.motion import Hold, PointToPoint
from robohal.testing.target import HilTarget

pytestmark = pytest.mark.hil_backend("franka")

#: how far (m) the commanded flange may trail a Cartesian path on the way (checked every 10 cycles)
PATH_TOLERANCE = 0.005
#: how close (m) the commanded flange must end on the path's end pose
END_TOLERANCE = 1e-4


def fci_simulator(hil_target: HilTarget):
    """The simulator process of this target (it takes stdin control lines), else skip."""
    simulator = hil_target.simulator
    if simulator is None or not hasattr(simulator, "send"):
        pytest.skip("needs the FCI simulator process (fault injection)")
    return simulator


def simulator_stats(hil_target: HilTarget) -> dict | None:
    simulator = hil_target.simulator
    if simulator is None or not hasattr(simulator, "send"):
        return None
    return simulator.stats()


@pytest.fixture
def faulty(hil_target: HilTarget) -> Iterator:
    """A dedicated simulated robot with simulator options (``stall_after="0.5"``, as ``sim_stall_after=0.5``)."""
    fci_simulator(hil_target)
    with hil_target.dedicated_simulators() as start:
        yield start


def test_cartesian_path_is_tracked_with_zero_reflexes(robot, hil_target: HilTarget) -> None:
    before = simulator_stats(hil_target)
    arm = CartesianBackend(robot.backend, robot.model)
    start_q = robot.backend.commanded
    target = arm.pose.copy()
    target[:3, 3] += [0.04, -0.03, -0.04]
    result = arm.move_linear(target, duration=1.5)
    assert result.completed
    info = result.info
    print(f"path: max position error {info['max_position_error'] * 1e3:.3f} mm, end {info['final_position_error'] * 1e6:.1f} um,"
          f" success rate {robot.backend.read().info.get('success_rate')}")
    assert info["max_position_error"] < PATH_TOLERANCE
    assert info["final_position_error"] < END_TOLERANCE
    # every setpoint inside the limits (our guard refuses anything else; check the record too), its
    # rates taken at the robot's cycles: where the robot filled a lost cycle, the record has none
    limits = robot.model.limits
    table = np.vstack([start_q, start_q, start_q, result.commanded])
    times = np.concatenate([result.times[0] - np.array([3e-3, 2e-3, 1e-3]), result.times])
    for order, bound in ((1, limits.velocity), (2, limits.acceleration), (3, limits.jerk)):
        table = np.diff(table, axis=0) / (times[order:] - times[:-order])[:, None]  # divided differences
        assert (np.abs(table) * math.factorial(order) <= bound * (1 + 1e-6)).all()
    assert robot.state.mode is not RobotMode.FAULT
    after = simulator_stats(hil_target)
    if after is not None:
        assert after["robot_reflexes"] == before["robot_reflexes"]


def test_jump_is_refused_before_the_wire(robot, hil_target: HilTarget) -> None:
    before = simulator_stats(hil_target)
    sent = robot.backend.counters["commands_sent"]
    jump = robot.backend.commanded + np.radians([0, 0, 0, 0, 0, 0, 3.0])
    with pytest.raises(LimitViolation) as refused:
        robot.backend.cycle(jump)
    assert refused.value.joint == 6
    assert robot.backend.counters["commands_sent"] == sent
    robot.backend.cycle()
    after = simulator_stats(hil_target)
    if after is not None:
        assert after["robot_reflexes"] == before["robot_reflexes"]


def test_a_joint_impedance_holds_the_arm_and_hands_it_back_at_rest(robot, hil_target: HilTarget) -> None:
    """Half a second in torque control, holding where the arm is (libfranka's example gains,
    critically damped): it stays put, every torque within Franka's limits, the robot refuses none
    (a torque past its rate would be a reflex), and its own hold takes the arm back at rest."""
    from robohal.motion.reactions import ELAPSED
    from robohal.motion.torque import JointImpedance

    before = simulator_stats(hil_target)
    start = robot.state.q
    result = robot.run(JointImpedance(), until=ELAPSED > 0.5)
    assert result.reaction and result.torques is not None
    assert np.abs(result.measured - start).max() < 5e-3  # springs against the joints' friction: a few mrad
    assert (np.abs(result.torques) <= robot.backend.torque_limits.torque).all()
    assert np.abs(robot.state.dq).max() < 0.02 and robot.state.mode is not RobotMode.FAULT
    after = simulator_stats(hil_target)
    if after is not None:
        assert after["robot_reflexes"] == before["robot_reflexes"]


BAD_STREAM = """
import json, sys, importlib
lib = importlib.import_module(sys.argv[2])
robot = lib.Robot(sys.argv[1], lib.RealtimeConfig.kIgnore)
control = robot.start_joint_position_control(lib.ControllerMode.JointImpedance)
state, _ = control.readOnce()
q = list(state.q_d)  # where the robot holds: the start it accepts
out = {}
try:
    for i in range(50):
        if i == 10:
            q[0] += 0.02  # 20 rad/s for one cycle: what our guard would refuse
        control.writeOnce(lib.JointPositions(q))
        state, _ = control.readOnce()
except Exception as exc:
    out["error"] = [type(exc).__name__, str(exc)]
del control
print(json.dumps(out))
"""


def test_bad_raw_stream_raises_the_right_reflex_and_recovery_works(robot, hil_target: HilTarget) -> None:
    """A raw client (bypassing robohal's guard) sends a jump: the robot raises the
    velocity reflex. Then robohal meets a reflex, reports its name and recovers."""
    simulator = fci_simulator(hil_target)
    robot.close()  # the robot serves one client at a time
    done = subprocess.run([sys.executable, "-c", BAD_STREAM, hil_target.uri.host, "pylibfranka"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    kind, message = json.loads(done.stdout.strip().splitlines()[-1])["error"]
    assert kind == "ControlException" and "joint_motion_generator_velocity_limits_violation" in message
    with hil_target.connect() as again:  # connecting while in Reflex: robohal sees the fault
        assert again.backend.read().mode is RobotMode.FAULT or again.backend._read_now().mode is RobotMode.FAULT
        state = again.recover()
        assert state.mode is RobotMode.IDLE
        again.run(Hold(1.0), wait=False)
        time.sleep(0.2)
        simulator.send("REFLEX cartesian_reflex")
        with pytest.raises(HardwareFault) as fault:
            again.wait(10.0)
        assert fault.value.names == ("cartesian_reflex",)
        assert again.recover().mode is RobotMode.IDLE
        assert again.run(Hold(0.05)).completed


def test_udp_stall_becomes_connection_lost_within_about_a_second(faulty) -> None:
    target = faulty(stall_after="0.5")
    with target.connect() as robot:
        started = None
        with pytest.raises(ConnectionLost):
            deadline = time.monotonic() + 10.0
            while time.monotonic() < deadline:
                state = robot.backend.read()
                if started is None and state.time >= 0.45:
                    started = time.monotonic()
                robot.backend.cycle()
        stalled_at = target.simulator is not None
        elapsed = time.monotonic() - (started or time.monotonic())
        print(f"ConnectionLost {elapsed:.2f} s after the stall")
        assert stalled_at and elapsed < 3.0
        with pytest.raises(ConnectionLost):
            robot.backend.read()


def test_busy_user_thread_does_not_break_the_1khz_loop(robot, hil_target: HilTarget) -> None:
    before = simulator_stats(hil_target)
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            sum(i * i for i in range(5000))  # pure Python: holds the GIL

    threads = [threading.Thread(target=busy, daemon=True) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        target = robot.backend.commanded + np.radians([8, -8, 8, 8, 8, 8, 8])
        result = robot.backend.run(PointToPoint(target, speed=0.4))
    finally:
        stop.set()
        for thread in threads:
            thread.join(10.0)
    assert result.completed
    steps = np.diff(result.times)
    figures = robot.backend.read().info
    print(f"busy threads: {result.cycles} cycles, median step {np.median(steps) * 1e3:.2f} ms,"
          f" late cycles {figures.get('late_cycles')}, success rate {figures.get('success_rate')}")
    assert np.median(steps) == pytest.approx(0.001, abs=1e-4)
    after = simulator_stats(hil_target)
    if after is not None:
        assert after["robot_reflexes"] == before["robot_reflexes"]


def test_move_until_contact_then_retract_in_the_control_loop(faulty) -> None:
    """The reaction runs in the 1 kHz loop through the real pylibfranka: the robot's own estimate
    of the external force (O_F_ext_hat_K) meets 5 N on a simulated plane, far below the collision
    threshold, and the retract takes over without a stop."""
    from robohal.motion.reactions import Reaction, force

    plane = 0.45  # m, base z: about 14 cm below the flange at the ready pose
    target = faulty(contact=f"{plane},3000")
    with target.connect() as robot:
        start = robot.backend.commanded.copy()
        down = robot.model.forward(start)
        down[2, 3] = plane - 0.10
        result = robot.move_linear(down, speed=0.1, until=Reaction(force("z") > 5.0, then=PointToPoint(start, 0.5)))
        assert result.completed and result.reaction == "force z (N) > 5"
        assert np.allclose(result.commanded[-1], start, atol=1e-6), "retracted to where it started"
        deepest = min(robot.model.forward(q)[2, 3] for q in result.commanded)
        print(f"contact: deepest commanded flange {1000 * (plane - deepest):.2f} mm into the plane")
        assert plane - 0.01 < deepest < plane
        stats = target.simulator.stats()
        assert stats["robot_reflexes"] == 0, stats


def test_the_hand_grasps_and_releases_while_the_arm_moves(robot, hil_target: HilTarget) -> None:
    """Through the real pylibfranka.Gripper (its own processes): the arm's move and its 1 kHz loop
    go on while the fingers close; the grasp holds, stop() releases the force and open() lets go.
    On a real robot name the hand (``gripper=1``) and keep the fingers clear or hand them a part."""
    gripper = robot.gripper
    if gripper is None:
        pytest.skip("no Franka Hand on this target (gripper=1 names it)")
    before = simulator_stats(hil_target)
    assert gripper.open() is True
    opened = gripper.state
    closing = gripper.close(speed=0.05, force=20.0, wait=False)
    target = robot.backend.commanded + np.radians([3, -3, 3, 3, 3, 3, 3])
    result = robot.backend.run(PointToPoint(target, speed=0.4))
    assert result.completed and np.median(np.diff(result.times)) == pytest.approx(0.001, abs=1e-4)
    assert closing.result(timeout=30.0) is True
    held = gripper.state
    assert held.is_grasped and held.width < opened.width
    print(f"hand: open {opened.width * 1000:.1f} mm, held at {held.width * 1000:.1f} mm")
    assert gripper.stop() is True and not gripper.state.is_grasped
    assert gripper.open() is True and gripper.state.width == pytest.approx(opened.width, abs=0.002)
    after = simulator_stats(hil_target)
    if after is not None:
        assert after["robot_reflexes"] == before["robot_reflexes"]
        assert after["hand_commands"] >= before["hand_commands"] + 4


def test_the_hand_holds_a_part_of_the_width_it_expects(faulty) -> None:
    target = faulty(object="0.03")  # a 3 cm part between the fingers
    with target.connect() as robot:
        gripper = robot.gripper
        assert gripper.grasp(0.03, speed=0.1, force=20.0) is True and gripper.state.is_grasped
        assert gripper.open() is True
        assert gripper.grasp(0.05, speed=0.1, force=20.0) is False  # not the part it expected
        assert gripper.open() is True
