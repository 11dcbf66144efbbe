"""robot_dynamics against Pinocchio (test-only oracle) on example-robot-data and on random trees.

Every quantity is compared at 20 random states with max error <= 1e-9 * (1 + |value|):
tau (rnea), g, h = rnea(q, qd, 0), M (crba, upper triangle symmetrised), C qd
(computeCoriolisMatrix), qdd (aba), frame poses and Jacobians of every link ("world" ==
LOCAL_WORLD_ALIGNED, "local" == LOCAL, rows swapped to [angular; linear]), kinetic and potential
energy.  Joints are matched by name (Pinocchio orders them its own way and stores a continuous
joint as (cos, sin)).

Mimic models (load_urdf(..., mimic=True), the default) are compared in two ways:
- against Pinocchio's full model (mimic ignored) at the expanded state q_full = G q + o:
  tau = G^T tau_full, M = G^T M_full G, J = J_full G, energies equal, ... (every quantity, every
  robot, including talos_full_v2 which Pinocchio 4.1 cannot build in mimic mode);
- against pin.buildModelFromUrdf(path, mimic=True) for rnea, crba, gravity and Jacobians (its
  Coriolis matrix, aba and energies are wrong or unsupported in mimic mode).
"""

import functools
import warnings
import zlib

import numpy as np
import pytest

import robot_dynamics as rd

import robot_files as rf  # noqa: E402
from robot_files import assert_close  # noqa: E402

N_STATES = 20
ROBOTS = list(rf.ERD_ROBOTS)
TREE_SEEDS = list(range(12))


# ------------------------------------------------------------------------------------------------
# cached set-up (per pytest-xdist worker)
# ------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def info_of(robot):
    return rf.parse_urdf(rf.erd_path(robot))


@functools.lru_cache(maxsize=None)
def ours(robot, mimic):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pr2's inertias violate the triangle inequality
        return rd.load_urdf(rf.erd_path(robot), mimic=mimic)


@functools.lru_cache(maxsize=None)
def full_oracle(robot):
    return rf.PinOracle(rf.erd_path(robot), info_of(robot).independent(False))


def tree_source(seed):
    """Seeds < 100: mimic masters are ancestors (Pinocchio's mimic mode can build those);
    seeds >= 100: masters anywhere in the tree (only the expanded full model is an oracle)."""
    return rf.random_tree_urdf(
        seed, n_links=4 + seed % 9, n_mimic=seed % 3, shuffle=seed % 2 == 1, mimic_ancestor_only=seed < 100
    )


@functools.lru_cache(maxsize=None)
def tree_case(seed, mimic):
    xml = tree_source(seed)
    info = rf.parse_urdf(xml)
    model = rd.load_urdf(xml, mimic=mimic)
    return xml, info, model, rf.PinOracle(xml, info.independent(False))


def states(info, names, seed):
    rng = np.random.default_rng(seed)
    return rf.random_states(rng, info, names, N_STATES)


# ------------------------------------------------------------------------------------------------
# the comparisons, shared by robots and random trees
# ------------------------------------------------------------------------------------------------

DYNAMICS = ["inverse_dynamics", "gravity", "bias", "mass_matrix", "coriolis", "forward_dynamics", "energies"]
KINEMATICS = ["frame_pose", "jacobian_world", "jacobian_local"]


