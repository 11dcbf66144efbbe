"""Pieces shared by the robot_dynamics ROS 2 nodes.

- :class:`DescriptionSource` finds the URDF (``robot_description``) the way robot_state_publisher
  users expect: own parameter, then the latched ``robot_description`` topic, then another node's
  parameter.
- :func:`run_node` is the body of every executable's ``main()``: rclpy's EventsExecutor driven
  with ``spin_once(timeout_sec=...)`` (the only way it works in the PyPI wheels, see the README),
  clean exit on Ctrl-C, SIGTERM and external shutdown.
- Small message converters: :class:`NameMap` (message joint names -> model indices, cached per
  name tuple), :func:`joint_state_msg`, :func:`float64_array_msg`, :func:`matrix_msg`.

This module is the only one besides the nodes themselves that imports rclpy.
"""

from __future__ import annotations

import array
import math
import time
from typing import Callable, Iterable, Sequence

import numpy as np
import rclpy
from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String

__all__ = [
    "DESCRIPTION_QOS",
    "DescriptionSource",
    "NameMap",
    "as_float_array",
    "float64_array_msg",
    "joint_state_msg",
    "matrix_msg",
    "run_node",
]

#: QoS of the ``robot_description`` topic (robot_state_publisher's convention: latched).
DESCRIPTION_QOS = QoSProfile(
    depth=1,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)


