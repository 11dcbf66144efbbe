"""Pieces shared by the robot_dynamics ROS 2 nodes.

- :class:`DescriptionSource` finds the URDF (``robot_description``) the way robot_state_publisher
  users expect: own parameter, then the latched ``robot_description`` topic, then another node's
  parameter.
- :func:`warm_up_kernels` compiles the dynamics kernels at start-up, not in the first control cycles.
- :func:`run_node` is the body of every executable's ``main()``: rclpy's EventsExecutor driven
  with ``spin_once(timeout_sec=...)`` (the only way it works in the PyPI wheels, see the README),
  clean exit (status 0) on Ctrl-C, SIGTERM and external shutdown.
- Message converters: :func:`as_float_array`, :func:`matrix_msg`.
- Parameter plumbing between a node's ``Settings`` dataclass and rclpy: :func:`parameter_fields`,
  :func:`descriptor`, :func:`declare_settings`, :func:`watch_settings`, :func:`fatal_parameter`; and the value checks several nodes use:
  :func:`float_list`, :func:`bounded_float`, :func:`name_list`, :func:`duplicates`,
  :func:`require_joints`.
- Diagnostics: :func:`diagnostic_array`, :func:`log_problem`.

This module is the only one besides the nodes themselves that imports rclpy.
"""

from __future__ import annotations

import array
import gc
import dataclasses
import math
import signal
import time
from typing import Callable, Iterable, NoReturn, Sequence

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, ParameterType, SetParametersResult
from rcl_interfaces.srv import GetParameters
from rclpy.executors import ExternalShutdownException
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String

from robot_dynamics.warm_up import warm_up

