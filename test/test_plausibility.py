"""Plausible outputs and parameters, without ROS (issue 23 items 3 and 4).

- the simulator's drives on elastic joints (the YAML of docs/motors.md): ``brake`` and
  ``hold_position`` hold a never-commanded arm (they diverged: non-finite at t = 0.42 s), against
  the closed-form equilibria; the velocity limit bounds the motors' velocity;
- the one plausibility rule (:class:`~robot_dynamics.nodes.common.safety.Plausibility`) for torques and
  mass matrices, and the settings it refuses: absurd gravity, payload, gains, armature, joint
  stiffness, initial velocities on continuous joints, physics rates.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.nodes.dynamics import plan as dynamics_plan
from robot_dynamics.nodes.simulator import plan as simulator_plan
from robot_dynamics.nodes.common.parameters import Rejected
from robot_dynamics.nodes.common.safety import STANDARD_GRAVITY, TORQUE_FACTOR, Plausibility
from robot_dynamics.nodes.simulator.inputs import effort_command, named_efforts
from robot_dynamics.simulation.drives import DRIVE_BANDWIDTH, Commands, Drives, drive_torques
from robot_dynamics.simulation.simulator import Simulator

#: docs/motors.md's elastic planar 2R
DOCS_ARMATURE, DOCS_STIFFNESS = (0.5, 0.5), (1500.0, 1500.0)


@pytest.fixture(scope="module")
def planar():
    return rd.load_urdf("urdf/planar_2r.urdf")


@pytest.fixture(scope="module")
def arm7():
    return rd.load_urdf("arm7_gripper")


def docs_settings(**changes):
    return simulator_plan.Settings(motor_joint_names=("theta1", "theta2"), armature=DOCS_ARMATURE,
                                   joint_stiffness=DOCS_STIFFNESS, **changes)


def run_drives(plan, mode, seconds=3.0, limit_velocity=False, commands=None, **simulator):
    """The simulator node's loop without ROS: the drives' torques (``mode`` once a command is
    stale; a never-commanded joint counts as stale) held over each step of ``plan``'s physics rate."""
    sim = Simulator(plan.model, plan.q0, plan.qd0, joint_stiffness=plan.stiffness or None, **simulator)
    simulator_plan.configure(sim, plan.settings)
    commands = commands or Commands(plan.model.nv, plan.q0)
    dt = 1.0 / plan.settings.physics_rate
    worst = np.zeros((2, plan.model.nv))  # largest |qd| and |motor qd| met
    for _ in range(round(seconds / dt)):
        motors = (sim.motor_q, sim.motor_qd, plan.stiffness) if plan.stiffness else None
        sim.step(drive_torques(plan.drives, sim.q, sim.qd, commands, mode, limit_velocity, motors), dt)
        worst = np.maximum(worst, np.abs([sim.qd, sim.motor_qd]))
    return sim, worst


@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_hold_position_holds_a_never_commanded_elastic_arm_where_it_started(planar, integrator):
    """The motor held at q0 + K^-1 g(q0) with the constant gravity g(q0): the link's equilibrium is
    q0 exactly (the spring carries g(q0)), and the arm settles there."""
    q0 = (0.3, -0.2)
    plan = simulator_plan.make_plan(planar, docs_settings(
        initial_positions=q0, on_command_timeout="hold_position", integrator=integrator))
    sim, worst = run_drives(plan, "hold_position")
    g = rd.gravity_torques(plan.model, np.array(q0))
    np.testing.assert_allclose(sim.q, q0, atol=1e-3)
    np.testing.assert_allclose(sim.motor_q, np.array(q0) + g / np.array(DOCS_STIFFNESS), atol=1e-3)
    assert np.abs(sim.qd).max() < 1e-2
    assert worst.max() < 0.5  # never ran away on the way


@pytest.mark.parametrize("integrator", ["rk4", "semi_implicit_euler"])
def test_brake_stops_a_never_commanded_elastic_arm_near_where_it_started(planar, integrator):
    """The motors braked, the links sag until the springs carry their weight and stay: at rest
    K (theta - q) = g(q), and the sag is about K^-1 g(q0) (0.022 rad here)."""
    q0 = np.array([0.3, -0.2])
    plan = simulator_plan.make_plan(planar, docs_settings(
        initial_positions=tuple(q0), on_command_timeout="brake", integrator=integrator))
    sim, worst = run_drives(plan, "brake")
    sag = rd.gravity_torques(plan.model, q0) / np.array(DOCS_STIFFNESS)
    assert np.abs(sim.q - q0).max() < 1.5 * np.abs(sag).max()
    assert np.abs(sim.qd).max() < 1e-2 and np.abs(sim.motor_qd).max() < 1e-2
    np.testing.assert_allclose(np.array(DOCS_STIFFNESS) * (sim.motor_q - sim.q),
                               rd.gravity_torques(plan.model, sim.q), rtol=1e-3, atol=1e-3)
    assert worst.max() < 0.5


