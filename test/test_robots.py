"""The bundled robots (urdf/*.urdf): found, loadable, physically plausible, and right.

planar_2r is checked against Lynch & Park's closed form (section 9.1.1), cartesian_3dof against
its closed form, and every robot against Pinocchio (a test-only oracle).
"""

import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.description.robots import DEMO_ROBOT, bundled_robot_names, bundled_urdf

ROBOTS = ("arm7_gripper", "cartesian_3dof", "planar_2r")


def random_configuration(model, rng):
    lower, upper = model.position_limits.T
    lower = np.where(np.isfinite(lower), lower, -np.pi)
    upper = np.where(np.isfinite(upper), upper, np.pi)
    return rng.uniform(lower, upper)


def test_the_three_robots_are_bundled():
    assert set(ROBOTS) <= set(bundled_robot_names())
    assert DEMO_ROBOT in bundled_robot_names()
    for name in ROBOTS:
        path = bundled_urdf(name)
        assert path.is_file() and path.name == f"{name}.urdf"
        assert bundled_urdf(f"{name}.urdf") == path


@pytest.mark.parametrize("name", ["no_such_robot", "", "../urdf/planar_2r", "/etc/passwd"])
def test_unknown_robot_names_raise_lookup_error(name):
    with pytest.raises(LookupError, match="robot"):
        bundled_urdf(name)


