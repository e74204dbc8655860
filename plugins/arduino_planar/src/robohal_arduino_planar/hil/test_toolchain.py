"""Where the AVR toolchain is missing, the firmware-in-simavr HIL target is left out of the
defaults (the emulator target still runs); this test says so as a skip naming the fix."""

from __future__ import annotations

import pytest
from robohal.plugins.registry import default_registry

from robohal_arduino_planar import SIMAVR_TARGET, firmware


def test_firmware_in_simavr_is_a_default_hil_target() -> None:
    missing = firmware.toolchain_missing()
    if missing:
        pytest.skip(f"the real firmware in simavr is not tested here: {missing}")
    spec = default_registry().backend_spec("arduino-planar")
    assert SIMAVR_TARGET in spec.hil_targets
