"""Without robot= the EGM backend answers one sender only: the one whose valid robot message
came first. Forged robot messages from a second loopback address (127.0.0.2), interleaved with
the simulated controller's, are never answered, never taken as state, and counted as foreign."""

from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pytest
import robohal
from robohal import ConnectionLost, HardwareFault
from robohal.control.backend import wait_until
from robohal.sim.process import free_port
from robohal.uri import parse_uri
from robohal_abb.backend import EgmBackend

#: the forger's joints: far from anything the tests command, so a forged state would show
FORGED_DEG = [40.0, 20.0, 30.0, 90.0, 60.0, 120.0]


class Forger:
    """Sends forged, well-formed robot messages from 127.0.0.2 in a thread, paced like a robot."""

    def __init__(self, robot_side, port: int) -> None:
        self.robot_side, self.port = robot_side, port
        self.sent = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def send(self, seqno: int) -> None:
        self.robot_side.send(self.port, self.robot_side.datagram(seqno, FORGED_DEG))
        self.sent += 1

    def start(self, count: int) -> None:
        """``count`` messages, every 4 ms: seqno 0 (a fake restart) and a far-ahead seqno in turn."""
        def run() -> None:
            for n in range(count):
                if self._stop.wait(0.004):
                    return
                self.send(0 if n % 2 == 0 else 10**6 + n)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def join(self) -> None:
        assert self._thread is not None
        self._thread.join(30.0)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30.0)


@pytest.fixture
def forger(bare_robot):
    made: list[Forger] = []

    def make(port: int) -> Forger:
        forger = Forger(bare_robot("127.0.0.2"), port)
        made.append(forger)
        return forger

    yield make
    for forger in made:
        forger.stop()


def forged(q) -> bool:
    return bool(np.allclose(q, np.radians(FORGED_DEG), atol=np.radians(1.0)))


def test_forged_robot_messages_from_another_address_are_foreign(egm_sim, forger) -> None:
    """50 forged messages (seqno 0 and far ahead, in turn) while a motion runs and while the
    backend holds: none answered, none taken as state, all counted foreign, no session restart."""
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri(robot=None)) as robot:
        backend = robot.backend
        fake = forger(sim.sensor_port)
        fake.start(50)
        result = robot.move_joints(backend.commanded + np.radians([5.0, 0, 0, 0, 0, 0]), speed=0.5)
        fake.join()
        assert wait_until(lambda: backend.counters["foreign_datagrams"] == 50, timeout=10.0)
        answered = backend.counters["hold_replies"]
        assert wait_until(lambda: backend.counters["hold_replies"] >= answered + 10, timeout=10.0)
        assert fake.robot_side.answers() == 0, "the forger got an answer"
        assert result.completed and not any(forged(q) for q in result.measured)
        state = robot.state
        assert not forged(state.q) and state.info["seqno"] < 10**6
        assert backend.counters["sessions_restarted"] == 0 and state.info["session"] == 1
        assert state.info["seqno_gaps"] == 0 and backend.counters["bad_missing_field"] == 0
    assert sim.stats()["counters"]["sensor_messages"] > 100, "the controller itself was answered"


def test_forged_messages_while_connecting_do_not_connect(egm_sim, forger) -> None:
    """The controller's first message locks the backend onto it, though it does not follow
    targets yet (motors off): forged messages that do follow targets arrive meanwhile, and
    connect() still reports the controller's fault instead of connecting to the forger.
    (The forger starts once the lock is taken: whoever is first is locked onto, by design.)"""
    sim = egm_sim("--comm-timeout", "0", "--motors-off-after", "0")
    backend = EgmBackend(parse_uri(sim.connect_uri(robot=None, connect_timeout="1.5")), robohal.get_model("abb.irb1410"))
    outcome: list[BaseException] = []

    def connecting() -> None:
        try:
            backend.connect()
        except BaseException as exc:
            outcome.append(exc)

    opener = threading.Thread(target=connecting)
    opener.start()
    try:
        assert wait_until(lambda: backend.counters["robot_messages"] >= 1, timeout=10.0), "no controller message"
        fake = forger(sim.sensor_port)
        fake.start(10_000)  # until connect() gives up
        opener.join(30.0)
        fake.stop()
    finally:
        opener.join(30.0)
        backend.close()
    assert outcome and isinstance(outcome[0], HardwareFault), outcome
    assert "motors_off" in outcome[0].names
    # (the last few may reach a socket already closed: at least one must have been heard)
    assert backend.counters["foreign_datagrams"] > 0 and backend.counters["robot_relocked"] == 0
    assert fake.robot_side.answers() == 0


