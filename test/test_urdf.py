"""URDF semantics and validation at load time.

Semantics are checked by equivalence: two URDFs that mean the same robot (a fixed link inserted in
a joint, an inertial rotation baked into the tensor, an explicit default axis, a normalised
axis, an added root-link inertia, an explicit zero inertial) must give the same dynamics to
1e-9 * (1 + |value|).  Validation: every broken URDF raises rd.URDFError (a ValueError) whose
message names the offending link or joint; suspicious-but-legal inertias and massless moving
joints warn (Python warnings) instead.
"""

import math
import re
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import robot_dynamics as rd

import robot_files as rf  # noqa: E402
from robot_files import assert_close  # noqa: E402

TREE_SEEDS = list(range(200, 208))


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def tree_xml(seed, **kw):
    kw.setdefault("n_links", 4 + seed % 6)
    kw.setdefault("n_mimic", seed % 2)
    return rf.random_tree_urdf(seed, **kw)


def edit(xml, fn):
    root = ET.fromstring(xml)
    fn(root)
    return ET.tostring(root, encoding="unicode")


def origin_matrix(element):
    o = element.find("origin")
    T = np.eye(4)
    if o is not None:
        T[:3, :3] = rf.rpy_to_matrix([float(v) for v in o.get("rpy", "0 0 0").split()])
        T[:3, 3] = [float(v) for v in o.get("xyz", "0 0 0").split()]
    return T


def set_origin(element, T):
    o = element.find("origin")
    if o is None:
        o = ET.SubElement(element, "origin")
    o.set("xyz", rf.fmt(T[:3, 3]))
    o.set("rpy", rf.fmt(rf.matrix_to_rpy(T[:3, :3])))


def same_dynamics(a, b, info, what, seed=0, n=5, frames=()):
    """a and b (models of the same robot) agree on every dynamic quantity at random states."""
    assert a.joint_names == b.joint_names, what
    q, qd, qdd = rf.random_states(np.random.default_rng(seed), info, list(a.joint_names), n)
    for k in range(n):
        tag = f"{what}, state {k}"
        assert_close(rd.inverse_dynamics(a, q[k], qd[k], qdd[k]), rd.inverse_dynamics(b, q[k], qd[k], qdd[k]), tag)
        assert_close(rd.mass_matrix(a, q[k]), rd.mass_matrix(b, q[k]), tag + " M")
        assert_close(rd.gravity_torques(a, q[k]), rd.gravity_torques(b, q[k]), tag + " g")
        assert_close(rd.coriolis_matrix(a, q[k], qd[k]), rd.coriolis_matrix(b, q[k], qd[k]), tag + " C")
        assert_close(rd.kinetic_energy(a, q[k], qd[k]), rd.kinetic_energy(b, q[k], qd[k]), tag + " K")
        assert_close(rd.potential_energy(a, q[k]), rd.potential_energy(b, q[k]), tag + " P")
        for link in frames:
            assert_close(rd.frame_pose(a, q[k], link), rd.frame_pose(b, q[k], link), f"{tag} pose {link}")
            assert_close(rd.jacobian(a, q[k], link), rd.jacobian(b, q[k], link), f"{tag} J {link}")


