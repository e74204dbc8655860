"""``robohal new-plugin NAME``: a new plugin distribution that passes its tests
out of the box (a model, a backend skeleton, the contract suite on ``sim``)."""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import InvalidArgument

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

PYPROJECT = '''\
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "robohal-{dist}"
version = "0.1.0"
description = "robohal plugin: {name} robots"
requires-python = ">=3.10"
dependencies = ["robohal"]

[project.optional-dependencies]
test = ["pytest>=8"]

[project.entry-points.robohal]
{name} = "robohal_{name}"

[tool.setuptools.packages.find]
where = ["src"]

[tool.pytest.ini_options]
addopts = ["--import-mode=importlib", "--hil-target", "sim://?model={name}.arm2&realtime=0"]
'''

INIT = '''\
"""robohal plugin for {name} robots.

This package is the plugin (entry point ``{name}`` in the ``robohal`` group). Its hooks return
records whose callables are dotted references, ``"package.module:attribute"``: robohal imports
``models`` and ``backend`` only when a model is built or a robot connected, so listing plugins
stays fast. Keep this module light.
"""

from __future__ import annotations

from robohal import BackendSpec, ModelSpec, hookimpl


@hookimpl
def robohal_models():
    return [ModelSpec("{name}.arm2", factory="robohal_{name}.models:arm2", dof=2, description="{name} two-link arm")]


@hookimpl
def robohal_backends():
    # A bundled simulator is two more modules, as in every robohal plugin: simulator.py, the program
    # (`python -m robohal_{name}.simulator`, first line robohal.sim.process.announce_ready(uri)), and
    # simulation.py, whose start_simulator(uri) calls robohal.sim.process.launch(...). Then add
    # simulator=SimulatorSpec(start="robohal_{name}.simulation:start_simulator", default_model="{name}.arm2",
    # program="robohal_{name}.simulator") and hil_targets=("{scheme}://sim?model={name}.arm2",);
    # hil_suite="robohal_{name}.hil" (a package of pytest modules) adds tests of its own to `robohal hil`.
    return [BackendSpec("{scheme}", factory="robohal_{name}.backend:{cls}Backend",
                        description="{name} controller (skeleton)")]
'''

MODELS = '''\
"""Robot models. Replace the planar arm with your robot's kinematics
(robohal.kinematics has OPW, DH chains, planar arms and wrappers)."""

from __future__ import annotations

import numpy as np

from robohal import JointLimits
from robohal.kinematics import PlanarTwoLink


def arm2(l1: float = 0.4, l2: float = 0.3) -> PlanarTwoLink:
    limits = JointLimits.from_degrees(lower=[-170, -150], upper=[170, 150], velocity=[120, 120])
    return PlanarTwoLink(l1, l2, limits)
'''

BACKEND = '''\
"""The hardware backend: fill in the four wire methods.

robohal.control.backend.Backend does the rest: the limit check of every setpoint before it
is sent, holding the measured position after connect/recover, running motions,
re-raising errors from background cycles. A thread that keeps the link alive between
motions (a heartbeat, a reader) is best started with robohal.control.backend.start_link_thread:
it holds the backend weakly, so a Robot dropped without close() still gets closed.
"""

from __future__ import annotations

from robohal.control.backend import Backend
from robohal.errors import ConnectionLost
from robohal.state import RobotState


class {cls}Backend(Backend):
    """``{scheme}://HOST:PORT?model={name}.arm2``"""

    checks = ("position", "velocity")

    def __init__(self, uri, model):
        super().__init__(uri, model, period=0.01)  # seconds per control cycle

    def _open(self) -> RobotState:
        raise ConnectionLost("{scheme}: connect is not written yet (robohal_{name}/backend.py)")

    def _close(self) -> None:
        pass

    def _send(self, q) -> None:
        raise ConnectionLost("{scheme}: sending setpoints is not written yet")

    def _receive(self, timeout) -> RobotState:
        raise ConnectionLost("{scheme}: receiving state is not written yet")
'''

TESTS = '''\
"""The model's own checks, and robohal's backend contract suite on the sim backend
(the target is set in pyproject.toml; give --hil-target to test real hardware)."""

import numpy as np

import robohal
from robohal.testing.contract import BackendContract


def test_model_round_trip():
    model = robohal.get_model("{name}.arm2")
    q = np.radians([20.0, 45.0])
    solutions = model.inverse(model.forward(q))
    assert any(np.allclose(s, q) for s in solutions)


class TestContract(BackendContract):
    pass
'''

README = '''\
# robohal-{dist}

```sh
pip install -e '.[test]'
robohal models | grep {name}
pytest
```
'''


def new_plugin(name: str, directory: str | Path = ".") -> Path:
    """Write ``robohal-NAME/`` under ``directory`` and return its path."""
    if not _NAME.match(name):
        raise InvalidArgument(f"plugin name {name!r} must be lower-case letters, digits and underscores, starting with a letter")
    root = Path(directory) / f"robohal-{name.replace('_', '-')}"
    if root.exists():
        raise InvalidArgument(f"{root} already exists")
    fields = {
        "name": name,
        "dist": name.replace("_", "-"),
        "scheme": name.replace("_", "-"),
        "cls": "".join(part.capitalize() for part in name.split("_")),
    }
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        f"src/robohal_{name}/__init__.py": INIT,
        f"src/robohal_{name}/models.py": MODELS,
        f"src/robohal_{name}/backend.py": BACKEND,
        "tests/test_plugin.py": TESTS,
    }
    for relative, template in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(**fields), encoding="utf-8")
    return root
