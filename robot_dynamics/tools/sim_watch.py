"""The ROS side of ``robot-dynamics sim``: a node in the command's own process that watches the graph
it starts. rclpy is imported when a :class:`GraphWatch` is made.

It tells the command when each node is up (the simulator's ``joint_states``, the dynamics node's
``gravity_torques``, the loop's desired motion — ``desired_state``, or ``desired_pose`` in task
space — and ``computed_torques``), measures how far the arm moves from its first published pose
before the first desired motion or computed torque (the start-up hold: judged by the messages' stamps, so
that a message this process hears late or not at all cannot move the hold's end), counts messages for the
rates, and checks that the clock it follows never goes backwards. :func:`second_graph` is the check, shared with the demo,
for a graph already running where a new one would start.
"""

import os
import threading
import time

import numpy as np

from .graph import fully_qualified_name
from .spinning import SpunNode

#: s of DDS discovery after which a graph already running is known: a new participant learns of
#: another's publishers within 0.1-2.6 s here (localhost discovery)
DISCOVERY_WAIT = 3.0


def second_graph(node, namespace, clock, domain, remedy, since=None):
    """Why a graph must not start in ``namespace`` on ``domain`` (a message ending with ``remedy``), or
    None: something already publishes its ``joint_states`` (or its ``clock``), as ``node`` (an rclpy
    node on that domain, publishing neither, created at ``since``: time.monotonic(); default now)
    sees it within :data:`DISCOVERY_WAIT` s of its creation (a loaded machine may take longer:
    :func:`graph_beside_ours` checks again while the graph starts)."""
    topics = _graph_topics(namespace, clock)
    deadline = (time.monotonic() if since is None else since) + DISCOVERY_WAIT
    while True:
        found = [topic for topic in topics if node.count_publishers(topic) > 0]
        if found or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    return _refusal(found, namespace, clock, domain, remedy)


def graph_beside_ours(node, namespace, clock, domain, remedy):
    """:func:`second_graph`'s refusal for a graph ``node`` discovered only while ours starts: a second
    publisher of its ``joint_states`` or ``clock`` (our simulator is the one of each); None if none."""
    found = [topic for topic in _graph_topics(namespace, clock) if node.count_publishers(topic) > 1]
    return _refusal(found, namespace, clock, domain, remedy)


def _graph_topics(namespace, clock):
    return [fully_qualified_name(namespace, "joint_states")] + ([clock] if clock else [])


def _refusal(found, namespace, clock, domain, remedy):
    if clock in found:
        return (f"something already publishes {clock} on {domain}: two simulators' clocks on one topic "
                f"interleave and time goes backwards; run this graph in another --namespace (its own "
                f"clock /NS/clock), without --global-clock")
    if found:
        return (f"a graph already runs in namespace {'/' + namespace if namespace else '/'} on {domain} "
                f"({', '.join(found)} has a publisher): {remedy}")
    return None


