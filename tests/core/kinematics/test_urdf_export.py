"""urdf_text: a kinematic URDF of any serial model, read back by UrdfChain (and by
pinocchio) with the model's forward kinematics."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from robohal.errors import InvalidArgument
from robohal.kinematics import DHChain, Kinematics, Parallelogram, PlanarTwoLink, Tool, UrdfChain, urdf_text
from robohal.kinematics.urdf_export import chain_of
from robohal.plugins.registry import default_registry

ROOT = Path(__file__).resolve().parents[3]


def example_kuka() -> Kinematics:
    """The example plugin's model, from its source (the plugin need not be installed)."""
    path = ROOT / "examples" / "robohal-example-kuka" / "src" / "robohal_example_kuka" / "models.py"
    spec = importlib.util.spec_from_file_location("example_kuka_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kr6_r700_sixx()


def read_back(tmp_path: Path, model: Kinematics, name: str) -> UrdfChain:
    path = tmp_path / f"{name}.urdf"
    path.write_text(urdf_text(model, name))
    return UrdfChain.from_urdf(path, "base_link", "flange")


def joints_of(model: Kinematics, count: int = 100) -> np.ndarray:
    lower = np.where(np.isfinite(model.limits.lower), model.limits.lower, -np.pi)
    upper = np.where(np.isfinite(model.limits.upper), model.limits.upper, np.pi)
    return np.random.default_rng(7).uniform(lower, upper, (count, model.dof))


def geometric(model: Kinematics, q: np.ndarray) -> np.ndarray:
    """The URDF's joints for the model's: a parallelogram's coupled joint is geometric there."""
    if isinstance(model, Parallelogram):
        q = q.copy()
        q[:, model.coupled] -= model.scaling * q[:, model.driven]
    return q


MODELS = {
    "planar": PlanarTwoLink(0.3, 0.25),
    "classic_dh": DHChain([0.1, 0.4, 0.05], [0.3, 0.0, 0.2], [np.pi / 2, 0.0, -np.pi / 2], [0.1, -0.2, 0.3]),
    "tool": Tool(DHChain([0.0, 0.3], [0.2, 0.0], [np.pi / 2, 0.0]), [[0, -1, 0, 0.01], [1, 0, 0, 0.02],
                                                                  [0, 0, 1, 0.1], [0, 0, 0, 1]]),
}


@pytest.mark.parametrize("name", [*MODELS, "example_kuka"])
def test_a_written_urdf_reads_back_with_the_model_s_kinematics(tmp_path, name):
    model = example_kuka() if name == "example_kuka" else MODELS[name]
    chain = read_back(tmp_path, model, name)
    q = joints_of(model)
    assert np.abs(chain.forward(q) - model.forward(q)).max() < 1e-12
    assert np.abs(chain.jacobian(q) - model.jacobian(q)).max() < 1e-12
    assert np.allclose(chain.limits.lower, model.limits.lower) and np.allclose(chain.limits.velocity, model.limits.velocity)


def test_every_registered_model_round_trips(tmp_path):
    registry = default_registry()
    names = [spec.name for spec in registry.models()]
    assert {"abb.irb1410", "franka.fr3", "generic.planar2"} <= set(names)
    for name in names:
        model = registry.get_model(name)
        if getattr(model, "elbow_from_horizontal", False):  # the MeArm's parallel linkage: refused, saying so
            with pytest.raises(InvalidArgument, match="parallel linkage"):
                chain_of(model)
            continue
        chain = read_back(tmp_path, model, name)
        q = joints_of(model)
        assert np.abs(chain.forward(geometric(model, q)) - model.forward(q)).max() < 1e-12, name


def test_a_parallelogram_is_written_in_its_geometric_joints_and_says_so():
    model = default_registry().get_model("abb.irb1410")
    text = urdf_text(model, "abb.irb1410")
    assert "joint3 here is the linkage's geometric angle: the model's joint 3 minus 1 x its joint 2" in text
    chain, note = chain_of(model)
    assert note and np.allclose(chain.limits.upper, model.robot.limits.upper)  # the geometric ranges


def test_other_tools_read_it_too(tmp_path):
    pin = pytest.importorskip("pinocchio", reason="pinocchio (PyPI pin) is a test dependency: core[test]")
    model = default_registry().get_model("franka.panda")
    path = tmp_path / "panda.urdf"
    path.write_text(urdf_text(model, "franka.panda"))
    reference = pin.buildModelFromUrdf(str(path))
    data = reference.createData()
    for q in joints_of(model, 10):
        pin.framesForwardKinematics(reference, data, q)
        assert np.abs(data.oMf[reference.getFrameId("flange")].homogeneous - model.forward(q)).max() < 1e-12


def test_a_model_that_is_no_chain_of_single_joints_is_refused():
    class Squared(PlanarTwoLink):  # the elbow turns by q2^2: no fixed axis does that
        def forward(self, q):
            q = np.asarray(q, dtype=np.float64).copy()
            q[..., 1] = q[..., 1] ** 2
            return super().forward(q)

    with pytest.raises(InvalidArgument, match="not a serial chain of single joints"):
        urdf_text(Squared(0.3, 0.2), "squared")


def test_names_are_escaped_and_numbers_short(tmp_path):
    text = urdf_text(MODELS["planar"], 'a"b<c')
    assert '<robot name="a&quot;b&lt;c">' in text
    assert 'xyz="0.3 0 0"' in text  # no 0.30000000000000004 from round-off
