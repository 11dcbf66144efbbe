"""The simulator's physics (robot_dynamics.simulation.simulator), without ROS.

Accuracy.  Panda-7 (example-robot-data's Panda with the finger joints made fixed) and a branching
random tree (test/robot_files.py, seed 3: continuous, revolute and prismatic joints on two
branches) start from a non-trivial state and are driven for T = 0.5 s by a constant torque
``g(q0) + M(q0) a`` and by a sinusoidal torque ``g(q0) + M(q0) 2 sin(3 pi t + phi_i)`` (a callable,
evaluated at every integrator stage).  The reference is scipy ``solve_ivp`` (DOP853,
rtol 1e-10, atol 1e-12) on ``rd.forward_dynamics``.  Max error over the joints at T:

=====================  ======  ===============  ===============  =====================================
integrator             step    bound q (rad)    bound qd (rad/s) measured (Panda-7 worst; tree worst)
=====================  ======  ===============  ===============  =====================================
euler                  1 ms    5e-2             5e-1             q 1.7e-2, qd 1.8e-1; q 6e-3, qd 2e-2
semi_implicit_euler    1 ms    2e-2             3e-1             q 5.7e-3, qd 8.6e-2; q 1.2e-3, qd 9e-3
rk4                    1 ms    1e-9             1e-8             q 1.3e-10, qd 1.6e-9; at the reference
rk4                    10 ms   5e-6             5e-5             q 1.1e-6, qd 1.6e-5; q 1e-7, qd 3e-7
adaptive (DOP853)      10 ms   1e-8             1e-7             q 6e-11, qd 5e-10; at the reference
=====================  ======  ===============  ===============  =====================================

and the observed order of convergence: halving the step divides the error by 2 (1.8-2.2) for
the Euler methods and by 16 (12-20, from 10 ms to 5 ms) for rk4.  Against Pinocchio:
``pin.aba`` integrated by the same rk4/euler formulas (joints matched by name) gives the same
discrete trajectory to 1e-9, so the simulator adds nothing but the integrator's own error.

Conservation.  Panda-7 falling freely from a bent pose (no torque, damping, friction or limits,
gravity on) for 10 s at 1 kHz, joint speeds up to ~110 rad/s: rk4's total energy stays within
1e-4 J of its initial 83.6 J (measured 2.7e-5 J); explicit Euler's drifts by more than 1 J
(measured ~9 J: it pumps energy into every oscillation) -- documented, not hidden.  A 1 m simple
pendulum swinging 0.01 rad has the period 2 pi sqrt(l / g) to 1e-5 relative with rk4.

Limits.  A hinge pushed at its effort limit into its position limit, and every Panda-7 joint
pushed at its effort limit into a limit at once, stop at the limit for every integrator: no NaN,
overshoot bounded (v / (e w) + margin, w = 500 rad/s at 1 kHz), then on the limit (explicit
Euler: chattering within 5 mrad of it, the others at rest).  Commanded efforts beyond the URDF
limits are applied (and reported) as the limits.
"""

import dataclasses
import math
import time

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import robot_dynamics as rd
from robot_dynamics.simulation import simulator as simulation
from robot_dynamics.rigid_body.cholesky import cholesky_factor
from robot_dynamics.simulation.equations_of_motion import limit_correction
from robot_dynamics.simulation.simulator import LIMIT_OMEGA_STEP, SimulationError, Simulator
from robot_dynamics.tools.benchmarks.robots import panda7_urdf

import robot_files as rf  # noqa: E402

T_ACCURACY = 0.5
PANDA_HOME = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
TREE_SEED = 3

HINGE_URDF = """<robot name="hinge">
  <!-- 0.4 kg point mass 0.5 m from a vertical axis: I = 0.1 kg m^2, no gravity torque. -->
  <link name="base"/>
  <link name="arm"><inertial><origin xyz="0.5 0 0"/><mass value="0.4"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-0.5" upper="0.5" effort="10" velocity="5"/>
    <dynamics damping="0.05" friction="1.0"/></joint>
</robot>"""

PENDULUM_URDF = """<robot name="pendulum">
  <!-- 1 kg point mass 1 m below a pivot turning about +y, with a frame "bob" at the mass. -->
  <link name="base"/>
  <link name="rod"><inertial><origin xyz="0 0 -1"/><mass value="1"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <link name="bob"/>
  <joint name="swing" type="continuous"><parent link="base"/><child link="rod"/><axis xyz="0 1 0"/>
    <dynamics damping="0.5"/></joint>
  <joint name="bob_joint" type="fixed"><parent link="rod"/><child link="bob"/><origin xyz="0 0 -1"/></joint>
</robot>"""


