"""The dynamics node's settings, plan and input checks, without ROS
(robot_dynamics.nodes.dynamics.plan and dynamics_inputs)."""

import math

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control import laws as control
from robot_dynamics.nodes.dynamics.inputs import (
    MAX_CACHED_NAME_LISTS, NEVER, DesiredStateReader, JointStateMerger, desired_accelerations,
)
from robot_dynamics.nodes.dynamics.plan import (
    PARAMETERS, Desired, Settings, coerce_setting, make_plan, servo_terms,
)
from robot_dynamics.nodes.common.parameters import Rejected
from robot_dynamics.description.robots import bundled_urdf

MS = 1_000_000  # ns


@pytest.fixture(scope="module")
def arm():
    return rd.load_urdf(bundled_urdf("arm7_gripper"))  # 7 arm joints + a finger; the other finger mimics it


@pytest.fixture(scope="module")
def two_link():
    xml = rd.examples.TWO_LINK_URDF.replace('<joint name="shoulder" type="revolute">',
                                            '<joint name="shoulder" type="continuous">')
    return rd.load_urdf(xml)


class Point:  # the fields of a trajectory_msgs/JointTrajectoryPoint that the reader uses
    def __init__(self, positions=(), velocities=(), accelerations=()):
        self.positions, self.velocities, self.accelerations = positions, velocities, accelerations


def test_parameters_declare_every_setting_with_its_default():
    defaults = Settings()
    assert sorted(p.field for p in PARAMETERS) == sorted(defaults.__dataclass_fields__)
    for p in PARAMETERS:
        default = getattr(defaults, p.field)
        assert coerce_setting(p.field, p.default) == default, p.name
    assert {p.name for p in PARAMETERS} >= {"payload.mass", "friction_velocity"}
    assert "friction_smoothing" not in {p.name for p in PARAMETERS}


@pytest.mark.parametrize("field, value, reason", [
    ("command_source", "torque", "command_source must be one of none, gravity, computed"),
    ("payload_inertia", [1.0, 0.0, 0.0, -1.0, 0.0, 1.0], "payload.inertia must be positive semi-definite"),
    ("kp", [], "kp must be a number or one number per output joint"),
    ("kd", [1.0, -2.0], "kd must be non-negative"),
    ("joints", ["a", "b", "a"], "joints has duplicate names"),
    ("friction_velocity", 0.0, "friction_velocity must be a finite number >= 1e-09"),
    ("gravity", [0.0, "x", 1.0], "gravity must be a list of numbers"),
])
def test_bad_values_are_refused_with_the_reason(field, value, reason):
    with pytest.raises(ValueError, match=reason):
        coerce_setting(field, value)


def test_make_plan_orders_gains_payload_and_mimic(arm):
    plan = make_plan(arm, Settings(joints=("arm7_joint3", "arm7_joint1"), kp=(4.0, 9.0), kd=(1.0,),
                                      payload_link="arm7_hand", payload_mass=2.0))
    index = {n: i for i, n in enumerate(arm.joint_names)}
    assert plan.names == ["arm7_joint3", "arm7_joint1"] and not plan.full
    np.testing.assert_array_equal(plan.out, [index["arm7_joint3"], index["arm7_joint1"]])
    assert plan.kp[index["arm7_joint3"]] == 4.0 and plan.kp[index["arm7_joint1"]] == 9.0
    assert plan.kd[index["arm7_joint3"]] == 1.0 and plan.kd[index["arm7_joint2"]] == 0.0  # not an output
    np.testing.assert_allclose(rd.gravity_torques(plan.model, np.zeros(arm.nv)),
                               rd.gravity_torques(arm.with_payload("arm7_hand", 2.0, (0, 0, 0), (0.0,) * 6),
                                                  np.zeros(arm.nv)))
    assert "arm7_finger_joint2" in plan.mimic and plan.state_timeout_ns == 100 * MS
    assert make_plan(arm, Settings()).full
    with pytest.raises(ValueError, match="kp has 2 values; give one, or one per output joint"):
        make_plan(arm, Settings(kp=(1.0, 2.0)))
    with pytest.raises(ValueError, match="payload.link 'nowhere' is not a link"):
        make_plan(arm, Settings(payload_link="nowhere"))
    with pytest.raises(ValueError, match="mimic another joint"):
        make_plan(arm, Settings(joints=("arm7_finger_joint2",)))


