"""Records take their callables as objects or as lazy dotted references ("package.module:attribute"):
checked for their form when the record is made, imported only when first used."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap

import pytest
from robohal import BackendSpec, DemoSpec, ModelSpec, SimulatorSpec, ToolSpec, hookimpl
from robohal.errors import InvalidArgument, PluginError
from robohal.plugins.records import Reference
from robohal.plugins.registry import registry_with

LAZY_MODELS = """
from robohal.kinematics import PlanarTwoLink

class Arms:
    @staticmethod
    def planar(l1: float = 0.3, l2: float = 0.2):
        return PlanarTwoLink(l1, l2)

def planar(l1: float = 0.3, l2: float = 0.2):
    return PlanarTwoLink(l1, l2)

NOT_CALLABLE = 42
"""


@pytest.fixture
def lazy_module(tmp_path, monkeypatch) -> str:
    """A module on sys.path that nothing has imported yet; its name is unique per test."""
    name = f"robohal_lazy_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(LAZY_MODELS))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def plugin(models=(), backends=()):
    """A plugin object implementing both hooks."""

    class Plugin:
        @hookimpl
        def robohal_models(self):
            return list(models)

        @hookimpl
        def robohal_backends(self):
            return list(backends)

    return Plugin()


def test_a_reference_is_imported_only_when_first_used(lazy_module):
    spec = ModelSpec("acme.lazy", factory=f"{lazy_module}:planar", dof=2)
    backend = BackendSpec("acme-lazy", factory=f"{lazy_module}:planar",
                          simulator=SimulatorSpec(start=f"{lazy_module}:planar", default_model="acme.lazy",
                                                  program=lazy_module),
                          demo=DemoSpec("lazy", where=f"{lazy_module}:planar", task=f"{lazy_module}:planar"))
    registry = registry_with(("lazy", plugin(models=[spec], backends=[backend])))
    assert [m.name for m in registry.models()] == ["acme.lazy", "generic.planar2"]
    assert registry.backend_spec("acme-lazy").plugin == "lazy" and registry.plugins()
    assert lazy_module not in sys.modules  # listed, stamped with its plugin, not imported
    assert isinstance(spec.factory, Reference) and spec.factory == Reference(f"{lazy_module}:planar")
    model = registry.get_model("acme.lazy", l1=0.5)
    assert lazy_module in sys.modules and model.dof == 2
    assert registry.model_spec("acme.lazy").factory.load() is sys.modules[lazy_module].planar


def test_the_model_option_check_reads_the_referenced_signature(lazy_module):
    registry = registry_with(("lazy", plugin(models=[ModelSpec("acme.lazy", factory=f"{lazy_module}:Arms.planar",
                                                               dof=2)])))
    with pytest.raises(InvalidArgument, match=r"model 'acme.lazy' has no option 'reach'; its options: l1, l2"):
        registry.get_model("acme.lazy", reach=1.0)
    assert registry.get_model("acme.lazy", l2=0.1).dof == 2  # a dotted attribute: a class's function


@pytest.mark.parametrize("bad", ["robohal_lazy", "robohal_lazy.planar", "pkg:", ":planar", "pkg::planar",
                                 "pkg:a:b", "pkg.:planar", "pkg mod:planar", "pkg:planar()", "1pkg:planar"])
def test_a_reference_of_the_wrong_form_is_refused_naming_the_record(bad):
    with pytest.raises(PluginError) as model:
        ModelSpec("acme.bad", factory=bad, dof=2)
    assert "model 'acme.bad'" in str(model.value) and repr(bad) in str(model.value)
    assert "'package.module:attribute'" in str(model.value)
    with pytest.raises(PluginError, match=r"backend 'acme-bad': factory .*package\.module:attribute"):
        BackendSpec("acme-bad", factory=bad)
    with pytest.raises(PluginError, match=r"simulator 'acme.bad': start"):
        SimulatorSpec(start=bad, default_model="acme.bad")
    with pytest.raises(PluginError, match=r"demo 'bad': where"):
        DemoSpec("bad", where=bad, task="pkg.mod:task")
    with pytest.raises(PluginError, match=r"demo 'bad': task"):
        DemoSpec("bad", where="pkg.mod:where", task=bad)


def test_neither_a_callable_nor_a_string_is_refused():
    with pytest.raises(PluginError, match=r"model 'acme.bad': factory must be callable or a reference"):
        ModelSpec("acme.bad", factory=42, dof=2)


def test_a_simulator_program_is_a_module_name():
    assert SimulatorSpec(start="pkg.simulation:start", default_model="acme.arm", program="pkg.simulator").program \
        == "pkg.simulator"
    with pytest.raises(PluginError, match=r"simulator 'pkg simulator': program 'pkg simulator' must be a module name"):
        SimulatorSpec(start="pkg.simulation:start", default_model="acme.arm", program="pkg simulator")


def test_an_unimportable_module_is_a_clear_error_naming_the_reference(lazy_module):
    spec = ModelSpec("acme.gone", factory="robohal_no_such_package.models:arm", dof=2)
    registry = registry_with(("gone", plugin(models=[spec])))
    assert [m.name for m in registry.models()] == ["acme.gone", "generic.planar2"]  # listing is fine
    with pytest.raises(PluginError) as error:
        registry.get_model("acme.gone")
    assert str(error.value) == ("cannot import 'robohal_no_such_package.models:arm': ModuleNotFoundError:"
                                " No module named 'robohal_no_such_package'")
    with pytest.raises(PluginError, match=rf"cannot import '{lazy_module}:Arms.missing': .* has no attribute 'missing'"):
        Reference(f"{lazy_module}:Arms.missing").load()
    with pytest.raises(PluginError, match=rf"'{lazy_module}:NOT_CALLABLE' names 42, which cannot be called"):
        Reference(f"{lazy_module}:NOT_CALLABLE")()


def test_a_module_that_fails_while_it_loads_is_named_with_its_error(tmp_path, monkeypatch):
    (tmp_path / "robohal_broken_driver.py").write_text("raise RuntimeError('needs libfoo.so.3')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    backend = BackendSpec("acme-broken", factory="robohal_broken_driver:Driver")
    with pytest.raises(PluginError, match=r"cannot import 'robohal_broken_driver:Driver': RuntimeError: needs libfoo"):
        backend.factory("uri", "model")
    sys.modules.pop("robohal_broken_driver", None)


def test_a_record_copied_by_the_registry_keeps_its_reference():
    spec = ModelSpec("acme.arm", factory="pkg.models:arm", dof=2)
    stamped = dataclasses.replace(spec, plugin="acme")
    assert stamped.factory == spec.factory and stamped.factory.text == "pkg.models:arm"
    assert repr(stamped.factory) == "Reference('pkg.models:arm')"


LISTING = """
import sys
from robohal.cli.main import main

