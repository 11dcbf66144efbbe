"""The generalized-momentum observer (robot_dynamics.control.observer) against simulator truth and identities.

Oracles: ``p = M qd`` and ``C^T qd - g`` from the library's mass and Coriolis matrices (the latter
proven against Christoffel symbols and Pinocchio elsewhere); the closed-form step response
``r(t) = (1 - e^(-K_O t)) tau_ext``; the torques ``J^T F`` of a wrench the simulator applies.
"""

import math

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control.observer import MomentumObserver, momentum_terms, tip_frame, wrench_from_torques
from robot_dynamics.description.robots import bundled_urdf
from robot_dynamics.simulation.simulator import Simulator
from robot_dynamics.tools.benchmarks.robots import panda7_urdf

Q_PANDA = np.array([0.1, -0.4, 0.2, -2.0, 0.3, 1.8, 0.6])  # non-singular


@pytest.fixture(scope="module")
def panda():
    return rd.load_urdf(panda7_urdf())


@pytest.fixture(scope="module")
def arm7():
    """The demo arm with a mimic finger, rotors on every joint (armature) and its URDF friction."""
    model = rd.load_urdf(str(bundled_urdf("arm7_gripper")))
    return model.with_armature(np.linspace(0.05, 0.3, model.nv))


@pytest.mark.parametrize("robot", ["panda", "arm7", "five_bar"])
def test_momentum_terms_match_the_mass_and_coriolis_matrices(robot, panda, arm7):
    model = {"panda": panda, "arm7": arm7, "five_bar": None}[robot] or rd.load_urdf(str(bundled_urdf("five_bar")))
    rng = np.random.default_rng(3)
    q, qd = rng.uniform(-1, 1, (5, model.nv)), rng.uniform(-2, 2, (5, model.nv))
    p, beta = momentum_terms(model, q, qd)
    M, C, g = rd.mass_matrix(model, q), rd.coriolis_matrix(model, q, qd), rd.gravity_torques(model, q)
    np.testing.assert_allclose(p, np.einsum("kij,kj->ki", M, qd), atol=1e-11)
    np.testing.assert_allclose(beta, np.einsum("kji,kj->ki", C, qd) - g, atol=1e-10)


def held(model, q, wrenches, gain=50.0, dt=1e-3, steps=1000, frame=None, dts=None):
    """Hold ``model`` still at ``q`` against gravity and ``wrenches`` (tau = g - J^T F): tau_ext = J^T F exactly."""
    tau_ext = rd.inverse_dynamics(model, q, np.zeros(model.nv), np.zeros(model.nv)) - rd.inverse_dynamics(
        model, q, np.zeros(model.nv), np.zeros(model.nv), external_wrenches=wrenches) if wrenches else np.zeros(model.nv)
    command = rd.gravity_torques(model, q) - tau_ext
    sim = Simulator(model, q=q, enforce_position_limits=False)
    observer = MomentumObserver(model, gain, frame=frame)
    times, residuals = [], []
    observer.update(sim.t, sim.q, sim.qd, command)
    for k in range(steps):
        sim.step(command, dt if dts is None else dts[k], external_wrenches=wrenches)
        residuals.append(observer.update(sim.t, sim.q, sim.qd, sim.applied_effort))
        times.append(sim.t)
    return np.array(times), np.array(residuals), tau_ext, observer


def test_undisturbed_at_rest_the_residual_is_at_rounding_level(panda):
    _, residuals, _, _ = held(panda, Q_PANDA, None)
    assert np.abs(residuals).max() < 1e-9


def test_white_velocity_noise_passes_with_the_gain_times_the_mass_matrix_row(panda):
    """docs/contact.md's noise floor: at rest, a white velocity noise of sigma on every joint gives joint
    i a residual of K_O sigma |M_i| RMS (the momentum p = M qd passes it above K_O), linear in the gain."""
    from robot_dynamics.identification.residuals import external_torques

    h, n, sigma = 1e-3, 6000, 0.007
    t = np.arange(n) * h
    q = np.tile(Q_PANDA, (n, 1))
    qd = np.random.default_rng(0).normal(0.0, sigma, (n, 7))
    tau = np.tile(rd.gravity_torques(panda, Q_PANDA), (n, 1))
    rows = np.linalg.norm(rd.mass_matrix(panda, Q_PANDA), axis=1)
    for gain in (5.0, 50.0):
        r, _ = external_torques(panda, t, q, qd, tau, gain)
        rms = np.sqrt(np.mean(r[int(1.0 / h):] ** 2, axis=0))  # after five time constants of the lower gain
        np.testing.assert_allclose(rms, gain * sigma * rows, rtol=0.06)