# ------------------------------------------------------------------------------------------------
# robots and references
# ------------------------------------------------------------------------------------------------


def tree_urdf():
    return rf.random_tree_urdf(TREE_SEED, n_links=8, n_mimic=0, massless=False)


ROBOTS = {"panda7": panda7_urdf, "tree": tree_urdf}
_MODELS = {}


def model_of(robot):
    if robot not in _MODELS:
        _MODELS[robot] = rd.load_urdf(ROBOTS[robot]())
    return _MODELS[robot]


def start_state(model):
    if model.nv == 7:
        return PANDA_HOME.copy(), np.linspace(-0.4, 0.4, 7)
    rng = np.random.default_rng(0)
    return rng.uniform(-0.5, 0.5, model.nv), rng.uniform(-0.5, 0.5, model.nv)


def torque_of(model, q0, kind):
    """Constant ``g(q0) + M(q0) a`` or sinusoidal ``g(q0) + M(q0) 2 sin(3 pi t + i)``."""
    g0, M0 = rd.gravity_torques(model, q0), rd.mass_matrix(model, q0)
    n = model.nv
    if kind == "constant":
        tau = g0 + M0 @ np.linspace(-1.0, 1.0, n)
        return lambda t: tau
    phase = np.arange(n, dtype=float)
    return lambda t: g0 + 2.0 * M0 @ np.sin(3.0 * math.pi * t + phase)


_REFERENCES = {}


def reference(robot, kind):
    """State at T_ACCURACY by solve_ivp (DOP853, rtol 1e-10, atol 1e-12) on rd.forward_dynamics."""
    key = (robot, kind)
    if key not in _REFERENCES:
        model = model_of(robot)
        q0, qd0 = start_state(model)
        tau = torque_of(model, q0, kind)
        n = model.nv

        def f(t, x):
            return np.concatenate((x[n:], rd.forward_dynamics(model, x[:n], x[n:], tau(t))))

        solution = solve_ivp(f, (0.0, T_ACCURACY), np.concatenate((q0, qd0)), method="DOP853",
                             rtol=1e-10, atol=1e-12)
        assert solution.success
        _REFERENCES[key] = solution.y[:n, -1], solution.y[n:, -1]
    return _REFERENCES[key]


def simulate(robot, kind, integrator, h):
    """Simulator state at T_ACCURACY: no limits, damping or friction (the pure rigid body)."""
    model = model_of(robot)
    q0, qd0 = start_state(model)
    sim = Simulator(model, q0, qd0, integrator=integrator,
                    enforce_effort_limits=False, enforce_position_limits=False)
    for _ in range(int(round(T_ACCURACY / h))):
        sim.step(torque_of(model, q0, kind), h)
    assert sim.t == pytest.approx(T_ACCURACY)
    return sim.q, sim.qd


def errors(robot, kind, integrator, h):
    q_ref, qd_ref = reference(robot, kind)
    q, qd = simulate(robot, kind, integrator, h)
    return np.abs(q - q_ref).max(), np.abs(qd - qd_ref).max()


# ------------------------------------------------------------------------------------------------
# accuracy against the high-accuracy reference
# ------------------------------------------------------------------------------------------------

# (integrator, step) -> (bound on max |q error| rad, bound on max |qd error| rad/s) at T = 0.5 s
BOUNDS = {
    ("euler", 1e-3): (5e-2, 5e-1),
    ("semi_implicit_euler", 1e-3): (2e-2, 3e-1),
    ("rk4", 1e-3): (1e-9, 1e-8),
    ("rk4", 1e-2): (5e-6, 5e-5),
    ("adaptive", 1e-2): (1e-8, 1e-7),
}


@pytest.mark.parametrize("robot", list(ROBOTS))
@pytest.mark.parametrize("kind", ["constant", "sinusoidal"])
@pytest.mark.parametrize("integrator, h", list(BOUNDS))
def test_error_against_tight_solve_ivp(robot, kind, integrator, h):
    q_error, qd_error = errors(robot, kind, integrator, h)
    q_bound, qd_bound = BOUNDS[integrator, h]
    assert q_error <= q_bound and qd_error <= qd_bound, (
        f"{integrator} at h = {h}: q error {q_error:.2e} (bound {q_bound:g}), "
        f"qd error {qd_error:.2e} (bound {qd_bound:g})"
    )


