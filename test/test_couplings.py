"""Joints coupled to several coordinates: against Spong's five-bar linkage (section 6.4, eqs. 6.104-6.108),
and the kernels' general coordinate map (joints driven by several coordinates, set in the arrays).

``urdf/five_bar.urdf`` and ``urdf/five_bar_decoupled.urdf`` are the seed's parallelogram cut open at
one joint: q3 = q1 - q2, q4 = q2 - q1 + pi through two ``<mimic>`` children each.
"""

import dataclasses
import math

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.rigid_body.model import FIRST_FACTOR, FIRST_MASTER, MASTERS
from robot_dynamics.description.robots import bundled_urdf

from test_model import GRIPPER

G = 9.81
L1, L2 = 1.0, 0.5
MASS = (1.0, 0.8, 0.6, 0.4)
INERTIA = (0.02, 0.01, 0.015, 0.005)
CENTRES = {"five_bar": (0.5, 0.25, 0.4, 0.2), "five_bar_decoupled": (0.5, 0.25, 0.4, 0.3)}


def spong(robot):
    """``(D(q), dD/dq(q), V(q))`` of eqs. 6.107 and the potential energy before (6.108)."""
    m1, m2, m3, m4 = MASS
    I1, I2, I3, I4 = INERTIA
    lc1, lc2, lc3, lc4 = CENTRES[robot]
    d11 = m1 * lc1**2 + m3 * lc3**2 + m4 * L1**2 + I1 + I3
    d22 = m2 * lc2**2 + m3 * L2**2 + m4 * lc4**2 + I2 + I4
    a = m3 * L2 * lc3 - m4 * L1 * lc4

    def D(q):
        d12 = a * math.cos(q[1] - q[0])
        return np.array([[d11, d12], [d12, d22]])

    def dD(q):  # dD[k] = dD/dq_k
        s = a * math.sin(q[1] - q[0])
        return np.array([[[0, s], [s, 0]], [[0, -s], [-s, 0]]])

    def V(q):
        return G * (math.sin(q[0]) * (m1 * lc1 + m3 * lc3 + m4 * L1) + math.sin(q[1]) * (m2 * lc2 + m3 * L2 - m4 * lc4))

    return D, dD, V


def states(seed, count=6):
    rng = np.random.default_rng(seed)
    return rng.uniform(-math.pi, math.pi, (count, 2)), rng.uniform(-2, 2, (count, 2)), rng.uniform(-3, 3, (count, 2))


@pytest.fixture(params=sorted(CENTRES))
def robot(request):
    return request.param


def test_five_bar_coordinates(robot):
    model = rd.load_urdf(robot)
    assert model.joint_names == ("q1", "q2")
    assert dict(model.couplings) == {"q3": ((("q1", 1.0), ("q2", -1.0)), 0.0),
                                     "q4": ((("q2", 1.0), ("q1", -1.0)), math.pi)}
    assert dict(model.mimic_joints) == {}  # no joint follows a single coordinate


def test_five_bar_mass_matrix_is_6_107(robot):
    model, (D, _, _) = rd.load_urdf(robot), spong(robot)
    q, _, _ = states(1)
    for qk in q:
        np.testing.assert_allclose(rd.mass_matrix(model, qk), D(qk), atol=1e-12)


def test_five_bar_gravity_is_the_gradient_of_its_potential_energy(robot):
    """``g = dV/dq`` with Spong's ``V`` (central differences of the closed form), and our own
    potential energy is that ``V`` (up to the constant of the links' heights at q = 0)."""
    model, (_, _, V) = rd.load_urdf(robot), spong(robot)
    q, _, _ = states(2)
    step = 1e-6
    for qk in q:
        gradient = [(V(qk + step * e) - V(qk - step * e)) / (2 * step) for e in np.eye(2)]
        np.testing.assert_allclose(rd.gravity_torques(model, qk), gradient, atol=1e-8)
        np.testing.assert_allclose(rd.potential_energy(model, qk), V(qk), atol=1e-12)


