"""The simulator node: the forward dynamics of the same URDF model, integrated in (or faster than) real time.

Executable ``simulator_node``, default node name ``robot_dynamics_simulator``
(``simulator_node --help`` lists its parameters and topics). In short:

* ``joint_states`` (sensor_msgs/JointState) at ``publish_rate`` (simulated time): position,
  velocity and effort = the actuator torque actually applied (after saturation), the ``joints``
  first, then the other coordinates of the model, then the mimic and coupled joints (``q_joint =
  E q + o``, ``qd_joint = E qd``, effort 0: no actuator drives them); ``/clock`` (rosgraph_msgs/Clock) when
  ``publish_clock``; ``/diagnostics`` once a second;
* with elastic joints (``joint_stiffness``), ``motor_states`` (sensor_msgs/JointState) with every
  ``joint_states`` message, same stamp, the coordinates' names: the motor positions and velocities reflected to
  the link side (rad, rad/s; ``docs/motors.md``) and the applied motor torque;
* ``effort_command`` (std_msgs/Float64MultiArray, the ``joints`` order), ``effort_command_named``
  (sensor_msgs/JointState, efforts by name, any subset), ``external_wrench``
  (geometry_msgs/WrenchStamped on the link ``header.frame_id``, in its axes, moment about its origin;
  turned into world axes at the state it arrives in and held until the next message on that link);
  services ``~/reset`` (std_srvs/Trigger) and ``~/pause`` (std_srvs/SetBool).

The physics is :class:`robot_dynamics.simulation.simulator.Simulator`; this module paces it, converts
messages and enforces the safety rules: a bad command never reaches the state
(:mod:`~robot_dynamics.nodes.simulator.inputs`); a command older than ``command_timeout``
(simulated time) is replaced as ``on_command_timeout`` says (warned once); a non-finite state
stops the integration (reported) and the last finite state is published, stale, until ``~/reset``;
a state that the dynamics node's plausibility rule would not believe
(:class:`~robot_dynamics.nodes.common.safety.Plausibility`) is never published (reported), the last finite
state after a non-finite one included.

Stamps: with ``publish_clock`` simulated time from 0 (the ``/clock``); without it, the wall-clock
time of the (re)start plus the simulated time, re-anchored forward after a pause or a lag. The pace
is kept by the steady clock, whatever ``use_sim_time`` says.
"""

from __future__ import annotations

import math
import time

import numpy as np

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger

import robot_dynamics as rd
from robot_dynamics.simulation.simulator import SimulationError, Simulator

from ..common.base import COMMAND_INPUT_QOS, RobotNode
from ..common.cdr import JointStateWriter
from ..common.contact_messages import WrenchWriter
from ..common.converters import stamp_of
from ..common.description import steady_timer
from ..common.parameters import Rejected
from ..common.safety import cut
from .contact import contact_wrench_messages, plausible_wrenches
from ...simulation.drives import Commands, drive_torques
from .inputs import effort_command, external_wrench, named_efforts
from .diagnostics import simulation_status
from .plan import PARAMETERS, Plan, Settings, coerce_setting, make_plan, configure

TICK_BUDGET = 0.010        # s of wall time spent integrating per timer callback before yielding
MAX_LAG = 0.2              # s of simulated time behind the pace before the pace is re-anchored
MAX_TICK, MIN_TICK = 0.010, 0.001  # s: longest, shortest timer period (the pace is kept by the wall clock)