@pytest.mark.parametrize("robot", list(ROBOTS))
@pytest.mark.parametrize("integrator, h, order", [
    ("euler", 1e-3, 1), ("semi_implicit_euler", 1e-3, 1), ("rk4", 1e-2, 4),
])
def test_order_of_convergence(robot, integrator, h, order):
    coarse = max(errors(robot, "sinusoidal", integrator, h))
    fine = max(errors(robot, "sinusoidal", integrator, h / 2))
    ratio = coarse / fine
    expected = 2.0 ** order
    assert 0.75 * expected <= ratio <= 1.25 * expected, \
        f"{integrator}: error ratio {ratio:.2f} on halving h, expected {expected}"


def euler_step(accel, t, q, qd, h):
    """The textbook explicit Euler step, for integrating the oracle's forward dynamics."""
    return q + h * qd, qd + h * accel(t, q, qd)


def rk4_step(accel, t, q, qd, h):
    """The textbook classical Runge-Kutta step on ``x = (q, qd)``, for integrating the oracle's forward dynamics."""
    def f(time, x):
        return np.concatenate((x[q.size:], accel(time, x[:q.size], x[q.size:])))

    x = np.concatenate((q, qd))
    k1 = f(t, x)
    k2 = f(t + h / 2, x + h / 2 * k1)
    k3 = f(t + h / 2, x + h / 2 * k2)
    k4 = f(t + h, x + h * k3)
    x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return x[:q.size], x[q.size:]


REFERENCE_STEPS = {"euler": euler_step, "rk4": rk4_step}


class PinocchioAccel:
    """``pin.aba`` in our joint order (matched by name) as the right-hand side ``a(t, q, qd)``."""

    def __init__(self, urdf, model, tau):
        self.oracle = rf.PinOracle(urdf, model.joint_names)
        self.tau = tau

    def __call__(self, t, q, qd):
        return self.oracle.aba(q, qd, self.tau(t))


@pytest.mark.parametrize("robot", list(ROBOTS))
@pytest.mark.parametrize("integrator", ["euler", "rk4"])
def test_same_trajectory_as_pinocchio_aba_integrated_the_same_way(robot, integrator):
    pytest.importorskip("pinocchio")
    model = model_of(robot)
    q0, qd0 = start_state(model)
    tau = torque_of(model, q0, "sinusoidal")
    accel = PinocchioAccel(ROBOTS[robot](), model, tau)
    step = REFERENCE_STEPS[integrator]
    sim = Simulator(model, q0, qd0, integrator=integrator, enforce_effort_limits=False, enforce_position_limits=False)
    q, qd, t, h = q0.copy(), qd0.copy(), 0.0, 1e-3
    worst = 0.0
    for _ in range(300):
        q, qd = step(accel, t, q, qd, h)
        t += h
        sim.step(tau, h)
        worst = max(worst, np.abs(sim.q - q).max(), np.abs(sim.qd - qd).max())
    assert worst <= 1e-9, f"{robot}/{integrator}: simulator vs pin.aba integrated alike differ by {worst:.2e}"


def semi_implicit_euler_step(accel, t, q, qd, h):
    """The textbook semi-implicit Euler step."""
    qd_next = qd + h * accel(t, q, qd)
    return q + h * qd_next, qd_next


