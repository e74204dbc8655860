"""A simulated robot that starts as a real one (``--locked 1``): the real pylibfranka, through
robohal's backend, is refused until Desk has FCI active and the joints unlocked, each time with
what is shut and the command that opens it; then the arm moves."""

from __future__ import annotations

import numpy as np
import pytest
import robohal
from robohal.errors import ConnectFailed, HardwareFault


@pytest.mark.parametrize("dialect", ["v1", "web"])
def test_libfranka_is_refused_until_fci_is_on_and_the_joints_unlocked(start_simulator, tmp_path, dialect):
    pytest.importorskip("pylibfranka")
    simulator = start_simulator("--desk", dialect, "--locked", "1")
    uri = f"franka://{simulator.host}?model=franka.fr3&realtime=ignore"
    with pytest.raises(ConnectFailed, match=f"robohal franka fci on franka://{simulator.host}") as refused:
        robohal.connect(uri)
    assert "Connection to FCI refused" in str(refused.value)  # libfranka's own words come along
    with simulator.desk(tmp_path) as desk:
        desk.take_control()
        desk.fci(True)
        with robohal.connect(uri) as robot:
            target = robot.backend.commanded + np.radians(2.0)
            with pytest.raises(HardwareFault, match=f"robohal franka unlock franka://{simulator.host}") as locked:
                robot.move_joints(target, speed=0.5)
            assert "Did you open the brakes?" in str(locked.value) and not locked.value.recoverable
            desk.unlock()
            result = robot.move_joints(target, speed=0.5)
            assert result.completed and np.allclose(result.commanded[-1], target, atol=1e-9)
            # locking the joints under a moving arm ends the motion (the brakes hold it)
            far = robot.backend.commanded + np.radians(10.0)
            robot.move_joints(far, speed=0.05, wait=False)  # seconds long: still moving when the brakes shut
            desk.lock()
            with pytest.raises(HardwareFault):
                robot.wait(timeout=30.0)
        desk.release_control()
    assert simulator.stats()["robot_reflexes"] == 0
