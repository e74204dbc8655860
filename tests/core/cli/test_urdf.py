"""`robohal urdf MODEL` round-trips every registered model; `robohal models`, `fk`
and `ik` work on a model file's model and name its file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from robohal.cli.main import main
from robohal.kinematics import Parallelogram, UrdfChain
from robohal.plugins.registry import Registry, default_registry, use_registry
from robohal_franka import models as franka_models

FR3_URDF = Path(franka_models.__file__).resolve().parent / "urdf" / "fr3.urdf"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_robohal_urdf_round_trips_every_registered_model(tmp_path):
    registry = default_registry()
    for spec in registry.models():
        result = invoke("urdf", spec.name)
        if getattr(registry.get_model(spec.name), "elbow_from_horizontal", False):  # the MeArm's parallel linkage
            assert result.exit_code == 2 and "parallel linkage" in result.stderr, result.output
            continue
        assert result.exit_code == 0, result.output
        path = tmp_path / f"{spec.name}.urdf"
        path.write_text(result.stdout)
        chain = UrdfChain.from_urdf(path, "base_link", "flange")
        model = registry.get_model(spec.name)
        lower = np.where(np.isfinite(model.limits.lower), model.limits.lower, -np.pi)
        upper = np.where(np.isfinite(model.limits.upper), model.limits.upper, np.pi)
        q = np.random.default_rng(11).uniform(lower, upper, (50, model.dof))
        urdf_q = q.copy()
        if isinstance(model, Parallelogram):  # written in its geometric joints, as its stderr note says
            urdf_q[:, model.coupled] -= model.scaling * q[:, model.driven]
            assert "couples joints" in result.stderr
        assert np.abs(chain.forward(urdf_q) - model.forward(q)).max() < 1e-12, spec.name


def test_robohal_urdf_of_an_unknown_model_is_one_line():
    result = invoke("urdf", "acme.nothing")
    assert result.exit_code == 2 and "robohal: error:" in result.stderr and "acme.nothing" in result.stderr


@pytest.fixture
def model_file(tmp_path, monkeypatch):
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(FR3_URDF, folder / "fr3.urdf")
    path = folder / "mine.toml"
    path.write_text('name = "mine.fr3"\nurdf = "fr3.urdf"\nbase_link = "link0"\ntip_link = "link8"\n'
                    "acceleration = 10\njerk = 5000\n")
    monkeypatch.setenv("ROBOHAL_MODEL_PATH", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with use_registry(Registry.discover()):
        yield path


def test_models_lists_a_model_file_with_its_file(model_file):
    listed = {m["name"]: m for m in json.loads(invoke("models", "--json").stdout)}
    assert listed["mine.fr3"]["source"] == str(model_file) and listed["mine.fr3"]["dof"] == 7
    assert listed["franka.fr3"]["source"] is None
    table = invoke("models").stdout
    assert "mine.fr3" in table and "mine.toml" in table


def test_fk_ik_and_urdf_work_on_a_model_file_s_model(model_file):
    q = [str(v) for v in franka_models.READY]
    mine = json.loads(invoke("fk", "mine.fr3", *q, "--json").stdout)
    theirs = json.loads(invoke("fk", "franka.fr3", *q, "--json").stdout)
    assert np.abs(np.array(mine["matrix"]) - np.array(theirs["matrix"])).max() < 1e-12
    x, y, z = mine["xyz_m"]
    result = invoke("ik", "mine.fr3", "--xyz", str(x), str(y), str(z), "--quat", *map(str, mine["quat_wxyz"]), "--json")
    assert result.exit_code == 0, result.output
    solution = json.loads(result.stdout)["solutions"][0]["rad"]
    assert np.abs(franka_models.fr3().forward(solution) - np.array(theirs["matrix"])).max() < 1e-6
    assert invoke("urdf", "mine.fr3").stdout.startswith('<?xml version="1.0"?>')