@pytest.mark.parametrize("name", ROBOTS)
def test_loads_without_warnings_and_mass_matrix_is_positive_definite(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = rd.load_urdf(bundled_urdf(name))
    assert model.name == name
    rng = np.random.default_rng(5)
    for _ in range(20):
        q = random_configuration(model, rng)
        M = rd.mass_matrix(model, q)
        np.testing.assert_allclose(M, M.T, atol=1e-12)
        assert np.linalg.eigvalsh(M).min() > 1e-4


@pytest.mark.parametrize("name", ROBOTS)
def test_header_comment_documents_the_robot(name):
    text = bundled_urdf(name).read_text()
    header = text[text.index("<!--"): text.index("-->")]
    assert name in header and "mass" in header.lower() and "frame" in header.lower()
    ET.fromstring(text.encode())  # well-formed


def test_arm7_gripper_is_the_documented_demo_robot():
    model = rd.load_urdf(bundled_urdf("arm7_gripper"))
    assert model.nv == 8
    assert model.joint_names[:7] == tuple(f"arm7_joint{i}" for i in range(1, 8))
    assert model.joint_names[7] == "arm7_finger_joint1"
    assert model.joint_types == ("revolute",) * 7 + ("prismatic",)
    assert dict(model.mimic_joints) == {"arm7_finger_joint2": ("arm7_finger_joint1", 1.0, 0.0)}
    assert np.all(np.isfinite(model.position_limits)) and np.all(np.isfinite(model.effort_limits))
    assert np.all(model.damping > 0) and np.all(model.friction > 0)
    root = ET.parse(bundled_urdf("arm7_gripper")).getroot()
    masses = [float(link.find("inertial/mass").get("value")) for link in root.iter("link")
              if link.find("inertial") is not None]
    assert sum(masses) == pytest.approx(21.8)
    moving = [m for m in masses[1:8]]
    assert all(1.0 <= m <= 4.0 for m in moving)
    # The documented home pose is inside the limits and needs torques well inside the effort limits.
    home = np.array([0, -0.785, 0, -2.356, 0, 1.571, 0.785, 0.02])
    lower, upper = model.position_limits.T
    assert np.all((lower <= home) & (home <= upper))
    assert np.all(np.abs(rd.gravity_torques(model, home)) < 0.5 * model.effort_limits)


def planar_2r_closed_form(theta, dtheta, ddtheta, m1=2.0, m2=1.0, L1=1.0, L2=0.5, g=9.81):
    """Lynch & Park eq. for the 2R point-mass arm (section 9.1.1), slips corrected (see the URDF)."""
    t1, t2 = theta
    d1, d2 = dtheta
    c2, s2 = np.cos(t2), np.sin(t2)
    M = np.array([
        [(m1 + m2) * L1**2 + m2 * (2 * L1 * L2 * c2 + L2**2), m2 * (L1 * L2 * c2 + L2**2)],
        [m2 * (L1 * L2 * c2 + L2**2), m2 * L2**2],
    ])
    c = np.array([-m2 * L1 * L2 * s2 * (2 * d1 * d2 + d2**2), m2 * L1 * L2 * d1**2 * s2])
    grav = np.array([
        (m1 + m2) * L1 * g * np.cos(t1) + m2 * g * L2 * np.cos(t1 + t2),
        m2 * g * L2 * np.cos(t1 + t2),
    ])
    return M, c, grav, M @ ddtheta + c + grav


def test_planar_2r_matches_the_book():
    model = rd.load_urdf(bundled_urdf("planar_2r"))
    assert model.joint_names == ("theta1", "theta2")
    rng = np.random.default_rng(1)
    for _ in range(20):
        theta, dtheta, ddtheta = rng.uniform(-3, 3, (3, 2))
        M, c, grav, tau = planar_2r_closed_form(theta, dtheta, ddtheta)
        np.testing.assert_allclose(rd.mass_matrix(model, theta), M, atol=1e-12)
        np.testing.assert_allclose(rd.gravity_torques(model, theta), grav, atol=1e-12)
        np.testing.assert_allclose(rd.bias_forces(model, theta, dtheta), c + grav, atol=1e-12)
        np.testing.assert_allclose(rd.inverse_dynamics(model, theta, dtheta, ddtheta), tau, atol=1e-12)
    # The book's frames: theta = 0 stretches the arm along +x, theta1 = pi/2 points it up (+z).
    np.testing.assert_allclose(rd.frame_pose(model, [0, 0], "tip")[:3, 3], [1.5, 0, 0], atol=1e-12)
    np.testing.assert_allclose(rd.frame_pose(model, [np.pi / 2, 0], "tip")[:3, 3], [0, 0, 1.5], atol=1e-12)


def test_cartesian_3dof_matches_its_closed_form():
    model = rd.load_urdf(bundled_urdf("cartesian_3dof"))
    assert model.joint_types == ("prismatic",) * 3
    rng = np.random.default_rng(2)
    for _ in range(10):
        q = random_configuration(model, rng)
        qd, qdd = rng.normal(size=(2, 3))
        np.testing.assert_allclose(rd.mass_matrix(model, q), np.diag([8.5, 3.5, 1.5]), atol=1e-12)
        np.testing.assert_allclose(rd.gravity_torques(model, q), [0, 0, 1.5 * 9.81], atol=1e-12)
        np.testing.assert_allclose(rd.inverse_dynamics(model, q, qd, qdd),
                                   np.array([8.5, 3.5, 1.5]) * qdd + [0, 0, 1.5 * 9.81], atol=1e-12)


def _pinocchio_configuration(pin, pin_model, names, q):
    """Pinocchio's q (cos/sin for continuous joints) from ours, by joint name."""
    q_pin = pin.neutral(pin_model)
    for name, value in zip(names, q):
        joint = pin_model.joints[pin_model.getJointId(name)]
        if joint.nq == 2:
            q_pin[joint.idx_q: joint.idx_q + 2] = np.cos(value), np.sin(value)
        else:
            q_pin[joint.idx_q] = value
    return q_pin


def _pinocchio_velocity_order(pin_model, names):
    return [pin_model.joints[pin_model.getJointId(name)].idx_v for name in names]


@pytest.mark.parametrize("name", ROBOTS)
def test_matches_pinocchio_without_mimic(name):
    pin = pytest.importorskip("pinocchio")
    path = str(bundled_urdf(name))
    model = rd.load_urdf(path, mimic=False)
    pin_model = pin.buildModelFromUrdf(path)
    pin_data = pin_model.createData()
    order = _pinocchio_velocity_order(pin_model, model.joint_names)
    assert sorted(order) == list(range(model.nv))
    rng = np.random.default_rng(3)
    for _ in range(10):
        q = random_configuration(model, rng)
        qd, qdd = rng.normal(size=(2, model.nv))
        q_pin = _pinocchio_configuration(pin, pin_model, model.joint_names, q)
        v_pin, a_pin = np.zeros(model.nv), np.zeros(model.nv)
        v_pin[order], a_pin[order] = qd, qdd
        tau_pin = pin.rnea(pin_model, pin_data, q_pin, v_pin, a_pin)[order]
        M_pin = pin.crba(pin_model, pin_data, q_pin)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        np.testing.assert_allclose(rd.inverse_dynamics(model, q, qd, qdd), tau_pin, atol=1e-9)
        np.testing.assert_allclose(rd.mass_matrix(model, q), M_pin[np.ix_(order, order)], atol=1e-9)


def test_arm7_gripper_mimic_model_matches_pinocchio_mimic_mode():
    pin = pytest.importorskip("pinocchio")
    path = str(bundled_urdf("arm7_gripper"))
    model = rd.load_urdf(path)
    try:
        pin_model = pin.buildModelFromUrdf(path, mimic=True)
    except TypeError:
        pytest.skip("this Pinocchio has no mimic support")
    pin_data = pin_model.createData()
    assert pin_model.nv == model.nv == 8
    rng = np.random.default_rng(4)
    for _ in range(10):
        q = random_configuration(model, rng)
        q_pin = _pinocchio_configuration(pin, pin_model, model.joint_names, q)
        order = _pinocchio_velocity_order(pin_model, model.joint_names)
        M_pin = pin.crba(pin_model, pin_data, q_pin)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        g_pin = pin.computeGeneralizedGravity(pin_model, pin_data, q_pin)
        np.testing.assert_allclose(rd.mass_matrix(model, q), M_pin[np.ix_(order, order)], atol=1e-9)
        np.testing.assert_allclose(rd.gravity_torques(model, q), g_pin[order], atol=1e-9)


def test_installed_copies_are_found_outside_a_checkout(tmp_path, monkeypatch):
    """A pip install: no source checkout around the package, files in <prefix>/share/robot_dynamics/urdf."""
    import sys

    from robot_dynamics.description import robots

    share = tmp_path / "prefix" / "share" / "robot_dynamics" / "urdf"
    share.mkdir(parents=True)
    (share / "planar_2r.urdf").write_text(bundled_urdf("planar_2r").read_text())
    monkeypatch.setattr(robots, "__file__", str(tmp_path / "site-packages" / "robot_dynamics" / "robots.py"))
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "prefix"))
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    assert robots.bundled_robot_names() == ["planar_2r"]
    assert robots.bundled_urdf("planar_2r") == share / "planar_2r.urdf"
    with pytest.raises(LookupError, match="bundled robots: planar_2r"):
        robots.bundled_urdf("arm7_gripper")
