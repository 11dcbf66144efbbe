"""A dynamics node in this process, fed by calling its callbacks directly, its publishers' ``publish``
recorded: the command path and contact tests. Deterministic: no DDS between the test and the node, and the
node's monotonic clock moves only when the test moves it (:class:`NodeClock`)."""

from __future__ import annotations

import time

import numpy as np
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import robot_dynamics as rd

NAMES = ["shoulder", "elbow"]
Q, QD = np.array([0.4, -0.7]), np.array([0.3, -1.2])


# the modules of the dynamics node that read the monotonic clock (ages of inputs, the log's throttle)
CLOCKED_MODULES = ("robot_dynamics.nodes.dynamics.node", "robot_dynamics.nodes.dynamics.ft_sensor",
                   "robot_dynamics.nodes.dynamics.task_space_command")


class NodeClock:
    """The monotonic clock of the dynamics node while a :class:`Fed` node lives: it moves only when the test
    moves it (``Fed.wait``, 5 ms per state of ``Fed.stream``), so that the stalls of a loaded machine between
    two calls age no input. Everything else of ``time`` is the real module's."""

    def __init__(self):
        self.ns = time.monotonic_ns()
        self._users = 0
        self._saved = {}

    def __getattr__(self, name):
        return getattr(time, name)

    def monotonic_ns(self) -> int:
        return self.ns

    def monotonic(self) -> float:
        return self.ns * 1e-9

    def advance(self, seconds: float) -> None:
        self.ns += round(seconds * 1e9)

    def take(self) -> None:
        """The node's modules read this clock (until as many ``give_back`` as ``take``)."""
        import importlib

        if not self._users:
            for name in CLOCKED_MODULES:
                module = importlib.import_module(name)
                self._saved[name] = module.time
                module.time = self
        self._users += 1

    def give_back(self) -> None:
        import importlib

        self._users -= 1
        if not self._users:
            for name, saved in self._saved.items():
                importlib.import_module(name).time = saved


CLOCK = NodeClock()


class Fed:
    """A DynamicsNode (two_link unless ``robot_description`` is given) in this process: ``state(...)``
    calls its joint_states callback, every output is taken as listened to, ``out[topic]`` records what
    is published, ``logs`` its log lines."""

    def __init__(self, params):
        from robot_dynamics.nodes.dynamics.node import DynamicsNode

        CLOCK.take()
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = DynamicsNode(context=self.context, namespace="/in_process", parameter_overrides=[
            Parameter(k, value=v) for k, v in {"robot_description": rd.examples.TWO_LINK_URDF, **params}.items()])
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        deadline = time.monotonic() + 30.0
        while self.node._plan is None:  # (the model is loaded by a callback)
            assert time.monotonic() < deadline, "the node loaded no model"
            self.executor.spin_once(timeout_sec=0.05)
        self.node._listeners = lambda: (True,) * 5
        self.out, self.logs = {}, []
        self.commands = self.record(self.node._pub_command, lambda msg: np.array(msg.data))
        for pub in (self.node._pub_gravity, self.node._pub_bias, self.node._pub_computed, self.node._pub_mass):
            self.record(pub)
        self.node.get_logger = lambda: _Recorder(self.logs)
        self.t = 100.0

    def record(self, publisher, convert=lambda msg: msg):
        """What ``publisher`` publishes, converted, in a list (also ``out[its topic]``)."""
        into = self.out.setdefault(publisher.topic_name.rsplit("/", 1)[-1], [])
        publisher.publish = lambda msg: into.append(convert(msg))
        publisher.get_subscription_count = lambda: 1  # (listened to: recorded)
        return into

    def state(self, q=Q, qd=QD, effort=(), names=NAMES, stamp=None, step=0.005):
        msg = JointState(name=list(names), position=list(q), velocity=list(qd) if qd is not None else [],
                         effort=list(effort))
        self.t += step
        t = self.t if stamp is None else stamp
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(t), int(round((t % 1) * 1e9)) % 1_000_000_000
        self.node._on_joint_states(msg)
        return self.commands[-1] if self.commands else None

    def desired(self, positions=None, accelerations=(0.0, 0.0)):
        point = JointTrajectoryPoint(accelerations=list(accelerations))
        if positions is not None:
            point.positions = list(positions)
        self.node._on_desired_state(JointTrajectory(joint_names=NAMES, points=[point]))

    def wait(self, seconds):
        """``seconds`` pass on the node's clock (by which it judges the age of its inputs)."""
        CLOCK.advance(seconds)

    def stream(self, seconds, **state):
        """Joint states every 5 ms of the node's clock for ``seconds``."""
        count = len(self.commands)
        n = int(seconds / 0.005)
        for _ in range(n):
            self.state(**state)
            CLOCK.advance(0.005)
        return len(self.commands) - count, n

    def said(self, text):
        return [line for line in self.logs if text in line]

    def status(self, suffix):
        """The node's /diagnostics status named ``...: suffix`` now (None without one)."""
        array = self.node.diagnostics(CLOCK.monotonic_ns())
        return next((s for s in array.status if s.name.endswith(": " + suffix)), None)

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)
        CLOCK.give_back()


class _Recorder:
    def __init__(self, lines):
        self.lines = lines

    def _record(self, *args, **kwargs):
        self.lines.append(str(args[0]) if args else "")

    info = warn = warning = error = debug = fatal = _record