@pytest.mark.parametrize("integrator", ["euler", "semi_implicit_euler", "rk4"])
def test_compiled_step_is_the_textbook_step_on_the_public_forward_dynamics(integrator):
    """Every force of the compiled right-hand side, written out with the public API: the saturated
    sinusoidal command, viscous damping and smoothed Coulomb friction, and a wrench at the hand
    through ``rd.forward_dynamics(..., external_wrenches=...)`` (the Jacobian path)."""
    model = model_of("panda7")
    q0, qd0 = start_state(model)
    sinusoid = torque_of(model, q0, "sinusoidal")
    beyond = np.array([0.0, 0.0, 0.0, 0.0, 15.0, 0.0, 0.0])  # pushes panda_joint5 past its 12 N m

    def tau(t):
        return sinusoid(t) + beyond

    friction = np.linspace(0.5, 0.02, model.nv)  # light on the wrist: h F_c / (eps m) < 2, no chatter
    model = dataclasses.replace(model, friction=friction)
    wrench = {"panda_hand": np.array([0.3, -0.2, 0.1, 5.0, -4.0, 20.0])}
    limit = model.effort_limits

    def accel(t, q, qd):
        joint = np.clip(tau(t), -limit, limit) - model.damping * qd - friction * np.tanh(qd / 0.01)
        return rd.forward_dynamics(model, q, qd, joint, external_wrenches=wrench)

    step = {"euler": euler_step, "semi_implicit_euler": semi_implicit_euler_step, "rk4": rk4_step}[integrator]
    sim = Simulator(model, q0, qd0, integrator=integrator, apply_damping=True, apply_friction=True,
                    enforce_position_limits=False)
    q, qd, t, h = q0.copy(), qd0.copy(), 0.0, 1e-3
    for _ in range(50):
        q, qd = step(accel, t, q, qd, h)
        t += h
        sim.step(tau, h, external_wrenches=wrench)
        np.testing.assert_allclose(sim.q, q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(sim.qd, qd, rtol=0, atol=1e-10)
    assert sim.applied_effort[4] == 12.0, "the command should saturate"


def test_acceleration_is_the_public_forward_dynamics_with_every_force():
    model = model_of("panda7")
    q, qd = start_state(model)
    tau = np.array([100.0, -20.0, 5.0, 10.0, -30.0, 1.0, 2.0])  # joints 1 and 5 beyond their effort limits
    wrench = {"panda_hand": [0.1, 0.2, -0.3, 4.0, 5.0, -6.0]}
    sim = Simulator(model, apply_damping=True, enforce_position_limits=False)
    joint = np.clip(tau, -model.effort_limits, model.effort_limits) - model.damping * qd
    np.testing.assert_allclose(sim.acceleration(q, qd, tau, external_wrenches=wrench),
                               rd.forward_dynamics(model, q, qd, joint, external_wrenches=wrench), rtol=1e-12, atol=1e-9)


def test_acceleration_that_overflows_raises_instead_of_returning_inf():
    model = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    sim = Simulator(model)
    assert np.isfinite(sim.acceleration([0.1, 0.1], [1e100, 1e100], [0.0, 0.0])).all()  # large, still finite
    with pytest.raises(ValueError, match="acceleration is not finite"):
        with np.errstate(all="ignore"):
            sim.acceleration([0.1, 0.1], [1e200, 1e200], [0.0, 0.0])  # qd^2 overflows


def test_settings_and_wrenches_changed_between_steps_take_effect():
    """The simulator caches what a step needs; a switch flipped, or a wrench dict changed in place
    (as the node does), between two steps is seen by the next one."""
    model = model_of("panda7")
    q0, qd0 = start_state(model)
    wrench = {}
    sim = Simulator(model, q0, qd0, enforce_position_limits=False)
    reference = Simulator(model, q0, qd0, enforce_position_limits=False)
    for change in ("damping", "wrench", "wrench value", "no wrench", "effort limits"):
        if change == "damping":
            sim.apply_damping = reference.apply_damping = True
        elif change == "wrench":
            wrench["panda_hand"] = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 30.0])
        elif change == "wrench value":
            wrench["panda_hand"] = np.array([0.0, 0.0, 0.0, 30.0, 0.0, 0.0])
        elif change == "no wrench":
            wrench.clear()
        else:
            sim.enforce_effort_limits = reference.enforce_effort_limits = False
        command = np.full(model.nv, 50.0)
        sim.step(command, 1e-3, external_wrenches=wrench)
        reference.step(command, 1e-3, external_wrenches=dict(wrench))  # a fresh dict: nothing cached
        np.testing.assert_array_equal(sim.qd, reference.qd, err_msg=change)
        np.testing.assert_array_equal(sim.applied_effort, reference.applied_effort, err_msg=change)
    with pytest.raises(ValueError, match="friction_velocity"):
        sim.friction_velocity = 0.0


def test_a_strided_command_is_the_same_command():
    model = model_of("panda7")
    q0, qd0 = start_state(model)
    columns = np.tile(np.linspace(-5.0, 5.0, model.nv)[:, None], (1, 3))
    strided, plain = Simulator(model, q0, qd0), Simulator(model, q0, qd0)
    strided.step(columns[:, 1], 1e-3)
    plain.step(columns[:, 1].copy(), 1e-3)
    np.testing.assert_array_equal(strided.q, plain.q)
    np.testing.assert_array_equal(strided.qd, plain.qd)


def test_tree_branches_and_has_every_joint_kind():
    """The tree of the accuracy tests really is a branching tree with all three joint kinds."""
    info = rf.parse_urdf(tree_urdf())
    parents = [j.parent for j in info.moving]
    assert len(parents) > len(set(parents)) or len(rf.leaf_links(info)) > 1
    assert set(model_of("tree").joint_types) == {"revolute", "continuous", "prismatic"}


# ------------------------------------------------------------------------------------------------
# conservation
# ------------------------------------------------------------------------------------------------


def energy_drift(integrator, seconds=10.0, dt=1e-3):
    model = model_of("panda7")
    sim = Simulator(model, PANDA_HOME, integrator=integrator,
                    enforce_effort_limits=False, enforce_position_limits=False)
    initial = sim.energy()
    zero = np.zeros(model.nv)
    worst = 0.0
    for k in range(int(round(seconds / dt))):
        sim.step(zero, dt)
        if k % 20 == 19:
            worst = max(worst, abs(sim.energy() - initial))
    return worst, initial


