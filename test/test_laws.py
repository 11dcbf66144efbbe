"""robot_dynamics.control.laws against closed forms (no ROS): the PD law, the wrapped position error,
the computed-torque law (its closed loop is e'' + kd e' + kp e = 0) and the smoothed friction."""

import math

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control import laws as control
from robot_dynamics.rigid_body.friction import friction_torque, friction_torques
from robot_dynamics.simulation.simulator import Simulator


def test_joint_pd_is_kp_e_plus_kd_edot():
    kp, kd = np.array([100.0, 4.0]), np.array([20.0, 1.0])
    e, ed = np.array([0.01, -0.5]), np.array([-0.2, 3.0])
    np.testing.assert_allclose(control.joint_pd(kp, kd, e, ed), [100 * 0.01 + 20 * -0.2, 4 * -0.5 + 3.0])
    assert control.joint_pd(2.0, 3.0, 5.0, 7.0) == 31.0


@pytest.mark.parametrize("desired, actual, expected", [
    (3.0, -3.0, 6.0 - 2 * math.pi),   # the short way round: -0.283, not +6
    (-3.0, 3.0, 2 * math.pi - 6.0),
    (math.pi, 0.0, -math.pi),         # [-pi, pi): +pi maps to -pi
    (0.1, 0.1 + 4 * math.pi, -4 * math.pi + 4 * math.pi),
])
def test_position_error_of_a_continuous_joint_wraps_to_minus_pi_pi(desired, actual, expected):
    error = control.position_error(np.array([desired]), np.array([actual]), np.array([True]))
    assert -math.pi <= error[0] < math.pi
    assert error[0] == pytest.approx(expected, abs=1e-12)


def test_position_error_of_other_joints_is_not_wrapped():
    error = control.position_error(np.array([3.0, 3.0]), np.array([-3.0, -3.0]), np.array([False, True]))
    assert error[0] == 6.0 and error[1] == pytest.approx(6.0 - 2 * math.pi)
    np.testing.assert_array_equal(control.position_error(np.array([7.0]), np.array([0.0])), [7.0])


def test_computed_torque_of_a_point_mass_pendulum():
    # m l^2 v + m g l sin(q), v = qdd_d + kp e + kd e' (the pendulum's closed form)
    m, length, g, q = 1.5, 0.7, 9.81, 0.4
    M, h = np.array([[m * length**2]]), np.array([m * g * length * math.sin(q)])
    tau = control.computed_torque(M, h, np.array([0.3]), np.array([0.05]), np.array([-0.1]), 100.0, 20.0)
    v = 0.3 + 100.0 * 0.05 + 20.0 * -0.1
    assert tau[0] == pytest.approx(m * length**2 * v + m * g * length * math.sin(q), rel=1e-14)


def test_computed_torque_with_the_exact_model_gives_the_commanded_acceleration():
    arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    q, qd = np.array([0.3, -0.7]), np.array([0.4, 0.9])
    qdd_d, e, ed = np.array([1.0, -2.0]), np.array([0.02, -0.01]), np.array([0.1, 0.3])
    kp, kd = np.array([100.0, 49.0]), np.array([20.0, 14.0])
    tau = control.computed_torque(rd.mass_matrix(arm, q), rd.bias_forces(arm, q, qd), qdd_d, e, ed, kp, kd)
    np.testing.assert_allclose(rd.forward_dynamics(arm, q, qd, tau), qdd_d + kp * e + kd * ed, rtol=1e-10, atol=1e-10)


def test_computed_torque_closes_a_critically_damped_loop():
    # Tracking a fixed target from an offset: e(t) = e0 (1 + w t) e^{-w t} with kp = w^2, kd = 2 w.
    pendulum = rd.load_urdf(rd.examples.PENDULUM_URDF)
    w, target, e0 = 5.0, 0.5, 0.2
    sim = Simulator(pendulum, q=[target - e0], integrator="rk4")
    dt = 1e-3
    for _ in range(1000):
        q, qd = sim.q.copy(), sim.qd.copy()
        tau = control.computed_torque(rd.mass_matrix(pendulum, q), rd.bias_forces(pendulum, q, qd), np.zeros(1),
                                      control.position_error(np.array([target]), q), -qd, w * w, 2 * w)
        sim.step(tau, dt)
    expected_error = e0 * (1 + w * sim.t) * math.exp(-w * sim.t)
    assert target - sim.q[0] == pytest.approx(expected_error, abs=2e-4)


def test_friction_is_viscous_plus_smoothed_coulomb():
    damping, coulomb, eps = np.array([0.5, 0.0, 2.0]), np.array([2.0, 1.0, 0.0]), 0.01
    qd = np.array([1.0, -0.01, 0.3])
    expected = damping * qd + coulomb * np.tanh(qd / eps)
    np.testing.assert_allclose(friction_torques(damping, coulomb, eps, qd), expected, rtol=1e-15)
    assert friction_torque(0.5, 2.0, eps, 1.0) == pytest.approx(0.5 + 2.0 * math.tanh(100.0))
    # odd in qd, zero at rest, bounded by B |qd| + F_c, tanh(1) of F_c at qd = eps
    assert friction_torque(0.5, 2.0, eps, 0.0) == 0.0
    assert friction_torque(0.5, 2.0, eps, -0.2) == -friction_torque(0.5, 2.0, eps, 0.2)
    assert friction_torque(0.0, 2.0, eps, eps) == pytest.approx(2.0 * math.tanh(1.0))


FRICTION_URDF = rd.examples.PENDULUM_URDF.replace(
    '<axis xyz="0 1 0"/>', '<axis xyz="0 1 0"/><dynamics damping="0.3" friction="0.8"/>')


def test_the_simulator_applies_the_same_friction():
    # M(q) qdd + h(q, qd) = -friction(qd) with no command
    model = rd.load_urdf(FRICTION_URDF)
    assert model.damping[0] == 0.3 and model.friction[0] == 0.8
    q, qd = np.array([0.2]), np.array([0.37])
    sim = Simulator(model, q=q, qd=qd, apply_damping=True, apply_friction=True, friction_velocity=0.05)
    qdd = sim.acceleration(q, qd, np.zeros(1))
    friction = friction_torques(model.damping, model.friction, 0.05, qd)
    assert friction[0] == pytest.approx(0.3 * 0.37 + 0.8 * math.tanh(0.37 / 0.05))
    residual = rd.mass_matrix(model, q) @ qdd + rd.bias_forces(model, q, qd)
    np.testing.assert_allclose(residual, -friction, rtol=1e-10, atol=1e-12)
