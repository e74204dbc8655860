"""The serial port of a simulated device: a raw pty, bytes both ways unchanged, the named speed."""

import os
import select
import termios

import pytest
import serial
from robohal.sim.serial_pty import open_serial_pty


def _read(fd: int, count: int, timeout: float = 5.0) -> bytes:
    data = b""
    while len(data) < count:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"only {data!r} arrived"
        data += os.read(fd, count - len(data))
    return data


def test_a_host_opens_the_path_and_bytes_pass_both_ways_unchanged():
    port = open_serial_pty(115200)
    try:
        assert not os.get_blocking(port.master)
        with serial.Serial(port.path, 115200, timeout=5) as host:
            raw = bytes(range(256))  # a cooked line would turn \r, \n, ^C, ^D, ... into something else
            host.write(raw)
            assert _read(port.master, len(raw)) == raw
            os.write(port.master, raw)
            assert host.read(len(raw)) == raw
            # nothing echoed back to the simulator's end
            assert select.select([port.master], [], [], 0.05)[0] == []
    finally:
        port.close()


@pytest.mark.parametrize("baud, speed", [(57600, termios.B57600), (115200, termios.B115200)])
def test_the_line_reports_the_named_speed(baud, speed):
    port = open_serial_pty(baud)
    try:
        attrs = termios.tcgetattr(port.slave)
        assert attrs[4] == attrs[5] == speed
    finally:
        port.close()


def test_a_speed_termios_does_not_name_is_refused_and_leaves_nothing_open(monkeypatch):
    opened = []

    def openpty():
        ends = real_openpty()
        opened.append(os.ttyname(ends[1]))
        return ends

    real_openpty = os.openpty
    monkeypatch.setattr(os, "openpty", openpty)
    with pytest.raises(ValueError, match="12345 baud"):
        open_serial_pty(12345)
    with pytest.raises(OSError):  # both ends closed: the pty is gone
        os.close(os.open(opened[0], os.O_RDWR | os.O_NOCTTY))


def test_close_ends_the_device():
    port = open_serial_pty()
    port.close()
    with pytest.raises(OSError):  # the path of a pty whose ends are closed is gone
        os.close(os.open(port.path, os.O_RDWR | os.O_NOCTTY))
