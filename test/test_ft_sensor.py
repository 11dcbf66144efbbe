"""The force/torque sensor's core (robot_dynamics.rigid_body.sensor): what a fixed joint transmits, read as
a sensor reads it. Oracles: Pinocchio's RNEA joint force ``data.f`` at the sensor joint (made revolute
at 0 in Pinocchio's copy, so that it is a joint of its own), closed forms (a hanging mass, a
whirling arm), and the identity that the compensated reading of a state is the external wrench."""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.description.robots import bundled_urdf
from robot_dynamics.rigid_body.sensor import ForceTorqueSensor, sensor_problem, tool_links

G = 9.81

#: base -z- revolute "spin" (z) -> "arm" -> fixed "mount" at x = 0.5 -> "ft" (the sensor) -> fixed -> "tool",
#: its 1 kg at 0.2 m along the sensor's x; the sensor frame turned 90 degrees about z against the arm.
WHIRL_URDF = """<robot name="whirl">
  <link name="base"/>
  <joint name="spin" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-10" upper="10" effort="100" velocity="10"/></joint>
  <link name="arm"><inertial><origin xyz="0.25 0 0"/><mass value="2"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.05"/></inertial></link>
  <joint name="mount" type="fixed"><parent link="arm"/><child link="ft"/><origin xyz="0.5 0 0" rpy="0 0 1.5707963267948966"/></joint>
  <link name="ft"/>
  <joint name="tool_joint" type="fixed"><parent link="ft"/><child link="tool"/><origin xyz="0 -0.2 0"/></joint>
  <link name="tool"><inertial><mass value="1"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
</robot>"""

#: base -> revolute "hinge" (y) -> "upper" -> fixed -> "ft" -> fixed -> "weight": 1 kg hanging 0.3 m below
HANGING_URDF = """<robot name="hanging">
  <link name="base"/>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="upper"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="100" velocity="10"/></joint>
  <link name="upper"><inertial><mass value="0.5"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <joint name="ft_joint" type="fixed"><parent link="upper"/><child link="ft"/><origin xyz="0 0 -0.1"/></joint>
  <link name="ft"/>
  <joint name="weight_joint" type="fixed"><parent link="ft"/><child link="weight"/><origin xyz="0 0 -0.3"/></joint>
  <link name="weight"><inertial><mass value="1"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
</robot>"""


@pytest.fixture(scope="module")
def arm7():
    return bundled_urdf("arm7_gripper").read_text()


def _pinocchio_reading(xml, model, joint, q, qd, qdd, mimic):
    """-data.f at ``joint`` (the sensor's fixed joint, made revolute at 0): [moment; force] in its frame."""
    pin = pytest.importorskip("pinocchio")
    xml = xml.replace(f'<joint name="{joint}" type="fixed">', f'<joint name="{joint}" type="revolute"><axis xyz="0 0 1"/>'
                      '<limit lower="-1" upper="1" effort="1" velocity="1"/>')
    pm = pin.buildModelFromXML(xml)
    pd = pm.createData()

    def order(x, position):
        values = dict(zip(model.joint_names, x), **{joint: 0.0})
        for dependent, master in mimic.items():
            values[dependent] = values[master]
        out = np.zeros(pm.nq if position else pm.nv)
        for j in range(1, pm.njoints):  # (pinocchio sorts sibling joints by name: compare by name)
            out[pm.joints[j].idx_q if position else pm.joints[j].idx_v] = values[pm.names[j]]
        return out

    pin.rnea(pm, pd, order(q, True), order(qd, False), order(qdd, False))
    f = pd.f[pm.getJointId(joint)]
    return np.concatenate([-f.angular, -f.linear])


def test_reading_matches_pinocchio_joint_force_with_moving_fingers_beyond(arm7):
    """arm7_gripper's hand on its fixed flange: the hand, the tcp and both (mimic) fingers beyond it."""
    model = rd.load_urdf(arm7)
    sensor = ForceTorqueSensor(model, "arm7_hand")
    assert set(sensor.links) == {"arm7_hand", "arm7_leftfinger", "arm7_rightfinger", "arm7_tcp"}
    rng = np.random.default_rng(35)
    for _ in range(5):
        q, qd, qdd = rng.normal(size=(3, model.nv))
        expected = _pinocchio_reading(arm7, model, "arm7_flange", q, qd, qdd, {"arm7_finger_joint2": "arm7_finger_joint1"})
        np.testing.assert_allclose(sensor.reading(q, qd, qdd), expected, atol=1e-10, rtol=1e-10)


def test_reading_matches_pinocchio_with_a_payload_on_the_tool(arm7):
    payload = ("arm7_tcp", 2.0, (0.08, 0.0, 0.02), (0.01, 0.0, 0.0, 0.02, 0.0, 0.03))
    model = rd.load_urdf(arm7).with_payload(*payload)
    sensor = ForceTorqueSensor(model, "arm7_hand", payload=payload)
    # Pinocchio's copy: the payload as one more fixed link on arm7_tcp
    link = ('<link name="payload"><inertial><origin xyz="0.08 0 0.02"/><mass value="2"/><inertia ixx="0.01" ixy="0" '
            'ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial></link><joint name="payload_joint" type="fixed">'
            '<parent link="arm7_tcp"/><child link="payload"/></joint></robot>')
    xml = arm7.replace("</robot>", link)
    rng = np.random.default_rng(7)
    q, qd, qdd = rng.normal(size=(3, model.nv))
    expected = _pinocchio_reading(xml, model, "arm7_flange", q, qd, qdd, {"arm7_finger_joint2": "arm7_finger_joint1"})
    np.testing.assert_allclose(sensor.reading(q, qd, qdd), expected, atol=1e-10, rtol=1e-10)
    without = ForceTorqueSensor(model, "arm7_hand")  # the payload not named: its 2 kg missing (folded share)
    assert abs(np.linalg.norm(sensor.reading(q, 0 * qd, 0 * qdd)[3:]) - np.linalg.norm(without.reading(q, 0 * qd, 0 * qdd)[3:])) > 10