def load_quiet(xml, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_urdf(xml, **kw)


# ------------------------------------------------------------------------------------------------
# semantics
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", TREE_SEEDS)
def test_fixed_link_inserted_in_a_joint_changes_nothing(seed):
    xml = tree_xml(seed)
    info = rf.parse_urdf(xml)
    rng = np.random.default_rng(seed)
    target = info.moving[int(rng.integers(0, len(info.moving)))].name
    T_a = np.eye(4)
    T_a[:3, :3] = rf.random_rotation(rng)
    T_a[:3, 3] = rng.uniform(-0.3, 0.3, 3)

    def insert(root):
        joint = next(j for j in root.findall("joint") if j.get("name") == target)
        parent = joint.find("parent").get("link")
        T = origin_matrix(joint)
        set_origin(joint, np.linalg.inv(T_a) @ T)
        joint.find("parent").set("link", "inserted")
        ET.SubElement(root, "link", name="inserted")
        fixed = ET.Element("joint", name="inserted_joint", type="fixed")
        ET.SubElement(fixed, "parent", link=parent)
        ET.SubElement(fixed, "child", link="inserted")
        set_origin(fixed, T_a)
        # declared where the joint was, so the depth-first coordinate order is unchanged
        root.insert(list(root).index(joint), fixed)

    xml2 = edit(xml, insert)
    a, b = rd.load_urdf(xml), rd.load_urdf(xml2)
    same_dynamics(a, b, info, f"fixed link inserted in {target}", seed, frames=a.link_names)
    assert "inserted" in b.link_names
    parent = info.joints[target].parent
    q = rf.sample_q(rng, info, list(a.joint_names), 3)
    for k in range(3):
        assert_close(rd.frame_pose(b, q[k], "inserted"), rd.frame_pose(a, q[k], parent) @ T_a, "inserted frame pose")
        J = rd.jacobian(b, q[k], "inserted", reference="local")
        J_parent = rd.jacobian(a, q[k], parent, reference="local")
        R, p = T_a[:3, :3], T_a[:3, 3]
        # rigid offset: omega_a = R^T omega_p ; v_a = R^T (v_p + omega_p x p)
        omega, v = J_parent[:3], J_parent[3:]
        expected = np.vstack([R.T @ omega, R.T @ (v - np.cross(p, omega, axis=0))])
        assert_close(J, expected, "inserted frame local Jacobian")


@pytest.mark.parametrize("seed", TREE_SEEDS)
def test_inertial_rpy_rotates_the_tensor(seed):
    xml = tree_xml(seed)
    info = rf.parse_urdf(xml)

    def bake(root):
        for inertial in root.iter("inertial"):
            o = inertial.find("origin")
            R = rf.rpy_to_matrix([float(v) for v in o.get("rpy").split()])
            t = inertial.find("inertia")
            I = np.array(
                [
                    [float(t.get("ixx")), float(t.get("ixy")), float(t.get("ixz"))],
                    [float(t.get("ixy")), float(t.get("iyy")), float(t.get("iyz"))],
                    [float(t.get("ixz")), float(t.get("iyz")), float(t.get("izz"))],
                ]
            )
            I = R @ I @ R.T
            for key, (r, c) in zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), rf._SIX):
                t.set(key, repr(float(I[r, c])))
            o.set("rpy", "0 0 0")

    xml2 = edit(xml, bake)
    assert 'rpy="0 0 0"' in xml2
    same_dynamics(rd.load_urdf(xml), rd.load_urdf(xml2), info, "inertial rpy baked into the tensor", seed)


def test_inertial_rpy_simple_case():
    """A thin rod along the link's z axis rotated by rpy (0, pi/2, 0) lies along x: it resists
    rotation about z like a rod along x (I = m l^2 / 12 about z), not like a rod along z (I ~ 0)."""
    rod = np.diag([1.0, 1.0, 0.0]) / 12.0  # unit mass, unit length, along z

    def one_joint(rpy):
        return f"""<robot name="rod"><link name="base"/>
          <link name="rod">{rf.inertial_xml(1.0, (0, 0, 0), rpy, rod)}</link>
          <joint name="spin" type="continuous"><parent link="base"/><child link="rod"/><axis xyz="0 0 1"/></joint>
        </robot>"""

    assert_close(rd.mass_matrix(load_quiet(one_joint((0, 0, 0))), [0.0]), [[0.0]], "rod along z")
    assert_close(rd.mass_matrix(rd.load_urdf(one_joint((0, math.pi / 2, 0))), [0.0]), [[1.0 / 12]], "rod along x")


@pytest.mark.parametrize("seed", TREE_SEEDS)
def test_axis_default_and_normalisation(seed):
    xml = tree_xml(seed)
    info = rf.parse_urdf(xml)
    moving = {j.name for j in info.moving}

    def explicit_unit(root):
        for joint in root.findall("joint"):
            if joint.get("name") not in moving:
                continue
            axis = joint.find("axis")
            if axis is None:
                ET.SubElement(joint, "axis", xyz="1 0 0")
            else:
                a = np.array([float(v) for v in axis.get("xyz").split()])
                axis.set("xyz", rf.fmt(a / np.linalg.norm(a)))

    def scaled(root):
        for joint in root.findall("joint"):
            axis = joint.find("axis")
            if axis is not None and joint.get("name") in moving:
                a = np.array([float(v) for v in axis.get("xyz").split()])
                axis.set("xyz", rf.fmt(4.5 * a))

    a = rd.load_urdf(xml)
    same_dynamics(a, rd.load_urdf(edit(xml, explicit_unit)), info, "explicit unit axes", seed, frames=a.link_names[-2:])
    same_dynamics(a, rd.load_urdf(edit(xml, scaled)), info, "scaled axes", seed, frames=a.link_names[-2:])


