"""The serial port of a simulated device: a pseudo-terminal whose slave path a host opens as it
opens a USB serial adapter (``/dev/pts/7`` where it would open ``/dev/ttyACM0``)."""

from __future__ import annotations

import os
import termios
import tty
from dataclasses import dataclass


@dataclass(frozen=True)
class SerialPty:
    """``master``: the simulator's end, non-blocking. ``slave``: held open by the simulator
    too, so the raw settings last from one host session to the next and the line never echoes
    the simulator's output back. ``path``: what the host opens."""

    master: int
    slave: int
    path: str

    def close(self) -> None:
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass


def open_serial_pty(baud: int | None = None) -> SerialPty:
    """A raw pty for a simulated serial device; ``baud`` (bit/s): the line's speed as the
    device's port reports it before a host sets its own (None: the pty's default)."""
    master, slave = os.openpty()
    try:
        tty.setraw(slave)
        if baud is not None:
            speed = getattr(termios, f"B{baud}", None)
            if speed is None:
                raise ValueError(f"{baud} baud is no speed termios names")
            attrs = termios.tcgetattr(slave)
            attrs[4] = attrs[5] = speed
            termios.tcsetattr(slave, termios.TCSANOW, attrs)
        os.set_blocking(master, False)
        return SerialPty(master, slave, os.ttyname(slave))
    except BaseException:
        os.close(master)
        os.close(slave)
        raise
