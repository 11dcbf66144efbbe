"""Motors and gears: reflected rotor inertia (Spong Ex. 6.1) and elastic joints (Spong Ex. 6.2).

The single link of both examples is a rod of mass ``M`` whose centre of mass is ``l`` from the
joint, with inertia ``J_l`` about the joint, driven through a gear ``r`` by a motor of rotor
inertia ``J_m`` and damping ``B_m``, given in the URDF's ``<transmission>``.  Spong's closed
forms, with the link angle ``q`` measured from the downward vertical:

- Ex. 6.1 (rigid gear): ``I qdd + B qd + M g l sin q = u`` with ``I = r^2 J_m + J_l``,
  ``B = r^2 B_m + B_l`` (the seed's text prints ``r B_m``; the motor's damping torque
  ``B_m r qd`` reflects through the gear once more, hence ``r^2``, which is what the power
  balance ``B_m (r qd)^2`` requires).
- Ex. 6.2 (elastic gear, motor angle ``theta`` reflected to the link): ``J_l qdd + B_l qd +
  M g l sin q + k (q - theta) = 0`` and ``J theta_dd + B_m theta_d - k (q - theta) = u`` with
  ``J = r^2 J_m``, the motor's damping ``r^2 B_m`` likewise reflected.
"""

import math
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.rigid_body.elastic import (
    elastic_energy, elastic_forward_dynamics, elastic_inverse_dynamics, inverse_dynamics_rates,
)
from robot_dynamics.description.robots import bundled_urdf
from robot_dynamics.simulation.simulator import INTEGRATORS, Simulator

G = 9.81
MASS, COM, INERTIA_AT_COM = 2.0, 0.4, 0.05        # M, l, the rod's inertia about its centre of mass
J_LINK = INERTIA_AT_COM + MASS * COM ** 2         # J_l about the joint
RATIO, ROTOR, ROTOR_DAMPING = -50.0, 2e-4, 1e-3   # r (negative: a reversed motor), J_m, B_m
LINK_DAMPING = 0.3                                 # B_l

SINGLE_LINK = f"""
<robot name="single_link" xmlns:drake="http://drake.mit.edu">
  <link name="base"/>
  <link name="rod">
    <inertial><origin xyz="0 0 -{COM}"/><mass value="{MASS}"/>
      <inertia ixx="{INERTIA_AT_COM}" ixy="0" ixz="0" iyy="{INERTIA_AT_COM}" iyz="0" izz="{INERTIA_AT_COM}"/></inertial>
  </link>
  <joint name="hinge" type="continuous">
    <parent link="base"/><child link="rod"/><axis xyz="0 1 0"/>
    <dynamics damping="{LINK_DAMPING}"/>
  </joint>
  <transmission name="hinge_drive">
    <type>transmission_interface/SimpleTransmission</type>
    <joint name="hinge"><hardwareInterface>hardware_interface/EffortJointInterface</hardwareInterface></joint>
    <actuator name="hinge_motor">
      <mechanicalReduction>{RATIO}</mechanicalReduction>
      <drake:rotor_inertia value="{ROTOR}"/>
      <drake:rotor_damping value="{ROTOR_DAMPING}"/>
    </actuator>
  </transmission>
</robot>
"""


def single_link():
    return rd.load_urdf(SINGLE_LINK)


def two_link_with(transmissions, mimic=""):
    """TWO_LINK_URDF with extra elements (transmissions) in the drake namespace."""
    xml = rd.examples.TWO_LINK_URDF.replace('<robot name="two_link">', '<robot name="two_link" xmlns:drake="http://drake.mit.edu">')
    return xml.replace("</robot>", transmissions + mimic + "</robot>")


def ros_transmission(joint, reduction, rotor=None, name="t", kind="transmission_interface/SimpleTransmission", where="actuator"):
    inertia = f'<drake:rotor_inertia value="{rotor}"/>' if rotor is not None else ""
    reduction_tag = f"<mechanicalReduction>{reduction}</mechanicalReduction>"
    actuator = f'<actuator name="{name}_m">{reduction_tag if where == "actuator" else ""}{inertia}</actuator>'
    return (f'<transmission name="{name}"><type>{kind}</type><joint name="{joint}"/>{actuator}'
            f'{reduction_tag if where == "transmission" else ""}</transmission>')