@pytest.mark.parametrize("angle", [0.0, 0.7, -1.9])
def test_hanging_mass_reads_its_weight_along_gravity(angle):
    """1 kg below the sensor: 9.81 N along gravity (the tool pulls the sensor down), in the sensor's axes;
    at rest the moment about the sensor origin is r x f of the weight."""
    model = rd.load_urdf(HANGING_URDF)
    sensor = ForceTorqueSensor(model, "ft")
    reading = sensor.reading([angle], [0.0], [0.0])
    R = rd.frame_pose(model, [angle], "ft")[:3, :3]
    weight = np.array([0.0, 0.0, -G])  # the weight, world axes
    np.testing.assert_allclose(reading[3:], R.T @ weight, atol=1e-12)
    np.testing.assert_allclose(reading[:3], np.cross([0, 0, -0.3], R.T @ weight), atol=1e-12)
    assert np.linalg.norm(reading[3:]) == pytest.approx(G)


def test_whirling_tool_pulls_the_sensor_outward():
    """The arm spins about z at w with angular acceleration wd: the tool (1 kg, 0.7 m from the axis) pulls the
    sensor by -m a: outward m w^2 r, against the tangential m wd r, and down by its weight."""
    model = rd.load_urdf(WHIRL_URDF)
    sensor = ForceTorqueSensor(model, "ft")
    w, wd, r = 3.0, 2.0, 0.7
    reading = sensor.reading([0.4], [w], [wd])
    # sensor axes: x_s = arm's y (tangential), y_s = -arm's x (inward), z up; the tool at -0.2 y_s
    force = np.array([-1.0 * wd * r, -1.0 * w * w * r, -G])
    np.testing.assert_allclose(reading[3:], force, atol=1e-12)
    np.testing.assert_allclose(reading[:3], np.cross([0.0, -0.2, 0.0], force), atol=1e-12)


def test_external_wrench_on_the_tool_passes_through_and_one_before_does_not():
    model = rd.load_urdf(HANGING_URDF)
    sensor = ForceTorqueSensor(model, "ft")
    q = [0.5]
    pose = rd.frame_pose(model, q, "ft")
    origins = {link: rd.frame_pose(model, q, link)[:3, 3] for link in ("weight", "upper")}
    push = np.array([0.0, 0.0, 0.0, 15.0, 0.0, 0.0])  # 15 N along world x at the weight's origin
    read = sensor.external_reading(pose, {"weight": push, "upper": push}, origins)
    lever = origins["weight"] - pose[:3, 3]
    np.testing.assert_allclose(read[3:], pose[:3, :3].T @ push[3:], atol=1e-12)
    np.testing.assert_allclose(read[:3], pose[:3, :3].T @ np.cross(lever, push[3:]), atol=1e-12)


def test_sensor_frames_that_are_not_a_fixed_joints_link_are_refused(arm7):
    model = rd.load_urdf(arm7)
    assert "not a link" in sensor_problem(model, "nowhere")
    assert "root link" in sensor_problem(model, "arm7_link0")
    assert "moving joint" in sensor_problem(model, "arm7_link7")
    assert sensor_problem(model, "arm7_hand") == sensor_problem(model, "arm7_tcp") == ""
    with pytest.raises(ValueError, match="moving joint"):
        ForceTorqueSensor(model, "arm7_leftfinger")
    assert tool_links(model, "arm7_tcp") == ("arm7_tcp",)


def test_non_finite_state_is_refused(arm7):
    model = rd.load_urdf(arm7)
    sensor = ForceTorqueSensor(model, "arm7_hand")
    with pytest.raises(ValueError, match="qd"):
        sensor.reading(np.zeros(model.nv), np.full(model.nv, np.nan), np.zeros(model.nv))


def test_a_sensor_under_the_base_reads_the_whole_robots_weight(arm7):
    """A sensor on the fixed base (its carrying body is the root): every link beyond it, at rest, reads as the
    robot's weight along gravity, its moment that of the weight at the centre of mass."""
    xml = arm7.replace('<link name="arm7_link0">', '<link name="world"/><joint name="mount" type="fixed">'
                       '<parent link="world"/><child link="arm7_link0"/><origin xyz="0 0 0.3"/></joint><link name="arm7_link0">', 1)
    model = rd.load_urdf(xml)
    sensor = ForceTorqueSensor(model, "arm7_link0")
    assert sensor.body == -1 and len(sensor.links) == len(model.link_names) - 1
    q = np.array([0.3, -0.5, 0.2, -1.8, 0.4, 1.5, -0.7, 0.02])
    reading = sensor.reading(q, np.zeros(8), np.zeros(8))
    links = [link for link in model.link_names if link != "world"]
    mass = sum(model.frames[link].inertial[0] for link in links)
    first_moment = sum(rd.frame_pose(model, q, link)[:3, :3] @ model.frames[link].inertial[1:4]
                       + model.frames[link].inertial[0] * rd.frame_pose(model, q, link)[:3, 3] for link in links)
    com = first_moment / mass - np.array([0.0, 0.0, 0.3])  # about the sensor's origin (world-aligned axes)
    np.testing.assert_allclose(reading[3:], [0.0, 0.0, -G * mass], atol=1e-9)
    np.testing.assert_allclose(reading[:3], np.cross(com, [0.0, 0.0, -G * mass]), atol=1e-9)
