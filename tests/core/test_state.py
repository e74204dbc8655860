"""RobotState: a sample nobody can change, however a backend built it."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from robohal.state import RobotMode, RobotState


def test_the_constructor_copies_what_it_is_given() -> None:
    q = np.zeros(3)
    info = {"seqno": 1}
    state = RobotState(time=0.0, q=q, dq=[0.0, 0.0, 0.0], info=info)
    q[0] = 1.0
    info["seqno"] = 2
    assert state.q[0] == 0.0 and state.info["seqno"] == 1
    with pytest.raises(ValueError):
        state.q[0] = 1.0


def test_a_handed_over_state_is_read_only_and_keeps_no_target_alias() -> None:
    target = np.ones(3)
    state = RobotState.handed_over(1.5, np.zeros(3), np.zeros(3), RobotMode.MOVING, ("a",), target, {"seqno": 7},
                                   np.arange(6.0))
    target[0] = 5.0  # the backend's target moves on
    assert state.q_commanded[0] == 1.0
    for array in (state.q, state.dq, state.q_commanded, state.wrench):
        with pytest.raises(ValueError):
            array[0] = 9.0
    with pytest.raises(TypeError):
        state.info["seqno"] = 8
    assert (state.time, state.mode, state.faults, state.dof) == (1.5, RobotMode.MOVING, ("a",), 3)
    copy = pickle.loads(pickle.dumps(state))
    assert copy.info["seqno"] == 7 and np.array_equal(copy.wrench, state.wrench)
