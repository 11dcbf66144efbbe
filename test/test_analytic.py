"""Closed-form and textbook checks.

1. The planar 2R arm of Lynch & Park section 9.1 (point masses m1, m2 at the link ends, links
   rotating about z in the x-y plane, gravity along -y).  The closed forms below are derived from
   the book's Lagrangian (positions x_i, y_i given there), not copied from its printed torques,
   which carry typos: tau1's theta2-double-dot coefficient must read m2 (L1 L2 cos(theta2) + L2^2)
   (the book prints cos(theta1)), and tau2's velocity term is + m2 L1 L2 sin(theta2) theta1dot^2
   with the gravity term + m2 g L2 cos(theta1 + theta2).  ``test_closed_form_is_euler_lagrange``
   checks the closed forms against a numerical Euler-Lagrange evaluation of the Lagrangian, so the
   reference itself is tested.

2. The worked example of the Modern Robotics library (InverseDynamics / MassMatrix /
   ForwardDynamics docstrings): a 3-joint arm given as Mlist (CoM frames at home, each relative
   to the previous), Glist (spatial inertias in the CoM frames) and Slist (space-frame screw
   axes).  The test writes an equivalent URDF.  Note the docstring's first screw axis is
   S1 = (1, 0, 1, 0, 1, 0): a rotation about the unit axis (1, 0, 1)/sqrt(2) through
   (-0.5, 0, 0.5) at sqrt(2) times the rate of theta1.  So our angle is q1 = sqrt(2) theta1 and
   tau_MR = S tau_ours, M_MR = S M S, qdd_MR = S^-1 qdd with S = diag(|omega_i|).  The same
   comparison runs with the "intended" UR-like S1 = (0, 0, 1, 0, 0, 0).
"""

import math

import modern_robotics as mr
import numpy as np
import pytest

import robot_dynamics as rd

import robot_files as rf  # noqa: E402
from robot_files import assert_close  # noqa: E402

# ------------------------------------------------------------------------------------------------
# Lynch & Park 9.1: planar 2R arm with point masses
# ------------------------------------------------------------------------------------------------

L1, L2, M1, M2, GRAV = 0.7, 0.45, 1.3, 0.8, 9.81


def two_r_urdf(l1=L1, l2=L2, m1=M1, m2=M2):
    zero = np.zeros((3, 3))
    return f"""<robot name="lynch_park_2r">
  <link name="base"/>
  <link name="link1">{rf.inertial_xml(m1, (l1, 0, 0), (0, 0, 0), zero)}</link>
  <link name="link2">{rf.inertial_xml(m2, (l2, 0, 0), (0, 0, 0), zero)}</link>
  <joint name="theta1" type="continuous"><parent link="base"/><child link="link1"/><axis xyz="0 0 1"/></joint>
  <joint name="theta2" type="continuous"><parent link="link1"/><child link="link2"/>
    <origin xyz="{l1!r} 0 0"/><axis xyz="0 0 1"/></joint>
</robot>"""


def closed_form(th, thd, thdd, l1=L1, l2=L2, m1=M1, m2=M2, g=GRAV):
    """M, c, g, tau of the 2R arm, from the Lagrangian of section 9.1."""
    c2, s2 = math.cos(th[1]), math.sin(th[1])
    c1, c12 = math.cos(th[0]), math.cos(th[0] + th[1])
    M = np.array(
        [
            [m1 * l1**2 + m2 * (l1**2 + 2 * l1 * l2 * c2 + l2**2), m2 * (l1 * l2 * c2 + l2**2)],
            [m2 * (l1 * l2 * c2 + l2**2), m2 * l2**2],
        ]
    )
    c = np.array(
        [
            -m2 * l1 * l2 * s2 * (2 * thd[0] * thd[1] + thd[1] ** 2),
            m2 * l1 * l2 * s2 * thd[0] ** 2,
        ]
    )
    grav = np.array([(m1 + m2) * l1 * g * c1 + m2 * g * l2 * c12, m2 * g * l2 * c12])
    tau = M @ thdd + c + grav
    return M, c, grav, tau