def test_five_bar_inverse_dynamics_is_d_qdd_plus_christoffel_plus_g(robot):
    """``tau = D qdd + c + g`` with ``c_k = sum_ij c_ijk qd_i qd_j``, ``c_ijk = 1/2 (dd_kj/dq_i + dd_ki/dq_j
    - dd_ij/dq_k)`` from (6.107) (Spong eq. 6.63), and forward dynamics inverts it."""
    model, (D, dD, _) = rd.load_urdf(robot), spong(robot)
    q, qd, qdd = states(3)
    for qk, qdk, qddk in zip(q, qd, qdd):
        d = dD(qk)  # d[i, k, j] = dd_kj / dq_i
        c = np.array([sum(0.5 * (d[i, k, j] + d[j, k, i] - d[k, i, j]) * qdk[i] * qdk[j]
                          for i in range(2) for j in range(2)) for k in range(2)])
        g = rd.gravity_torques(model, qk)
        tau = D(qk) @ qddk + c + g
        np.testing.assert_allclose(rd.inverse_dynamics(model, qk, qdk, qddk), tau, atol=1e-10)
        np.testing.assert_allclose(rd.coriolis_matrix(model, qk, qdk) @ qdk, c, atol=1e-10)
        np.testing.assert_allclose(rd.forward_dynamics(model, qk, qdk, tau), qddk, atol=1e-9)
        np.testing.assert_allclose(rd.kinetic_energy(model, qk, qdk), 0.5 * qdk @ D(qk) @ qdk, atol=1e-12)


def test_decoupled_five_bar_has_no_coupling_and_bias_equals_gravity():
    """(6.108) holds: d12 = 0 at every q, and with a constant diagonal D there are no Coriolis or
    centrifugal terms, so the bias forces are gravity alone at every q, qd."""
    model = rd.load_urdf("five_bar_decoupled")
    q, qd, _ = states(4, count=20)
    M = rd.mass_matrix(model, q)
    np.testing.assert_allclose(M[:, 0, 1], 0.0, atol=1e-13)
    np.testing.assert_allclose(M, np.broadcast_to(M[0], M.shape), atol=1e-13)
    np.testing.assert_allclose(rd.bias_forces(model, q, qd), rd.gravity_torques(model, q), atol=1e-12)


def test_generic_five_bar_is_coupled():
    q, qd, _ = states(5)
    model = rd.load_urdf("five_bar")
    assert np.abs(rd.mass_matrix(model, q)[:, 0, 1]).max() > 0.01
    assert np.abs(rd.bias_forces(model, q, qd) - rd.gravity_torques(model, q)).max() > 0.01


def test_couplings_through_python_equal_the_mimic_tags(robot):
    xml = bundled_urdf(robot).read_text()
    untagged = xml.replace('<mimic joint="q1" multiplier="1"/><mimic joint="q2" multiplier="-1"/>', "")
    untagged = untagged.replace('<mimic joint="q2" multiplier="1" offset="3.141592653589793"/><mimic joint="q1" multiplier="-1"/>', "")
    assert "<mimic joint" not in untagged
    coupled = rd.load_urdf(untagged, couplings={"q3": {"q1": 1.0, "q2": -1.0}, "q4": ({"q2": 1.0, "q1": -1.0}, math.pi)})
    model = rd.load_urdf(xml)
    q, qd, qdd = states(6)
    np.testing.assert_allclose(rd.inverse_dynamics(coupled, q, qd, qdd), rd.inverse_dynamics(model, q, qd, qdd), atol=1e-12)


def test_coupling_chains_are_resolved():
    """q4 follows q3 (itself coupled): q4 = 2 q3 + 1 = 2 (q1 - q2) + 1."""
    xml = bundled_urdf("five_bar").read_text().replace(
        '<mimic joint="q2" multiplier="1" offset="3.141592653589793"/><mimic joint="q1" multiplier="-1"/>',
        '<mimic joint="q3" multiplier="2" offset="1"/>')
    model = rd.load_urdf(xml)
    assert dict(model.couplings)["q4"] == ((("q1", 2.0), ("q2", -2.0)), 1.0)
    E, o = model.joint_map()
    np.testing.assert_allclose(E[model.body_joints.index("q4")], [2, -2])


@pytest.mark.parametrize("tags, message", [
    ('<mimic joint="q4" multiplier="1"/>', "cycle"),
    ('<mimic joint="nowhere" multiplier="1"/>', "'nowhere', which is not a moving joint"),
    ('<mimic joint="q1" multiplier="nan"/>', "non-finite"),
    ('<mimic joint="q1" multiplier="two"/>', "not a number"),
    ('<mimic multiplier="1"/>', "without a joint attribute"),
])
def test_bad_couplings_are_urdf_errors_naming_the_joint(tags, message):
    xml = bundled_urdf("five_bar").read_text().replace(
        '<mimic joint="q1" multiplier="1"/><mimic joint="q2" multiplier="-1"/>', tags)
    xml = xml.replace('<mimic joint="q2" multiplier="1" offset="3.141592653589793"/><mimic joint="q1" multiplier="-1"/>',
                      '<mimic joint="q3" multiplier="1"/>')
    with pytest.raises(rd.URDFError, match="q3") as error:
        rd.load_urdf(xml)
    assert message in str(error.value)