def compare(quantity, model, info, full, seed, frames=None):
    """Ours (model, possibly with mimic joints) vs Pinocchio's full model at the expanded state."""
    names = list(model.joint_names)
    ex = rf.MimicExpansion(info, names)
    G = ex.G
    q, qd, qdd = states(info, names, seed)
    frames = list(model.link_names) if frames is None else frames
    for k in range(N_STATES):
        qf, vf, af = ex.q(q[k]), ex.v(qd[k]), ex.v(qdd[k])
        tag = f"{quantity}, state {k}"
        if quantity == "inverse_dynamics":
            assert_close(rd.inverse_dynamics(model, q[k], qd[k], qdd[k]), G.T @ full.rnea(qf, vf, af), tag)
        elif quantity == "gravity":
            assert_close(rd.gravity_torques(model, q[k]), G.T @ full.gravity(qf), tag)
        elif quantity == "bias":
            assert_close(rd.bias_forces(model, q[k], qd[k]), G.T @ full.bias(qf, vf), tag)
        elif quantity == "mass_matrix":
            assert_close(rd.mass_matrix(model, q[k]), G.T @ full.mass_matrix(qf) @ G, tag)
        elif quantity == "coriolis":
            C = rd.coriolis_matrix(model, q[k], qd[k])
            assert_close(C @ qd[k], G.T @ full.coriolis_times_qd(qf, vf), tag)
        elif quantity == "forward_dynamics":
            tau = G.T @ full.rnea(qf, vf, af)
            qdd_ours = rd.forward_dynamics(model, q[k], qd[k], tau)
            assert_close(qdd_ours, qdd[k], tag + " (fd of rnea)")
            if np.array_equal(G, np.eye(len(names))):
                assert_close(qdd_ours, full.aba(qf, vf, tau), tag + " (pin.aba)")
        elif quantity == "energies":
            assert_close(rd.kinetic_energy(model, q[k], qd[k]), full.kinetic_energy(qf, vf), tag + " kinetic")
            assert_close(rd.potential_energy(model, q[k]), full.potential_energy(qf), tag + " potential")
        elif quantity == "frame_pose":
            for link in frames:
                assert_close(rd.frame_pose(model, q[k], link), full.frame_pose(qf, link), f"{tag}, {link}")
        elif quantity.startswith("jacobian_"):
            reference = quantity.removeprefix("jacobian_")
            for link in frames:
                J = rd.jacobian(model, q[k], link, reference=reference)
                assert_close(J, full.jacobian(qf, link, reference) @ G, f"{tag}, {link}")
        else:  # pragma: no cover
            raise ValueError(quantity)


# ------------------------------------------------------------------------------------------------
# example-robot-data, mimic tags ignored (Pinocchio's default build)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("robot", ROBOTS)
def test_model_description_matches_urdf(robot):
    info = info_of(robot)
    for mimic in (False, True):
        model = ours(robot, mimic)
        assert list(model.joint_names) == rf.expected_joint_order(info, mimic), "joint order"
        assert model.nv == len(info.independent(mimic))
        assert set(model.link_names) == set(info.links)
        assert len(model.link_names) == len(info.links)
        assert set(model.link_names) == set(full_oracle(robot).body_frames())
        assert tuple(model.joint_types) == tuple(info.joints[n].type for n in model.joint_names)
        lim = np.asarray(model.position_limits)
        assert lim.shape == (model.nv, 2)
        for k, name in enumerate(model.joint_names):
            j = info.joints[name]
            if j.type == "continuous":
                assert lim[k, 0] == -np.inf and lim[k, 1] == np.inf, name
            else:
                assert (lim[k, 0], lim[k, 1]) == (j.lower, j.upper), name
        expected_mimic = (
            {j.name: j.mimic for j in info.moving if j.mimic is not None} if mimic else {}
        )
        assert {k: tuple(v) for k, v in model.mimic_joints.items()} == expected_mimic
    np.testing.assert_array_equal(ours(robot, False).gravity, [0.0, 0.0, -9.81])


@pytest.mark.parametrize("quantity", DYNAMICS + KINEMATICS)
@pytest.mark.parametrize("robot", ROBOTS)
def test_against_pinocchio(robot, quantity):
    compare(quantity, ours(robot, False), info_of(robot), full_oracle(robot), seed=zlib.crc32(robot.encode()))


# ------------------------------------------------------------------------------------------------
# example-robot-data with mimic joints
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("quantity", DYNAMICS + KINEMATICS)
@pytest.mark.parametrize("robot", rf.ERD_MIMIC_ROBOTS)
def test_mimic_against_expanded_pinocchio(robot, quantity):
    model = ours(robot, True)
    assert model.nv < ours(robot, False).nv, "mimic joints were not eliminated"
    compare(quantity, model, info_of(robot), full_oracle(robot), seed=7)


