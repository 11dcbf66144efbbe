"""The contact outputs' inputs and their visibility (issue 31 items 3, 5, 7): efforts judged by the one
plausibility rule (a sample beyond it refused, said, never fed to the observer or the detector), the
estimate itself judged before it is published or detected, publishers stamping by different clocks
refused by name instead of giving invented zeros, and a latched gravity hold visible in /diagnostics
whatever is switched off until ~/reset_collision.

The logic without ROS (EffortTracker, StampClocks), then a dynamics node in this process
(test/in_process.py): two_link held still at Q with the holding torque g(Q) minus an external torque.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.nodes.dynamics.external_torque_plan import EffortTracker, StampClocks
from robot_dynamics.nodes.common.parameters import Rejected
from robot_dynamics.nodes.common.safety import Plausibility
from robot_dynamics.tools.benchmarks.robots import panda7_urdf

NAMES = ["shoulder", "elbow"]
Q = np.array([0.4, -0.7])


@pytest.fixture(scope="module")
def model():
    return rd.load_urdf(rd.examples.TWO_LINK_URDF)


def test_efforts_beyond_the_rule_are_refused_whole_and_named():
    panda = rd.load_urdf(panda7_urdf())
    rule = Plausibility(panda)
    tracker = EffortTracker(panda.joint_names, rule)
    names = list(panda.joint_names)
    good = np.linspace(-10.0, 10.0, 7)
    tracker.update(names, good, 1)
    np.testing.assert_array_equal(tracker.effort, good)
    for value, text in ((1e300, "panda_joint2=1e+300"), (1e6, "panda_joint2=1e+06"), (math.nan, "non-finite effort of ['panda_joint2']")):
        bad = 2 * good
        bad[1] = value
        with pytest.raises(Rejected, match="refused") as info:
            tracker.update(names, bad, 2)
        assert text in str(info.value)
        np.testing.assert_array_equal(tracker.effort, good)  # nothing of the message merged
        assert (tracker.effort_ns == 1).all()
    assert 1e6 > rule.torque[1]  # (the bound the 1e6 N m sample is beyond: 1000 times the torque scale)


def test_stamp_clocks_tell_mixed_clocks_from_one_clock():
    clocks = StampClocks(0.1)
    arm, gripper = ["a1", "a2"], ["finger"]
    now = 5_000_000_000
    wall = 1795724745.6
    for k in range(10):  # one clock, two publishers, a few ms of latency
        assert clocks.problem(arm, wall + 0.002 * k, now + 2_000_000 * k + 300_000) == ""
        assert clocks.problem(gripper, wall + 0.002 * k - 0.001, now + 2_000_000 * k + 900_000) == ""
    text = clocks.problem(gripper, 12.5, now + 25_000_000)  # the gripper now by simulated time
    assert "stamped by different clocks: ['finger'] at 12.500 s, ['a1', 'a2'] at 1795724745.618 s" in text
    # the arm gone quiet for longer than the timeout: the gripper's clock alone is fine
    assert clocks.problem(gripper, 12.7, now + 300_000_000) == ""


rclpy = pytest.importorskip("rclpy")
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from in_process import Fed  # noqa: E402


@pytest.fixture
def fed():
    made = []

    def make(**params):
        made.append(Fed({"external_torque.enabled": True, **params}))
        node = made[-1]
        node.torques = node.record(node.node._external_torque._publishers[0],  # (published serialized)
                                   lambda m: np.array(deserialize_message(m, JointState).effort))
        node.flags = node.record(node.node._external_torque._publishers[2], lambda m: m.data)
        node.record(node.node._external_torque._publishers[1])
        return node

    yield make
    for f in made:
        f.close()


def held(node, model, seconds, push=(0.0, 0.0), bad=None, **state):
    """States at rest at Q every 5 ms of stamp time for ``seconds``, measured effort g(Q) - push (the
    external torque is ``push``); ``bad``: ``(k, effort)`` replaces the effort of the k-th."""
    effort = rd.gravity_torques(model, Q) - np.asarray(push)
    for k in range(int(seconds / 0.005)):
        node.state(q=Q, qd=(0.0, 0.0), effort=bad[1] if bad and k == bad[0] else effort, **state)


@pytest.mark.parametrize("glitch", [1e300, 1e6])
def test_a_one_sample_effort_glitch_is_refused_and_changes_nothing(fed, model, glitch):
    """Issue 31 item 3: one sample of 1e300 (or 1e6 N m) put 2.35e299 on external_torques and latched the
    collision and its gravity hold for 13.8 s; it is refused by name, the estimate stays at the truth."""
    node = fed(command_source="gravity", **{"collision.thresholds": [5.0, 5.0], "collision.reaction": "gravity"})
    held(node, model, 0.5, bad=(50, [0.0, glitch]))
    assert node.torques and np.abs(node.torques).max() < 1e-6
    assert True not in node.flags and not node.node._external_torque.latched
    assert node.said(f"efforts above 1000 times the joint's torque scale: elbow={glitch:.4g}")


def test_a_constant_absurd_effort_gives_no_output_and_no_flips(fed, model):
    node = fed(**{"collision.thresholds": [5.0, 5.0]})
    held(node, model, 0.2)
    count = len(node.torques)
    effort = rd.gravity_torques(model, Q)
    for _ in range(100):
        node.state(q=Q, qd=(0.0, 0.0), effort=[1e308, effort[1]])
    assert len(node.torques) == count and True not in node.flags
    assert len(node.said("efforts above 1000 times")) == 1  # (throttled, not a line per message)


def test_mixed_clocks_are_refused_by_name_instead_of_invented_zeros(fed, model):
    """Issue 31 item 5: the shoulder stamped by wall time, the elbow by another clock, a 20 N m push on the
    elbow: no external torques (748 exact zeros before) and a clear error; with one clock the same split
    estimates the push."""
    push = np.array([0.0, 20.0])
    effort = rd.gravity_torques(model, Q) - push
    node = fed(**{"collision.thresholds": [5.0, 5.0]})
    t = 1795724745.6
    for k in range(200):
        t += 0.005
        node.state(q=Q[:1], qd=(0.0,), effort=effort[:1], names=NAMES[:1], stamp=t)
        node.state(q=Q[1:], qd=(0.0,), effort=effort[1:], names=NAMES[1:], stamp=0.005 * k + 3.0)
    assert not node.torques and True not in node.flags
    said = node.said("no external torques: joint_states stamped by different clocks: ['elbow'] at 3.000 s, "
                     "['shoulder'] at 1795724745.605 s")
    assert said and "stamp every joint_states publisher with the same clock" in said[0]
    same = fed(**{"collision.thresholds": [5.0, 5.0]})
    for k in range(200):
        t += 0.005
        same.state(q=Q[:1], qd=(0.0,), effort=effort[:1], names=NAMES[:1], stamp=t)
        same.state(q=Q[1:], qd=(0.0,), effort=effort[1:], names=NAMES[1:], stamp=t + 0.001)
    np.testing.assert_allclose(same.torques[-1], push, atol=1e-3)
    assert same.flags[-1] is True


def test_another_robots_joint_states_on_another_clock_change_nothing(fed, model):
    """Joint states of joints the model does not have (a second robot on the topic) stamped by another
    clock are not a clock of this robot's: the estimate goes on."""
    push = np.array([0.0, 20.0])
    effort = rd.gravity_torques(model, Q) - push
    node = fed()
    t = 1795724745.6
    for k in range(200):
        t += 0.005
        node.state(q=Q, qd=(0.0, 0.0), effort=effort, stamp=t)
        node.state(q=(1.0,), qd=(0.0,), effort=(3.0,), names=["other_robot_joint"], stamp=0.005 * k)
    np.testing.assert_allclose(node.torques[-1], push, atol=1e-3)


