"""A URDF's visuals in the view: which URDF draws which model, where its meshes stand, and
the page drawing them (Debian's chromium, headless, through Playwright).

The arm here is written for the test: three joints, a box, a cylinder and one STL mesh made
by trimesh at test time, registered as a model file (robohal builds a UrdfChain from it).
"""

from __future__ import annotations

import importlib.metadata
import re
import textwrap

import numpy as np
import pytest
import robohal
from robohal import InvalidArgument, spatial
from robohal.plugins.registry import Registry, use_registry
from robohal.view import serve
from robohal.view.body import UrdfBody, find_visuals

LINKS = textwrap.dedent("""\
    <?xml version="1.0"?>
    <robot name="arm3">
      <material name="steel"><color rgba="0.55 0.6 0.7 1"/></material>
      <material name="orange"><color rgba="0.95 0.5 0.1 1"/></material>
      <link name="world"/>
      <joint name="mount" type="fixed">
        <parent link="world"/><child link="base"/><origin xyz="0.3 -0.2 0.05" rpy="0 0 0.5"/>
      </joint>
      <link name="base">
        <visual><origin xyz="0 0 0.05"/><geometry><box size="0.2 0.2 0.1"/></geometry>
          <material name="steel"/></visual>
      </link>
      <joint name="turn" type="revolute">
        <parent link="base"/><child link="upper"/><origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>
        <limit lower="-2.5" upper="2.5" velocity="2" effort="10"/>
      </joint>
      <link name="upper">
        <visual><origin xyz="0 0 0.15"/><geometry><cylinder radius="0.05" length="0.3"/></geometry>
          <material name="orange"/></visual>
      </link>
      <joint name="shoulder" type="revolute">
        <parent link="upper"/><child link="lower"/><origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>
        <limit lower="-2.5" upper="2.5" velocity="2" effort="10"/>
      </joint>
      <link name="lower">
        <visual><origin xyz="0 0 0.15"/><geometry><box size="0.06 0.06 0.3"/></geometry>
          <material name="steel"/></visual>
      </link>
      <joint name="elbow" type="revolute">
        <parent link="lower"/><child link="hand"/><origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>
        <limit lower="-2.5" upper="2.5" velocity="2" effort="10"/>
      </joint>
      <link name="hand">
        <visual><geometry><mesh filename="hand.stl"/></geometry><material name="orange"/></visual>
      </link>
      <joint name="flange" type="fixed">
        <parent link="hand"/><child link="tip"/><origin xyz="0 0 0.12"/>
      </joint>
      <link name="tip"/>
    </robot>
""")
MODEL = ('name = "{name}"\nurdf = "{urdf}"\nbase_link = "base"\ntip_link = "tip"\n'
         "acceleration = 10\njerk = 5000\n")
START = np.array([0.3, 0.5, 0.8])
MIN_ORANGE = 1000  # pixels: the cylinder and the cone cover several thousand


