"""robohal's tools on the simulated SO-101: the jog moves its tool through the model's IK (the
orientation kept, the base turning the arm's plane), refuses a step out of reach and leaves the
target; the live view serves the arm; robohal feetech scans the bus, renumbers a servo and sets
the baud rate."""

from __future__ import annotations

import io
import urllib.request

import numpy as np
import robohal
from click.testing import CliRunner
from robohal.cli.jog import run_jog
from robohal.cli.main import main
from robohal.view import RobotView


def jog(robot, keys: str, step: float = 0.01) -> list[str]:
    lines: list[str] = []
    run_jog(robot, stdin=io.StringIO(keys), out=lines.append, step=step)
    return lines


def test_the_jog_moves_the_so101_s_tool_and_keeps_its_orientation(simulator) -> None:
    with robohal.connect(simulator.uri) as robot:
        model = robot.model
        start = model.forward(robot.backend.commanded)
        lines = jog(robot, "wwr")  # out twice, up once: 1 cm each
        assert [line.endswith("| moved") for line in lines[1:]] == [True] * 3, lines
        moved = model.forward(robot.backend.commanded)
        assert np.allclose(moved[:3, :3], start[:3, :3], atol=1e-6)
        shift = moved[:3, 3] - start[:3, 3]
        assert np.isclose(shift[2], 0.01, atol=1e-6) and np.isclose(np.linalg.norm(shift[:2]), 0.02, atol=1e-6)
        assert np.linalg.norm(moved[:2, 3]) > np.linalg.norm(start[:2, 3])  # out: away from the base
        pan = robot.backend.commanded[0]
        jog(robot, "a")  # left: the base alone turns, counter-clockwise
        assert robot.backend.commanded[0] > pan and np.allclose(robot.backend.commanded[1:], model.inverse_continuing(
            model.forward(robot.backend.commanded), robot.backend.commanded)[0][1:], atol=1e-6)
        # the arm follows: the measured joints end on the target
        assert np.abs(robot.state.q - robot.backend.commanded).max() < 0.01


def test_a_jog_step_out_of_reach_is_refused_and_the_target_stays(simulator) -> None:
    with robohal.connect(simulator.uri) as robot:
        lines = jog(robot, "w" * 6)  # 6 cm further out from a stretched arm: past its reach
        refused = [line for line in lines if "refused:" in line]
        assert refused and "out of reach" in refused[0], lines
        target = robot.backend.commanded.copy()
        point = refused[-1].split("| refused: ")[1].split(" m ")[0]
        assert f"| refused: {point} m with the tool as it is is out of reach" in jog(robot, "w")[-1]  # the same point
        assert np.array_equal(robot.backend.commanded, target)


def test_the_view_serves_the_so101(simulator) -> None:
    with robohal.connect(simulator.uri) as robot, RobotView(robot, port=18240) as view:
        with urllib.request.urlopen(view.url, timeout=10) as page:
            assert page.status == 200 and b"<html" in page.read(2000).lower()


def feetech(*args: str) -> str:
    result = CliRunner().invoke(main, ["feetech", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_robohal_feetech_scans_a_bus_renumbers_a_servo_and_sets_every_baud_rate(simulator) -> None:
    port = simulator.pty_path
    found = feetech("scan", port, "--baud", "1000000", "--max-id", "8")
    assert [line.split()[3] for line in found.splitlines()] == ["1", "2", "3", "4", "5", "6"]
    assert "model   777" in found
    assert "servo 6 is servo 7 now" in feetech("id", port, "6", "7")
    assert " 7 " in feetech("scan", port, "--baud", "1000000", "--max-id", "8").splitlines()[-1]
    feetech("baud", port, "500000", "--max-id", "8")
    assert len(feetech("scan", port, "--baud", "500000", "--max-id", "8").splitlines()) == 6


def test_robohal_arm_calibrate_points_a_bus_servo_arm_to_its_own_calibration() -> None:
    result = CliRunner().invoke(main, ["arm", "calibrate", "feetech://sim?arm=so101"], input="")
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1].endswith("its plugin calibrates them: robohal feetech calibrate URI")


def test_robohal_feetech_calibrate_points_a_hobby_servo_arm_to_robohal_arm_calibrate() -> None:
    # the arm exists (arduino-arm's MeArm), only not on a servo bus: no "unknown arm"
    result = CliRunner().invoke(main, ["feetech", "calibrate", "arduino-arm://sim?arm=mearm"], input="")
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1].endswith("calibrated with robohal arm calibrate URI")