def geared_arm7(arm7):
    """test_motors' 7-joint arm with motors (0.6-0.1 kg m^2) and springs (elastic modes 63-350 rad/s)."""
    return simulator_plan.Settings(armature=tuple(np.linspace(0.6, 0.1, 8)),
                                   joint_stiffness=(650.0, 3400.0, 500.0, 1000.0, 340.0, 280.0, 170.0, 200.0),
                                   initial_positions=(0.3, 0.3, 0.3, -0.3, 0.3, 0.3, 0.3, 0.02),
                                   enforce_position_limits=False, enforce_velocity_limits=True)


def test_velocity_limits_bound_the_motors_of_an_elastic_arm(arm7):
    """Commanded zero torque, the arm falls under gravity: the drives brake each motor at its URDF
    velocity limit (within 10 %: a loop of finite gain); the links ring on their springs around
    it (within 50 %). Without the limits the same fall reaches 4 times the limit."""
    plan = simulator_plan.make_plan(arm7, geared_arm7(arm7))
    commands = Commands(arm7.nv, plan.q0)
    commands.accept(np.arange(arm7.nv), np.zeros(arm7.nv), 0.0, 0.0)  # live zero commands, never stale
    limit = arm7.velocity_limits
    _, worst = run_drives(plan, "zero_torque", limit_velocity=True, commands=commands)
    link, motor = worst / limit
    assert motor.max() < 1.1 and link.max() < 1.5, (link, motor)
    _, free = run_drives(plan, "zero_torque", limit_velocity=False, commands=commands)
    assert (free / limit).max() > 3.0  # the limits did the work


def test_the_drive_laws_close_on_the_motors_of_elastic_joints(planar):
    """Elastic joints: the brake, hold and velocity-limit loops read the motor state, not the link's."""
    model = planar.with_armature(DOCS_ARMATURE)
    K = np.array(DOCS_STIFFNESS)
    q, qd, theta, theta_d = np.array([0.3, -0.2]), np.array([0.5, -0.4]), np.array([0.31, -0.19]), np.array([0.1, 0.2])
    hold = np.array([0.25, -0.1])
    commands = Commands(2, hold)
    drives = Drives(model)
    w, m, g = DRIVE_BANDWIDTH, np.diag(rd.mass_matrix(model, q)), rd.gravity_torques(model, q)
    np.testing.assert_allclose(drive_torques(drives, q, qd, commands, "brake", False, (theta, theta_d, K)),
                               g - 2 * w * m * theta_d)
    g_hold = rd.gravity_torques(model, hold)
    np.testing.assert_allclose(drive_torques(drives, q, qd, commands, "hold_position", False, (theta, theta_d, K)),
                               g_hold + m * (w * w * (hold + g_hold / K - theta) - 2 * w * theta_d))


# --- the plausibility rule for torques and mass matrices -----------------------------------------
def test_torque_scale_is_the_effort_limit_or_the_robots_weight_at_its_reach(arm7, planar):
    check = Plausibility(arm7)
    mass = sum(float(b[19]) for b in arm7.bodies)  # (MASS column)
    assert check.mass == pytest.approx(mass)
    weight_torque = mass * STANDARD_GRAVITY * check.reach
    revolute = [i for i, kind in enumerate(arm7.joint_types) if kind != "prismatic"]
    np.testing.assert_allclose(check.scale[revolute], np.maximum(weight_torque, arm7.effort_limits[revolute]))
    # planar 2R (L&P 9.1.1): 3 kg, no effort limits; reach >= L1 + L2 = 1.5 m
    scale = Plausibility(planar).scale
    assert scale[0] == scale[1] >= 3.0 * STANDARD_GRAVITY * 1.5


def test_outputs_beyond_the_torque_bound_are_not_believed(arm7):
    check = Plausibility(arm7)
    g = rd.gravity_torques(arm7, np.zeros(arm7.nv))
    assert check.output_problem(g) == "" and check.output_problem(rd.mass_matrix(arm7, np.zeros(arm7.nv))) == ""
    bound = TORQUE_FACTOR * check.scale
    tau = 0.99 * bound
    assert check.output_problem(tau) == ""
    tau[2] = 1.01 * bound[2]
    assert "arm7_joint3" in check.output_problem(tau)
    assert "arm7_joint1" in check.output_problem(np.r_[7.5e304, np.zeros(arm7.nv - 1)])
    assert check.output_problem(np.r_[np.nan, np.zeros(arm7.nv - 1)]) != ""
    M = np.eye(arm7.nv)
    M[1, 3] = M[3, 1] = 1e300
    assert "mass matrix entry (arm7_joint2, arm7_joint4) = 1e+300" in check.output_problem(M)


