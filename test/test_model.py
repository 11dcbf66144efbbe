"""The robot model: immutable, and its coordinate map ``q_joints = E q + o``."""

import dataclasses

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.rigid_body.model import FIRST_FACTOR, FIRST_MASTER, MASTERS

GRIPPER = """<robot name="gripper">
  <link name="palm"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="a"><inertial><origin xyz="0 0.02 0.05"/><mass value="0.2"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>
  <link name="b"><inertial><origin xyz="0 -0.02 0.05"/><mass value="0.3"/>
    <inertia ixx="2e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>
  <link name="c"><inertial><origin xyz="0.1 0 0"/><mass value="0.5"/>
    <inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="1e-3"/></inertial></link>
  <joint name="wrist" type="revolute"><parent link="palm"/><child link="c"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="1"/></joint>
  <joint name="finger_a" type="prismatic"><parent link="c"/><child link="a"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="0.04" effort="10" velocity="1"/></joint>
  <joint name="finger_b" type="prismatic"><parent link="c"/><child link="b"/><axis xyz="0 1 0"/>
    <limit lower="-0.04" upper="0" effort="10" velocity="1"/><mimic joint="finger_a" multiplier="-1" offset="0.01"/></joint>
</robot>"""


def test_model_is_immutable():
    model = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    with pytest.raises(Exception):
        model.gravity[2] = 0.0
    with pytest.raises(Exception):
        model.name = "other"
    np.testing.assert_array_equal(model.gravity, [0.0, 0.0, -9.81])
    for array in (model.topology, model.bodies, model.position_limits, model.damping, model.viscous_damping,
                  model.continuous):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        model._kernel_arrays = None


def test_kernel_arrays_are_private_copies_made_once():
    """The kernels' writable arrays equal the public read-only ones but are not them, and a derived
    model gets its own (with_gravity, with_payload never share or edit the original's)."""
    model = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    for public, private in zip((model.topology, model.bodies, model.gravity), model._kernel_arrays):
        np.testing.assert_array_equal(public, private)
        assert not np.shares_memory(public, private)
    moon = model.with_gravity([0, 0, -1.62])
    np.testing.assert_array_equal(moon._kernel_arrays[2], [0, 0, -1.62])
    np.testing.assert_array_equal(model._kernel_arrays[2], [0, 0, -9.81])
    heavier = model.with_payload("tip", 1.0, [0, 0, 0], [0] * 6)
    np.testing.assert_array_equal(heavier._kernel_arrays[1], heavier.bodies)
    np.testing.assert_array_equal(model._kernel_arrays[1], model.bodies)


def test_joint_map_of_a_mimic_joint():
    model = rd.load_urdf(GRIPPER)
    assert model.joint_names == ("wrist", "finger_a") and model.body_joints == ("wrist", "finger_a", "finger_b")
    E, o = model.joint_map()
    np.testing.assert_array_equal(E, [[1, 0], [0, 1], [0, -1]])
    np.testing.assert_array_equal(o, [0, 0, 0.01])
    assert list(model.topology[:, MASTERS]) == [1, 1, 1]
    np.testing.assert_array_equal(model.topology[:, FIRST_MASTER], [0, 1, 1])
    np.testing.assert_array_equal(model.bodies[:, FIRST_FACTOR], [1, 1, -1])


def test_mass_matrix_is_the_joint_map_applied_to_the_joints():
    """``M = E^T M_joints E``, ``tau = E^T ID_joints(E q + o, E qd, E qdd)``: the mimic model against the same
    URDF with every joint independent (mimic=False)."""
    model, joints = rd.load_urdf(GRIPPER), rd.load_urdf(GRIPPER, mimic=False)
    assert joints.joint_names == model.body_joints
    E, o = model.joint_map()
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-0.5, 0.5, (3, model.nv))
        np.testing.assert_allclose(rd.mass_matrix(model, q), E.T @ rd.mass_matrix(joints, E @ q + o) @ E, atol=1e-12)
        np.testing.assert_allclose(rd.inverse_dynamics(model, q, qd, qdd),
                                   E.T @ rd.inverse_dynamics(joints, E @ q + o, E @ qd, E @ qdd), atol=1e-12)
