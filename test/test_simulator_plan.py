"""The simulator node's settings, plan and input checks, without ROS
(robot_dynamics.nodes.simulator.plan and simulator_inputs)."""

import math

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.nodes.common.parameters import Rejected
from robot_dynamics.nodes.simulator.inputs import effort_command, external_wrench, named_efforts
from robot_dynamics.simulation.drives import Commands
from robot_dynamics.nodes.simulator.plan import PARAMETERS, Settings, coerce_setting, make_plan
from robot_dynamics.description.robots import bundled_urdf
from robot_dynamics.rigid_body.friction import DEFAULT_FRICTION_VELOCITY


@pytest.fixture(scope="module")
def arm():
    return rd.load_urdf(bundled_urdf("arm7_gripper"))  # 7 arm joints + a finger; the other finger mimics it


def test_make_plan_initial_state_and_orders(arm):
    plan = make_plan(arm, Settings(initial_joint_names=("arm7_joint4", "arm7_finger_joint1"),
                                      initial_positions=(-1.5, 0.01), initial_velocities=(0.2, 0.0)))
    index = {n: i for i, n in enumerate(arm.joint_names)}
    assert plan.q0[index["arm7_joint4"]] == -1.5 and plan.qd0[index["arm7_joint4"]] == 0.2
    assert plan.q0[index["arm7_finger_joint1"]] == 0.01
    # not named: 0, or the nearest limit when 0 is outside the range (joint 4: [-3.07, -0.07])
    assert plan.q0[index["arm7_joint1"]] == 0.0
    lower, upper = arm.position_limits.T
    assert np.all((plan.q0 >= lower) & (plan.q0 <= upper))
    plan = make_plan(arm, Settings(joints=("arm7_joint2", "arm7_joint1")))
    assert plan.state_names[:2] == ["arm7_joint2", "arm7_joint1"] and plan.state_names[-1] == "arm7_finger_joint2"
    assert len(plan.state_names) == arm.nv + 1  # the coordinates, then the mimic finger
    with pytest.raises(ValueError, match="mimic another joint"):
        make_plan(arm, Settings(joints=("arm7_finger_joint2",)))
    with pytest.raises(ValueError, match="initial_positions has 2 values"):
        make_plan(arm, Settings(initial_positions=(0.0, 1.0)))
    with pytest.raises(ValueError, match="not joints of robot"):
        make_plan(arm, Settings(initial_joint_names=("nope",), initial_positions=(0.0,)))


def test_parameters_declare_every_setting_with_its_default():
    defaults = Settings()
    assert sorted(p.field for p in PARAMETERS) == sorted(defaults.__dataclass_fields__)
    for p in PARAMETERS:
        default = getattr(defaults, p.field)
        assert coerce_setting(p.field, p.default) == (tuple(default) if isinstance(default, tuple) else default)
    assert defaults.friction_velocity == DEFAULT_FRICTION_VELOCITY


