"""The nodes' guards against hostile or absurd input, without ROS: description text, cut text,
plausibility limits, models whose outputs would not be finite, the simulator's drives."""

from __future__ import annotations

import math

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.nodes.dynamics import plan as dynamics_plan
from robot_dynamics.nodes.simulator import plan as simulator_plan
from robot_dynamics.nodes.common.safety import (
    ENERGY_FACTOR, MAX_DESCRIPTION_CHARS, MAX_SPEED, POSITION_MARGIN, UNLIMITED_POSITION, VELOCITY_FACTOR, Plausibility, check_outputs_finite, closest_name, cut,
    description_text,
)
from robot_dynamics.simulation.drives import DRIVE_BANDWIDTH, Commands, Drives, drive_torques
from robot_dynamics.description.robots import urdf_file
from robot_dynamics.simulation.simulator import Simulator


@pytest.fixture(scope="module")
def arm7():
    return rd.load_urdf("arm7_gripper")


@pytest.mark.parametrize("text", [str(urdf_file("arm7_gripper")), "/dev/zero", "arm7_gripper", "", "   ", "not a urdf <"])
def test_a_description_that_is_not_xml_text_is_refused_without_reading_anything(text):
    with pytest.raises(ValueError, match="must be URDF XML text") as info:
        description_text(text)
    assert "never open files" in str(info.value)


def test_description_size_limit_and_type():
    with pytest.raises(ValueError, match="more than the limit"):
        description_text("<" + " " * MAX_DESCRIPTION_CHARS)
    with pytest.raises(ValueError, match="not bytes"):
        description_text(b"<robot/>")
    xml = "  \n<robot name='r'/>"
    assert description_text(xml) is xml


def test_cut_bounds_the_text_and_says_how_much_is_left_out():
    assert cut("short") == "short"
    long = "x" * 1_000_000
    out = cut(long, 100)
    assert len(out) == 100 and out.startswith("xxx") and out.endswith("... [999900 more characters]")
    assert len(cut(long)) <= 1000


def test_plausibility_refuses_positions_far_beyond_the_limits_and_absurd_speeds(arm7):
    check = Plausibility(arm7)
    index = np.arange(arm7.nv)
    low, high = arm7.position_limits[:, 0], arm7.position_limits[:, 1]
    inside = np.clip(np.zeros(arm7.nv), low, high)
    assert check.problem(index, inside, np.zeros(arm7.nv)) == ""
    j = int(np.flatnonzero(np.isfinite(high))[0])
    q = inside.copy()
    q[j] = high[j] + 0.99 * POSITION_MARGIN  # past the limit the node does not enforce: believed
    assert check.problem(index, q, None) == ""
    q[j] = 1e5  # (the hostile round's value)
    text = check.problem(index, q, None)
    assert "more than 10000 beyond the joint limits" in text and arm7.joint_names[j] in text and "1e+05" in text
    qd = np.zeros(arm7.nv)
    qd[j] = 1.01 * MAX_SPEED
    text = check.problem(index, None, qd)
    assert "velocities above 1000 rad/s" in text and arm7.joint_names[j] in text
    # a subset of the joints, by model index
    assert check.problem(np.array([j]), np.array([1e20]), None) != ""


def test_kinetic_energy_beyond_any_fall_or_drive_is_refused(arm7):
    """The energy scale is m (2 g0 r + V^2) (its closed form here); velocities within VELOCITY_FACTOR
    times the limits always pass (the bound holds by construction: checked at the extreme signs over
    random configurations), a state with more than ENERGY_FACTOR times the scale does not."""
    check = Plausibility(arm7)
    m, r = check.mass, check.reach
    prismatic = np.array([k == "prismatic" for k in arm7.joint_types])
    V = float(np.sum(arm7.velocity_limits * np.where(prismatic, 1.0, r)))
    assert check.energy == pytest.approx(ENERGY_FACTOR * m * (2 * 9.80665 * r + V * V), rel=1e-12)
    rng = np.random.default_rng(3)
    low, high = arm7.position_limits[:, 0], arm7.position_limits[:, 1]
    for _ in range(200):
        q = rng.uniform(low, high)
        qd = VELOCITY_FACTOR * arm7.velocity_limits * rng.choice([-1.0, 1.0], arm7.nv)
        assert rd.kinetic_energy(arm7, q, qd) <= check.energy
        assert check.state_problem(q, qd) == ""
    q = np.clip(np.array([0.0, 1.5, 0, 0, 0, 0, 0, 0]), low, high)  # stretched out
    qd = np.zeros(arm7.nv)
    qd[1] = 500.0  # the shoulder swinging the whole arm at 230 times its limit (below MAX_SPEED)
    energy = rd.kinetic_energy(arm7, q, qd)
    assert energy > check.energy
    text = check.state_problem(q, qd)
    assert f"kinetic energy {energy:.4g} J above 10 times" in text and "arm7_joint2=500" in text


