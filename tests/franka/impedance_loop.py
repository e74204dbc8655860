"""A joint impedance controller over pylibfranka's torque interface, as libfranka's
joint_impedance_example.py writes it (a spring-damper toward a minimum-jerk target, plus the
Coriolis torque of the robot's Model; the robot compensates gravity), run against an FCI
simulator in its own process. Prints one JSON line: the joint trajectory of the measured phase on
the robot's clock, and what the robot reported.

    python impedance_loop.py SCENARIO HOST PARAMS_JSON

Scenarios: ``free`` (settle stiffly at ``start``, then move to ``goal`` with the example's gains),
``press`` (settle at ``above``, then press toward ``below``, through a plane, with the gains of
libfranka's C++ joint_impedance_control example), ``step`` (a torque step on joint 1 from rest).
PARAMS_JSON may give ``load`` ([mass, cx, cy, cz, Ixx, Iyy, Izz]) for setLoad before the motion.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pylibfranka as franka

# libfranka's pylibfranka/examples/joint_impedance_example.py: stiffness 50, damping 2 sqrt(50)
EXAMPLE_STIFFNESS = np.full(7, 50.0)
EXAMPLE_DAMPING = 2.0 * np.sqrt(EXAMPLE_STIFFNESS)
# libfranka's examples/joint_impedance_control.cpp
STIFF_STIFFNESS = np.array([600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0])
STIFF_DAMPING = np.array([50.0, 50.0, 50.0, 50.0, 30.0, 25.0, 15.0])
THRESHOLDS = [100.0] * 7, [100.0] * 7, [100.0] * 6, [100.0] * 6  # as the example sets them
# Nm per cycle: libfranka's rate limiter (rate_limiting.h kMaxTorqueRate, 1000 - kLimitEps Nm/s), which
# its C++ examples have robot.control apply; pylibfranka's loop has none, so it is applied here
MAX_TORQUE_STEP = (1000.0 - 1e-3) * 0.001
SAMPLE = 5  # ms between recorded samples


def minimum_jerk(s: float) -> float:
    s = min(max(s, 0.0), 1.0)
    return 10 * s**3 - 15 * s**4 + 6 * s**5


class Loop:
    """One torque-control session: ``run`` segments of it, each on the robot's clock."""

    def __init__(self, robot) -> None:
        self.control = robot.start_torque_control()
        self.model = robot.load_model()
        self.clock = 0  # ms on the robot's clock since the session started
        self.state, _ = self.control.readOnce()
        self.torque = np.zeros(7)  # the last command (the robot expects the first from 0)

    def run(self, begin, end, duration: float, hold: float, stiffness, damping, record: list | None = None):
        begin, end = np.asarray(begin, dtype=float), np.asarray(end, dtype=float)
        start = self.clock
        while True:
            t = (self.clock - start) * 0.001
            wanted = begin + minimum_jerk(t / duration) * (end - begin)
            q, dq = np.array(self.state.q), np.array(self.state.dq)
            torque = -stiffness * (q - wanted) - damping * dq + np.array(self.model.coriolis(self.state))
            torque = np.clip(torque, self.torque - MAX_TORQUE_STEP, self.torque + MAX_TORQUE_STEP)
            self.torque = torque
            self.control.writeOnce(franka.Torques(torque.tolist()))
            if record is not None and (self.clock - start) % SAMPLE == 0:
                record.append([self.clock - start, *q.tolist(), *self.state.O_F_ext_hat_K[:3]])
            self.state, period = self.control.readOnce()  # every command answers one state
            self.clock += max(1, round(period.to_sec() * 1000))
            if t >= duration + hold:
                return

    def finish(self) -> None:
        done = franka.Torques(self.torque.tolist())  # the last torque: ending is no step
        done.motion_finished = True
        self.control.writeOnce(done)


def step(robot, out: dict) -> None:
    """From rest, zero torque for 50 cycles, then 10 Nm on joint 1 at once: 10 000 Nm/s."""
    control = robot.start_torque_control()
    control.readOnce()
    for _ in range(50):
        control.writeOnce(franka.Torques([0.0] * 7))
        control.readOnce()
    control.writeOnce(franka.Torques([10.0, 0, 0, 0, 0, 0, 0]))
    for _ in range(20):  # the reflex (if any) shows in the next states
        control.readOnce()
        control.writeOnce(franka.Torques([0.0] * 7))
    done = franka.Torques([0.0] * 7)
    done.motion_finished = True
    control.writeOnce(done)


def main() -> None:
    scenario, host, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    out: dict = {"scenario": scenario, "error": None}
    robot = franka.Robot(host, franka.RealtimeConfig.kIgnore)
    robot.set_collision_behavior(*THRESHOLDS)
    if params.get("load"):
        mass, cx, cy, cz, ixx, iyy, izz = params["load"]
        robot.set_load(mass, [cx, cy, cz], [ixx, 0, 0, 0, iyy, 0, 0, 0, izz])
    try:
        if scenario == "step":
            step(robot, out)
        else:
            loop = Loop(robot)
            first, second = ("start", "goal") if scenario == "free" else ("above", "below")
            out["settled_from"] = list(loop.state.q)
            loop.run(loop.state.q, params[first], 3.0, 1.0, STIFF_STIFFNESS, STIFF_DAMPING)
            gains = (EXAMPLE_STIFFNESS, EXAMPLE_DAMPING) if scenario == "free" else (STIFF_STIFFNESS, STIFF_DAMPING)
            samples: list = []
            loop.run(params[first], params[second], params.get("duration", 3.0), params.get("hold", 1.0), *gains,
                     record=samples)
            loop.finish()
            out["samples"] = samples
    except Exception as exc:  # a refused command or a reflex: the test judges it
        out["error"] = [type(exc).__name__, str(exc)]
    state = robot.read_once()
    out["last_motion_errors"] = [n for n in dir(type(state.last_motion_errors))
                                 if not n.startswith("_") and getattr(state.last_motion_errors, n) is True]
    out["robot_mode"] = str(state.robot_mode).rsplit(".", 1)[-1]
    out["q_end"] = list(state.q)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
