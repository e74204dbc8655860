"""A HIL lab's Franka cell that starts locked (as a robot does after power-on) is brought up
through its Desk for the run, with the credentials whose source its cell file names, and locked
after."""

from __future__ import annotations

import pytest
from robohal.cli.lab import run_lab

SUITE = '''
import numpy as np


def test_the_arm_moves(robot):
    assert robot.move_joints(robot.backend.commanded + np.radians(1.0), speed=0.5).completed
'''


def test_a_cell_is_brought_up_for_its_run_and_locked_after(start_simulator, tmp_path, monkeypatch):
    pytest.importorskip("pylibfranka")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ROBOHAL_LAB_FR3_USER", "franka")
    monkeypatch.setenv("ROBOHAL_LAB_FR3_PASSWORD", "lab-Pw-3")
    simulator = start_simulator("--desk", "web", "--locked", "1", "--desk-password", "lab-Pw-3")
    (tmp_path / "mini").mkdir()
    (tmp_path / "mini" / "test_mini.py").write_text(SUITE)
    cells = tmp_path / "cells.toml"
    uri = simulator.uri.with_params(realtime="ignore", desk_credentials="lab-fr3")  # names the source, never a secret
    cells.write_text(f'[cells.fr3]\nuri = "{uri}"\nsuites = ["mini"]\nbringup = true\n')
    code = run_lab(str(cells), ["fr3"], assume_yes=True, report=str(tmp_path / "report"))
    assert code == 0, (tmp_path / "report").glob("**/*.xml")
    state = simulator.desk_state()
    assert state["holder"] is None and not state["fci"] and not state["unlocked"]  # left safe
    assert simulator.stats()["robot_move_ticks"] > 0  # the suite moved the arm in between
