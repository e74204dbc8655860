"""robohal's RWS client against the simulated controller, RobotWare 6 (RWS 1.0) and 7 (RWS 2.0):
every operation, subscriptions, a module that does not build, wrong credentials, a stalled
controller, manual mode, the certificate pinned on first use."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from robohal.net.credentials import Credentials
from robohal.net.tls import CertificateChanged, KnownCertificates
from robohal.sim.process import free_port
from robohal_abb.cell import AbbCell
from robohal_abb.rws import RapidBuildError, RwsAuthError, RwsClient, RwsError, RwsTimeout, RwsUnsupported

BOTH = pytest.mark.parametrize("version", [6, 7])


def cell_for(sim, **options) -> AbbCell:
    return AbbCell.from_uri(sim.process.uri, **options)


def until(condition, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.02)


def set_up(cell: AbbCell, template: bytes, tmp_path) -> None:
    module = tmp_path / "RobohalEgm.mod"
    module.write_bytes(template)
    cell.setup(module)


@BOTH
def test_every_operation(rws_cell, rws_template, tmp_path, version):
    sim = rws_cell(version)
    with cell_for(sim) as cell:
        rws = cell.rws
        assert rws.dialect.robotware == version  # learnt from the controller's challenge
        assert rws.system().robotware.startswith(str(version))
        assert (rws.controller_state(), rws.operation_mode(), rws.execution().state) == ("motoroff", "AUTO", "stopped")
        rws.set_speed_ratio(0.25)
        assert rws.speed_ratio() == 0.25

        rws.upload("$HOME/notes.txt", b"hello controller\n")
        assert rws.download("$HOME/notes.txt") == b"hello controller\n"
        rws.delete_file("$HOME/notes.txt")

        assert cell.status().problems[0].startswith("RobohalEgm is not loaded")
        set_up(cell, rws_template(), tmp_path)
        assert "RobohalEgm" in rws.modules()
        assert rws.read_symbol("EGM_MODE", module="RobohalEgm") == "joint"
        rws.write_symbol("reg1", 42, module="user")
        assert rws.read_symbol("reg1", module="user") == 42

        assert sim.datagrams(0.3) == 0  # no EGM before RAPID runs
        assert cell.start() is True
        assert rws.controller_state() == "motoron" and rws.execution().running
        sim.wait_stream(flowing=True)
        assert cell.status().ready and cell.start() is False  # already up: nothing to do

        rws.write_signal("DO1", True)  # a name alone, found in the signal list
        assert rws.read_signal("Local/DRV_1/DO1").value is True
        assert cell.io("aoFlow", 2.5).value == 2.5
        assert cell.io("Local/DRV_1/goProgram", 5).value == 5
        assert isinstance(cell.io("diPartPresent").value, bool)

        seqnum = rws.last_elog_seqnum()
        cell.stop(motors_off=True)
        sim.wait_stream(flowing=False)
        assert (rws.controller_state(), rws.execution().state) == ("motoroff", "stopped")
        logged = cell.elog(since=seqnum)
        assert logged and all(entry.seqnum > seqnum for entry in logged)
        assert [entry.seqnum for entry in logged] == sorted(entry.seqnum for entry in logged)
        assert 10010 in [entry.code for entry in logged]  # motors off, in the controller's words
        with rws.mastership("motion"):
            pass


@BOTH
def test_subscriptions_bring_execution_signal_and_event_log_changes(rws_cell, rws_template, tmp_path, version):
    sim = rws_cell(version)
    with cell_for(sim) as cell:
        rws = cell.rws
        set_up(cell, rws_template(), tmp_path)
        watched = [rws.dialect.watch_execution(), rws.dialect.watch_signal("Local/DRV_1/DO1"), rws.dialect.watch_elog()]
        with rws.subscribe(watched) as events:
            cell.start()
            running = events.wait_for(lambda e: e.kind == "execution" and e.value == "running", timeout=10)
            assert running.resource == "/rw/rapid/execution;ctrlexecstate"
            rws.write_signal("Local/DRV_1/DO1", True)
            events.wait_for(lambda e: e.kind == "signal" and e.value == "1" and "DO1" in e.resource, timeout=10)
            seqnum = cell.rws.last_elog_seqnum()
            cell.stop()  # the controller logs it
            logged = events.wait_for(lambda e: e.kind == "elog" and int(e.value) > seqnum, timeout=10)
            assert logged.resource == f"/rw/elog/0/{logged.value}"


def test_subscription_websockets_open_every_time_over_tls(rws_cell):
    """The websocket client reads in a thread of its own while the caller writes the handshake: on a
    bare SSLSocket about one RobotWare 7 subscription in a hundred never saw its answer (TLS 1.3 session
    tickets read while the request was written). 400 in a row, each opened and closed, none lost."""
    sim = rws_cell(7)
    with cell_for(sim) as cell:
        rws = cell.rws
        for _ in range(400):
            with rws.subscribe([rws.dialect.watch_execution()]):
                pass
        with rws.subscribe([rws.dialect.watch_signal("Local/DRV_1/DO1")]) as events:  # events still come
            rws.write_signal("Local/DRV_1/DO1", True)
            events.wait_for(lambda e: e.kind == "signal" and e.value == "1", timeout=10)


@BOTH
def test_a_module_that_does_not_build_is_reported(rws_cell, rws_template, tmp_path, version):
    sim = rws_cell(version)
    with cell_for(sim) as cell:
        with pytest.raises(RapidBuildError, match="RobohalEgm") as caught:
            set_up(cell, rws_template(broken=True), tmp_path)
        assert caught.value.detail or caught.value.errors
        with pytest.raises(RwsError, match="controller code"):
            cell.start()  # a program that did not build does not run: the controller says why
        assert (cell.rws.execution().state, cell.rws.controller_state()) == ("stopped", "motoroff")


@BOTH
def test_a_wrong_password_names_the_user_and_changes_nothing(rws_cell, version, caplog):
    sim = rws_cell(version, "--rws-password", "cell-secret")
    wrong = Credentials("Default User", "not-it", "from the test")
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(RwsAuthError, match="'Default User'") as caught:
            cell = cell_for(sim, credentials=wrong)
            cell.motors(True)
    assert "not-it" not in str(caught.value)
    right = Credentials("Default User", "cell-secret", "from the test")
    with cell_for(sim, credentials=right) as cell:
        assert cell.rws.controller_state() == "motoroff"  # the refused call changed nothing
        assert "cell-secret" not in repr(cell) and "cell-secret" not in repr(cell.rws)
    assert not any("cell-secret" in record.getMessage() or "not-it" in record.getMessage() for record in caplog.records)


def test_credentials_come_from_the_environment(rws_cell, monkeypatch):
    sim = rws_cell(6, "--rws-password", "from-env")
    monkeypatch.setenv("ROBOHAL_ABB_RWS_PASSWORD", "from-env")
    with cell_for(sim) as cell:
        assert cell.rws.controller_state() == "motoroff"
        assert "from-env" not in repr(cell.rws)
    # a cell's URI names whose credentials (never the credentials): ROBOHAL_LAB_IRB_PASSWORD here
    monkeypatch.delenv("ROBOHAL_ABB_RWS_PASSWORD")
    monkeypatch.setenv("ROBOHAL_LAB_IRB_PASSWORD", "from-env")
    with AbbCell.from_uri(sim.process.uri.with_params(rws_credentials="lab-irb")) as cell:
        assert cell.rws.operation_mode() == "AUTO"
    with pytest.raises(RwsAuthError, match="ROBOHAL_ABB_RWS_PASSWORD"):
        cell_for(sim).rws.open()  # abb-rws's own: ABB's default password, refused here


@BOTH
def test_a_controller_that_stops_answering_raises_a_timeout_within_the_call(rws_cell, version):
    sim = rws_cell(version)
    with RwsClient(sim.url, fingerprint=sim.process.uri.params.get("rws_fingerprint"), timeout=0.5) as rws:
        assert rws.operation_mode() == "AUTO"
        sim.process.send("RWS STALL")
        deadline = time.monotonic() + 10
        while True:  # the control line acts on the simulator's own loop: call until one hangs
            try:
                rws.operation_mode()
            except RwsTimeout as timeout:
                assert "did not answer within 0.5 s" in str(timeout)
                break
            assert time.monotonic() < deadline, "the controller kept answering"
        sim.process.send("RWS RESUME")
        until(lambda: _answers(rws), "an answer after RESUME")


def _answers(rws: RwsClient) -> bool:
    try:
        return rws.operation_mode() == "AUTO"
    except RwsTimeout:
        return False


def test_manual_mode_asks_the_pendant_for_write_access(rws_cell, rws_template, tmp_path):
    sim = rws_cell(6, "--opmode", "manr")
    with cell_for(sim) as cell:
        with pytest.raises(RwsUnsupported, match="enabling device"):
            cell.motors(True)
        done: list[BaseException | None] = []

        def setup() -> None:
            try:
                set_up(cell, rws_template(), tmp_path)
                done.append(None)
            except BaseException as exc:
                done.append(exc)

        worker = threading.Thread(target=setup)
        worker.start()
        deadline = time.monotonic() + 20
        while worker.is_alive() and time.monotonic() < deadline:
            sim.process.send("RWS RMMP GRANT")  # the operator at the FlexPendant
            worker.join(0.1)
        worker.join(5)
        assert done == [None]
        assert "RobohalEgm" in cell.rws.modules()


def test_robotware_7_s_certificate_is_pinned_on_first_use_and_a_changed_one_refused(rws_cell, tmp_path):
    known = KnownCertificates(tmp_path / "known.toml")
    port = free_port(kind=1)  # SOCK_STREAM
    first = rws_cell(7, "--rws-port", str(port))
    with RwsClient(first.url, known=known) as rws:  # no fingerprint named: trusted on first use
        assert rws.controller_state() == "motoroff"
    pinned = known.get(f"127.0.0.1:{port}")
    assert pinned.fingerprint.replace(":", "").lower() == first.process.uri.params["rws_fingerprint"]
    with RwsClient(first.url, known=known) as rws:
        assert rws.operation_mode() == "AUTO"
    first.process.stop()
    second = rws_cell(7, "--rws-port", str(port))  # another controller (a new certificate) at that address
    with pytest.raises(CertificateChanged) as caught:
        RwsClient(second.url, known=known).open()
    assert pinned.fingerprint in str(caught.value)
    assert caught.value.seen.replace(":", "").lower() == second.process.uri.params["rws_fingerprint"]
