"""The ROS side of the demo: a recorder node in this process, which in the PD-only run also closes the
loop itself. rclpy is imported when a :class:`Recorder` is made."""

import os
import threading
import time

import numpy as np

from ...control.laws import joint_pd, position_error
from ..spinning import SpunNode


class Recorder:
    """An rclpy node that records the demo topics and, in the PD run, closes the loop itself."""

    def __init__(self, model, namespace=""):
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        from trajectory_msgs.msg import JointTrajectory

        self._Float64MultiArray = Float64MultiArray
        self.model = model
        self.names = tuple(model.joint_names)
        self.continuous = model.continuous
        self._spun = SpunNode(f"robot_dynamics_demo_{os.getpid()}", namespace)
        self.context, self.node = self._spun.context, self._spun.node
        self.lock = threading.Lock()
        self.run = None
        self.pd_gains = None
        self._latest_desired = None
        self.command = self.node.create_publisher(
            Float64MultiArray, "effort_command", QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self.node.create_subscription(JointState, "joint_states", self._on_state, qos_profile_sensor_data)
        self.node.create_subscription(JointTrajectory, "desired_state", self._on_desired, qos_profile_sensor_data)
        self.node.create_subscription(JointState, "computed_torques", self._on_torques, qos_profile_sensor_data)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        self._index_cache = {}

    def close(self):
        self._spun.close()

    @staticmethod
    def _seconds(stamp):
        return stamp.sec + stamp.nanosec * 1e-9

    def _order(self, names):
        """Indices into a message's arrays giving model order, or None if a joint is missing."""
        key = tuple(names)
        if key not in self._index_cache:
            position = {name: i for i, name in enumerate(key)}
            self._index_cache[key] = (np.array([position[n] for n in self.names])
                                      if all(n in position for n in self.names) else None)
        return self._index_cache[key]

    def _on_state(self, msg):
        now = time.monotonic()
        order = self._order(msg.name)
        if order is None or len(msg.position) != len(msg.name):
            return
        q = np.asarray(msg.position)[order]
        qd = np.asarray(msg.velocity)[order] if len(msg.velocity) == len(msg.name) else np.zeros(len(order))
        effort = np.asarray(msg.effort)[order] if len(msg.effort) == len(msg.name) else np.full(len(order), np.nan)
        with self.lock:
            run, gains, desired = self.run, self.pd_gains, self._latest_desired
            if run is not None:
                run.state.add(now, self._seconds(msg.header.stamp), (q, qd, effort))
        if gains is not None and desired is not None and now - desired[0] < 0.1:
            _, q_d, qd_d, qdd_d, received = desired
            dt = now - received
            q_target = q_d + qd_d * dt + 0.5 * qdd_d * dt * dt
            tau = joint_pd(gains[0], gains[1], position_error(q_target, q, self.continuous), qd_d + qdd_d * dt - qd)
            self.command.publish(self._Float64MultiArray(data=tau.tolist()))

    def _on_desired(self, msg):
        now = time.monotonic()
        if not msg.points:
            return
        position = {name: i for i, name in enumerate(msg.joint_names)}
        point = msg.points[0]
        n = len(self.names)

        def values(array, default):
            if len(array) != len(msg.joint_names):
                return np.full(n, default)
            return np.array([array[position[name]] if name in position else default for name in self.names])

        q_d = values(point.positions, np.nan)
        missing = [name for name, value in zip(self.names, q_d) if not np.isfinite(value)]
        if missing:  # joints without a desired value (e.g. the gripper) hold their start value
            q_d[~np.isfinite(q_d)] = 0.0
        qd_d, qdd_d = values(point.velocities, 0.0), values(point.accelerations, 0.0)
        with self.lock:
            self._latest_desired = (now, q_d, qd_d, qdd_d, now)
            if self.run is not None:
                self.run.desired.add(now, self._seconds(msg.header.stamp), (q_d, qd_d, qdd_d))

    def _on_torques(self, msg):
        now = time.monotonic()
        order = self._order(msg.name)
        if order is None or len(msg.effort) != len(msg.name):
            return
        with self.lock:
            if self.run is not None:
                self.run.torques.add(now, self._seconds(msg.header.stamp), np.asarray(msg.effort)[order])

    def _on_diagnostics(self, msg):
        with self.lock:
            if self.run is not None:
                for status in msg.status:
                    self.run.diagnostics[status.name] = {kv.key: kv.value for kv in status.values}

    def counts(self):
        with self.lock:
            run = self.run
            return (len(run.state), len(run.desired), len(run.torques)) if run is not None else (0, 0, 0)

    def _call(self, srv_type, service, request, timeout=10.0):
        client = self.node.create_client(srv_type, service)
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                return False
            done = threading.Event()
            future = client.call_async(request)
            future.add_done_callback(lambda _f: done.set())
            return done.wait(timeout) and future.result() is not None and bool(future.result().success)
        finally:
            self.node.destroy_client(client)

    def restart_motion(self):
        """Simulator back to its initial state and the trajectory back to t = 0, in step.

        The simulator is paused, reset and given 0.1 s for the messages from before the reset to
        drain; then the trajectory restarts and the simulator resumes right after, so the loop
        starts at rest at home with the trajectory at t = 0 (within a millisecond or two, while
        the trajectory's smooth start is still flat). Returns the services that failed.
        """
        from std_srvs.srv import SetBool, Trigger

        simulator = "robot_dynamics_simulator"
        steps = [
            (SetBool, f"{simulator}/pause", SetBool.Request(data=True)),
            (Trigger, f"{simulator}/reset", Trigger.Request()),
            None,
            (Trigger, "trajectory_publisher/restart", Trigger.Request()),
            (SetBool, f"{simulator}/pause", SetBool.Request(data=False)),
        ]
        for step in steps:
            if step is None:
                time.sleep(0.1)
            elif not self._call(*step):
                return [step[1]]
        return []
