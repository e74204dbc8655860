import json

import numpy as np
import pytest
from click.testing import CliRunner
from robohal.cli.main import main


@pytest.fixture
def cli():
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(main, list(args))

    return invoke


def test_version_and_lists(cli):
    from robohal.kinematics import diffik

    version = cli("--version")
    assert version.exit_code == 0
    assert ("kinematics kernels: compiled" in version.output) == diffik.COMPILED
    models = json.loads(cli("models", "--json").output)
    assert {"name": "generic.planar2", "dof": 2, "plugin": "builtin"}.items() <= models[0].items() or any(
        m["name"] == "generic.planar2" and m["plugin"] == "builtin" for m in models
    )
    plugins = json.loads(cli("plugins", "--json").output)
    assert any(p["name"] == "builtin" and "sim" in p["backends"] for p in plugins["plugins"])


def test_fk_in_degrees_and_json(cli):
    result = cli("fk", "generic.planar2", "90", "0", "--deg", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert np.allclose(data["xyz_m"], [0.0, 0.55, 0.0], atol=1e-12)
    assert data["within_limits"] is True


def test_fk_says_the_joints_back_in_the_unit_they_were_given(cli):
    degrees = cli("fk", "generic.planar2", "30", "45", "--deg")
    assert degrees.exit_code == 0, degrees.output
    assert "joints   30.0000 45.0000 deg" in degrees.output
    radians = cli("fk", "generic.planar2", "0.5", "0.7")
    assert "joints   0.500000 0.700000 rad" in radians.output
    data = json.loads(cli("fk", "generic.planar2", "30", "45", "--deg", "--json").output)
    assert np.allclose(data["joints_deg"], [30, 45]) and np.allclose(data["joints_rad"], np.radians([30, 45]))


def test_fk_accepts_negative_joints(cli):
    result = cli("fk", "generic.planar2", "-90", "-10", "--deg", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["xyz_m"][1] < 0


def test_ik_lists_both_elbows_and_round_trips(cli):
    result = cli("ik", "generic.planar2", "--xyz", "0.3", "0.2", "0", "--all", "--json")
    data = json.loads(result.output)
    assert result.exit_code == 0 and len(data["solutions"]) == 2
    for solution in data["solutions"]:
        fk = json.loads(cli("fk", "generic.planar2", *map(str, solution["rad"]), "--json").output)
        assert np.allclose(fk["xyz_m"][:2], [0.3, 0.2])


def test_ik_unreachable_says_why(cli):
    result = cli("ik", "generic.planar2", "--xyz", "2", "0", "0")
    assert result.exit_code == 1 and "reaches at most" in result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (("fk", "generic.planar", "0", "0"), "did you mean generic.planar2"),
        (("fk", "generic.planar2", "0"), "has 2 joints"),
        (("fk", "generic.planar2", "0", "nan"), "NaN"),
        (("fk", "generic.planar2", "0", "inf"), "NaN or inf"),
        (("ik", "generic.planar2", "--xyz", "nan", "0", "0"), "NaN"),
        (("sim", "nope"), "unknown simulator"),
        (("jog", "arduino-arm://sim?arm=mearn"), "unknown arm 'mearn'; did you mean mearm?"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(cli, args, message):
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_cli_fk_checks_the_linkage_limit(cli) -> None:
    result = cli("fk", "abb.irb1410", "0", "-1.2", "1.2", "0", "0", "0", "--json")
    assert json.loads(result.output)["within_limits"] is False
    inside = cli("fk", "abb.irb1410", "0", "0.2", "0.1", "0", "0", "0", "--json")
    assert json.loads(inside.output)["within_limits"] is True


def test_piped_tables_wrap_instead_of_cutting_names(cli, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    output = cli("plugins").output
    for name in ("arduino_planar", "robohal-arduino-planar", "abb.irb4600_60", "arduino-planar", "version"):
        assert name in output
    assert "…" not in output
    assert max(len(line) for line in output.splitlines()) <= 100


def test_json_mode_reports_errors_as_json(cli) -> None:
    result = cli("fk", "abb.irb120", "1", "2", "--json")
    assert result.exit_code == 2
    error = json.loads(result.output.splitlines()[0])
    assert error == {"error": "abb.irb120 has 6 joints; got 2 values", "type": "RobohalError"}
    plain = cli("fk", "abb.irb120", "1", "2")
    assert plain.exit_code == 2 and not plain.output.startswith("{")