__all__ = [
    "DESCRIPTION_QOS",
    "DescriptionSource",
    "as_float_array",
    "bounded_float",
    "declare_settings",
    "descriptor",
    "diagnostic_array",
    "duplicates",
    "fatal_parameter",
    "float_list",
    "log_problem",
    "matrix_msg",
    "name_list",
    "parameter_fields",
    "require_joints",
    "run_node",
    "warm_up_kernels",
    "watch_settings",
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


def warm_up_kernels(node: Node) -> None:
    """Compile (or load from numba's cache) the dynamics kernels before the node's loop starts;
    says so when that takes long (the first run after installing)."""
    started = time.monotonic()
    warm_up()
    took = time.monotonic() - started
    if took > 2.0:
        node.get_logger().info(f"compiled the dynamics kernels in {took:.1f} s (cached for the next start)")


def run_node(node_class: Callable[..., Node], args: Sequence[str] | None = None, **kwargs) -> int:
    """Body of a node executable's ``main()``.

    ``rclpy.init(args)`` -> ``node_class(**kwargs)`` -> EventsExecutor spun with
    ``spin_once(timeout_sec=0.1)`` until SIGINT (Ctrl-C), SIGTERM or an external shutdown; the
    node is destroyed and the context shut down. Returns 0 (the process exit status).

    While the node starts (loading a model, compiling kernels), Ctrl-C interrupts it at once.
    Once it spins, the signals only set a flag that the loop reads between spins: rclpy's own
    handlers, or Python's KeyboardInterrupt, would raise inside whatever runs when the signal
    lands, and inside a message conversion the EventsExecutor turns that into a RuntimeError and
    the process exits with a traceback instead of cleanly.
    """
    from rclpy.experimental import EventsExecutor
    from rclpy.signals import SignalHandlerOptions

    with rclpy.init(args=list(args) if args is not None else None,
                    signal_handler_options=SignalHandlerOptions.NO) as init:
        context = init.context
        node = None
        executor = None
        try:
            node = node_class(**kwargs)
            gc.freeze()  # start-up objects out of the collector's way: no long gen-2 pauses in the loop
            executor = EventsExecutor(context=context)
            executor.add_node(node)
            stop = []
            previous = {sig: signal.signal(sig, lambda signum, _frame: stop.append(signum))
                        for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                while context.ok() and not stop:
                    executor.spin_once(timeout_sec=0.1)
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        finally:
            if executor is not None:
                executor.shutdown(timeout_sec=1.0)
            if node is not None:
                node.destroy_node()
    return 0


# --- message converters -------------------------------------------------------------------------
def as_float_array(values) -> array.array:
    """Fast ndarray/sequence -> ``array.array('d')`` (what rclpy stores for float64[] fields)."""
    out = array.array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return out


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


# --- parameters ---------------------------------------------------------------------------------
# Every node keeps its parameter values in a frozen ``Settings`` dataclass and has a pure
# ``coerce_setting(field, value)`` (its own rules; ``ValueError`` with the reason when invalid).
# The functions below are the plumbing between those and rclpy's parameters.
def parameter_fields(settings_type, to_parameter: Callable[[str], str] | None = None) -> dict[str, str]:
    """ROS parameter name -> field of the dataclass ``settings_type``, for every field.

    The parameter is named like its field unless ``to_parameter(field)`` names it otherwise
    (e.g. ``payload_mass`` -> ``payload.mass``).
    """
    return {(to_parameter(f.name) if to_parameter else f.name): f.name for f in dataclasses.fields(settings_type)}


def descriptor(text: str, type_: int | None = None, *, low: float | None = None, high: float | None = None,
               read_only: bool = False) -> ParameterDescriptor:
    """A ParameterDescriptor described by ``text``.

    With ``type_`` (a ``ParameterType``) the parameter is statically typed; without, it is
    dynamically typed (numbers may be written 1000 or 1000.0; lists may be empty). ``low`` and
    ``high`` add a floating-point range (no step), which rclpy then enforces.
    """
    d = ParameterDescriptor(description=text, read_only=read_only)
    if type_ is None:
        d.dynamic_typing = True
    else:
        d.type = type_
    if low is not None:
        d.floating_point_range = [FloatingPointRange(from_value=low, to_value=high, step=0.0)]
    return d


def fatal_parameter(node: Node, exc: BaseException) -> NoReturn:
    """End the node's construction for an unusable parameter: FATAL log ``invalid parameter:
    <exc>`` and ``SystemExit(2)`` (the exit status of the executable)."""
    node.get_logger().fatal(f"invalid parameter: {exc}")
    raise SystemExit(2) from None


def declare_settings(node: Node, settings_type, specs: dict, coerce: Callable, fields: dict[str, str]):
    """Declare the node's parameters and return their values as a ``settings_type``.

    ``specs`` maps each parameter name to ``(default, descriptor)``, declared in that order;
    ``fields`` maps it to its field (see :func:`parameter_fields`). Each value is converted by
    ``coerce(field, value)``; a ``ValueError`` from it is fatal (:func:`fatal_parameter`), and so is
    rclpy's refusal of an override (``ParameterException``: a value of the wrong type or out of
    range): the node exits with a line naming the parameter, never a traceback.
    """
    values = {}
    for name, (default, desc) in specs.items():
        field = fields[name]
        try:
            param = node.declare_parameter(name, default, desc)
        except (ValueError, ParameterException) as exc:
            fatal_parameter(node, exc)
        try:
            values[field] = coerce(field, param.value)
        except ValueError as exc:
            fatal_parameter(node, exc)
    return settings_type(**values)


def watch_settings(node: Node, current: Callable, coerce: Callable, fields: dict[str, str],
                   check: Callable, apply: Callable) -> None:
    """Run-time parameter changes of a node whose values live in a frozen ``Settings`` dataclass.

    ``current()`` gives the node's settings now. A change to any of ``fields`` (parameter name ->
    field, see :func:`parameter_fields`) is coerced into a candidate ``Settings`` by
    ``coerce(field, value)``; that or ``check(candidate)`` raising ``ValueError`` rejects the change:
    the old value stays, and the reason goes back to the caller and to the log (``parameter change
    rejected: ...``). Once rclpy has set an accepted change, ``apply(candidate)`` takes it over.
    """
    def candidate(params):
        changes = {fields[p.name]: coerce(fields[p.name], p.value) for p in params if p.name in fields}
        return dataclasses.replace(current(), **changes) if changes else None

    def validate(params) -> SetParametersResult:
        try:
            changed = candidate(params)
            if changed is not None:
                check(changed)
        except ValueError as exc:
            node.get_logger().warn(f"parameter change rejected: {exc}")
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def take_over(params) -> None:
        changed = candidate(params)
        if changed is not None:
            apply(changed)

    node.add_on_set_parameters_callback(validate)
    node.add_post_set_parameters_callback(take_over)


# --- parameter values (pure checks; ValueError names the parameter and the problem) ---------------
def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def float_list(name: str, value, size: int | None = None, *, scalar: bool = False, strict: bool = True) -> tuple:
    """A list parameter ``name`` as a tuple of finite floats (of length ``size`` when given).

    ``scalar``: a single number is taken as a list of one. ``strict``: the value must be a list,
    tuple or ``array.array`` of ints and floats; otherwise (``strict=False``) ``None`` (how a YAML
    ``[]`` arrives) is an empty list and any sized value but a string, bytes or bool is accepted
    whose entries ``float()`` converts.
    """
    if scalar and _is_number(value):
        value = [value]
    if strict:
        if not isinstance(value, (list, tuple, array.array)) or not all(_is_number(v) for v in value):
            raise ValueError(f"{name} must be a list of numbers, got {value!r}")
        out = tuple(float(v) for v in value)
    else:
        if value is None:
            value = []
        if isinstance(value, (str, bytes, bool)) or not hasattr(value, "__len__"):
            raise ValueError(f"{name} must be a list of numbers, got {value!r}")
        try:
            out = tuple(float(v) for v in value)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a list of numbers, got {value!r}") from None
    if size is not None and len(out) != size:
        raise ValueError(f"{name} must have {size} values, got {len(out)}")
    if not all(math.isfinite(v) for v in out):
        raise ValueError(f"{name} must be finite, got {list(out)}")
    return out


def bounded_float(name: str, value, low: float, high: float, low_open: bool = False) -> float:
    """A number parameter ``name`` as a float in ``[low, high]`` (``(low, high]`` when ``low_open``)."""
    if not _is_number(value):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and (value > low if low_open else value >= low) and value <= high):
        bound = f"> {low:g}" if low_open else f">= {low:g}"
        raise ValueError(f"{name} must be {bound} and <= {high:g}, got {value!r}")
    return value


def name_list(name: str, value) -> tuple:
    """A list parameter ``name`` of joint names as a tuple (``None``: empty): non-empty strings,
    no name twice (the duplicates are named, sorted)."""
    names = tuple(value) if value is not None else ()
    if not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"{name} must be a list of joint names, got {value!r}")
    dup = duplicates(names)
    if dup:
        raise ValueError(f"{name} has duplicate names {sorted(dup)}")
    return names


