"""abb-robot-client's RWS client (RWS 1.0, written against real IRC5 controllers, not by us) brings
the simulated RobotWare 6 controller up and runs it: the EGM stream starts and ends with RAPID."""

from __future__ import annotations

import time

import pytest
from abb_robot_client import rws


def _wait(condition, timeout: float = 10.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not hold within {timeout} s")
        time.sleep(0.01)


def test_abb_robot_client_brings_the_controller_up_and_egm_follows_rapid(rws_cell, rws_template):
    cell = rws_cell(6)
    client = rws.RWS(cell.url)  # ABB's default credentials, as the client's own defaults
    try:
        # after power-up: motors off, RAPID stopped, no EGM
        assert client.get_controller_state() == "motoroff"
        assert client.get_execution_state().ctrlexecstate == "stopped"
        assert client.get_operation_mode() == "AUTO"
        assert cell.datagrams(0.3) == 0

        client.upload_file("$HOME/RobohalEgm.mod", rws_template())
        assert "RobohalEgm.mod" in client.list_files("$HOME")
        client._do_post("rw/mastership?action=request")  # loadmod needs RAPID mastership (RWS manual)
        client._do_post("rw/rapid/tasks/T_ROB1?action=loadmod", {"modulepath": "$HOME/RobohalEgm.mod", "replace": "true"})
        client._do_post("rw/mastership?action=release")

        client.set_controller_state("motoron")
        assert client.get_controller_state() == "motoron"
        client.resetpp()
        client.start(cycle="forever")
        assert client.get_execution_state().ctrlexecstate == "running"
        cell.wait_stream(flowing=True)

        # the I/O set over RWS is the signal EGM's RAPID data carry (the template maps doVacuum)
        client.set_digital_io("doVacuum", 1)
        assert client.get_digital_io("doVacuum") == 1
        _wait(lambda: client.get_digital_io("diVacuumOn") == 1, what="the valve's feedback")
        # RAPID data of the loaded module read back
        assert client.get_rapid_variable("COMM_TIMEOUT") == "1"
        assert client.get_rapid_variable("EGM_MODE") == '"joint"'
        assert client.get_rapid_variable_num("reg1") == 0.0

        client.stop()
        assert client.get_execution_state().ctrlexecstate == "stopped"
        cell.wait_stream(flowing=False)

        codes = [entry.code for entry in client.read_event_log()]
        seqnums = [entry.seqnum for entry in client.read_event_log()]
        assert seqnums == sorted(seqnums) and len(set(seqnums)) == len(seqnums)
        for code in (10011, 10002):  # Motors ON state, program pointer reset (ABB's codes)
            assert code in codes
        assert codes.index(10011) < codes.index(10002)
    finally:
        client.close()


def test_abb_robot_client_subscription_hears_execution_io_and_the_event_log(rws_cell):
    cell = rws_cell(6)
    client = rws.RWS(cell.url)
    events: list = []
    request, kind, priority = rws.SubscriptionResourceRequest, rws.SubscriptionResourceType, rws.SubscriptionResourcePriority
    subscription = client.subscribe([request(kind.ExecutionState, priority.Medium),
                                     request(kind.ControllerState, priority.Medium),
                                     request(kind.Signal, priority.High, "DO1"),
                                     request(kind.Elog, priority.Medium)], events.append)
    try:
        _wait(lambda: cell.state()["websockets"] == 1, what="the subscription's websocket")
        client.set_controller_state("motoron")
        _wait(lambda: rws.ControllerState("motoron") in events, what="the controller state event")
        client.set_digital_io("DO1", 1)
        _wait(lambda: rws.Signal("DO1", "1") in events, what="the signal event")
        assert any(isinstance(e, rws.EventLogEntryEvent) for e in events)
        assert not [e for e in events if isinstance(e, rws.SubscriptionException)]
    finally:
        subscription.close()
        client.close()


def test_abb_robot_client_with_wrong_credentials_changes_nothing(rws_cell):
    cell = rws_cell(6)
    client = rws.RWS(cell.url, password="wrong")
    with pytest.raises(rws.ABBException, match="Unauthorized") as refused:
        client.set_controller_state("motoron")
    assert refused.value.code < 0  # the controller's return code comes with the 401
    assert cell.state()["ctrlstate"] == "motoroff"