def book_tau(th, thd, thdd, l1=L1, l2=L2, m1=M1, m2=M2, g=GRAV):
    """The book's printed tau1 (with cos(theta1) -> cos(theta2) fixed) and tau2 (corrected)."""
    t1, t2 = th
    d1, d2 = thd
    a1, a2 = thdd
    tau1 = (
        ((m1 + m2) * l1**2 + m2 * (2 * l1 * l2 * math.cos(t2) + l2**2)) * a1
        + m2 * (l1 * l2 * math.cos(t2) + l2**2) * a2
        - 2 * m2 * l1 * l2 * d1 * d2 * math.sin(t2)
        - m2 * l1 * l2 * d2**2 * math.sin(t2)
        + (m1 + m2) * l1 * g * math.cos(t1)
        + m2 * g * l2 * math.cos(t1 + t2)
    )
    tau2 = (
        m2 * (l1 * l2 * math.cos(t2) + l2**2) * a1
        + m2 * l2**2 * a2
        + m2 * l1 * l2 * d1**2 * math.sin(t2)
        + m2 * g * l2 * math.cos(t1 + t2)
    )
    return np.array([tau1, tau2])


def lagrangian_parts(th, thd, l1=L1, l2=L2, m1=M1, m2=M2, g=GRAV):
    """K and P straight from the book's point-mass positions and velocities."""
    t1, t2 = th
    v1 = np.array([-l1 * math.sin(t1), l1 * math.cos(t1)]) * thd[0]
    J2 = np.array(
        [
            [-l1 * math.sin(t1) - l2 * math.sin(t1 + t2), -l2 * math.sin(t1 + t2)],
            [l1 * math.cos(t1) + l2 * math.cos(t1 + t2), l2 * math.cos(t1 + t2)],
        ]
    )
    v2 = J2 @ thd
    K = 0.5 * m1 * v1 @ v1 + 0.5 * m2 * v2 @ v2
    P = m1 * g * l1 * math.sin(t1) + m2 * g * (l1 * math.sin(t1) + l2 * math.sin(t1 + t2))
    return K, P


def euler_lagrange(th, thd, thdd, eps=1e-5):
    """tau_i = d/dt dL/dthd_i - dL/dth_i by central differences along the trajectory."""

    def dL_dthd(t, td):
        # L is quadratic in thd, so a central difference with a unit step is exact
        out = np.zeros(2)
        for i in range(2):
            e = np.zeros(2)
            e[i] = 1.0
            out[i] = (np.subtract(*lagrangian_parts(t, td + e)) - np.subtract(*lagrangian_parts(t, td - e))) / 2
        return out

    def dL_dth(t, td):
        out = np.zeros(2)
        for i in range(2):
            e = np.zeros(2)
            e[i] = eps
            out[i] = (np.subtract(*lagrangian_parts(t + e, td)) - np.subtract(*lagrangian_parts(t - e, td))) / (2 * eps)
        return out

    h = 1e-4  # along theta(t +- h) = theta +- h thd + h^2/2 thdd
    ahead = dL_dthd(th + h * thd + h * h / 2 * thdd, thd + h * thdd)
    behind = dL_dthd(th - h * thd + h * h / 2 * thdd, thd - h * thdd)
    ddt = (ahead - behind) / (2 * h)
    return ddt - dL_dth(th, thd)


def two_r_states(n=20, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-math.pi, math.pi, (n, 2)), rng.standard_normal((n, 2)), rng.standard_normal((n, 2))


@pytest.fixture(scope="module")
def arm():
    return rd.load_urdf(two_r_urdf()).with_gravity([0.0, -GRAV, 0.0])


