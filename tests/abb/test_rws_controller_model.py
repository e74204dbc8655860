"""The simulated controller's model in this process: what it reads from a RAPID module, which event
log codes each state change gets, RMMP's keep-alive, and the build errors a broken module leaves."""

from __future__ import annotations

from pathlib import Path

import pytest
import robohal_abb
from robohal_abb import controller_model as cm
from robohal_abb.rapid_module import parse_module

TEMPLATE = (Path(robohal_abb.__file__).parent / "rapid" / "RobohalEgm.mod").read_text()


@pytest.fixture
def model():
    made = cm.ControllerModel()
    yield made
    made.close()


def load(model: cm.ControllerModel, text: str, name: str = "RobohalEgm.mod"):
    model.files.write(f"$HOME/{name}", text.encode())
    model.request_mastership("s1", "rapid")
    return model.load_module(cm.TASK, f"$HOME/{name}", replace=True)


def codes_since(model: cm.ControllerModel, seqnum: int) -> list[int]:
    return [entry.code for entry in model.elog_entries() if entry.seqnum > seqnum]


def last_seqnum(model: cm.ControllerModel) -> int:
    return model.elog_entries()[-1].seqnum


def test_the_template_reads_as_an_egm_program():
    module = parse_module(TEMPLATE)
    assert module.name == "RobohalEgm" and module.errors == []
    assert module.egm_mode() == "joint"  # main -> RunEgm -> EGMRunJoint, chosen by EGM_MODE
    assert module.retries_comm_error()  # its handler takes ERR_UDPUC_COMM with TRYNEXT
    assert module.symbols["comm_timeout"].value == "1"
    assert module.symbols["do_names"].value == '["","","",""]'


def test_a_broken_module_reports_where_each_error_is():
    broken = TEMPLATE.replace("        ENDIF\n        ! \\NoWaitCond", "        ! \\NoWaitCond", 1)
    module = parse_module(broken)
    assert module.errors, "an IF without its ENDIF must not build"
    rows = broken.splitlines()
    for error in module.errors:
        line = rows[error.row - 1]
        assert error.column == len(line) - len(line.lstrip()) + 1  # the statement's first column
        assert str(error).startswith(f"line {error.row}: ")
    assert any("ENDIF" in error.message for error in module.errors)


def test_start_and_stop_codes_follow_the_cause(model):
    load(model, TEMPLATE)
    model.set_motors(True)
    model.reset_pp()
    mark = last_seqnum(model)
    model.start("forever")
    assert codes_since(model, mark) == [cm.EV_PROGRAM_STARTED]  # 10151: from main's first instruction
    mark = last_seqnum(model)
    model.stop()
    assert codes_since(model, mark) == [cm.EV_PROGRAM_STOPPED]  # 10005: a stop request
    mark = last_seqnum(model)
    model.start("asis")
    assert codes_since(model, mark) == [cm.EV_PROGRAM_RESTARTED]  # 10008: from where it stopped
    mark = last_seqnum(model)
    model.cell_stop("emergencystop")
    # the Motors ON circuit opens: the state first, then the task's stop (as the OmniCore log has it)
    assert codes_since(model, mark) == [cm.EV_EMERGENCY_STOP, cm.EV_TASK_STOPPED]
    assert model.egm_program() is None
    seqnums = [entry.seqnum for entry in model.elog_entries()]
    assert seqnums == sorted(set(seqnums))


def test_motors_on_is_refused_from_an_emergency_stop_until_reset(model):
    model.cell_stop("emergencystop")
    with pytest.raises(cm.Refusal) as refused:
        model.set_motors(True)
    assert refused.value.status == 400
    model.reset_stop()
    model.set_motors(True)
    assert model.ctrlstate == "motoron"


def test_build_errors_are_listed_per_module_and_block_the_program_pointer(model):
    broken = TEMPLATE.replace("        ENDIF\n        ! \\NoWaitCond", "        ! \\NoWaitCond", 1)
    load(model, broken)
    errors = model.build_errors(cm.TASK)
    assert errors and all(name == "RobohalEgm" for name, _ in errors)
    with pytest.raises(cm.Refusal) as refused:
        model.reset_pp()
    assert refused.value.code == cm.E_RAPID_SYNTAX_ERROR
    with pytest.raises(cm.Refusal) as unknown:
        model.build_errors("T_NOPE")
    assert unknown.value.status == 404


def test_a_pending_rmmp_request_lapses_unless_polled(model):
    now = [100.0]
    model.clock = lambda: now[0]
    model.set_opmode("MANR")
    model.request_rmmp("s1", "modify")
    now[0] += cm.RMMP_KEEPALIVE - 1
    assert model.rmmp_state("s1", poll=True) == "pending"  # polled in time: kept
    now[0] += cm.RMMP_KEEPALIVE - 1
    assert model.rmmp_state("s1") == "pending"
    now[0] += 2  # more than RMMP_KEEPALIVE since the last poll
    assert model.rmmp_state("s1") is None
    assert model.operator_rmmp(grant=True) == 0  # nothing left for the operator to grant
    model.request_rmmp("s1", "modify")
    assert model.operator_rmmp(grant=True) == 1
    model.request_mastership("s1", "rapid")  # granted: mastership in manual mode
    model.cancel_rmmp("s1")
    assert model.rmmp_state("s1") is None


def test_a_running_program_without_an_egm_instruction_streams_nothing(model):
    # a user's failure: RAPID runs, but its main never reaches EGMRunJoint, so no session ever starts
    load(model, "MODULE Idle\n    VAR num n := 0;\n    PROC main()\n        n := n + 1;\n    ENDPROC\nENDMODULE\n",
         name="Idle.mod")
    model.set_motors(True)
    model.reset_pp()
    model.start("forever")
    assert model.execution == "running" and model.egm_program() is None
    assert model.rapid_mapping() is None  # no robohal_to_pc: EGM would carry no RAPID data
