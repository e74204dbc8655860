"""abbrobotegm's EGM client (a sensor-side library nobody here wrote) against a robot on loopback,
run in a process of its own: its generated classes and abb-robot-client's both claim
``egm.proto`` in protobuf's default pool, so the two cannot be imported into one process.

    python abbrobotegm_peer.py receive --port P --count 250
    python abbrobotegm_peer.py follow --port P --seconds 1.5 --joints 10,-5,5,0,15,30   (offsets, deg)
    python abbrobotegm_peer.py follow-pose --port P --seconds 1.5 --pose x,y,z,w,qx,qy,qz   (mm, quaternion)

Prints one JSON line with what the library reported; exits 2 if the robot stays silent.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import sys
import time
from collections.abc import Iterator

SILENCE = 10.0  # s without a robot message: give up


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """The library binds every interface (''); tests stay on loopback, so its bind goes to 127.0.0.1."""
    bind = socket.socket.bind

    def on_loopback(sock: socket.socket, address) -> None:
        host, port = address
        bind(sock, ("127.0.0.1" if host in ("", "0.0.0.0") else host, port))

    socket.socket.bind = on_loopback  # type: ignore[method-assign]
    try:
        yield
    finally:
        socket.socket.bind = bind  # type: ignore[method-assign]


def first_state(client):
    deadline = time.monotonic() + SILENCE
    while time.monotonic() < deadline:
        ok, state = client.receive_from_robot(timeout=0.5)
        if ok:
            return state
    print(json.dumps({"error": "no robot message"}))
    sys.exit(2)


def receive(client, count: int) -> dict:
    """Every robot message, one per call, answering none."""
    states = [first_state(client)]
    deadline = time.monotonic() + SILENCE + count * 0.004 * 10
    while len(states) < count and time.monotonic() < deadline:
        ok, state = client.receive_from_robot(timeout=1.0)
        if ok:
            states.append(state)
    return {
        "seqnos": [s.header.seqno for s in states],
        "tm": [s.header.tm for s in states],
        "clock": [list(s.clock) if s.clock is not None else None for s in states],
        "timestamp": [list(s.timestamp) if s.timestamp is not None else None for s in states],
        "planned_timestamp": [list(s.planned_timestamp) if s.planned_timestamp is not None else None
                              for s in states],
        "motors_on": states[0].motors_on, "rapid_running": states[0].rapid_running,
    }


def follow(client, seconds: float, send) -> dict:
    """Answer every robot message with one target for ``seconds``; the last state."""
    state = first_state(client)
    start = [float(v) for v in state.joint_angles]
    answered = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ok, newer = client.receive_from_robot(timeout=1.0)
        if ok:
            state = newer
            answered += bool(send(start))
    cartesian = state.cartesian
    return {
        "start": start,
        "joints": [float(v) for v in state.joint_angles],
        "planned": [float(v) for v in state.joint_angles_planned],
        "position": [cartesian.pos.x, cartesian.pos.y, cartesian.pos.z],
        "orientation": [cartesian.orient.u0, cartesian.orient.u1, cartesian.orient.u2, cartesian.orient.u3],
        "answered": answered,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["receive", "follow", "follow-pose"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--count", type=int, default=250)
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--joints", default="0,0,0,0,0,0", help="target offsets from the first state, deg")
    parser.add_argument("--pose", default=None, help="target x,y,z (mm), w,qx,qy,qz")
    args = parser.parse_args()

    from ABBRobotEGM import EGM

    with loopback_only():
        client = EGM(port=args.port)
    with client:
        bound = client.socket.getsockname()[0]
        if args.scenario == "receive":
            result = receive(client, args.count)
        elif args.scenario == "follow":
            offsets = [float(v) for v in args.joints.split(",")]
            result = follow(client, args.seconds, lambda start: client.send_to_robot(
                [a + b for a, b in zip(start, offsets, strict=True)]))
        else:
            values = [float(v) for v in args.pose.split(",")]
            result = follow(client, args.seconds, lambda start: client.send_to_robot_cart(values[:3], values[3:]))
    print(json.dumps({**result, "bound": bound}))


if __name__ == "__main__":
    main()
