"""The dynamics node: URDF from robot_description, joint states in, torques and mass matrix out.

Executable ``dynamics_node`` (default node name ``robot_dynamics``; ``dynamics_node --help`` lists
its parameters and topics). In short:

* subscriptions ``joint_states`` (sensor_msgs/JointState, best effort like SensorDataQoS, depth 10,
  merged by name), ``desired_accelerations`` (std_msgs/Float64MultiArray) and ``desired_state``
  (trajectory_msgs/JointTrajectory, one point, by name); publications ``gravity_torques``, ``bias_torques``,
  ``computed_torques`` (JointState), ``mass_matrix``, ``effort_command`` (Float64MultiArray), ``/diagnostics``;
* the parts switched on by parameters, each in its module: task space (``desired_pose`` ...:
  ``task_space_inputs``), external torques and collisions (``external_torque_outputs``), the F/T sensor
  (``ft_sensor``), payload estimation (``payload``).

Every joint-state message that completes a fresh state gives ONE snapshot ``(q, qd)`` and ONE pass
over it, :func:`robot_dynamics.compute_terms` into the plan's workspace (:class:`robot_dynamics.Data`):
the joint poses once, then of ``g`` (gravity), ``h`` (bias) and ``M`` only those an output needs. An
output is needed when someone subscribes to it (asked of rclpy per message) and the settings publish
it; ``effort_command`` needs what ``command_source`` names, and its gravity hold ``g``. The computed
torques are :func:`robot_dynamics.control.laws.computed_torque` of that ``M`` and ``h`` (plus
:func:`robot_dynamics.rigid_body.friction.friction_torques` with ``compensate_friction``); every output is stamped
with the message's stamp. Nothing is published from a state with a joint older than
``state_timeout``, from a rejected (non-finite, wrong-length, duplicate-name) message, or from a
desired input older than ``desired_timeout``; every output is checked (finite and plausible) and
published on its own (one that is refused never stops another). ``effort_command`` is decided in one
place, :mod:`~robot_dynamics.nodes.dynamics.command_path`: the ``command_source`` law, or the gravity hold
whenever anything on its way is refused (a latched collision reaction, missing velocities, a stale
desired input, a position error beyond ``max_position_error``, a torque beyond the plausibility rule),
held within the URDF effort limits, said once in the log and in /diagnostics.

Settings and plan: :mod:`.plan`; input checks: :mod:`.inputs`; this module converts messages and diagnoses.
"""

from __future__ import annotations

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

import robot_dynamics as rd
from robot_dynamics.control import laws as control
from robot_dynamics.rigid_body.data import BIAS, GRAVITY, MASS, WORLD, compute_terms
from robot_dynamics.rigid_body.friction import friction_torques

from ..common.base import COMMAND_INPUT_QOS, JOINT_STATES_QOS, RobotNode
from ..common.cdr import JointStateWriter
from .command_path import HOLD, CommandPath
from .external_torque_outputs import ExternalTorqueOutputs
from .diagnostics import Counters, dynamics_statuses
from .payload import PayloadEstimation
from .ft_sensor import FtSensorOutputs
from ..common.converters import as_float_array, matrix_msg
from .inputs import DesiredStateReader, JointStateMerger, Rejected, desired_accelerations
from .plan import PARAMETERS, Desired, Plan, Settings, coerce_setting, make_plan, servo_terms
from ..common.safety import cut
from .task_space_command import TaskSpaceCommand

class _OutputMessages:
    """The outputs' messages, names and layout laid out once per output order: the JointState outputs
    serialized (:class:`~robot_dynamics.nodes.common.cdr.JointStateWriter`: rclpy would convert every name of
    a message object on every publish), the others as message objects."""

    def __init__(self, names: list):
        n = len(names)
        self.torques = JointStateWriter(names, efforts_only=True)
        self.mass = matrix_msg(np.zeros((n, n)))
        self.command = Float64MultiArray()


