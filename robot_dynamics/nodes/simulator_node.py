"""The simulator node: the forward dynamics of the same URDF model, integrated in (or faster than) real time.

Executable ``simulator_node``, default node name ``robot_dynamics_simulator``; the interface is
documented in the README (section "The simulator").  In short:

* ``joint_states`` (sensor_msgs/JointState) at ``publish_rate`` (simulated time): position,
  velocity and effort = the actuator torque actually applied (after saturation), the ``joints``
  first, then the other joints of the model; ``/clock`` (rosgraph_msgs/Clock) when
  ``publish_clock``; ``/diagnostics`` once a second;
* ``effort_command`` (std_msgs/Float64MultiArray, the ``joints`` order), ``effort_command_named``
  (sensor_msgs/JointState, efforts by name, any subset), ``external_wrench``
  (geometry_msgs/WrenchStamped, at the link named by ``header.frame_id``, world-aligned axes, at
  the link origin);
* services ``~/reset`` (std_srvs/Trigger) and ``~/pause`` (std_srvs/SetBool).

The physics is :class:`robot_dynamics.simulation.Simulator`; this module paces it, converts
messages, keeps the commands and enforces the safety rules: a non-finite, wrong-length or
unknown-name command is rejected with a warning and never reaches the state; a command older than
``command_timeout`` (simulated time) becomes zero torque (warned once); a state that becomes
non-finite stops the integration, is reported on ``/diagnostics`` and in the log, and the last
finite state keeps being published with its old stamp (stale) until ``~/reset``.

Stamps and time: with ``publish_clock`` the simulated time starts at 0 and is the ``/clock``
(other nodes run with ``use_sim_time``) and every stamp is simulated time.  Without it, stamps are
the wall-clock time at which the simulation (re)started plus the simulated time since, so that at
``real_time_factor`` 1 they follow the wall clock; they are re-anchored (forward) after a pause or
when the simulation cannot keep up.  :func:`compile_plan` (pure, no rclpy) checks the parameters
against the model.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import ParameterType
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger

import robot_dynamics as rd
from robot_dynamics.simulation import INTEGRATORS, SimulationError, Simulator

from .cdr import JointStateWriter
from .common import (
    DescriptionSource, bounded_float, declare_settings, descriptor,
    diagnostic_array, duplicates, float_list, log_problem, name_list, parameter_fields,
    require_joints, run_node, warm_up_kernels, watch_settings,
)

#: joint_states, /clock, /diagnostics: reliable publishers match reliable and best-effort subscribers.
OUTPUT_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
#: Command inputs: a best-effort subscription matches any publisher.
INPUT_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)

DIAGNOSTICS_PERIOD = 1.0   # s, wall clock
LOG_THROTTLE = 2.0         # s, per kind of problem
TICK_BUDGET = 0.010        # s of wall time spent integrating per timer callback before yielding
MAX_LAG = 0.2              # s of simulated time behind the pace before the pace is re-anchored
MAX_TICK = 0.010           # s: longest timer period (the pace is kept by the wall clock, not the timer)
MIN_TICK = 0.001           # s: shortest timer period


# --- parameters (pure) ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    """The node's parameter values (besides robot_description / robot_description_node)."""

    gravity: tuple = (0.0, 0.0, -9.81)
    joints: tuple = ()
    physics_rate: float = 1000.0
    publish_rate: float = 500.0
    integrator: str = "rk4"
    real_time_factor: float = 1.0
    publish_clock: bool = False
    initial_joint_names: tuple = ()
    initial_positions: tuple = ()
    initial_velocities: tuple = ()
    apply_damping: bool = True
    apply_friction: bool = True
    enforce_effort_limits: bool = True
    enforce_position_limits: bool = True
    command_timeout: float = 0.1


#: ROS parameter name -> Settings field (the same names)
PARAMETER_FIELDS = parameter_fields(Settings)