def test_missing_axis_is_x():
    base = """<robot name="r"><link name="a"/><link name="b">{inertial}</link>
      <joint name="j" type="revolute"><parent link="a"/><child link="b"/>{axis}
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""
    inertial = rf.inertial_xml(1.0, (0, 0.2, 0), (0, 0, 0), np.diag([0.01, 0.02, 0.03]))
    model = rd.load_urdf(base.format(inertial=inertial, axis=""))
    J = rd.jacobian(model, [0.3], "b")
    assert_close(J[:3, 0], [1.0, 0.0, 0.0], "rotation about x")
    for axis, sign in (('<axis xyz="1 0 0"/>', 1), ('<axis xyz="0 1 0"/>', 0)):
        other = rd.load_urdf(base.format(inertial=inertial, axis=axis))
        same = np.allclose(rd.mass_matrix(other, [0.3]), rd.mass_matrix(model, [0.3]))
        assert same == bool(sign), axis


def test_tree_generator_has_missing_and_unnormalised_axes():
    text = "".join(tree_xml(s) for s in TREE_SEEDS)
    infos = [rf.parse_urdf(tree_xml(s)) for s in TREE_SEEDS]
    n_moving = sum(len(i.moving) for i in infos)
    assert text.count("<axis") < n_moving, "no joint without <axis>"
    norms = [np.linalg.norm([float(v) for v in m.split()]) for m in re.findall(r'<axis xyz="([^"]*)"', text)]
    assert any(abs(n - 1) > 0.1 for n in norms), "no unnormalised axis"
    assert text.count("<inertial>") < sum(len(i.links) for i in infos), "no link without inertial"


@pytest.mark.parametrize("seed", TREE_SEEDS[:4])
def test_root_inertia_and_welded_links_change_nothing(seed):
    xml = tree_xml(seed, root_inertial=False)
    info = rf.parse_urdf(xml)
    root = info.root()
    heavy = rf.inertial_xml(5.0, (0.1, 0.2, 0.3), (0.3, 0.2, 0.1), np.diag([0.1, 0.2, 0.25]))

    def add_root_mass(r):
        link = next(link for link in r.findall("link") if link.get("name") == root)
        link.append(ET.fromstring(heavy))
        r.append(ET.fromstring(f'<link name="welded">{heavy}</link>'))
        r.append(
            ET.fromstring(
                f'<joint name="weld" type="fixed"><parent link="{root}"/><child link="welded"/>'
                '<origin xyz="0.5 0 0" rpy="0 0.4 0"/></joint>'
            )
        )

    a = rd.load_urdf(xml)
    b = rd.load_urdf(edit(xml, add_root_mass))
    same_dynamics(a, b, info, "root-link and welded inertia", seed)
    q = np.zeros(a.nv)
    assert_close(rd.jacobian(b, q, "welded"), np.zeros((6, a.nv)), "welded link does not move")
    assert_close(rd.jacobian(b, q, root), np.zeros((6, a.nv)), "root does not move")
    assert_close(rd.frame_pose(b, q, root), np.eye(4), "root pose is the identity")


def test_link_without_inertial_is_massless():
    xml = tree_xml(203)
    info = rf.parse_urdf(xml)
    massless = [name for name in info.links if name not in info.masses]
    assert massless

    def explicit_zero(root):
        for link in root.findall("link"):
            if link.get("name") in massless:
                link.append(ET.fromstring(rf.inertial_xml(0.0)))

    same_dynamics(rd.load_urdf(xml), load_quiet(edit(xml, explicit_zero)), info, "explicit zero inertial", 1)


UNIT = '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>'


def test_limits_and_dynamics_tags():
    xml = f"""<robot name="r"><link name="a"/>
      <link name="b"><inertial><mass value="1"/>{UNIT}</inertial></link>
      <link name="c"><inertial><mass value="1"/>{UNIT}</inertial></link>
      <link name="d"><inertial><mass value="1"/>{UNIT}</inertial></link>
      <joint name="rev" type="revolute"><parent link="a"/><child link="b"/>
        <limit lower="-1.5" upper="2.5" effort="30" velocity="4"/><dynamics damping="0.7" friction="0.2"/></joint>
      <joint name="cont" type="continuous"><parent link="b"/><child link="c"/><origin xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="7" velocity="5"/></joint>
      <joint name="pri" type="prismatic"><parent link="c"/><child link="d"/><axis xyz="0 0 1"/>
        <limit lower="-0.1" upper="0.2" effort="100" velocity="0.5"/><dynamics damping="3"/></joint>
      <link name="e"><inertial><mass value="1"/>{UNIT}</inertial></link>
      <joint name="free" type="continuous"><parent link="d"/><child link="e"/><axis xyz="0 1 0"/></joint>
    </robot>"""
    m = rd.load_urdf(xml)
    assert m.name == "r"
    assert m.joint_names == ("rev", "cont", "pri", "free")
    assert m.joint_types == ("revolute", "continuous", "prismatic", "continuous")
    inf = np.inf
    np.testing.assert_array_equal(m.position_limits, [[-1.5, 2.5], [-inf, inf], [-0.1, 0.2], [-inf, inf]])
    np.testing.assert_array_equal(m.velocity_limits, [4.0, 5.0, 0.5, inf])
    np.testing.assert_array_equal(m.effort_limits, [30.0, 7.0, 100.0, inf])
    np.testing.assert_array_equal(m.damping, [0.7, 0.0, 3.0, 0.0])
    np.testing.assert_array_equal(m.friction, [0.2, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(m.gravity, [0.0, 0.0, -9.81])
    # damping and friction are not part of the rigid-body inverse dynamics
    q, v = [0.1, 0.2, 0.0, 0.3], [1.0, 1.0, 1.0, 1.0]
    assert_close(rd.inverse_dynamics(m, q, v, [0.0] * 4), rd.bias_forces(m, q, v), "no friction in ID")


# ------------------------------------------------------------------------------------------------
# loading sources
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("robot", ["pr2", "panda", "talos_full_v2", "double_pendulum_continuous"])
def test_path_and_string_give_the_same_model(robot, tmp_path):
    path = rf.erd_path(robot)
    a = load_quiet(path)
    b = load_quiet(rf.read_text(path))
    assert a.name == b.name and a.link_names == b.link_names and a.joint_names == b.joint_names
    info = rf.parse_urdf(path)
    same_dynamics(a, b, info, "path vs string", 2, n=3, frames=a.link_names[-3:])
    # also a pathlib.Path and a copy elsewhere
    import pathlib

    copy = tmp_path / "copy.urdf"
    copy.write_text(rf.read_text(path))
    same_dynamics(a, load_quiet(pathlib.Path(copy)), info, "pathlib copy", 3, n=2)


def test_pr2_loads_and_warns_about_its_two_inertias():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = rd.load_urdf(rf.erd_path("pr2"))
    messages = [str(w.message) for w in caught]
    assert any("sensor_mount_link" in m for m in messages), messages
    assert any("double_stereo_link" in m for m in messages), messages
    assert model.nv == 20  # 30 moving joints, 10 of them mimic
    assert len(model.mimic_joints) == 10
    assert rd.forward_dynamics(model, np.zeros(20), np.zeros(20), np.zeros(20)).shape == (20,)


def test_clean_robots_load_without_warnings():
    for robot in rf.ERD_ROBOTS:
        if robot == "pr2":
            continue
        if robot == "talos_left_arm":  # its file keeps the transmission of a joint it does not have
            with pytest.warns(UserWarning, match="transmission 'arm_left_1_trans' names joint 'arm_left_1_joint'"):
                rd.load_urdf(rf.erd_path(robot))
            continue
        if robot == "panda":  # Franka's friction model's parameters, which our model has no terms for
            with pytest.warns(UserWarning, match=r"<dynamics> attributes not read \(only damping and friction are\): "
                                                 r"D, K, mu_coulomb, mu_viscous, on panda_joint1, panda_joint2, "):
                rd.load_urdf(rf.erd_path(robot))
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rd.load_urdf(rf.erd_path(robot))


# ------------------------------------------------------------------------------------------------
# validation
# ------------------------------------------------------------------------------------------------

ARM = """<robot name="arm">
  <link name="base"/>
  <link name="upper"><inertial><origin xyz="{com}" rpy="0 0 0"/><mass value="{mass}"/>
    <inertia ixx="{ixx}" ixy="{ixy}" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <link name="fore">{fore_inertial}</link>
  <joint name="shoulder" type="{shoulder_type}"><parent link="{shoulder_parent}"/><child link="upper"/>
    <origin xyz="{origin_xyz}" rpy="{origin_rpy}"/><axis xyz="{axis}"/>
    <limit lower="{lower}" upper="{upper}" effort="{effort}" velocity="{velocity}"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="{elbow_child}"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="5" velocity="2"/></joint>
  {extra}