def test_servo_terms_feed_the_computed_torque_law(two_link):
    plan = make_plan(two_link, Settings(kp=(100.0,), kd=(20.0,)))
    q, qd = np.array([0.4, -0.7]), np.array([0.3, -1.2])
    # the continuous shoulder's target 2 pi - 0.1 ahead is 0.1 behind; the elbow's is not wrapped
    desired = Desired(np.array([0.5, -0.25]), None, np.array([q[0] + 2 * np.pi - 0.1, q[1] + 0.2]), 0, "t")
    qdd_d, e, ed = servo_terms(plan, desired, q, qd)
    np.testing.assert_allclose(e, [-0.1, 0.2], atol=1e-12)
    np.testing.assert_array_equal(ed, -qd)  # qd_d not given: 0
    tau = control.computed_torque(rd.mass_matrix(two_link, q), rd.bias_forces(two_link, q, qd), qdd_d, e, ed,
                                  plan.kp, plan.kd)
    np.testing.assert_allclose(tau, rd.inverse_dynamics(two_link, q, qd, qdd_d + 100.0 * e + 20.0 * ed), atol=1e-12)
    # a subset of output joints: the others get no acceleration at all
    plan = make_plan(two_link, Settings(joints=("elbow",)))
    qdd_d, e, ed = servo_terms(plan, Desired(np.array([1.0]), np.array([0.5]), None, 0, "t"), q, qd)
    np.testing.assert_array_equal(qdd_d, [0.0, 1.0])
    np.testing.assert_array_equal(e, [0.0, 0.0])
    np.testing.assert_array_equal(ed, [0.0, 0.5 - qd[1]])


def test_joint_states_are_merged_by_name_and_checked(arm):
    plan = make_plan(arm, Settings(state_timeout=0.1))
    state = JointStateMerger(plan)
    assert (state.q_ns == NEVER).all() and "position never received for" in state.missing(state.q_ns, 0, "position")
    arm_names = [n for n in arm.joint_names if "finger" not in n]
    fresh, warning = state.update(arm_names, list(np.arange(7.0) / 10), [], [], 5 * MS)
    assert fresh and warning == ""
    assert state.missing(state.q_ns, 5 * MS, "position") == "position never received for ['arm7_finger_joint1']"
    fresh, warning = state.update(["arm7_finger_joint1", "other_robot_joint"], [0.02, 9.0], [0.1, 0.0], [], 6 * MS)
    assert fresh and state.missing(state.q_ns, 6 * MS, "position") == ""
    assert state.q[arm.joint_names.index("arm7_finger_joint1")] == 0.02
    assert state.qd[arm.joint_names.index("arm7_finger_joint1")] == 0.1
    assert "older than state_timeout 0.1 s for" in state.missing(state.q_ns, 200 * MS, "position")
    # a mimic finger that disagrees with its master is reported, not used
    fresh, warning = state.update(["arm7_finger_joint2"], [0.03], [], [], 7 * MS)
    assert not fresh and "arm7_finger_joint2=0.03 (expected 0.02)" in warning
    before = state.q.copy()
    for names, position, velocity, effort, reason in [
        (["arm7_joint1", "arm7_joint1"], [0.0, 0.0], [], [], "duplicate joint names"),
        (["arm7_joint1"], [0.0, 1.0], [], [], "1 names but 2 positions"),
        (["arm7_joint1", "arm7_joint2"], [0.0, math.nan], [], [], r"non-finite position of \['arm7_joint2'\]"),
        (["arm7_joint1"], [0.5], [math.inf], [], r"non-finite velocity of \['arm7_joint1'\]"),
    ]:
        with pytest.raises(Rejected, match=reason):
            state.update(names, position, velocity, effort, 8 * MS)
    np.testing.assert_array_equal(state.q, before)  # a rejected message changes nothing
    fresh, _ = state.update(["other_robot_joint"], [1.0], [], [], 9 * MS)
    assert not fresh  # nothing of this robot: no output
    # a new model keeps what it can, by name
    smaller = make_plan(arm, Settings(joints=("arm7_joint2",)))
    kept = JointStateMerger(smaller, state)
    np.testing.assert_array_equal(kept.q, state.q)


