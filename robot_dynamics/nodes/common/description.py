"""Where a node's URDF comes from: :class:`DescriptionSource`, robot_state_publisher's conventions."""

from __future__ import annotations

import time
from typing import Callable

from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from .parameters import DESCRIPTION_PARAMETERS
from .ros_parameters import descriptor

__all__ = ["DESCRIPTION_QOS", "DescriptionSource", "steady_timer"]


def steady_timer(node: Node, period: float, callback):
    """A timer of ``node`` on the steady (monotonic) clock: it runs whatever ``use_sim_time`` says,
    also before the first ``/clock`` message (a timer on the node's clock would wait for it)."""
    return node.create_timer(period, callback, clock=Clock(clock_type=ClockType.STEADY_TIME))


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

    ``node`` is the :class:`~robot_dynamics.nodes.common.base.RobotNode` it serves (its subscription has no
    rclpy event handlers; :meth:`waiting_for` names publishers of incompatible QoS instead). Its
    timers run on the steady clock, so a node with ``use_sim_time`` finds its description before
    the first ``/clock`` message.

    The topic name is relative (``robot_description``, i.e. ``/robot_description`` in the root
    namespace), so namespaces and remapping work as for robot_state_publisher.
    """

    TOPIC = "robot_description"
    RETRY_PERIOD = 0.5  # s, between look-ups of the other node's parameter service
    REQUEST_TIMEOUT = 3.0  # s; a request still unanswered then (its server went away) is re-sent

    def __init__(self, node, on_urdf: Callable[[str, str], None], locked: bool = False):
        self._node = node
        self._on_urdf = on_urdf
        self._log = node.get_logger()
        for parameter in DESCRIPTION_PARAMETERS:  # (``locked``: read-only, robot_description's LOCK)
            node.declare_parameter(parameter.name, parameter.default, descriptor(parameter, locked))
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
        self._wake = steady_timer(node, 0.001, self._on_wake)
        # (without rclpy's event handlers: waiting_for names a publisher of incompatible QoS)
        self._sub = node.subscription(String, self.TOPIC, self._on_topic, DESCRIPTION_QOS)
        self._poll_timer = None
        self._poll_while_needed()

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
        publishers = self._node.get_publishers_info_by_topic(topic)
        incompatible = [f"{p.node_namespace.rstrip('/')}/{p.node_name}" for p in publishers
                        if p.qos_profile.durability != DurabilityPolicy.TRANSIENT_LOCAL
                        or p.qos_profile.reliability != ReliabilityPolicy.RELIABLE]
        not_matched = (f", of which {incompatible} do not match: they must publish reliable and transient local "
                       "(robot_state_publisher's QoS)") if incompatible else ""
        parts = [
            "parameter 'robot_description' is empty",
            f"no message on {topic} (publishers: {len(publishers)}{not_matched})",
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
        # one-shot: destroyed, not cancelled (a cancelled timer stays in every wait of the executor)
        self._node.destroy_timer(self._wake)
        self._wake = None
        self._update()

    def _poll_while_needed(self) -> None:
        """The timer that asks the other node exists only while nothing else gave a description (every
        timer is walked by the executor at each wait, a cost paid per message)."""
        needed = not (self._param_xml or self._topic_xml or self._remote_xml) and bool(self._remote_name)
        if needed and self._poll_timer is None:
            self._poll_timer = steady_timer(self._node, self.RETRY_PERIOD, self._poll_remote)
        elif not needed and self._poll_timer is not None:
            self._node.destroy_timer(self._poll_timer)
            self._poll_timer = None

    def _update(self) -> None:
        self._poll_while_needed()
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
        if changed and self._wake is None:
            self._wake = steady_timer(self._node, 0.001, self._on_wake)

    def _on_topic(self, msg: String) -> None:
        if self._param_xml and msg.data and msg.data != self._topic_xml:
            self._log.warn(f"a robot_description message on {self._sub.topic_name} is ignored: the node's "
                           "parameter robot_description is set (it takes precedence; set it to '' to follow the topic)")
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