def test_energy_is_conserved_by_rk4_and_drifts_with_euler():
    """Free fall of Panda-7 for 10 s at 1 kHz (no torque, damping, friction or limits).

    Measured: rk4 max |E - E0| = 2.7e-5 J of E0 = 83.6 J (the wrist reaches ~110 rad/s);
    explicit Euler 9.2 J, semi-implicit Euler 1.4e2 J (its symplecticity needs a constant mass
    matrix).  Bounds: rk4 < 1e-4 J; Euler > 1 J and > 1e4 times rk4's drift.
    """
    started = time.perf_counter()
    rk4_drift, initial = energy_drift("rk4")
    rk4_seconds = time.perf_counter() - started
    euler_drift, _ = energy_drift("euler")
    assert initial == pytest.approx(83.55, abs=0.01)
    assert rk4_drift < 1e-4, f"rk4 energy drift {rk4_drift:.2e} J over 10 s"
    assert euler_drift > 1.0 and euler_drift > 1e4 * rk4_drift, \
        f"euler drift {euler_drift:.2e} J, rk4 {rk4_drift:.2e} J"
    assert rk4_seconds < 10.0, f"10 000 rk4 steps of Panda-7 took {rk4_seconds:.1f} s"


@pytest.mark.parametrize("integrator, tolerance", [("rk4", 1e-5), ("adaptive", 1e-5), ("semi_implicit_euler", 1e-4)])
def test_small_angle_pendulum_period(integrator, tolerance):
    """1 kg, l = 1 m, 0.01 rad: period 2 pi sqrt(l / g) (finite-amplitude correction 6e-6 relative)."""
    model = rd.load_urdf(PENDULUM_URDF)
    h = 1e-3
    sim = Simulator(model, [0.01], integrator=integrator)
    _, q, _ = sim.run(np.zeros(1), h if integrator != "adaptive" else 1e-2, 3000 if integrator != "adaptive" else 300)
    q = q[:, 0]
    times = np.arange(q.size) * (h if integrator != "adaptive" else 1e-2)
    down = np.flatnonzero((q[:-1] > 0) & (q[1:] <= 0))  # downward zero crossings, linearly interpolated
    crossings = times[down] + (times[down + 1] - times[down]) * q[down] / (q[down] - q[down + 1])
    period = np.diff(crossings).mean()
    expected = 2 * math.pi * math.sqrt(1.0 / 9.81)
    assert len(crossings) >= 2
    assert abs(period / expected - 1) < tolerance, \
        f"{integrator}: period {period:.7f} s, 2 pi sqrt(l/g) = {expected:.7f} s"


# ------------------------------------------------------------------------------------------------
# limits
# ------------------------------------------------------------------------------------------------

INTEGRATOR_NAMES = list(simulation.INTEGRATORS)


@pytest.mark.parametrize("integrator", INTEGRATOR_NAMES)
@pytest.mark.parametrize("v0", [0.0, 100.0])
def test_position_limit_stops_the_joint(integrator, v0):
    """Hinge (I = 0.1 kg m^2) pushed at its effort limit (10 N m, 100 rad/s^2) into its 0.5 rad limit.

    From rest it arrives at 10 rad/s, from v0 = 100 rad/s at 100.5 rad/s.  The wall is critically
    damped at w = 0.5 / h = 500 rad/s, continuous-time overshoot v / (e w) (7.4 mrad, 74 mrad):
    measured 7.4/74 mrad (adaptive), 8.6/62 (rk4), 5/1.5 (semi-implicit Euler), 15/102 mrad
    (explicit Euler).  Bound: 1.5 v / (e w) + 5 mrad.  After 1 s it rests on the limit.
    """
    model = rd.load_urdf(HINGE_URDF)
    h = 1e-3
    omega = LIMIT_OMEGA_STEP / h
    sim = Simulator(model, [0.0], [v0], integrator=integrator)
    _, q, qd = sim.run(np.array([10.0]), h, 1000)
    assert np.isfinite(q).all() and np.isfinite(qd).all()
    arrival = math.hypot(v0, math.sqrt(2 * 100.0 * 0.5))
    overshoot = q[:, 0].max() - 0.5
    assert overshoot <= 1.5 * arrival / (math.e * omega) + 5e-3, f"overshoot {overshoot:.4f} rad"
    # at rest on the wall (explicit Euler: chattering at the 1e-6 rad, 1e-3 rad/s level)
    assert abs(q[-1, 0] - 0.5) < 1e-5 and abs(qd[-1, 0]) < 1e-2


