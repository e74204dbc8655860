"""robohal arm new writes an arm file robohal reads; robohal arm calibrate walks each servo of an arm
(keys piped, on the simulated StandardFirmata board) and writes the calibration to the user's copy."""

from __future__ import annotations

import os
import subprocess
import sys

from robohal.plugins.arm_files import read_arm_file


def run(args: list[str], env: dict, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robohal.cli.main", *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=120)


def test_arm_new_writes_an_arm_file_that_registers_its_model(tmp_path):
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path)}
    made = run(["arm", "new", "desk_arm"], env)
    assert made.returncode == 0, made.stderr
    path = tmp_path / "robohal" / "models" / "desk_arm.toml"
    assert made.stdout.strip() == str(path) and read_arm_file(path).model_name == "arm.desk_arm"
    assert "arm.desk_arm" in run(["models"], env).stdout
    again = run(["arm", "new", "desk_arm"], env)
    assert again.returncode != 0 and "exists" in again.stderr and len(again.stderr.strip().splitlines()) == 1


def test_calibrating_a_bundled_arm_writes_the_users_copy(tmp_path):
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path)}
    # per joint: Enter at 0 rad; +600 us: a quarter turn; then the ends 600 us either side of 0 rad
    keys = ("\n" + "+" * 60 + "\n" + "-" * 120 + "\n" + "+" * 120 + "\n") * 3
    done = run(["arm", "calibrate", "arduino-firmata://sim?arm=mearm"], env, keys)
    assert done.returncode == 0, done.stderr + done.stdout
    copy = tmp_path / "robohal" / "models" / "mearm.toml"
    assert f"calibration written to {copy}" in done.stdout
    arm = read_arm_file(copy)
    base = arm.joints[0].pulses
    assert (base.offset_us, base.direction, base.min_us, base.max_us) == (1580.0, 1, 980, 2180)
    assert abs(base.scale_us_per_rad - 600 / (3.141592653589793 / 2)) < 0.01
    assert "# [lib]" in copy.read_text()  # the comments came along


def test_calibration_stopped_with_q_writes_nothing(tmp_path):
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path)}
    done = run(["arm", "calibrate", "arduino-firmata://sim?arm=mearm"], env, "++q")
    assert done.returncode == 0 and "nothing written" in done.stdout
    assert not (tmp_path / "robohal" / "models" / "mearm.toml").exists()
