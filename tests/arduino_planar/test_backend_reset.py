"""Resets the backend must notice without the boot banner: the firmware's counters drop, or it
refuses widths that lie within the limits the backend sent (it forgot them). The board here is
the emulator's FirmwareModel served on a real pty from a thread, so the test decides exactly
when the reset happens and that its banner is lost."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest
from robohal import HardwareFault
from robohal.plugins.registry import default_registry
from robohal.uri import RobotUri
from robohal_arduino_planar.backend import ArduinoPlanarBackend
from robohal_arduino_planar.emulator import FirmwareModel


class SilentlyResettingBoard:
    """The firmware logic on a pty; ``reset()`` restarts it without sending the BOOT banner."""

    def __init__(self) -> None:
        self.master, self._slave = os.openpty()
        self.path = os.ttyname(self._slave)
        self._lock = threading.Lock()
        self.reset()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def reset(self) -> None:
        with self._lock:
            began = time.monotonic()
            self.firmware = FirmwareModel(lambda: int((time.monotonic() - began) * 1000))

    def _serve(self) -> None:
        os.set_blocking(self.master, False)
        while not self._stop.wait(0.001):
            try:
                data = os.read(self.master, 1024)
            except BlockingIOError:
                continue
            except OSError:
                return
            with self._lock:
                out = self.firmware.receive(data)
            if out:
                os.write(self.master, out)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        os.close(self.master)
        os.close(self._slave)


@pytest.fixture
def board():
    served = SilentlyResettingBoard()
    yield served
    served.close()


def connect(board: SilentlyResettingBoard, **params: str) -> ArduinoPlanarBackend:
    model = default_registry().get_model("arduino.planar2")
    backend = ArduinoPlanarBackend(RobotUri("arduino-planar", path=board.path,
                                            params={"model": "arduino.planar2", "keepalive": "0", **params}), model)
    backend.connect()
    return backend


def ramp(backend: ArduinoPlanarBackend, target: np.ndarray, steps: int = 10):
    start = backend.commanded
    state = None
    for k in range(1, steps + 1):
        state = backend.cycle(start + (target - start) * k / steps)
    return state


def test_counter_drop_is_a_reset_and_the_acknowledged_position_is_re_held(board) -> None:
    backend = connect(board, poll="5")
    try:
        ramp(backend, np.array([0.2, -0.2]))
        acked = backend.read().info["pulses_us"]
        board.reset()  # its banner is lost; the next SETs are acknowledged by a fresh firmware
        with pytest.raises(HardwareFault) as fault:
            for _ in range(10):
                backend.cycle()
        assert fault.value.names == ("MCU_RESET",)
        assert backend.counters["resets"] == 1 and backend.counters["boot_banners"] == 0
        state = backend.recover()
        assert state.info["pulses_us"] == acked
        assert board.firmware.pin_widths() == acked  # the board holds it again
        assert board.firmware.limits == [[1000, 2000], [1000, 2000]]
        assert np.allclose(backend.commanded, state.q)
    finally:
        backend.close()


def test_refused_widths_inside_the_sent_limits_mean_the_board_forgot_them(board) -> None:
    backend = connect(board, poll="0", s1_min_us="800", s1_offset_us="1300")
    try:
        assert board.firmware.limits[0] == [800, 2000]
        ramp(backend, np.array([-1.2, 0.0]), steps=30)  # servo 1 at 918 us, below the default 1000
        board.reset()  # default limits again: the next SET is refused OUT_OF_LIMITS
        with pytest.raises(HardwareFault):
            backend.cycle()
        assert backend.counters["limits_forgotten"] == 1
        backend.recover()
        assert board.firmware.limits[0] == [800, 2000]  # sent again
        assert backend.cycle().info["pulses_us"][0] < 1000
    finally:
        backend.close()
