"""The simulator launch protocol: SimulatorProcess (a program in its own process, its ready line
and its stderr log), the ready line, sim_* parameters as options, launch(), and which stdin's
end ends a simulator (control_lines)."""

from __future__ import annotations

import io
import os
import pty
import queue
import signal
import socket
import subprocess
import sys
import textwrap
import threading

import pytest
from robohal.errors import UriError
from robohal.sim.process import (
    SimulatorError,
    SimulatorProcess,
    announce_ready,
    boolean,
    control_lines,
    launch,
    parse_ready_line,
    simulator_options,
)
from robohal.uri import RobotUri, parse_uri

READY = "print('READY sim://?model=generic.planar2', flush=True)"


def _start(code: str, **params: str) -> SimulatorProcess:
    return SimulatorProcess([sys.executable, "-c", code], params=params, timeout=20)


def test_a_stopped_simulator_leaves_no_log_behind():
    process = _start("import sys; " + READY + "; sys.stderr.write('chatter\\n'); sys.stdin.read()")
    assert os.path.exists(process.log_path)
    process.stop()
    assert not os.path.exists(process.log_path)
    process.stop()                                       # idempotent


def test_a_simulator_that_failed_by_itself_keeps_its_log():
    process = _start("import sys; " + READY + "; sys.stderr.write('it broke\\n'); sys.exit(3)")
    try:
        process.process.wait(timeout=20)
        assert process.stop() == 3
        with open(process.log_path) as log:
            assert "it broke" in log.read()
    finally:
        os.unlink(process.log_path)


def test_a_silent_failure_leaves_no_empty_log():
    process = _start("import sys; " + READY + "; sys.exit(3)")
    process.process.wait(timeout=20)
    assert process.stop() == 3
    assert not os.path.exists(process.log_path)


def test_a_failed_start_shows_the_log_tail_and_removes_the_log(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)        # tempfile reads TMPDIR again
    with pytest.raises(SimulatorError, match=r"(?s)exited with code 2.*\nno such robot") as error:
        _start("import sys; sys.stderr.write('no such ' + 'robot\\n'); sys.exit(2)")  # (not the argv)
    assert error.value.args[0].endswith("no such robot\n")
    assert not list(tmp_path.glob("robohal-sim-*.log"))


STATS_PEER = """
import sys
print('READY sim://?model=generic.planar2', flush=True)
for line in sys.stdin:
    if line.strip() == 'STATS':
        print('noise before the answer', flush=True)
        print('STATS {"cycles": 42}', flush=True)
"""


def test_stats_asks_and_skips_other_lines():
    process = _start(STATS_PEER)
    try:
        assert process.stats() == {"cycles": 42}
        assert process.stats() == {"cycles": 42}  # again: nothing left over from the first answer
    finally:
        process.stop()


def test_stats_from_a_simulator_that_never_answers_is_an_error_not_a_hang():
    process = _start("import sys; " + READY + "; sys.stdin.read()")
    try:
        with pytest.raises(SimulatorError, match="did not answer STATS"):
            process.stats(timeout=0.5)
    finally:
        process.stop()


# The ready line --------------------------------------------------------------------------------


def test_the_ready_line_names_the_robot_uri():
    assert parse_ready_line("READY abb-egm://127.0.0.1:40123?robot=127.0.0.1") == RobotUri(
        "abb-egm", host="127.0.0.1", port=40123, params={"robot": "127.0.0.1"})
    assert parse_ready_line("READY arduino-planar:///dev/pts/7\n") == RobotUri("arduino-planar", path="/dev/pts/7")
    assert parse_ready_line("READY franka://127.43.7.9") == RobotUri("franka", host="127.43.7.9")


@pytest.mark.parametrize("line", ["/dev/pts/7", "READY", "READY 127.0.0.1:40123 sensor=127.0.0.1:6510",
                                  "ready franka://127.0.0.2", "READYfranka://127.0.0.2", ""])
def test_anything_else_is_a_simulator_error_naming_the_line(line):
    with pytest.raises(SimulatorError) as refused:
        parse_ready_line(line)
    assert repr(line) in str(refused.value)


def test_announce_ready_prints_the_line_parse_ready_line_reads(capsys):
    uri = RobotUri("franka", host="127.43.7.9", params={"model": "franka.fr3"})
    announce_ready(uri)
    out = capsys.readouterr().out
    assert out == "READY franka://127.43.7.9?model=franka.fr3\n"
    assert parse_ready_line(out) == uri


