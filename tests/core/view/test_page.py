"""``robohal view`` in a real browser: the page draws the robot live and its controls move it.

Debian's chromium, headless, driven by Playwright, renders the viser page with WebGL on
SwiftShader; the robot is the in-process ``sim://`` backend.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import robohal
from robohal import InvalidArgument, LifecycleState
from robohal.view import is_loopback, serve

URI = "sim://?model=franka.fr3"
START = np.array([0.0, -0.4, 0.0, -2.0, 0.0, 1.6, 0.8])


@pytest.fixture
def robot():
    with robohal.connect(URI) as robot:
        robot.move_joints(START, speed=1.0)
        yield robot


def sliders(page):
    return page.page.get_by_role("slider")


def figures_shown(page, robot) -> bool:
    return page.page.get_by_text(f"{robot.name}: ").count() > 0


def test_the_page_draws_the_robot_and_logs_no_error(robot, page, port):
    with serve((), port=port) as view:
        page.open(view.url)
        empty = page.settled()
        view.add(robot)
        page.changes_from(empty, "the robot to appear on the canvas")
        page.settled()
    assert page.errors == []


def test_moving_the_robot_changes_the_picture(robot, page, port):
    with serve(robot, port=port) as view:
        page.open(view.url)
        before = page.settled()
        robot.move_joints(START + np.array([0.8, 0.3, 0.0, 0.3, 0.0, 0.0, 0.0]), speed=1.0)
        page.changes_from(before, "the moved arm to be drawn")
    assert view.frames > 0
    assert page.errors == []


def test_a_slider_moves_the_robot_by_its_angle(robot, page, port, wait_for):
    with serve(robot, port=port) as view:
        page.open(view.url)
        joint1, joint2 = sliders(page).nth(0), sliders(page).nth(1)
        joint1.wait_for()
        # the keyboard steps a slider by its step, 1 mrad: 50 presses turn joint 1 by 0.05 rad
        joint1.focus()
        for _ in range(50):
            page.page.keyboard.press("ArrowRight")
        wait_for(lambda: abs(robot.state.q[0] - (START[0] + 0.05)) < 1e-9 and robot.lifecycle is LifecycleState.READY,
                 "joint 1 to stop 0.05 rad on")
        # dragging: the robot goes to the angle the slider shows; first the figures above the
        # sliders say so too, so the panel's lines no longer change under the pointer
        wait_for(lambda: page.page.get_by_text(f"{robot.name}: ready").count() > 0, "the figures to say ready")
        joint2.hover()  # waits until the thumb is visible, stable and the element the pointer hits
        box = joint2.bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.page.mouse.move(x, y)
        page.page.mouse.down()
        page.page.mouse.move(x + 30, y, steps=5)
        page.page.mouse.up()

        def slider_value() -> float:  # the page draws the slider's new value in a frame of its own
            return float(joint2.get_attribute("aria-valuenow"))

        wait_for(lambda: slider_value() > START[1] + 0.2, "the drag to move the slider")
        shown = slider_value()
        wait_for(lambda: abs(robot.state.q[1] - shown) < 1e-9 and robot.lifecycle is LifecycleState.READY,
                 f"joint 2 to stop at the slider's {shown} rad")
        np.testing.assert_allclose(robot.state.q[2:], START[2:], atol=1e-12)  # the others stayed
    assert page.errors == []


def test_stop_in_the_page_stops_a_motion(robot, page, port, wait_for):
    with serve(robot, port=port) as view:
        page.open(view.url)
        stop = page.page.get_by_role("button", name="Stop")
        stop.wait_for()
        far = START + np.array([2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
        robot.move_joints(far, speed=0.05, wait=False)
        wait_for(lambda: robot.lifecycle is LifecycleState.MOVING, "the motion to start")
        stop.click()
        result = robot.wait(timeout=10.0)
    assert result.stopped and not result.completed
    assert abs(robot.state.q[0] - far[0]) > 1.0


def test_a_watching_page_has_no_controls_and_refuses_commands(robot, page, port, wait_for):
    with serve(robot, port=port, watch=True) as view:
        page.open(view.url)
        wait_for(lambda: figures_shown(page, robot), "the robot's figures")
        assert page.page.get_by_text("Watching").count() == 1
        assert sliders(page).count() == 0
        assert page.page.get_by_role("button", name="Stop").count() == 0
        with pytest.raises(InvalidArgument, match="only watches"):
            view.command(0, "joints", START + 0.1)
        assert view.refused == 1
    np.testing.assert_allclose(robot.state.q, START, atol=1e-12)
    assert page.errors == []


def test_only_a_loopback_address_counts_as_the_local_user():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.20") and not is_loopback("cell-pc.lab")


# A bind on a non-loopback address, made where no network can reach it: a private network
# namespace whose only interface is its own loopback device, given a 10.x address.
NAMESPACED = textwrap.dedent("""
    import json, subprocess
    import robohal
    from robohal import InvalidArgument
    from playwright.sync_api import sync_playwright
    from robohal.view import serve
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    subprocess.run(["ip", "addr", "add", "10.77.0.1/32", "dev", "lo"], check=True)
    out = {}
    with robohal.connect("sim://?model=franka.fr3") as robot, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page()
        with serve(robot, host="10.77.0.1", port=8080) as view:
            page.goto(view.url)
            page.get_by_text("Watching").wait_for(timeout=30_000)
            out["default"] = {"allowed": view.commands_allowed, "sliders": page.get_by_role("slider").count()}
            try:
                view.command(0, "joints", robot.state.q + 0.1)
            except InvalidArgument as exc:
                out["default"]["refused"] = str(exc)
        with serve(robot, host="10.77.0.1", port=8081, allow_control=True) as view:
            page.goto(view.url)
            page.get_by_role("button", name="Take control").wait_for(timeout=30_000)
            entry = page.get_by_role("textbox").filter(visible=True)  # the page keeps hidden ones of its own
            out["token"] = {"before": page.get_by_role("slider").count()}
            try:
                view.command(0, "joints", robot.state.q + 0.1)
            except InvalidArgument:
                out["token"]["refused_without"] = True
            entry.fill("not-the-token")
            page.get_by_role("button", name="Take control").click()
            page.get_by_text("wrong token").wait_for(timeout=10_000)
            out["token"]["after_wrong"] = page.get_by_role("slider").count()
            entry.fill(view.token)
            page.get_by_role("button", name="Take control").click()
            page.get_by_role("slider").first.wait_for(timeout=10_000)
            out["token"]["after_right"] = page.get_by_role("slider").count()
        browser.close()
    print(json.dumps(out))
