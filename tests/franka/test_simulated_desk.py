"""The simulated Desk's rules, stepped on a fake clock (no server, no processes)."""

from __future__ import annotations

import base64
import hashlib

import pytest
from robohal_franka.simulated_desk import PROGRAMMING, SELF_TEST_FAILURE, DeskRefusal, SimulatedDesk, encode_password


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def desk(clock) -> SimulatedDesk:
    return SimulatedDesk("franka", "secret", locked=True, clock=clock, token_force_timeout=5.0)


def test_a_locked_robot_starts_as_a_real_one(desk):
    assert not desk.unlocked and not desk.fci_active() and not desk.arm_ready() and desk.holder() is None
    assert SimulatedDesk("franka", "secret").arm_ready()  # franka://sim's default: ready to move


def test_the_web_login_password_is_franka_s_encoding():
    digest = hashlib.sha256(b"secret#franka@franka").digest()
    assert base64.decodebytes(encode_password("franka", "secret").encode()).decode() == ",".join(map(str, digest))


def test_credentials(desk):
    assert desk.basic_ok("franka", "secret")
    assert not desk.basic_ok("franka", "Secret") and not desk.basic_ok("other", "secret")
    cookie = desk.login("franka", encode_password("franka", "secret"))
    assert desk.session_user(cookie) == "franka"
    with pytest.raises(DeskRefusal) as refused:
        desk.login("franka", encode_password("franka", "wrong"))
    assert refused.value.status == 401


def test_control_is_granted_queued_and_handed_on_in_order(desk):
    first = desk.request_control("alice")
    second = desk.request_control("bob")
    third = desk.request_control("carol")
    assert desk.holds_control(first) and not desk.holds_control(second)
    assert [t.owner for t in desk.waiting] == ["bob", "carol"]
    desk.release_control(first.secret)
    assert desk.holds_control(second) and [t.owner for t in desk.waiting] == ["carol"]
    desk.withdraw(third)  # (a v1 take whose timeout passed)
    desk.release_control(second.secret)
    assert desk.holder() is None


def test_a_stale_or_missing_token_is_refused_and_changes_nothing(desk):
    first = desk.request_control("alice")
    desk.release_control(first.secret)
    desk.request_control("bob")
    for secret in (first.secret, None, "made-up"):
        with pytest.raises(DeskRefusal) as refused:
            desk.unlock(secret)
        assert refused.value.status == 403
    with pytest.raises(DeskRefusal):
        desk.activate_fci(first.secret)
    assert not desk.fci_active() and desk.busy_until == 0.0


def test_fci_ends_with_the_control_it_belongs_to(desk):
    token = desk.request_control("alice")
    desk.activate_fci(token.secret)
    assert desk.fci_active()
    desk.release_control(token.secret)
    assert not desk.fci_active()


def test_a_forced_request_waits_for_the_circle_button(desk, clock):
    holder = desk.request_control("alice")
    desk.activate_fci(holder.secret)
    events = []
    desk.on_pilot = events.append
    forced = desk.request_control("bob", force=True)
    desk.press("cross")  # not the confirmation
    assert desk.holds_control(holder)
    clock.now = 4.0
    desk.press("circle")
    assert desk.holds_control(forced) and not desk.fci_active()  # alice's FCI went with her control
    assert events == [{"cross": True}, {"cross": False}, {"circle": True}, {"circle": False}]


def test_a_forced_request_lapses_without_the_button(desk, clock):
    holder = desk.request_control("alice")
    desk.request_control("bob", force=True)
    clock.now = 5.1
    desk.press("circle")
    assert desk.holds_control(holder) and desk.waiting == []
    with pytest.raises(ValueError):
        desk.press("square")


def test_unlock_needs_control_and_no_safety_error(desk):
    token = desk.request_control("alice")
    desk.raise_safety_error("JointPositionError")
    with pytest.raises(DeskRefusal, match="safety error"):
        desk.unlock(token.secret)
    assert desk.recovery() == {"type": "SafetyError", "safetyErrors": ["JointPositionError"]}
    with pytest.raises(DeskRefusal):
        desk.confirm_recovery("SafetyError", ["OtherError"])  # confirms what is pending, or nothing
    desk.confirm_recovery("SafetyError", ["JointPositionError"])
    assert desk.recovery() is None
    desk.unlock(token.secret)
    desk.set_brakes(True)
    assert desk.arm_ready() and not desk.fci_active()  # the arm is free; FCI is another matter


def test_a_safety_error_shuts_the_brakes(desk):
    token = desk.request_control("alice")
    desk.unlock(token.secret)
    desk.set_brakes(True)
    assert desk.arm_ready()
    desk.raise_safety_error("SafetyRuleViolation")
    assert not desk.arm_ready() and not desk.unlocked


def test_self_tests_take_time_hold_the_arm_and_can_fail(desk):
    token = desk.request_control("alice")
    desk.unlock(token.secret)
    desk.set_brakes(True)
    assert desk.execute_self_test(token.secret) == desk.self_test_time
    assert desk.self_test()["status"] == "Running" and not desk.arm_ready()
    with pytest.raises(DeskRefusal):
        desk.execute_self_test(token.secret)
    desk.finish_self_test()
    assert desk.self_test()["status"] == "OK" and desk.arm_ready()
    desk.fail_next_self_test = True
    desk.execute_self_test(token.secret)
    desk.finish_self_test()
    assert desk.self_test()["status"] == "Failed" and desk.safety_errors == [SELF_TEST_FAILURE]
    assert not desk.arm_ready()


def test_lock_needs_no_token_and_fci_needs_the_execution_mode(desk):
    desk.lock()  # panda-py and a v1 client lock without control
    token = desk.request_control("alice")
    desk.set_brakes(False)
    desk.change_mode(token.secret, PROGRAMMING)
    with pytest.raises(DeskRefusal, match="Execution"):
        desk.activate_fci(token.secret)


def test_someone_else_holds_control_until_they_release(desk):
    desk.take_by_someone_else("Desk page")
    queued = desk.request_control("robohal")
    assert desk.holder().owner == "Desk page"
    desk.release_by_someone_else()
    assert desk.holds_control(queued)


def test_reboot_locks_drops_control_and_fci(desk):
    token = desk.request_control("alice")
    desk.activate_fci(token.secret)
    desk.set_brakes(True)
    desk.reboot()
    assert desk.holder() is None and not desk.fci_active() and not desk.unlocked


def test_no_secret_in_reprs(desk):
    token = desk.request_control("alice")
    assert token.secret not in repr(token) and "secret" not in repr(desk)
