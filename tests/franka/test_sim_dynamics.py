"""The simulated arm's dynamics (robohal_franka.dynamics): the inertials it serves and simulates,
its equation checked against algorithms it does not use, its friction, its payload, and
libfranka's own Model (built by the real pylibfranka from the URDF the simulator serves)
computing the very gravity, Coriolis and mass of the arm it drives."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
from robohal_franka.dynamics import ArmDynamics, coulomb_impulses
from robohal_franka.facts import ARMS, DH_ROWS, FR3, FR3_LINKS, READY_Q
from robohal_franka.urdf import urdf_text

PERIOD = 0.001
LOWER = np.tril_indices(7, -1)


def random_states(model_name: str, count: int, seed: int):
    arm = ARMS[model_name]
    rng = np.random.default_rng(seed)
    lower, upper = np.array(arm.lower) + 0.1, np.array(arm.upper) - 0.1
    for _ in range(count):
        yield rng.uniform(lower, upper), rng.normal(0.0, 0.5, 7)


def test_the_served_urdf_carries_franka_descriptions_inertials():
    root = ET.fromstring(urdf_text("franka.fr3"))
    links = {link.get("name"): link for link in root.iter("link")}
    for i, inertial in enumerate(FR3_LINKS):
        element = links[f"link{i}"].find("inertial")
        assert float(element.find("mass").get("value")) == inertial.mass
        assert [float(v) for v in element.find("origin").get("xyz").split()] == list(inertial.com)
        assert float(element.find("inertia").get("ixz")) == inertial.inertia[2]
    assert links["link8"].find("inertial") is None  # the flange is a frame, massless as in franka_description
    # franka_description 1.0.1, robots/fr3/inertials.yaml: the arm's seven moving links weigh 15.5 kg
    assert sum(inertial.mass for inertial in FR3_LINKS[1:]) == pytest.approx(15.495, abs=1e-3)
    assert FR3_LINKS[4].com == (-0.0459100965, 0.0630492960, -0.0085187868)


def link_frames(q: np.ndarray) -> list[np.ndarray]:
    """Each link's frame in the base, from the modified-DH table (not from the URDF):
    RotX(alpha) TransX(a) RotZ(q) TransZ(d) per joint."""
    frames, pose = [np.eye(4)], np.eye(4)
    for (a, d, alpha), angle in zip(DH_ROWS, q, strict=True):
        ca, sa, cq, sq = np.cos(alpha), np.sin(alpha), np.cos(angle), np.sin(angle)
        twist = np.array([[1, 0, 0, a], [0, ca, -sa, 0], [0, sa, ca, 0], [0, 0, 0, 1]])
        turn = np.array([[cq, -sq, 0, 0], [sq, cq, 0, 0], [0, 0, 1, d], [0, 0, 0, 1]])
        pose = pose @ twist @ turn
        frames.append(pose)
    return frames


@pytest.mark.parametrize("model_name", ["franka.fr3", "franka.panda"])
def test_gravity_is_the_slope_of_the_links_potential_energy(model_name):
    """g(q) from pinocchio on the served URDF against dV/dq by central differences, V summed over
    the facts' inertials placed by the DH table: the URDF's frames and inertials are the facts'."""
    arm = ARMS[model_name]
    dynamics = ArmDynamics(model_name)

    def potential(q):
        return sum(inertial.mass * 9.81 * (frame[:3, :3] @ np.array(inertial.com) + frame[:3, 3])[2]
                   for inertial, frame in zip(arm.links, link_frames(q), strict=True))

    for q, _ in random_states(model_name, 5, seed=1):
        step = 1e-6
        slope = [(potential(q + step * e) - potential(q - step * e)) / (2 * step) for e in np.eye(7)]
        np.testing.assert_allclose(dynamics.gravity(q), slope, atol=1e-6)