def _seconds(stamp):
    return stamp.sec + 1e-9 * stamp.nanosec


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
    """Subscribes to one graph's topics (relative to ``namespace``) and ``clock_topic`` (if given);
    ``desired`` is the topic of the desired motion: ``desired_state`` (joint space, a
    JointTrajectory) or ``desired_pose`` (task space, a PoseStamped); with ``trajectory`` it starts
    the trajectory publisher's motion (:meth:`start_motion`)."""

    def __init__(self, namespace="", clock_topic=None, desired="desired_state", trajectory=False):
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory

        self._spun = SpunNode(f"robot_dynamics_sim_{os.getpid()}", namespace)
        self.context, self.node = self._spun.context, self._spun.node
        self.created = time.monotonic()  # (its DDS discovery starts)
        self.lock = threading.Lock()
        self.desired = desired
        self._joints = None  # the joints a joint-space message must name to count (expect_joints); None: any
        self.topics = {name: Topic() for name in ("joint_states", "gravity_torques", desired,
                                                  "computed_torques", "clock")}
        self.start_pose = None      # {joint: position} of the first joint_states message
        self._held = []             # (stamp, max |q - start pose|) of the states before the first command;
        #                             None once hold() has measured it (a graph without commands runs for hours)
        self._hold = None           # hold()'s measurement
        self._first_command = np.inf  # earliest stamp of a desired motion or computed torque heard, s
        self.clock_backwards = 0    # clock messages older than the one before
        self._last_clock = None
        sensor = qos_profile_sensor_data
        self.node.create_subscription(JointState, "joint_states", self._on_state, sensor)
        if desired == "desired_pose":
            from geometry_msgs.msg import PoseStamped

            self.node.create_subscription(PoseStamped, desired, self._command_counter(desired), sensor)
        else:
            self.node.create_subscription(JointTrajectory, desired, self._command_counter(desired), sensor)
        self.node.create_subscription(JointState, "computed_torques", self._command_counter("computed_torques"),
                                      sensor)
        self._gravity = self.node.create_subscription(JointState, "gravity_torques", self._on_gravity, sensor)
        if clock_topic:
            from rosgraph_msgs.msg import Clock

            self.node.create_subscription(Clock, clock_topic, self._on_clock, 10)
        self._motion_wanted = False  # (start_motion; ~/restart is called once, then its timer ends)
        if trajectory:
            from std_srvs.srv import Trigger

            self._restart = self.node.create_client(Trigger, "trajectory_publisher/restart")
            self._restart_timer = self.node.create_timer(0.05, self._call_restart)

    def close(self):
        self._spun.close()

    def expect_joints(self, names):
        """From now on, a joint-space message (joint states, torques, a desired point) counts only if it
        names a joint of ``names`` (the robot of this graph): one of another robot, from a graph in the
        same namespace that discovery shows late, cannot make a node of this one seem up."""
        with self.lock:
            self._joints = frozenset(names)

    def _ours(self, names):
        return self._joints is None or not self._joints.isdisjoint(names)

    def _command_counter(self, name):
        """Counts a desired motion or computed torque, and keeps the earliest stamp heard: the hold ends
        there (a computed torque is stamped with the state it was computed at, a desired motion with
        the time it is for, which no state the command moved precedes)."""
        def on_message(msg):
            names = getattr(msg, "joint_names", None) or getattr(msg, "name", None)  # (a PoseStamped has none)
            with self.lock:
                if names is not None and not self._ours(names):
                    return
                self.topics[name].seen(time.monotonic())
                self._first_command = min(self._first_command, _seconds(msg.header.stamp))
        return on_message

    def _on_state(self, msg):
        stamp = _seconds(msg.header.stamp)
        with self.lock:
            if not self._ours(msg.name):
                return
            self.topics["joint_states"].seen(time.monotonic())
            if self._held is None or stamp >= self._first_command:
                return
            pose = dict(zip(msg.name, msg.position))
            if self.start_pose is None:
                self.start_pose = pose
            moved = [abs(pose[name] - value) for name, value in self.start_pose.items() if name in pose]
            self._held.append((stamp, max(moved, default=0.0)))

    def hold(self):
        """``(error, seconds, states)``: how far the arm moved from its first published pose (max over
        joints, rad or m) in the joint states stamped before the first command heard, over how long
        (their stamps' span) and how many. A command this process heard late cannot lengthen the hold:
        the states stamped after one that arrive before it are dropped here; one it never heard (its
        best-effort queue overrun) came with states of the same stamps, overrun alike. The measurement
        ends at the first call (later states are not kept); later calls give the same."""
        with self.lock:
            if self._held is not None:
                held = [(stamp, moved) for stamp, moved in self._held if stamp < self._first_command]
                stamps, moved = zip(*held) if held else ((0.0,), (0.0,))
                self._hold = max(moved), max(stamps) - min(stamps), len(held)
                self._held = None
            return self._hold

    def _on_clock(self, msg):
        t = _seconds(msg.clock)
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

    def _on_gravity(self, msg):
        """The dynamics node answers: counted, and the subscription ends (it made the node compute gravity
        for nobody), here in the spin thread, which alone uses the node (rclpy's nodes are not thread-safe)."""
        with self.lock:
            if not self._ours(msg.name):
                return
            self.topics["gravity_torques"].seen(time.monotonic())
        if self._gravity is not None:
            self.node.destroy_subscription(self._gravity)
            self._gravity = None

    def start_motion(self):
        """Have the trajectory publisher's motion start: started with ``autostart: false``, it publishes
        nothing until its ``~/restart``, which the spin thread calls once the service is found. Its
        motion then starts at the start pose, at rest."""
        with self.lock:
            self._motion_wanted = True

    def _call_restart(self):
        """(In the spin thread, which alone uses the node.) ``~/restart`` once the motion is wanted and
        the service found; the timer then ends."""
        with self.lock:
            wanted = self._motion_wanted
        if not wanted or not self._restart.service_is_ready():
            return
        from std_srvs.srv import Trigger

        self._restart_timer.cancel()
        self._restart.call_async(Trigger.Request()).add_done_callback(self._on_restarted)

    @staticmethod
    def _on_restarted(future):
        if not future.result().success:  # (raised in the spin thread: the command says it stopped listening)
            raise RuntimeError(f"the trajectory publisher's ~/restart failed: {future.result().message}")

    def held_for(self):
        """Seconds (their stamps' span) of the joint states heard so far before any command."""
        with self.lock:
            stamps = [stamp for stamp, _ in self._held or ()]
            return max(stamps) - min(stamps) if stamps else 0.0

    def dynamics_ready(self):
        """The dynamics node answers (a ``gravity_torques`` message)."""
        return self.count("gravity_torques") > 0

    @property
    def error(self):
        """What stopped this watch listening (its spin thread's exception), or None."""
        return self._spun.error