""")


def test_a_non_loopback_bind_refuses_commands_unless_allowed_with_the_token(tmp_path, browser, chromium):
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "-n", "true"], capture_output=True).returncode != 0:
        pytest.skip("needs a private network namespace (unshare -n: root or user namespaces)")
    script = tmp_path / "namespaced.py"
    script.write_text(f"CHROMIUM, ARGS = {chromium!r}\n{NAMESPACED}")
    done = subprocess.run([unshare, "-n", sys.executable, str(script)], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["default"]["allowed"] is False and out["default"]["sliders"] == 0
    assert "only watches" in out["default"]["refused"]
    assert out["token"] == {"before": 0, "refused_without": True, "after_wrong": 0, "after_right": 7}


def test_the_pad_moves_a_planar_arm_s_pen_and_the_page_draws_its_trace(port, wait_for):
    with robohal.connect("sim://?model=generic.planar2") as robot, serve(robot, port=port) as view:
        pen = robot.model.forward(robot.state.q)[:2, 3]
        target = pen + np.array([-0.05, 0.05])
        view.command(0, "pen", target)
        wait_for(lambda: np.allclose(robot.model.forward(robot.state.q)[:2, 3], target, atol=1e-9)
                 and robot.lifecycle is LifecycleState.READY, "the pen to reach the pad's point")
        with pytest.raises(InvalidArgument, match="cannot reach"):
            view.command(0, "pen", [5.0, 5.0])
        with pytest.raises(InvalidArgument, match="finite"):
            view.command(0, "pen", [float("nan"), 0.0])
        station = view._stations[0]
        wait_for(lambda: len(station.pen) > 10, "the trace to follow the pen")
        np.testing.assert_allclose(station.pen[-1][:2], target, atol=1e-4)  # the trace skips steps under 0.1 mm


def test_robohal_view_serves_the_page_until_ctrl_c(port, wait_for):
    import signal
    import urllib.request

    process = subprocess.Popen([sys.executable, "-m", "robohal.cli.main", "view", "sim://?model=generic.planar2",
                                "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout=60)
        line = lines[0] if lines else ""
        assert f"http://127.0.0.1:{port}" in line, f"the first line was {line!r}"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
            assert response.status == 200 and b"<html" in response.read().lower()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 0
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
        process.stderr.close()