def drake_transmission(joint, ratio, rotor, name="d"):
    return (f'<transmission name="{name}"><type>transmission_interface/SimpleTransmission</type><joint name="{joint}"/>'
            f'<actuator name="{name}_m"><drake:gear_ratio value="{ratio}"/><drake:rotor_inertia value="{rotor}"/>'
            "</actuator></transmission>")


# ----------------------------------------------------------------------------- URDF transmissions

def test_single_link_reads_r_squared_rotor_inertia_and_damping():
    model = single_link()
    np.testing.assert_allclose(model.armature, [RATIO ** 2 * ROTOR], rtol=1e-15)
    np.testing.assert_allclose(model.motor_damping, [RATIO ** 2 * ROTOR_DAMPING], rtol=1e-15)
    np.testing.assert_allclose(model.damping, [LINK_DAMPING])


def test_both_dialects_and_where_r_is_read():
    cases = {
        "ROS, reduction in actuator": (ros_transmission("elbow", 10, 1e-3), [0, 0.1]),
        "ROS, reduction in transmission": (ros_transmission("elbow", 10, 1e-3, where="transmission"), [0, 0.1]),
        "ROS, old pr2 type": (ros_transmission("shoulder", -20, 1e-3, kind="pr2_mechanism_model/SimpleTransmission"), [0.4, 0]),
        "Drake": (drake_transmission("shoulder", 30, 2e-4), [0.18, 0]),
        "gear ratio without rotor inertia": (ros_transmission("elbow", 100), [0, 0]),
        "a gear on a welded joint, no rotor": (ros_transmission("tip_joint", 10), [0, 0]),
        "differential, no rotor": (ros_transmission("elbow", 10, kind="transmission_interface/DifferentialTransmission"), [0, 0]),
        "two transmissions": (drake_transmission("shoulder", 30, 2e-4) + ros_transmission("elbow", 10, 1e-3), [0.18, 0.1]),
    }
    for label, (xml, expected) in cases.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model = rd.load_urdf(two_link_with(xml))
        np.testing.assert_allclose(model.armature, expected, rtol=1e-12, err_msg=label)
    # drake:gear_ratio wins over mechanicalReduction
    both = two_link_with(drake_transmission("elbow", 30, 2e-4).replace(
        "<actuator name", "<mechanicalReduction>7</mechanicalReduction><actuator name"))
    np.testing.assert_allclose(rd.load_urdf(both).armature, [0, 0.18])


def test_a_transmission_on_a_mimic_joint_reflects_to_its_master():
    mimic_joint = ('<link name="extra"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
                   '</inertial></link><joint name="follower" type="revolute"><parent link="fore"/><child link="extra"/>'
                   '<axis xyz="0 0 1"/><mimic joint="elbow" multiplier="-2"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')
    model = rd.load_urdf(two_link_with(ros_transmission("follower", 10, 1e-3), mimic_joint))
    np.testing.assert_allclose(model.armature, [0, 4 * 0.1])