@pytest.mark.parametrize("robot", [r for r in rf.ERD_MIMIC_ROBOTS if r != "talos_full_v2"])
def test_mimic_against_pinocchio_mimic_mode(robot):
    """rnea, crba, gravity, Jacobians against pin.buildModelFromUrdf(path, mimic=True)."""
    model = ours(robot, True)
    info = info_of(robot)
    oracle = rf.PinOracle(rf.erd_path(robot), model.joint_names, mimic=True)
    check_pin_mimic_mode(model, info, oracle, seed=11)


def check_pin_mimic_mode(model, info, oracle, seed):
    q, qd, qdd = states(info, list(model.joint_names), seed)
    for k in range(N_STATES):
        assert_close(rd.inverse_dynamics(model, q[k], qd[k], qdd[k]), oracle.rnea(q[k], qd[k], qdd[k]), f"rnea {k}")
        assert_close(rd.mass_matrix(model, q[k]), oracle.mass_matrix(q[k]), f"crba {k}")
        assert_close(rd.gravity_torques(model, q[k]), oracle.gravity(q[k]), f"gravity {k}")
        for link in model.link_names:
            for reference in ("world", "local"):
                assert_close(
                    rd.jacobian(model, q[k], link, reference=reference),
                    oracle.jacobian(q[k], link, reference),
                    f"jacobian {reference} {link} {k}",
                )


@pytest.mark.parametrize("robot", rf.ERD_MIMIC_ROBOTS)
def test_mimic_model_self_consistency(robot):
    """Where Pinocchio's mimic mode is wrong: C qd = h - g and rnea(q, qd, fd(q, qd, tau)) = tau."""
    model = ours(robot, True)
    q, qd, _ = states(info_of(robot), list(model.joint_names), 3)
    tau = np.random.default_rng(3).standard_normal((N_STATES, model.nv))
    for k in range(N_STATES):
        h = rd.bias_forces(model, q[k], qd[k])
        g = rd.gravity_torques(model, q[k])
        assert_close(rd.coriolis_matrix(model, q[k], qd[k]) @ qd[k], h - g, f"C qd, state {k}")
        qdd = rd.forward_dynamics(model, q[k], qd[k], tau[k])
        scale = 1.0 + np.abs(qdd).max()
        assert_close(rd.inverse_dynamics(model, q[k], qd[k], qdd) / scale, tau[k] / scale, f"rnea(fd), state {k}")


@pytest.mark.parametrize("robot", rf.ERD_MIMIC_ROBOTS)
def test_mimic_energies_through_full_model(robot):
    """The mimic model's energies at q are the mimic=False model's at the expanded q."""
    model, full = ours(robot, True), ours(robot, False)
    ex = rf.MimicExpansion(info_of(robot), model.joint_names)
    perm = [list(full.joint_names).index(n) for n in ex.full]
    q, qd, _ = states(info_of(robot), list(model.joint_names), 5)
    for k in range(N_STATES):
        qf = np.empty(full.nv)
        vf = np.empty(full.nv)
        qf[perm] = ex.q(q[k])
        vf[perm] = ex.v(qd[k])
        assert_close(rd.kinetic_energy(model, q[k], qd[k]), rd.kinetic_energy(full, qf, vf), f"K {k}")
        assert_close(rd.potential_energy(model, q[k]), rd.potential_energy(full, qf), f"P {k}")


@pytest.mark.parametrize("robot", [r for r in ROBOTS if r not in rf.ERD_MIMIC_ROBOTS])
def test_mimic_flag_is_neutral_without_moving_mimic_joints(robot):
    """talos_left_arm / talos_reduced put <mimic> on fixed joints: nothing to eliminate."""
    a, b = ours(robot, True), ours(robot, False)
    assert a.joint_names == b.joint_names
    assert dict(a.mimic_joints) == {}
    q, qd, qdd = states(info_of(robot), list(a.joint_names), 2)
    assert_close(rd.inverse_dynamics(a, q[0], qd[0], qdd[0]), rd.inverse_dynamics(b, q[0], qd[0], qdd[0]))


