"""Collision detection (nodes/external_torque_plan.py, no ROS) on the observer, against simulator truth.

The loop is the dynamics node's at 1 kHz: computed torque holds or moves Panda-7, the simulator reports
the applied effort with each state, the observer and the detector take it; with the exact model and exact
measurements, or as on a real arm: a model error (a payload at the hand the model does not know) and noisy
positions, velocities and efforts, at the thresholds docs/contact.md states.
"""

import types

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control import laws as control
from robot_dynamics.control.collision import CollisionDetector
from robot_dynamics.nodes.dynamics.external_torque_plan import EffortTracker, Rejected, coerce_external_torque, compile_external_torque
from robot_dynamics.nodes.dynamics.plan import Settings, make_plan as compile_plan
from robot_dynamics.control.observer import MomentumObserver
from robot_dynamics.simulation.simulator import Simulator
from robot_dynamics.tools.benchmarks.robots import panda7_urdf

HOME = np.array([0.1, -0.4, 0.2, -2.0, 0.3, 1.8, 0.6])
DT = 1e-3


@pytest.fixture(scope="module")
def panda():
    return rd.load_urdf(panda7_urdf())


def run(panda, seconds, wrench_at=None, wrench=None, swing=0.0, thresholds=0.5, gain=50.0, truth=None,
        noise=(0.0, 0.0, 0.0), seed=0):
    """Computed torque (kp 100, kd 20) around HOME (+ a swing on every joint); the wrench on panda_hand
    from ``wrench_at`` s on.  ``truth`` is the simulated arm (default ``panda``, the model the controller and
    the observer use); ``noise`` the standard deviations of the measured q, qd and effort (white, per sample).
    Returns the times, residuals, the flag per step, the true J^T F and the wrench estimates."""
    truth = panda if truth is None else truth
    sim = Simulator(truth, q=HOME, enforce_position_limits=False)
    observer = MomentumObserver(panda, gain, frame="panda_hand")
    detector = CollisionDetector(np.full(7, thresholds), 0.5, 0.005)
    omega = np.linspace(1.0, 2.5, 7)
    rng = np.random.default_rng(seed)
    sigma_q, sigma_qd, sigma_effort = noise

    def measured():
        return sim.q + rng.normal(0.0, sigma_q, 7), sim.qd + rng.normal(0.0, sigma_qd, 7)

    times, residuals, flags, truths, wrenches = [], [], [], [], []
    for k in range(int(round(seconds / DT))):
        t = sim.t
        q_d = HOME + swing * np.sin(omega * t)
        qd_d = swing * omega * np.cos(omega * t)
        qdd_d = -swing * omega ** 2 * np.sin(omega * t)
        q, qd = measured()
        tau = control.computed_torque(rd.mass_matrix(panda, q), rd.bias_forces(panda, q, qd), qdd_d,
                                      q_d - q, qd_d - qd, 100.0, 20.0)
        applied = {"panda_hand": wrench} if wrench_at is not None and t >= wrench_at - 1e-12 else None
        sim.step(tau, DT, external_wrenches=applied)
        q, qd = measured()
        r = observer.update(sim.t, q, qd, sim.applied_effort + rng.normal(0.0, sigma_effort, 7))
        detector.update(sim.t, r)
        times.append(sim.t)
        residuals.append(r)
        flags.append(detector.active)
        truths.append(rd.jacobian(truth, sim.q, "panda_hand").T @ wrench if applied else np.zeros(7))
        wrenches.append(observer.wrench.copy())
    return np.array(times), np.array(residuals), np.array(flags), np.array(truths), np.array(wrenches)


def test_constant_20_N_at_the_tool_of_an_arm_held_by_computed_torque(panda):
    """Goal: external torques within 2 % (+0.02 N m) of J^T F, the wrench's force within 3 %."""
    force = np.array([0.0, 0.0, 0.0, 12.0, -10.0, 12.5])  # |f| = 20 N
    assert np.linalg.norm(force[3:]) == pytest.approx(20.0, rel=1e-3)
    _, residuals, _, truths, wrenches = run(panda, 1.0, wrench_at=0.2, wrench=force, thresholds=1e9)
    r, truth = residuals[-1], truths[-1]
    assert np.all(np.abs(r - truth) <= 0.02 * np.abs(truth) + 0.02)
    assert np.linalg.norm(wrenches[-1][3:] - force[3:]) <= 0.03 * 20.0


def test_collision_within_20_ms_of_a_30_N_step(panda):
    step = np.array([0.0, 0.0, 0.0, 0.0, 30.0, 0.0])
    times, _, flags, _, _ = run(panda, 0.6, wrench_at=0.5, wrench=step)
    assert not flags[times < 0.5].any()
    first = times[np.argmax(flags)]
    assert flags.any() and first - 0.5 <= 0.020
    assert first - 0.5 >= 0.005 - 1e-9  # the minimum duration is honoured


def test_no_false_positive_over_60_s_of_free_motion(panda):
    times, residuals, flags, _, _ = run(panda, 60.0, swing=0.4)
    assert not flags.any()
    assert np.abs(residuals).max() < 0.05  # an order of magnitude below the 0.5 N m thresholds