def test_desired_inputs_are_put_in_output_order_and_checked(arm):
    plan = make_plan(arm, Settings(joints=("arm7_joint2", "arm7_joint1")))
    desired = desired_accelerations([1.0, 2.0], plan, 3)
    assert list(desired.qdd) == [1.0, 2.0] and desired.q is None and desired.received_ns == 3
    with pytest.raises(Rejected, match=r"3 values, expected 2 \(one per output joint"):
        desired_accelerations([1.0, 2.0, 3.0], plan, 0)
    with pytest.raises(Rejected, match=r"non-finite acceleration of \['arm7_joint1'\]"):
        desired_accelerations([1.0, math.nan], plan, 0)
    reader = DesiredStateReader(plan)
    desired = reader.read(["arm7_joint1", "arm7_joint3", "arm7_joint2"], [Point(positions=[0.1, 0.3, 0.2])], 4)
    assert list(desired.q) == [0.2, 0.1] and desired.qd is None and list(desired.qdd) == [0.0, 0.0]
    for names, points, reason in [
        (["arm7_joint1"], [Point(positions=[0.1])], r"joints \['arm7_joint2'\] missing"),
        (["arm7_joint1", "arm7_joint1"], [Point()], "duplicate joint names"),
        (["arm7_joint1", "arm7_joint2"], [Point(), Point()], "2 points, expected exactly one"),
        (["arm7_joint1", "arm7_joint2"], [Point(velocities=[0.0])], "1 velocities for 2 joint names"),
        (["arm7_joint1", "arm7_joint2"], [Point(accelerations=[0.0, math.inf])], "non-finite accelerations"),
        (["arm7_joint1", "arm7_joint2"], [Point()], "the point has no positions, velocities or accelerations"),
    ]:
        with pytest.raises(Rejected, match=reason):
            reader.read(names, points, 0)


def test_name_list_caches_are_bounded(two_link):
    """Publishers whose joint-name lists keep changing don't grow the node's memory."""
    plan = make_plan(two_link, Settings())
    state, reader = JointStateMerger(plan), DesiredStateReader(plan)
    for i in range(3 * MAX_CACHED_NAME_LISTS):
        names = ["shoulder", "elbow", f"other{i}"]
        desired = reader.read(names, [Point(accelerations=[0.0] * 3)], i)
        fresh, _ = state.update(names, [0.1, 0.2, 0.0], [0.0] * 3, [], i)
        assert desired is not None and fresh  # (the messages were used)
    assert len(reader._orders) <= MAX_CACHED_NAME_LISTS + 1
    assert len(state._maps) <= MAX_CACHED_NAME_LISTS + 1


def test_joint_states_of_joints_coupled_to_several_coordinates_are_checked_not_used():
    """The five-bar's cut joints (q3 = q1 - q2, q4 = q2 - q1 + pi) may come in joint_states: a value that
    disagrees with its coordinates is reported, one that agrees passes silently, neither is used."""
    five_bar = rd.load_urdf("five_bar")
    plan = make_plan(five_bar, Settings(state_timeout=0.1))
    assert plan.mimic == {"q3": (((0, 1.0), (1, -1.0)), 0.0), "q4": (((1, 1.0), (0, -1.0)), math.pi)}
    state = JointStateMerger(plan)
    fresh, warning = state.update(["q1", "q2", "q3", "q4"], [0.5, 0.2, 0.3, 0.2 - 0.5 + math.pi], [], [], 5 * MS)
    assert fresh and warning == ""
    np.testing.assert_array_equal(state.q, [0.5, 0.2])
    fresh, warning = state.update(["q3", "q4"], [0.4, 0.0], [], [], 6 * MS)
    assert not fresh and "q3=0.4 (expected 0.3)" in warning and "q4=0 (expected 2.842)" in warning
    fresh, warning = state.update(["q3"], [0.4], [], [], 300 * MS)  # its coordinates are stale: no verdict
    assert warning == ""