def duplicates(names: Sequence) -> list:
    """The names that occur more than once in ``names``, each once, in order of first occurrence."""
    seen, dup = set(), []
    for n in names:
        if n in seen and n not in dup:
            dup.append(n)
        seen.add(n)
    return dup


def require_joints(model, names: Iterable[str], what: str) -> None:
    """``ValueError`` unless every one of ``names`` (given by parameter ``what``) is a joint
    (coordinate) of ``model``; the message lists the unknown names, says which of them are mimic
    joints, and lists the model's joints."""
    unknown = [n for n in names if n not in model.joint_names]
    if unknown:
        mimic = [n for n in unknown if n in model.mimic_joints]
        hint = f" ({', '.join(mimic)} mimic another joint and are not coordinates)" if mimic else ""
        raise ValueError(f"{what} {unknown} are not joints of robot {model.name!r}{hint}; "
                         f"its joints: {list(model.joint_names)}")


# --- diagnostics --------------------------------------------------------------------------------
def log_problem(logger, level: int, text: str) -> None:
    """Log ``text`` as an error for ``DiagnosticStatus.ERROR``, as a warning otherwise."""
    (logger.error if level == DiagnosticStatus.ERROR else logger.warn)(text)


def diagnostic_array(node: Node, hardware_id: str, statuses: Iterable[tuple]) -> DiagnosticArray:
    """A DiagnosticArray stamped with the node's clock now, of ``statuses`` given as
    ``(suffix, level, message, values)``: each is named ``<node's fully qualified name>: <suffix>``,
    has ``hardware_id``, and its ``values`` (key, value) pairs become KeyValues of ``str(value)``."""
    name = node.get_fully_qualified_name()
    array_msg = DiagnosticArray(status=[
        DiagnosticStatus(level=level, name=f"{name}: {suffix}", message=message, hardware_id=hardware_id,
                         values=[KeyValue(key=k, value=str(v)) for k, v in values])
        for suffix, level, message, values in statuses
    ])
    array_msg.header.stamp = node.get_clock().now().to_msg()
    return array_msg