@pytest.mark.parametrize("name, value, reason", [
    ("physics_rate", 0.5, "physics_rate must be >= 1"),
    ("publish_rate", 0, "publish_rate must be > 0"),
    ("friction_velocity", 0.0, "friction_velocity must be >= 1e-06"),
    ("integrator", "rk5", "integrator must be one of euler, semi_implicit_euler, rk4, adaptive"),
    ("gravity", [0.0, 9.81], "gravity must have 3 values"),
    ("joints", ["a", "a"], "joints has duplicate names ['a']"),
    ("apply_friction", 1, "apply_friction must be true or false"),
    ("initial_positions", [0.0, math.nan], "initial_positions must be finite"),
])
def test_bad_values_are_refused_with_the_reason(name, value, reason):
    with pytest.raises(ValueError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        coerce_setting(name, value)


def test_numbers_are_coerced():
    assert coerce_setting("physics_rate", 1000) == 1000.0 and isinstance(coerce_setting("physics_rate", 1000), float)
    assert coerce_setting("gravity", [0, 0, -1]) == (0.0, 0.0, -1.0)
    assert coerce_setting("initial_positions", None) == ()


def test_commands_expire_after_the_timeout_once_per_episode():
    commands = Commands(3)
    assert list(commands.never_commanded()) == [0, 1, 2] and commands.next_expiry == math.inf
    assert commands.accept(np.array([0, 2]), np.array([1.5, -2.0]), t=1.0, timeout=0.1) == []
    np.testing.assert_array_equal(commands.effort, [1.5, 0.0, -2.0])
    assert commands.next_expiry == pytest.approx(1.1)
    assert list(commands.expire(1.05, 0.1)) == []
    assert commands.accept(np.array([2]), np.array([-3.0]), t=1.08, timeout=0.1) == []
    assert list(commands.expire(1.15, 0.1)) == [0]       # joint 0 is stale, joint 2 is not yet
    np.testing.assert_array_equal(commands.effort, [0.0, 0.0, -3.0])
    assert list(commands.expire(1.16, 0.1)) == []        # once per episode
    assert commands.next_expiry == pytest.approx(1.18)
    assert list(commands.stale_joints()) == [0] and list(commands.never_commanded()) == [1]
    assert commands.accept(np.array([0]), np.array([4.0]), t=1.2, timeout=0.1) == [0]  # fresh again
    assert list(commands.expire(5.0, 0.0)) == [] and commands.next_expiry == math.inf  # timeout 0: never


def test_command_messages_are_checked(arm):
    plan = make_plan(arm, Settings(joints=("arm7_joint2", "arm7_joint1")))
    index, efforts = effort_command([1.0, 2.0], plan)
    assert [arm.joint_names[i] for i in index] == ["arm7_joint2", "arm7_joint1"] and list(efforts) == [1.0, 2.0]
    with pytest.raises(Rejected, match="3 values, expected 2"):
        effort_command([1.0, 2.0, 3.0], plan)
    with pytest.raises(Rejected, match=r"non-finite effort for \['arm7_joint1'\]"):
        effort_command([1.0, math.inf], plan)
    index, efforts = named_efforts(["arm7_joint5"], [0.5], plan)
    assert arm.joint_names[index[0]] == "arm7_joint5"
    with pytest.raises(Rejected, match="arm7_finger_joint2 mimic another joint"):
        named_efforts(["arm7_finger_joint2"], [0.5], plan)
    with pytest.raises(Rejected, match="duplicate joint names"):
        named_efforts(["arm7_joint5", "arm7_joint5"], [0.5, 0.5], plan)
    with pytest.raises(Rejected, match="1 names and 2 efforts"):
        named_efforts(["arm7_joint5"], [0.5, 0.5], plan)
    q = plan.q0 + 0.3  # the wrench is in arm7_link7's axes: turned into the root's at the state it arrives in
    R = rd.frame_pose(arm, q, "arm7_link7")[:3, :3]
    link, wrench = external_wrench("/arm7_link7", (1.0, 2.0, 3.0), (4.0, 5.0, 6.0), plan, q)
    assert link == "arm7_link7"
    np.testing.assert_allclose(wrench, np.r_[R @ [1.0, 2.0, 3.0], R @ [4.0, 5.0, 6.0]], atol=1e-12)
    with pytest.raises(Rejected, match="is not a link of robot"):
        external_wrench("nowhere", (0.0,) * 3, (1.0,) * 3, plan, q)
    with pytest.raises(Rejected, match="non-finite wrench"):
        external_wrench("arm7_link7", (math.nan, 0.0, 0.0), (1.0,) * 3, plan, q)


@pytest.mark.parametrize("robot", ["arm7_gripper", "five_bar"])
def test_joint_states_carry_coupled_joints_as_e_q_plus_o(robot):
    """joint_states: the coordinates in the ``joints`` order, then every mimic or coupled joint at
    q_joint = E q + o, qd_joint = E qd, with no effort (no actuator drives it)."""
    model = rd.load_urdf(bundled_urdf(robot))
    joints = tuple(reversed(model.joint_names))
    plan = make_plan(model, Settings(joints=joints))
    rng = np.random.default_rng(3)
    q, qd, effort = rng.normal(size=(3, model.nv))
    position, velocity, applied = plan.joint_state(q, qd, effort)
    assert plan.state_names == list(joints) + [name for name in model.body_joints if name in model.couplings]
    by_name = dict(zip(plan.state_names, zip(position, velocity, applied)))
    for i, name in enumerate(model.joint_names):
        assert by_name[name] == (q[i], qd[i], effort[i])
    index = {name: i for i, name in enumerate(model.joint_names)}
    for name, (terms, offset) in model.couplings.items():
        expected_q = sum(factor * q[index[master]] for master, factor in terms) + offset
        expected_qd = sum(factor * qd[index[master]] for master, factor in terms)
        assert by_name[name] == (pytest.approx(expected_q), pytest.approx(expected_qd), 0.0)
    if robot == "five_bar":  # Spong's parallelogram: q3 = q1 - q2, q4 = q2 - q1 + pi
        assert by_name["q3"][0] == pytest.approx(q[0] - q[1]) and by_name["q4"][0] == pytest.approx(q[1] - q[0] + math.pi)
