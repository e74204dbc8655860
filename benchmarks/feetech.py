"""SO-101 bus speed: the feetech backend's full control cycle (a sync write of six goals and a
sync read of registers 56..70 of six servos, decoded) on the simulated bus at 1 Mbps.

1. The cycle rate unpaced (``exchange_now()``, holding the goals as the SDK loop below does:
   both write the same bytes each cycle), against the wire's limit: the bytes of one cycle (both
   ways, 10 bits each at 1 Mbps) and the servos' return delays (2 us each at Return_Delay_Time
   0), nothing else. Goal: at least 0.8 of it.
2. The same cycle in a plain loop of the vendor's SDK (feetech-servo-sdk 1.0.0: GroupSyncWrite of
   Goal_Position, then GroupSyncRead of the same 15 bytes) on the same simulated bus, its return
   delays set to 0 too; after a failed read it drops what is left in the input, else the late
   answers pass for the next cycle's. The SDK waits by spinning on the port (a core busy); the
   backend sleeps through most of the wire's time and looks without sleeping only around the
   moment the last answer is due. Goal: the backend at least 1.0x it.
3. The CPU time each takes a cycle: the backend sleeps through most of the wire's time, the SDK
   spins.
4. The backend's bus transaction alone (the same write and sync read, undecoded): what the
   backend's own work each cycle (telemetry in SI units, the stall, voltage and temperature
   watch, the state) adds to the wire's time, which a plain loop does not do.
5. The backend's paced control cycle at its default rate, through ``backend.cycle()``.

    python benchmarks/feetech.py [--cycles 2000]

The three unpaced loops take turns in blocks of 100 cycles, each on its own simulated bus, so
that each meets the same machine load. Each cycle time is the median over the cycles, each CPU
time the mean; nothing is asserted (the figures are printed).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def backend_cycles(robot, count: int) -> list[float]:
    """One exchange each: the goals written, every servo read and decoded (no pacing)."""
    backend = robot.backend
    times = []
    for _ in range(count):
        began = time.perf_counter()
        backend.exchange_now()
        times.append(time.perf_counter() - began)
    return times


def bus_cycles(robot) -> Callable[[int], list[float]]:
    """The backend's transaction alone: the goals' sync write and the sync read, in one write."""
    from robohal_feetech import wire
    from robohal_feetech.backend import TELEMETRY_LENGTH, TELEMETRY_START
    from robohal_feetech.registers import REGISTERS

    backend = robot.backend
    ids = list(backend.arm.ids)
    goal = REGISTERS["Goal_Position"]
    before = wire.sync_write(goal.address, goal.size, {i: goal.encode(backend.readings[i].position) for i in ids})

    def run(count: int) -> list[float]:
        times = []
        for _ in range(count):
            began = time.perf_counter()
            backend.bus.sync_read(TELEMETRY_START, TELEMETRY_LENGTH, ids, before=before)
            times.append(time.perf_counter() - began)
        return times
    return run


@contextmanager
def sdk_loop(path: str, ids: list[int]) -> Iterator[Callable[[int], list[float]]]:
    """The vendor SDK's loop: sync write of Goal_Position, sync read of 56..70, values decoded."""
    import scservo_sdk as scs

    port = scs.PortHandler(path)
    handler = scs.PacketHandler(0)
    if not port.openPort() or not port.setBaudRate(1_000_000):
        raise RuntimeError(f"the SDK could not open {path}")
    failures = 0
    try:
        reader = scs.GroupSyncRead(port, handler, 56, 15)
        writer = scs.GroupSyncWrite(port, handler, 42, 2)
        for servo_id in ids:
            reader.addParam(servo_id)
        if reader.txRxPacket() != scs.COMM_SUCCESS:
            raise RuntimeError("the SDK's first sync read failed")
        goals = {i: reader.getData(i, 56, 2) for i in ids}
        for servo_id in ids:
            writer.addParam(servo_id, [scs.SCS_LOBYTE(goals[servo_id]), scs.SCS_HIBYTE(goals[servo_id])])

        def run(count: int) -> list[float]:
            nonlocal failures
            times = []
            for _ in range(count):
                began = time.perf_counter()
                writer.txPacket()
                if reader.txRxPacket() != scs.COMM_SUCCESS:
                    failures += 1
                    # a plain loop's one care: the late answers left in the input would be taken for
                    # the next cycle's (the SDK matches ids, not requests), and that cycle would seem
                    # faster than the wire
                    port.ser.reset_input_buffer()
                values = {i: (reader.getData(i, 56, 2), reader.getData(i, 60, 2), reader.getData(i, 69, 2))
                          for i in ids}
                times.append(time.perf_counter() - began)
            assert len(values) == len(ids)
            return times
        yield run
    finally:
        port.closePort()
        if failures:
            print(f"  (the SDK loop failed {failures} sync reads)")


