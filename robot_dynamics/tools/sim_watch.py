"""The ROS side of ``robot-dynamics sim``: a node in the command's own process that watches the graph
it starts. rclpy is imported when a :class:`GraphWatch` is made.

It tells the command when each node is up (the simulator's ``joint_states``, the dynamics node's
``gravity_torques``, the loop's ``desired_state`` and ``computed_torques``), measures how far the
arm moves from its first published pose before the first ``desired_state`` (the start-up hold),
counts messages for the rates, and checks that the clock it follows never goes backwards.
"""

import os
import threading
import time

import numpy as np


class Topic:
    """Messages seen on one topic: how many, the first's arrival (monotonic s)."""

    def __init__(self):
        self.count = 0
        self.first = None

    def seen(self, now):
        self.count += 1
        if self.first is None:
            self.first = now


class GraphWatch:
    """Subscribes to one graph's topics (relative to ``namespace``) and ``clock_topic`` (if given)."""

    def __init__(self, namespace="", clock_topic=None):
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory

        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(f"robot_dynamics_sim_{os.getpid()}", namespace=namespace or "",
                                      context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.lock = threading.Lock()
        self.topics = {name: Topic() for name in ("joint_states", "gravity_torques", "desired_state",
                                                  "computed_torques", "clock")}
        self.start_pose = None      # {joint: position} of the first joint_states message
        self.hold_error = 0.0       # max |q - start pose| before the first desired_state, rad or m
        self.hold_time = 0.0        # how long that was measured, s
        self.clock_backwards = 0    # clock messages older than the one before
        self._last_clock = None
        sensor = qos_profile_sensor_data
        self.node.create_subscription(JointState, "joint_states", self._on_state, sensor)
        self.node.create_subscription(JointTrajectory, "desired_state", self._counter("desired_state"), sensor)
        self.node.create_subscription(JointState, "computed_torques", self._counter("computed_torques"), sensor)
        self._gravity = self.node.create_subscription(JointState, "gravity_torques",
                                                      self._counter("gravity_torques"), sensor)
        if clock_topic:
            from rosgraph_msgs.msg import Clock

            self.node.create_subscription(Clock, clock_topic, self._on_clock, 10)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        try:
            while self.context.ok():
                self.executor.spin_once(timeout_sec=0.05)
        except Exception:  # noqa: BLE001 - the context is shut down when the command ends
            pass

    def close(self):
        self.context.try_shutdown()
        self._thread.join(5.0)
        self.node.destroy_node()

    def _counter(self, name):
        def on_message(msg):
            with self.lock:
                self.topics[name].seen(time.monotonic())
        return on_message

    def _on_state(self, msg):
        now = time.monotonic()
        with self.lock:
            self.topics["joint_states"].seen(now)
            if self.topics["desired_state"].count:
                return
            pose = dict(zip(msg.name, msg.position))
            if self.start_pose is None:
                self.start_pose = pose
            moved = [abs(pose[name] - value) for name, value in self.start_pose.items() if name in pose]
            if moved:
                self.hold_error = max(self.hold_error, float(np.max(moved)))
            self.hold_time = now - self.topics["joint_states"].first

    def _on_clock(self, msg):
        t = msg.clock.sec + msg.clock.nanosec * 1e-9
        with self.lock:
            self.topics["clock"].seen(time.monotonic())
            if self._last_clock is not None and t < self._last_clock:
                self.clock_backwards += 1
            self._last_clock = t

    def count(self, name):
        with self.lock:
            return self.topics[name].count

    def counts(self):
        with self.lock:
            return {name: topic.count for name, topic in self.topics.items()}

    def dynamics_ready(self):
        """The dynamics node answers (a ``gravity_torques`` message); the subscription then ends (it
        made the node compute gravity for nobody)."""
        if self.count("gravity_torques") and self._gravity is not None:
            self.node.destroy_subscription(self._gravity)
            self._gravity = None
        return self._gravity is None

    def publishers(self, topic):
        """Publishers of ``topic`` (resolved in this node's namespace) other than this process's."""
        return self.node.count_publishers(topic)

    def others_on(self, topics, wait):
        """``{topic: publishers}`` of those of ``topics`` that something already publishes, after
        ``wait`` seconds of discovery (a graph started earlier is found within about a second)."""
        deadline = time.monotonic() + wait
        while True:
            found = {topic: n for topic in topics if (n := self.publishers(topic)) > 0}
            if found or time.monotonic() >= deadline:
                return found
            time.sleep(0.1)