def test_a_garbage_first_line_stops_the_program_and_names_the_line_and_its_stderr():
    with pytest.raises(SimulatorError) as refused:
        _start("import sys, time; sys.stderr.write('booting the arm\\n'); print('/dev/pts/7', flush=True); time.sleep(30)")
    message = str(refused.value)
    assert "'/dev/pts/7'" in message and "READY <robot URI>" in message and message.endswith("booting the arm\n")


def test_the_concrete_uri_is_the_announced_one_plus_the_given_parameters():
    process = _start("import sys; print('READY abb-egm://127.0.0.1:6510?robot=127.0.0.1&mode=joint', flush=True);"
                     " sys.stdin.read()", model="abb.irb1410", mode="pose", timeout="2")
    try:
        # the announced parameters win: the program knows where it is and what it serves
        assert process.uri == parse_uri("abb-egm://127.0.0.1:6510?model=abb.irb1410&mode=joint&robot=127.0.0.1&timeout=2")
    finally:
        process.stop()


# Options and launch ------------------------------------------------------------------------------


def test_sim_parameters_are_the_program_options_in_the_uri_s_order():
    uri = parse_uri("franka://sim?model=franka.fr3&sim_stall_after=2&impl=pylibfranka&sim_ideal=1&sim_max_missed=5")
    assert simulator_options(uri) == ["--stall-after", "2", "--ideal", "1", "--max-missed", "5"]
    assert simulator_options(parse_uri("franka://sim?model=franka.fr3")) == []
    with pytest.raises(UriError, match="sim_"):
        simulator_options(parse_uri("franka://sim?sim_=1"))


@pytest.mark.parametrize("text, value", [("1", True), ("true", True), ("YES", True), ("on", True),
                                         ("0", False), ("false", False), ("no", False), ("Off", False)])
def test_boolean_options_take_a_value(text, value):
    assert boolean(text) is value


def test_a_boolean_option_refuses_other_words():
    with pytest.raises(ValueError, match="'maybe' is not a boolean"):
        boolean("maybe")


FAKE_SIMULATOR = """
import sys

from robohal.sim.process import announce_ready

announce_ready("fake://127.0.0.1:5?robot=127.0.0.1")
print("ARGS " + " ".join(sys.argv[1:]), flush=True)
sys.stdin.read()
"""


def test_launch_runs_the_module_with_its_arguments_then_the_sim_options(tmp_path):
    (tmp_path / "fake_simulator.py").write_text(textwrap.dedent(FAKE_SIMULATOR))
    uri = parse_uri("fake://sim?model=generic.planar2&firmware=emulator&sim_stall_after=2&timeout=3&sim_ideal=1")
    process = launch("fake_simulator", uri, ["--address", "127.0.0.1"], leave_out=("firmware",),
                     env={"PYTHONPATH": str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", "")})
    try:
        assert process.argv == [sys.executable, "-m", "fake_simulator", "--address", "127.0.0.1",
                                "--stall-after", "2", "--ideal", "1"]
        assert process.readline(10) == "ARGS --address 127.0.0.1 --stall-after 2 --ideal 1"
        assert process.uri == parse_uri("fake://127.0.0.1:5?model=generic.planar2&robot=127.0.0.1&timeout=3")
    finally:
        process.stop()


# Control lines: which stdin ends a simulator ----------------------------------------------------

# A simulator program in miniature: it says what control_lines() made of its stdin, echoes its
# control lines, says when they end, and answers "ping" on UDP for as long as it runs.
CONTROLLED = """
import selectors, socket, sys
from robohal.sim.process import announce_ready, control_lines

udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("127.0.0.1", 0))
control = control_lines(sys.stdin)
announce_ready(f"sim://127.0.0.1:{udp.getsockname()[1]}?model=generic.planar2")
print("LINES", "none" if control is None else "ending the run" if control.ends_run else "only", flush=True)
selector = selectors.DefaultSelector()
selector.register(udp, selectors.EVENT_READ, "udp")
if control is not None:
    selector.register(control, selectors.EVENT_READ, "control")
while True:
    for key, _ in selector.select():
        if key.data == "udp":
            data, peer = udp.recvfrom(100)
            udp.sendto(b"pong", peer)
            continue
        lines = control.read()
        if lines is None:
            print("END", flush=True)
            selector.unregister(control)
            if control.ends_run:
                sys.exit(0)
        for line in lines or ():
            print("GOT", line, flush=True)
"""


class Controlled:
    """The miniature simulator in its own process, its stdin as given (closed: ``"closed"``)."""

    def __init__(self, stdin) -> None:
        argv = [sys.executable, "-c", CONTROLLED]
        if stdin == "closed":
            argv, stdin = ["sh", "-c", 'exec "$0" "$@" <&-', *argv], None
        self.process = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, text=True)
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=lambda: [self._lines.put(line.strip()) for line in self.process.stdout],
                                        daemon=True)
        self._reader.start()
        self.uri = parse_ready_line(self.line())

    def line(self, timeout: float = 20.0) -> str:
        """Its next stdout line ("" if none came within ``timeout``)."""
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            return ""

    def answers(self, timeout: float = 10.0) -> bool:
        """Whether it answers a ping within ``timeout``: it runs its loop, not merely exists."""
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.settimeout(timeout)
            probe.sendto(b"ping", (self.uri.host, self.uri.port))
            try:
                return probe.recv(100) == b"pong"
            except TimeoutError:
                return False

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=10)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self._reader.join(timeout=10)  # it reads to the end of stdout, which came with the exit
        self.process.stdout.close()


