"""Raw ``pylibfranka.Gripper`` calls against the FCI simulator's hand, in their own process
(pylibfranka holds the GIL while a gripper command blocks); prints one JSON line: each step's
outcome, ``["ok", value]`` or ``[exception type, its text]``.

    python raw_hand_client.py HOST
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time

import pylibfranka

# a second connection that stops the hand 0.3 s after it says it is connected
STOPPER = """
import json, sys, time, pylibfranka
gripper = pylibfranka.Gripper(sys.argv[1])
print("connected", flush=True)
time.sleep(0.3)
print(json.dumps(["ok", gripper.stop()]))
"""


def outcome(call) -> list:
    try:
        return ["ok", call()]
    except Exception as exc:
        return [type(exc).__name__, str(exc)]


def state(gripper) -> dict:
    s = gripper.read_once()
    return {"width": s.width, "max_width": s.max_width, "is_grasped": s.is_grasped, "time": s.time.to_sec(),
            "temperature": s.temperature}


def main(host: str) -> dict:
    gripper = pylibfranka.Gripper(host)
    out: dict = {"version": gripper.server_version(), "first": state(gripper)}
    out["second"] = state(gripper)
    out["homing"] = outcome(gripper.homing)
    out["after_homing"] = state(gripper)
    out["move"] = outcome(lambda: gripper.move(0.05, 0.1))
    out["after_move"] = state(gripper)
    out["grasp_held"] = outcome(lambda: gripper.grasp(0.03, 0.1, 20.0, 0.005, 0.005))
    out["after_grasp_held"] = state(gripper)
    out["stop_releases"] = outcome(gripper.stop)
    out["after_stop"] = state(gripper)
    out["open"] = outcome(lambda: gripper.move(0.08, 0.1))
    out["grasp_wrong_width"] = outcome(lambda: gripper.grasp(0.05, 0.1, 20.0, 0.005, 0.005))
    out["after_grasp_wrong_width"] = state(gripper)
    out["open_again"] = outcome(lambda: gripper.move(0.08, 0.1))
    out["grasp_by_epsilon"] = outcome(lambda: gripper.grasp(0.05, 0.1, 20.0, 0.025, 0.005))
    out["move_blocked"] = outcome(lambda: gripper.move(0.01, 0.1))
    out["after_move_blocked"] = state(gripper)
    refused = {
        "width_above_max": lambda: gripper.move(0.09, 0.05),
        "width_negative": lambda: gripper.move(-0.01, 0.05),
        "width_nan": lambda: gripper.move(math.nan, 0.05),
        "speed_zero": lambda: gripper.move(0.04, 0.0),
        "speed_above_max": lambda: gripper.move(0.04, 0.5),
        "force_above_max": lambda: gripper.grasp(0.03, 0.05, 500.0),
        "epsilon_negative": lambda: gripper.grasp(0.03, 0.05, 20.0, -0.001, 0.005),
    }
    out["refused"] = {name: outcome(call) for name, call in refused.items()}
    # a slow move, and a stop from a second connection: the move is answered ABORTED
    out["open_for_stop"] = outcome(lambda: gripper.move(0.08, 0.1))
    # pylibfranka's blocking move holds this process's GIL: the stop comes from another process
    stopper = subprocess.Popen([sys.executable, "-c", STOPPER, host], stdout=subprocess.PIPE, text=True)
    assert stopper.stdout.readline().strip() == "connected"
    started = time.monotonic()
    out["move_stopped"] = outcome(lambda: gripper.move(0.02, 0.05))  # 1.2 s unless stopped
    out["move_stopped_after"] = time.monotonic() - started
    out["stop_from_other"] = json.loads(stopper.communicate(timeout=30)[0])
    out["after_stopped"] = state(gripper)
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