def test_a_rotor_on_a_joint_following_several_coordinates_is_skipped_with_a_warning():
    # Spong's five-bar: q3 = q1 - q2. Its rotor would add r^2 J_m e e^T with e = (1, -1), off the
    # diagonal; the armature is one value per coordinate, so the rotor is refused, loudly.
    five_bar = bundled_urdf("five_bar").read_text().replace('<robot name="five_bar">',
                                                            '<robot name="five_bar" xmlns:drake="http://drake.mit.edu">')
    plain = rd.load_urdf(five_bar)
    with pytest.warns(UserWarning, match=r"transmission 't' names joint 'q3', which follows several coordinates \(q1, q2\)"):
        model = rd.load_urdf(five_bar.replace("</robot>", ros_transmission("q3", 10, 1e-3) + "</robot>"))
    np.testing.assert_array_equal(model.armature, [0, 0])
    np.testing.assert_array_equal(rd.mass_matrix(model, [0.3, 0.1]), rd.mass_matrix(plain, [0.3, 0.1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a gear without a rotor reflects nothing: nothing to warn about
        rd.load_urdf(five_bar.replace("</robot>", ros_transmission("q3", 10) + "</robot>"))

@pytest.mark.parametrize("xml, message", [
    (ros_transmission("elbow", 10, 1e-3, kind="transmission_interface/DifferentialTransmission"), "DifferentialTransmission"),
    (ros_transmission("nowhere", 10, 1e-3), "'nowhere'"),
    (ros_transmission("tip_joint", 10, 1e-3), "'tip_joint'"),
    (ros_transmission("elbow", "ten", 1e-3), "not a number: 'ten'"),
    (ros_transmission("elbow", 10, -1e-3), "negative"),
    (ros_transmission("elbow", 10, 1e-3).replace('<joint name="elbow"/>', '<joint name="elbow"/><joint name="shoulder"/>'),
     "2 joints"),
    (ros_transmission("elbow", 10, 1e-3).replace('<actuator name', '<actuator name="more"/><actuator name'), "2 actuators"),
])
def test_unreadable_transmissions_are_skipped_with_a_warning_naming_them(xml, message):
    with pytest.warns(UserWarning, match=message) as caught:
        model = rd.load_urdf(two_link_with(xml))
    assert "transmission 't'" in str(caught[0].message)
    np.testing.assert_array_equal(model.armature, [0, 0])


def test_a_rotor_gives_a_massless_joint_inertia():
    xml = two_link_with(drake_transmission("elbow", 30, 2e-4)).replace(
        '<inertial><origin xyz="1 0 0"/><mass value="1"/>\n      <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>\n  </link>\n  <link name="tip"/>',
        '</link>\n  <link name="tip"/>')
    assert xml.count("<mass") == 1  # the forearm is massless
    with pytest.warns(UserWarning, match="joint 'elbow' moves no mass"):
        rd.load_urdf(xml.replace('<drake:rotor_inertia value="0.0002"/>', ""))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = rd.load_urdf(xml)
    np.testing.assert_allclose(rd.mass_matrix(model, [0, 0])[1, 1], 0.18)


def test_with_armature_returns_a_new_model():
    arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    geared = arm.with_armature({"shoulder": 0.3}, motor_damping=[0.1, 0.2])
    np.testing.assert_array_equal(geared.armature, [0.3, 0])
    np.testing.assert_array_equal(geared.motor_damping, [0.1, 0.2])
    np.testing.assert_array_equal(arm.armature, [0, 0])
    np.testing.assert_array_equal(geared.with_armature([0.1, 0.2]).armature, [0.1, 0.2])
    assert not geared.armature.flags.writeable
    for bad, message in (({"wrist": 1.0}, "unknown joints"), ([1.0], "2 values"), ([-1.0, 0], "non-negative"),
                         ([math.nan, 0], "finite")):
        with pytest.raises(ValueError, match=message):
            arm.with_armature(bad)


# ----------------------------------------------------------------------------- reflected rotor inertia

def test_spong_example_6_1_in_closed_form():
    """``I qdd + B qd + M g l sin q = u`` with ``I = r^2 J_m + J_l``, ``B = r^2 B_m + B_l``."""
    model = single_link()
    I, B, mgl = RATIO ** 2 * ROTOR + J_LINK, RATIO ** 2 * ROTOR_DAMPING + LINK_DAMPING, MASS * G * COM
    rng = np.random.default_rng(0)
    for q, qd, qdd, u in rng.normal(size=(10, 4)):
        np.testing.assert_allclose(rd.mass_matrix(model, [q]), [[I]], rtol=1e-14)
        np.testing.assert_allclose(rd.inverse_dynamics(model, [q], [qd], [qdd]), [I * qdd + mgl * math.sin(q)], rtol=1e-13)
        np.testing.assert_allclose(rd.forward_dynamics(model, [q], [qd], [u]), [(u - mgl * math.sin(q)) / I], rtol=1e-13)
        np.testing.assert_allclose(rd.kinetic_energy(model, [q], [qd]), 0.5 * I * qd ** 2, rtol=1e-14)
        sim = Simulator(model, [q], [qd], apply_damping=True)  # the simulator's damping: B_l + r^2 B_m
        np.testing.assert_allclose(sim.acceleration([q], [qd], [u]), [(u - B * qd - mgl * math.sin(q)) / I], rtol=1e-13)
    for name in ("lagrange_euler_terms", "closed_form_terms", "dalembert_terms"):
        np.testing.assert_allclose(getattr(rd, name)(model, [0.3], [0.0])[0], [[I]], rtol=1e-13, err_msg=name)


@pytest.mark.parametrize("robot", ["arm7_gripper", "random_tree"])
def test_armature_against_pinocchio(robot):
    """Pinocchio's ``model.armature`` as the oracle: M (crba), ID (rnea), FD (aba), kinetic energy."""
    pytest.importorskip("pinocchio")
    import robot_files as rf

    if robot == "random_tree":
        xml = rf.random_tree_urdf(5)
    else:
        xml = bundled_urdf(robot).read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random trees may carry odd inertias on purpose
        model = rd.load_urdf(xml, mimic=False)
    oracle = rf.PinOracle(xml, model.joint_names)
    rng = np.random.default_rng(5)
    armature = rng.uniform(0.05, 0.5, model.nv)
    geared = model.with_armature(armature)
    oracle.model.armature[oracle.perm] = armature
    pin, data = oracle.pin, oracle.data
    for q, qd, qdd in rng.normal(size=(5, 3, model.nv)):
        pq, pv, pa = oracle.q(q), oracle.v(qd), oracle.v(qdd)
        M = pin.crba(oracle.model, data, pq)
        M = np.triu(M) + np.triu(M, 1).T
        np.testing.assert_allclose(rd.mass_matrix(geared, q), oracle.ours_mat(M), atol=1e-10)
        np.testing.assert_allclose(rd.inverse_dynamics(geared, q, qd, qdd), oracle.ours(pin.rnea(oracle.model, data, pq, pv, pa)),
                                   atol=1e-9)
        tau = rng.normal(size=model.nv)
        np.testing.assert_allclose(rd.forward_dynamics(geared, q, qd, tau),
                                   oracle.ours(pin.aba(oracle.model, data, pq, pv, oracle.v(tau))), atol=1e-8)
        # 1/2 v^T M v with pinocchio's M (its computeKineticEnergy disagrees with its own crba once
        # armature and continuous joints, nq = 2, meet)
        np.testing.assert_allclose(rd.kinetic_energy(geared, q, qd), 0.5 * qd @ oracle.ours_mat(M) @ qd, rtol=1e-11)
        np.testing.assert_allclose(rd.kinetic_energy(geared, q, qd) - rd.kinetic_energy(model, q, qd),
                                   0.5 * armature @ qd ** 2, rtol=1e-11)
        C = rd.coriolis_matrix(geared, q, qd)  # unchanged by a constant diagonal: Mdot - 2C still skew
        np.testing.assert_allclose(C, rd.coriolis_matrix(model, q, qd), atol=1e-12)


# ----------------------------------------------------------------------------- elastic joints

def ex62_accelerations(q, qd, theta, theta_d, u, k):
    """Spong Ex. 6.2 solved for the accelerations, the motor reflected to the link side, with damping."""
    J = RATIO ** 2 * ROTOR
    qdd = -(LINK_DAMPING * qd + MASS * G * COM * math.sin(q) + k * (q - theta)) / J_LINK
    theta_dd = (u - RATIO ** 2 * ROTOR_DAMPING * theta_d + k * (q - theta)) / J
    return qdd, theta_dd


def test_elastic_forward_dynamics_is_spong_example_6_2():
    model, k = single_link(), 120.0
    rng = np.random.default_rng(1)
    for q, qd, theta, theta_d, u in rng.normal(size=(20, 5)):
        qdd, theta_dd = elastic_forward_dynamics(model, [q], [qd], [theta], [theta_d], [u], [k])
        expected_qdd, expected_theta_dd = ex62_accelerations(q, qd, theta, theta_d, u, k)
        # elastic_forward_dynamics leaves link damping to the caller (as forward_dynamics does)
        np.testing.assert_allclose(qdd, expected_qdd + LINK_DAMPING * qd / J_LINK, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(theta_dd, expected_theta_dd, rtol=1e-12)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_elastic_simulator_is_spong_example_6_2(integrator):
    """One step of every integrator against scipy on Ex. 6.2's closed form, damping on."""
    from scipy.integrate import solve_ivp

    model, k = single_link(), 120.0
    start = (0.4, -0.3, 0.7, 1.5)
    sim = Simulator(model, [start[0]], [start[1]], integrator=integrator, apply_damping=True, joint_stiffness=[k])
    sim.reset([start[0]], [start[1]], motor_q=[start[2]], motor_qd=[start[3]])
    u = 0.8
    h = 1e-3 if integrator in ("rk4", "adaptive") else 1e-4
    steps = round(0.2 / h)
    for _ in range(steps):
        sim.step([u], h)

    def f(t, x):
        qdd, theta_dd = ex62_accelerations(x[0], x[1], x[2], x[3], u, k)
        return [x[1], qdd, x[3], theta_dd]

    reference = solve_ivp(f, (0, h * steps), start, method="DOP853", rtol=1e-11, atol=1e-12).y[:, -1]
    tolerance = {"euler": 3e-2, "semi_implicit_euler": 3e-2, "rk4": 1e-7, "adaptive": 1e-7}[integrator]
    np.testing.assert_allclose([sim.q[0], sim.qd[0], sim.motor_q[0], sim.motor_qd[0]], reference, atol=tolerance)


def geared_arm():
    """The bundled 7-joint arm with motors and springs: each joint's own mode near 5 Hz at q = 0
    (``K = (2 pi 5 Hz)^2 (M_ii + J_i)``); coupled, its elastic modes span 63-350 rad/s."""
    model = rd.load_urdf(bundled_urdf("arm7_gripper")).with_armature(np.linspace(0.6, 0.1, 8))
    return model, np.array([650.0, 3400.0, 500.0, 1000.0, 340.0, 280.0, 170.0, 200.0])


def test_inverse_dynamics_rates_are_exact():
    """The Taylor-series Newton-Euler: order 0 is inverse_dynamics; orders 1 and 2 agree with central
    differences along q(t) = a sin(w t + p) to their truncation error, which shrinks as h^2."""
    model, _ = geared_arm()
    rng = np.random.default_rng(2)
    a, w, p = rng.normal(size=model.nv), 1 + rng.random(model.nv), rng.normal(size=model.nv)

    def derivative(t, k):
        return a * w ** k * np.sin(w * t + p + k * np.pi / 2)

    def tau(t):
        return rd.inverse_dynamics(model.with_armature(np.zeros(model.nv)), *(derivative(t, k) for k in range(3)))

    t = 0.3
    rates = inverse_dynamics_rates(model, *(derivative(t, k) for k in range(5)))
    np.testing.assert_allclose(rates[0], tau(t), atol=1e-12)
    errors = []
    for h in (1e-2, 1e-3):
        first = (tau(t + h) - tau(t - h)) / (2 * h)
        second = (tau(t + h) - 2 * tau(t) + tau(t - h)) / h ** 2
        errors.append((np.abs(first - rates[1]).max(), np.abs(second - rates[2]).max()))
    assert errors[1][0] < 1e-4 and errors[1][1] < 1e-3
    assert 80 < errors[0][0] / errors[1][0] < 120 and 80 < errors[0][1] / errors[1][1] < 120  # h^2: the rates are exact


def test_inverse_dynamics_rates_of_a_pendulum_in_closed_form():
    """``tau = J_l qdd + M g l sin q``: ``dtau = J_l q3 + M g l cos q qd``,
    ``d2tau = J_l q4 + M g l (cos q qdd - sin q qd^2)``."""
    model = single_link()
    q, qd, qdd, q3, q4 = 0.7, -1.3, 2.1, 0.4, -3.0
    tau, tau_d, tau_dd = inverse_dynamics_rates(model, [q], [qd], [qdd], [q3], [q4])
    mgl = MASS * G * COM
    np.testing.assert_allclose(tau, [J_LINK * qdd + mgl * math.sin(q)], rtol=1e-14)
    np.testing.assert_allclose(tau_d, [J_LINK * q3 + mgl * math.cos(q) * qd], rtol=1e-14)
    np.testing.assert_allclose(tau_dd, [J_LINK * q4 + mgl * (math.cos(q) * qdd - math.sin(q) * qd ** 2)], rtol=1e-14)


def test_elastic_inverse_dynamics_inverts_the_forward_dynamics():
    model, K = geared_arm()
    model = model.with_armature(model.armature, motor_damping=np.linspace(0.1, 0.5, model.nv))
    rng = np.random.default_rng(3)
    q, qd, qdd, q3, q4 = rng.normal(size=(5, 4, model.nv))  # a batch of four states
    theta, theta_d, u = elastic_inverse_dynamics(model, K, q, qd, qdd, q3, q4)
    links_torque = rd.inverse_dynamics(model.with_armature(np.zeros(model.nv)), q, qd, qdd)
    np.testing.assert_allclose(K * (theta - q), links_torque, rtol=1e-12, atol=1e-10)
    qdd_back, theta_dd = elastic_forward_dynamics(model, q, qd, theta, theta_d, u, K)
    np.testing.assert_allclose(qdd_back, qdd, atol=1e-9)
    _, tau_d, tau_dd = inverse_dynamics_rates(model, q, qd, qdd, q3, q4)
    np.testing.assert_allclose(theta_d, qd + tau_d / K, rtol=1e-14)
    np.testing.assert_allclose(theta_dd, qdd + tau_dd / K, atol=1e-9)


def test_elastic_models_need_rotors_and_positive_stiffness():
    arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    with pytest.raises(ValueError, match="rotor inertia.*shoulder, elbow"):
        elastic_forward_dynamics(arm, [0, 0], [0, 0], [0, 0], [0, 0], [0, 0], [10, 10])
    with pytest.raises(ValueError, match="rotor inertia.*elbow"):
        Simulator(arm.with_armature({"shoulder": 1.0}), joint_stiffness=[10, 10])
    with pytest.raises(ValueError, match="positive and finite"):
        Simulator(arm.with_armature([1.0, 1.0]), joint_stiffness=[10, 0])
    with pytest.raises(ValueError, match="2 values"):
        Simulator(arm.with_armature([1.0, 1.0]), joint_stiffness=[10])
    with pytest.raises(ValueError, match="elastic joints"):
        Simulator(arm).reset(motor_q=[0, 0])


def test_elastic_simulator_defaults_and_rigid_motor_state():
    model, K = geared_arm()
    q = np.full(model.nv, 0.1)
    sim = Simulator(model, q, joint_stiffness=K)
    np.testing.assert_array_equal(sim.motor_q, q)  # motors at the links: springs relaxed
    np.testing.assert_array_equal(sim.motor_qd, np.zeros(model.nv))
    np.testing.assert_array_equal(sim.joint_stiffness, K)
    rigid = Simulator(model, q)
    assert rigid.joint_stiffness is None
    np.testing.assert_array_equal(rigid.motor_q, q)


def test_elastic_energy_is_conserved_by_rk4():
    """Links + motors + springs + gravity, no torque, damping or limits: 1 s at 4 kHz."""
    model, K = geared_arm()
    rng = np.random.default_rng(4)
    q = rng.uniform(-0.5, 0.5, model.nv)
    sim = Simulator(model, q, integrator="rk4", joint_stiffness=K, enforce_position_limits=False)
    sim.reset(q, motor_q=q + rng.uniform(-0.05, 0.05, model.nv))
    start = sim.energy()
    spring = 0.5 * (K * (sim.motor_q - sim.q) ** 2).sum()
    assert spring > 0.1  # the springs hold real energy that moves between links and motors
    assert start == pytest.approx(float(elastic_energy(model, sim.q, sim.qd, sim.motor_q, sim.motor_qd, K)))
    drift = 0.0
    for _ in range(4000):
        sim.step(np.zeros(model.nv), 2.5e-4)
        drift = max(drift, abs(sim.energy() - start))
    assert drift < 1e-4  # of ~110 J; measured 8.8e-6 J (2.7e-4 J at 1 kHz)
    assert np.abs(sim.motor_q - sim.q).max() > 1e-3  # still elastic, not settled


def test_open_loop_elastic_inverse_dynamics_tracks_and_rigid_computed_torque_does_not():
    """The same elastic plant, open loop, along a smooth trajectory (motors started on the motor
    trajectory): the motor torque of elastic_inverse_dynamics keeps the links on it to the
    integrator's error; the rigid computed torque ``(M + J) qdd + h`` excites the springs."""
    model, K = geared_arm()
    n, h, steps = model.nv, 1e-3, 1000
    a, w = np.linspace(0.4, 0.2, n), np.linspace(2.0, 4.0, n)

    def derivative(t, k):
        return a * w ** k * np.sin(w * t + k * np.pi / 2)

    times = np.arange(2 * steps + 1) * (h / 2)  # every instant rk4's stages need
    trajectory = [np.array([derivative(t, k) for t in times]) for k in range(5)]
    theta, theta_d, u = elastic_inverse_dynamics(model, K, *trajectory)
    rigid = rd.inverse_dynamics(model, *trajectory[:3])  # (M + J) qdd + h

    def run(torques, motor_q, motor_qd):
        sim = Simulator(model, joint_stiffness=K, enforce_position_limits=False, enforce_effort_limits=False)
        sim.reset(trajectory[0][0], trajectory[1][0], t=0.0, motor_q=motor_q, motor_qd=motor_qd)
        error = 0.0
        for k in range(steps):
            sim.step(lambda t: torques[round(t / (h / 2))], h)
            error = max(error, np.abs(sim.q - trajectory[0][2 * k + 2]).max())
        return error

    elastic_error = run(u, theta[0], theta_d[0])
    rigid_error = run(rigid, trajectory[0][0], trajectory[1][0])
    assert elastic_error < 1e-8   # measured 5e-11 rad
    assert rigid_error > 1e-2     # measured 0.16 rad


# ----------------------------------------------------------------------------- docs/motors.md and the demo

DOCS = Path(__file__).resolve().parents[1] / "docs" / "motors.md"


def _blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", DOCS.read_text(), re.S)


def _command(line):
    script = Path(sys.executable).with_name("robot-dynamics")
    words = shlex.split(line)
    assert words[0] == "robot-dynamics"
    return ([str(script)] if script.is_file() else [sys.executable, "-m", "robot_dynamics.cli"]) + words[1:]


def test_docs_python_examples_run(monkeypatch, capsys):
    monkeypatch.chdir(DOCS.parents[1])
    first, second = _blocks("python")
    namespace = {}
    exec(compile(first, "docs/motors.md", "exec"), namespace)
    assert capsys.readouterr().out.split() == ["[0.5", "0.5]", "[0.", "0.]"]
    namespace = {}
    exec(compile(second, "docs/motors.md", "exec"), namespace)
    sim, K, theta, q = namespace["sim"], namespace["K"], namespace["theta"], namespace["q"]
    tau = rd.inverse_dynamics(rd.load_urdf("urdf/planar_2r.urdf"), q[0], namespace["qd"][0], namespace["qdd"][0])
    np.testing.assert_allclose(sim.motor_q - sim.q, tau / K, rtol=1e-12)
    np.testing.assert_allclose(theta[0], q[0] + tau / K, rtol=1e-12)  # theta = q + K^-1 tau_l


def test_docs_urdf_examples_read_as_documented():
    ros, drake = (rd.load_urdf(xml) for xml in _blocks("xml"))
    np.testing.assert_allclose(ros.armature, [0.5])
    np.testing.assert_allclose(drake.armature, [0.5])
    np.testing.assert_allclose(drake.motor_damping, [2.5])
    np.testing.assert_array_equal(ros.motor_damping, [0])


def test_docs_commands_run(tmp_path):
    (tmp_path / "geared_link.urdf").write_text(_blocks("xml")[1])
    lines = [line for block in _blocks("bash") for line in block.splitlines() if line.strip()]
    assert len(lines) == 2
    outputs = {}
    for line in lines:
        done = subprocess.run(_command(line), cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{line}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        outputs[shlex.split(line)[1]] = done.stdout
    assert re.search(r"hinge\s+armature 0\.5 kg m\^2, motor damping 2\.5 N m s/rad", outputs["info"])
    errors = {label: float(value) for label, value in re.findall(r"(rigid|elastic) model\s+link error RMS ([\d.e+-]+) rad",
                                                                 outputs["demo-elastic"])}
    assert errors["elastic"] < 1e-4 and errors["rigid"] > 1e-2  # measured 8.1e-6 and 4.1e-2 rad, as the docs say
    assert (tmp_path / "out" / "robot_dynamics_elastic_demo.png").stat().st_size > 20_000


def test_demo_elastic_refuses_a_bad_duration():
    done = subprocess.run(_command("robot-dynamics demo-elastic --duration 0 --no-plot"), capture_output=True, text=True)
    assert done.returncode == 1 and "--duration must be positive" in done.stderr


# ----------------------------------------------------------------------------- the nodes' motor parameters (no ROS)

def test_dynamics_node_armature_overrides_the_urdf():
    from robot_dynamics.nodes.dynamics import plan as dynamics_plan

    model = single_link()  # armature 0.5 from its transmission
    plan = dynamics_plan.make_plan(model, dynamics_plan.Settings())
    np.testing.assert_allclose(plan.model.armature, [RATIO ** 2 * ROTOR])
    settings = dynamics_plan.Settings(armature=dynamics_plan.coerce_setting("armature", [0.2]))
    np.testing.assert_allclose(dynamics_plan.make_plan(model, settings).model.armature, [0.2])
    arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    settings = dynamics_plan.Settings(motor_joint_names=("elbow",), armature=(0.3,))
    plan = dynamics_plan.make_plan(arm, settings)
    np.testing.assert_allclose(plan.model.armature, [0, 0.3])
    np.testing.assert_allclose(rd.mass_matrix(plan.model, [0, 0]), [[5, 2], [2, 1.3]])
    for bad, message in (((("elbow",), (0.3, 0.1)), "armature has 2 values"), ((("wrist",), (0.3,)), "not joints"),
                         (((), (-1.0, 0.0)), "armature must be >= 0")):
        with pytest.raises(ValueError, match=message):
            dynamics_plan.make_plan(arm, dynamics_plan.Settings(motor_joint_names=bad[0], armature=bad[1]))


def test_simulator_node_joint_stiffness_plan():
    from robot_dynamics.nodes.simulator import plan as simulator_plan

    arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    assert simulator_plan.make_plan(arm, simulator_plan.Settings()).stiffness == ()
    plan = simulator_plan.make_plan(arm, simulator_plan.Settings(
        motor_joint_names=("elbow", "shoulder"), armature=(0.2, 0.4), joint_stiffness=(300.0, 500.0)))
    assert plan.stiffness == (500.0, 300.0)
    np.testing.assert_allclose(plan.model.armature, [0.4, 0.2])
    for settings, message in (
        (dict(joint_stiffness=(300.0, 500.0)), "rotor inertia"),
        (dict(motor_joint_names=("elbow",), armature=(0.2,), joint_stiffness=(300.0,)), "none for \\['shoulder'\\]"),
        (dict(armature=(0.2, 0.2), joint_stiffness=(300.0, 0.0)), "positive and finite"),
    ):
        with pytest.raises(ValueError, match=message):
            simulator_plan.make_plan(arm, simulator_plan.Settings(**settings))


def test_docs_node_parameters_compile():
    import yaml

    from robot_dynamics.nodes.simulator import plan as simulator_plan

    (block,) = _blocks("yaml")
    values = yaml.safe_load(block)["robot_dynamics_simulator"]["ros__parameters"]
    settings = simulator_plan.Settings(**{name: simulator_plan.coerce_setting(name, value) for name, value in values.items()})
    plan = simulator_plan.make_plan(rd.load_urdf(bundled_urdf("planar_2r")), settings)
    assert plan.stiffness == (1500.0, 1500.0)
    np.testing.assert_array_equal(plan.model.armature, [0.5, 0.5])