class DescriptionSource:
    """robot_description in precedence: own parameter ``robot_description`` (non-empty string) ->
    latched ``robot_description`` topic (std_msgs/String, TRANSIENT_LOCAL, reliable; a new message
    reloads) -> the ``robot_description`` parameter of the node named by parameter
    ``robot_description_node`` (default ``robot_state_publisher``), fetched through its
    ``get_parameters`` service (retried until found).

    ``on_urdf(xml, source)`` runs in the node's executor for the first description and for every
    later one that differs from the last delivered; ``source`` is ``'parameter'``, ``'topic'`` or
    ``'node <name>'``. It is the callee's job to parse it (``rd.load_urdf``) and to keep its old
    model if parsing fails; an exception escaping ``on_urdf`` is logged, not raised.

    The topic name is relative (``robot_description``, i.e. ``/robot_description`` in the root
    namespace), so namespaces and remapping work as for robot_state_publisher.
    """

    TOPIC = "robot_description"
    RETRY_PERIOD = 0.5  # s, between look-ups of the other node's parameter service
    REQUEST_TIMEOUT = 3.0  # s; a request still unanswered then (its server went away) is re-sent

    def __init__(self, node: Node, on_urdf: Callable[[str, str], None]):
        self._node = node
        self._on_urdf = on_urdf
        self._log = node.get_logger()
        node.declare_parameter(
            "robot_description",
            "",
            ParameterDescriptor(
                type=ParameterType.PARAMETER_STRING,
                description="URDF XML of the robot. Highest-precedence source; when empty the "
                "latched robot_description topic is used, then the robot_description parameter "
                "of the node named by robot_description_node.",
            ),
        )
        node.declare_parameter(
            "robot_description_node",
            "robot_state_publisher",
            ParameterDescriptor(
                type=ParameterType.PARAMETER_STRING,
                description="Node whose robot_description parameter is fetched when neither the "
                "own parameter nor the robot_description topic gives a URDF.",
            ),
        )
        self._param_xml = node.get_parameter("robot_description").value or ""
        self._remote_name = node.get_parameter("robot_description_node").value or ""
        self._topic_xml = ""
        self._remote_xml = ""
        self._delivered: str | None = None
        self._remote_client = None
        self._remote_future = None
        self._remote_sent = 0.0  # time.monotonic() of the pending request
        self._remote_status = ""

        node.add_post_set_parameters_callback(self._on_parameters_set)
        # Parameter changes are delivered through a one-shot timer (the EventsExecutor supports no
        # guard conditions), so on_urdf always runs in the node's executor as a callback of its
        # own, never inside the constructor or a parameter service call.
        self._wake = node.create_timer(0.001, self._on_wake)
        self._sub = node.create_subscription(String, self.TOPIC, self._on_topic, DESCRIPTION_QOS)
        self._timer = node.create_timer(self.RETRY_PERIOD, self._poll_remote)

    # --- public ---------------------------------------------------------------------------------
    @property
    def source(self) -> str:
        """Where the current description comes from ('' while there is none)."""
        if self._param_xml:
            return "parameter"
        if self._topic_xml:
            return "topic"
        if self._remote_xml:
            return f"node {self._remote_name}"
        return ""

    def waiting_for(self) -> str:
        """Human-readable text of what the node is waiting for (for the periodic log)."""
        topic = self._sub.topic_name
        parts = [
            "parameter 'robot_description' is empty",
            f"no message on {topic} (publishers: {self._node.count_publishers(topic)})",
        ]
        if self._remote_name:
            parts.append(
                f"parameter 'robot_description' of node '{self._remote_name}': "
                f"{self._remote_status or 'not asked yet'}"
            )
        else:
            parts.append("parameter 'robot_description_node' is empty")
        return "waiting for robot_description: " + "; ".join(parts)

    # --- internals ------------------------------------------------------------------------------
    def _current(self) -> tuple[str, str]:
        return next(
            (
                (xml, src)
                for xml, src in (
                    (self._param_xml, "parameter"),
                    (self._topic_xml, "topic"),
                    (self._remote_xml, f"node {self._remote_name}"),
                )
                if xml
            ),
            ("", ""),
        )

    def _on_wake(self) -> None:
        self._wake.cancel()
        self._update()

    def _update(self) -> None:
        xml, source = self._current()
        if not xml or xml == self._delivered:
            return
        self._delivered = xml
        try:
            self._on_urdf(xml, source)
        except Exception as exc:  # noqa: BLE001 - a bad description must not kill the node
            self._log.error(f"handling robot_description from {source} failed: {exc!r}")

    def _on_parameters_set(self, params) -> None:
        changed = False
        for p in params:
            if p.name == "robot_description":
                self._param_xml = p.value or ""
                changed = True
            elif p.name == "robot_description_node":
                if p.value != self._remote_name:
                    self._drop_remote_client()
                    self._remote_name = p.value or ""
                    self._remote_xml = ""
                    self._remote_status = ""
                changed = True
        if changed:
            self._wake.reset()

    def _on_topic(self, msg: String) -> None:
        self._topic_xml = msg.data
        if msg.data:
            self._drop_remote_client()
        self._update()

    def _drop_remote_client(self) -> None:
        if self._remote_client is not None:
            self._node.destroy_client(self._remote_client)
        self._remote_client = None
        self._remote_future = None

    def _poll_remote(self) -> None:
        # Only ask the other node while nothing of higher precedence (or the node itself) has
        # given a description; once found it is kept (a changed robot_description_node re-asks).
        if self._param_xml or self._topic_xml or self._remote_xml or not self._remote_name:
            return
        if self._remote_future is not None:
            if self._remote_future.done():
                self._take_remote_result(self._remote_future)
            elif time.monotonic() - self._remote_sent > self.REQUEST_TIMEOUT:
                # a server that disappears after taking the request never answers: ask again,
                # through a new client (a late answer to the dropped one is ignored)
                service = self._remote_client.service_name
                self._drop_remote_client()
                self._remote_status = f"no answer from {service} within {self.REQUEST_TIMEOUT:g} s; retrying"
            return
        if self._remote_client is None:
            try:
                self._remote_client = self._node.create_client(
                    GetParameters, f"{self._remote_name}/get_parameters"
                )
            except Exception as exc:  # noqa: BLE001 - e.g. an invalid node name
                self._remote_status = f"invalid node name ({exc})"
                return
            if not self._remote_status:  # (a retry keeps saying why it retries)
                self._remote_status = f"waiting for service {self._remote_client.service_name}"
        if not self._remote_client.service_is_ready():
            return
        request = GetParameters.Request(names=["robot_description"])
        self._remote_sent = time.monotonic()
        self._remote_future = self._remote_client.call_async(request)
        self._remote_future.add_done_callback(self._take_remote_result)

    def _take_remote_result(self, future) -> None:
        if future is not self._remote_future:
            return  # an answer for a client dropped meanwhile
        self._remote_future = None
        try:
            values = future.result().values
        except Exception as exc:  # noqa: BLE001
            self._remote_status = f"request failed ({exc!r}); retrying"
            return
        if not values or values[0].type != ParameterType.PARAMETER_STRING or not values[0].string_value:
            self._remote_status = "node found, parameter not set (or not a string); retrying"
            return
        self._remote_xml = values[0].string_value
        self._remote_status = "received"
        self._drop_remote_client()
        self._update()


