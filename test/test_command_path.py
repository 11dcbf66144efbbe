"""effort_command never goes silent while joint states arrive (issue 31 item 6): every refusal on its
path falls back to the gravity hold g(q), saturated, said once; one place decides
(:mod:`robot_dynamics.nodes.dynamics.command_path`).

The decision without ROS, then a dynamics node in this process fed by calling its joint_states and
desired callbacks directly (deterministic: no DDS between the test and the node), its publishers'
``publish`` recorded.
"""

from __future__ import annotations


import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.nodes.dynamics.command_path import HOLD, CommandPath
from robot_dynamics.nodes.dynamics.plan import Settings, make_plan

NAMES = ["shoulder", "elbow"]
Q, QD = np.array([0.4, -0.7]), np.array([0.3, -1.2])


@pytest.fixture(scope="module")
def model():
    return rd.load_urdf(rd.examples.TWO_LINK_URDF)


def test_the_decision_holds_gravity_for_every_refusal_and_says_it_once(model):
    plan = make_plan(model, Settings(command_source="computed"))
    g = rd.gravity_torques(model, Q)
    law = g + np.array([1.0, -2.0])
    path = CommandPath()
    first = path.decide(plan, "computed", law, g, (("collision", ""), ("tracking", "")))
    np.testing.assert_array_equal(first.torque, law)
    assert first.carries == "computed" and first.reason == "" and first.changed
    for refusals, kind in (((("collision", "latched"),), "collision"), ((("velocity", "no velocity"),), "velocity"),
                           ((("desired", ""), ("tracking", "too far")), "tracking")):
        held = path.decide(plan, "computed", law, g, refusals)
        np.testing.assert_array_equal(held.torque, g)
        assert held.carries == HOLD and held.reason == dict(refusals)[kind] and path.kind == kind and held.changed
        again = path.decide(plan, "computed", law, g, refusals)
        assert not again.changed  # said once
    for bad in (None, np.array([1e12, 0.0]), np.array([np.nan, 0.0])):  # no torque, beyond the rule, NaN
        held = path.decide(plan, "computed", bad, g, ())
        np.testing.assert_array_equal(held.torque, g)
        assert held.reason.startswith("computed torques refused")
    # gravity as the law ignores the refusals; an absurd g(q) publishes nothing
    assert path.decide(plan, "gravity", None, g, (("desired", "stale"),)).reason == ""
    nothing = path.decide(plan, "task_space", None, np.array([1e300, 0.0]), (("desired", "none"),))
    assert nothing.torque is None and "gravity hold is not plausible" in nothing.reason


def test_the_decision_saturates_the_law_and_the_hold(model):
    """two_link's effort limits are 100 N m: a law of 150 and a hold of -150 (a 10 kg payload's) are clipped."""
    plan = make_plan(model, Settings())
    np.testing.assert_array_equal(plan.effort_limit, [100.0, 100.0])
    path = CommandPath()
    decision = path.decide(plan, "computed", np.array([150.0, 20.0]), np.array([-150.0, -150.0]), ())
    np.testing.assert_array_equal(decision.torque, [100.0, 20.0])
    assert decision.saturated == ["shoulder"]
    decision = path.decide(plan, "computed", np.array([150.0, 20.0]), np.array([-150.0, -150.0]), (("desired", "x"),))
    np.testing.assert_array_equal(decision.torque, [-100.0, -100.0])
    assert decision.saturated == NAMES


rclpy = pytest.importorskip("rclpy")
from std_msgs.msg import Float64MultiArray  # noqa: E402

from in_process import Fed  # noqa: E402


@pytest.fixture
def fed():
    made = []

    def make(**params):
        made.append(Fed(params))
        return made[-1]

    yield make
    for f in made:
        f.close()


def gravity(model, q=Q):
    return rd.gravity_torques(model, np.asarray(q))


def test_stale_desired_state_holds_gravity(fed, model):
    """(a, without the collision) computed, desired_state stops: the gravity hold, said once."""
    node = fed(command_source="computed", desired_timeout=0.05)
    node.desired(positions=Q)
    first = node.state()
    assert first is not None and not np.allclose(first, gravity(model))  # the law: M kd (0 - qd) + h
    node.wait(0.1)
    sent, states = node.stream(0.3)
    assert sent == states
    np.testing.assert_allclose(node.commands[-1], gravity(model), atol=1e-12)
    assert len(node.said("desired_state is stale")) == 1 and "effort_command holds gravity" in node.said("stale")[0]
    node.desired(positions=Q)
    node.state()
    assert node.said("effort_command carries computed again")