def test_closed_form_is_euler_lagrange():
    for th, thd, thdd in zip(*two_r_states(10, seed=1)):
        _, _, _, tau = closed_form(th, thd, thdd)
        np.testing.assert_allclose(euler_lagrange(th, thd, thdd), tau, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(book_tau(th, thd, thdd), tau, rtol=1e-12, atol=1e-12)


def test_two_r_model(arm):
    assert arm.joint_names == ("theta1", "theta2")
    assert arm.joint_types == ("continuous", "continuous")
    np.testing.assert_array_equal(arm.gravity, [0.0, -GRAV, 0.0])


def test_two_r_against_closed_form(arm):
    for k, (th, thd, thdd) in enumerate(zip(*two_r_states())):
        M, c, g, tau = closed_form(th, thd, thdd)
        assert_close(rd.mass_matrix(arm, th), M, f"M, state {k}")
        assert_close(rd.gravity_torques(arm, th), g, f"g, state {k}")
        assert_close(rd.bias_forces(arm, th, thd), c + g, f"h, state {k}")
        assert_close(rd.coriolis_matrix(arm, th, thd) @ thd, c, f"C qd, state {k}")
        assert_close(rd.inverse_dynamics(arm, th, thd, thdd), tau, f"tau, state {k}")
        assert_close(rd.forward_dynamics(arm, th, thd, tau), thdd, f"qdd, state {k}")
        K, P = lagrangian_parts(th, thd)
        assert_close(rd.kinetic_energy(arm, th, thd), K, f"K, state {k}")
        assert_close(rd.potential_energy(arm, th), P, f"P, state {k}")


def test_two_r_coriolis_matrix_is_christoffel(arm):
    """For the 2R arm the Christoffel C is [[-h qd2, -h (qd1 + qd2)], [h qd1, 0]], h = m2 L1 L2 sin q2.

    Any valid C only has to give C qd = c and dM/dt - 2C skew; check those two and the
    skew-symmetry with the analytic dM/dt.
    """
    for th, thd, _ in zip(*two_r_states(10, seed=4)):
        C = rd.coriolis_matrix(arm, th, thd)
        dM = np.array([[-2, -1], [-1, 0]]) * M2 * L1 * L2 * math.sin(th[1]) * thd[1]
        S = dM - 2 * C
        assert_close(S + S.T, np.zeros((2, 2)), "dM/dt - 2C skew")
        hh = M2 * L1 * L2 * math.sin(th[1])
        C_christoffel = np.array([[-hh * thd[1], -hh * (thd[0] + thd[1])], [hh * thd[0], 0.0]])
        assert_close(C @ thd, C_christoffel @ thd, "C qd")


def test_two_r_holding_torque_sign(arm):
    """Stretched out horizontally the holding torques are +(m1 + m2) g L1 + m2 g L2 and +m2 g L2."""
    g = rd.gravity_torques(arm, [0.0, 0.0])
    assert_close(g, [(M1 + M2) * GRAV * L1 + M2 * GRAV * L2, M2 * GRAV * L2], "holding torque")
    assert g[0] > 0  # holding the arm up against gravity along -y needs positive torque about +z


def test_two_r_tip_jacobian_and_pose(arm):
    """The tip (link2 frame + L2 along x) position and velocity from the book's x2, y2 formulas."""
    model = rd.load_urdf(
        two_r_urdf().replace(
            "</robot>",
            '<link name="tip"/><joint name="tip_joint" type="fixed"><parent link="link2"/><child link="tip"/>'
            f'<origin xyz="{L2!r} 0 0"/></joint></robot>',
        )
    )
    for th, thd, _ in zip(*two_r_states(10, seed=5)):
        t1, t2 = th
        T = rd.frame_pose(model, th, "tip")
        p = [L1 * math.cos(t1) + L2 * math.cos(t1 + t2), L1 * math.sin(t1) + L2 * math.sin(t1 + t2), 0.0]
        assert_close(T[:3, 3], p, "tip position")
        R = np.array([[math.cos(t1 + t2), -math.sin(t1 + t2), 0], [math.sin(t1 + t2), math.cos(t1 + t2), 0], [0, 0, 1]])
        assert_close(T[:3, :3], R, "tip rotation")
        J = rd.jacobian(model, th, "tip", reference="world")
        J2 = np.array(
            [
                [-L1 * math.sin(t1) - L2 * math.sin(t1 + t2), -L2 * math.sin(t1 + t2)],
                [L1 * math.cos(t1) + L2 * math.cos(t1 + t2), L2 * math.cos(t1 + t2)],
            ]
        )
        expected = np.zeros((6, 2))
        expected[2] = 1.0  # angular velocity about z
        expected[3:5] = J2
        assert_close(J, expected, "tip Jacobian [angular; linear]")


def test_bundled_two_link_example_matches_closed_form():
    """rd.examples.TWO_LINK_URDF: the same arm with the book's (x, y) as our (x, z), m = L = 1."""
    model = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    for th, thd, thdd in zip(*two_r_states(10, seed=6)):
        M, c, g, tau = closed_form(th, thd, thdd, 1.0, 1.0, 1.0, 1.0, 9.81)
        assert_close(rd.mass_matrix(model, th), M, "M")
        assert_close(rd.gravity_torques(model, th), g, "g")
        assert_close(rd.inverse_dynamics(model, th, thd, thdd), tau, "tau")


# ------------------------------------------------------------------------------------------------
# Modern Robotics library's worked example
# ------------------------------------------------------------------------------------------------

MR_M01 = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0.089159], [0, 0, 0, 1]])
MR_M12 = np.array([[0, 0, 1, 0.28], [0, 1, 0, 0.13585], [-1, 0, 0, 0], [0, 0, 0, 1]])
MR_M23 = np.array([[1, 0, 0, 0], [0, 1, 0, -0.1197], [0, 0, 1, 0.395], [0, 0, 0, 1]])
MR_M34 = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0.14225], [0, 0, 0, 1]])
MR_G = np.array(
    [
        np.diag([0.010267, 0.010267, 0.00666, 3.7, 3.7, 3.7]),
        np.diag([0.22689, 0.22689, 0.0151074, 8.393, 8.393, 8.393]),
        np.diag([0.0494433, 0.0494433, 0.004095, 2.275, 2.275, 2.275]),
    ]
)
MR_MLIST = np.array([MR_M01, MR_M12, MR_M23, MR_M34])
SLIST_DOCSTRING = np.array([[1, 0, 1, 0, 1, 0], [0, 1, 0, -0.089, 0, 0], [0, 1, 0, -0.089, 0, 0.425]]).T
SLIST_UR = np.array([[0, 0, 1, 0, 0, 0], [0, 1, 0, -0.089, 0, 0], [0, 1, 0, -0.089, 0, 0.425]]).T
MR_GRAVITY = np.array([0, 0, -9.8])