def test_bad_python_coupling_is_a_urdf_error():
    xml = bundled_urdf("five_bar").read_text()
    with pytest.raises(rd.URDFError, match="q3"):
        rd.load_urdf(xml, couplings={"q3": {"q1": math.inf}})
    with pytest.raises(rd.URDFError, match="q3"):
        rd.load_urdf(xml, couplings={"q3": 5})


# ------------------------------------------------------------------------------------------------
# joints driven by several coordinates (the kernels' general path: topology wider than one master)
# ------------------------------------------------------------------------------------------------

def coupled_gripper():
    """GRIPPER with finger_b = -finger_a + 0.5 wrist + 0.01: two masters, set directly in the arrays."""
    model = rd.load_urdf(GRIPPER)
    topology = np.zeros((3, FIRST_MASTER + 2), dtype=np.int64)
    topology[:, :FIRST_MASTER + 1] = model.topology
    topology[2, MASTERS] = 2
    topology[2, FIRST_MASTER + 1] = 0  # wrist
    bodies = np.zeros((3, FIRST_FACTOR + 2))
    bodies[:, :FIRST_FACTOR + 1] = model.bodies
    bodies[2, FIRST_FACTOR + 1] = 0.5
    return dataclasses.replace(model, topology=topology, bodies=bodies)


def test_coupled_joint_map():
    E, o = coupled_gripper().joint_map()
    np.testing.assert_array_equal(E, [[1, 0], [0, 1], [0.5, -1]])
    np.testing.assert_array_equal(o, [0, 0, 0.01])


def test_coupled_dynamics_are_the_joint_map_applied_to_the_joints():
    """Every kernel on two masters against the independent-joint model through ``E``: ``M = E^T M_j E``,
    ``tau = E^T ID_j``, ``C qd = h - g``, ``J = J_j E``, ``K = K_j``, ``Y theta = tau``, and FD inverts ID."""
    model, joints = coupled_gripper(), rd.load_urdf(GRIPPER, mimic=False)
    E, o = model.joint_map()
    rng = np.random.default_rng(5)
    for _ in range(4):
        q, qd, qdd = rng.uniform(-0.5, 0.5, (3, model.nv))
        qj, qdj, qddj = E @ q + o, E @ qd, E @ qdd
        tau = rd.inverse_dynamics(model, q, qd, qdd)
        np.testing.assert_allclose(tau, E.T @ rd.inverse_dynamics(joints, qj, qdj, qddj), atol=1e-12)
        np.testing.assert_allclose(rd.mass_matrix(model, q), E.T @ rd.mass_matrix(joints, qj) @ E, atol=1e-12)
        np.testing.assert_allclose(rd.gravity_torques(model, q), E.T @ rd.gravity_torques(joints, qj), atol=1e-12)
        np.testing.assert_allclose(rd.bias_forces(model, q, qd), E.T @ rd.bias_forces(joints, qj, qdj), atol=1e-12)
        np.testing.assert_allclose(rd.coriolis_matrix(model, q, qd), E.T @ rd.coriolis_matrix(joints, qj, qdj) @ E,
                                   atol=1e-12)
        np.testing.assert_allclose(rd.forward_dynamics(model, q, qd, tau), qdd, atol=1e-9)
        for link in ("a", "b"):
            np.testing.assert_allclose(rd.jacobian(model, q, link), rd.jacobian(joints, qj, link) @ E, atol=1e-12)
            np.testing.assert_allclose(rd.frame_pose(model, q, link), rd.frame_pose(joints, qj, link), atol=1e-12)
        np.testing.assert_allclose(rd.kinetic_energy(model, q, qd), rd.kinetic_energy(joints, qj, qdj), atol=1e-12)
        np.testing.assert_allclose(rd.regressor(model, q, qd, qdd) @ rd.inertial_parameters(model), tau, atol=1e-12)
        wrench = {"b": rng.uniform(-1, 1, 6)}
        np.testing.assert_allclose(rd.inverse_dynamics(model, q, qd, qdd, external_wrenches=wrench),
                                   E.T @ rd.inverse_dynamics(joints, qj, qdj, qddj, external_wrenches=wrench), atol=1e-12)