def coerce_setting(name: str, value):
    """Parameter value -> Settings field value; ValueError (the reason) when invalid."""
    if name == "gravity":
        return float_list(name, value, 3, strict=False)
    if name in ("joints", "initial_joint_names"):
        return name_list(name, value)
    if name in ("initial_positions", "initial_velocities"):
        return float_list(name, value, strict=False)
    if name == "physics_rate":
        return bounded_float(name, value, 1.0, 100_000.0)
    if name == "publish_rate":
        return bounded_float(name, value, 0.0, 100_000.0, low_open=True)
    if name == "real_time_factor":
        return bounded_float(name, value, 0.0, 1000.0)
    if name == "command_timeout":
        return bounded_float(name, value, 0.0, 3600.0)
    if name == "integrator":
        if value not in INTEGRATORS:
            raise ValueError(f"integrator must be one of {', '.join(INTEGRATORS)}; got {value!r}")
        return value
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


@dataclass(frozen=True, eq=False)
class Plan:
    """The parameters applied to one parsed model: everything the node's hot path needs."""

    base: rd.RobotModel        # as parsed
    model: rd.RobotModel       # with the gravity setting
    settings: Settings
    command_index: np.ndarray  # model index of each entry of effort_command (the `joints` order)
    command_names: tuple
    state_index: np.ndarray    # model index of each joint_states entry
    state_names: list          # joint_states names (one list object, reused in every message)
    index: dict                # joint name -> model index
    q0: np.ndarray             # the initial (and reset) state, model order
    qd0: np.ndarray
    notes: tuple               # warnings worth logging once (e.g. an initial position beyond a limit)


def compile_plan(base: rd.RobotModel, s: Settings) -> Plan:
    """``base`` + settings -> :class:`Plan`; ``ValueError`` naming the problem otherwise.

    Initial state: ``initial_positions`` / ``initial_velocities`` are parallel to
    ``initial_joint_names`` or, when that is empty, in model order (all joints); empty lists mean
    zeros.  A joint not named starts at rest at 0, or at the nearest position limit when 0 is
    outside its range.
    """
    model = base.with_gravity(s.gravity)
    index = {n: i for i, n in enumerate(model.joint_names)}
    command_names = s.joints or model.joint_names
    require_joints(model, command_names, "joints")
    command_index = np.array([index[n] for n in command_names], dtype=np.intp)
    rest = [i for i in range(model.nv) if i not in set(command_index.tolist())]
    state_index = np.concatenate((command_index, np.array(rest, dtype=np.intp)))
    state_names = [model.joint_names[i] for i in state_index]

    lower, upper = model.position_limits[:, 0], model.position_limits[:, 1]
    q0 = np.clip(np.zeros(model.nv), lower, upper)
    qd0 = np.zeros(model.nv)
    if s.initial_joint_names:
        require_joints(model, s.initial_joint_names, "initial_joint_names")
        where = np.array([index[n] for n in s.initial_joint_names], dtype=np.intp)
        described = f"one per initial_joint_names entry ({len(where)})"
    else:
        where = np.arange(model.nv)
        described = f"one per joint in model order ({model.nv}: {list(model.joint_names)})"
    for name, target in (("initial_positions", q0), ("initial_velocities", qd0)):
        values = getattr(s, name)
        if not values:
            continue
        if len(values) != len(where):
            raise ValueError(f"{name} has {len(values)} values; expected {described}, or none")
        target[where] = values
    notes = tuple(
        f"initial position of {model.joint_names[i]} ({q0[i]:g}) is outside its limits "
        f"[{lower[i]:g}, {upper[i]:g}]: the limit will push it back"
        for i in np.flatnonzero((q0 < lower) | (q0 > upper))
    )
    return Plan(base=base, model=model, settings=s, command_index=command_index, command_names=tuple(command_names),
                state_index=state_index, state_names=state_names, index=index, q0=q0, qd0=qd0, notes=notes)