class DynamicsNode(RobotNode):
    """See the module docstring and ``dynamics_node --help`` for the interface."""

    def __init__(self, node_name: str = "robot_dynamics", **kwargs):
        super().__init__(node_name, PARAMETERS, Settings, coerce_setting, **kwargs)
        self._state: JointStateMerger | None = None
        self._desired_state: DesiredStateReader | None = None
        self._desired: Desired | None = None
        self._msgs: _OutputMessages | None = None
        self._command_path = CommandPath()
        self._command_note = None  # (level, text, ns) of the last effort_command that held gravity
        self._stats = Counters(time.monotonic_ns())

        self._pub_gravity = self.publisher(JointState, "gravity_torques")
        self._pub_bias = self.publisher(JointState, "bias_torques")
        self._pub_computed = self.publisher(JointState, "computed_torques")
        self._pub_mass = self.publisher(Float64MultiArray, "mass_matrix")
        self._pub_command = self.publisher(Float64MultiArray, "effort_command")
        self.subscription(JointState, "joint_states", self._on_joint_states, JOINT_STATES_QOS)
        self.subscription(Float64MultiArray, "desired_accelerations", self._on_desired_accelerations, COMMAND_INPUT_QOS)
        self.subscription(JointTrajectory, "desired_state", self._on_desired_state, COMMAND_INPUT_QOS)
        self._task = TaskSpaceCommand(self, COMMAND_INPUT_QOS)
        self._external_torque = ExternalTorqueOutputs(self)  # external torques, collision (docs/contact.md)
        self._payload = PayloadEstimation(self)  # ~/estimate_payload, payload_estimate (docs/payload.md)
        self._ft_sensor = FtSensorOutputs(self, COMMAND_INPUT_QOS)  # docs/ft_sensor.md
        self.start_description()

    # --- the model ---------------------------------------------------------------------------------
    def make_plan(self, base: rd.RobotModel, settings: Settings) -> Plan:
        return make_plan(base, settings)

    def install(self, plan: Plan, source: str, old_settings: Settings) -> None:
        old = self._plan
        log = self.get_logger()
        if plan.external_torque is not None or plan.ft_sensor is not None:
            self.load_kernels("estimators", "the observer's and F/T sensor's kernels")
        if old is None or old.base is not plan.base:
            model = plan.base
            text = f"robot {model.name!r} from {source}: {model.nv} joints {list(model.joint_names)}"
            if old is not None and old.base.joint_names != model.joint_names:
                removed = [n for n in old.base.joint_names if n not in model.joint_names]
                added = [n for n in model.joint_names if n not in old.base.joint_names]
                dropped = "desired inputs dropped, " if old.names != plan.names else ""
                log.warn(cut(f"the new robot_description changes the joints (removed {removed}, added {added}, "
                             f"or reordered); {dropped}joint states kept by name"))
            self._model_status = (DiagnosticStatus.OK, cut("loaded " + text))
            log.info(self._model_status[1])
        if old is None or old.names != plan.names:
            self._desired = None
        self._state = JointStateMerger(plan, self._state)
        self._desired_state = DesiredStateReader(plan)
        self._msgs = _OutputMessages(plan.names)
        self._task.install(plan)
        self._external_torque.install(plan)
        self._payload.install(plan)
        self._ft_sensor.install(plan)

    # --- inputs ------------------------------------------------------------------------------------
    def _on_joint_states(self, msg: JointState) -> None:
        now = time.monotonic_ns()
        self._stats.n_in += 1
        plan, state = self._plan, self._state
        if plan is None:
            return
        try:
            fresh, mimic_warning = state.update(msg.name, msg.position, msg.velocity, msg.effort, now)
        except Rejected as exc:
            self.reject("joint_states", str(exc), now)
            return
        if mimic_warning:
            self.problem("mimic", mimic_warning, now, DiagnosticStatus.WARN)
        self._external_torque.take_efforts(msg.name, msg.effort, msg.header.stamp, now)
        self._payload.take(msg, state, fresh, now)
        if not fresh:
            return  # nothing of this robot in the message (e.g. another robot's joints): no output
        self._ft_sensor.take_state(state, msg.header.stamp, now)
        try:
            self._compute_and_publish(plan, state, msg.header.stamp, now)
        except Exception as exc:  # noqa: BLE001 - inputs are validated; whatever else happens, stay up
            self.problem("output", f"not publishing: the computation failed: {exc!r}", now)
            self._hold_after_failure(plan, state, exc, now)

    def _hold_after_failure(self, plan: Plan, state: JointStateMerger, exc: Exception, now: int) -> None:
        """effort_command after an unexpected failure of the message's computation: the gravity hold of
        the measured positions (the command never goes silent while a hold can be computed)."""
        source = plan.settings.command_source
        if source == "none" or not self._listeners()[4]:  # (effort_command heard)
            return
        try:
            compute_terms(plan.data, state.q, None, GRAVITY)
            self._publish_command(plan, source, None, plan.data.g, (("law", f"the computation failed: {exc!r}"),), now)
        except Exception as again:  # noqa: BLE001 - nothing to fall back to: said, and the node stays up
            self.problem("output", f"effort_command not published: the gravity hold failed too: {again!r}", now)

    def _on_desired_accelerations(self, msg: Float64MultiArray) -> None:
        now = time.monotonic_ns()
        if self._plan is not None:
            try:
                self._desired = desired_accelerations(msg.data, self._plan, now)
            except Rejected as exc:
                self.reject("desired_accelerations", str(exc), now)

    def _on_desired_state(self, msg: JointTrajectory) -> None:
        now = time.monotonic_ns()
        if self._plan is not None:
            try:
                self._desired = self._desired_state.read(msg.joint_names, msg.points, now)
            except Rejected as exc:
                self.reject("desired_state", str(exc), now)

    # --- the hot path ------------------------------------------------------------------------------
    def _listeners(self):
        """Whether anyone subscribes to gravity_torques, bias_torques, computed_torques, mass_matrix and
        effort_command, asked per message: 0.5 us of CPU each (measured), and never a message late."""
        return (self._pub_gravity.get_subscription_count() > 0, self._pub_bias.get_subscription_count() > 0,
                self._pub_computed.get_subscription_count() > 0, self._pub_mass.get_subscription_count() > 0,
                self._pub_command.get_subscription_count() > 0)

    def _compute_and_publish(self, plan: Plan, state: JointStateMerger, stamp, now: int) -> None:
        t0 = time.perf_counter_ns()
        limit = now - plan.state_timeout_ns
        if state.q_ns.min() < limit:
            self.problem("state", "not publishing: " + state.missing(state.q_ns, now, "position"), now)
            return
        s = plan.settings
        q, qd = state.q, state.qd
        vel_ok = state.qd_ns.min() >= limit
        desired, no_desired = self._desired, "no desired input yet (desired_state or desired_accelerations)"
        if desired is not None and now - desired.received_ns > plan.desired_timeout_ns:
            no_desired = (f"{desired.topic} is stale ({(now - desired.received_ns) * 1e-9:.3f} s > desired_timeout "
                          f"{s.desired_timeout:g} s)")
            desired = None  # (said by the command path, and in the inputs' diagnostics)
        want_computed = desired is not None and s.command_source != "task_space"  # (it has its own inputs)
        no_velocity = "" if vel_ok else state.missing(state.qd_ns, now, "velocity")
        if (want_computed or s.publish_bias_torques) and not vel_ok:
            self.problem("velocity", "no computed or bias torques: " + no_velocity,
                         now, DiagnosticStatus.ERROR if want_computed else DiagnosticStatus.WARN)
            want_computed = False

        # What is published (asked for, and listened to) decides what the one pass computes.
        gravity_heard, bias_heard, computed_heard, mass_heard, command_heard = self._listeners()
        command = s.command_source
        command_out = command if command_heard else "none"
        publish_bias = vel_ok and s.publish_bias_torques and bias_heard
        publish_mass = s.publish_mass_matrix and mass_heard
        computed = want_computed and (computed_heard or command_out == "computed")
        outputs = ((GRAVITY if gravity_heard or command_out != "none" else 0) | (BIAS if publish_bias or computed else 0)
                   | (MASS if publish_mass or computed else 0))
        task = command == "task_space" and (computed_heard or command_out == "task_space")
        if task:  # the task-space law reads M, h, the world poses and the bodies' Jdot qd from the same pass
            outputs |= GRAVITY | ((BIAS | MASS | WORLD) if vel_ok else 0)
        if vel_ok:  # and the observer p, C^T qd - g and the world poses
            outputs |= self._external_torque.terms
        data = plan.data
        if outputs:
            compute_terms(data, q, qd if outputs & BIAS else None, outputs)
        self._external_torque.observe(plan, state, stamp, now, data)  # before the command (a collision changes it)

        # Each output checked and published on its own (one that is not finite never stops another),
        # the control output first (what a 1 kHz loop waits for); message objects reused (publish copies).
        law, refusals = None, ()
        if task:
            law, problem = self._task_space_torque(plan, data, q, qd, vel_ok, computed_heard, now, stamp)
            refusals = (("velocity", no_velocity), ("desired", self._task.refusal), ("law", problem))
        if computed:
            law, tracking, problem = self._computed_torque(plan, desired, data, q, qd, computed_heard, stamp, now)
            refusals = (("tracking", tracking), ("law", problem))
        elif command == "computed":
            refusals = (("velocity", no_velocity), ("desired", no_desired))
        if command_out != "none":
            latched = "collision reaction gravity latched (until ~/reset_collision)" if self._external_torque.latched else ""
            self._publish_command(plan, command_out, law, data.g, (("collision", latched),) + refusals, now)
        self._external_torque.publish()
        msgs = self._msgs
        if gravity_heard and self._publishable("gravity_torques", data.g, now):
            self._pub_gravity.publish(msgs.torques.serialize(stamp.sec, stamp.nanosec, None, None,
                                                             data.g if plan.full else data.g[plan.out]))
        if publish_bias and self._publishable("bias_torques", data.h, now):
            self._pub_bias.publish(msgs.torques.serialize(stamp.sec, stamp.nanosec, None, None,
                                                          data.h if plan.full else data.h[plan.out]))
        if publish_mass and self._publishable("mass_matrix", data.M, now):
            M = data.M
            msgs.mass.data = as_float_array(M if plan.full else M[np.ix_(plan.out, plan.out)])
            self._pub_mass.publish(msgs.mass)
        self._stats.computed_in(time.perf_counter_ns() - t0)

    def _publishable(self, what: str, values: np.ndarray, now: int, inputs=()) -> bool:
        """Whether ``values`` (model order) may be published (:meth:`_refusal`)."""
        return not self._refusal(what, values, now, inputs)

    def _refusal(self, what: str, values: np.ndarray, now: int, inputs=()) -> str:
        """'' when ``values`` (model order) may be published: believed by the plan's plausibility rule
        (the one its inputs pass; a NaN or inf is never believed); otherwise the reason, reported,
        naming the first of ``inputs`` (``(name, array)`` pairs it was computed from) not believed."""
        plausibility = self._plan.plausibility
        if not plausibility.output_problem(values):
            return ""
        for name, array in inputs:  # (only once something is wrong: the cause, for the diagnosis)
            if plausibility.output_problem(array):
                what, values = f"{what} ({name})", array
                break
        reason = ("not finite" if not np.isfinite(values).all() else
                  f"not plausible: {plausibility.output_problem(values)}")
        self.problem("output", f"not publishing {what}: {reason}", now)
        return f"{what} {reason}"

    def _computed_torque(self, plan: Plan, desired: Desired, data, q, qd, heard: bool, stamp, now: int):
        """``(tau, tracking, refusal)``: the computed-torque law (model order; published on computed_torques
        when heard and believed), the reason its position error is beyond max_position_error and the
        reason it is not believed ('' each when there is none)."""
        s = plan.settings
        M, h = data.M, data.h
        qdd_d, e, ed = servo_terms(plan, desired, q, qd)
        with np.errstate(all="ignore"):  # (huge but finite desired inputs overflow: checked just below)
            tau = control.computed_torque(M, h, qdd_d, e, ed, plan.kp, plan.kd)
            if s.compensate_friction:
                tau += friction_torques(plan.model.viscous_damping, plan.model.friction, s.friction_velocity, qd)
        refusal = self._refusal("computed_torques", tau, now, (("mass matrix", M), ("bias torques", h)))
        if not refusal:
            if heard:
                self._pub_computed.publish(self._msgs.torques.serialize(stamp.sec, stamp.nanosec, None, None,
                                                                        tau if plan.full else tau[plan.out]))
            self._stats.n_computed += 1
        worst = int(np.argmax(np.abs(e))) if s.max_position_error > 0 else -1
        if worst >= 0 and abs(e[worst]) > s.max_position_error:
            return tau, (f"position error {e[worst]:.4g} of {cut(plan.model.joint_names[worst], 200)!r} "
                         f"beyond max_position_error {s.max_position_error:g}"), refusal
        return tau, "", refusal

    def _task_space_torque(self, plan: Plan, data, q, qd, vel_ok: bool, heard: bool, now: int, stamp):
        """``(tau, refusal)``: the task-space law's torque (model order; published on computed_torques when
        heard and believed), None without one (the reason: ``self._task.refusal``), and the reason it is
        not believed ('')."""
        tau = self._task.torque(plan, data, q, qd, vel_ok, now)
        if tau is not None and plan.settings.compensate_friction:
            s = plan.settings
            with np.errstate(all="ignore"):
                tau = tau + friction_torques(plan.model.viscous_damping, plan.model.friction, s.friction_velocity, qd)
        refusal = "" if tau is None else self._refusal("computed_torques (task space)", tau, now)
        if tau is not None and not refusal:
            if heard:
                self._pub_computed.publish(self._msgs.torques.serialize(stamp.sec, stamp.nanosec, None, None,
                                                                        tau if plan.full else tau[plan.out]))
            self._stats.n_computed += 1
        return tau, refusal

    def _publish_command(self, plan: Plan, source: str, law, hold: np.ndarray, refusals, now: int) -> None:
        """effort_command as :class:`~robot_dynamics.nodes.dynamics.command_path.CommandPath` decides: the law, or
        the gravity hold said once in the log (and in /diagnostics while it lasts)."""
        before = self._command_path.carries
        decision = self._command_path.decide(plan, source, law, hold, refusals)
        if decision.changed:
            log = self.get_logger()
            if decision.carries == HOLD:
                log.warn(cut(f"{decision.reason}: effort_command holds gravity"))
            elif decision.torque is None:
                log.error(cut(f"effort_command not published: {decision.reason}"))
            elif before:
                log.info(f"effort_command carries {decision.carries} again")
        if decision.reason:
            self._command_note = (DiagnosticStatus.ERROR if decision.torque is None else DiagnosticStatus.WARN,
                                  cut(f"{decision.reason}: effort_command holds gravity" if decision.torque is not None
                                      else f"effort_command not published: {decision.reason}"), now)
        if decision.torque is None:
            return
        if decision.saturated:
            self.problem("saturation", f"effort_command saturated to the URDF effort limits of "
                         f"{cut(decision.saturated, 300)}", now, DiagnosticStatus.WARN)
        self._msgs.command.data = as_float_array(decision.torque)
        self._pub_command.publish(self._msgs.command)

    # --- diagnostics -------------------------------------------------------------------------------
    def diagnostics(self, now: int) -> DiagnosticArray:
        """The DiagnosticArray of the last period (and reset the period's counters)."""
        statuses = dynamics_statuses(self, now)
        self._stats.reset(now)
        self._n_rejected = 0
        return self.diagnostic_array(statuses)
