"""Two dynamics nodes in this process, one with a feature switched on, fed the same messages through their
callbacks in alternating rounds: what a feature costs the node per message (``bench contact``,
``bench ft_sensor``). rclpy must be initialised."""

from __future__ import annotations

import time


def dynamics_node_pair(urdf, feature_parameters, name):
    """``(without, with, executor)``: two dynamics nodes on ``urdf`` (``command_source: gravity``, no
    subscriber: each computes only the command), the second with ``feature_parameters`` ({name: value}),
    their model installed."""
    import rclpy
    from rclpy.parameter import Parameter

    from robot_dynamics.nodes.dynamics.node import DynamicsNode

    common = [Parameter("robot_description", value=urdf), Parameter("command_source", value="gravity")]
    without = DynamicsNode(f"bench_{name}_without", parameter_overrides=common)
    with_feature = DynamicsNode(f"bench_{name}_with", parameter_overrides=common + [
        Parameter(key, value=value) for key, value in feature_parameters.items()])
    executor = rclpy.executors.SingleThreadedExecutor()
    for node in (without, with_feature):
        executor.add_node(node)
    deadline = time.monotonic() + 60.0
    while (without._plan is None or with_feature._plan is None) and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    if without._plan is None or with_feature._plan is None:
        raise RuntimeError("the dynamics nodes did not load the model")
    return without, with_feature, executor


def alternating_rounds(without, with_feature, messages, rounds, callback_us):
    """``(base, extra)``: ``callback_us(node, messages)`` of each node, ``rounds`` times in alternation
    (after a warm-up of 200 messages each), so that both see the same load."""
    callback_us(without, messages[:200])
    callback_us(with_feature, messages[:200])
    base, extra = [], []
    for _ in range(rounds):
        base.append(callback_us(without, messages))
        extra.append(callback_us(with_feature, messages))
    return base, extra


def close_pair(without, with_feature, executor):
    executor.shutdown()
    without.destroy_node()
    with_feature.destroy_node()
