"""What every robot_dynamics node does, once: :class:`RobotNode`.

Parameters declared from the node's :class:`~robot_dynamics.nodes.common.parameters.Parameter` tuple into
a frozen ``Settings`` (a bad value ends the node at once, run-time changes are checked against the
model); the robot model from robot_description (:class:`DescriptionSource`), parsed and made
with the settings into the node's *plan*, the previous plan kept when a new description does not
load or fit; the model's status for the log and ``/diagnostics``; problems logged with a throttle
and kept for ``/diagnostics``.
"""

from __future__ import annotations

import re
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import SetParametersResult
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

import robot_dynamics as rd

from .description import DescriptionSource, steady_timer
from .parameters import LOCK
from .ros_parameters import declare_settings, fatal_parameter, lock_reason, refusal, watch_settings
from .safety import closest_name, cut, description_text

__all__ = ["DIAGNOSTICS_PERIOD", "OUTPUT_QOS", "RobotNode"]

DIAGNOSTICS_PERIOD = 1.0  # s, steady clock
WAITING_LOG_PERIOD = 5.0  # s, between "waiting for robot_description" lines
LOG_THROTTLE = 2.0  # s, per kind and reason of problem
#: reliable publishers match reliable and best-effort subscribers
#: every node's outputs and its diagnostics: reliable, the last 10 kept (ROS 2's default profile)
OUTPUT_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
#: command and desired inputs: a best-effort subscription matches any publisher (ros2_control's
#: forward_command_controller publishes reliably)
COMMAND_INPUT_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)
#: joint_states: SensorDataQoS (best effort, volatile) but 10 deep instead of 5, so that a scheduling
#: hiccup of a few milliseconds at 1 kHz delays messages instead of dropping them
JOINT_STATES_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT,
                              durability=DurabilityPolicy.VOLATILE)
#: No rclpy event handlers on a node's own publishers and subscriptions: the default ones (which log
#: a peer of incompatible QoS) are two waitables each, which the SingleThreadedExecutor walks at
#: every wait, twice per message (docs/benchmarks.md). For robot_description, where incompatible QoS
#: is the usual slip, the node's "waiting for robot_description" line names such publishers.
NO_EVENT_HANDLERS = PublisherEventCallbacks(use_default_callbacks=False)
NO_SUBSCRIPTION_EVENT_HANDLERS = SubscriptionEventCallbacks(use_default_callbacks=False)
_REASON = re.compile(r"[\d\[\('\"]")


