"""The process around a simulated board (its pty, reset-on-open, control lines, the loop), with a
board of the simplest kind: it records what the base asks of it."""

import fcntl
import os
import struct
import termios
import threading
import time

import pytest
from robohal_arduino_planar.board_process import MAX_UNREAD_OUT, BoardProcess


class Recorder(BoardProcess):
    name = "recorder"

    def __init__(self, chatter: int = 0) -> None:
        super().__init__(115200, boot_ms=20)
        self.events: list[str] = []
        self.heard = bytearray()
        self.chatter = chatter  # bytes put out each step once started (a board that never stops talking)
        self.produced = 0
        self.started = False
        self.largest_out = 0

    def _held(self, now):
        self.events.append("held")
        self.started = False

    def _started(self, now):
        self.events.append("started")
        self.started = True
        self.out += b"hello"

    def _heard(self, data, now):
        if self.started:
            self.heard += data

    def _step(self, now):
        if self.started and self.chatter:
            self.out += b"x" * self.chatter
            self.produced += self.chatter
        self.largest_out = max(self.largest_out, len(self.out))

    def _due(self, now):
        return 0.001 if self.chatter else 0.1

    def _control(self, word, arg):
        if word == "PING":
            self.events.append(f"ping {int(arg)}")
            return True
        return False


def _running(board):
    thread = threading.Thread(target=board.run, daemon=True)
    thread.start()
    return thread


def _wait(condition, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.005)


def _read_until(fd, wanted, timeout=10.0):
    data = b""
    deadline = time.monotonic() + timeout
    while wanted not in data:
        assert time.monotonic() < deadline, f"only {data!r}"
        try:
            data += os.read(fd, 4096)
        except BlockingIOError:
            time.sleep(0.005)
    return data


def test_an_open_resets_the_board_which_starts_after_its_boot_hold_and_hears_the_host(make_board):
    board = make_board()
    thread = _running(board)
    host = os.open(board.slave_path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        assert _read_until(host, b"hello").endswith(b"hello")
        assert board.events[:2] == ["held", "started"]
        os.write(host, b"abc")
        _wait(lambda: bytes(board.heard) == b"abc", "the board hears the host")
    finally:
        board.stop = True
        thread.join(5)
        os.close(host)
    assert not thread.is_alive()


def test_a_host_that_never_reads_costs_the_board_at_most_max_unread_out_bytes(make_board):
    board = make_board(chatter=4096)
    thread = _running(board)
    host = os.open(board.slave_path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)  # held open, never read
    try:
        _wait(lambda: board.produced > 4 * MAX_UNREAD_OUT, "the board put out four times the bound")
    finally:
        board.stop = True
        thread.join(5)
        os.close(host)
    assert board.largest_out <= MAX_UNREAD_OUT + 4096


def _queued(fd):
    """Bytes waiting to be read on ``fd`` (FIONREAD)."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def test_a_reset_keeps_what_the_board_sent_before_it_in_the_host_s_queue(make_board):
    # a USB bridge is not reset with the MCU: what crossed it before the reset reaches the host
    board = make_board()
    host = os.open(board.slave_path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        os.write(board.master, b"sent before")
        _wait(lambda: _queued(host) == len(b"sent before"), "the board's bytes wait for the host")
        board.control("RESET")
        assert _read_until(host, b"sent before") == b"sent before"
    finally:
        os.close(host)


def test_control_lines(make_board, capsys):
    board = make_board()
    board.control("PING 3")
    board.control("NONSENSE")
    board.control("PING three")
    board.control("RESET")
    board.release()
    board.control("QUIT")
    out, err = capsys.readouterr()
    assert board.events == ["ping 3", "held", "started"]
    assert out.split()[0] == "RESET" and out.split()[2] == "stdin"  # RESET <sim_us> <reason>
    assert "recorder: unknown control line: NONSENSE" in err
    assert "recorder: bad control line: PING three" in err
    assert board.stop


@pytest.fixture
def make_board():
    made = []

    def make(**kwargs):
        made.append(Recorder(**kwargs))
        return made[-1]
    yield make
    for board in made:
        board.close()
        with pytest.raises(OSError):  # closed: the pty is gone for hosts
            os.close(os.open(board.slave_path, os.O_RDWR | os.O_NOCTTY))


@pytest.fixture(autouse=True)
def _no_leftover_threads():
    before = set(threading.enumerate())
    yield
    assert not [t for t in threading.enumerate() if t not in before and t.is_alive()]
