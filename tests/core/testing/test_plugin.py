"""The HIL pytest plugin, run for real with pytester."""

import json
import xml.etree.ElementTree as ET

SUITE = """
import pytest
from robohal.testing.contract import BackendContract

class TestContract(BackendContract):
    pass

@pytest.mark.hil_backend("no-such-scheme")
def test_family_suite_for_another_backend(hil_target):
    pass

@pytest.mark.hardware_only
def test_only_on_real_hardware(robot):
    pass

@pytest.mark.needs_feature("fault-injection")
def test_needs_fault_injection(robot):
    robot.backend.inject_fault("x")
"""


def test_contract_suite_passes_on_sim_and_markers_skip_with_reasons(pytester):
    pytester.makepyfile(test_hil=SUITE)
    result = pytester.runpytest_subprocess(
        "--hil-target", "sim://?model=generic.planar2&realtime=0", "-p", "no:cacheprovider", "-rs",
        "--junitxml=junit.xml",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 15, result.stdout.str()
    assert outcomes.get("skipped") == 2 + 4  # the markers' two, and the tool part (no gripper, no I/O here)
    result.stdout.fnmatch_lines(["*no HIL target for no-such-scheme*"])
    result.stdout.fnmatch_lines(["*needs real hardware*"])
    tree = ET.parse(pytester.path / "junit.xml")
    targets = {p.get("value") for p in tree.iter("property") if p.get("name") == "hil_target"}
    assert targets == {"sim://?model=generic.planar2&realtime=0"}


def test_default_targets_are_the_bundled_simulators_not_an_all_skip(pytester):
    pytester.makepyfile(test_default="def test_target(hil_target):\n    assert hil_target.uri.scheme\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*test_target[[]sim://?model=generic.planar2[]]*"])


def test_a_broken_backend_fails_the_contract(pytester):
    """The suite can fail: a backend that ignores setpoints does not pass."""
    pytester.makeconftest(
        """
import robohal
from robohal import BackendSpec, hookimpl
from robohal.plugins.registry import Registry, set_default_registry, plugin_manager
from robohal.sim.backend import SimBackend

class LazyBackend(SimBackend):
    def _send(self, q):
        pass  # never moves

class LazyPlugin:
    @hookimpl
    def robohal_backends(self):
        return [BackendSpec("lazy", factory=LazyBackend)]

def pytest_configure(config):
    pm, failures, origins = plugin_manager(plugins=[("lazy", LazyPlugin())])
    set_default_registry(Registry(pm, failures=failures, origins=origins))
"""
    )
    pytester.makepyfile(test_lazy=SUITE)
    result = pytester.runpytest_subprocess("--hil-target", "lazy://?model=generic.planar2&realtime=0", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1
    result.stdout.fnmatch_lines(["*test_small_joint_move_reaches_target*"])


SAFETY_SUITE = """
import numpy as np
import pytest
from robohal.errors import LimitViolation

def test_the_cell_settings_reach_every_robot(robot, hil_target):
    assert robot.speed == 0.5 and hil_target.safety.workspace is not None
    assert len(robot.backend.guard.fences) == 2
    with hil_target.connect(realtime="0") as other:  # extra URI parameters: held alike
        assert other.speed == 0.5 and len(other.backend.guard.fences) == 2
    with pytest.raises(LimitViolation, match="workspace box"):
        robot.move_joints(robot.q + np.radians([60.0, 0.0]), speed=0.5)
"""


def test_speed_and_workspace_options_hold_the_robots_and_identities_are_reported(pytester):
    pytester.makepyfile(test_safety=SAFETY_SUITE)
    result = pytester.runpytest_subprocess(
        "--hil-target", "sim://?model=generic.planar2&realtime=0", "-p", "no:cacheprovider",
        "--hil-speed", "0.5", "--hil-workspace=0.3,-0.2,-0.01,0.7,0.2,0.01", "--hil-report", "report")
    assert result.parseoutcomes().get("passed") == 1, result.stdout.str()
    targets = json.loads((pytester.path / "report" / "targets.json").read_text())
    assert targets["sim://?model=generic.planar2&realtime=0"]["speed"] == 0.5
    assert targets["sim://?model=generic.planar2&realtime=0"]["simulated"] is True


def test_a_box_the_suites_would_leave_stops_the_target_before_it_moves(pytester):
    pytester.makepyfile(test_safety=SAFETY_SUITE)
    result = pytester.runpytest_subprocess(
        "--hil-target", "sim://?model=generic.planar2&realtime=0", "-p", "no:cacheprovider",
        "--hil-workspace=0.54,-0.01,-0.01,0.56,0.01,0.01")
    assert result.parseoutcomes().get("errors") == 1
    result.stdout.fnmatch_lines(["*up to 10 deg per joint from the start*outside the workspace box*"])


def test_a_bad_speed_or_box_is_a_usage_error(pytester):
    pytester.makepyfile(test_safety=SAFETY_SUITE)
    result = pytester.runpytest_subprocess("--hil-speed", "2", "-p", "no:cacheprovider")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--hil-speed/--hil-workspace: speed factor must be a fraction in (0, 1]*"])
    result = pytester.runpytest_subprocess("--hil-workspace=1,2,3", "-p", "no:cacheprovider")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*six numbers*"])
