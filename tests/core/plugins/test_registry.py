"""Plugin discovery and the registry: records, conflicts, broken plugins, switches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import robohal
from robohal import BackendSpec, ModelSpec, hookimpl
from robohal.errors import PluginConflictError, PluginError, UnknownNameError
from robohal.kinematics import PlanarTwoLink
from robohal.plugins.registry import Registry, registry_with, use_registry
from robohal.sim.backend import SimBackend


def make_plugin(models=(), backends=()):
    """A plugin object implementing both hooks."""

    class Plugin:
        @hookimpl
        def robohal_models(self):
            return list(models)

        @hookimpl
        def robohal_backends(self):
            return list(backends)

    return Plugin()


def arm(name: str, dof: int = 2) -> ModelSpec:
    return ModelSpec(name, factory=lambda: PlanarTwoLink(0.2, 0.1), dof=dof, description=f"{name} arm")


def test_records_are_collected_and_stamped_with_their_plugin():
    registry = registry_with(
        ("alpha", make_plugin(models=[arm("acme.one")])),
        ("beta", make_plugin(models=[arm("acme.two")], backends=[BackendSpec("acme-bus", factory=SimBackend)])),
    )
    assert [m.name for m in registry.models()] == ["acme.one", "acme.two", "generic.planar2"]  # with the builtin's
    assert registry.model_spec("acme.one").plugin == "alpha"
    assert registry.model_spec("ACME.Two").plugin == "beta"  # names are normalised
    assert registry.backend_spec("acme-bus").plugin == "beta"
    info = {p.name: p for p in registry.plugins()}
    assert info["beta"].models == ("acme.two",) and info["beta"].backends == ("acme-bus",)


def test_two_plugins_claiming_one_model_name_raise_naming_both():
    with pytest.raises(PluginConflictError) as conflict:
        registry_with(
            ("first_plugin", make_plugin(models=[arm("acme.arm")])),
            ("second_plugin", make_plugin(models=[arm("acme.arm")])),
        )
    message = str(conflict.value)
    assert "acme.arm" in message and "first_plugin" in message and "second_plugin" in message


def test_two_plugins_claiming_one_scheme_raise_naming_both():
    with pytest.raises(PluginConflictError) as conflict:
        registry_with(
            ("left", make_plugin(backends=[BackendSpec("bus", factory=SimBackend)])),
            ("right", make_plugin(backends=[BackendSpec("bus", factory=SimBackend)])),
        )
    assert "'bus'" in str(conflict.value) and "left" in str(conflict.value) and "right" in str(conflict.value)


def test_a_hook_returning_the_wrong_type_is_a_plugin_error():
    class Bad:
        @hookimpl
        def robohal_models(self):
            return ["not a record"]

    with pytest.raises(PluginError, match="not a ModelSpec"):
        registry_with(("bad", Bad()))


def test_a_hook_that_raises_is_reported_and_the_others_keep_working():
    class Broken:
        @hookimpl
        def robohal_models(self):
            raise RuntimeError("database on fire")

    registry = registry_with(("broken", Broken()), ("fine", make_plugin(models=[arm("acme.ok")])))
    assert [m.name for m in registry.models()] == ["acme.ok", "generic.planar2"]  # the builtin's too
    assert "database on fire" in registry.failures["broken"].error


@pytest.mark.parametrize("bad", ["Arm", "acme", "acme..x", "acme.arm!", " .x"])
def test_model_names_must_be_dotted_lower_case(bad):
    with pytest.raises(PluginError):
        ModelSpec(bad, factory=lambda: None, dof=2)


def test_model_factory_must_build_the_declared_dof():
    registry = registry_with(("liar", make_plugin(models=[arm("acme.liar", dof=6)])))
    with pytest.raises(PluginError, match="declared with 6 joints"):
        registry.get_model("acme.liar")


def test_unknown_model_suggests_close_names():
    registry = registry_with(("p", make_plugin(models=[arm("acme.arm6"), arm("acme.arm7")])))
    with pytest.raises(UnknownNameError) as unknown:
        registry.get_model("acme.arm8")
    assert "acme.arm6" in str(unknown.value)


def test_an_unknown_scheme_lists_the_schemes_and_a_web_address_is_explained():
    registry = registry_with(("p", make_plugin(backends=[BackendSpec("acme-bus", factory=SimBackend)])))
    with pytest.raises(UnknownNameError, match=r"^unknown backend scheme 'acme-bux'; did you mean acme-bus\?"
                                               r" \(the schemes: acme-bus, sim\)$"):
        registry.backend_spec("acme-bux")
    with pytest.raises(UnknownNameError, match=r"'https' \(a robot URI starts with its backend's scheme, one of"
                                               r" acme-bus, sim; a controller's web address goes in that URI's"):
        registry.backend_spec("https")


def test_default_registry_is_replaceable():
    mine = registry_with(("p", make_plugin(models=[arm("acme.only")])))
    with use_registry(mine):
        assert [m.name for m in robohal.models()] == ["acme.only", "generic.planar2"]  # and the builtin's own
        q = robohal.get_model("acme.only").inverse_xy([0.25, 0.0])
        assert np.allclose(robohal.get_model("acme.only").position(q[0]), [0.25, 0.0])
    assert "acme.only" not in [m.name for m in robohal.models()]


def test_builtin_is_registered_in_code_in_every_registry():
    import importlib.metadata

    registry = Registry.discover()
    assert registry.model_spec("generic.planar2").plugin == "builtin"
    assert registry.backend_spec("sim").plugin == "builtin"
    assert {p.name for p in registry.plugins()} >= {"builtin", "abb", "franka", "arduino_planar"}
    assert [(p.name, p.distribution) for p in registry.plugins() if p.name == "builtin"] == [("builtin", "robohal")]
    assert "builtin" not in {ep.name for ep in importlib.metadata.entry_points(group="robohal")}  # no entry point
    bare = registry_with()  # no entry points at all: the builtin is still there
    assert [p.name for p in bare.plugins()] == ["builtin"]
    assert [m.name for m in bare.models()] == ["generic.planar2"] and [b.scheme for b in bare.backends()] == ["sim"]


def test_the_builtin_cannot_be_disabled_and_says_so(caplog):
    with caplog.at_level("WARNING", logger="robohal"):
        registry = registry_with(("p", make_plugin(models=[arm("acme.one")])), disabled=["builtin", "p"])
    assert [p.name for p in registry.plugins()] == ["builtin"]  # p hidden, builtin kept
    assert registry.backend_spec("sim").plugin == "builtin"
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and "'builtin'" in warned[0] and "cannot be disabled" in warned[0]


def test_a_plugin_claiming_the_builtin_s_sim_scheme_always_conflicts():
    with pytest.raises(PluginConflictError) as conflict:
        registry_with(("impostor", make_plugin(backends=[BackendSpec("sim", factory=SimBackend)])))
    message = str(conflict.value)
    assert "'sim'" in message and "builtin" in message and "impostor" in message


def run_cli(*args: str, env: dict[str, str] | None = None, extra_path: str | None = None) -> subprocess.CompletedProcess:
    environ = {**os.environ, **(env or {})}
    if extra_path:
        environ["PYTHONPATH"] = extra_path + os.pathsep + environ.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "robohal.cli.main", *args], capture_output=True, text=True, env=environ, timeout=120)


def test_disabling_a_plugin_by_name_hides_it():
    shown = run_cli("models", "--json")
    hidden = run_cli("models", "--json", env={"ROBOHAL_DISABLE_PLUGINS": "arduino_planar, abb"})
    assert shown.returncode == 0 and hidden.returncode == 0, hidden.stderr
    assert "arduino.planar2" in shown.stdout and "abb.irb1410" in shown.stdout
    assert "arduino.planar2" not in hidden.stdout and "abb.irb1410" not in hidden.stdout
    assert "franka.fr3" in hidden.stdout and "generic.planar2" in hidden.stdout
    plugins = json.loads(run_cli("plugins", "--json", env={"ROBOHAL_DISABLE_PLUGINS": "abb"}).stdout)
    assert {p["name"] for p in plugins["plugins"]} >= {"builtin", "franka"} and "abb" not in str(plugins["plugins"])


def test_naming_the_builtin_in_the_switch_only_warns():
    kept = run_cli("models", "--json", env={"ROBOHAL_DISABLE_PLUGINS": "arduino_planar, builtin"})
    assert kept.returncode == 0, kept.stderr
    assert "generic.planar2" in kept.stdout and "arduino.planar2" not in kept.stdout
    assert "ROBOHAL_DISABLE_PLUGINS names 'builtin'" in kept.stderr and "cannot be disabled" in kept.stderr
    plugins = run_cli("plugins", "--json", env={"ROBOHAL_DISABLE_PLUGINS": "builtin"})
    listed = json.loads(plugins.stdout)
    assert any(p["name"] == "builtin" and p["backends"] == ["sim"] for p in listed["plugins"])
    assert listed["disabled_but_not_installed"] == []  # it is there: the warning says why it stays


def test_a_disabled_name_that_matches_no_plugin_is_reported():
    listed = run_cli("plugins", env={"ROBOHAL_DISABLE_PLUGINS": "frnka, abb"})
    assert listed.returncode == 0, listed.stderr
    assert "ROBOHAL_DISABLE_PLUGINS names no installed plugin: frnka" in listed.stdout
    as_json = run_cli("plugins", "--json", env={"ROBOHAL_DISABLE_PLUGINS": "frnka, abb"})
    assert json.loads(as_json.stdout)["disabled_but_not_installed"] == ["frnka"]


def test_trace_switch_prints_each_hook_call():
    traced = run_cli("models", env={"ROBOHAL_TRACE_PLUGINS": "1"})
    assert traced.returncode == 0
    assert "robohal_models() [builtin] -> 1 record(s)" in traced.stderr
    quiet = run_cli("models", env={"ROBOHAL_TRACE_PLUGINS": "0"})
    assert "robohal_models()" not in quiet.stderr


def write_distribution(root: Path, dist: str, entry_points: str, modules: dict[str, str]) -> None:
    """An installed-looking distribution: a .dist-info with entry points, plus modules."""
    info = root / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    for name, source in modules.items():
        (root / f"{name}.py").write_text(textwrap.dedent(source))


def test_a_plugin_that_fails_to_import_is_named_and_the_others_work(tmp_path):
    write_distribution(
        tmp_path, "broken_dist", "[robohal]\nbroken = broken_robohal_plugin\n",
        {"broken_robohal_plugin": "raise ImportError('needs libfoo.so.3')\n"},
    )
    result = run_cli("plugins", "--json", extra_path=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "broken" in result.stdout and "needs libfoo.so.3" in result.stdout
    models = run_cli("models", extra_path=str(tmp_path))
    assert models.returncode == 0 and "generic.planar2" in models.stdout


def test_a_conflicting_installed_plugin_produces_the_error_naming_both(tmp_path):
    write_distribution(
        tmp_path, "copycat_dist", "[robohal]\ncopycat = copycat_robohal_plugin\n",
        {"copycat_robohal_plugin": """
            from robohal import ModelSpec, hookimpl
            from robohal.plugins.builtin import generic_planar2

            @hookimpl
            def robohal_models():
                return [ModelSpec("generic.planar2", factory=generic_planar2, dof=2)]
        """},
    )
    result = run_cli("models", extra_path=str(tmp_path))
    assert result.returncode == 2
    assert "generic.planar2" in result.stderr and "builtin" in result.stderr and "copycat" in result.stderr
    assert "Traceback" not in result.stderr


def test_plugins_listing_is_lazy_about_models():
    calls = SimpleNamespace(n=0)

    def factory():
        calls.n += 1
        return PlanarTwoLink(0.2, 0.1)

    registry = registry_with(("p", make_plugin(models=[ModelSpec("acme.lazy", factory=factory, dof=2)])))
    registry.models()
    assert calls.n == 0
    registry.get_model("acme.lazy")
    assert calls.n == 1