def test_a_controller_restart_is_still_a_new_session_among_forged_ones(egm_sim, forger) -> None:
    """The lock holds across the controller's own restart (the same address, seqno 0): forged
    seqno-0 messages before, during and after the restart gap change nothing; the restart does."""
    sim = egm_sim("--comm-timeout", "0")
    with robohal.connect(sim.connect_uri(robot=None)) as robot:
        backend = robot.backend
        fake = forger(sim.sensor_port)
        fake.start(60)
        assert wait_until(lambda: backend.counters["foreign_datagrams"] >= 10, timeout=10.0)
        sim.send("RESTART 0 5 10 0 15 0")
        sim.wait_line("EVENT restart")
        assert wait_until(lambda: backend.counters["sessions_restarted"] == 1, timeout=10.0)
        fake.join()
        assert wait_until(lambda: backend.counters["foreign_datagrams"] == 60, timeout=10.0)
        assert backend.counters["sessions_restarted"] == 1
        state = robot.state
        assert state.info["session"] == 2 and not forged(state.q)
        where = np.radians([0, 5, 10, 0, 15, 0])
        assert np.allclose(backend.commanded, where, atol=1e-9), "holds the controller's measured position"
        assert robot.move_joints(where + np.radians([3.0, 0, 0, 0, 0, 0]), speed=0.5).completed
        assert fake.robot_side.answers() == 0


def test_a_new_sender_is_heard_only_after_the_robot_was_lost(egm_sim, bare_robot, caplog) -> None:
    """While the locked controller is merely quiet, another sender stays foreign. Once it has
    been silent for longer than timeout= (the link is reported lost), the next valid robot
    message locks anew (a controller that came back from another port) and starts a session."""
    sim = egm_sim("--comm-timeout", "0")
    other = bare_robot("127.0.0.2")
    with caplog.at_level(logging.INFO, logger="robohal"), \
            robohal.connect(sim.connect_uri(robot=None, timeout="0.5")) as robot:
        backend = robot.backend
        sim.send("STALL")
        sim.wait_line("EVENT stall")
        other.send(sim.sensor_port, other.datagram(0, FORGED_DEG))
        assert wait_until(lambda: backend.counters["foreign_datagrams"] == 1, timeout=5.0)
        with pytest.raises(ConnectionLost, match="silent"):
            for _ in range(10_000):
                backend.cycle()
        moved = [10.0, 0, 0, 0, 0, 0]
        answers = 0
        for seqno in range(2500):  # streams like a robot (every 4 ms) until it is answered, 10 s at most
            other.send(sim.sensor_port, other.datagram(seqno, moved))
            answers += other.answers()
            if answers >= 3:
                break
            time.sleep(0.004)
        assert answers >= 3, "the new robot is answered"
        assert backend.counters["robot_relocked"] == 1
        state = robot.state
        assert state.info["session"] == 2 and np.allclose(state.q, np.radians(moved))
        assert np.allclose(backend.commanded, state.q), "holds the new sender's measured position"
        sim.send("RESUME")  # the old controller's messages are foreign now
        foreign = backend.counters["foreign_datagrams"]
        assert wait_until(lambda: backend.counters["foreign_datagrams"] > foreign + 5, timeout=5.0)
    relocked = [r for r in caplog.records if "silent for more than" in r.getMessage() and "now answering" in r.getMessage()]
    assert len(relocked) == 1 and f"127.0.0.2:{other.address[1]}" in relocked[0].getMessage()


def test_the_lock_is_logged_with_the_locked_address(egm_sim, caplog, monkeypatch) -> None:
    """On loopback the lock is news (INFO); bound where other computers can send, it is a
    warning that names the locked address and says how to name the controller."""
    controller = f"127.0.0.1:{free_port()}"  # the controller's own address
    sim = egm_sim("--comm-timeout", "0", "--bind", controller)
    with caplog.at_level(logging.INFO, logger="robohal"):
        with robohal.connect(sim.connect_uri(robot=None)):
            pass
        backend = EgmBackend(parse_uri(sim.connect_uri(robot=None)), robohal.get_model("abb.irb1410"))
        # what binding 0.0.0.0 or a LAN address decides (tests stay on loopback)
        monkeypatch.setattr("robohal_abb.backend._loopback", lambda host: False)
        with backend:
            pass
    locks = [r for r in caplog.records if "the sender of the first robot message" in r.getMessage()]
    assert [r.levelno for r in locks] == [logging.INFO, logging.WARNING]
    assert all(controller in r.getMessage() for r in locks)
    assert "robot=IP" in locks[1].getMessage()


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.0.0.5", True), ("localhost", True),
                                            ("0.0.0.0", False), ("192.168.125.5", False)])
def test_which_bind_addresses_count_as_exposed(host: str, loopback: bool) -> None:
    from robohal_abb.backend import _loopback

    assert _loopback(host) is loopback  # (judged at connect: building a backend looks nothing up)


def test_with_robot_ip_every_port_of_that_address_is_heard(egm_sim, bare_robot) -> None:
    """robot=IP names the controller's address: its messages count from any port (the lock by
    port is for the unnamed case only), other addresses stay foreign."""
    sim = egm_sim("--comm-timeout", "0")
    same_host, elsewhere = bare_robot("127.0.0.1"), bare_robot("127.0.0.2")
    with robohal.connect(sim.connect_uri(robot="127.0.0.1")) as robot:
        backend = robot.backend
        elsewhere.send(sim.sensor_port, elsewhere.datagram(0, FORGED_DEG))
        assert wait_until(lambda: backend.counters["foreign_datagrams"] == 1, timeout=5.0)
        same_host.send(sim.sensor_port, same_host.datagram(0, [1.0, 0, 0, 0, 0, 0], at=time.time() + 0.05))
        assert wait_until(lambda: backend.counters["sessions_restarted"] == 1, timeout=5.0)
        assert backend.counters["robot_relocked"] == 0