def mr_urdf(Mlist, Glist, Slist):
    """A URDF equivalent to an MR chain, and the rate scales |omega_i| of its screw axes.

    Link i's URDF frame sits on joint i's axis (at the point of the axis nearest the space origin)
    with world-aligned axes at home; the inertial block places the CoM frame T_0i = M_01 ... M_{i-1,i}
    and holds Glist[i]'s rotational inertia; an extra link "ee" is frame {n+1}.
    """
    n = Slist.shape[1]
    scales, points = [], [np.zeros(3)]
    T = np.eye(4)
    links, joints = ['<link name="base"/>'], []
    for i in range(n):
        w, v = Slist[:3, i].astype(float), Slist[3:, i].astype(float)
        s = np.linalg.norm(w)
        w, v = w / s, v / s
        assert abs(w @ v) < 1e-12, "only zero-pitch (revolute) screw axes"
        p = np.cross(w, v)  # v = -w x p = p x w for p on the axis, p . w = 0
        assert np.allclose(np.cross(p, w), v)
        scales.append(s)
        points.append(p)
        T = T @ Mlist[i]
        G = Glist[i]
        mass = G[3, 3]
        np.testing.assert_allclose(G[3:, 3:], mass * np.eye(3))
        rpy = rf.matrix_to_rpy(T[:3, :3])
        np.testing.assert_allclose(rf.rpy_to_matrix(rpy), T[:3, :3], atol=1e-15)
        links.append(f'<link name="link{i + 1}">{rf.inertial_xml(mass, T[:3, 3] - p, rpy, G[:3, :3])}</link>')
        parent = "base" if i == 0 else f"link{i}"
        joints.append(
            f'<joint name="joint{i + 1}" type="continuous"><parent link="{parent}"/><child link="link{i + 1}"/>'
            f'<origin xyz="{rf.fmt(p - points[i])}"/><axis xyz="{rf.fmt(w)}"/></joint>'
        )
    T = T @ Mlist[n]
    rpy = rf.matrix_to_rpy(T[:3, :3])
    links.append('<link name="ee"/>')
    joints.append(
        f'<joint name="ee_joint" type="fixed"><parent link="link{n}"/><child link="ee"/>'
        f'<origin xyz="{rf.fmt(T[:3, 3] - points[n])}" rpy="{rf.fmt(rpy)}"/></joint>'
    )
    return '<robot name="mr_arm">' + "".join(links + joints) + "</robot>", np.array(scales)


def ftip_to_wrench(model, q, ftip):
    """MR's Ftip (wrench BY the end effector ON the world, in frame {n+1}) as ours (on the robot,
    world-aligned axes at the ee origin)."""
    R = rd.frame_pose(model, q, "ee")[:3, :3]
    return -np.concatenate([R @ ftip[:3], R @ ftip[3:]])