# ------------------------------------------------------------------------------------------------
# random trees (branching, every joint type, rotated inertials, unnormalised/absent axes)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mimic", [False, True], ids=["nomimic", "mimic"])
@pytest.mark.parametrize("seed", TREE_SEEDS + [100 + s for s in TREE_SEEDS[:6]])
def test_random_tree_against_pinocchio(seed, mimic):
    xml, info, model, full = tree_case(seed, mimic)
    assert list(model.joint_names) == rf.expected_joint_order(info, mimic)
    for quantity in DYNAMICS + KINEMATICS:
        compare(quantity, model, info, full, seed=seed)


MIMIC_TREE_SEEDS = [s for s in range(60) if any(j.mimic for j in rf.parse_urdf(tree_source(s)).moving)][:8]


def test_generator_makes_mimic_trees():
    assert len(MIMIC_TREE_SEEDS) == 8


@pytest.mark.parametrize("seed", MIMIC_TREE_SEEDS)
def test_random_tree_against_pinocchio_mimic_mode(seed):
    xml, info, model, _ = tree_case(seed, True)
    assert model.mimic_joints, "the model lost the mimic joint"
    check_pin_mimic_mode(model, info, rf.PinOracle(xml, model.joint_names, mimic=True), seed)


# ------------------------------------------------------------------------------------------------
# a small gripper with an offset mimic finger (multiplier -1, offset 0.01)
# ------------------------------------------------------------------------------------------------


def gripper_urdf():
    def link(name, mass, xyz):
        return f'<link name="{name}">{rf.inertial_xml(mass, xyz, (0.3, -0.2, 0.1), np.diag([0.02, 0.03, 0.04]))}</link>'

    return f"""<robot name="gripper_arm">
  <link name="base"/>
  {link("l1", 2.0, (0.0, 0.0, 0.15))}{link("l2", 1.5, (0.2, 0.0, 0.0))}{link("l3", 1.0, (0.1, 0.05, 0.0))}
  {link("finger_a", 0.1, (0.0, 0.02, 0.03))}{link("finger_b", 0.1, (0.0, -0.02, 0.03))}
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.3" rpy="1.5707963 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="10" velocity="2"/></joint>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/><origin xyz="0.4 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="10" velocity="2"/></joint>
  <joint name="finger_a_joint" type="prismatic"><parent link="l3"/><child link="finger_a"/>
    <origin xyz="0.2 0 0" rpy="0 1.5707963 0"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="0.04" effort="20" velocity="0.1"/></joint>
  <joint name="finger_b_joint" type="prismatic"><parent link="l3"/><child link="finger_b"/>
    <origin xyz="0.2 0 0" rpy="0 1.5707963 0"/><axis xyz="0 1 0"/>
    <limit lower="-0.04" upper="0.05" effort="20" velocity="0.1"/>
    <mimic joint="finger_a_joint" multiplier="-1" offset="0.01"/></joint>
</robot>"""


def test_gripper_mimic_against_pinocchio():
    xml = gripper_urdf()
    info = rf.parse_urdf(xml)
    model = rd.load_urdf(xml, mimic=True)
    assert model.joint_names == ("j1", "j2", "j3", "finger_a_joint")
    assert {k: tuple(v) for k, v in model.mimic_joints.items()} == {"finger_b_joint": ("finger_a_joint", -1.0, 0.01)}
    check_pin_mimic_mode(model, info, rf.PinOracle(xml, model.joint_names, mimic=True), seed=1)
    full = rf.PinOracle(xml, info.independent(False))
    for quantity in DYNAMICS + KINEMATICS:
        compare(quantity, model, info, full, seed=2)
    # the offset really is applied: finger_b sits at -q_a + 0.01 along its axis
    q = np.array([0.1, 0.2, 0.3, 0.02])
    Ta = rd.frame_pose(model, q, "finger_a")
    Tb = rd.frame_pose(model, q, "finger_b")
    axis_world = Ta[:3, :3] @ np.array([0.0, 1.0, 0.0])
    assert_close((Ta[:3, 3] - Tb[:3, 3]) @ axis_world, 0.02 - (-0.02 + 0.01), "finger gap")


