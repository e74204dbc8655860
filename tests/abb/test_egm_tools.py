"""robot.io and robot.gripper on an ABB cell: real protobuf over real UDP against the simulated
controller, whose vacuum gripper picks a part (robohal_abb.simulator's tool)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import robohal
from robohal import ConnectionLost, HardwareFault, InvalidArgument, UnknownNameError, UriError
from robohal.connection import open_robot
from robohal.control.tools import GripperBusy, SignalGripper
from robohal.sim.process import free_port
from robohal_abb import wire
from robohal_abb.hil import move_over
from robohal_abb.simulator import DEFAULT_PART, TOOL_PARAMS

TOOL = "&".join(f"{key}={value}" for key, value in TOOL_PARAMS.items())


def wait_until(condition, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


# The wire ----------------------------------------------------------------------------------------


def test_rapid_data_goes_both_ways_on_the_wire_and_only_where_given() -> None:
    sensor = wire.decode_sensor(wire.encode_sensor_joints(1, 0, np.zeros(6), rapid=(1.0, 0.0, 2.5)), 6)
    assert sensor.rapid == [1.0, 0.0, 2.5]
    assert wire.decode_sensor(wire.encode_sensor_joints(1, 0, np.zeros(6)), 6).rapid is None
    pose = wire.encode_sensor_pose(1, 0, robohal.get_model("abb.irb1410").forward(np.zeros(6)), rapid=(1.0,))
    assert wire.decode_sensor(pose, 6).rapid == [1.0]
    encoder = wire.SensorEncoder()
    assert wire.decode_sensor(encoder.joints(1, 0, np.zeros(6), (1.0, 1.0)), 6).rapid == [1.0, 1.0]
    assert wire.decode_sensor(encoder.joints(2, 0, np.zeros(6)), 6).rapid is None, "never the last answer's values"
    q, pose0 = np.zeros(6), np.eye(4)
    robot = wire.encode_robot(seqno=0, tm=0, time=1.0, q=q, q_planned=q, pose=pose0, pose_planned=pose0,
                              rapid=[0.0, 1.0, 1.0])
    assert wire.decode_robot(robot, 6).rapid == [0.0, 1.0, 1.0]


def test_non_finite_rapid_data_is_refused_both_ways() -> None:
    with pytest.raises(InvalidArgument):
        wire.encode_sensor_joints(1, 0, np.zeros(6), rapid=(1.0, math.nan))
    from robohal_abb import egm_pb2

    message = egm_pb2.EgmRobot()
    q, pose = np.zeros(6), np.eye(4)
    message.ParseFromString(wire.encode_robot(seqno=0, tm=0, time=1.0, q=q, q_planned=q, pose=pose, pose_planned=pose))
    message.RAPIDfromRobot.dnum.extend([0.0, math.inf])
    with pytest.raises(wire.BadMessage) as bad:
        wire.decode_robot(message.SerializeToString(), 6)
    assert bad.value.reason == "not_finite"


# Declarations ------------------------------------------------------------------------------------


@pytest.mark.parametrize("params, message", [
    ("do=vacuum,vacuum", "declared twice"),
    ("do=vacuum&di=vacuum", "declared twice"),
    ("do=vac-uum", "letters, digits and _"),
    ("do=vacuum&gripper=clamp", "gripper=clamp is not one of the do= signals"),
    ("do=vacuum&di=part&gripper=vacuum&gripper_part=sensor", "gripper_part=sensor is not one of the di= signals"),
    ("do=vacuum&gripper_delay=0.1", "without gripper=OUTPUT"),
    ("do=vacuum&gripper=vacuum&gripper_delay=-1", "gripper_delay"),
    ("dox=vacuum", "unknown abb-egm parameter 'dox'"),
    ("do=vacuum&gripper=vacuum&gripper_dealy=0.2", "unknown abb-egm parameter 'gripper_dealy'; did you mean gripper_delay"),
])
def test_a_bad_signal_declaration_is_the_uri_s_error_before_any_link(params, message) -> None:
    with pytest.raises(UriError, match=message):
        open_robot(f"abb-egm://127.0.0.1:9?model=abb.irb1410&{params}", connect=False)


def test_the_bundled_simulator_comes_with_its_tool() -> None:
    with robohal.connect("abb-egm://sim") as robot:
        assert isinstance(robot.gripper, SignalGripper)
        assert list(robot.io) == ["vacuum", "vacuum_on", "part_present"]
        assert robot.io.signals["part_present"].direction == "input"
    with robohal.connect("abb-egm://sim?sim_tool=none") as robot:
        assert robot.gripper is None and not robot.io


# I/O through the wire ----------------------------------------------------------------------------


def test_an_output_reaches_the_controller_and_its_feedback_comes_back(egm_sim) -> None:
    sim = egm_sim()
    with robohal.connect(sim.connect_uri()) as robot:
        signals = robot.backend.signals
        assert signals.controller_outputs() == {"vacuum": 0.0}
        robot.io["vacuum"] = True
        assert robot.io["vacuum"] is True  # as set, at once
        assert wait_until(lambda: signals.controller_outputs() == {"vacuum": 1.0}), "the controller set it"
        assert wait_until(lambda: robot.io["vacuum_on"]), "and the valve's feedback followed"
        assert sim.wait_line("EVENT output") == "EVENT output vacuum=1"
        robot.io["vacuum"] = False
        assert wait_until(lambda: not robot.io["vacuum_on"])
        assert sim.wait_line("EVENT output") == "EVENT output vacuum=0"


def test_outputs_ride_on_pose_targets_too(egm_sim) -> None:
    sim = egm_sim(mode="pose")
    with robohal.connect(sim.connect_uri()) as robot:
        robot.io["vacuum"] = True
        assert wait_until(lambda: robot.io["vacuum_on"])


def test_connecting_changes_no_output(egm_sim) -> None:
    sim = egm_sim("--comm-timeout", "0")  # the run goes on between the two connections
    with robohal.connect(sim.connect_uri()) as robot:
        robot.io["vacuum"] = True
        assert wait_until(lambda: robot.backend.signals.controller_outputs() == {"vacuum": 1.0})
    with robohal.connect(sim.connect_uri()) as robot:
        assert robot.io["vacuum"] is True, "the output starts as the controller has it"
        robot.backend.cycle()
        assert robot.backend.signals.controller_outputs() == {"vacuum": 1.0}
    sim.stats()  # every line printed so far is in sim.lines now
    assert [line for line in sim.lines if line.startswith("EVENT output")] == ["EVENT output vacuum=1"], \
        "connecting again switched nothing"


def test_unknown_names_inputs_and_bad_values_are_refused_and_send_nothing(egm_sim) -> None:
    sim = egm_sim()
    with robohal.connect(sim.connect_uri()) as robot:
        sent = robot.backend.signals.to_robot
        with pytest.raises(UnknownNameError, match="did you mean vacuum"):
            robot.io["vacum"] = True
        with pytest.raises(UnknownNameError):
            robot.io["gripper"]
        with pytest.raises(InvalidArgument, match="is an input"):
            robot.io["part_present"] = True
        for bad in (math.nan, 2, "on", None):
            with pytest.raises(InvalidArgument):
                robot.io["vacuum"] = bad
        assert robot.backend.signals.to_robot is sent and robot.io["vacuum"] is False


def test_a_controller_that_does_not_report_the_signals_is_a_clear_error(egm_sim) -> None:
    sim = egm_sim("--tool", "none")  # a RAPID program without \\DataToSensor
    with pytest.raises(HardwareFault, match="reports no RAPID data; the URI declares 2 di, 0 ai, 1 do, 0 ao") as fault:
        robohal.connect(sim.connect_uri(**TOOL_PARAMS))
    assert fault.value.names == ("rapid_data_mismatch",)
    with robohal.connect(sim.connect_uri(do="vacuum")) as robot:  # the arm alone still works; the I/O says why not
        with pytest.raises(HardwareFault, match="reports no RAPID data"):
            robot.io["vacuum"] = True
        assert robot.backend.signals.to_robot is None, "nothing is sent for signals the controller does not map"
        assert robot.move_joints(robot.backend.commanded + np.radians([1, 0, 0, 0, 0, 0]), speed=0.3).completed


def test_a_mapping_that_differs_from_the_uri_is_a_clear_error_not_zeros(egm_sim) -> None:
    sim = egm_sim()  # maps 2 di, 1 do
    with robohal.connect(sim.connect_uri(di="vacuum_on", gripper=None, gripper_closed=None,
                                         gripper_part=None)) as robot:
        with pytest.raises(HardwareFault, match="mapping 2 di, 0 ai, 1 do, 0 ao; the URI declares 1 di, 0 ai, 1 do"):
            robot.io["vacuum_on"]
        assert robot.backend.signals.to_robot is None


# The gripper ---------------------------------------------------------------------------------------


def test_the_gripper_picks_the_part_where_it_lies_and_carries_it(egm_sim) -> None:
    sim = egm_sim("--part", ",".join(map(str, DEFAULT_PART)))
    with robohal.connect(sim.connect_uri()) as robot:
        gripper = robot.gripper
        assert gripper.close() is False, "nothing under the cup at the start"
        assert gripper.open() is True
        assert move_over(robot, DEFAULT_PART).completed
        assert wait_until(lambda: np.linalg.norm(robot.pose[:3, 3] - DEFAULT_PART) < 0.002), "settled over it"
        assert gripper.grasp(0.0) is True and gripper.state.is_grasped and robot.io["part_present"]
        sim.wait_line("EVENT picked")
        lifted = np.add(DEFAULT_PART, (0.0, 0.0, 0.1))
        assert move_over(robot, lifted).completed and robot.io["part_present"], "carried"
        assert wait_until(lambda: np.linalg.norm(robot.pose[:3, 3] - lifted) < 0.002)
        assert gripper.open() is True and not gripper.state.is_grasped
        released = sim.wait_line("EVENT released")
        assert np.allclose([float(v) for v in released.split("at=")[1].split(",")], lifted, atol=0.002)


def test_gripper_bad_input_and_a_call_while_busy_are_refused_and_the_arm_moves_meanwhile(egm_sim) -> None:
    sim = egm_sim()
    with robohal.connect(sim.connect_uri(gripper_delay="1.0")) as robot:
        gripper = robot.gripper
        for bad in (lambda: gripper.move(0.02), lambda: gripper.move(math.nan), lambda: gripper.move(1.0),
                    lambda: gripper.grasp(0.0, force=-1.0), lambda: gripper.close(speed=0.0)):
            with pytest.raises(InvalidArgument):
                bad()
        closing = gripper.close(wait=False)
        with pytest.raises(GripperBusy):
            gripper.open()
        assert robot.move_joints(robot.backend.commanded + np.radians([2, 0, 0, 0, 0, 0]), speed=0.3).completed
        assert closing.result(timeout=10.0) is False  # closed on nothing
        assert not gripper.busy and gripper.open() is True


def test_a_feedback_that_never_comes_is_a_hardware_fault(egm_sim) -> None:
    sim = egm_sim()
    # part_present as the "closed" feedback: away from the part it never comes
    uri = sim.connect_uri(gripper_closed="part_present", gripper_timeout="0.3", gripper_delay="0")
    with robohal.connect(uri) as robot:
        with pytest.raises(HardwareFault, match=r"part_present did not report closed within 0\.3 s"):
            robot.gripper.close()
        assert robot.io["vacuum"] is True, "the output stays as set: the tool is the user's to release"
        assert robot.gripper.open() is True  # opening waits for part_present off: it is


def test_a_silent_controller_ends_a_gripper_command_with_connection_lost_and_blocks_nothing(egm_sim) -> None:
    sim = egm_sim("--retry-after", "0.1")  # the template's error handler starts a new run after the silence
    with robohal.connect(sim.connect_uri(timeout="0.5", gripper_timeout="30", gripper_delay="2")) as robot:
        sim.send("STALL")  # before the command, which takes 2 s at least: it cannot end before the silence
        closing = robot.gripper.close(wait=False)
        with pytest.raises(ConnectionLost):
            closing.result(timeout=20.0)  # the link's timeout, long before the gripper's 30 s
        with pytest.raises(ConnectionLost):
            robot.state
        with pytest.raises(ConnectionLost):
            robot.io["vacuum"] = False
        assert not robot.gripper.busy
        sim.send("RESUME")
        assert wait_until(lambda: _answers(robot), timeout=10.0), "back once the controller talks again"
        assert robot.gripper.open() is True


def _answers(robot) -> bool:
    try:
        robot.io["vacuum_on"]
    except ConnectionLost:
        return False
    return True


def test_analog_signals_go_through_as_numbers(bare_robot) -> None:
    """A controller of our own making (one UDP socket) that maps an analog input and output."""
    bare, port = bare_robot(), free_port()
    model = robohal.get_model("abb.irb1410")
    q, pose = np.zeros(6), model.forward(np.zeros(6))
    started = time.time()

    def message(seqno: int, pressure: float) -> bytes:  # counts 0 di, 1 ai, 0 do, 1 ao; pressure; flow as it is
        return wire.encode_robot(seqno=seqno, tm=seqno * 4, time=started + seqno * 0.004, q=q, q_planned=q, pose=pose,
                                 pose_planned=pose, rapid=[0.0, 1.0, 0.0, 1.0, pressure, 0.7])

    robot = bare.connect(f"abb-egm://127.0.0.1:{port}?model=abb.irb1410&robot=127.0.0.1&ao=flow&ai=pressure",
                         message(0, 2.5))
    with robot:
        assert robot.io["pressure"] == 2.5 and robot.io["flow"] == 0.7, "the output starts as the controller has it"
        robot.io["flow"] = 1.25
        with pytest.raises(InvalidArgument):
            robot.io["flow"] = math.inf
        bare.answers()  # the answers so far
        bare.sock.setblocking(True)
        bare.sock.settimeout(5.0)
        bare.send(port, message(1, 3.0))
        answer = wire.decode_sensor(bare.sock.recv(65536), 6)
        assert answer.rapid == [1.0, 1.25], "the marker, then exactly what was set"
        assert wait_until(lambda: robot.io["pressure"] == 3.0)
