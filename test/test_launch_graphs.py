"""The node graphs of launch/*.launch.py, started without ``ros2 launch``.

``launch``/``launch_ros`` are not installable from PyPI, so test/test_launch.py skips here. These
tests start the same executables with the same config/*.yaml files and the same wiring
(``robot_dynamics.tools.graph`` started by ``robot_dynamics.tools.processes``, as ``robot-dynamics
demo`` does), the URDF passed through a params file, and check that torques and joint states flow. They also prove the YAML files right:
every parameter a YAML file sets is a parameter of its node with that value, and every parameter a
node declares is documented in its YAML file.
"""

import os
import re
import uuid

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy is not installed (pip install .[ros])")
yaml = pytest.importorskip("yaml")

from rcl_interfaces.srv import ListParameters  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.tools import graph as graphs, processes  # noqa: E402
from robot_dynamics.description.robots import bundled_urdf  # noqa: E402

from ros_helpers import RosHarness, publish_until, wait_until  # noqa: E402

#: Parameters every rclpy node has; not ours to document.
GENERIC = re.compile(r"^(use_sim_time|start_type_description_service|qos_overrides\..*)$")
START_TIMEOUT = 45.0  # s: Python node start-up + model load + discovery on a busy 2-core machine


@pytest.fixture
def graph(tmp_path):
    """Start a graph (list of (name, argv)); at teardown stop everything and check each node exited cleanly."""
    started = []
    env = processes.ros_environment(domain_id=os.environ["ROS_DOMAIN_ID"])

    def start(nodes, namespace):
        started.extend(processes.start_graph(nodes, env, tmp_path / "logs", namespace=namespace))
        return started

    yield start
    statuses = processes.stop_all(started)
    unclean = [f"--- {process.name} exited with {statuses[process.name]}:\n{process.log_tail(40)}"
               for process in started if statuses[process.name] != 0]
    assert not unclean, "a node did not shut down cleanly on SIGINT:\n" + "\n".join(unclean)


@pytest.fixture
def harness():
    ros = RosHarness(f"graph_probe_{uuid.uuid4().hex[:6]}")
    yield ros
    ros.close()


def check_yaml_against_node(harness, namespace, node):
    """Every YAML parameter exists on the node with the YAML's value (unless the graph overrides it);
    every node parameter is documented."""
    node_fqn, executable = f"{namespace}/{node.name}", node.executable
    path, = (layer for layer in node.parameters if not isinstance(layer, dict))
    text = path.read_text()
    values = yaml.safe_load(text)["/**"]["ros__parameters"]
    flat = {}

    def flatten(prefix, tree):
        for key, value in tree.items():
            if isinstance(value, dict):
                flatten(f"{prefix}{key}.", value)
            else:
                flat[f"{prefix}{key}"] = value

    flatten("", values)
    overridden = {name for layer in node.parameters if isinstance(layer, dict) for name in layer}
    names = sorted(set(flat) - overridden)
    actual = harness.get_parameters(node_fqn, names)
    for name, got in zip(names, actual):
        assert got is not None, f"{path.name} sets {name!r}, which {executable} does not declare"
        expected = flat[name]
        if isinstance(expected, list):
            assert list(got) == pytest.approx(expected) if all(isinstance(v, (int, float)) for v in expected) \
                else list(got) == expected, name
        else:
            assert got == pytest.approx(expected) if isinstance(expected, float) else got == expected, name
    declared = harness.call(ListParameters, f"{node_fqn}/list_parameters", ListParameters.Request()).result.names
    for name in declared:
        if GENERIC.match(name):
            continue
        assert re.search(rf"^\s*#?\s*{re.escape(name)}:", text, re.M), \
            f"{executable} parameter {name!r} is not documented in config/{path.name}"


# ------------------------------------------------------------------------------ dynamics.launch.py