def test_no_desired_input_yet_holds_gravity(fed, model):
    node = fed(command_source="computed")
    sent, states = node.stream(0.1)
    assert sent == states
    np.testing.assert_allclose(node.commands[-1], gravity(model), atol=1e-12)
    assert node.said("no desired input yet")


def test_absurd_desired_accelerations_hold_gravity(fed, model):
    """(b) accelerations of 1e6 and 1e12: computed_torques refused, effort_command the gravity hold."""
    node = fed(command_source="computed")
    for qdd in (1e6, 1e12):
        node.node._on_desired_accelerations(Float64MultiArray(data=[qdd, qdd]))
        sent, states = node.stream(0.05)
        assert sent == states
        np.testing.assert_allclose(node.commands[-1], gravity(model), atol=1e-12)
    assert node.said("computed_torques not plausible: torques above 1000 times")


def test_position_only_joint_states_hold_gravity(fed, model):
    """(c) no velocities: the law cannot run, the hold goes on (it needs positions only)."""
    node = fed(command_source="computed")
    node.desired(positions=Q)
    sent, states = node.stream(0.3, qd=None)
    assert sent == states
    np.testing.assert_allclose(node.commands[-1], gravity(model), atol=1e-12)
    assert node.said("velocity never received")


def test_a_latched_reaction_holds_gravity_when_the_desired_input_stops(fed, model):
    """(a) the gravity reaction latched, then desired_state stops: g(q) until ~/reset_collision."""
    node = fed(command_source="computed", desired_timeout=0.05)
    node.node._external_torque._latched = True  # (what a collision with reaction gravity leaves; test_contact_nodes makes one)
    node.desired(positions=Q)
    np.testing.assert_allclose(node.state(), gravity(model), atol=1e-12)
    node.wait(0.1)
    sent, states = node.stream(0.2)
    assert sent == states
    np.testing.assert_allclose(node.commands[-1], gravity(model), atol=1e-12)
    assert node.said("collision reaction gravity latched")


def test_a_large_position_error_holds_gravity(fed, model):
    node = fed(command_source="computed", max_position_error=0.5)
    node.desired(positions=Q + np.array([0.0, 2.0]))
    np.testing.assert_allclose(node.state(), gravity(model), atol=1e-12)
    assert node.said("position error 2 of 'elbow' beyond max_position_error 0.5: effort_command holds gravity")


def test_task_space_without_target_holds_gravity(fed, model):
    node = fed(command_source="task_space", **{"task_space.frame": "tip", "task_space.directions": ["x", "z"]})
    sent, states = node.stream(0.05)
    assert sent == states
    np.testing.assert_allclose(node.commands[-1], gravity(model), atol=1e-12)
    assert node.said("effort_command holds gravity")


def test_task_space_without_velocities_holds_gravity(fed, model):
    node = fed(command_source="task_space", **{"task_space.frame": "tip", "task_space.directions": ["x", "z"]})
    sent, states = node.stream(0.2, qd=None)
    assert sent == states
    np.testing.assert_allclose(node.commands[-1], gravity(model), atol=1e-12)


def test_the_hold_is_in_diagnostics(fed, model):
    node = fed(command_source="computed")
    node.stream(0.05)
    outputs = node.status("outputs")
    assert "no desired input yet" in outputs.message and "effort_command holds gravity" in outputs.message
    assert outputs.level == b"\x01"  # WARN


def test_an_unexpected_failure_of_the_computation_holds_gravity(fed, model):
    """A bug in the law (here the computed-torque law raising) never silences effort_command: the gravity
    hold of the measured state, and the failure said."""
    from robot_dynamics.control import laws

    node = fed(command_source="computed")
    node.desired(positions=Q)
    assert not np.allclose(node.state(), gravity(model))
    original = laws.computed_torque
    laws.computed_torque = lambda *args: (_ for _ in ()).throw(RuntimeError("a bug"))
    try:
        count = len(node.commands)
        node.state(q=Q + 0.1)
    finally:
        laws.computed_torque = original
    assert len(node.commands) == count + 1
    np.testing.assert_allclose(node.commands[-1], gravity(model, Q + 0.1), atol=1e-12)
    assert node.said("the computation failed: RuntimeError('a bug')")