class SimulatorNode(RobotNode):
    """See the module docstring and ``simulator_node --help`` for the interface."""

    def __init__(self, node_name: str = "robot_dynamics_simulator", **kwargs):
        super().__init__(node_name, PARAMETERS, Settings, coerce_setting, **kwargs)
        self._sim: Simulator | None = None
        self._paused, self._failure = False, ""  # failure: why integration stopped ("" while running)
        self._silent = False  # True while the (stopped) state is not plausible: nothing is published
        self._commands = Commands(0)
        self._wrenches: dict = {}
        self._n_steps = self._n_published = 0
        self._stats_wall, self._stats_sim = time.monotonic(), 0.0

        self._pub_states = self.publisher(JointState, "joint_states")
        self.subscription(Float64MultiArray, "effort_command", self._on_effort_command, COMMAND_INPUT_QOS)
        self.subscription(JointState, "effort_command_named", self._on_effort_command_named, COMMAND_INPUT_QOS)
        self.subscription(WrenchStamped, "external_wrench", self._on_external_wrench, COMMAND_INPUT_QOS)
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.create_service(SetBool, "~/pause", self._on_pause)
        self._tick = None
        self._restart_timer()
        self.start_description()

    # --- the model ---------------------------------------------------------------------------------
    def make_plan(self, base: rd.RobotModel, settings: Settings) -> Plan:
        return make_plan(base, settings)

    def install(self, plan: Plan, source: str, old: Settings) -> None:
        """Start (or restart, for a new robot_description) the simulation of ``plan``'s model, or
        take over new settings of the same model."""
        if plan.ft_sensor is not None:
            self.load_kernels("estimators", "the F/T sensor's kernels")
        self._state_writer = JointStateWriter(plan.state_names)
        self._motor_writer = JointStateWriter(plan.state_names[:plan.model.nv])
        new = plan.settings
        if self._plan is not None and plan.base is self._plan.base and plan.stiffness == self._plan.stiffness:
            sim = self._sim
            sim.model = plan.model
            configure(sim, new, plan.contact)
            if new.joints != old.joints:
                self._commands = Commands(plan.model.nv, sim.q)
            if (new.physics_rate, new.publish_rate, new.real_time_factor) != \
                    (old.physics_rate, old.publish_rate, old.real_time_factor):
                self._reanchor()
                self._restart_timer()
            if new.command_timeout != old.command_timeout:
                self._commands.schedule_expiry(new.command_timeout)
            return
        model, log = plan.base, self.get_logger()
        if self._plan is not None:
            why = "joint_stiffness changed" if plan.base is self._plan.base else f"new robot_description from {source}"
            log.warn(f"{why}: the simulation restarts from the initial state")
        text = cut(f"robot {model.name!r} from {source}: {model.nv} joints {list(model.joint_names)}", 600)
        log.info(f"simulating {text} with {new.integrator} at {new.physics_rate:g} Hz")
        for note in plan.notes:
            log.warn(cut(note))
        self._model_status = (DiagnosticStatus.OK, "simulating " + text)
        t = self._sim.t if self._sim is not None else 0.0  # time never runs backwards
        self._sim = Simulator(plan.model, plan.q0, plan.qd0, t=t, joint_stiffness=plan.stiffness or None)
        configure(self._sim, new, plan.contact)
        if self._sim.t == 0.0:
            self._epoch_ns = 0 if new.publish_clock else time.time_ns()
        self._run_from_initial_state(plan)

    def _run_from_initial_state(self, plan: Plan) -> None:
        """No commands or wrenches yet, no failure, the initial state published, paced from now."""
        self._commands = Commands(plan.model.nv, plan.q0)
        self._wrenches = {}
        self._failure, self._silent = "", False
        self._reanchor()
        self._publish_state(plan)
        self._next_publish = self._sim.t + 1.0 / plan.settings.publish_rate

    # --- inputs ------------------------------------------------------------------------------------
    def _accept(self, check, topic: str, *message) -> None:
        plan = self._plan
        if plan is None:
            return
        try:
            index, efforts = check(*message, plan)
        except Rejected as exc:
            self.reject(topic, str(exc), time.monotonic_ns(), DiagnosticStatus.WARN)
            return
        revived = self._commands.accept(index, efforts, self._sim.t, self._settings.command_timeout)
        if revived:
            self.get_logger().info(f"effort commands for {[plan.model.joint_names[i] for i in revived]} are fresh again")

    def _on_effort_command(self, msg: Float64MultiArray) -> None:
        self._accept(effort_command, "effort_command", msg.data)

    def _on_effort_command_named(self, msg: JointState) -> None:
        self._accept(named_efforts, "effort_command_named", msg.name, msg.effort)

    def _on_external_wrench(self, msg: WrenchStamped) -> None:
        plan = self._plan
        if plan is None:
            return
        w = msg.wrench
        try:
            link, wrench = external_wrench(msg.header.frame_id, (w.torque.x, w.torque.y, w.torque.z),
                                           (w.force.x, w.force.y, w.force.z), plan, self._sim.q)
        except Rejected as exc:
            self.reject("external_wrench", str(exc), time.monotonic_ns(), DiagnosticStatus.WARN)
            return
        if wrench.any():
            self._wrenches[link] = wrench
        else:
            self._wrenches.pop(link, None)

    # --- services ----------------------------------------------------------------------------------
    def _on_reset(self, request, response):
        plan = self._plan
        if plan is None:
            response.success, response.message = False, "no robot model yet"
            return response
        self._sim.reset(plan.q0, plan.qd0)
        if self._failure:
            self.get_logger().info("reset: integration resumes from the initial state")
        self._problems.clear()  # what went wrong before the reset is no longer the state of things
        self._run_from_initial_state(plan)
        response.success = True
        response.message = f"reset to the initial state at simulated time {self._sim.t:.6f} s"
        return response

    def _on_pause(self, request, response):
        if request.data != self._paused:
            self._paused = bool(request.data)
            if not self._paused:
                self._reanchor()
            self.get_logger().info("paused" if self._paused else "resumed")
        response.success = True
        response.message = "paused" if self._paused else "running"
        return response

    # --- pacing and stepping -----------------------------------------------------------------------
    def _restart_timer(self) -> None:
        s = self._settings
        if self._tick is not None:
            self.destroy_timer(self._tick)
        if s.real_time_factor > 0:
            period = min(max(1.0 / (s.publish_rate * s.real_time_factor), MIN_TICK), MAX_TICK)
        else:
            period = MIN_TICK
        self._tick = steady_timer(self, period, self._advance)

    def _reanchor(self) -> None:
        """Pace from now; without /clock, move the stamps' epoch so they continue from the wall clock."""
        self._anchor_wall = time.monotonic()
        self._last_wall_publish = -math.inf
        if self._sim is not None:
            self._anchor_sim = self._sim.t
            if not self._settings.publish_clock:
                self._epoch_ns = max(self._epoch_ns, time.time_ns() - round(self._sim.t * 1e9))

    def _advance(self) -> None:
        """Integrate up to the paced target (or for TICK_BUDGET at real_time_factor 0), publishing on schedule."""
        sim = self._sim
        if sim is None:
            return
        s = self._settings
        now = time.monotonic()
        if self._paused or self._failure:
            if now - self._last_wall_publish >= 1.0 / s.publish_rate:  # keep the (frozen) state visible
                self._last_wall_publish = now
                self._publish_state(self._plan)
            return
        dt = 1.0 / s.physics_rate
        deadline = now + TICK_BUDGET
        if s.real_time_factor > 0:
            target = self._anchor_sim + s.real_time_factor * (now - self._anchor_wall)
            if target - sim.t > MAX_LAG:
                self.problem("pace", f"cannot keep up with real_time_factor {s.real_time_factor:g}: "
                             f"{target - sim.t:.3f} s of simulated time behind; dropping the lag",
                             time.monotonic_ns(), DiagnosticStatus.WARN)
                self._reanchor()
                target = sim.t + dt
            while sim.t + 0.5 * dt <= target and not self._failure:
                self._step(dt)
                if time.monotonic() > deadline:
                    break
        else:
            context = self.context
            while not self._failure and context.ok():
                for _ in range(10):
                    self._step(dt)
                    if self._failure:
                        break
                if time.monotonic() > deadline:
                    break

    def _step(self, dt: float) -> None:
        sim, commands, s = self._sim, self._commands, self._settings
        if sim.t > commands.next_expiry:
            expired = commands.expire(sim.t, s.command_timeout, sim.q)
            if len(expired):
                names = [self._plan.model.joint_names[i] for i in expired]
                self.problem("command", f"no effort command for {names} in the last {s.command_timeout:g} s "
                             f"(simulated): {s.on_command_timeout} until a new one arrives", time.monotonic_ns(),
                             DiagnosticStatus.WARN, log=True)  # every new episode is logged
        try:
            motors = (sim.motor_q, sim.motor_qd, self._plan.stiffness) if self._plan.stiffness else None
            effort = drive_torques(self._plan.drives, sim.q, sim.qd, commands, s.on_command_timeout,
                                   s.enforce_velocity_limits, motors)
            sim.step(effort, dt, self._wrenches or None)
        except (SimulationError, ValueError) as exc:  # ValueError: an input that slipped past the checks
            implausible = self._implausible(self._plan)
            if implausible:
                self._stop(f"{exc}, and the last finite state is not plausible ({implausible}). Integration "
                           "stopped; publishing nothing until ~/reset", silent=True)
            else:
                self._stop(f"{exc}. Integration stopped; publishing the last finite state (stale) until ~/reset")
            return
        self._n_steps += 1
        if sim.t >= self._next_publish - 0.25 * dt:
            self._publish_state(self._plan)
            self._next_publish += 1.0 / self._settings.publish_rate
            if self._next_publish <= sim.t:
                self._next_publish = sim.t + 1.0 / self._settings.publish_rate

    def _implausible(self, plan: Plan) -> str:
        """Why the simulation's state is not plausible (:class:`~robot_dynamics.nodes.common.safety.Plausibility`,
        the rule the dynamics node applies to its joint states), '' when it is."""
        sim, check, every = self._sim, plan.plausibility, np.arange(plan.model.nv)
        problems = [check.state_problem(sim.q, sim.qd), check.torque_problem(every, sim.applied_effort)]
        if plan.stiffness:
            motors = check.problem(every, sim.motor_q, sim.motor_qd)
            problems.append(motors and "motors: " + motors)
        return "; ".join(p for p in problems if p)

    def _stop(self, text: str, silent: bool = False) -> None:
        """Stop integrating (until ~/reset) for the reason ``text``; ``silent``: publish nothing meanwhile."""
        self._failure, self._silent = text, silent
        self.problem("state", text, time.monotonic_ns(), DiagnosticStatus.ERROR)

    def _publish_state(self, plan: Plan) -> None:
        if self._silent:
            return
        implausible = self._implausible(plan)
        if implausible:  # (a falling arm with its motors off may come back; an absurd one goes non-finite)
            self.problem("state", f"not publishing joint_states: the state is not plausible: {implausible}",
                         time.monotonic_ns(), DiagnosticStatus.ERROR)
            return
        sim = self._sim
        ns = self._epoch_ns + round(sim.t * 1e9)
        sec, nanosec = divmod(ns, 1_000_000_000)
        # Published serialized: a message object would cost rclpy a conversion of every field (the
        # names too) on every call, as much as two rk4 steps of Panda-7.
        self._pub_states.publish(self._state_writer.serialize(
            sec, nanosec, *plan.joint_state(sim.q, sim.qd, sim.applied_effort)))
        self._n_published += 1
        if plan.stiffness:
            order = plan.state_index
            self.publisher_when_needed(JointState, "motor_states").publish(self._motor_writer.serialize(
                sec, nanosec, sim.motor_q[order], sim.motor_qd[order], sim.applied_effort[order]))
        if plan.contact.enabled:
            wrenches, problem = plausible_wrenches(plan.plausibility, sim.contact_wrenches())
            if problem:
                self.problem("contact", f"not publishing contact_wrenches: {problem}", time.monotonic_ns())
            for frame_id, wrench in contact_wrench_messages(plan.model, sim.q, wrenches, self._settings.contact_wrench_frame):
                self.publisher_when_needed(WrenchStamped, "contact_wrenches").publish(WrenchWriter(frame_id).serialize(sec, nanosec, wrench))
        if plan.ft_sensor is not None:  # the true reading of the F/T sensor (docs/ft_sensor.md)
            plan.ft_sensor.publish(self.publisher_when_needed(WrenchStamped, "ft_sensor/wrench"), sim, self._wrenches,
                                   plan.plausibility, sec, nanosec, self.problem)
        if self._settings.publish_clock:
            self.publisher_when_needed(Clock, "/clock").publish(Clock(clock=stamp_of(ns)))

    # --- diagnostics -------------------------------------------------------------------------------
    def diagnostics(self, now_ns: int) -> DiagnosticArray:
        """The DiagnosticArray of the last period (and reset the period's counters)."""
        now = time.monotonic()
        statuses = [self.model_status(), simulation_status(self, now_ns, max(now - self._stats_wall, 1e-9))]
        if self._sim is not None:
            self._stats_sim = self._sim.t
        self._stats_wall = now
        self._n_steps = self._n_published = self._n_rejected = 0
        return self.diagnostic_array(statuses)