def test_step_response_has_time_constant_one_over_gain_at_an_irregular_rate(panda):
    rng = np.random.default_rng(1)
    dts = rng.uniform(0.2e-3, 3e-3, 800)
    gain = 25.0
    wrench = {"panda_hand": np.array([0.5, -0.3, 0.2, 10.0, -5.0, 20.0])}
    times, residuals, tau_ext, _ = held(panda, Q_PANDA, wrench, gain=gain, steps=800, dts=dts)
    expected = (1.0 - np.exp(-gain * times))[:, None] * tau_ext
    np.testing.assert_allclose(residuals, expected, atol=1e-7 * np.abs(tau_ext).max())
    # one time constant: 63 %
    k = np.searchsorted(times, 1.0 / gain)
    assert abs(residuals[k] @ tau_ext / (tau_ext @ tau_ext) - (1 - math.exp(-gain * times[k]))) < 1e-7


def test_an_applied_wrench_is_estimated_back_as_torques_and_as_a_wrench(panda):
    wrench = np.array([0.4, -0.2, 0.3, 12.0, -8.0, 20.0])
    _, residuals, tau_ext, observer = held(panda, Q_PANDA, {"panda_hand": wrench}, frame="panda_hand", steps=1000)
    J = rd.jacobian(panda, Q_PANDA, "panda_hand")
    np.testing.assert_allclose(tau_ext, J.T @ wrench, atol=1e-12)
    np.testing.assert_allclose(residuals[-1], tau_ext, atol=1e-9)  # 50 time constants
    np.testing.assert_allclose(observer.wrench, wrench, rtol=0, atol=1e-3 * np.abs(wrench).max())
    np.testing.assert_allclose(wrench_from_torques(panda, Q_PANDA, "panda_hand", tau_ext), observer.wrench, atol=1e-9)


def test_no_drift_over_60_s_of_free_motion(panda):
    """Computed torque tracking a swing on every joint for 60 s at 1 kHz: the trapezoid's error alone."""
    sim = Simulator(panda, q=Q_PANDA, enforce_position_limits=False)
    observer = MomentumObserver(panda, 50.0)
    amplitude, omega = np.full(7, 0.4), np.linspace(1.0, 2.5, 7)
    peaks = []
    for k in range(60_000):
        t = sim.t
        qdd = -amplitude * omega ** 2 * np.sin(omega * t)
        tau = rd.inverse_dynamics(panda, sim.q, sim.qd, qdd + 100 * (Q_PANDA + amplitude * np.sin(omega * t) - sim.q)
                                  + 20 * (amplitude * omega * np.cos(omega * t) - sim.qd))
        sim.step(tau, 1e-3)
        r = observer.update(sim.t, sim.q, sim.qd, sim.applied_effort)
        if k % 1000 == 999:
            peaks.append(np.abs(r).max())
    assert abs(sim.qd).max() > 0.5  # it moved
    peaks = np.array(peaks)
    assert peaks.max() < 5e-3  # far below any threshold (0.5 N m)
    assert peaks[-10:].max() < 2 * peaks[:10].max()  # and no growth: errors are filtered, not integrated


def test_with_armature_couplings_and_friction(arm7):
    """The mimic finger (a coupling), rotors on every coordinate, the URDF friction in the simulator
    and in the observer: a wrench at the hand is estimated back while the arm sways under it."""
    model = arm7
    assert np.any(model.friction > 0) and np.any(model.viscous_damping > 0) and model.couplings
    q0 = np.array([0.1, -0.4, 0.2, -2.0, 0.3, 1.8, 0.6, 0.02])[:model.nv]
    wrench = {"arm7_hand": np.array([0.2, 0.1, -0.3, 5.0, -8.0, 15.0])}
    sim = Simulator(model, q=q0, apply_damping=True, apply_friction=True, enforce_position_limits=False)
    observer = MomentumObserver(model, 100.0, frame="arm7_hand", friction=True)
    without = MomentumObserver(model, 100.0)
    for k in range(2000):
        t = sim.t
        swing = 0.2 * math.sin(2.0 * t)  # not held still: friction and Coriolis terms matter
        tau = rd.gravity_torques(model, sim.q) + 30 * (q0 + swing - sim.q) - 5 * sim.qd
        sim.step(tau, 1e-3, external_wrenches=wrench)
        r = observer.update(sim.t, sim.q, sim.qd, sim.applied_effort)
        r_without = without.update(sim.t, sim.q, sim.qd, sim.applied_effort)
    truth = rd.inverse_dynamics(model, sim.q, np.zeros(model.nv), np.zeros(model.nv)) - rd.inverse_dynamics(
        model, sim.q, np.zeros(model.nv), np.zeros(model.nv), external_wrenches=wrench)
    assert abs(sim.qd).max() > 0.05
    np.testing.assert_allclose(r, truth, atol=0.02 * np.abs(truth).max())
    assert np.abs(r_without - truth).max() > 0.05  # friction mattered
    J = rd.jacobian(model, sim.q, "arm7_hand")
    np.testing.assert_allclose(J.T @ observer.wrench, r, atol=0.02 * np.abs(r).max())