def test_the_simulator_rejects_implausible_effort_commands(arm7):
    plan = simulator_plan.make_plan(arm7, simulator_plan.Settings())
    effort_command([1.0] * arm7.nv, plan)
    with pytest.raises(Rejected, match="torques above 1000 times the joint's torque scale: arm7_joint2=1e\\+300"):
        effort_command([0.0, 1e300] + [0.0] * (arm7.nv - 2), plan)
    with pytest.raises(Rejected, match="arm7_joint4=-1e\\+12"):
        named_efforts(["arm7_joint4"], [-1e12], plan)


# --- the parameters that would break it, refused with the reason ---------------------------------
def test_simulator_parameters_that_would_break_plausibility_are_refused(planar):
    with pytest.raises(ValueError, match=r"gravity \[0.0, 0.0, 1e\+30\] has magnitude 1e\+30 m/s\^2, more than 10 g"):
        simulator_plan.coerce_setting("gravity", [0.0, 0.0, 1e30])
    assert simulator_plan.coerce_setting("gravity", [0.0, 0.0, -3.71]) == (0.0, 0.0, -3.71)  # Mars
    cases = {
        "joint_stiffness": (dict(joint_stiffness=(1e300, 1e300)), "too fast to integrate at any physics_rate"),
        "initial_velocities": (dict(initial_velocities=(1e300, 0.0)),
                               "initial state not plausible: velocities above .* theta1=1e\\+300"),
        "physics_rate": (dict(physics_rate=1.0), "physics_rate 1 Hz is too slow for the drives' brake loop on the "
                                                 "motors .* at least 596.9 Hz"),
        "armature": (dict(armature=(1e300, 1e300)), "mass matrix entry \\(theta1, theta1\\) = 1e\\+300"),
    }
    simulator_plan.make_plan(planar, docs_settings())  # the docs' values are fine
    for name, (change, reason) in cases.items():
        with pytest.raises(ValueError, match=reason):
            simulator_plan.make_plan(planar, dataclasses.replace(docs_settings(), **change))
    with pytest.raises(ValueError, match="integrator euler cannot integrate elastic joints"):
        simulator_plan.make_plan(planar, dataclasses.replace(docs_settings(), integrator="euler"))
    with pytest.raises(ValueError, match="physics_rate 50 Hz is too slow for the drives' brake loop .* at least 62.83"):
        simulator_plan.make_plan(planar, simulator_plan.Settings(physics_rate=50.0))
    simulator_plan.make_plan(planar, simulator_plan.Settings(physics_rate=100.0))


def test_dynamics_parameters_that_would_break_plausibility_are_refused(arm7):
    with pytest.raises(ValueError, match=r"gravity \[0.0, 0.0, 1e\+300\] has magnitude 1e\+300 m/s\^2, more than 10 g"):
        dynamics_plan.coerce_setting("gravity", [0.0, 0.0, 1e300])
    tcp = arm7.link_names[-1]
    cases = [
        (dict(payload_link=tcp, payload_mass=1e4, payload_com=(1e150, 0.0, 0.0)),
         "payload.mass 10000 kg is more than 10 times the robot's mass \\(17.8 kg\\)"),
        (dict(payload_link=tcp, payload_mass=5.0, payload_com=(1e150, 0.0, 0.0)), "payload.com .* beyond the robot's reach"),
        (dict(kp=(1e300,)), "kp and kd too large: a 1 rad error and 1 rad/s velocity error would ask for torques above"),
        (dict(kd=(0.0,) * 7 + (1e9,)), "arm7_finger_joint1=1e\\+08"),
        (dict(armature=(1e300,) * arm7.nv), "armature .* implausible .* mass matrix entry \\(arm7_joint1, arm7_joint1\\)"),
        (dict(gravity=(0.0, 0.0, -1e300)), "gravity .* (non-finite|implausible)"),
    ]
    for settings, reason in cases:
        with pytest.raises(ValueError, match=reason):
            dynamics_plan.make_plan(arm7, dynamics_plan.Settings(**settings))
    # real values pass: a 3 kg tool 0.2 m out, a stiff servo, Mars, a geared arm
    for settings in (dict(payload_link=tcp, payload_mass=3.0, payload_com=(0.0, 0.0, 0.2)), dict(kp=(2500.0,), kd=(100.0,)),
                     dict(gravity=(0.0, 0.0, -3.71)), dict(armature=tuple(np.linspace(0.6, 0.1, 8)))):
        dynamics_plan.make_plan(arm7, dynamics_plan.Settings(**settings))