for command in (["plugins"], ["plugins", "--json"], ["models"], ["models", "--json"]):
    main(command, standalone_mode=False)
plugins = ("robohal_abb", "robohal_franka", "robohal_arduino_planar")
print("LOADED", *sorted(name for name in sys.modules if name.split(".")[0] in plugins))
"""


def test_listing_plugins_and_models_imports_no_referenced_module():
    done = subprocess.run([sys.executable, "-c", LISTING], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.strip().splitlines()[-1].split()[1:])
    assert {"robohal_abb", "robohal_franka", "robohal_arduino_planar"} <= loaded
    roles = {name.rsplit(".", 1)[-1] for name in loaded}
    assert not roles & {"backend", "control", "simulation", "simulator", "emulator", "demo", "wire"}, loaded


def test_tool_records_name_a_kind_and_a_lazy_factory():
    tool = ToolSpec("gripper", factory="robohal_acme.tools:hand_for")
    assert tool.factory == Reference("robohal_acme.tools:hand_for")  # not imported until a robot connects
    spec = BackendSpec("acme", factory="robohal_acme.backend:Acme", tools=[tool])
    assert spec.tools == (tool,)
    with pytest.raises(PluginError, match="tool kind 'vacuum' is not one of gripper, io"):
        ToolSpec("vacuum", factory="robohal_acme.tools:hand_for")
    with pytest.raises(PluginError, match="at most one tool of each kind"):
        BackendSpec("acme", factory="robohal_acme.backend:Acme", tools=[tool, tool])
    with pytest.raises(PluginError, match="tools must be ToolSpec records"):
        BackendSpec("acme", factory="robohal_acme.backend:Acme", tools=["gripper"])
