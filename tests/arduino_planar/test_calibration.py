"""Servo calibration: radians <-> microseconds, limits, TOML files and URI parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from robohal.errors import InvalidArgument, LimitViolation
from robohal.uri import parse_uri
from robohal_arduino_planar.calibration import Calibration, ServoCalibration


def test_default_maps_minus_90_to_plus_90_deg_onto_1000_to_2000_us() -> None:
    servo = ServoCalibration()
    assert servo.to_us(0.0) == 1500
    assert servo.to_us(math.pi / 2) == 2000
    assert servo.to_us(-math.pi / 2) == 1000
    assert servo.to_us(math.radians(45)) == 1750
    assert servo.to_rad(1000) == pytest.approx(-math.pi / 2)
    assert servo.angle_range == pytest.approx((-math.pi / 2, math.pi / 2))
    assert Calibration().limits_us == ((1000, 2000), (1000, 2000))


def test_offset_direction_and_scale() -> None:
    servo = ServoCalibration(offset_us=1520, direction=-1, scale_us_per_rad=600.0, min_us=600, max_us=2400)
    assert servo.to_us(0.0) == 1520
    assert servo.to_us(0.5) == 1520 - 300
    assert servo.to_rad(1820) == pytest.approx(-0.5)
    assert servo.angle_range == pytest.approx(((1520 - 2400) / 600.0, (1520 - 600) / 600.0))


@given(st.floats(-math.pi / 2, math.pi / 2), st.sampled_from([1, -1]), st.floats(200.0, 1000.0))
def test_round_trip_within_half_a_microsecond(q: float, direction: int, scale: float) -> None:
    servo = ServoCalibration(direction=direction, scale_us_per_rad=scale, min_us=500, max_us=2500)
    width = servo.to_us(q)
    assert isinstance(width, int)
    assert abs(servo.to_rad(width) - q) <= 0.5 / scale + 1e-12


def test_width_outside_the_pulse_limits_is_refused() -> None:
    calibration = Calibration((ServoCalibration(), ServoCalibration(max_us=1600)))
    assert calibration.to_pulses([0.2, 0.3]) == (1564, 1595)
    with pytest.raises(LimitViolation) as refused:
        calibration.to_pulses([0.2, 0.5])
    assert refused.value.joint == 1 and refused.value.quantity == "position"
    assert "1600" in str(refused.value)
    with pytest.raises(InvalidArgument):
        calibration.to_pulses([0.2, float("nan")])


def test_uncovered_joint_range_is_reported() -> None:
    calibration = Calibration((ServoCalibration(offset_us=1520), ServoCalibration()))
    problems = calibration.uncovered([-math.pi / 2] * 2, [math.pi / 2] * 2)
    assert len(problems) == 1 and problems[0].startswith("joint 1") and "2020" in problems[0]


def test_toml_file_and_uri_parameters(tmp_path) -> None:
    path = tmp_path / "arm.toml"
    path.write_text("[servo1]\noffset_us = 1480\ndirection = -1\n[servo2]\nmin_us = 900\nmax_us = 2100\n")
    uri = parse_uri(f"arduino-planar:///dev/ttyACM0?calibration={path}&s2_offset_us=1510&s1_dir=1")
    calibration = Calibration.from_uri(uri)
    one, two = calibration.servos
    assert (one.offset_us, one.direction) == (1480, 1)  # the URI wins over the file
    assert (two.offset_us, two.min_us, two.max_us) == (1510, 900, 2100)
    again = tmp_path / "again.toml"
    again.write_text(calibration.to_toml())
    assert Calibration.from_file(again) == calibration


@pytest.mark.parametrize(("text", "needle"), [
    ("[servo1]\ndirection = 2\n", r"\+1 or -1"),
    ("[servo1]\nmin_us = 2000\nmax_us = 1000\n", "min < max"),
    ("[servo1]\nmax_us = 3000\n", "2500"),
    ("[servo1]\nspeed = 3\n", "unknown key"),
    ("[servo3]\noffset_us = 1500\n", "unknown section"),
    ("[servo1\n", "not valid TOML"),
    ("[servo1]\noffset_us = 'x'\n", "not a number"),
])
def test_bad_calibration_files_are_clear_errors(tmp_path, text: str, needle: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InvalidArgument, match=needle):
        Calibration.from_file(path)


def test_bad_uri_parameters_are_clear_errors(tmp_path) -> None:
    with pytest.raises(InvalidArgument, match="s1 and s2"):
        Calibration.from_uri(parse_uri("arduino-planar:///dev/x?s3_dir=1"))
    with pytest.raises(InvalidArgument, match="direction"):
        Calibration.from_uri(parse_uri("arduino-planar:///dev/x?s1_dir=0"))
    with pytest.raises(InvalidArgument, match="cannot read"):
        Calibration.from_uri(parse_uri(f"arduino-planar:///dev/x?calibration={tmp_path / 'missing.toml'}"))


def test_to_joints_inverts_to_pulses() -> None:
    calibration = Calibration((ServoCalibration(direction=-1), ServoCalibration(offset_us=1450)))
    q = np.array([0.4, -0.7])
    assert np.allclose(calibration.to_joints(calibration.to_pulses(q)), q, atol=calibration.resolution / 2)
