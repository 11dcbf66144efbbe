"""The dynamics node computes and publishes only what someone listens to: the node in this process
(its plan's workspace is then visible), a probe node subscribing to one output after another."""

from __future__ import annotations

import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")
from rclpy.context import Context  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

import robot_dynamics as rd  # noqa: E402

NAMESPACE = "/listeners"


@pytest.fixture
def rig():
    from robot_dynamics.nodes.dynamics.node import DynamicsNode

    context = Context()
    rclpy.init(context=context)
    xml = rd.examples.TWO_LINK_URDF
    node = DynamicsNode(context=context, namespace=NAMESPACE, parameter_overrides=[
        Parameter("robot_description", value=xml), Parameter("state_timeout", value=30.0)])
    probe = rclpy.create_node("probe", context=context, namespace=NAMESPACE)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(probe)

    def spin_until(condition, what, timeout=15.0):
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            executor.spin_once(timeout_sec=0.05)

    yield node, probe, spin_until, rd.load_urdf(xml)
    executor.shutdown()
    probe.destroy_node()
    node.destroy_node()
    rclpy.shutdown(context=context)


def test_outputs_nobody_listens_to_are_neither_computed_nor_published(rig):
    node, probe, spin_until, model = rig
    gravity, mass, bias = [], [], []
    probe.create_subscription(JointState, "gravity_torques", gravity.append, 10)
    states = probe.create_publisher(JointState, "joint_states", 10)
    spin_until(lambda: node._plan is not None and states.get_subscription_count() > 0
               and node._pub_gravity.get_subscription_count() > 0, "the node and the graph")

    def answer(q, qd, into):
        """Publish the state (every 0.2 s, best effort) until ``into`` receives a new message."""
        received = len(into)
        msg = JointState(name=list(model.joint_names), position=list(q), velocity=list(qd))
        for _ in range(50):
            states.publish(msg)
            try:
                return spin_until(lambda: len(into) > received, "an answer", timeout=0.2)
            except AssertionError:
                pass
        raise AssertionError("no answer")

    data = node._plan.data
    q, qd = np.array([0.3, -0.7]), np.array([0.5, 1.5])
    answer(q, qd, gravity)
    np.testing.assert_allclose(gravity[-1].effort, rd.gravity_torques(model, q), atol=1e-12)
    assert not data.M.any() and not data.h.any()  # nobody listens to the mass matrix, bias or computed torques

    probe.create_subscription(Float64MultiArray, "mass_matrix", mass.append, 10)
    spin_until(lambda: node._pub_mass.get_subscription_count() > 0, "the mass_matrix subscription")
    q = np.array([-1.1, 0.4])
    answer(q, qd, mass)
    np.testing.assert_allclose(data.M, rd.mass_matrix(model, q), atol=1e-12)
    np.testing.assert_allclose(np.reshape(mass[-1].data, (2, 2)), rd.mass_matrix(model, q), atol=1e-12)
    assert not data.h.any()

    probe.create_subscription(JointState, "bias_torques", bias.append, 10)
    spin_until(lambda: node._pub_bias.get_subscription_count() > 0, "the bias_torques subscription")
    answer(q, qd, bias)
    np.testing.assert_allclose(bias[-1].effort, rd.bias_forces(model, q, qd), atol=1e-12)
    np.testing.assert_allclose(data.h, rd.bias_forces(model, q, qd), atol=1e-12)