@pytest.fixture(scope="module", params=["docstring", "ur"])
def mr_case(request):
    Slist = SLIST_DOCSTRING if request.param == "docstring" else SLIST_UR
    xml, scales = mr_urdf(MR_MLIST, MR_G, Slist)
    model = rd.load_urdf(xml).with_gravity(MR_GRAVITY)
    return model, Slist, scales


def test_mr_against_library(mr_case):
    model, Slist, s = mr_case
    S = np.diag(s)
    rng = np.random.default_rng(8)
    for k in range(20):
        th, dth, ddth = rng.uniform(-math.pi, math.pi, 3), rng.standard_normal(3), rng.standard_normal(3)
        ftip = rng.standard_normal(6) if k % 2 else np.zeros(6)
        q, qd, qdd = s * th, s * dth, s * ddth
        wrench = {"ee": ftip_to_wrench(model, q, ftip)}
        tau_mr = mr.InverseDynamics(th, dth, ddth, MR_GRAVITY, ftip, MR_MLIST, MR_G, Slist)
        assert_close(S @ rd.inverse_dynamics(model, q, qd, qdd, external_wrenches=wrench), tau_mr, f"tau {k}")
        assert_close(S @ rd.mass_matrix(model, q) @ S, mr.MassMatrix(th, MR_MLIST, MR_G, Slist), f"M {k}")
        g_mr = mr.GravityForces(th, MR_GRAVITY, MR_MLIST, MR_G, Slist)
        assert_close(S @ rd.gravity_torques(model, q), g_mr, f"g {k}")
        c_mr = mr.VelQuadraticForces(th, dth, MR_MLIST, MR_G, Slist)
        assert_close(S @ (rd.coriolis_matrix(model, q, qd) @ qd), c_mr, f"c {k}")
        tau = rng.standard_normal(3)
        ddth_mr = mr.ForwardDynamics(th, dth, tau, MR_GRAVITY, ftip, MR_MLIST, MR_G, Slist)
        qdd_ours = rd.forward_dynamics(model, q, qd, np.linalg.solve(S, tau), external_wrenches=wrench)
        assert_close(np.linalg.solve(S, qdd_ours), ddth_mr, f"qdd {k}")


def test_mr_docstring_values():
    """The numbers printed in the InverseDynamics / MassMatrix / ForwardDynamics / ... docstrings."""
    xml, s = mr_urdf(MR_MLIST, MR_G, SLIST_DOCSTRING)
    model = rd.load_urdf(xml).with_gravity(MR_GRAVITY)
    S = np.diag(s)
    th, dth, ddth = np.array([0.1, 0.1, 0.1]), np.array([0.1, 0.2, 0.3]), np.array([2, 1.5, 1])
    q, qd, qdd = s * th, s * dth, s * ddth
    wrench = {"ee": ftip_to_wrench(model, q, np.ones(6))}

    def printed(actual, expected, what):
        # 9 significant digits (e-format) or 8 decimals printed
        np.testing.assert_allclose(actual, expected, rtol=1e-8, atol=6e-9, err_msg=what)

    printed(
        S @ rd.inverse_dynamics(model, q, qd, qdd, external_wrenches=wrench),
        [74.69616155, -33.06766016, -3.23057314],
        "InverseDynamics",
    )
    printed(
        S @ rd.mass_matrix(model, q) @ S,
        [
            [2.25433380e01, -3.07146754e-01, -7.18426391e-03],
            [-3.07146754e-01, 1.96850717e00, 4.32157368e-01],
            [-7.18426391e-03, 4.32157368e-01, 1.91630858e-01],
        ],
        "MassMatrix",
    )
    qdd_ours = rd.forward_dynamics(model, q, qd, np.linalg.solve(S, [0.5, 0.6, 0.7]), external_wrenches=wrench)
    printed(np.linalg.solve(S, qdd_ours), [-0.97392907, 25.58466784, -32.91499212], "ForwardDynamics")
    printed(S @ rd.gravity_torques(model, q), [28.40331262, -37.64094817, -5.4415892], "GravityForces")
    printed(S @ rd.coriolis_matrix(model, q, qd) @ qd, [0.26453118, -0.05505157, -0.00689132], "VelQuadraticForces")