def test_without_friction_a_cycle_is_pinocchios_articulated_body_algorithm():
    """The step inverts CRBA's M(q) (reflected inertia on its diagonal); ABA, a different
    algorithm, gives the same accelerations."""
    dynamics = ArmDynamics("franka.fr3")
    dynamics.viscous[:] = 0.0
    dynamics.coulomb[:] = 0.0
    rng = np.random.default_rng(2)
    for q, dq in random_states("franka.fr3", 10, seed=3):
        tau = rng.normal(0.0, 10.0, 7)
        cycle = dynamics.step(q, dq, tau, PERIOD)
        expected = pin.aba(dynamics.model, dynamics.data, q, dq, tau)
        np.testing.assert_allclose(cycle.ddq, expected, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(cycle.dq, dq + PERIOD * expected, atol=1e-12)
        np.testing.assert_allclose(cycle.q, q + PERIOD * cycle.dq, atol=1e-15)


def test_coulomb_impulses_obey_the_friction_laws():
    """Each joint ends at rest while its friction can hold it, else slides against all of it, never
    driven by it (the box-constrained problem's optimality conditions), for random arms and loads."""
    dynamics = ArmDynamics("franka.fr3")
    limit = PERIOD * np.array(FR3.drives.coulomb)
    rng = np.random.default_rng(4)
    for q, _ in random_states("franka.fr3", 300, seed=5):
        mass = pin.crba(dynamics.model, dynamics.data, q).copy()
        mass[LOWER] = mass.T[LOWER]
        inverse = np.linalg.inv(mass)
        free = rng.normal(0.0, 10 ** rng.uniform(-4, -1), 7) * (rng.random(7) < 0.7)
        stuck = rng.random(7) < 0.5 if rng.random() < 0.5 else None
        impulse = coulomb_impulses(free, inverse, mass, limit, stuck)
        velocity = free + inverse @ impulse
        assert (np.abs(impulse) <= limit * (1 + 1e-12)).all()
        held = np.abs(impulse) < limit * (1 - 1e-9)
        assert np.abs(velocity[held]).max(initial=0.0) < 1e-10
        assert (velocity[~held] * impulse[~held] <= 1e-15).all()


def test_static_friction_holds_joint_1_and_sliding_friction_brakes_it():
    """Joint 1 turns about the vertical: gravity and its own Coriolis terms vanish. Below its
    Coulomb friction (1.137 Nm, Menagerie's FR3 identification) nothing moves; above it, while the
    other joints stick, it follows M11 ddq = tau - 1.137 - 0.21 dq exactly."""
    dynamics = ArmDynamics("franka.fr3")
    q0 = np.array(READY_Q)
    hold = dynamics.gravity(q0)
    q, dq = q0.copy(), np.zeros(7)
    for _ in range(100):
        cycle = dynamics.step(q, dq, hold + np.r_[1.0, np.zeros(6)], PERIOD)
        q, dq = cycle.q, cycle.dq
    assert np.array_equal(q, q0) and not dq.any()
    inertia = pin.crba(dynamics.model, dynamics.data, q0)[0, 0]
    expected_q, expected_dq = 0.0, 0.0
    for _ in range(200):
        cycle = dynamics.step(q, dq, dynamics.gravity(q) + np.r_[2.0, np.zeros(6)], PERIOD)
        q, dq = cycle.q, cycle.dq
        expected_dq += PERIOD * (2.0 - 1.137 - 0.21 * expected_dq) / inertia
        expected_q += PERIOD * expected_dq
    assert np.array_equal(q[1:], q0[1:])  # the others stuck
    assert q[0] - q0[0] == pytest.approx(expected_q, rel=1e-9) and expected_q > 0.01


def test_the_pandas_friction_is_gaz_et_al_s_sigmoid():
    """Zero at rest, against the motion, saturating: joint 1 at +-2 rad/s near the published
    asymptotes phi1 - phi1 / (1 + exp(-phi2 phi3)) and -phi1 / (1 + exp(-phi2 phi3))."""
    dynamics = ArmDynamics("franka.panda")
    assert not dynamics.friction(np.zeros(7)).any()
    speeds = np.linspace(-2.0, 2.0, 41)
    for joint in range(7):
        torques = [dynamics.friction(np.eye(7)[joint] * s)[joint] for s in speeds]
        assert all(t * s > 0 for t, s in zip(torques, speeds, strict=True) if s)
        assert np.all(np.diff(torques) > 0)
    phi1, phi2, phi3 = 0.54615, 5.1181, 0.039533  # joint 1, Gaz et al. 2019
    offset = phi1 / (1 + np.exp(-phi2 * phi3))
    assert dynamics.friction(np.r_[2.0, np.zeros(6)])[0] == pytest.approx(phi1 - offset, abs=1e-4)
    assert dynamics.friction(np.r_[-2.0, np.zeros(6)])[0] == pytest.approx(-offset, abs=1e-4)


def test_a_payload_becomes_part_of_the_arm():
    """setLoad's payload on the flange: its weight adds J_c^T m g to the gravity torques (J_c the
    Jacobian of its centre), and its inertia to the arm's."""
    bare, loaded = ArmDynamics("franka.fr3"), ArmDynamics("franka.fr3")
    center = np.array([0.02, -0.01, 0.06])
    loaded.set_load(2.0, center, np.diag([0.004, 0.005, 0.003]).ravel(order="F"))
    for q, _ in random_states("franka.fr3", 3, seed=6):
        pose, jacobian = bare.flange(q)
        offset = pose[:3, :3] @ center
        center_jacobian = jacobian[:3] - np.cross(offset, jacobian[3:].T).T  # v_c = v + w x r
        np.testing.assert_allclose(loaded.gravity(q) - bare.gravity(q), center_jacobian.T @ [0, 0, 2.0 * 9.81],
                                   atol=1e-9)
        grown = pin.crba(loaded.model, loaded.data, q)[6, 6] - pin.crba(bare.model, bare.data, q)[6, 6]
        axis = jacobian[3:, 6]
        lever = offset - axis * (axis @ offset)  # the centre's distance from joint 7's axis
        assert grown == pytest.approx(2.0 * lever @ lever + axis @ pose[:3, :3] @ np.diag([0.004, 0.005, 0.003])
                                      @ pose[:3, :3].T @ axis, rel=1e-9)


def test_libfrankas_model_computes_the_simulated_arm(start_simulator, raw_client):
    """The real pylibfranka's Model, from the URDF the simulator serves, with a payload set by
    setLoad: its gravity is what the robot measures holding the arm at rest (tau_J), its Coriolis
    and mass are the simulated arm's (the mass without the drives' reflected inertia, which no URDF
    carries), and under zero torque the robot holds the arm: it compensates gravity itself."""
    pytest.importorskip("pylibfranka")
    simulator = start_simulator("--ideal", "1")
    load = [1.5, [0.01, 0.0, 0.08], [0.01, 0, 0, 0, 0.01, 0, 0, 0, 0.005]]
    out = raw_client("model", simulator.host, "pylibfranka", json.dumps(load))
    ours = ArmDynamics("franka.fr3")
    ours.set_load(load[0], np.array(load[1]), np.array(load[2]))
    q = np.array(out["rest_q"])
    assert out["m_total"] == pytest.approx(1.5)
    np.testing.assert_allclose(out["gravity"], ours.gravity(q), atol=1e-6)
    np.testing.assert_allclose(out["rest_tau_J"], out["gravity"], atol=1e-4)  # float32 on the wire
    np.testing.assert_allclose(out["rest_tau_J_d"], 0.0, atol=1e-6)
    np.testing.assert_allclose(out["held_q"], q, atol=1e-7)
    assert len(out["samples"]) == 3
    for sample in out["samples"]:
        q, dq = np.array(sample["q"]), np.array(sample["dq"])
        assert np.abs(dq).max() > 0.1  # the sine moved the arm: Coriolis is no zero here
        coriolis = pin.rnea(ours.model, ours.data, q, dq, np.zeros(7)) - ours.gravity(q)
        np.testing.assert_allclose(sample["coriolis"], coriolis, atol=1e-6)
        mass = pin.crba(ours.model, ours.data, q).copy()
        mass[LOWER] = mass.T[LOWER]
        np.testing.assert_allclose(np.reshape(sample["mass"], (7, 7), order="F"), mass - np.diag(ours.armature),
                                   atol=1e-6)
        np.testing.assert_allclose(sample["gravity"], ours.gravity(q), atol=1e-6)
