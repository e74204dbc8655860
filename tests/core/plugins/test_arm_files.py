"""Arm files: a servo arm's model, wiring and calibration in one TOML file; the bundled MeArm and
Braccio; every bad file refused in one line naming the file, the key and the problem."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import robohal
import robohal_feetech.arm
from robohal.errors import InvalidArgument, UnknownNameError
from robohal.plugins.arm_files import (
    ServoPulses,
    arm_model_specs,
    find_arm,
    read_arm_file,
    template,
    write_calibration,
)
from robohal.plugins.model_files import model_file_specs
from robohal_arduino_planar.arms import ARMS as BUNDLED

MEARM = (BUNDLED / "mearm.toml").read_text()


def arm_file(tmp_path: Path, text: str, name: str = "arm.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def one_line_refusal(path: Path, key: str, words: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        read_arm_file(path)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: {key}: "), message
    assert words in message, message


def test_bundled_arms_read_and_build():
    mearm, braccio = find_arm("mearm", [BUNDLED]), find_arm("braccio", [BUNDLED])
    assert (mearm.pins, braccio.pins) == ((11, 10, 9, 6), (11, 10, 9, 6, 5, 3))
    assert braccio.power is not None and (braccio.power.pin, braccio.power.soft_start) == (12, True)
    assert [j.name for j in braccio.joints] == ["base", "shoulder", "elbow", "wrist_pitch", "wrist_roll"]
    # the Braccio library's shoulder limits, 15..165 deg on the servo, are +-75 deg from upright
    shoulder = braccio.joints[1]
    assert math.degrees(shoulder.upper) == pytest.approx(75.0, abs=0.01)
    assert shoulder.pulses.width(shoulder.upper) == pytest.approx(544 + 165 * (2400 - 544) / 180, abs=1.0)
    model = robohal.get_model("arm.mearm")
    assert model.dof == 3 and model.position_only
    # straight up and level: the claw's tip 80 + 68 mm out, 80 mm up (the shoulder's height is the origin)
    assert model.forward(np.zeros(3))[:3, 3] == pytest.approx([0.148, 0.0, 0.080], abs=1e-6)
    braccio_model = robohal.get_model("arm.braccio")
    assert braccio_model.forward(np.zeros(5))[:3, 3] == pytest.approx([0, 0, 0.0715 + 0.125 + 0.125 + 0.192], abs=1e-6)


def test_arm_models_are_listed_without_model_file_warnings(caplog):
    names = {spec.name for spec in arm_model_specs([BUNDLED])}
    assert {"arm.mearm", "arm.braccio"} <= names
    with caplog.at_level("WARNING"):
        model_file_specs({"ROBOHAL_MODEL_PATH": str(BUNDLED)})
    assert not caplog.records, "arm files sharing a folder with model files are no broken model files"


def test_a_users_arm_file_stands_in_for_a_bundled_one(tmp_path, monkeypatch):
    path = arm_file(tmp_path, MEARM.replace("width = 0.030", "width = 0.032"), "my_mearm.toml")
    monkeypatch.setenv("ROBOHAL_MODEL_PATH", str(tmp_path))
    assert find_arm("mearm", [BUNDLED]).path == path and find_arm("mearm", [BUNDLED]).gripper.width == 0.032
    assert "arm.mearm" not in {spec.name for spec in arm_model_specs([BUNDLED])}  # the user's stands in
    assert "arm.mearm" in {spec.name for spec in arm_model_specs()}
    with pytest.raises(UnknownNameError, match="mearm"):
        find_arm("mearn", [BUNDLED])


@pytest.mark.parametrize("uri", ["arduino-arm://sim?arm=mearn", "feetech:///dev/ttyACM0?arm=mearn"])
def test_an_unknown_arm_is_named_as_the_user_wrote_it(uri):
    # the user wrote arm=mearn, not model arm.mearn: the error says so, and what there is
    with pytest.raises(UnknownNameError, match=r"^unknown arm 'mearn'; did you mean mearm\? \(the arms: .*braccio, mearm,"
                                               r" so101.*robohal arm new mearn") as unknown:
        robohal.connect(uri)
    assert unknown.value.kind == "arm" and unknown.value.suggestions == ("mearm",)


def test_template_is_a_valid_arm_file(tmp_path):
    arm = read_arm_file(arm_file(tmp_path, template("desk_arm")))
    assert arm.model_name == "arm.desk_arm" and arm.pins == (11, 10, 9, 6)
    model = arm.build()
    q = np.array([0.3, 0.2, -0.4])
    assert np.allclose(model.inverse_continuing(model.forward(q), q)[0], q, atol=1e-9)


@pytest.mark.parametrize("edit, key, words", [
    (lambda t: t.replace("pin = 9                           # [lib]\n", "", 1), "joints[2].pin", "missing"),
    (lambda t: t.replace("pin = 9 ", "pin = 10 ", 1), "joints[2].pin", "pin 10 is already joints[1]"),
    (lambda t: t.replace("pin = 6                           # [lib]", "pin = 11"), "gripper.pin", "already joints[0]"),
    (lambda t: t.replace("max_us = 2400\n\n[[joints]]\nname = \"shoulder\"", "max_us = 2600\n\n[[joints]]\nname = \"shoulder\""),
     "joints[0].max_us", "past the servo's 500..2400 us"),
    (lambda t: t.replace("upper = 0.2618", "upper = 3.5"), "joints[2].upper", "outside the model's range"),
    (lambda t: t.replace("upper = 0.7854", "upper = 1.2"), "joints[1].upper", "outside the servo's pulse limits"),
    (lambda t: t.replace("direction = -1", "direction = 2", 1), "joints[0].direction", "+1 or -1"),
    (lambda t: t.replace("speed = 3.1416", "sped = 3.1416", 1), "joints[0].sped", "unknown key"),
    (lambda t: t.replace('kind = "vertical-plane"', 'kind = "delta"'), "model.kind", "one of"),
    (lambda t: t.replace('name = "mearm"', 'name = "Me Arm"'), "arm.name", "lower-case"),
    (lambda t: t.replace("open_us = 1266", "open_us = 1100"), "gripper.open_us", "outside its pulse limits"),
    (lambda t: t + "\n[extra]\n", "extra", "unknown table"),
])
def test_bad_arm_files_are_refused_in_one_line(tmp_path, edit, key, words):
    changed = edit(MEARM)
    assert changed != MEARM
    one_line_refusal(arm_file(tmp_path, changed), key, words)


def test_joint_count_must_match_a_urdf_model(tmp_path):
    urdf = Path(__file__).resolve().parents[1] / "kinematics" / "urdf_files"
    files = sorted(urdf.glob("*.urdf"))
    if not files:
        pytest.skip("no URDF test files")
    text = MEARM.replace('kind = "vertical-plane"\nlinks = [0.080, 0.080]', 'kind = "urdf"\nurdf = "x.urdf"')
    path = arm_file(tmp_path, text)
    with pytest.raises(InvalidArgument, match=re.escape(f"{path}: model.")):
        read_arm_file(path)


def test_calibration_is_written_back_keeping_the_comments(tmp_path):
    path = arm_file(tmp_path, MEARM)
    pulses = ServoPulses(offset_us=1500.0, direction=1, scale_us_per_rad=600.0, min_us=900, max_us=2100)
    text = write_calibration(path, 1, pulses)
    path.write_text(text)
    arm = read_arm_file(path)
    assert arm.joints[1].pulses == pulses
    assert arm.joints[0].pulses == find_arm("mearm", [BUNDLED]).joints[0].pulses  # the others untouched
    assert "# servo 102 deg" in text  # comments kept


# A bus-servo arm: ids instead of pins, a registered model, the bus and its servos' protection

SO101 = (Path(robohal_feetech.arm.BUNDLED) / "so101.toml").read_text()


def test_a_bus_servo_arm_has_ids_a_registered_model_and_its_protection(tmp_path):
    arm = read_arm_file(arm_file(tmp_path, SO101))
    assert arm.ids == (1, 2, 3, 4, 5, 6) and arm.pins == ()
    assert arm.bus is not None and (arm.bus.baud, arm.bus.model_number, arm.bus.min_firmware) == (1_000_000, 777, (3, 0))
    assert arm.gripper.torque_limit == 0.5 and arm.gripper.stall.hold_torque == 0.3
    assert arm.stall.time == 0.4 and arm.supply.judge(3.9) == "fault" and arm.temperature.judge(60) == "warn"
    own = robohal.get_model("so_arm.so101")
    model = arm.build()
    assert np.allclose(model.limits.lower, own.limits.lower) and np.allclose(model.limits.velocity, own.limits.velocity)
    q = np.array([0.1, 0.2, -0.3, 0.4, 0.5])
    assert np.allclose(model.forward(q), own.forward(q))
    narrowed = read_arm_file(arm_file(tmp_path, SO101.replace("id = 3\n", "id = 3\nupper = 1.0\n"), "narrow.toml"))
    assert narrowed.build().limits.upper[2] == 1.0


@pytest.mark.parametrize("edit, key, words", [
    (lambda t: t.replace("id = 3\n", "id = 2\n"), "joints[2].id", "id 2 is already joints[1]"),
    (lambda t: t.replace("id = 6\n", "id = 1\n"), "gripper.id", "already joints[0]"),
    (lambda t: t.replace("id = 3\n", "id = 3\npin = 9\n"), "joints[2].pin", "takes an id, not a pin"),
    (lambda t: t.replace("id = 3\n", "id = 3\noffset_us = 1500\n"), "joints[2].offset_us", "not a pin or pulse"),
    (lambda t: t.replace("id = 3\n", "id = 3\nupper = 2.5\n"), "joints[2].upper", "outside the model's range"),
    (lambda t: t.replace('name = "elbow_flex"', 'name = "elbow"'), "joints", "the model so_arm.so101 has"),
    (lambda t: t.replace('name = "so_arm.so101"', 'name = "so_arm.so100"'), "model.name", "so_arm.so100"),
    (lambda t: t.replace('min_firmware = "3.0"', "min_firmware = 3"), "bus.min_firmware", "MAJOR.MINOR"),
    (lambda t: t.replace('stall = "hold"                    # a stalled jaw', 'stall = "drop"  #'), "gripper.stall",
     "hold, release"),
    (lambda t: t.replace("torque_limit = 1.0", "torque_limit = 1.5"), "protection.torque_limit", "0..1"),
    (lambda t: t.replace("[temperature]", "[temperature]\nwarn_abov = 50"), "temperature.warn_abov", "unknown key"),
])
def test_bad_bus_servo_arm_files_are_refused_in_one_line(tmp_path, edit, key, words):
    changed = edit(SO101)
    assert changed != SO101
    one_line_refusal(arm_file(tmp_path, changed), key, words)


def test_a_bus_servo_table_in_a_hobby_servo_arm_is_refused(tmp_path):
    one_line_refusal(arm_file(tmp_path, MEARM + "\n[bus]\nbaud = 1000000\n"), "bus", "only a bus-servo arm")
