"""Model files: a TOML file and a URDF register a robot, no Python; found on
ROBOHAL_MODEL_PATH and in the user's config folder; their errors name the file."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import robohal
from robohal import ModelSpec
from robohal.errors import InvalidArgument, PluginConflictError, UnknownNameError
from robohal.kinematics import Tool, UrdfChain
from robohal.plugins.model_files import model_dirs, model_file_specs, read_model_file
from robohal.plugins.registry import Registry, registry_with, use_registry
from robohal_franka import models as franka_models

FR3_URDF = Path(franka_models.__file__).resolve().parent / "urdf" / "fr3.urdf"
MODEL = """\
name = "acme.arm7"
urdf = "arm7.urdf"
base_link = "link0"
tip_link = "link8"
acceleration = [15, 7.5, 10, 12.5, 15, 20, 20]
jerk = 5000
description = "ACME arm, an FR3 underneath"
"""


def model_folder(folder: Path, text: str = MODEL, urdf: Path = FR3_URDF, toml: str = "arm7.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(urdf, folder / "arm7.urdf")
    (folder / toml).write_text(text)
    return folder / toml


@pytest.fixture
def model_path(tmp_path, monkeypatch):
    """ROBOHAL_MODEL_PATH with one folder holding the model file, and no user config folder."""
    folder = tmp_path / "models"
    model_folder(folder)
    monkeypatch.setenv("ROBOHAL_MODEL_PATH", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return folder


def test_the_search_path_is_the_variable_then_the_user_config_folder(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    dirs = model_dirs({"ROBOHAL_MODEL_PATH": f"{first}{os.pathsep}{os.pathsep}{second}", "XDG_CONFIG_HOME": "/cfg"})
    assert dirs == [first, second, Path("/cfg/robohal/models")]
    assert model_dirs({})[-1] == Path.home() / ".config" / "robohal" / "models"


def test_a_model_file_registers_a_model_that_works_like_a_plugin_s(model_path):
    with use_registry(Registry.discover()) as registry:
        spec = registry.model_spec("acme.arm7")
        assert spec.source == str(model_path / "arm7.toml") and spec.plugin == "builtin" and spec.dof == 7
        assert spec.description == "ACME arm, an FR3 underneath"
        model = robohal.get_model("acme.arm7")
        assert isinstance(model, UrdfChain) and model.limits.acceleration.tolist() == [15, 7.5, 10, 12.5, 15, 20, 20]
        assert model.limits.jerk.tolist() == [5000] * 7
        q = np.array(franka_models.READY)
        assert np.abs(model.forward(q) - franka_models.fr3().forward(q)).max() < 1e-12
        with robohal.connect("sim://?model=acme.arm7") as robot:
            result = robot.move_joints(robot.q + 0.05 * np.sign(model.limits.centre - robot.q), speed=0.5)
            assert not result.stopped and np.abs(robot.q - robot.backend.commanded).max() < 1e-3


def test_the_user_config_folder_is_searched_and_a_tool_is_put_on_the_tip(tmp_path, monkeypatch):
    monkeypatch.delenv("ROBOHAL_MODEL_PATH", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    model_folder(tmp_path / "robohal" / "models", MODEL + 'tool = { xyz = [0, 0, 0.1], rpy = [0, 0, 0.5] }\n')
    spec = {s.name: s for s in model_file_specs()}["acme.arm7"]
    model = spec.factory()
    assert isinstance(model, Tool)
    q = np.array(franka_models.READY)
    tool = franka_models.fr3().forward(q) @ robohal.spatial.pose_from_xyz_rpy([0, 0, 0.1], [0, 0, 0.5])
    assert np.abs(model.forward(q) - tool).max() < 1e-12


def test_the_first_folder_on_the_path_wins_and_the_other_file_is_named(tmp_path, monkeypatch, caplog):
    first = model_folder(tmp_path / "first")
    second = model_folder(tmp_path / "second")
    environ = {"ROBOHAL_MODEL_PATH": f"{first.parent}{os.pathsep}{second.parent}", "XDG_CONFIG_HOME": str(tmp_path)}
    with caplog.at_level(logging.WARNING, logger="robohal"):
        specs = model_file_specs(environ)
    assert [s.source for s in specs] == [str(first)]
    assert f"{second}: model 'acme.arm7' is already registered by {first}" in caplog.text


def test_a_model_file_claiming_a_plugin_s_name_is_an_error_naming_the_file(model_path):
    (model_path / "arm7.toml").write_text(MODEL.replace("acme.arm7", "acme.taken"))
    taken = ModelSpec("acme.taken", factory=franka_models.fr3, dof=7)

    class Plugin:
        @robohal.hookimpl
        def robohal_models(self):
            return [taken]

    with pytest.raises(PluginConflictError, match=f"the model file {model_path / 'arm7.toml'} and plugin 'other'"):
        registry_with(("other", Plugin()))


BAD_FILES = {
    # the file's text -> the problem named after the file
    MODEL.replace('urdf = "arm7.urdf"', 'urdf = "gone.urdf"'): "URDF file {folder}/gone.urdf does not exist",
    MODEL.replace('tip_link = "link8"', 'tip_link = "tool0"'): "tip_link 'tool0' is not a link of arm7.urdf",
    MODEL.replace('base_link = "link0"', 'base_link = "link8"'): "no moving joint between 'link8' and 'link8'",
    MODEL.replace('base_link = "link0"', 'base_link = "link3"').replace('tip_link = "link8"', 'tip_link = "link1"'):
        "tip_link 'link1' does not hang below base_link 'link3'",
    MODEL.replace("jerk = 5000", "jrek = 5000"): "unknown key(s) jrek",
    MODEL.replace('name = "acme.arm7"\n', ""): "missing key(s) name",
    MODEL.replace('"acme.arm7"', '"Arm 7"'): "model name 'Arm 7' must be dotted lower-case",
    MODEL.replace("jerk = 5000", "jerk = [1, 2]"): "jerk must be one positive number or 7 (one per joint)",
    MODEL.replace("jerk = 5000", "jerk = -1"): "jerk must be one positive number or 7",
    MODEL + "tool = 3\n": "tool must be a table",
    MODEL + "name = 'twice'\n": "not valid TOML",
}


@pytest.mark.parametrize("text", list(BAD_FILES), ids=range(len(BAD_FILES)))
def test_a_bad_model_file_is_one_line_naming_the_file_and_the_problem(tmp_path, caplog, text):
    path = model_folder(tmp_path / "models", text)
    problem = BAD_FILES[text].format(folder=path.parent)
    with pytest.raises(InvalidArgument) as caught:
        read_model_file(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and problem in message and "\n" not in message, message
    # Discovery skips it with that line as a warning; the other files still register.
    model_folder(tmp_path / "models", MODEL.replace("acme.arm7", "acme.good"), toml="good.toml")
    with caplog.at_level(logging.WARNING, logger="robohal"):
        specs = model_file_specs({"ROBOHAL_MODEL_PATH": str(path.parent), "XDG_CONFIG_HOME": str(tmp_path)})
    assert [s.name for s in specs] == ["acme.good"]
    assert f"model file skipped: {message}" in caplog.text


def test_a_joint_without_limits_is_named_with_the_file_when_the_model_is_built(tmp_path, monkeypatch):
    urdf = tmp_path / "limitless.urdf"
    urdf.write_text(FR3_URDF.read_text().replace(
        '<limit lower="-2.9007" upper="2.9007" effort="87" velocity="2.62"/>', '<limit effort="87" velocity="2.62"/>'))
    path = model_folder(tmp_path / "models", urdf=urdf)
    monkeypatch.setenv("ROBOHAL_MODEL_PATH", str(path.parent))
    with use_registry(Registry.discover()):
        with pytest.raises(InvalidArgument) as caught:
            robohal.get_model("acme.arm7")
    message = str(caught.value)
    assert message.startswith(f"{path}: {path.parent / 'arm7.urdf'}: ") and "\n" not in message
    assert "revolute joint 'joint3' has no lower and upper <limit>" in message
    with use_registry(Registry.discover()), pytest.raises(UnknownNameError):
        robohal.get_model("acme.nothing")