@pytest.mark.parametrize("integrator", ["euler", "semi_implicit_euler", "rk4"])
@pytest.mark.parametrize("direction", [1.0, -1.0])
def test_every_panda_joint_into_its_limit_at_once(integrator, direction):
    """All seven joints at full effort into a limit (coupled contacts; the wrist arrives at ~80 rad/s).

    Measured max overshoot 0.16 rad (explicit Euler), 0.05 (semi-implicit Euler), 0.09 (rk4).
    Over the last 0.1 s of 2 s every joint is on its limit: semi-implicit Euler and rk4 within
    0.1 mrad (rk4 with brief micro-slips of joints 1 and 5 up to 0.06 rad/s); explicit Euler
    keeps the light wrist joint 5 (12 N m, ~1800 rad/s^2 free acceleration) chattering within
    5 mrad of its wall at up to ~2 rad/s -- documented in robot_dynamics.simulation.simulator.
    """
    model = model_of("panda7")
    limits = model.position_limits
    sim = Simulator(model, limits.mean(axis=1), integrator=integrator)
    _, q, qd = sim.run(direction * np.full(model.nv, 1000.0), 1e-3, 2000)
    assert np.isfinite(q).all() and np.isfinite(qd).all()
    penetration = np.maximum(q - limits[:, 1], limits[:, 0] - q)
    assert penetration.max() < 0.25, f"max overshoot {penetration.max():.3f} rad"
    side = limits[:, 1] if direction > 0 else limits[:, 0]
    settled = slice(-100, None)
    if integrator == "euler":
        assert np.abs(q[settled] - side).max() < 0.01 and np.abs(qd[settled]).max() < 5.0
    else:
        assert np.abs(q[settled] - side).max() < 1e-3 and np.abs(qd[settled]).max() < 0.2
    np.testing.assert_array_equal(sim.applied_effort, direction * model.effort_limits)


def limit_targets(q, qd, lower, upper, omega):
    """The module docstring's contact law: each joint beyond a limit, ``s (w^2 p + 2 w dp/dt)``."""
    below, above = q < lower, q > upper
    side = np.where(below, 1.0, -1.0)
    depth = np.where(below, lower - q, q - upper)
    rate = np.where(below, -qd, qd)
    return below | above, side, side * (omega**2 * depth + 2 * omega * rate)


def test_limit_contacts_push_never_pull_and_the_held_ones_meet_their_law():
    """``limit_correction`` against its equations, on random coupled inertias: the torques
    ``tau = M c`` behind its correction ``c`` act only on joints beyond a limit and push there; each
    joint that keeps a torque gets exactly the contact law's acceleration; a contact that would pull
    is released (in some cases here: its torque is zero)."""
    rng = np.random.default_rng(7)
    omega, released = 500.0, 0
    for _ in range(300):
        n = int(rng.integers(1, 8))
        A = rng.normal(size=(n, n))
        M = A @ A.T + 0.1 * np.eye(n)
        L = M.copy()
        assert cholesky_factor(L) == -1
        lower, upper = -np.ones(n), np.ones(n)
        q, qd, free = rng.uniform(-1.3, 1.3, n), rng.normal(scale=3.0, size=n), rng.normal(scale=50.0, size=n)
        correction = limit_correction(L, q, qd, free, lower, upper, omega)
        tau = M @ correction
        beyond, side, target = limit_targets(q, qd, lower, upper, omega)
        scale = 1e-9 * (1.0 + np.abs(tau).max())
        held = beyond & (np.abs(tau) > scale)
        assert np.all(np.abs(tau[~beyond]) <= scale)
        assert np.all(side[held] * tau[held] > 0)
        np.testing.assert_allclose((free + correction)[held], target[held], rtol=1e-9, atol=1e-6)
        released += np.any(beyond & ~held)
    assert released > 10


def test_a_contact_that_would_pull_is_released():
    """Two coupled joints beyond their upper limits: the first pressed outward (held), the second
    leaving its wall fast, which only a pull could slow to the contact law: it is released, and the
    first alone is held, ``tau_0 = (target_0 - free_0) / (M^-1)_00``."""
    M = np.array([[2.0, 0.5], [0.5, 1.0]])
    L = M.copy()
    cholesky_factor(L)
    q, qd, free = np.array([1.01, 1.01]), np.array([0.0, -30.0]), np.array([40.0, 0.0])
    lower, upper, omega = -np.ones(2), np.ones(2), 500.0
    _, _, target = limit_targets(q, qd, lower, upper, omega)
    inverse = np.linalg.inv(M)
    tau_0 = (target[0] - free[0]) / inverse[0, 0]
    assert tau_0 < 0  # pushes inward from the upper limit
    correction = limit_correction(L, q, qd, free, lower, upper, omega)
    np.testing.assert_allclose(correction, inverse[:, 0] * tau_0, rtol=1e-12)