def latched(fed, model):
    node = fed(command_source="computed", **{"collision.thresholds": [5.0, 5.0], "collision.reaction": "gravity"})
    node.desired(positions=Q + 0.1)  # (the law's torque is not g(Q))
    held(node, model, 0.3, push=(0.0, 20.0))
    assert node.flags[-1] is True and node.node._external_torque.latched
    return node


def contact_text(node):
    status = node.status("external_torque")
    return status.message if status is not None else None


def test_a_latched_hold_stays_visible_whatever_is_switched_off(fed, model):
    """Issue 31 item 7: thresholds emptied and the estimate switched off while the hold is latched: it
    kept holding with no contact status at all; reaction none read 'collision on {}'."""
    node = latched(fed, model)
    node.node.set_parameters([Parameter("collision.reaction", value="none")])
    held(node, model, 0.05)
    text = contact_text(node)
    assert "collision on {'elbow'" in text and "effort_command holds gravity until ~/reset_collision" in text
    results = node.node.set_parameters([Parameter("collision.thresholds", Parameter.Type.DOUBLE_ARRAY, []),
                                        Parameter("external_torque.enabled", value=False)])
    assert all(r.successful for r in results), [r.reason for r in results]
    node.desired(positions=Q + 0.1)
    held(node, model, 0.05)
    text = contact_text(node)
    assert text is not None and "collision on {'elbow'" in text and "until ~/reset_collision" in text
    assert node.status("external_torque").level == b"\x01"
    np.testing.assert_allclose(node.commands[-1], rd.gravity_torques(model, Q), atol=1e-12)
    answer = node.node._external_torque._on_reset(Trigger.Request(), Trigger.Response())
    assert answer.success and "released" in answer.message
    assert contact_text(node) is None  # off, and nothing holds
    node.desired(positions=Q + 0.1)
    held(node, model, 0.01)
    assert np.abs(node.commands[-1] - rd.gravity_torques(model, Q)).max() > 1.0  # the law again


def test_an_estimate_beyond_the_rule_is_neither_published_nor_detected(fed, model):
    """The outputs obey the inputs' rule: an observer that answered 1e300 (or NaN) publishes nothing and
    flags no collision (the guard behind the input checks)."""
    node = fed(command_source="gravity", **{"collision.thresholds": [5.0, 5.0], "collision.reaction": "gravity"})
    held(node, model, 0.1)
    count = len(node.torques)
    observer = node.node._external_torque._observer
    for absurd in (np.array([0.0, 1e300]), np.array([np.nan, 0.0])):
        observer.update = lambda t, q, qd, tau, data=None, r=absurd: r.copy()
        held(node, model, 0.05)
    assert len(node.torques) == count and True not in node.flags and not node.node._external_torque.latched
    assert node.said("not publishing external torques: not plausible: torques above 1000 times")