@pytest.fixture
def models(tmp_path, monkeypatch):
    """Three model files of the same arm: ``test.arm3`` drawn from its visuals, ``test.bare3``
    from a copy with them taken out, ``test.tool3`` with a tool on the tip."""
    trimesh = pytest.importorskip("trimesh")
    folder = tmp_path / "models"
    folder.mkdir()
    trimesh.creation.cone(radius=0.05, height=0.12).export(folder / "hand.stl")
    (folder / "arm3.urdf").write_text(LINKS)
    (folder / "bare3.urdf").write_text(re.sub(r"\s*<visual>.*?</visual>", "", LINKS, flags=re.S))
    (folder / "arm3.toml").write_text(MODEL.format(name="test.arm3", urdf="arm3.urdf"))
    (folder / "bare3.toml").write_text(MODEL.format(name="test.bare3", urdf="bare3.urdf"))
    (folder / "tool3.toml").write_text(MODEL.format(name="test.tool3", urdf="arm3.urdf")
                                       + "tool = { xyz = [0, 0, 0.05], rpy = [0, 0.3, 0] }\n")
    monkeypatch.setenv("ROBOHAL_MODEL_PATH", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with use_registry(Registry.discover()):
        yield folder


def test_a_model_file_s_urdf_draws_it_joint_for_joint(models):
    visuals = find_visuals(robohal.get_model("test.arm3"))
    assert visuals.path == models / "arm3.urdf" and visuals.base == "base"
    assert visuals.joints == ("turn", "shoulder", "elbow")
    assert find_visuals(robohal.get_model("test.tool3")).joints == visuals.joints  # a tool: the same arm


def test_a_urdf_without_visuals_leaves_the_stick_figure(models):
    assert find_visuals(robohal.get_model("test.bare3")) is None
    assert find_visuals(robohal.get_model("franka.fr3")) is None  # its URDF is kinematic only
    with pytest.raises(InvalidArgument, match="no visual geometry"):
        find_visuals(robohal.get_model("test.arm3"), models / "bare3.urdf")


def test_a_named_urdf_must_follow_the_model(models):
    with pytest.raises(InvalidArgument, match="no link of this URDF follows the model's flange"):
        find_visuals(robohal.get_model("generic.planar2"), models / "arm3.urdf")
    with pytest.raises(InvalidArgument, match="no such URDF file"):
        find_visuals(robohal.get_model("test.arm3"), models / "missing.urdf")


def test_the_meshes_stand_where_the_model_puts_its_links(models, port):
    viser = pytest.importorskip("viser")
    model = robohal.get_model("test.arm3")
    visuals = find_visuals(model)
    offset = np.array([0.0, 1.5, 0.0])
    server = viser.ViserServer(host="127.0.0.1", port=port, verbose=False)
    try:
        body = UrdfBody(server, "/arm", visuals, visuals.load(), offset=offset)
        root = body.root  # the URDF's root frame in the scene
        place = spatial.pose_from_xyz_quat(root.position, root.wxyz)
        for q in (START, -START, np.zeros(3)):
            body.show(q)
            tip = place @ body.urdf.get_transform("tip", "world")
            expected = model.forward(q)
            expected[:3, 3] += offset
            np.testing.assert_allclose(tip, expected, atol=1e-6)  # the scene keeps float32
        body.remove()
    finally:
        server.stop()


@pytest.mark.skipif(not any(d.metadata["Name"] == "example-robot-data" for d in importlib.metadata.distributions()),
                    reason="the Panda's meshes come with example-robot-data (pip install example-robot-data pycollada)")
def test_the_installed_panda_description_draws_the_panda_and_not_the_fr3():
    visuals = find_visuals(robohal.get_model("franka.panda"))
    assert visuals.joints == tuple(f"panda_joint{i}" for i in range(1, 8))
    assert find_visuals(robohal.get_model("franka.panda", hand=True)).joints == visuals.joints
    assert find_visuals(robohal.get_model("franka.fr3")) is None  # the same kinematics, other limits


def orange(page, shot) -> int:
    """Pixels of the arm's orange parts (the cylinder and the STL cone): no part of a stick
    figure, the ground or the page's controls has that colour (a watching page has no gizmo)."""
    r, g, b = np.moveaxis(page.robots_part(shot), -1, 0)
    return int(((r > 150) & (r - b > 100) & (g > 0.35 * r) & (g < 0.8 * r)).sum())


def test_the_page_draws_the_urdf_s_meshes_and_moves_them(models, page, port, wait_for):
    with robohal.connect("sim://?model=test.arm3") as robot, serve(robot, port=port, watch=True) as view:
        robot.move_joints(START, speed=1.0)
        page.open(view.url)
        wait_for(lambda: orange(page, page.shot()) > MIN_ORANGE, "the meshes to be drawn")
        before = page.settled()
        robot.move_joints(START + np.array([0.8, -0.4, 0.6]), speed=1.0)
        moved = page.changes_from(before, "the meshes to follow the joints")
        assert orange(page, moved) > MIN_ORANGE
        page.page.goto("about:blank")  # leave before the server stops: a page that lost it logs errors
    assert page.errors == []


def test_robohal_view_refuses_a_urdf_that_does_not_follow_the_robot_in_one_line(models, port):
    from click.testing import CliRunner
    from robohal.cli.main import main

    result = CliRunner().invoke(main, ["view", "sim://?model=generic.planar2", "--port", str(port),
                                       "--urdf", str(models / "arm3.urdf")])
    assert result.exit_code == 2, result.output
    assert "robohal: error:" in result.stderr and "no link of this URDF follows the model's flange" in result.stderr