def test_mimic_chain_against_expanded_pinocchio():
    """j2 follows j0, j1 follows j2 (declared before it): q_j1 = 2 (-0.5 q_j0 + 0.2) + 0.1."""
    inertial = rf.inertial_xml(1.0, (0.1, 0.2, 0.0), (0.1, 0.2, 0.3), np.diag([0.1, 0.12, 0.15]))
    limit = '<limit lower="-1" upper="1" effort="1" velocity="1"/>'
    xml = (
        '<robot name="chain"><link name="a"/>'
        + "".join(f'<link name="l{i}">{inertial}</link>' for i in range(4))
        + f"""<joint name="j0" type="revolute"><parent link="a"/><child link="l0"/><axis xyz="0 0 1"/>{limit}</joint>
        <joint name="j1" type="revolute"><parent link="l0"/><child link="l1"/><origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>
          {limit}<mimic joint="j2" multiplier="2" offset="0.1"/></joint>
        <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.3 0 0"/><axis xyz="1 0 0"/>
          {limit}<mimic joint="j0" multiplier="-0.5" offset="0.2"/></joint>
        <joint name="j3" type="prismatic"><parent link="l2"/><child link="l3"/>
          <origin xyz="0 0.2 0"/><axis xyz="0 1 1"/>
          {limit}</joint>
        </robot>"""
    )
    info = rf.parse_urdf(xml)
    model = rd.load_urdf(xml)
    assert model.joint_names == ("j0", "j3")
    ex = rf.MimicExpansion(info, model.joint_names)
    assert_close(ex.q(np.array([0.3, 0.0])), [0.3, 2 * (-0.5 * 0.3 + 0.2) + 0.1, -0.5 * 0.3 + 0.2, 0.0], "expansion")
    full = rf.PinOracle(xml, info.independent(False))
    for quantity in DYNAMICS + KINEMATICS:
        compare(quantity, model, info, full, seed=4)


def test_cross_type_mimic_against_expanded_pinocchio():
    """A prismatic joint following a continuous one, a revolute following a prismatic joint that
    is declared after it in another branch (Pinocchio's mimic mode supports neither)."""
    inertial = rf.inertial_xml(1.0, (0.1, 0.2, 0.0), (0.1, 0.2, 0.3), np.diag([0.1, 0.12, 0.15]))
    limit = '<limit lower="-1" upper="1" effort="1" velocity="1"/>'
    xml = (
        '<robot name="cross"><link name="a"/>'
        + "".join(f'<link name="l{i}">{inertial}</link>' for i in range(4))
        + f"""<joint name="j0" type="continuous"><parent link="a"/><child link="l0"/><axis xyz="0 0 1"/></joint>
        <joint name="j1" type="prismatic"><parent link="l0"/><child link="l1"/><origin xyz="0.3 0 0"/>
          <axis xyz="0 1 0"/>{limit}<mimic joint="j0" multiplier="0.2" offset="0.1"/></joint>
        <joint name="j2" type="revolute"><parent link="a"/><child link="l2"/><origin xyz="0 0.3 0"/>
          <axis xyz="1 0 0"/>{limit}<mimic joint="j3" multiplier="-1.5"/></joint>
        <joint name="j3" type="prismatic"><parent link="l1"/><child link="l3"/><origin xyz="0 0.2 0"/>
          <axis xyz="0 1 1"/>{limit}</joint>
        </robot>"""
    )
    info = rf.parse_urdf(xml)
    model = rd.load_urdf(xml)
    assert model.joint_names == ("j0", "j3")
    assert model.joint_types == ("continuous", "prismatic")
    full = rf.PinOracle(xml, info.independent(False))
    for quantity in DYNAMICS + KINEMATICS:
        compare(quantity, model, info, full, seed=5)