class RobotNode(Node):
    """Base of the nodes. A subclass passes its ``parameters``, ``settings_type`` and
    ``coerce(field, value)`` and implements:

    - ``make_plan(base, settings)``: the plan for a parsed model, ``ValueError`` when they do not fit;
    - ``install(plan, source, old_settings)``: take the plan over (``self._base`` is the model
      it was made from, ``self._plan`` still the old plan);
    - ``diagnostics(now_ns)`` (with ``diagnostics=True``): the node's ``DiagnosticArray``, built
      with :meth:`diagnostic_array` and :meth:`model_status`.

    It calls :meth:`start_description` last in its constructor. ``self._plan`` is ``None`` until a
    description loads and fits.
    """

    #: what ``use_sim_time`` changes for the node, logged at start when it is true
    SIM_TIME = "stamps follow /clock (the robot model is loaded without waiting for it)"

    def __init__(self, node_name: str, parameters, settings_type, coerce, *, diagnostics: bool = True, **kwargs):
        super().__init__(node_name, **kwargs)
        self._settings = declare_settings(self, parameters, settings_type, coerce)  # a bad file ends it here
        self._base: rd.RobotModel | None = None  # the parsed model of the plan
        self._plan = None
        # the newest description that parsed but did not fit the settings; installed as soon as a
        # parameter change makes it fit
        self._pending_base: rd.RobotModel | None = None
        self._pending_source = ""
        self._model_status = (DiagnosticStatus.ERROR, "no robot model yet")
        self._model_source = ""
        self._problems: dict = {}  # kind -> [level, text, monotonic ns]
        self._last_log: dict = {}  # (kind, reason) -> monotonic ns
        self._n_rejected = 0  # messages refused since the last diagnostics
        self._publishers_made = {}  # topic -> publisher of publisher_when_needed
        self._n_diagnostics = 0
        self._description = None
        self._kernels_loaded = set()  # compile parts loaded by load_kernels
        if self.get_parameter("use_sim_time").value:
            self.get_logger().info(f"use_sim_time is true: {self.SIM_TIME}")
        watch_settings(self, parameters, lambda: self._settings, coerce, self._check_settings, self._apply_settings)
        self._diagnostics = diagnostics

    def start_description(self) -> None:
        """Start looking for robot_description, and the diagnostics (the subclass's last step of
        construction: the timers start counting now, after the kernels are compiled)."""
        try:
            self._description = DescriptionSource(self, self._on_urdf, self._locked())
        except ParameterException as exc:  # robot_description(_node) of the wrong type
            fatal_parameter(self, exc)
        self.add_on_set_parameters_callback(self._check_description_change)
        self._check_start_description()
        self._warn_unknown_parameters()
        if self._diagnostics:
            self._pub_diagnostics = self.publisher(DiagnosticArray, "/diagnostics")
            steady_timer(self, DIAGNOSTICS_PERIOD, self._on_diagnostics_timer)

    def load_kernels(self, part: str, what: str) -> None:
        """The kernels of the compile ``part`` (:data:`robot_dynamics.compiling.PARTS`), which a setting
        switched on: compiled now if numba's cache lacks them (said in the log, with how long it took),
        before the plan that calls them is installed, so that no message waits for them. Once per process."""
        if part in self._kernels_loaded:
            return
        from ...compiling import compile_and_report

        compile_and_report([part], what, self.get_logger().info)
        self._kernels_loaded.add(part)

    def publisher(self, msg_type, topic: str, qos=OUTPUT_QOS):
        """A publisher of the node's own: without rclpy's event handlers (:data:`NO_EVENT_HANDLERS`)."""
        return self.create_publisher(msg_type, topic, qos, event_callbacks=NO_EVENT_HANDLERS)

    def publisher_when_needed(self, msg_type, topic: str):
        """:meth:`publisher` of ``topic``, made at its first use (an output only some settings have: the
        topic appears in the graph once there is something to publish on it)."""
        found = self._publishers_made.get(topic)
        if found is None:
            found = self._publishers_made[topic] = self.publisher(msg_type, topic)
        return found

    def subscription(self, msg_type, topic: str, callback, qos):
        """A subscription of the node's own: without rclpy's event handlers (:data:`NO_SUBSCRIPTION_EVENT_HANDLERS`)."""
        return self.create_subscription(msg_type, topic, callback, qos, event_callbacks=NO_SUBSCRIPTION_EVENT_HANDLERS)

    def _locked(self) -> bool:
        """Whether the node has :data:`LOCK` and it is true (the torque-shaping parameters read-only)."""
        return getattr(self._settings, LOCK.field, False) is True

    # --- the model -------------------------------------------------------------------------------
    def _on_urdf(self, xml: str, source: str) -> None:
        if self._locked() and self._plan is not None:
            self.get_logger().warn(cut(f"robot_description from {source} ignored: {LOCK.name} is true, the model "
                                       f"{self._base.name!r} loaded first stays"))
            return
        keep = f"; keeping the previous model {self._base.name!r}" if self._plan is not None else ""
        level = DiagnosticStatus.WARN if keep else DiagnosticStatus.ERROR
        try:
            base = rd.load_urdf(description_text(xml))
        except Exception as exc:  # noqa: BLE001 - whatever the parser says, the node stays up
            reason = str(exc) or type(exc).__name__
            self.set_model_status(level, f"robot_description from {source} failed to load: {reason}{keep}")
            return
        try:
            plan = self.make_plan(base, self._settings)
        except Exception as exc:  # noqa: BLE001 - a computation the parameters make fail: their fault, said
            self._pending_base, self._pending_source = base, source
            if self._plan is None:
                self._model_source = source
            self.set_model_status(level, f"robot {base.name!r} from {source} does not fit the parameters: "
                                         f"{refusal(exc)}{keep}")
            return
        self._take(base, plan, source, self._settings)

    def _check_start_description(self) -> None:
        """A robot_description given at start (params file, ``--urdf``) must load and fit the
        settings: the node ends (FATAL, exit 2) otherwise, like for any other invalid parameter."""
        xml = self.get_parameter("robot_description").value
        if xml:
            try:
                base = rd.load_urdf(description_text(xml))
            except Exception as exc:  # noqa: BLE001 - whatever the parser says, it is the parameter's fault
                fatal_parameter(self, cut(f"robot_description: {exc}"))
            try:
                self.make_plan(base, self._settings)
            except Exception as exc:  # noqa: BLE001 - the other parameters do not fit this robot: say which
                fatal_parameter(self, cut(f"robot {base.name!r} (robot_description): {refusal(exc)}"))

    def _warn_unknown_parameters(self) -> None:
        """Name each parameter given to the node (params file, ``-p``) that it does not have."""
        known = set(self._parameters)
        for name in getattr(self, "_parameter_overrides", {}):
            if name not in known and not name.startswith("qos_overrides."):
                guess = closest_name(name, known)
                hint = f" (did you mean {guess!r}?)" if guess else ""
                self.get_logger().warn(cut(f"unknown parameter {name!r} ignored{hint}"))

    def _check_description_change(self, params) -> SetParametersResult:
        """A new robot_description parameter is accepted only if it loads and fits the settings
        ('' is accepted: the node then takes the topic's description)."""
        for p in params:
            if p.name == "robot_description" and p.value:
                try:
                    self.make_plan(rd.load_urdf(description_text(p.value)), self._settings)
                except Exception as exc:  # noqa: BLE001 - whatever the parser says, the change is refused
                    return SetParametersResult(successful=False, reason=cut(f"robot_description: {refusal(exc)}"))
        return SetParametersResult(successful=True)

    def set_parameters(self, parameter_list):
        """rclpy's ``set_parameters``, every refusal (rclpy's own checks too) logged."""
        results = super().set_parameters(parameter_list)
        for p, result in zip(parameter_list, results):
            self._log_refusal([p], result)
        return results

    def set_parameters_atomically(self, parameter_list):
        """rclpy's ``set_parameters_atomically`` (the parameter service's way), a refusal logged."""
        result = super().set_parameters_atomically(parameter_list)
        self._log_refusal(parameter_list, result)
        return result

    def _log_refusal(self, params, result) -> None:
        """Log a refusal; a change refused because :data:`LOCK` made the parameter read-only says so."""
        if not result.successful:
            locked = [reason for reason in (lock_reason(self, p.name) for p in params) if reason]
            if locked:
                result.reason = "; ".join(locked)
            names = ", ".join(p.name for p in params)
            self.get_logger().warn(cut(f"parameter change of {names} rejected: {result.reason}"))

    def _take(self, base, plan, source: str, old_settings) -> bool:
        """Install ``plan`` (made from ``base``); should installing fail, the node keeps what it had
        (the previous plan, or none), says why in the log and ``/diagnostics`` and returns False:
        never raises."""
        kept = (self._base, self._pending_base, self._pending_source, self._model_source)
        if base is not self._base:
            self._pending_base = None
            self._model_source = source
        self._base = base
        try:
            self.install(plan, source, old_settings)
        except Exception as exc:  # noqa: BLE001 - a node that cannot install a plan keeps the one it has
            self._base, self._pending_base, self._pending_source, self._model_source = kept
            if self._plan is None:
                self._pending_base, self._pending_source = base, source
            keep = f"; keeping the previous model {self._base.name!r}" if self._plan is not None else ""
            self.set_model_status(DiagnosticStatus.WARN if keep else DiagnosticStatus.ERROR,
                                  f"robot {base.name!r} from {source} with these parameters: {refusal(exc)}{keep}")
            return False
        self._plan = plan
        return True

    def _fit(self, settings):
        """``(base, plan, source)`` for ``settings`` on the pending description if it now fits, else
        on the current model; ValueError (the current model's reason) when neither fits."""
        if self._pending_base is not None:
            try:
                return self._pending_base, self.make_plan(self._pending_base, settings), self._pending_source
            except ValueError:
                if self._plan is None:
                    raise
        return self._base, self.make_plan(self._base, settings), self._model_source

    def _check_settings(self, candidate) -> tuple:
        """``ValueError`` unless ``candidate`` fits the model; the plan's notes it did not have (warnings)."""
        if self._plan is None:
            return ()
        _, plan, _ = self._fit(candidate)
        return tuple(note for note in getattr(plan, "notes", ()) if note not in getattr(self._plan, "notes", ()))

    def _apply_settings(self, candidate) -> None:
        """Take over accepted settings (rclpy's post-set callback: never raises)."""
        old, self._settings = self._settings, candidate
        if self._plan is None and self._pending_base is None:
            return
        try:
            base, plan, source = self._fit(candidate)
        except Exception as exc:  # noqa: BLE001 - only possible while no plan is active (validated otherwise)
            self.set_model_status(DiagnosticStatus.ERROR, f"robot {self._pending_base.name!r} loaded, but {refusal(exc)}")
            return
        if not self._take(base, plan, source, old):
            self._settings = old  # (the plan in use is the old settings')

    def set_model_status(self, level, text: str) -> None:
        """The model's status for ``/diagnostics``, logged now."""
        text = cut(text)
        self._model_status = (level, text)
        (self.get_logger().error if level == DiagnosticStatus.ERROR else self.get_logger().warn)(text)

    # --- problems: throttled log + diagnostics ---------------------------------------------------
    def problem(self, kind: str, text: str, now_ns: int, level=DiagnosticStatus.ERROR, *, log: bool = False) -> None:
        """Record a problem of ``kind`` for ``/diagnostics`` and log it, at most once per
        ``LOG_THROTTLE`` per kind and reason (the text up to its first number, name list or value);
        ``log``: now, whatever the throttle says."""
        text = cut(text)
        entry = self._problems.get(kind)
        if entry is None:
            self._problems[kind] = [level, text, now_ns]
        else:
            entry[0], entry[1], entry[2] = level, text, now_ns
        key = (kind, _REASON.split(text, 1)[0])
        last = self._last_log.get(key)  # (None: never logged)
        if log or last is None or now_ns - last >= LOG_THROTTLE * 1e9:
            self._last_log[key] = now_ns
            (self.get_logger().error if level == DiagnosticStatus.ERROR else self.get_logger().warn)(text)

    def reject(self, topic: str, text: str, now_ns: int, level=DiagnosticStatus.ERROR) -> None:
        """A message on ``topic`` refused for the reason ``text`` (counted for ``/diagnostics``)."""
        self._n_rejected += 1
        self.problem(topic, f"{topic} message rejected: {text}", now_ns, level)

    def recent_problems(self, now_ns: int) -> dict:
        """The problems of the last two diagnostics periods: kind -> [level, text, ns]."""
        return {k: v for k, v in self._problems.items() if now_ns - v[2] <= 2 * DIAGNOSTICS_PERIOD * 1e9}

    # --- diagnostics -----------------------------------------------------------------------------
    def _on_diagnostics_timer(self) -> None:
        self._n_diagnostics += 1
        if self._plan is None and self._n_diagnostics % int(WAITING_LOG_PERIOD / DIAGNOSTICS_PERIOD) == 1:
            if self._waiting():
                self.get_logger().info(self._description.waiting_for())
            else:
                self.get_logger().warn(self._model_status[1])
        self._pub_diagnostics.publish(self.diagnostics(time.monotonic_ns()))

    def model_status(self, values=()) -> tuple:
        """The ``("model", level, text, values)`` status: where the model comes from, or what the
        node waits for."""
        level, text = self._model_status
        if self._waiting():
            text = "no robot model: " + self._description.waiting_for()
        return ("model", level, text, [("source", self._model_source or "none"), *values])

    def _waiting(self) -> bool:
        """Whether the node has no model because no description came yet (not because one failed:
        then its status says why)."""
        level, text = self._model_status
        return (self._plan is None and self._pending_base is None and level == DiagnosticStatus.ERROR
                and "failed" not in text)

    def diagnostic_array(self, statuses) -> DiagnosticArray:
        """A DiagnosticArray stamped with the node's clock now, of ``statuses`` given as
        ``(suffix, level, message, values)``: each is named ``<node's fully qualified name>:
        <suffix>``, has the robot's name as ``hardware_id``, and its ``values`` (key, value) pairs
        become KeyValues of ``str(value)``."""
        name = self.get_fully_qualified_name()
        hardware_id = self._base.name if self._plan is not None else ""
        array_msg = DiagnosticArray(status=[
            DiagnosticStatus(level=level, name=f"{name}: {suffix}", message=cut(message),
                             hardware_id=cut(hardware_id, 200),
                             values=[KeyValue(key=k, value=cut(v)) for k, v in values])
            for suffix, level, message, values in statuses
        ])
        array_msg.header.stamp = self.get_clock().now().to_msg()
        return array_msg