</robot>"""

ARM_DEFAULTS = dict(
    com="0.1 0 0",
    mass="1.0",
    ixx="0.02",
    ixy="0",
    fore_inertial=(
        '<inertial><mass value="0.5"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>'
    ),
    shoulder_type="revolute",
    shoulder_parent="base",
    origin_xyz="0 0 0.1",
    origin_rpy="0 0 0",
    axis="0 0 1",
    lower="-1",
    upper="1",
    effort="10",
    velocity="2",
    elbow_child="fore",
    extra="",
)


def arm(**overrides):
    return ARM.format(**{**ARM_DEFAULTS, **overrides})


def test_arm_template_is_valid():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = rd.load_urdf(arm())
    assert model.joint_names == ("shoulder", "elbow")
    assert issubclass(rd.URDFError, ValueError)


BROKEN = {
    # id: (urdf, names that the message must contain (any one of a tuple))
    "empty": ("", ()),
    "blank": ("   \n ", ()),
    "unparsable": ('<robot name="x"><link name="a"></robot>', ()),
    "not_robot": ('<model name="x"><link name="a"/></model>', ()),
    "no_links": ('<robot name="x"></robot>', ()),
    "several_roots": (arm(extra='<link name="orphan"/>'), ("orphan",)),
    "no_root_loop": (
        arm(extra='<joint name="back" type="fixed"><parent link="fore"/><child link="base"/></joint>'),
        (("back", "base", "fore", "upper", "shoulder", "elbow"),),
    ),
    "two_parents": (
        arm(
            extra='<link name="tip"/><joint name="t1" type="fixed"><parent link="fore"/><child link="tip"/></joint>'
            '<joint name="t2" type="fixed"><parent link="upper"/><child link="tip"/></joint>'
        ),
        (("tip", "t1", "t2"),),
    ),
    "detached_cycle": (
        arm(
            extra='<link name="c1"/><link name="c2"/>'
            '<joint name="c12" type="fixed"><parent link="c1"/><child link="c2"/></joint>'
            '<joint name="c21" type="fixed"><parent link="c2"/><child link="c1"/></joint>'
        ),
        (("c1", "c2", "c12", "c21"),),
    ),
    "unknown_parent": (arm(shoulder_parent="nowhere"), ("shoulder", "nowhere")),
    "unknown_child": (arm(elbow_child="ghost"), ("elbow", "ghost")),
    "duplicate_link": (arm(extra='<link name="upper"/>'), ("upper",)),
    "duplicate_joint": (
        arm(extra='<link name="x"/><joint name="elbow" type="fixed"><parent link="fore"/><child link="x"/></joint>'),
        ("elbow",),
    ),
    "nan_origin_xyz": (arm(origin_xyz="0 nan 0.1"), ("shoulder",)),
    "inf_origin_rpy": (arm(origin_rpy="inf 0 0"), ("shoulder",)),
    "nan_axis": (arm(axis="nan 0 1"), ("shoulder",)),
    "zero_axis": (arm(axis="0 0 0"), ("shoulder",)),
    "nan_mass": (arm(mass="nan"), ("upper",)),
    "inf_mass": (arm(mass="inf"), ("upper",)),
    "nan_inertia": (arm(ixx="nan"), ("upper",)),
    "inf_inertia": (arm(ixy="-inf"), ("upper",)),
    "nan_com": (arm(com="0 0 nan"), ("upper",)),
    "nan_lower": (arm(lower="nan"), ("shoulder",)),
    "inf_upper": (arm(upper="inf"), ("shoulder",)),
    "nan_effort": (arm(effort="nan"), ("shoulder",)),
    "inf_velocity": (arm(velocity="inf"), ("shoulder",)),
    "negative_mass": (arm(mass="-1"), ("upper",)),
    "negative_inertia": (arm(ixx="-0.02"), ("upper",)),
    "indefinite_inertia": (arm(ixy="0.05"), ("upper",)),
    "floating": (arm(shoulder_type="floating"), ("shoulder", "not supported")),
    "planar": (arm(shoulder_type="planar"), ("shoulder", "not supported")),
    "mimic_unknown": (
        arm(extra="").replace('<axis xyz="0 1 0"/>', '<axis xyz="0 1 0"/><mimic joint="nobody"/>'),
        ("elbow", "nobody"),
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_urdf_raises_urdf_error(case):
    xml, names = BROKEN[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(rd.URDFError) as info:
            rd.load_urdf(xml)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert message.strip(), "empty error message"
    for name in names:
        options = name if isinstance(name, tuple) else (name,)
        assert any(o.lower() in message.lower() for o in options), f"{case}: {message!r} should name {options}"


def test_missing_file_raises_urdf_error(tmp_path):
    with pytest.raises(rd.URDFError, match="nope.urdf"):
        rd.load_urdf(str(tmp_path / "nope.urdf"))


def test_triangle_inequality_warns():
    with pytest.warns(Warning, match="upper"):
        model = rd.load_urdf(arm(ixx="0.1"))  # 0.02 + 0.02 < 0.1
    assert model.nv == 2


def test_massless_moving_joint_warns_and_forward_dynamics_names_it():
    with pytest.warns(Warning, match="elbow"):
        model = rd.load_urdf(arm(fore_inertial=""))
    q = np.zeros(2)
    # the rigid-body quantities that do not need M^-1 still work
    assert np.all(np.isfinite(rd.inverse_dynamics(model, q, q, q)))
    assert rd.mass_matrix(model, q)[1, 1] == 0.0
    with pytest.raises(ValueError, match="elbow"):
        rd.forward_dynamics(model, q, q, q)


def test_mimic_on_fixed_joint_is_ignored():
    """talos' fixed gripper joints carry <mimic>: nothing moves, nothing to eliminate."""
    xml = arm(extra='<link name="x"/><joint name="fx" type="fixed"><parent link="fore"/><child link="x"/>'
              '<mimic joint="elbow" multiplier="2"/></joint>')
    model = load_quiet(xml)
    assert model.joint_names == ("shoulder", "elbow") and dict(model.mimic_joints) == {}