def taking_turns(loops: dict[str, Callable[[int], list[float]]], cycles: int,
                 block: int = 100) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Each loop's median cycle, and its CPU time per cycle with its share of a core while it
    runs (this process's CPU, where every loop runs; both means), the loops taking turns in
    blocks (so each meets the same load)."""
    times: dict[str, list[float]] = {name: [] for name in loops}
    cpu = dict.fromkeys(loops, 0.0)
    for _ in range(max(1, cycles // block)):
        for name, run in loops.items():
            began = time.process_time()
            times[name] += run(block)
            cpu[name] += time.process_time() - began
    return ({name: statistics.median(found) for name, found in times.items()},
            {name: (cpu[name] / len(times[name]), cpu[name] / sum(times[name])) for name in loops})


def main(argv: list[str] | None = None) -> int:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--cycles", type=int, default=2000)
    args = options.parse_args(argv)

    import robohal
    from robohal_feetech.backend import exchange_bytes, wire_limit

    # the SDK on a bus of its own (the same simulator program), its return delays at 0 as the
    # backend sets them
    with robohal.connect("feetech://sim?arm=so101&poll=0") as robot, \
            robohal.connect("feetech://sim?arm=so101&poll=0") as theirs:
        backend = robot.backend
        ids = list(backend.arm.ids)
        limit = wire_limit(len(ids), backend.baud)
        print(f"SO-101, {len(ids)} STS3215 on the simulated bus at {backend.baud} baud:"
              f" {exchange_bytes(len(ids))} bytes a cycle, the wire's limit {limit:.0f} Hz")
        theirs.backend.close()  # the line is the SDK's now; the servos keep the backend's settings
        with sdk_loop(theirs.backend.device, ids) as sdk:
            found, cpu = taking_turns({"backend": lambda count: backend_cycles(robot, count),
                                       "transaction": bus_cycles(robot), "sdk": sdk}, args.cycles)
    ours, bare, sdk_time = found["backend"], found["transaction"], found["sdk"]
    print(f"backend, unpaced:   {ours * 1e3:.3f} ms a cycle = {1 / ours:.0f} Hz = {1 / ours / limit:.2f} of the"
          " wire's limit (goal >= 0.8)")
    print(f"its transaction:    {bare * 1e3:.3f} ms = {1 / bare / limit:.2f} of the wire's limit; the backend's"
          f" own work adds {(ours - bare) * 1e6:.0f} us a cycle")
    print(f"vendor SDK loop:    {sdk_time * 1e3:.3f} ms a cycle = {1 / sdk_time:.0f} Hz = {1 / sdk_time / limit:.2f} of"
          " the wire's limit")
    print(f"backend / SDK:      {sdk_time / ours:.3f}x the SDK loop's rate (goal >= 1.0);"
          f" its transaction alone {sdk_time / bare:.3f}x")
    (our_cpu, our_share), (sdk_cpu, sdk_share) = cpu["backend"], cpu["sdk"]
    print(f"CPU a cycle:        backend {our_cpu * 1e6:.0f} us ({our_share:.0%} of a core), SDK loop"
          f" {sdk_cpu * 1e6:.0f} us ({sdk_share:.0%}): {our_cpu / sdk_cpu:.2f}x")
    with robohal.connect("feetech://sim?arm=so101") as robot:
        backend = robot.backend
        steps, began = 500, time.perf_counter()
        for _ in range(steps):
            backend.cycle()
        held = steps / (time.perf_counter() - began)
        print(f"paced cycle():      {held:.0f} Hz held of the default {1 / backend.period:.0f} Hz"
              f" (retries {backend.counters['retries']}, missing {backend.counters['missing_status']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