def chain_urdf(n=5, length=0.3, mass=1.0, limit=1.0, velocity=1.0):
    """A planar chain of ``n`` revolute joints about y (rods along z), limits +-``limit`` rad and
    ``velocity`` rad/s, hanging from a fixed base."""
    links = ['<link name="base"/>']
    joints = []
    parent = "base"
    for i in range(n):
        izz = mass * length ** 2 / 12
        links.append(f'<link name="l{i}"><inertial><origin xyz="0 0 {-length / 2}"/><mass value="{mass}"/>'
                     f'<inertia ixx="{izz}" ixy="0" ixz="0" iyy="{izz}" iyz="0" izz="1e-4"/></inertial></link>')
        joints.append(f'<joint name="j{i}" type="revolute"><parent link="{parent}"/><child link="l{i}"/>'
                      f'<origin xyz="0 0 {-length if i else 0}"/><axis xyz="0 1 0"/>'
                      f'<limit lower="{-limit}" upper="{limit}" effort="50" velocity="{velocity}"/></joint>')
        parent = f"l{i}"
    return f'<robot name="chain">{"".join(links)}{"".join(joints)}</robot>'


def test_a_free_chain_past_its_limits_is_believed_and_conserves_energy():
    """Issue 30's free chain (5 joints, rk4 at 1 kHz, no damping, limits not enforced) started
    horizontal: it swings past its limits (and 5 times its velocity limits) within a second; every
    state of 25 s is believed, and the energy drifts by less than 1e-4 of its scale m g0 r."""
    model = rd.load_urdf(chain_urdf())
    check = Plausibility(model)
    q0 = np.array([np.pi / 2, 0, 0, 0, 0])
    sim = Simulator(model, q0, np.zeros(5), integrator="rk4", enforce_position_limits=False)
    e0, zero = sim.energy(), np.zeros(5)
    believed = beyond_limits = beyond_speed = 0
    steps = 25_000
    for _ in range(steps):
        sim.step(zero, 1e-3)
        believed += check.state_problem(sim.q, sim.qd) == ""
        beyond_limits += np.abs(sim.q).max() > 1.0 + np.pi  # (the old rule's margin)
        beyond_speed += np.abs(sim.qd).max() > 5.0
    assert beyond_limits > steps / 4 and beyond_speed > steps / 10  # what the old rule withheld
    assert believed >= 0.95 * steps, believed
    scale = check.mass * 9.80665 * check.reach
    assert abs(sim.energy() - e0) <= 1e-4 * scale


def test_an_arm_falling_for_2_s_without_command_is_believed(arm7):
    """Issue 30: an arm whose motors are off before the first command falls past 5 times its velocity
    limits; its true state is believed all the way (and the 1e5 rad, 1e3 rad/s of the hostile rounds
    are not)."""
    check = Plausibility(arm7)
    q0 = np.array([0.0, 0.5, 0.0, -0.5, 0.0, 0.5, 0.0, 0.02])
    sim = Simulator(arm7, q0, np.zeros(arm7.nv), integrator="rk4", enforce_position_limits=False)
    fastest = 0.0
    for _ in range(2000):
        sim.step(np.zeros(arm7.nv), 1e-3)
        assert check.state_problem(sim.q, sim.qd) == "", (sim.t, sim.q, sim.qd)
        fastest = max(fastest, float(np.max(np.abs(sim.qd) / arm7.velocity_limits)))
    assert fastest > 5.0  # (withheld by the old rule)


WHEEL = """<robot name="wheel"><link name="base"/>
  <link name="wheel"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <joint name="spin" type="continuous"><parent link="base"/><child link="wheel"/><axis xyz="0 0 1"/></joint>
</robot>"""


def test_joints_without_limits_have_the_wide_bounds():
    """A continuous joint without a velocity limit: up to UNLIMITED_POSITION and MAX_SPEED (1e6
    rad, 1e3 rad/s) it is believed, beyond them it is not (1e300 rad/s used to pass)."""
    model = rd.load_urdf(WHEEL)
    check = Plausibility(model)
    assert check.problem(np.arange(1), np.array([UNLIMITED_POSITION]), np.array([-MAX_SPEED])) == ""
    assert "spin=1.1e+06" in check.problem(np.arange(1), np.array([1.1e6]), None)
    assert "spin=1e+300" in check.problem(np.arange(1), None, np.array([1e300]))
    assert "spin=nan" in check.problem(np.arange(1), None, np.array([math.nan]))


def test_settings_that_make_the_outputs_non_finite_are_refused(arm7):
    check_outputs_finite(arm7, "defaults")
    with pytest.raises(ValueError, match="gravity .* non-finite"):
        dynamics_plan.make_plan(arm7, dynamics_plan.Settings(gravity=(1e308, 0.0, 0.0)))
    link = arm7.link_names[-1]
    far = dynamics_plan.Settings(payload_link=link, payload_mass=1e4, payload_com=(1e200, 0.0, 0.0))
    with pytest.raises(ValueError, match="payload.mass 10000 kg is more than 10 times the robot's mass"):
        dynamics_plan.make_plan(arm7, far)
    with pytest.raises(ValueError, match="gravity .* non-finite"):
        simulator_plan.make_plan(arm7, simulator_plan.Settings(gravity=(0.0, 1e308, 0.0)))