def test_robot_without_moving_joints_has_empty_dynamics_of_the_right_shapes():
    """All joints fixed (a mounted tool, a sensor head): zero coordinates, no crash, frames still work."""
    xml = """<robot name="statue"><link name="base"/>
      <link name="head"><inertial><origin xyz="0 0 0.1"/><mass value="2"/>
        <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
      <joint name="neck" type="fixed"><origin xyz="0 0 1"/><parent link="base"/><child link="head"/></joint>
    </robot>"""
    model = rd.load_urdf(xml)
    assert model.nv == 0 and model.joint_names == ()
    for batch in ((), (5,)):
        q = np.zeros(batch + (0,))
        assert rd.mass_matrix(model, q).shape == batch + (0, 0)
        assert rd.coriolis_matrix(model, q, q).shape == batch + (0, 0)
        assert rd.gravity_torques(model, q).shape == batch + (0,)
        assert rd.inverse_dynamics(model, q, q, q).shape == batch + (0,)
        assert rd.forward_dynamics(model, q, q, q).shape == batch + (0,)
        np.testing.assert_array_equal(rd.kinetic_energy(model, q, q), np.zeros(batch))
    np.testing.assert_allclose(rd.frame_pose(model, [], "head")[:3, 3], [0, 0, 1])
    assert rd.jacobian(model, [], "head").shape == (6, 0)
