"""The command-line tools on the arm files' servo arms, on both firmwares in simulation: ``jog`` moves
the MeArm's claw (arrows in the horizontal plane, r/f up and down), ``view`` shows and moves it,
and ``draw`` says which arm can hold a pen to the paper."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest
import robohal
from click.testing import CliRunner
from robohal.cli.main import main
from robohal.view import serve


def run(*args: str, stdin: str | None = None):
    result = CliRunner().invoke(main, list(args), input=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output, result.output
    return result


def positions(output: str) -> list[tuple[float, float, float]]:
    """(x, y, z) mm of every jog status line."""
    found = []
    for line in output.splitlines():
        words = line.split()
        if words[:1] == ["x"] and words[4] == "z":
            found.append((float(words[1]), float(words[3]), float(words[5])))
    return found


@pytest.mark.parametrize("uri", ["arduino-arm://sim?arm=mearm&firmware=simavr", "arduino-arm://sim?arm=mearm&firmware=emulator",
                                 "arduino-firmata://sim?arm=mearm"])
def test_jog_moves_the_mearm_s_claw_in_x_y_and_z(uri, request):
    if "simavr" in uri:
        request.getfixturevalue("firmware_build")
    result = run("jog", uri, "--step", "5", stdin="ddwrrfq")
    assert result.exit_code == 0, result.output
    seen = positions(result.output)
    assert len(seen) == 7 and result.output.count("| moved") == 6, result.output
    start, end = np.array(seen[0]), np.array(seen[-1])
    np.testing.assert_allclose(end - start, [10.0, 5.0, 5.0], atol=0.15)  # two right, one up, two raised, one lowered
    assert "pulses" in result.output.splitlines()[-1]


def test_jog_refuses_a_step_out_of_reach_and_keeps_the_target():
    result = run("jog", "arduino-arm://sim?arm=mearm&firmware=emulator", "--step", "50", stdin="rrrrq")
    seen = positions(result.output)
    assert "refused" in result.output and "out of reach" in result.output
    assert seen[-1][2] <= seen[0][2] + 150.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("uri", ["arduino-arm://sim?arm=mearm&firmware=emulator", "arduino-firmata://sim?arm=mearm"])
def test_view_shows_the_mearm_and_its_sliders_move_it(uri):
    with robohal.connect(uri) as robot, serve(robot, port=free_port()) as view:
        target = np.radians([20.0, -10.0, -25.0])
        view.command(0, "joints", target)
        deadline = time.monotonic() + 20.0
        while time.monotonic() < deadline and not np.allclose(robot.state.q, target, atol=2e-3):
            time.sleep(0.05)
        np.testing.assert_allclose(robot.state.q, target, atol=2e-3)


def test_draw_says_the_mearm_cannot_hold_a_pen_and_plans_the_braccio_s_only_where_it_reaches():
    mearm = run("draw", "arduino-arm://sim?arm=mearm", "circle", "--dry-run")
    assert mearm.exit_code != 0
    assert "arm.mearm cannot hold a pen to the paper: its tool is held level by its linkage" in mearm.output
    braccio = run("draw", "arduino-arm://sim?arm=braccio", "circle", "--dry-run")
    assert braccio.exit_code != 0 and "robohal: error: " in braccio.output  # a reason, not a crash
    assert "cannot hold a pen" not in braccio.output  # its wrist can point one down
