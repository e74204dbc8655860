"""robohal's Desk client against the simulated Desk over HTTPS, both dialects: bring-up and giving
back, control held by others, forced takes, wrong credentials, stale tokens, self-tests, safety
errors, the pinned certificate, and no credential in any repr, message or log."""

from __future__ import annotations

import logging
import threading

import pytest
from robohal.errors import ConnectFailed, RobohalError
from robohal.net.tls import CertificateChanged
from robohal_franka.desk import ControlHeld, DeskRefused, bring_up, give_back
from robohal_franka.desk.access import desk_tls
from robohal_franka.simulated_desk import SELF_TEST_FAILURE

DIALECTS = ("v1", "web")
PASSWORD = "pw-Xq81!secret"  # distinctive: searched for in every text the client makes


@pytest.fixture(params=DIALECTS)
def dialect(request) -> str:
    return request.param


@pytest.fixture
def locked(start_simulator, dialect):
    """A simulator that starts as a robot does (joints locked, FCI off), with its Desk."""
    return start_simulator("--desk", dialect, "--locked", "1", "--desk-password", PASSWORD, "--selftest-time", "0.3")


def in_thread(function):
    """Run ``function`` in a thread; ``join()`` returns its result or raises its error."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = function()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join(timeout: float = 60.0):
        thread.join(timeout)
        assert not thread.is_alive(), "still waiting"
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    return join


def test_bring_up_and_give_back(locked, tmp_path, dialect, caplog):
    caplog.set_level(logging.DEBUG)
    with locked.desk(tmp_path, PASSWORD) as desk:
        assert desk.dialect.name == dialect
        before = desk.status()
        assert before.holder is None and before.joints == "Locked" and not before.fci_active and not before.ready
        done = bring_up(desk)
        assert (done.took_control, done.unlocked, done.activated_fci) == (True, True, True)
        assert desk.status().ready and locked.desk_state()["arm_ready"]
        assert bring_up(desk) == type(done)()  # ready already: nothing more to do, nothing to give back
        texts = [repr(desk), repr(desk.credentials), str(desk.credentials), repr(desk.token), repr(desk.dialect),
                 repr(desk.transport), *desk.status().lines()]
        give_back(desk, done)
        after = desk.status()
        assert after.holder is None and after.joints == "Locked" and not after.fci_active
    assert not any(PASSWORD in text for text in [*texts, caplog.text])


def test_control_held_by_someone_else_is_reported_and_not_taken(locked, tmp_path):
    locked.send("DESK_HOLDER Desk-page")
    locked.wait_desk(lambda state: state["holder"] == "Desk-page")
    with locked.desk(tmp_path, PASSWORD) as desk:
        with pytest.raises(ControlHeld, match="Desk-page holds control") as held:
            desk.take_control()
        assert held.value.owner == "Desk-page"
        with pytest.raises(ControlHeld):
            bring_up(desk)
    state = locked.desk_state()
    assert state["holder"] == "Desk-page" and state["waiting"] == [] and not state["unlocked"]


def test_v1_force_queues_until_the_holder_releases(start_simulator, tmp_path):
    simulator = start_simulator("--desk", "v1", "--locked", "1")
    simulator.send("DESK_HOLDER Desk-page")
    with simulator.desk(tmp_path) as desk:
        simulator.wait_desk(lambda state: state["holder"] == "Desk-page")
        join = in_thread(lambda: desk.take_control(force=True, timeout=30.0))
        simulator.wait_desk(lambda state: state["waiting"] == [desk.owner])  # queued: the holder is asked
        simulator.send("DESK_RELEASE")
        token = join()
        assert desk.has_control and simulator.desk_state()["holder"] == desk.owner == token.owner
        # a second client's take waits in the queue and times out with 424, changing nothing
        with simulator.desk(tmp_path / "second", owner="second") as second:
            with pytest.raises(ControlHeld, match=r"kept control for 0\.3 s") as held:
                second.take_control(force=True, timeout=0.3)
            assert held.value.owner == desk.owner
        state = simulator.desk_state()
        assert state["holder"] == desk.owner and state["waiting"] == []


def test_web_force_waits_for_the_pilot_circle_button(start_simulator, tmp_path):
    simulator = start_simulator("--desk", "web", "--locked", "1", "--force-timeout", "30")
    simulator.send("DESK_HOLDER Desk-page")
    said: list[str] = []
    with simulator.desk(tmp_path) as desk:
        desk.say = said.append
        simulator.wait_desk(lambda state: state["holder"] == "Desk-page")
        join = in_thread(lambda: desk.take_control(force=True))
        simulator.wait_desk(lambda state: state["waiting"] == [desk.owner])
        assert said and "circle button" in said[0] and "30 s" in said[0]
        simulator.send("PILOT circle")
        join()
        assert desk.has_control and simulator.desk_state()["holder"] == desk.owner


def test_web_force_without_the_button_gives_up_and_withdraws(start_simulator, tmp_path):
    simulator = start_simulator("--desk", "web", "--locked", "1", "--force-timeout", "0.5")
    simulator.send("DESK_HOLDER Desk-page")
    with simulator.desk(tmp_path) as desk:
        simulator.wait_desk(lambda state: state["holder"] == "Desk-page")
        desk.say = lambda text: None
        with pytest.raises(ControlHeld, match=r"circle button within 0\.5 s"):
            desk.take_control(force=True)
    state = simulator.desk_state()
    assert state["holder"] == "Desk-page" and state["waiting"] == []


def test_wrong_credentials_are_refused_and_change_nothing(locked, tmp_path, caplog):
    wrong = "not-" + PASSWORD
    with pytest.raises(ConnectFailed, match="refused the credentials") as refused:
        locked.desk(tmp_path, wrong).open()
    assert wrong not in str(refused.value) and wrong not in caplog.text
    state = locked.desk_state()
    assert state["holder"] is None and not state["unlocked"] and not state["fci"]


def test_a_stale_token_is_refused(locked, tmp_path):
    with locked.desk(tmp_path, PASSWORD) as desk:
        stale = desk.take_control()
        locked.send("DESK_HOLDER Desk-page")  # someone took control since
        locked.wait_desk(lambda state: state["holder"] == "Desk-page")
        with pytest.raises(DeskRefused) as refused:
            desk.unlock()
        assert refused.value.status == 403
        assert not locked.desk_state()["unlocked"]
        # the next session sees the stored token is no longer active and does not use it
    with locked.desk(tmp_path, PASSWORD) as again:
        assert again.token is None and stale.id != locked.desk_state()["holder"]


def test_a_token_is_kept_for_the_next_session(locked, tmp_path):
    with locked.desk(tmp_path, PASSWORD) as desk:
        token = desk.take_control()
    [stored] = (tmp_path / "tokens").glob("*.json")
    assert stored.stat().st_mode & 0o777 == 0o600 and token.secret in stored.read_text()
    stored.chmod(0o644)  # readable by others: not trusted
    with locked.desk(tmp_path, PASSWORD) as careful:
        assert careful.token is None
    stored.chmod(0o600)
    with locked.desk(tmp_path, PASSWORD) as later:
        assert later.token == token and later.has_control
        later.unlock()
        later.release_control()
    assert locked.desk_state()["holder"] is None and not list((tmp_path / "tokens").glob("*.json"))


def test_self_test_failure_is_a_safety_error_to_confirm(locked, tmp_path):
    with locked.desk(tmp_path, PASSWORD) as desk:
        bring_up(desk)
        assert desk.self_test().self_test == "OK"
        locked.send("SELFTEST_FAIL")
        locked.wait_desk(lambda state: True)  # (the line has been handled once the state answers)
        with pytest.raises(RobohalError, match="Failed"):
            desk.self_test()
        status = desk.status()
        assert SELF_TEST_FAILURE in status.safety_errors and status.joints == "Locked" and not status.ready
        with pytest.raises(DeskRefused, match="safety error"):
            desk.unlock()
        assert desk.recover() == [SELF_TEST_FAILURE]
        assert desk.status().safety_errors == ()
        desk.unlock()
        assert desk.status().ready


def test_a_safety_error_needs_recovery_confirmation(locked, tmp_path):
    with locked.desk(tmp_path, PASSWORD) as desk:
        bring_up(desk)
        locked.send("SAFETY_ERROR SafetyRuleViolation")
        locked.wait_desk(lambda state: state["safety_errors"] == ["SafetyRuleViolation"])
        assert not desk.status().ready and not locked.desk_state()["arm_ready"]
        assert desk.recover() == ["SafetyRuleViolation"]
        assert desk.recover() == []  # nothing left
        desk.unlock()
        assert desk.status().ready


def test_a_changed_certificate_is_refused_before_anything_is_sent(locked, tmp_path):
    from robohal_franka.desk import Credentials, DeskSession
    from robohal_franka.desk.tokens import TokenStore

    url, other = locked.uri.params["desk"], "00" * 32
    session = DeskSession(url, Credentials("franka", PASSWORD), tls=desk_tls(url, other), tokens=TokenStore(tmp_path))
    before = locked.desk_state()["requests"]
    with pytest.raises(CertificateChanged, match="named in its URI") as refused:
        session.open()
    assert PASSWORD not in str(refused.value)
    assert locked.desk_state()["requests"] == before  # not one request: the credentials never left


def test_unknown_paths_answer_as_the_robot_does(locked, dialect):
    import http.client
    import ssl

    host = locked.uri.params["desk"].removeprefix("https://")
    connection = http.client.HTTPSConnection(host, context=ssl._create_unverified_context(), timeout=10)
    connection.request("GET", "/desk/api/robot/open-brakes")
    reply = connection.getresponse()
    body = reply.read().decode()
    connection.close()
    if dialect == "v1":
        assert reply.status == 401  # the v1 API asks for credentials first
    else:
        assert reply.status == 404 and 'No handler accepted "/api/robot/open-brakes"' in body
