"""launch_pytest tests of launch/dynamics.launch.py and launch/simulation.launch.py.

They need a ROS 2 install (``launch``, ``launch_ros``, ``launch_pytest`` are not on PyPI) and skip
cleanly elsewhere; test/test_launch_graphs.py covers the same node graphs, started as plain
subprocesses with the same YAML files, on every machine.
"""

import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

launch_pytest = pytest.importorskip(
    "launch_pytest", reason="launch_pytest is not installed (it comes with a ROS 2 install, not from PyPI)")
launch = pytest.importorskip("launch", reason="ROS 2 'launch' is not installed")
pytest.importorskip("launch_ros", reason="ROS 2 'launch_ros' is not installed")
rclpy = pytest.importorskip("rclpy", reason="rclpy is not installed")

from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from launch_pytest.actions import ReadyToTest  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.robots import bundled_urdf  # noqa: E402

LAUNCH_DIR = Path(__file__).resolve().parents[1] / "launch"
TIMEOUT = 30.0


def include(launch_file, **arguments):
    return IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(LAUNCH_DIR / launch_file)),
        launch_arguments={k: str(v) for k, v in arguments.items()}.items(),
    )


class Probe:
    """A test node spinning in its own thread: records topics, publishes on request."""

    def __init__(self, namespace):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(f"probe_{uuid.uuid4().hex[:8]}", namespace=namespace, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.messages = {}
        self.lock = threading.Lock()
        self.running = True
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        while self.running and self.context.ok():
            self.executor.spin_once(timeout_sec=0.05)

    def record(self, msg_type, topic):
        self.messages[topic] = []

        def keep(msg):
            with self.lock:
                self.messages[topic].append(msg)

        self.node.create_subscription(msg_type, topic, keep, qos_profile_sensor_data)

    def wait_for(self, topic, count, timeout=TIMEOUT, tick=None):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if tick is not None:
                tick()
            with self.lock:
                if len(self.messages[topic]) >= count:
                    return list(self.messages[topic])
            time.sleep(0.01)
        pytest.fail(f"fewer than {count} messages on {topic} within {timeout} s "
                    f"(got {len(self.messages[topic])})")

    def close(self):
        self.running = False
        self.thread.join(2.0)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


# ------------------------------------------------------------------------------- dynamics.launch.py

DYNAMICS_NS = f"launch_dyn_{uuid.uuid4().hex[:6]}"


@launch_pytest.fixture
def dynamics_launch():
    return launch.LaunchDescription([
        include("dynamics.launch.py", urdf="planar_2r", namespace=DYNAMICS_NS),
        ReadyToTest(),
    ])


@pytest.mark.launch(fixture=dynamics_launch)
def test_dynamics_launch_turns_joint_states_into_gravity_torques():
    model = rd.load_urdf(bundled_urdf("planar_2r"))
    q = np.array([0.4, -0.7])
    probe = Probe(DYNAMICS_NS)
    try:
        probe.record(JointState, "gravity_torques")
        publisher = probe.node.create_publisher(JointState, "joint_states", qos_profile_sensor_data)

        def publish():
            msg = JointState(name=list(model.joint_names), position=q.tolist(), velocity=[0.0, 0.0])
            msg.header.stamp = probe.node.get_clock().now().to_msg()
            publisher.publish(msg)

        received = probe.wait_for("gravity_torques", 5, tick=publish)
        last = received[-1]
        assert list(last.name) == list(model.joint_names)
        np.testing.assert_allclose(last.effort, rd.gravity_torques(model, q), rtol=1e-9, atol=1e-9)
    finally:
        probe.close()


# ----------------------------------------------------------------------------- simulation.launch.py

SIMULATION_NS = f"launch_sim_{uuid.uuid4().hex[:6]}"


@launch_pytest.fixture
def simulation_launch():
    return launch.LaunchDescription([
        include("simulation.launch.py", namespace=SIMULATION_NS),
        ReadyToTest(),
    ])


@pytest.mark.launch(fixture=simulation_launch)
def test_simulation_launch_closes_the_computed_torque_loop():
    model = rd.load_urdf(bundled_urdf("arm7_gripper"))
    probe = Probe(SIMULATION_NS)
    try:
        probe.record(JointState, "joint_states")
        probe.record(JointState, "computed_torques")
        torques = probe.wait_for("computed_torques", 200)
        states = probe.wait_for("joint_states", 200)
        assert set(model.joint_names) <= set(states[-1].name)
        for msg in states[-100:]:
            assert np.all(np.isfinite(msg.position)) and np.all(np.isfinite(msg.velocity))
        for msg in torques[-100:]:
            assert list(msg.name) == list(model.joint_names)
            assert np.all(np.isfinite(msg.effort))
        # the loop is closed: the torques are computed from the simulator's own joint states
        stamps = {(m.header.stamp.sec, m.header.stamp.nanosec) for m in states}
        assert sum((m.header.stamp.sec, m.header.stamp.nanosec) in stamps for m in torques[-100:]) >= 50
    finally:
        probe.close()