@pytest.fixture
def controlled():
    started: list[Controlled] = []

    def start(stdin) -> Controlled:
        started.append(Controlled(stdin))
        return started[-1]

    yield start
    for program in started:
        program.close()


@pytest.mark.parametrize("stdin", ["devnull", "closed", "write-only"], ids=["dev-null", "closed", "nohup"])
def test_without_a_pipe_a_simulator_runs_until_sigterm(controlled, stdin):
    # nohup gives a terminal's job a /dev/null it cannot even read; a service and `&` in a script
    # give /dev/null; a supervisor may close stdin altogether
    with open(os.devnull, "wb") as write_only:
        given = {"devnull": subprocess.DEVNULL, "closed": "closed", "write-only": write_only}[stdin]
        program = controlled(given)
    assert program.line() == "LINES none"
    assert program.answers()
    assert program.process.poll() is None
    assert program.terminate() == -signal.SIGTERM


def test_the_end_of_its_launcher_s_pipe_ends_a_simulator(controlled):
    program = controlled(subprocess.PIPE)
    assert program.line() == "LINES ending the run"
    program.process.stdin.write("STATS\n")
    program.process.stdin.flush()
    assert program.line() == "GOT STATS"
    program.process.stdin.close()  # the launcher is gone
    assert program.line() == "END"
    assert program.process.wait(timeout=10) == 0  # by itself: no signal was sent


def test_at_a_terminal_ctrl_d_ends_the_lines_not_the_simulator(controlled):
    master, slave = pty.openpty()
    try:
        program = controlled(slave)
        assert program.line() == "LINES only"
        os.write(master, b"STATS\n")
        assert program.line() == "GOT STATS"
        os.write(master, b"\x04")  # Ctrl-D at the start of a line: the terminal's end of input
        assert program.line() == "END"
        assert program.answers()
        assert program.process.poll() is None
        assert program.terminate() == -signal.SIGTERM
    finally:
        os.close(master)
        os.close(slave)


def test_a_simulator_launched_with_a_pipe_quits_when_the_launcher_closes_it():
    simulator = SimulatorProcess([sys.executable, "-c", CONTROLLED], timeout=20)
    try:
        assert simulator.readline(10) == "LINES ending the run"
        simulator.process.stdin.close()  # what stop() does first, and what a launcher's exit does
        assert simulator.process.wait(timeout=10) == 0
    finally:
        simulator.stop()


def test_control_lines_come_in_whole_lines_across_reads():
    reader, writer = os.pipe()
    try:
        lines = control_lines(os.fdopen(reader, "rb", buffering=0, closefd=False))
        os.write(writer, b"STA")
        assert lines.read() == []
        os.write(writer, b"TS\r\nQUIT\npart")
        assert lines.read() == ["STATS", "QUIT"]
        os.close(writer)
        writer = -1
        assert lines.read() is None  # the unfinished "part" is no line
    finally:
        os.close(reader)
        if writer >= 0:
            os.close(writer)


def test_a_stream_without_a_descriptor_gives_no_control_lines():
    assert control_lines(None) is None  # Python found no stdin at start
    assert control_lines(io.StringIO("STATS\n")) is None