def stamp_of(ns: int) -> Time:
    """builtin_interfaces/Time of an integer nanosecond count."""
    return Time(sec=int(ns // 1_000_000_000), nanosec=int(ns % 1_000_000_000))


# --- the node ------------------------------------------------------------------------------------
class SimulatorNode(Node):
    """See the module docstring and the README for the interface."""

    def __init__(self, node_name: str = "robot_dynamics_simulator", **kwargs):
        super().__init__(node_name, **kwargs)
        self._settings = self._declare_parameters()  # a bad parameter file ends the node here, at once
        warm_up_kernels(self)
        self._plan: Plan | None = None
        self._pending_base: rd.RobotModel | None = None
        self._sim: Simulator | None = None
        self._model_status = (DiagnosticStatus.ERROR, "no robot model yet")
        self._model_source = ""
        self._last_log: dict = {}
        self._problems: dict = {}     # kind -> [level, text, wall s]
        self._paused = False
        self._failure = ""            # why integration stopped ("" while running)
        self._command = np.zeros(0)   # model order
        self._command_time = np.zeros(0)  # simulated time of each joint's last command (-inf: never)
        self._stale = np.zeros(0, dtype=bool)
        self._next_expiry = math.inf
        self._wrenches: dict = {}
        self._n_rejected = 0
        self._n_steps = self._n_published = 0
        self._stats_wall = time.monotonic()
        self._stats_sim = 0.0
        self._clock_pub = None

        watch_settings(self, lambda: self._settings, coerce_setting, PARAMETER_FIELDS,
                       self._check_settings, self._apply_settings)

        self._pub_states = self.create_publisher(JointState, "joint_states", OUTPUT_QOS)
        self._pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", OUTPUT_QOS)
        self.create_subscription(Float64MultiArray, "effort_command", self._on_effort_command, INPUT_QOS)
        self.create_subscription(JointState, "effort_command_named", self._on_effort_command_named, INPUT_QOS)
        self.create_subscription(WrenchStamped, "external_wrench", self._on_external_wrench, INPUT_QOS)
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.create_service(SetBool, "~/pause", self._on_pause)
        self.create_timer(DIAGNOSTICS_PERIOD, self._on_diagnostics_timer)
        self._tick = None
        self._restart_timer()
        self._description = DescriptionSource(self, self._on_urdf)

    # --- parameters -----------------------------------------------------------------------------
    def _declare_parameters(self) -> Settings:
        d = Settings()
        T = ParameterType
        specs = {
            "gravity": (list(d.gravity), descriptor(
                "Gravitational acceleration (x, y, z) in the root link frame, m/s^2: the physical "
                "acceleration, (0, 0, -9.81) for an upright mounting.")),
            "joints": ([], descriptor(
                "Order of effort_command's data (string list); empty = the model order. joint_states "
                "lists these joints first, then the other joints of the model.")),
            "physics_rate": (d.physics_rate, descriptor("Integration steps per second of simulated time, Hz.")),
            "publish_rate": (d.publish_rate, descriptor(
                "joint_states (and /clock) messages per second of simulated time, Hz.")),
            "integrator": (d.integrator, descriptor(
                "euler (the textbook explicit Euler) | semi_implicit_euler | rk4 | adaptive "
                "(scipy solve_ivp DOP853, error-controlled).", T.PARAMETER_STRING)),
            "real_time_factor": (d.real_time_factor, descriptor(
                "Simulated seconds per wall-clock second: 1 = real time, 0 = as fast as possible.")),
            "publish_clock": (d.publish_clock, descriptor(
                "Publish /clock (simulated time from 0) and stamp everything with it, for nodes "
                "running with use_sim_time (read-only: the time base cannot change while running).",
                T.PARAMETER_BOOL, read_only=True)),
            "initial_joint_names": ([], descriptor(
                "Names for initial_positions / initial_velocities; empty = those lists are in model order.")),
            "initial_positions": ([], descriptor(
                "Initial (and ~/reset) positions, rad or m; empty = 0 (clipped into the limits).")),
            "initial_velocities": ([], descriptor("Initial (and ~/reset) velocities; empty = at rest.")),
            "apply_damping": (d.apply_damping, descriptor(
                "Apply URDF <dynamics damping> (viscous, -damping * qd).", T.PARAMETER_BOOL)),
            "apply_friction": (d.apply_friction, descriptor(
                "Apply URDF <dynamics friction> (Coulomb, -friction * tanh(qd / 0.01)).", T.PARAMETER_BOOL)),
            "enforce_effort_limits": (d.enforce_effort_limits, descriptor(
                "Saturate commands at the URDF effort limits (joint_states.effort shows the applied "
                "value).", T.PARAMETER_BOOL)),
            "enforce_position_limits": (d.enforce_position_limits, descriptor(
                "Stiff, critically damped, one-sided limits at the URDF position limits.", T.PARAMETER_BOOL)),
            "command_timeout": (d.command_timeout, descriptor(
                "A joint's command older than this (simulated s) becomes zero torque (warned once); 0 = never.")),
        }
        return declare_settings(self, Settings, specs, coerce_setting, PARAMETER_FIELDS)

    def _check_settings(self, candidate: Settings) -> None:
        if self._plan is not None:
            compile_plan(self._plan.base, candidate)

    def _apply_settings(self, candidate: Settings) -> None:
        old, self._settings = self._settings, candidate
        base = self._plan.base if self._plan is not None else self._pending_base
        if base is None:
            return
        try:
            plan = compile_plan(base, candidate)
        except ValueError as exc:  # only possible while no plan is active (validated otherwise)
            self._set_model_status(DiagnosticStatus.ERROR, f"robot {base.name!r} loaded, but {exc}")
            return
        if self._plan is None:
            self._install(plan, self._model_source)
            return
        self._plan = plan
        self._state_writer = JointStateWriter(plan.state_names)
        sim = self._sim
        sim.model = plan.model
        self._configure(sim, candidate)
        if candidate.joints != old.joints:
            self._clear_commands()
        if (candidate.physics_rate, candidate.publish_rate, candidate.real_time_factor) != \
                (old.physics_rate, old.publish_rate, old.real_time_factor):
            self._reanchor()
            self._restart_timer()
        if candidate.command_timeout != old.command_timeout:
            self._schedule_expiry()

    @staticmethod
    def _configure(sim: Simulator, s: Settings) -> None:
        sim.integrator = s.integrator
        sim.apply_damping = s.apply_damping
        sim.apply_friction = s.apply_friction
        sim.enforce_effort_limits = s.enforce_effort_limits
        sim.enforce_position_limits = s.enforce_position_limits

    # --- robot model ----------------------------------------------------------------------------
    def _on_urdf(self, xml: str, source: str) -> None:
        keep = f"; keeping the previous model {self._plan.base.name!r}" if self._plan is not None else ""
        try:
            base = rd.load_urdf(xml)
        except Exception as exc:  # noqa: BLE001 - whatever the parser says, the node stays up
            self._set_model_status(DiagnosticStatus.WARN if keep else DiagnosticStatus.ERROR,
                                   f"robot_description from {source} failed to load: {exc}{keep}")
            return
        try:
            plan = compile_plan(base, self._settings)
        except ValueError as exc:
            if self._plan is None:
                self._pending_base, self._model_source = base, source
            self._set_model_status(DiagnosticStatus.WARN if keep else DiagnosticStatus.ERROR,
                                   f"robot {base.name!r} from {source} does not fit the parameters: {exc}{keep}")
            return
        self._install(plan, source)

    def _set_model_status(self, level, text):
        self._model_status = (level, text)
        log_problem(self.get_logger(), level, text)

    def _install(self, plan: Plan, source: str) -> None:
        """Start (or restart, for a new robot_description) the simulation of ``plan``'s model."""
        model = plan.base
        log = self.get_logger()
        if self._plan is not None:
            log.warn(f"new robot_description from {source}: the simulation restarts from the initial state")
        text = f"robot {model.name!r} from {source}: {model.nv} joints {list(model.joint_names)}"
        log.info(f"simulating {text} with {plan.settings.integrator} at {plan.settings.physics_rate:g} Hz")
        for note in plan.notes:
            log.warn(note)
        self._model_status = (DiagnosticStatus.OK, "simulating " + text)
        self._model_source = source
        self._pending_base = None
        self._plan = plan
        self._state_writer = JointStateWriter(plan.state_names)
        t = self._sim.t if self._sim is not None else 0.0  # time never runs backwards
        self._sim = Simulator(plan.model, plan.q0, plan.qd0, t=t)
        self._configure(self._sim, plan.settings)
        self._clear_commands()
        self._wrenches = {}
        self._failure = ""
        if self._sim.t == 0.0:
            self._epoch_ns = 0 if plan.settings.publish_clock else time.time_ns()
        self._reanchor()
        self._publish_state()
        self._next_publish = self._sim.t + 1.0 / plan.settings.publish_rate

    def _clear_commands(self) -> None:
        n = self._plan.model.nv
        self._command = np.zeros(n)
        self._command_time = np.full(n, -math.inf)
        self._stale = np.isinf(self._command_time)  # never commanded: zero torque, nothing to warn about
        self._next_expiry = math.inf

    # --- problems: throttled log + diagnostics ---------------------------------------------------
    def _problem(self, kind: str, text: str, level=DiagnosticStatus.WARN) -> None:
        now = time.monotonic()
        self._problems[kind] = [level, text, now]
        if now - self._last_log.get(kind, -math.inf) >= LOG_THROTTLE:
            self._last_log[kind] = now
            log_problem(self.get_logger(), level, text)

    def _reject(self, topic: str, text: str) -> None:
        self._n_rejected += 1
        self._problem(topic, f"{topic} message rejected: {text}")

    # --- inputs -----------------------------------------------------------------------------------
    def _accept(self, index: np.ndarray, efforts: np.ndarray) -> None:
        revived = [self._plan.model.joint_names[i] for i in index
                   if self._stale[i] and np.isfinite(self._command_time[i])]
        if revived:
            self.get_logger().info(f"effort commands for {revived} are fresh again")
        self._command[index] = efforts
        self._command_time[index] = self._sim.t
        self._stale[index] = False
        self._schedule_expiry()

    def _schedule_expiry(self) -> None:
        """Simulated time at which the oldest live command goes stale (inf: none can)."""
        timeout = self._settings.command_timeout
        live = self._command_time[~self._stale]
        self._next_expiry = live.min() + timeout if timeout > 0 and live.size else math.inf

    def _expire(self) -> None:
        """Zero the commands older than command_timeout; warn once per joint and episode."""
        if self._settings.command_timeout <= 0:
            self._next_expiry = math.inf
            return
        stale = (self._sim.t - self._command_time > self._settings.command_timeout) & ~self._stale
        if stale.any():
            names = [self._plan.model.joint_names[i] for i in np.flatnonzero(stale)]
            self._problem("command", f"no effort command for {names} in the last {self._settings.command_timeout:g} s "
                          "(simulated): applying zero torque until a new one arrives")
            self._last_log.pop("command", None)  # every new episode is logged
            self._command[stale] = 0.0
            self._stale |= stale
        self._schedule_expiry()

    def _on_effort_command(self, msg: Float64MultiArray) -> None:
        plan = self._plan
        if plan is None:
            return
        data = np.asarray(msg.data, dtype=float)
        if data.shape != (len(plan.command_index),):
            self._reject("effort_command", f"{data.size} values, expected {len(plan.command_index)} "
                         f"(one per joint of `joints`: {list(plan.command_names)})")
            return
        if not np.isfinite(data).all():
            bad = [plan.command_names[i] for i in np.flatnonzero(~np.isfinite(data))]
            self._reject("effort_command", f"non-finite effort for {bad}")
            return
        self._accept(plan.command_index, data)

    def _on_effort_command_named(self, msg: JointState) -> None:
        plan = self._plan
        if plan is None:
            return
        names = list(msg.name)
        efforts = np.asarray(msg.effort, dtype=float)
        if not names or efforts.shape != (len(names),):
            self._reject("effort_command_named", f"{len(names)} names and {efforts.size} efforts "
                         "(need one effort per name, at least one)")
            return
        unknown = [n for n in names if n not in plan.index]
        if unknown:
            mimic = [n for n in unknown if n in plan.model.mimic_joints]
            hint = f" ({', '.join(mimic)} mimic another joint: command the joint it follows)" if mimic else ""
            self._reject("effort_command_named", f"unknown joints {unknown}{hint}")
            return
        if len(set(names)) != len(names):
            self._reject("effort_command_named", f"duplicate joint names {sorted(duplicates(names))}")
            return
        if not np.isfinite(efforts).all():
            bad = [names[i] for i in np.flatnonzero(~np.isfinite(efforts))]
            self._reject("effort_command_named", f"non-finite effort for {bad}")
            return
        self._accept(np.array([plan.index[n] for n in names], dtype=np.intp), efforts)

    def _on_external_wrench(self, msg: WrenchStamped) -> None:
        plan = self._plan
        if plan is None:
            return
        link = msg.header.frame_id.lstrip("/")
        if link not in plan.model.link_names:
            self._reject("external_wrench", f"header.frame_id {msg.header.frame_id!r} is not a link of robot "
                         f"{plan.model.name!r} (the wrench acts at that link's origin)")
            return
        w = msg.wrench
        wrench = np.array([w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z])
        if not np.isfinite(wrench).all():
            self._reject("external_wrench", f"non-finite wrench on {link!r}")
            return
        if wrench.any():
            self._wrenches[link] = wrench
        else:
            self._wrenches.pop(link, None)

    # --- services -------------------------------------------------------------------------------
    def _on_reset(self, request, response):
        if self._plan is None:
            response.success, response.message = False, "no robot model yet"
            return response
        plan = self._plan
        self._sim.reset(plan.q0, plan.qd0)
        self._clear_commands()
        self._wrenches = {}
        if self._failure:
            self.get_logger().info("reset: integration resumes from the initial state")
        self._failure = ""
        self._problems.clear()  # what went wrong before the reset is no longer the state of things
        self._reanchor()
        self._publish_state()
        self._next_publish = self._sim.t + 1.0 / self._settings.publish_rate
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

    # --- pacing and stepping --------------------------------------------------------------------
    def _restart_timer(self) -> None:
        s = self._settings
        if self._tick is not None:
            self.destroy_timer(self._tick)
        if s.real_time_factor > 0:
            period = min(max(1.0 / (s.publish_rate * s.real_time_factor), MIN_TICK), MAX_TICK)
        else:
            period = MIN_TICK
        self._tick = self.create_timer(period, self._advance)

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
                self._publish_state()
            return
        dt = 1.0 / s.physics_rate
        deadline = now + TICK_BUDGET
        if s.real_time_factor > 0:
            target = self._anchor_sim + s.real_time_factor * (now - self._anchor_wall)
            if target - sim.t > MAX_LAG:
                self._problem("pace", f"cannot keep up with real_time_factor {s.real_time_factor:g}: "
                              f"{target - sim.t:.3f} s of simulated time behind; dropping the lag")
                self._anchor_sim, self._anchor_wall = sim.t, now
                if not s.publish_clock:
                    self._epoch_ns = max(self._epoch_ns, time.time_ns() - round(sim.t * 1e9))
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
        sim = self._sim
        if sim.t > self._next_expiry:
            self._expire()
        command = self._command
        try:
            sim.step(command, dt, self._wrenches or None)
        except (SimulationError, ValueError) as exc:  # ValueError: an input that slipped past the checks
            self._failure = str(exc)
            self._problem("state", f"{exc}. Integration stopped; publishing the last finite state "
                          "(stale) until ~/reset", DiagnosticStatus.ERROR)
            return
        self._n_steps += 1
        if sim.t >= self._next_publish - 0.25 * dt:
            self._publish_state()
            self._next_publish += 1.0 / self._settings.publish_rate
            if self._next_publish <= sim.t:
                self._next_publish = sim.t + 1.0 / self._settings.publish_rate

    def _publish_state(self) -> None:
        sim, order = self._sim, self._plan.state_index
        ns = self._epoch_ns + round(sim.t * 1e9)
        sec, nanosec = divmod(ns, 1_000_000_000)
        # Published serialized: a message object would cost rclpy a conversion of every field (the
        # names too) on every call, as much as two rk4 steps of Panda-7.
        self._pub_states.publish(self._state_writer.serialize(
            sec, nanosec, sim.q[order], sim.qd[order], sim.applied_effort[order]))
        self._n_published += 1
        if self._settings.publish_clock:
            if self._clock_pub is None:
                self._clock_pub = self.create_publisher(Clock, "/clock", OUTPUT_QOS)
            self._clock_pub.publish(Clock(clock=stamp_of(ns)))

    # --- diagnostics ------------------------------------------------------------------------------
    def _on_diagnostics_timer(self) -> None:
        self._pub_diag.publish(self.diagnostics())

    def diagnostics(self) -> DiagnosticArray:
        """The DiagnosticArray of the last period (and reset the period's counters)."""
        now = time.monotonic()
        period = max(now - self._stats_wall, 1e-9)
        sim, plan, s = self._sim, self._plan, self._settings
        recent = {k: v for k, v in self._problems.items() if now - v[2] <= 2 * DIAGNOSTICS_PERIOD}

        level, text = self._model_status
        if plan is None and self._pending_base is None and "failed" not in text:
            text = "no robot model: " + self._description.waiting_for()
        statuses = [("model", level, text, [("source", self._model_source or "none")])]

        if sim is None:
            statuses.append(("simulation", DiagnosticStatus.STALE, "no model: not simulating", []))
        else:
            achieved = (sim.t - self._stats_sim) / period
            names = plan.model.joint_names
            values = [
                ("simulated time (s)", f"{sim.t:.6f}"),
                ("real-time factor", f"{achieved:.2f} (target {s.real_time_factor:g})"),
                ("steps per second", f"{self._n_steps / period:.0f}"),
                ("joint_states per second", f"{self._n_published / period:.1f}"),
                ("integrator", f"{s.integrator} at {s.physics_rate:g} Hz"),
                ("paused", self._paused),
                ("state", "stale (integration stopped)" if self._failure else "live"),
                ("stale commands", [names[i] for i in np.flatnonzero(self._stale & np.isfinite(self._command_time))]),
                ("never commanded", [names[i] for i in np.flatnonzero(np.isinf(self._command_time))]),
                ("external wrenches", sorted(self._wrenches)),
                ("rejected messages", self._n_rejected),
            ]
            if self._failure:
                level, text = DiagnosticStatus.ERROR, f"integration stopped, state stale: {self._failure}"
            else:
                level, text = DiagnosticStatus.OK, "paused" if self._paused else f"running at {achieved:.2f}x real time"
                for kind, (lvl, txt, _) in recent.items():
                    if lvl > level:
                        level, text = lvl, txt
                    values.append((kind, txt))
                if (self._stale & np.isfinite(self._command_time)).any() and level == DiagnosticStatus.OK:
                    level, text = DiagnosticStatus.WARN, "stale effort commands: applying zero torque"
            statuses.append(("simulation", level, text, values))
            self._stats_sim = sim.t
        self._stats_wall = now
        self._n_steps = self._n_published = self._n_rejected = 0
        return diagnostic_array(self, plan.base.name if plan is not None else "", statuses)


def main(args=None):
    """Entry point of the ``simulator_node`` executable."""
    return run_node(SimulatorNode, args=args)


if __name__ == "__main__":
    raise SystemExit(main())
