"""``robohal franka ...`` (the plugin's command in ``robohal``) and ``franka://`` bring-up against
the simulated Desk: credentials from the environment or the owner-only file, the certificate
pinned on first use, control kept between commands, and a robot given back as it was found."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import robohal
from click.testing import CliRunner
from robohal.cli.main import main
from robohal.errors import ConnectFailed
from robohal.net.tls import KnownCertificates, normalise_fingerprint

PASSWORD = "cli-Pw-77"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """Config and state folders of this test's own, and the Desk's credentials in the environment."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("ROBOHAL_FRANKA_DESK_USER", "franka")
    monkeypatch.setenv("ROBOHAL_FRANKA_DESK_PASSWORD", PASSWORD)
    return tmp_path


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["franka", *args])
    text = result.output + (f"\n{result.exception!r}" if result.exception and result.exit_code != 0 else "")
    return result.exit_code, text


@pytest.mark.parametrize("dialect", ["v1", "web"])
def test_the_commands_bring_a_locked_robot_up_and_down(start_simulator, home, dialect):
    simulator = start_simulator("--desk", dialect, "--locked", "1", "--desk-password", PASSWORD)
    uri = str(simulator.uri)  # with desk= and desk_fingerprint= from the ready line
    code, out = cli("status", uri, "--json")
    assert code == 0, out
    status = json.loads(out)
    assert status["joints"] == "Locked" and not status["fci_active"] and status["holder"] is None
    code, out = cli("unlock", uri)
    assert code == 0 and "control taken" in out and "joints unlocked" in out, out
    code, out = cli("fci", "on", uri)  # the next command goes on with the control the first took
    assert code == 0 and "control taken" not in out and "FCI active" in out, out
    assert simulator.desk_state()["arm_ready"]
    code, out = cli("selftest", uri)
    assert code == 0 and "passed" in out, out
    code, out = cli("lock", uri)
    assert code == 0 and "joints locked" in out and "control released" in out, out
    state = simulator.desk_state()
    assert state["holder"] is None and not state["fci"] and not state["unlocked"]
    assert PASSWORD not in out


def test_recover_and_control_held(start_simulator, home):
    simulator = start_simulator("--desk", "v1", "--desk-password", PASSWORD)
    uri = str(simulator.uri)
    simulator.send("SAFETY_ERROR SafetyRuleViolation")
    simulator.send("DESK_HOLDER Desk-page")
    simulator.wait_desk(lambda state: state["holder"] == "Desk-page")
    code, out = cli("unlock", uri)
    assert code != 0 and "Desk-page holds control" in out and "--force" in out, out
    code, out = cli("recover", uri)  # needs no control
    assert code == 0 and "SafetyRuleViolation" in out, out
    assert simulator.desk_state()["safety_errors"] == []


def test_credentials_come_from_the_owner_only_file(start_simulator, home, monkeypatch):
    simulator = start_simulator("--desk", "v1", "--desk-password", PASSWORD)
    monkeypatch.delenv("ROBOHAL_FRANKA_DESK_USER")
    monkeypatch.delenv("ROBOHAL_FRANKA_DESK_PASSWORD")
    uri = f"{simulator.uri}&desk_credentials=lab-fr3"
    path = home / "config" / "robohal" / "credentials.toml"
    path.parent.mkdir(parents=True)
    path.write_text(f'[lab-fr3."{simulator.host}"]\nuser = "franka"\npassword = "{PASSWORD}"\n')
    path.chmod(0o644)
    code, out = cli("status", uri)
    assert code != 0 and "chmod 600" in out and PASSWORD not in out, out
    path.chmod(0o600)
    code, out = cli("status", uri)
    assert code == 0 and "ready to move: yes" in out, out
    code, out = cli("status", f"{simulator.uri}&desk_credentials=nowhere")
    assert code != 0 and "ROBOHAL_NOWHERE_USER" in out, out  # a named service has no defaults


def test_the_certificate_is_pinned_on_first_use_and_a_changed_one_refused(start_simulator, home):
    first = start_simulator("--desk", "v1", "--desk-password", PASSWORD)
    address = first.host
    unpinned = f"franka://{address}?model=franka.fr3&desk={first.uri.params['desk']}"  # no fingerprint given
    code, out = cli("status", unpinned)
    assert code == 0, out
    known = KnownCertificates()
    assert [pin.fingerprint for pin in known.entries().values()] == [
        normalise_fingerprint(first.uri.params["desk_fingerprint"])]
    first.stop()
    second = start_simulator("--desk", "v1", "--desk-password", PASSWORD, host=address)  # a new certificate
    code, out = cli("status", unpinned)
    assert code != 0 and "other than the one pinned" in out, out
    assert normalise_fingerprint(second.uri.params["desk_fingerprint"]) in out
    assert second.desk_state()["requests"] == 0  # refused before anything was sent
    assert oct(os.stat(known.path).st_mode & 0o777) == "0o600"


def test_connect_with_bring_up_and_close_gives_back(start_simulator, home):
    pytest.importorskip("pylibfranka")
    simulator = start_simulator("--desk", "v1", "--locked", "1", "--desk-password", PASSWORD)
    uri = simulator.uri.with_params(realtime="ignore", desk_bringup="1")
    with robohal.connect(str(uri)) as robot:
        state = simulator.desk_state()
        assert state["arm_ready"] and state["fci"] and state["holder"]
        assert robot.move_joints(robot.backend.commanded + np.radians(2.0), speed=0.5).completed
    state = simulator.desk_state()
    assert state["holder"] is None and not state["fci"] and not state["unlocked"]
    # a robot found ready stays as it was found
    cli("unlock", str(simulator.uri))
    cli("fci", "on", str(simulator.uri))
    with robohal.connect(str(uri)) as robot:
        assert robot.move_joints(robot.backend.commanded + np.radians(1.0), speed=0.5).completed
    state = simulator.desk_state()
    assert state["fci"] and state["unlocked"] and state["holder"]


def test_without_bring_up_a_refused_connect_asks_desk_why(start_simulator, home):
    pytest.importorskip("pylibfranka")
    simulator = start_simulator("--desk", "web", "--locked", "1", "--desk-password", PASSWORD)
    with pytest.raises(ConnectFailed, match=r"FCI is off \(Desk at .* says so\): robohal franka fci on"):
        robohal.connect(str(simulator.uri.with_params(realtime="ignore")))


def test_franka_sim_brings_up_a_locked_robot_with_the_default_credentials(tmp_path, monkeypatch):
    pytest.importorskip("pylibfranka")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    with robohal.connect("franka://sim?model=franka.fr3&sim_locked=1&desk_bringup=1&gripper=0") as robot:
        assert robot.move_joints(robot.backend.commanded + np.radians(1.0), speed=0.5).completed
    with pytest.raises(robohal.errors.UriError, match="unknown franka parameter 'sim_desk_password'"):  # never a URI's
        robohal.connect("franka://sim?model=franka.fr3&sim_desk=v1&sim_desk_password=x")
    with pytest.raises(robohal.errors.UriError, match="need the simulated Desk"):
        robohal.connect("franka://sim?model=franka.fr3&sim_locked=1&sim_desk=off")
