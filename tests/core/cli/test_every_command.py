"""Every `robohal` subcommand on every bundled robot, and with a user's typical wrong arguments:
it works, or it fails with one line that says why and a non-zero exit status, never a Python
traceback (a bug is one line too, and `robohal -v` shows its traceback).

Model-only commands and dry runs keep this quick: the bundled simulators are named in the URIs
but only `draw --dry-run` meets them, which starts none."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result
from robohal import spatial
from robohal.cli.main import main
from robohal.plugins.registry import Registry, default_registry, use_registry
from robohal_franka import models as franka_models

MODELS = [spec.name for spec in default_registry().models() if spec.source is None]  # the bundled ones
SIMULATORS = ["franka://sim", "abb-egm://sim", "arduino-planar://sim"]
PLANAR = "sim://?model=generic.planar2&realtime=0"
#: how a failure's one line starts: robohal's own, click's usage errors, ik's answer
ERROR_LINE = re.compile(r"^(robohal: error: |Error: |unreachable: )")


def run(*args: str, stdin: str | None = None) -> Result:
    result = CliRunner().invoke(main, list(args), input=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        f"robohal {' '.join(args)} raised {result.exception!r}"
    assert "Traceback" not in result.output, result.output
    return result


def fails_in_one_line(*args: str, stdin: str | None = None) -> str:
    """Run robohal with ``args``: it must fail with one error line and no traceback; the line."""
    result = run(*args, stdin=stdin)
    assert result.exit_code != 0, f"robohal {' '.join(args)} succeeded:\n{result.output}"
    errors = [line for line in result.output.splitlines() if ERROR_LINE.match(line)]
    assert len(errors) == 1, f"robohal {' '.join(args)}:\n{result.output}"
    assert "a bug in robohal" not in errors[0], errors[0]
    assert errors[0] == result.output.rstrip("\n").splitlines()[-1], "the error is the last word"
    return errors[0]


def works(*args: str, stdin: str | None = None) -> str:
    result = run(*args, stdin=stdin)
    assert result.exit_code == 0, f"robohal {' '.join(args)}:\n{result.output}"
    return result.output


def test_the_lists_and_the_version() -> None:
    for args in (("--version",), ("plugins",), ("models",), ("plugins", "--json"), ("models", "--json"), ("sim",)):
        works(*args)


def test_each_plugins_command_lists_only_its_own_subcommands() -> None:
    plugins = [spec.name for spec in default_registry().commands()]
    assert {"abb", "feetech", "franka"} <= set(plugins)
    for name in plugins:
        listed = re.findall(r"^  (\S+) ", works(name, "--help").split("Commands:")[-1], re.MULTILINE)
        assert listed, f"robohal {name} --help lists no commands"
        assert not set(plugins) & set(listed), f"robohal {name} lists the other plugins' commands: {listed}"


@pytest.mark.parametrize("model", MODELS)
def test_model_commands_work_on_every_bundled_model(model: str) -> None:
    kin = default_registry().get_model(model)
    works("urdf", model)
    q = kin.limits.centre
    assert "deg" in works("fk", model, *map(str, np.degrees(q)), "--deg")
    pose = kin.forward(q)
    xyz = [str(v) for v in pose[:3, 3]]
    rpy = [str(v) for v in np.degrees(spatial.matrix_to_rpy(pose[:3, :3]))]
    works("ik", model, "--xyz", *xyz, "--rpy", *rpy)
    fails_in_one_line("fk", model, *["0"] * (kin.dof + 1))
    fails_in_one_line("fk", model, "zero", *["0"] * (kin.dof - 1))
    fails_in_one_line("ik", model, "--xyz", "9", "9", "9", "--rpy", "180", "0", "0")  # out of reach


@pytest.mark.parametrize("model", MODELS)
def test_draw_plans_on_every_bundled_model(model: str) -> None:
    uri = f"sim://?model={model}&realtime=0"
    dof = default_registry().get_model(model).dof
    if 2 < dof < 6:  # a five-joint arm (the SO-101) cannot hold a pen's orientation across a plane
        assert f"{model} has {dof} joints" in fails_in_one_line("draw", uri, "circle", "--dry-run")
        return
    output = works("draw", uri, "circle", "--dry-run")
    assert "circle:" in output and "drawn:" not in output


@pytest.mark.parametrize("uri", SIMULATORS)
def test_draw_plans_on_every_bundled_simulator(uri: str) -> None:
    output = works("draw", uri, "square", "--dry-run")
    assert "square:" in output and "at up to 50 mm/s" in output


@pytest.mark.parametrize("scheme", ["franka", "abb-egm", "arduino-planar"])
def test_a_simulator_given_a_wrong_option_says_so_in_one_line(scheme: str) -> None:
    """`robohal sim` runs the simulator program with the terminal: its own error line ends it."""
    result = subprocess.run([sys.executable, "-m", "robohal.cli.main", "sim", scheme, "--no-such-option"],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode != 0 and "Traceback" not in result.stderr + result.stdout
    errors = [line for line in result.stderr.splitlines() if re.search(r"(^|: )(error|Error): ", line)]
    assert len(errors) == 1 and errors[0] == result.stderr.rstrip("\n").splitlines()[-1], result.stderr


def test_jog_moves_a_planar_arm_and_a_spatial_arm_s_tool_and_refuses_every_other_in_one_line() -> None:
    works("jog", PLANAR, stdin="q")
    assert works("jog", "sim://?model=so_arm.so101&realtime=0", stdin="wrq").count("| moved") == 2
    for name in MODELS:
        model = default_registry().get_model(name)
        if model.dof > 2 and (model.dof < 5 or model.position_only):
            assert "jog moves a planar two-link arm" in fails_in_one_line("jog", f"sim://?model={name}")


@pytest.mark.parametrize("args", [
    ("nope",),
    ("fk", "acme.nothing", "0"),
    ("fk", "generic.planar2"),
    ("fk", "generic.planar2", "0", "nan"),
    ("ik", "acme.nothing", "--xyz", "0", "0", "0"),
    ("ik", "abb.irb120", "--xyz", "0.4", "0", "0.4"),
    ("ik", "abb.irb120", "--xyz", "0.4", "0"),
    ("ik", "abb.irb120", "--xyz", "0.4", "0", "0.4", "--rpy", "1", "2", "3", "--quat", "1", "0", "0", "0"),
    ("ik", "abb.irb120", "--xyz", "0.4", "0", "0.4", "--quat", "0", "0", "0", "0"),
    ("urdf", "abb.irb"),
    ("sim", "nope"),
    ("new-plugin", "Bad Name"),
    ("hil", "--shard", "1/2"),
    ("hil", "--cells", "no-such-cells.toml", "--cell", "x"),
    ("demo", "--port", "0"),
    ("view", "bogus://x"),
    ("view", "sim://?model=acme.nothing"),
    ("view", PLANAR, "--port", "0"),
    ("view", PLANAR, "--urdf", "no-such.urdf"),
    ("jog", "bogus://x"),
    ("draw",),
    ("draw", PLANAR),
    ("draw", PLANAR, "triangle"),
    ("draw", "bogus://x", "circle"),
    ("draw", "sim://?model=acme.nothing", "circle"),
    ("draw", "franka://sim?bogus=1", "circle"),
    ("draw", "franka://sim?model=abb.irb120", "circle", "--dry-run"),
    ("draw", "abb-egm://sim?model=franka.fr3", "circle", "--dry-run"),
    ("draw", "franka://", "circle", "--dry-run"),
    ("draw", "arduino-planar://", "circle", "--dry-run"),
    ("draw", PLANAR, "line", "--dry-run"),
    ("draw", PLANAR, "polyline", "--dry-run"),
    ("draw", PLANAR, "polyline", "--file", "no-such-file.txt", "--dry-run"),
    ("draw", PLANAR, "circle", "--radius", "-1", "--dry-run"),
    ("draw", PLANAR, "circle", "--speed", "0", "--dry-run"),
    ("draw", PLANAR, "circle", "--center", "0.6", "0", "--dry-run"),
    ("draw", PLANAR, "circle", "--origin", "0.3,0,0", "--dry-run"),
    ("draw", PLANAR, "circle", "--plot", "no-such-folder/plot.png", "--dry-run"),
    ("draw", "arduino-planar://sim", "circle", "--center", "0.12", "0", "--dry-run"),
    ("draw", "franka://sim", "circle", "--origin", "0.3,0", "--dry-run"),
    ("draw", "franka://sim", "circle", "--origin", "2,0,0.3", "--dry-run"),
    ("draw", "franka://sim", "circle", "--radius", "0.5", "--dry-run"),
    ("draw", "franka://sim", "circle", "--lift", "-0.01", "--dry-run"),
    ("draw", "franka://sim", "circle", "--elbow", "up", "--dry-run"),
    ("draw", "abb-egm://sim", "circle", "--origin", "0,0,0.1", "--dry-run"),
])
def test_wrong_arguments_fail_in_one_line(args: tuple[str, ...]) -> None:
    fails_in_one_line(*args)


@pytest.mark.parametrize("args", [
    # the plugins' commands (robohal_commands), on addresses where nothing answers (loopback only)
    ("abb", "status", "franka://sim"),
    ("abb", "status", "http://127.0.0.1:9"),
    ("abb", "elog", "abb-egm://0.0.0.0:6510"),
    ("abb", "motors", "sideways", "abb-egm://sim?sim_rws=6"),
    ("abb", "io"),
    ("franka", "status", "franka://127.0.0.1"),
    ("franka", "fci", "maybe", "franka://sim"),
    ("franka", "lock"),
    ("feetech", "scan", "/dev/robohal-no-such-port"),
    ("feetech", "id", "/dev/robohal-no-such-port", "1", "300"),
    ("feetech", "baud", "/dev/robohal-no-such-port", "500000"),
    ("feetech", "calibrate", "feetech://sim?arm=no_such_arm"),
    ("certificates", "forget", "nowhere:1"),
])
def test_the_plugins_commands_fail_in_one_line(args: tuple[str, ...], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no pins or credentials of this machine's
    fails_in_one_line(*args)


def test_a_file_or_folder_that_cannot_be_written_fails_in_one_line_before_anything_moves(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for args in (("demo", "--out", str(a_file / "below")), ("new-plugin", "fine", "--dir", str(a_file / "below"))):
        assert "Not a directory" in fails_in_one_line(*args)  # the user's to fix, not a bug
    line = fails_in_one_line("draw", PLANAR, "circle", "--plot", str(tmp_path / "plot.nosuchformat"))
    assert "name a file ending in one of" in line and ".png" in line
    assert "connected" not in run("draw", PLANAR, "circle", "--plot", str(tmp_path / "plot.nosuchformat")).output


def test_a_bad_polyline_file_fails_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("0.3 0\nthree four\n")
    for uri in (PLANAR, "franka://sim"):
        assert "bad.txt:2" in fails_in_one_line("draw", uri, "polyline", "--file", str(bad), "--dry-run")


@pytest.fixture
def three_joints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A robot draw and jog cannot move: the FR3's first three joints, as a model file."""
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(Path(franka_models.__file__).resolve().parent / "urdf" / "fr3.urdf", folder / "fr3.urdf")
    (folder / "arm3.toml").write_text('name = "mine.arm3"\nurdf = "fr3.urdf"\nbase_link = "link0"\n'
                                      'tip_link = "link3"\nacceleration = 10\njerk = 5000\n')
    monkeypatch.setenv("ROBOHAL_MODEL_PATH", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with use_registry(Registry.discover()):
        yield "mine.arm3"


def test_an_unsupported_robot_is_one_line_for_draw_and_jog(three_joints: str) -> None:
    uri = f"sim://?model={three_joints}&realtime=0"
    assert "mine.arm3 has 3 joints" in fails_in_one_line("draw", uri, "circle", "--dry-run")
    assert "mine.arm3 is not one" in fails_in_one_line("jog", uri)
    works("fk", three_joints, "0", "0", "0")


def test_a_bug_is_one_line_and_robohal_v_shows_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from robohal.cli import drawing

    def broken(*args, **kwargs):
        raise AttributeError("'DHChain' object has no attribute 'l1'")

    monkeypatch.setattr(drawing, "plan_drawing", broken)
    quiet = run("draw", PLANAR, "circle", "--dry-run")
    assert quiet.exit_code == 1
    assert quiet.output.splitlines()[-1].startswith("robohal: error: unexpected AttributeError: 'DHChain' object")
    assert "a bug in robohal" in quiet.output
    verbose = CliRunner().invoke(main, ["-v", "draw", PLANAR, "circle", "--dry-run"])
    assert verbose.exit_code == 1 and "Traceback" in verbose.output and "in broken" in verbose.output