def test_a_robot_without_moving_joints_is_refused():
    fixed = rd.load_urdf("<robot name='still'><link name='a'/><link name='b'/>"
                         "<joint name='j' type='fixed'><parent link='a'/><child link='b'/></joint></robot>")
    with pytest.raises(ValueError, match="no moving joints"):
        dynamics_plan.make_plan(fixed, dynamics_plan.Settings())


def test_an_implausible_initial_state_is_refused(arm7):
    with pytest.raises(ValueError, match="initial state not plausible: velocities above"):
        simulator_plan.make_plan(arm7, simulator_plan.Settings(initial_velocities=(1e300,) * arm7.nv))


def test_closest_name():
    names = [p.name for p in dynamics_plan.PARAMETERS]
    assert closest_name("comand_source", names) == "command_source"
    assert closest_name("payload.mas", names) == "payload.mass"
    assert closest_name("zzzzzz", names) == ""


# --- the simulator's drives ----------------------------------------------------------------------
def stale_commands(model, q_hold):
    commands = Commands(model.nv)
    commands.accept(np.arange(model.nv), np.full(model.nv, 3.0), 0.0, 0.1)
    assert list(commands.expire(0.2, 0.1, q_hold)) == list(range(model.nv))
    return commands


def test_drive_torques_when_the_commands_stop(arm7):
    rng = np.random.default_rng(3)
    q_hold = np.clip(rng.uniform(-1, 1, arm7.nv), arm7.position_limits[:, 0], arm7.position_limits[:, 1])
    q, qd = q_hold + 0.01, rng.uniform(-1, 1, arm7.nv)
    commands = stale_commands(arm7, q_hold)
    w, m, g = DRIVE_BANDWIDTH, np.diag(rd.mass_matrix(arm7, q)), rd.gravity_torques(arm7, q)
    np.testing.assert_array_equal(drive_torques(Drives(arm7), q, qd, commands, "zero_torque", False), np.zeros(arm7.nv))
    np.testing.assert_allclose(drive_torques(Drives(arm7), q, qd, commands, "brake", False), g - 2 * w * m * qd)
    np.testing.assert_allclose(drive_torques(Drives(arm7), q, qd, commands, "hold_position", False),
                               g + m * (w * w * (q_hold - q) - 2 * w * qd))
    # a live command is applied as it is, whatever the mode
    commands.accept(np.arange(arm7.nv), np.full(arm7.nv, 2.5), 0.3, 0.1)
    np.testing.assert_array_equal(drive_torques(Drives(arm7), q, qd, commands, "hold_position", False), 2.5)


def test_hold_position_brings_a_falling_arm_back_and_brake_stops_it(arm7):
    """Closed loop with the core simulator: with the commands stale, brake stops the arm near
    where it was, hold_position returns it there; zero torque lets it fall."""
    q0 = np.clip(np.full(arm7.nv, 0.3), arm7.position_limits[:, 0], arm7.position_limits[:, 1])
    dt, steps = 1e-3, 3000
    final = {}
    for mode in ("zero_torque", "brake", "hold_position"):
        sim = Simulator(arm7, q0.copy(), np.zeros(arm7.nv))
        commands = stale_commands(arm7, q0)
        for _ in range(steps):
            sim.step(drive_torques(Drives(arm7), sim.q, sim.qd, commands, mode, False), dt)
        final[mode] = (sim.q.copy(), sim.qd.copy())
    assert np.abs(final["hold_position"][0] - q0).max() < 1e-3
    assert np.abs(final["hold_position"][1]).max() < 1e-2
    assert np.abs(final["brake"][1]).max() < 1e-2 and np.abs(final["brake"][0] - q0).max() < 0.05
    assert np.abs(final["zero_torque"][0] - q0).max() > 0.2


def test_velocity_limits_brake_a_joint_that_is_too_fast(arm7):
    q = np.clip(np.zeros(arm7.nv), arm7.position_limits[:, 0], arm7.position_limits[:, 1])
    vmax = arm7.velocity_limits
    qd = np.zeros(arm7.nv)
    qd[1] = 3.0 * vmax[1]
    commands = Commands(arm7.nv)
    commands.accept(np.arange(arm7.nv), np.full(arm7.nv, 1.0), 0.0, 0.1)
    tau = drive_torques(Drives(arm7), q, qd, commands, "zero_torque", True)
    m, g = np.diag(rd.mass_matrix(arm7, q)), rd.gravity_torques(arm7, q)
    assert tau[1] == pytest.approx(g[1] - 2 * DRIVE_BANDWIDTH * m[1] * 2.0 * vmax[1])
    np.testing.assert_array_equal(np.delete(tau, 1), 1.0)
    assert math.isfinite(tau.sum())