def test_dynamics_graph_publishes_torques_from_joint_states(graph, harness, tmp_path):
    model = rd.load_urdf(bundled_urdf("arm7_gripper"))
    namespace = f"/graph_dyn_{uuid.uuid4().hex[:6]}"
    launched = graphs.dynamics_graph(bundled_urdf("arm7_gripper").read_text())
    nodes = graph(launched, namespace)
    gravity = harness.collect(JointState, f"{namespace}/gravity_torques")
    mass = harness.collect(Float64MultiArray, f"{namespace}/mass_matrix")
    states = harness.publisher(JointState, f"{namespace}/joint_states")
    harness.wait_for_subscriber(states, timeout=START_TIMEOUT)
    q = np.array([0.2, -0.7, 0.1, -2.2, 0.3, 1.4, 0.6, 0.015])
    names = list(reversed(model.joint_names))  # by name, in any order

    def publish():
        msg = JointState(name=names, position=q[::-1].tolist(), velocity=[0.0] * model.nv)
        msg.header.stamp = harness.node.get_clock().now().to_msg()
        states.publish(msg)

    msg = publish_until(publish, gravity, lambda m: len(m.effort) == model.nv, timeout=START_TIMEOUT,
                        what="gravity_torques")
    assert list(msg.name) == list(model.joint_names)
    np.testing.assert_allclose(msg.effort, rd.gravity_torques(model, q), rtol=1e-9, atol=1e-9)
    matrix = publish_until(publish, mass, lambda m: len(m.data) == model.nv**2, what="mass_matrix")
    np.testing.assert_allclose(np.reshape(matrix.data, (model.nv, model.nv)), rd.mass_matrix(model, q),
                               rtol=1e-9, atol=1e-12)
    check_yaml_against_node(harness, namespace, launched[0])
    assert all(node.running() for node in nodes)


# ---------------------------------------------------------------------------- simulation.launch.py

def test_simulation_graph_closes_the_computed_torque_loop(graph, harness, tmp_path):
    model = rd.load_urdf(bundled_urdf("arm7_gripper"))
    namespace = f"/graph_sim_{uuid.uuid4().hex[:6]}"
    # reliable and deep: the check below pairs messages of two 500 Hz topics, and the harness's
    # Python executor falls behind when both test workers run graphs at once
    deep = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    states = harness.collect(JointState, f"{namespace}/joint_states", qos=deep)
    torques = harness.collect(JointState, f"{namespace}/computed_torques", qos=deep)
    launched = graphs.simulation_graph(bundled_urdf("arm7_gripper").read_text())
    nodes = graph(launched, namespace)
    torques.wait_for(timeout=START_TIMEOUT, what="computed_torques")
    wait_until(lambda: len(torques.messages) >= 300 and len(states.messages) >= 200, 30.0,
               "300 computed_torques and 200 joint_states (the harness may drop some when the machine is busy)")
    last_states = states.messages[-200:]
    assert len(last_states) == 200
    for msg in last_states:
        assert set(model.joint_names) <= set(msg.name)
        assert np.all(np.isfinite(msg.position)) and np.all(np.isfinite(msg.velocity))
    for msg in torques.messages[-200:]:
        assert list(msg.name) == list(model.joint_names) and np.all(np.isfinite(msg.effort))
    # closed loop: each computed torque answers a joint state of the simulator, whose stamp it
    # carries. The harness may miss joint states when the machine is busy (its Python executor
    # falls behind two 500 Hz topics) and receives them later than the torques answering them: so
    # it waits for the newest answered state, and a torque whose state it missed must fall in a gap
    # of the received stamps. A node stamping with its own clock would land between two received
    # states of a regular stretch and fail.
    def stamp_ns(msg):
        return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec

    answers = [stamp_ns(m) for m in torques.messages[-200:]]
    wait_until(lambda: stamp_ns(states.messages[-1]) >= answers[-1], 10.0,
               "the joint state answered by the last computed torque")
    received = np.array(sorted({stamp_ns(m) for m in states.messages}))
    # the harness's joint_states subscription may match the simulator after its computed_torques one did:
    # an answer older than the first state received cannot be checked
    answers = np.array(answers)[np.array(answers) >= received[0]]
    # the publishing period: the smallest step between received stamps (the simulator stamps its states on
    # its exact time grid; a median would double when the harness misses every other state)
    period = np.diff(received).min()
    after = np.searchsorted(received, answers)
    next_received, last_received = received[np.minimum(after, len(received) - 1)], received[np.maximum(after - 1, 0)]
    matched = next_received == answers
    in_gap = (after > 0) & (after < len(received)) & (next_received - last_received > 1.5 * period)
    assert np.all(matched | in_gap), f"computed torques stamped off the joint_states stamps: {answers[~(matched | in_gap)]}"
    assert matched.sum() >= 50, f"only {matched.sum()} of {len(answers)} computed torques matched a received joint state"
    for node in launched:
        check_yaml_against_node(harness, namespace, node)
    assert all(node.running() for node in nodes)
