"""Helpers for the ROS 2 end-to-end tests: node processes, a test node spinning in a thread,
message collectors that wait on events, parameter calls, robots from example-robot-data.

Nothing here sleeps a fixed time to "let discovery happen": everything polls with a timeout. A test that
needs messages to have arrived waits for them (``Collector.wait_for``, ``wait_count``: a count, a stamp, a
condition) with a generous timeout, never a fixed sleep: a loaded machine may pause the graph for a second.
The ROS_DOMAIN_ID and localhost-only discovery are set by conftest.py before rclpy is used.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from pathlib import Path

from robot_dynamics.tools import processes
from robot_dynamics.tools.spinning import SpunNode


REPO = Path(__file__).resolve().parents[1]
DISCOVERY_TIMEOUT = 15.0  # s: discovery takes up to ~2.5 s here, more on a loaded machine
START_TIMEOUT = 90.0  # s: a node process's start (ROS and the kernels loaded, 2-5 s idle) and discovery, under load
WAIT_TIMEOUT = 10.0  # s, for anything that should happen "soon"


# --- node processes ----------------------------------------------------------------------------
def write_params(path: Path, params: dict) -> Path:
    """A ROS 2 params file applying ``params`` to every node (``/**``); values written as JSON
    (valid YAML; carries URDF strings exactly)."""
    return processes.params_file(params, path)


def ros_env() -> dict:
    """The environment of a node process: this test worker's isolated graph, the checkout importable."""
    env = processes.ros_environment(domain_id=os.environ["ROS_DOMAIN_ID"])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    return env


class NodeProcess(processes.NodeProcess):
    """A node executable in its own process, started the tests' way: its own arguments
    (``extra_args``, e.g. ``--urdf``), an optional params file, a namespace and extra ROS
    arguments; output goes to ``log_path``."""

    def __init__(self, name: str, log_path: Path, params_file: Path | None = None, namespace: str = "",
                 ros_args=(), extra_args=()):
        argv = processes.executable(name) + list(extra_args) + processes.ros_args(
            [params_file] if params_file else [], namespace or None) + list(ros_args)
        super().__init__(name, argv, ros_env(), log_path)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_log(self, text: str, timeout: float = WAIT_TIMEOUT) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.log()
            if text in out:
                return out
            if not self.running():
                break
            time.sleep(0.05)
        raise AssertionError(f"{text!r} not in the node's log:\n{self.log()}")


# --- the test node -----------------------------------------------------------------------------
class Collector:
    """Keeps every message of one subscription; waits on a condition variable."""

    def __init__(self):
        self.messages = []
        self.times = []  # time.monotonic() at which each message arrived
        self._cond = threading.Condition()

    def __call__(self, msg):
        with self._cond:
            self.messages.append(msg)
            self.times.append(time.monotonic())
            self._cond.notify_all()

    def clear(self):
        with self._cond:
            self.messages.clear()
            self.times.clear()

    def wait_for(self, predicate=lambda m: True, timeout: float = WAIT_TIMEOUT, what: str = "a message",
                 since: float | None = None):
        """The first kept message satisfying ``predicate`` (waiting up to ``timeout``); with
        ``since`` (a time.monotonic() value) only messages that arrived after it count."""
        deadline = time.monotonic() + timeout
        with self._cond:  # (arrival times only grow: with ``since``, the older history is not looked at)
            seen = 0 if since is None else bisect.bisect_left(self.times, since)
        while True:
            with self._cond:  # (scanned outside the lock: the subscription's callback never waits for a scan)
                fresh, times = self.messages[seen:], self.times[seen:]
            for msg, t in zip(fresh, times):
                if (since is None or t >= since) and predicate(msg):
                    return msg
            seen += len(fresh)
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            with self._cond:
                if len(self.messages) == seen:
                    self._cond.wait(left)

    def wait_count(self, count: int, since: float, timeout: float = 30.0, what: str = "messages"):
        """The first ``count`` kept messages that arrived after ``since`` (a time.monotonic() value), waiting
        up to ``timeout``: counted, not timed, so that a loaded machine pausing the graph for a moment only
        makes the wait longer (a stream at a known rate: a count is a lower bound on its time)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                first = bisect.bisect_left(self.times, since)  # (arrival times only grow)
                if len(self.messages) - first >= count:
                    return self.messages[first:first + count]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out after {timeout} s waiting for {count} {what}: "
                                         f"{len(self.messages) - first} came")
                self._cond.wait(left)

    def wait_quiet(self, quiet: float = 1.0, timeout: float = 30.0):
        """Until no message has arrived for ``quiet`` s (the answers to repeated requests all in)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                left = quiet - (time.monotonic() - (self.times[-1] if self.times else -quiet))
                if left <= 0:
                    return
                if time.monotonic() > deadline:
                    raise AssertionError(f"messages still arriving after {timeout} s")
                self._cond.wait(left)

    def find(self, predicate):
        with self._cond:
            return [m for m in self.messages if predicate(m)]


class RosHarness(SpunNode):
    """A test node in this process with its own context, spun by a SingleThreadedExecutor thread."""

    def __init__(self, name: str = "test_harness", namespace: str = ""):
        super().__init__(name, namespace)
        self._clients = {}

    def remove_node(self, node):
        self.executor.remove_node(node)
        node.destroy_node()
        self._nodes.remove(node)

    def publisher(self, msg_type, topic: str, qos=10):
        return self.node.create_publisher(msg_type, topic, qos)

    def collect(self, msg_type, topic: str, qos=None) -> Collector:
        from rclpy.qos import qos_profile_sensor_data

        collector = Collector()
        self.node.create_subscription(msg_type, topic, collector, qos if qos is not None else qos_profile_sensor_data)
        return collector

    def wait_for_subscriber(self, publisher, timeout: float = DISCOVERY_TIMEOUT):
        wait_until(lambda: publisher.get_subscription_count() > 0, timeout,
                   f"a subscriber on {publisher.topic_name}")

    def wait_for_publisher(self, topic: str, timeout: float = DISCOVERY_TIMEOUT):
        wait_until(lambda: self.node.count_publishers(topic) > 0, timeout, f"a publisher on {topic}")

    def call(self, srv_type, service: str, request, timeout: float = DISCOVERY_TIMEOUT):
        """The answer of ``service``. One client per service, kept: a new client's response reader may not
        yet be matched by the server's writer when the server answers, and that answer is lost."""
        client = self._clients.get((srv_type, service))
        if client is None:
            client = self._clients[(srv_type, service)] = self.node.create_client(srv_type, service)
        if not client.wait_for_service(timeout_sec=timeout):
            raise AssertionError(f"service {service} not available")
        done = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(timeout):
            raise AssertionError(f"no answer from {service}")
        return future.result()

    def set_parameters(self, node_fqn: str, values: dict):
        """SetParametersResult per parameter, set through ``node_fqn``'s parameter service."""
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        request = SetParameters.Request(
            parameters=[Parameter(k, value=v).to_parameter_msg() for k, v in values.items()]
        )
        return self.call(SetParameters, f"{node_fqn}/set_parameters", request).results

    def get_parameters(self, node_fqn: str, names):
        from rcl_interfaces.srv import GetParameters
        from rclpy.parameter import parameter_value_to_python

        response = self.call(GetParameters, f"{node_fqn}/get_parameters", GetParameters.Request(names=list(names)))
        return [parameter_value_to_python(v) for v in response.values]


def wait_until(predicate, timeout: float = WAIT_TIMEOUT, what: str = "a condition", period: float = 0.02):
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(period)


def publish_in_step(publish, stamps, newest_answer, ahead: int = 3, timeout: float = 30.0):
    """Call ``publish(k)`` for each message k, stamped ``stamps[k]`` (s), at most ``ahead`` messages beyond
    the newest the node has answered (``newest_answer()``: the stamp of its newest answer, s): however
    loaded the machine, none is dropped from the node's queue (a dropped state is a gap in its clock)."""
    for k in range(len(stamps)):
        publish(k)
        if k >= ahead:
            wait_until(lambda: newest_answer() >= stamps[k - ahead] - 1e-6, timeout, period=0.0005,
                       what=f"the answer to the message stamped {stamps[k - ahead]:.3f}")


def publish_until(publish, collector: Collector, predicate, timeout: float = WAIT_TIMEOUT, period: float = 0.05,
                  what: str = "an answer", since: float | None = None):
    """Call ``publish()`` every ``period`` until ``collector`` has a message satisfying
    ``predicate``; that message. For inputs that must be fresh together (best-effort inputs,
    timeouts of a tenth of a second), repeating is what makes the test independent of timing."""
    deadline = time.monotonic() + timeout
    while True:
        publish()
        try:
            return collector.wait_for(predicate, timeout=period, what=what, since=since)
        except AssertionError:
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}") from None