def run_node(node_class: Callable[..., Node], args: Sequence[str] | None = None, **kwargs) -> int:
    """Body of a node executable's ``main()``.

    ``rclpy.init(args)`` -> ``node_class(**kwargs)`` -> EventsExecutor spun with
    ``spin_once(timeout_sec=0.1)`` until shutdown. Ctrl-C, SIGTERM (rclpy's handler shuts the
    context down) and an external shutdown end the loop cleanly; the node is destroyed and the
    context shut down. Returns 0 (the process exit status).
    """
    from rclpy.experimental import EventsExecutor

    with rclpy.init(args=list(args) if args is not None else None) as init:
        context = init.context
        node = None
        executor = None
        try:
            node = node_class(**kwargs)
            executor = EventsExecutor(context=context)
            executor.add_node(node)
            while context.ok():
                executor.spin_once(timeout_sec=0.1)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        finally:
            if executor is not None:
                try:
                    executor.shutdown(timeout_sec=1.0)
                except Exception:  # noqa: BLE001 - best effort at exit
                    pass
            if node is not None:
                node.destroy_node()
    return 0


# --- message converters -------------------------------------------------------------------------
def as_float_array(values) -> array.array:
    """Fast ndarray/sequence -> ``array.array('d')`` (what rclpy stores for float64[] fields)."""
    out = array.array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return out


def joint_state_msg(names, stamp=None, position=None, velocity=None, effort=None) -> JointState:
    """A JointState with ``names`` (a list of str is stored as-is) and the given arrays."""
    msg = JointState()
    if stamp is not None:
        msg.header.stamp = stamp
    msg.name = names if isinstance(names, list) else list(names)
    if position is not None:
        msg.position = as_float_array(position)
    if velocity is not None:
        msg.velocity = as_float_array(velocity)
    if effort is not None:
        msg.effort = as_float_array(effort)
    return msg


def float64_array_msg(values, label: str = "") -> Float64MultiArray:
    """A 1-D Float64MultiArray (the forward_command_controller convention: no layout needed;
    one dimension labelled ``label`` is filled in when ``label`` is given)."""
    msg = Float64MultiArray()
    data = as_float_array(values)
    if label:
        msg.layout.dim = [MultiArrayDimension(label=label, size=len(data), stride=len(data))]
    msg.data = data
    return msg


def matrix_msg(matrix) -> Float64MultiArray:
    """A 2-D matrix as a row-major Float64MultiArray with dims ``rows`` and ``cols``."""
    m = np.asarray(matrix, dtype=np.float64)
    rows, cols = m.shape
    msg = Float64MultiArray()
    msg.layout.dim = [
        MultiArrayDimension(label="rows", size=rows, stride=rows * cols),
        MultiArrayDimension(label="cols", size=cols, stride=cols),
    ]
    msg.layout.data_offset = 0
    msg.data = as_float_array(m)
    return msg


class NameMap:
    """Maps the joint names of incoming messages onto a fixed target order (e.g. the model's).

    ``lookup(names)`` returns ``(src, dst)`` integer arrays such that
    ``target[dst] = message_values[src]`` for every name known to the target; unknown names are
    left out. Results are cached per name tuple, so a publisher with a constant name list costs
    one dict look-up per message. Duplicate names raise ``ValueError`` naming them.
    """

    def __init__(self, target_names: Iterable[str]):
        self.names = tuple(target_names)
        self.index = {n: i for i, n in enumerate(self.names)}
        if len(self.index) != len(self.names):
            raise ValueError(f"duplicate target names: {_duplicates(self.names)}")
        self._cache: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.names)

    def lookup(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        key = tuple(names)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if len(set(key)) != len(key):
            raise ValueError(f"duplicate joint names in message: {_duplicates(key)}")
        pairs = [(i, self.index[n]) for i, n in enumerate(key) if n in self.index]
        src = np.fromiter((p[0] for p in pairs), dtype=np.intp, count=len(pairs))
        dst = np.fromiter((p[1] for p in pairs), dtype=np.intp, count=len(pairs))
        if len(self._cache) > 64:  # publishers with ever-changing name lists: don't grow forever
            self._cache.clear()
        self._cache[key] = (src, dst)
        return src, dst


def _duplicates(names: Sequence[str]) -> list[str]:
    seen, dup = set(), []
    for n in names:
        if n in seen and n not in dup:
            dup.append(n)
        seen.add(n)
    return dup


def finite(x) -> bool:
    """True when every entry of ``x`` is finite (cheap for small arrays)."""
    return bool(np.isfinite(x).all()) if np.ndim(x) else math.isfinite(x)
