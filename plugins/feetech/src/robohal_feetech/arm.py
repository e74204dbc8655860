"""A Feetech arm's configuration: a bus-servo arm file (:mod:`robohal.plugins.arm_files`) read for
this bus.

The arm file is the core's format: the model, each joint's servo id and direction, the bus, the
gripper's servo and its limits, the stall protection, the supply's and temperature's bounds (see
``arms/so101.toml``, the bundled SO-101). The core checks every key; here the values are held to
what Feetech servos take (their baud rates, ids 0..252) and what the file leaves out gets the
STS3215's defaults. The backend, the simulator and the calibration take a :class:`FeetechArm`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from robohal.errors import InvalidArgument
from robohal.plugins.arm_files import ArmFile, ArmJoint, Bounds, BusGripper, StallRule, find_arm

from .registers import BAUD_CODES, MODEL_NUMBER_STS3215

BUNDLED = Path(__file__).parent / "arms"
DEFAULT_ARM = "so101"
DEFAULT_BAUD = 1_000_000  # the STS3215's factory rate
MAX_ID = 252  # 253 is reserved, 254 is the broadcast id


@dataclass(frozen=True)
class FeetechArm:
    file: ArmFile
    baud: int
    model_number: int
    min_firmware: tuple[int, int]
    joints: tuple[ArmJoint, ...]
    gripper: BusGripper | None
    torque_limit: float
    stall: StallRule
    voltage: Bounds
    temperature: Bounds
    ids: tuple[int, ...]  # every servo on the bus: the arm's joints, then the gripper's (read each cycle)

    @property
    def name(self) -> str:
        return self.file.name

    @property
    def model(self) -> str:
        """The registered model's name: ``arm.so101``."""
        return self.file.model_name

    def label(self, servo_id: int) -> str:
        """``servo 3 (elbow_flex)``: how messages name a servo."""
        for joint in self.joints:
            if joint.id == servo_id:
                return f"servo {servo_id} ({joint.name})"
        if self.gripper is not None and self.gripper.id == servo_id:
            return f"servo {servo_id} (gripper)"
        return f"servo {servo_id}"


def feetech_arm(file: ArmFile) -> FeetechArm:
    """The Feetech reading of an arm file (each refusal names the file and the key)."""
    if file.bus is None or not isinstance(file.gripper, (BusGripper, type(None))):
        raise InvalidArgument(f"{file.path}: arm {file.name} drives its servos by pin: a Feetech arm's joints"
                              " have servo ids ([[joints]] id = N)")
    baud = DEFAULT_BAUD if file.bus.baud is None else file.bus.baud
    if baud not in BAUD_CODES:
        raise InvalidArgument(f"{file.path}: bus.baud: {baud} is not a rate the servos take:"
                              f" {', '.join(map(str, BAUD_CODES))}")
    for servo_id in file.ids:
        if servo_id > MAX_ID:
            raise InvalidArgument(f"{file.path}: servo id {servo_id}: Feetech ids are 0..{MAX_ID}")
    return FeetechArm(file, baud, MODEL_NUMBER_STS3215 if file.bus.model_number is None else file.bus.model_number,
                      file.bus.min_firmware or (0, 0), file.joints, file.gripper, file.torque_limit, file.stall,
                      file.supply, file.temperature, file.ids)


def load_arm(name: str = DEFAULT_ARM) -> FeetechArm:
    """``arm=`` of a URI: an arm file by name, the user's folders first, then the bundled arms."""
    return feetech_arm(find_arm(name, (BUNDLED,)))