def test_effort_saturation_caps_the_applied_effort():
    model = model_of("panda7")
    huge = np.array([1000.0, -1000.0, 50.0, -1000.0, 1000.0, -5.0, 1000.0])
    capped = np.clip(huge, -model.effort_limits, model.effort_limits)
    a = Simulator(model, PANDA_HOME)
    b = Simulator(model, PANDA_HOME)
    for _ in range(50):
        a.step(huge, 1e-3)
        b.step(capped, 1e-3)
    np.testing.assert_array_equal(a.applied_effort, capped)
    np.testing.assert_array_equal(a.q, b.q)
    assert list(capped) == [87.0, -87.0, 50.0, -87.0, 12.0, -5.0, 12.0]
    free = Simulator(model, PANDA_HOME, enforce_effort_limits=False)
    free.step(huge, 1e-3)
    np.testing.assert_array_equal(free.applied_effort, huge)


def test_zero_effort_limit_means_no_limit():
    """A URDF effort of 0 (a common xacro default) is treated as "not given", not as a locked joint."""
    model = rd.load_urdf(HINGE_URDF.replace('effort="10"', 'effort="0"'))
    sim = Simulator(model)
    sim.step(np.array([5.0]), 1e-3)
    assert sim.applied_effort[0] == 5.0


# ------------------------------------------------------------------------------------------------
# damping, friction, external wrenches
# ------------------------------------------------------------------------------------------------


def test_viscous_damping_decays_the_swing_at_the_textbook_rate():
    """theta'' = -(g/l) theta - (b / m l^2) theta': amplitude decays as exp(-b t / 2) with b = 0.5."""
    model = rd.load_urdf(PENDULUM_URDF)
    sim = Simulator(model, [0.01], apply_damping=True)
    _, q, _ = sim.run(np.zeros(1), 1e-3, 8000)
    q = q[:, 0]
    peaks = np.flatnonzero((q[1:-1] > q[:-2]) & (q[1:-1] >= q[2:])) + 1
    t = peaks * 1e-3
    rate = -np.polyfit(t, np.log(q[peaks]), 1)[0]
    assert rate == pytest.approx(0.25, rel=1e-3)
    undamped = Simulator(model, [0.01])
    undamped.run(np.zeros(1), 1e-3, 8000)
    assert abs(undamped.q[0]) < 0.0101 and undamped.energy() == pytest.approx(-9.81 * math.cos(0.01), abs=1e-9)


def test_coulomb_friction_holds_below_and_slips_above_the_friction_torque():
    """Hinge with friction 1 N m (tanh-smoothed, eps = 0.01 rad/s), no limits or damping."""
    model = rd.load_urdf(HINGE_URDF)
    held = Simulator(model, apply_friction=True, enforce_position_limits=False)
    held.run(np.array([0.5]), 1e-3, 1000)
    # below the friction torque it creeps at the smoothing speed eps * atanh(0.5) = 5.5 mrad/s
    assert held.qd[0] == pytest.approx(0.01 * math.atanh(0.5), rel=1e-6)
    slipping = Simulator(model, apply_friction=True, enforce_position_limits=False)
    slipping.run(np.array([2.0]), 1e-3, 200)
    assert slipping.qd[0] == pytest.approx((2.0 - 1.0) / 0.1 * 0.2, rel=1e-2)  # (tau - F_c) / I * t
    without = Simulator(model, enforce_position_limits=False)
    without.run(np.array([0.5]), 1e-3, 100)
    assert without.qd[0] == pytest.approx(0.5 / 0.1 * 0.1)


def test_external_wrench_convention():
    """World-aligned axes at the link origin: a lift of m g at the bob holds the pendulum anywhere;
    a horizontal push F_x at the bob hanging straight down turns it by -F_x l about +y; a pure
    moment about +y turns it by M_y."""
    model = rd.load_urdf(PENDULUM_URDF)
    sim = Simulator(model, [0.7])
    for _ in range(100):
        sim.step(np.zeros(1), 1e-3, external_wrenches={"bob": [0, 0, 0, 0, 0, 9.81]})
    assert sim.q[0] == pytest.approx(0.7, abs=1e-12) and abs(sim.qd[0]) < 1e-12
    pushed = Simulator(model, [0.0], integrator="euler")
    pushed.step(np.zeros(1), 1e-3, external_wrenches={"bob": [0, 0, 0, 2.0, 0, 0]})
    assert pushed.qd[0] == pytest.approx(-2.0 * 1e-3)
    twisted = Simulator(model, [0.0], integrator="euler")
    twisted.step(np.zeros(1), 1e-3, external_wrenches={"rod": [0, 3.0, 0, 0, 0, 0]})
    assert twisted.qd[0] == pytest.approx(3.0 * 1e-3)


