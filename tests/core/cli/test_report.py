"""The Markdown report of one `robohal hil --report` run, from its JUnit XML."""

from pathlib import Path

from robohal.cli.report import write_markdown_report

FRANKA = "franka://sim?model=franka.fr3"


def _case(classname: str, name: str, target: str | None = None, skipped: str | None = None) -> str:
    properties = f'<properties><property name="hil_target" value="{target}" /></properties>' if target else ""
    skip = f'<skipped type="pytest.skip" message="{skipped}">{skipped}</skipped>' if skipped else ""
    return f'<testcase classname="{classname}" name="{name}" time="0.1">{properties}{skip}</testcase>'


def _junit(folder: Path, *cases: str) -> str:
    """JUnit XML as pytest writes it for a HIL run."""
    path = folder / "junit.xml"
    path.write_text('<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">'
                    f'<testsuite name="pytest" tests="{len(cases)}">{"".join(cases)}</testsuite></testsuites>')
    return str(path)


def test_one_robot_s_report_counts_the_other_families_tests_in_one_line(tmp_path):
    abb = "no HIL target for abb-egm (give --hil-target abb-egm://...)"
    arduino = "no HIL target for arduino-planar (give --hil-target arduino-planar://...)"
    junit = _junit(
        tmp_path,
        _case("robohal.testing.suite.test_contract.TestContract", f"test_connect_reports_state[{FRANKA}]", FRANKA),
        _case("robohal.testing.suite.test_contract.TestContract", f"test_io_names_only_its_declared_signals[{FRANKA}]",
              FRANKA, skipped=f"{FRANKA} declares no I/O signals"),
        _case("robohal_franka.hil.test_franka_hil", f"test_jump_is_refused_before_the_wire[{FRANKA}]", FRANKA),
        *[_case("robohal_abb.hil.test_egm_hil", f"test_{n}[no-target]", skipped=abb) for n in range(7)],
        *[_case("robohal_arduino_planar.hil.test_arduino_hil", f"test_{n}[no-target]", skipped=arduino)
          for n in range(9)],
        _case("robohal_arduino_planar.hil.test_toolchain", "test_firmware_in_simavr_is_a_default_hil_target",
              skipped="the AVR toolchain is missing"),
    )
    report = write_markdown_report(junit, str(tmp_path)).read_text()
    assert ("Not run, no target of their robot family: 16 tests"
            " (`robohal_abb.hil` 7, `robohal_arduino_planar.hil` 9).") in report.splitlines()
    assert "[no-target]" not in report  # not one row each
    # a skip for any other reason is still a row of its own, with its reason
    assert "| `robohal_arduino_planar.hil.test_toolchain::test_firmware_in_simavr_is_a_default_hil_target` |" \
           " skipped | the AVR toolchain is missing |" in report
    assert f"## {FRANKA}\n\n2 passed, 1 skipped\n" in report
    assert "declares no I/O signals |" in report


def test_a_run_with_a_target_for_every_family_has_no_such_line(tmp_path):
    junit = _junit(tmp_path, _case("robohal_franka.hil.test_franka_hil", f"test_jump[{FRANKA}]", FRANKA))
    report = write_markdown_report(junit, str(tmp_path)).read_text()
    assert "Not run" not in report and "1 passed" in report