#: as on a real arm: 50 g at the hand that the model does not know (a cable, a finger left out of the URDF:
#: its gravity alone is 0.25 N m on joint 4, half the threshold), encoder positions, velocities noisier than
#: the Med7's (docs/contact.md: 0.24-0.75 mrad/s above 20 Hz) and efforts from motor currents
UNKNOWN_PAYLOAD = (0.05, [0.0, 0.0, 0.05], [1e-4, 0.0, 0.0, 1e-4, 0.0, 1e-4])
NOISE = (1e-5, 1e-3, 0.05)  # rad, rad/s, N m


def longest_run(over):
    """The most consecutive samples in which ``over`` holds."""
    best = current = 0
    for value in over:
        current = current + 1 if value else 0
        best = max(best, current)
    return best


def test_no_false_positive_over_60_s_with_noise_and_a_model_error_yet_a_collision_is_found(panda):
    """At the thresholds docs/contact.md states (0.5 N m, release 0.5, minimum duration 5 ms) the noise makes
    single samples cross a threshold hundreds of times: the minimum duration, not quiet data, keeps 60 s of
    swinging free of false collisions.  The same arm, the same noise: a 30 N push is found within 20 ms."""
    truth = panda.with_payload("panda_hand", *UNKNOWN_PAYLOAD)
    gravity_error = np.abs(rd.gravity_torques(truth, HOME) - rd.gravity_torques(panda, HOME))
    assert 0.2 < gravity_error.max() < 0.3  # the model error is real, and below the threshold
    times, residuals, flags, _, _ = run(panda, 60.0, swing=0.4, truth=truth, noise=NOISE, seed=32)
    over = np.abs(residuals[times > 0.1]) > 0.5  # (after the observer's start)
    assert over.sum() > 100  # the noise reaches the thresholds ...
    assert max(longest_run(over[:, joint]) for joint in range(7)) < 5  # ... never for 5 ms
    assert not flags.any()
    step = np.array([0.0, 0.0, 0.0, 0.0, 30.0, 0.0])
    times, _, flags, truths, _ = run(panda, 0.6, wrench_at=0.5, wrench=step, truth=truth, noise=NOISE, seed=33)
    assert not flags[times < 0.5].any()
    assert flags.any() and 0.005 - 1e-9 <= times[np.argmax(flags)] - 0.5 <= 0.020
    assert np.abs(truths[-1]).max() > 2.0  # (the push is a real one: several N m at the joints)


def test_detector_hysteresis_and_minimum_duration():
    detector = CollisionDetector(np.array([1.0, 2.0]), 0.5, 0.003)
    changes = [detector.update(t * 1e-3, np.array([r, 0.0])) for t, r in enumerate(
        [0.0, 1.5, 0.2, 1.5, 1.5, 1.5, 1.5, 0.9, 0.6, 0.4, 0.4])]
    # a single sample over (t = 1 ms) is not a collision; 3 ms over (t = 3..6 ms) is; it lasts until below 0.5
    assert changes == [None, None, None, None, None, None, True, None, None, False, None]
    assert detector.joints == [0] and detector.peak[0] == 1.5


def test_parameters_are_checked_by_name(panda):
    with pytest.raises(ValueError, match="collision.thresholds must be > 0"):
        coerce_external_torque("collision_thresholds", [1.0, -1.0])
    with pytest.raises(ValueError, match="external_torque.effort_sign must be"):
        coerce_external_torque("external_torque_effort_sign", [0.5])
    with pytest.raises(ValueError, match="collision.reaction must be one of none, gravity"):
        coerce_external_torque("collision_reaction", "retract")
    with pytest.raises(ValueError, match="collision.thresholds has 2 values"):
        compile_plan(panda, Settings(external_torque_enabled=True, collision_thresholds=(1.0, 1.0)))
    with pytest.raises(ValueError, match="needs external_torque.enabled"):
        compile_plan(panda, Settings(collision_thresholds=(1.0,) * 7))
    with pytest.raises(ValueError, match="external_torque.frame 'nowhere'"):
        compile_plan(panda, Settings(external_torque_enabled=True, external_torque_frame="nowhere"))
    plan = compile_plan(panda, Settings(external_torque_enabled=True, joints=tuple(reversed(panda.joint_names)),
                                        external_torque_effort_sign=(1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0)))
    assert plan.external_torque.frame == "panda_hand_tcp"
    assert plan.external_torque.sign.tolist() == [-1.0, 1, 1, 1, 1, 1, 1]  # the last output joint is panda_joint1
    assert compile_external_torque(panda, np.arange(7), Settings()) is None


def test_efforts_merge_by_name_and_non_finite_ones_are_refused():
    """A message with a non-finite (or implausible: test_contact_inputs.py) effort is refused whole."""
    bounds = types.SimpleNamespace(torque=np.full(3, 1e3))
    tracker = EffortTracker(["a", "b", "c"], bounds)
    tracker.update(["c", "x", "a"], [3.0, 9.0, 1.0], 10)
    assert tracker.effort.tolist() == [1.0, 0.0, 3.0]
    assert tracker.missing(5, ["a", "b", "c"]) == "effort never received for ['b']"
    with pytest.raises(Rejected, match=r"non-finite effort of \['b'\]: the message's efforts refused"):
        tracker.update(["a", "b"], [2.0, float("nan")], 20)
    assert tracker.effort.tolist() == [1.0, 0.0, 3.0]
    assert tracker.missing(15, ["a", "b", "c"]) == "effort never received for ['b']; effort older than state_timeout for ['a', 'c']"
    tracker.update(["a"], [], 30)  # no efforts: nothing changes
    assert tracker.effort_ns[0] == 10
