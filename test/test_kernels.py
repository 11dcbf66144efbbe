"""The compiled layer's shared behaviour: input checks of every entry point (``batches.as_states``,
``kernels.finite``) and the general coordinate map, joints driven by several coordinates."""

import dataclasses

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.model import FIRST_FACTOR, FIRST_MASTER, MASTERS

from test_model import GRIPPER
from test_urdf import arm


# ------------------------------------------------------------------------------------------------
# input validation
# ------------------------------------------------------------------------------------------------


def _functions(model):
    n = model.nv
    ok = np.full(n, 0.1)
    return {
        "inverse_dynamics": lambda q, v, a: rd.inverse_dynamics(model, q, v, a),
        "gravity_torques": lambda q, v, a: rd.gravity_torques(model, q),
        "bias_forces": lambda q, v, a: rd.bias_forces(model, q, v),
        "mass_matrix": lambda q, v, a: rd.mass_matrix(model, q),
        "coriolis_matrix": lambda q, v, a: rd.coriolis_matrix(model, q, v),
        "forward_dynamics": lambda q, v, a: rd.forward_dynamics(model, q, v, a),
        "frame_pose": lambda q, v, a: rd.frame_pose(model, q, "fore"),
        "jacobian": lambda q, v, a: rd.jacobian(model, q, "fore"),
        "jacobian_local": lambda q, v, a: rd.jacobian(model, q, "fore", reference="local"),
        "kinetic_energy": lambda q, v, a: rd.kinetic_energy(model, q, v),
        "potential_energy": lambda q, v, a: rd.potential_energy(model, q),
        "regressor": lambda q, v, a: rd.regressor(model, q, v, a),
    }, ok


INPUT_FUNCTIONS = [
    "inverse_dynamics", "gravity_torques", "bias_forces", "mass_matrix", "coriolis_matrix", "forward_dynamics",
    "frame_pose", "jacobian", "jacobian_local", "kinetic_energy", "potential_energy", "regressor",
]


@pytest.mark.parametrize("function", INPUT_FUNCTIONS)
@pytest.mark.parametrize("bad", ["nan", "inf", "short", "long", "batch_nan"])
def test_bad_q_raises_value_error(function, bad):
    model = rd.load_urdf(arm())
    fns, ok = _functions(model)
    q = {
        "nan": np.array([np.nan, 0.1]),
        "inf": np.array([0.1, -np.inf]),
        "short": np.array([0.1]),
        "long": np.array([0.1, 0.2, 0.3]),
        "batch_nan": np.array([[0.1, 0.2], [0.3, np.nan]]),
    }[bad]
    v = ok if bad != "batch_nan" else np.tile(ok, (2, 1))
    with pytest.raises(ValueError):
        fns[function](q, v, v)


@pytest.mark.parametrize("function", ["inverse_dynamics", "bias_forces", "coriolis_matrix", "forward_dynamics",
                                      "kinetic_energy", "regressor"])
@pytest.mark.parametrize("bad", ["nan", "short"])
def test_bad_velocity_raises_value_error(function, bad):
    model = rd.load_urdf(arm())
    fns, ok = _functions(model)
    v = np.array([0.1, np.nan]) if bad == "nan" else np.array([0.1])
    with pytest.raises(ValueError):
        fns[function](ok, v, ok)


@pytest.mark.parametrize("function", ["inverse_dynamics", "forward_dynamics", "regressor"])
def test_bad_third_argument_raises_value_error(function):
    model = rd.load_urdf(arm())
    fns, ok = _functions(model)
    for bad in (np.array([np.inf, 0.0]), np.array([0.0, 0.0, 0.0])):
        with pytest.raises(ValueError):
            fns[function](ok, ok, bad)


def test_bad_external_wrench_raises_value_error():
    model = rd.load_urdf(arm())
    ok = np.full(2, 0.1)
    for wrench in ([np.nan, 0, 0, 0, 0, 0], [1, 2, 3]):
        with pytest.raises(ValueError):
            rd.inverse_dynamics(model, ok, ok, ok, external_wrenches={"fore": wrench})
        with pytest.raises(ValueError):
            rd.forward_dynamics(model, ok, ok, ok, external_wrenches={"fore": wrench})


def test_unknown_frame_is_named():
    model = rd.load_urdf(arm())
    for call in (
        lambda: rd.frame_pose(model, [0.1, 0.2], "hand"),
        lambda: rd.jacobian(model, [0.1, 0.2], "hand"),
        lambda: rd.inverse_dynamics(model, [0.1, 0.2], [0, 0], [0, 0], external_wrenches={"hand": np.zeros(6)}),
    ):
        with pytest.raises((ValueError, KeyError), match="hand"):
            call()
    with pytest.raises(ValueError):
        rd.jacobian(model, [0.1, 0.2], "fore", reference="body")


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