def test_tip_frame_and_bad_input(panda, arm7):
    assert tip_frame(panda) == "panda_hand_tcp"
    assert tip_frame(rd.load_urdf(rd.examples.PENDULUM_URDF)) == "link"
    assert tip_frame(arm7) == "arm7_tcp"
    with pytest.raises(ValueError, match="gain"):
        MomentumObserver(panda, 0.0)
    with pytest.raises(ValueError, match="'nowhere' is not a link"):
        MomentumObserver(panda, 10.0, frame="nowhere")
    observer = MomentumObserver(panda, 10.0)
    observer.update(0.0, Q_PANDA, np.zeros(7), np.zeros(7))
    with pytest.raises(ValueError, match="tau_m not finite"):
        observer.update(1e-3, Q_PANDA, np.zeros(7), [np.nan] + [0.0] * 6)
    with pytest.raises(ValueError, match="7 values"):
        observer.update(1e-3, Q_PANDA, np.zeros(6), np.zeros(7))


# ------------------------------------------------------------------ point force, passive joints (issue 36)

def test_a_point_force_is_estimated_back_where_the_full_wrench_is_not_determined():
    """planar_2r (2 joints) held still, a force in its plane at the tip: r = J_v^T f.  The full
    wrench's minimum-norm solution spreads r over a moment; the point force is the force."""
    from robot_dynamics.control.observer import force_from_torques

    arm = rd.load_urdf("planar_2r")
    q = np.array([0.4, 0.9])
    J = rd.jacobian(arm, q, "tip")
    plane = np.flatnonzero(np.abs(J[3:]).sum(axis=1) > 1e-9)
    force = np.zeros(3)
    force[plane] = [3.0, -2.0][: len(plane)]
    pushed = rd.gravity_torques(arm, q) - J[3:].T @ force  # held still against the push
    results = {}
    for kind in ("full", "force"):
        observer = MomentumObserver(arm, 50.0, frame="tip", wrench=kind)
        for k in range(1000):
            observer.update(k * 1e-3, q, np.zeros(2), pushed)
        results[kind] = observer.wrench.copy()
    np.testing.assert_allclose(results["force"], np.r_[0, 0, 0, force], atol=1e-3)
    np.testing.assert_allclose(force_from_torques(J, J[3:].T @ force), force, atol=1e-3)
    assert np.linalg.norm(results["full"][3:] - force) > 0.2 * np.linalg.norm(force)
    with pytest.raises(ValueError, match="wrench must be 'full' or 'force'"):
        MomentumObserver(arm, 50.0, frame="tip", wrench="torque")


def test_the_node_plan_takes_wrench_passive_and_a_gain_safe_for_encoders():
    from robot_dynamics.nodes.dynamics.external_torque_plan import coerce_external_torque
    from robot_dynamics.nodes.dynamics.plan import Settings, make_plan

    arm = rd.load_urdf("arm7_gripper")
    plan = make_plan(arm, Settings(external_torque_enabled=True, external_torque_wrench="force",
                                   external_torque_passive=("arm7_joint2",)))
    assert plan.external_torque.sign.tolist() == [1, 0, 1, 1, 1, 1, 1, 1]  # tau_m = 0 on the passive joint
    assert plan.external_torque.observer(arm).point_force
    assert Settings().external_torque_gain <= 10.0
    with pytest.raises(ValueError, match="external_torque.passive: 'nope' is not a joint"):
        make_plan(arm, Settings(external_torque_enabled=True, external_torque_passive=("nope",)))
    with pytest.raises(ValueError, match="external_torque.wrench must be one of full, force"):
        coerce_external_torque("external_torque_wrench", "moment")