# ------------------------------------------------------------------------------------------------
# safety
# ------------------------------------------------------------------------------------------------


def test_bad_commands_are_rejected_and_leave_the_state_alone():
    model = model_of("panda7")
    sim = Simulator(model, PANDA_HOME)
    for bad in ([0.0] * 6, [0.0] * 8, [np.nan] + [0.0] * 6, [np.inf] * 7, "seven", [[0.0] * 7] * 2):
        with pytest.raises(ValueError):
            sim.step(bad, 1e-3)
    with pytest.raises(ValueError, match="panda_joint3"):
        sim.step([0, 0, np.nan, 0, 0, 0, 0], 1e-3)
    with pytest.raises(ValueError, match="panda_joint5"):  # an array: checked inside the compiled step
        sim.step(np.array([0, 0, 0, 0, np.inf, 0, 0], dtype=float), 1e-3)
    with pytest.raises(ValueError, match="unknown link"):
        sim.step(np.zeros(7), 1e-3, external_wrenches={"no_such_link": np.zeros(6)})
    with pytest.raises(ValueError):
        sim.step(np.zeros(7), 1e-3, external_wrenches={"panda_hand": [0, 0, 0, np.nan, 0, 0]})
    with pytest.raises(ValueError):
        sim.step(lambda t: np.full(7, np.nan), 1e-3)
    for dt in (0.0, -1e-3, np.nan):
        with pytest.raises(ValueError):
            sim.step(np.zeros(7), dt)
    with pytest.raises(ValueError):
        Simulator(model, integrator="leapfrog")
    assert sim.t == 0.0
    np.testing.assert_array_equal(sim.q, PANDA_HOME)
    np.testing.assert_array_equal(sim.qd, np.zeros(7))


@pytest.mark.parametrize("integrator", INTEGRATOR_NAMES)
def test_non_finite_state_raises_and_keeps_the_last_finite_state(integrator):
    model = model_of("panda7")
    sim = Simulator(model, PANDA_HOME, integrator=integrator)
    absurd = {"panda_hand": [0, 0, 0, 1e300, 1e300, 0]}
    with pytest.raises(SimulationError, match="non-finite|adaptive integrator failed"):
        with np.errstate(all="ignore"):
            for _ in range(10):  # explicit Euler survives one step (|qd| ~ 1e300), not two
                q, qd, t = sim.q, sim.qd, sim.t
                sim.step(np.zeros(7), 1e-3, external_wrenches=absurd)
    assert np.isfinite(q).all() and np.isfinite(qd).all()
    np.testing.assert_array_equal(sim.q, q)
    np.testing.assert_array_equal(sim.qd, qd)
    assert sim.t == t
    sim.reset(PANDA_HOME)  # recovers
    sim.step(np.zeros(7), 1e-3)
    assert np.isfinite(sim.q).all()


@pytest.mark.parametrize("integrator", INTEGRATOR_NAMES)
def test_absurd_speed_raises_instead_of_grinding(integrator):
    """Joint speeds of 1e200 rad/s: an error at once (the adaptive integrator used to shrink its
    step on the non-finite derivatives for minutes)."""
    model = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    sim = Simulator(model, [0.1, 0.1], [1e200, 1e200], integrator=integrator)
    with pytest.raises(SimulationError, match="non-finite"):
        with np.errstate(all="ignore"):
            for _ in range(3):
                sim.step(np.zeros(2), 1e-3)
    assert np.isfinite(sim.q).all()


def test_reset_keeps_time_and_changing_gravity_through_the_model():
    model = rd.load_urdf(PENDULUM_URDF)
    sim = Simulator(model, [0.3])
    sim.run(np.zeros(1), 1e-3, 10)
    sim.reset([0.3])
    assert sim.t == pytest.approx(0.01) and sim.q[0] == 0.3 and sim.qd[0] == 0.0
    sim.model = model.with_gravity([0, 0, 0])
    sim.run(np.zeros(1), 1e-3, 10)
    assert sim.q[0] == 0.3
    with pytest.raises(ValueError, match="same joints"):
        sim.model = model_of("panda7")
