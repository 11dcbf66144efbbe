"""The dynamics node: URDF from robot_description, joint states in, torques and mass matrix out.

Executable ``dynamics_node`` (default node name ``robot_dynamics``); the interface (topics, QoS,
parameters, diagnostics, sign conventions) is documented in the README. In short:

* subscriptions ``joint_states`` (sensor_msgs/JointState, best effort like SensorDataQoS, depth 10,
  merged by name),
  ``desired_accelerations`` (std_msgs/Float64MultiArray, output order) and ``desired_state``
  (trajectory_msgs/JointTrajectory, one point, by name);
* publications ``gravity_torques``, ``bias_torques``, ``computed_torques`` (sensor_msgs/JointState),
  ``mass_matrix`` and ``effort_command`` (std_msgs/Float64MultiArray) and ``/diagnostics``.

Every joint-state message that completes a fresh state gives ONE snapshot ``(q, qd)`` from which
all outputs are computed with one call each of ``rd.gravity_torques``, ``rd.mass_matrix`` and
``rd.bias_forces``, and stamped with that message's stamp. Nothing is published from a state with a
joint older than ``state_timeout``, from a rejected (non-finite, wrong-length, duplicate-name)
message, or from a desired input older than ``desired_timeout``; every output is checked finite.

The math is all in :mod:`robot_dynamics`; this module converts messages, keeps the merged joint
state and the parameters, and diagnoses. :func:`compile_plan` (pure, no rclpy) turns a parsed
model plus the parameter values into everything the hot path needs.
"""

from __future__ import annotations

import array
import math
import re
import time
from dataclasses import dataclass

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rcl_interfaces.msg import ParameterType
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

import robot_dynamics as rd

from .common import (
    DescriptionSource, as_float_array, declare_settings, descriptor, diagnostic_array,
    duplicates, fatal_parameter, float_list, log_problem, matrix_msg, parameter_fields,
    require_joints, run_node, warm_up_kernels, watch_settings,
)

COMMAND_SOURCES = ("none", "gravity", "computed")

#: QoS of the outputs and of the desired inputs: reliable publishers match reliable and
#: best-effort subscribers (ros2_control's forward_command_controller subscribes reliably);
#: best-effort subscriptions match any publisher.
OUTPUT_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
COMMAND_INPUT_QOS = QoSProfile(
    depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT
)

#: QoS of joint_states: SensorDataQoS (best effort, volatile) but 10 deep instead of 5, so that a
#: scheduling hiccup of a few milliseconds at 1 kHz delays messages instead of dropping them.
JOINT_STATES_QOS = QoSProfile(
    depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT,
    durability=DurabilityPolicy.VOLATILE,
)

MIMIC_TOLERANCE = 1e-3  # rad or m: a reported mimic joint further than this from its master is diagnosed
DIAGNOSTICS_PERIOD = 1.0  # s
WAITING_LOG_PERIOD = 5.0  # s
LOG_THROTTLE = 2.0  # s, per kind of problem
MAX_CACHED_NAME_LISTS = 64  # per input topic; publishers with ever-changing name lists don't grow memory
NEVER = np.iinfo(np.int64).min // 2  # "last received" of a joint that never was
_REASON = re.compile(r"[\d\[\('\"]")


# --- parameters (pure) ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    """The node's parameter values (besides robot_description / robot_description_node)."""

    gravity: tuple = (0.0, 0.0, -9.81)
    joints: tuple = ()
    payload_link: str = ""
    payload_mass: float = 0.0
    payload_com: tuple = (0.0, 0.0, 0.0)
    payload_inertia: tuple = (0.0,) * 6
    kp: tuple = (100.0,)
    kd: tuple = (20.0,)
    command_source: str = "none"
    compensate_friction: bool = False
    friction_smoothing: float = 0.01
    state_timeout: float = 0.1
    desired_timeout: float = 0.1
    publish_mass_matrix: bool = True
    publish_bias_torques: bool = True


#: ROS parameter name -> Settings field
PARAMETER_FIELDS = parameter_fields(Settings, lambda field: field.replace("payload_", "payload."))


def coerce_setting(field: str, value):
    """Parameter value -> Settings field value; ValueError (the reason) when invalid."""
    param = field.replace("payload_", "payload.")
    if field == "gravity":
        return float_list(param, value, 3)
    if field == "payload_com":
        return float_list(param, value, 3)
    if field == "payload_inertia":
        xx, xy, xz, yy, yz, zz = float_list(param, value, 6)
        inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        if np.linalg.eigvalsh(inertia).min() < -1e-12 * max(1.0, np.abs(inertia).max()):
            raise ValueError(f"{param} must be positive semi-definite (ixx ixy ixz iyy iyz izz), got {list(value)}")
        return (xx, xy, xz, yy, yz, zz)
    if field in ("kp", "kd"):
        gains = float_list(param, value, scalar=True)
        if not gains:
            raise ValueError(f"{param} must be a number or one number per output joint, got []")
        if min(gains) < 0:
            raise ValueError(f"{param} must be non-negative, got {list(gains)}")
        return gains
    if field == "joints":
        if value is None:  # not set
            return ()
        if not isinstance(value, (list, tuple)) or not all(isinstance(n, str) and n for n in value):
            raise ValueError(f"joints must be a list of joint names, got {value!r}")
        names = tuple(value)
        if len(set(names)) != len(names):
            raise ValueError(f"joints has duplicate names: {duplicates(names)}")
        return names
    if field == "command_source":
        if value not in COMMAND_SOURCES:
            raise ValueError(f"command_source must be one of {', '.join(COMMAND_SOURCES)}; got {value!r}")
        return value
    if field == "payload_link":
        return str(value)
    if field in ("payload_mass", "friction_smoothing", "state_timeout", "desired_timeout"):
        v = float(value)
        low = 0.0 if field == "payload_mass" else 1e-9
        if not (math.isfinite(v) and v >= low):
            raise ValueError(f"{param} must be a finite number >= {low:g}, got {value!r}")
        return v
    return bool(value)


@dataclass(frozen=True, eq=False)
class Plan:
    """Everything the hot path needs, derived once from a parsed model and the settings."""

    base: rd.RobotModel  # as parsed from the URDF
    model: rd.RobotModel  # with the gravity and payload settings applied
    settings: Settings
    names: list  # output joint names (one list object, reused in every message)
    out: np.ndarray  # model index of each output joint
    full: bool  # output order == model order
    index: dict  # model joint name -> model index
    kp: np.ndarray  # per output joint
    kd: np.ndarray
    continuous: np.ndarray  # bool per output joint: wrap position errors to (-pi, pi]
    any_continuous: bool
    mimic: dict  # mimic joint name -> (master model index, multiplier, offset)
    state_timeout_ns: int
    desired_timeout_ns: int


def compile_plan(base: rd.RobotModel, s: Settings) -> Plan:
    """``base`` + settings -> :class:`Plan`; ``ValueError`` naming the problem otherwise."""
    model = base.with_gravity(s.gravity)
    if s.payload_link:
        if s.payload_link not in model.link_names:
            raise ValueError(f"payload.link {s.payload_link!r} is not a link of robot {base.name!r}")
        model = model.with_payload(s.payload_link, s.payload_mass, s.payload_com, s.payload_inertia)
    index = {n: i for i, n in enumerate(model.joint_names)}
    names = s.joints or model.joint_names
    require_joints(model, names, "joints")
    out = np.array([index[n] for n in names], dtype=np.intp)
    n_out = len(out)
    gains = {}
    for key in ("kp", "kd"):
        g = getattr(s, key)
        if len(g) not in (1, n_out):
            raise ValueError(f"{key} has {len(g)} values; give one, or one per output joint ({n_out})")
        gains[key] = np.broadcast_to(np.asarray(g, dtype=float), (n_out,)).copy()
    continuous = np.array([model.joint_types[i] == "continuous" for i in out], dtype=bool)
    mimic = {m: (index[master], float(mult), float(off)) for m, (master, mult, off) in model.mimic_joints.items()
             if master in index}
    return Plan(
        base=base, model=model, settings=s, names=list(names), out=out,
        full=bool(n_out == model.nv and np.array_equal(out, np.arange(model.nv))), index=index,
        kp=gains["kp"], kd=gains["kd"], continuous=continuous, any_continuous=bool(continuous.any()),
        mimic=mimic, state_timeout_ns=int(s.state_timeout * 1e9), desired_timeout_ns=int(s.desired_timeout * 1e9),
    )


@dataclass(frozen=True, eq=False)
class _MsgMap:
    """How the names of one joint-state message map onto the model (cached per name tuple)."""

    src: np.ndarray  # message index of each known joint
    dst: np.ndarray  # its model index
    mimic_src: np.ndarray  # message index of each mimic joint in the message
    mimic_master: np.ndarray  # model index of its master
    mimic_mult: np.ndarray
    mimic_offset: np.ndarray
    mimic_names: tuple
    known_names: tuple  # message names of src, for error messages


def _map_message(names: tuple, plan: Plan) -> _MsgMap:
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate joint names {duplicates(names)}")
    known = [(i, plan.index[n]) for i, n in enumerate(names) if n in plan.index]
    mim = [(i, *plan.mimic[n]) for i, n in enumerate(names) if n in plan.mimic]
    return _MsgMap(
        src=np.array([k[0] for k in known], dtype=np.intp),
        dst=np.array([k[1] for k in known], dtype=np.intp),
        mimic_src=np.array([m[0] for m in mim], dtype=np.intp),
        mimic_master=np.array([m[1] for m in mim], dtype=np.intp),
        mimic_mult=np.array([m[2] for m in mim], dtype=float),
        mimic_offset=np.array([m[3] for m in mim], dtype=float),
        mimic_names=tuple(names[m[0]] for m in mim),
        known_names=tuple(names[k[0]] for k in known),
    )


@dataclass(frozen=True, eq=False)
class _Desired:
    """A valid desired input, in the output order of the plan it was received under (it is dropped
    when the output joints change)."""

    qdd: np.ndarray
    qd: np.ndarray | None
    q: np.ndarray | None
    received_ns: int
    topic: str


class _OutputMessages:
    """One message object per output, names and layout filled in once per output order."""

    def __init__(self, names: list):
        n = len(names)
        self.gravity, self.bias, self.computed = JointState(), JointState(), JointState()
        for msg in (self.gravity, self.bias, self.computed):
            msg.name = names
        self.mass = matrix_msg(np.zeros((n, n)))
        self.command = Float64MultiArray()


# --- the node ------------------------------------------------------------------------------------
class DynamicsNode(Node):
    """See the module docstring and the README for the interface."""

    def __init__(self, node_name: str = "robot_dynamics", **kwargs):
        super().__init__(node_name, **kwargs)
        self._settings = self._declare_parameters()  # a bad parameter file ends the node here, at once
        warm_up_kernels(self)
        self._plan: Plan | None = None
        # the newest description that parsed but did not fit the settings; installed as soon as a
        # parameter change makes it fit
        self._pending_base: rd.RobotModel | None = None
        self._pending_source = ""
        self._model_status = (DiagnosticStatus.ERROR, "no robot model yet")
        self._model_source = ""
        self._q = self._qd = np.zeros(0)
        self._q_ns = self._qd_ns = np.zeros(0, dtype=np.int64)
        self._maps: dict = {}
        self._traj_maps: dict = {}
        self._desired: _Desired | None = None
        self._msgs: _OutputMessages | None = None
        self._problems: dict = {}  # kind -> [level, text, last_ns]
        self._last_log: dict = {}
        self._stats_reset(time.monotonic_ns())
        self._n_diag = 0

        watch_settings(self, lambda: self._settings, coerce_setting, PARAMETER_FIELDS,
                       self._check_settings, self._apply_settings)

        self._pub_gravity = self.create_publisher(JointState, "gravity_torques", OUTPUT_QOS)
        self._pub_bias = self.create_publisher(JointState, "bias_torques", OUTPUT_QOS)
        self._pub_computed = self.create_publisher(JointState, "computed_torques", OUTPUT_QOS)
        self._pub_mass = self.create_publisher(Float64MultiArray, "mass_matrix", OUTPUT_QOS)
        self._pub_command = self.create_publisher(Float64MultiArray, "effort_command", OUTPUT_QOS)
        self._pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", OUTPUT_QOS)
        self.create_subscription(JointState, "joint_states", self._on_joint_states, JOINT_STATES_QOS)
        self.create_subscription(
            Float64MultiArray, "desired_accelerations", self._on_desired_accelerations, COMMAND_INPUT_QOS
        )
        self.create_subscription(JointTrajectory, "desired_state", self._on_desired_state, COMMAND_INPUT_QOS)
        self.create_timer(DIAGNOSTICS_PERIOD, self._on_diagnostics_timer)
        try:
            self._description = DescriptionSource(self, self._on_urdf)
        except ParameterException as exc:  # robot_description(_node) of the wrong type
            fatal_parameter(self, exc)

    # --- parameters -----------------------------------------------------------------------------
    def _declare_parameters(self) -> Settings:
        d = Settings()
        T = ParameterType
        specs = {
            "gravity": (list(d.gravity), descriptor(
                "Gravitational acceleration (x, y, z) in the root link frame, m/s^2; the physical "
                "acceleration, (0, 0, -9.81) for an upright mounting.", T.PARAMETER_DOUBLE_ARRAY)),
            "joints": ([], descriptor(
                "Output joint order (string list); empty = the model's order. Every listed name must "
                "be a moving, non-mimic joint of the model.")),
            "payload.link": (d.payload_link, descriptor(
                "Link carrying the payload; empty = no payload.", T.PARAMETER_STRING)),
            "payload.mass": (d.payload_mass, descriptor(
                "Payload mass, kg.", T.PARAMETER_DOUBLE, low=0.0, high=1.0e4)),
            "payload.com": (list(d.payload_com), descriptor(
                "Payload centre of mass in the payload link's frame, m.", T.PARAMETER_DOUBLE_ARRAY)),
            "payload.inertia": (list(d.payload_inertia), descriptor(
                "Payload inertia about its centre of mass in the link's axes, kg m^2, URDF order "
                "ixx ixy ixz iyy iyz izz; positive semi-definite.", T.PARAMETER_DOUBLE_ARRAY)),
            "kp": (d.kp[0], descriptor(
                "Position gain(s) of the computed-torque law, 1/s^2: one number or one per output joint.")),
            "kd": (d.kd[0], descriptor(
                "Velocity gain(s) of the computed-torque law, 1/s: one number or one per output joint.")),
            "command_source": (d.command_source, descriptor(
                "What effort_command carries: none | gravity | computed.", T.PARAMETER_STRING)),
            "compensate_friction": (d.compensate_friction, descriptor(
                "Add the URDF viscous damping*qd + Coulomb friction*tanh(qd/friction_smoothing) to the "
                "computed torques.", T.PARAMETER_BOOL)),
            "friction_smoothing": (d.friction_smoothing, descriptor(
                "Velocity scale of the smoothed Coulomb friction, rad/s or m/s.",
                T.PARAMETER_DOUBLE, low=1e-6, high=10.0)),
            "state_timeout": (d.state_timeout, descriptor(
                "Maximum age of every joint's position (and velocity, where needed), s.",
                T.PARAMETER_DOUBLE, low=1e-3, high=60.0)),
            "desired_timeout": (d.desired_timeout, descriptor(
                "Maximum age of a desired input for computed torques, s.",
                T.PARAMETER_DOUBLE, low=1e-3, high=60.0)),
            "publish_mass_matrix": (d.publish_mass_matrix, descriptor("Publish mass_matrix.", T.PARAMETER_BOOL)),
            "publish_bias_torques": (d.publish_bias_torques, descriptor("Publish bias_torques.", T.PARAMETER_BOOL)),
        }
        # (rclpy refuses a value of the wrong type or out of range, e.g. `payload.mass: 2`)
        return declare_settings(self, Settings, specs, coerce_setting, PARAMETER_FIELDS)

    def _check_settings(self, candidate: Settings) -> None:
        if self._plan is not None:
            self._compile(candidate)

    def _apply_settings(self, candidate: Settings) -> None:
        self._settings = candidate
        if self._plan is None and self._pending_base is None:
            return
        try:
            plan, source = self._compile(candidate)
        except ValueError as exc:  # only possible while no plan is active (validated otherwise)
            self._set_model_status(DiagnosticStatus.ERROR, f"robot {self._pending_base.name!r} loaded, but {exc}")
            return
        self._install(plan, source)

    def _compile(self, settings: Settings) -> tuple[Plan, str]:
        """(plan, source) for ``settings`` on the pending description if it now fits, else on the
        current model; ValueError (the current model's reason) when neither fits."""
        if self._pending_base is not None:
            try:
                return compile_plan(self._pending_base, settings), self._pending_source
            except ValueError:
                if self._plan is None:
                    raise
        return compile_plan(self._plan.base, settings), self._model_source

    # --- robot model ----------------------------------------------------------------------------
    def _on_urdf(self, xml: str, source: str) -> None:
        keep = f"; keeping the previous model {self._plan.base.name!r}" if self._plan is not None else ""
        try:
            base = rd.load_urdf(xml)
        except Exception as exc:  # noqa: BLE001 - whatever the parser says, the node stays up
            self._set_model_status(
                DiagnosticStatus.WARN if keep else DiagnosticStatus.ERROR,
                f"robot_description from {source} failed to load: {exc}{keep}",
            )
            return
        try:
            plan = compile_plan(base, self._settings)
        except ValueError as exc:
            self._pending_base, self._pending_source = base, source
            if self._plan is None:
                self._model_source = source
            self._set_model_status(
                DiagnosticStatus.WARN if keep else DiagnosticStatus.ERROR,
                f"robot {base.name!r} from {source} does not fit the parameters: {exc}{keep}",
            )
            return
        self._install(plan, source)

    def _set_model_status(self, level, text):
        self._model_status = (level, text)
        log_problem(self.get_logger(), level, text)

    def _install(self, plan: Plan, source: str) -> None:
        old = self._plan
        log = self.get_logger()
        if old is None or old.base is not plan.base:
            model = plan.base
            text = f"robot {model.name!r} from {source}: {model.nv} joints {list(model.joint_names)}"
            if old is not None and old.base.joint_names != model.joint_names:
                removed = [n for n in old.base.joint_names if n not in model.joint_names]
                added = [n for n in model.joint_names if n not in old.base.joint_names]
                dropped = "desired inputs dropped, " if old.names != plan.names else ""
                log.warn(
                    f"the new robot_description changes the joints (removed {removed}, added {added}, "
                    f"or reordered); {dropped}joint states kept by name"
                )
            log.info("loaded " + text)
            self._model_status = (DiagnosticStatus.OK, "loaded " + text)
            self._model_source = source
            self._remap_state(old, plan)
            self._pending_base = None
        if old is None or old.names != plan.names:
            self._desired = None
        self._maps = {}
        self._traj_maps = {}
        self._msgs = _OutputMessages(plan.names)
        self._plan = plan

    def _remap_state(self, old: Plan | None, plan: Plan) -> None:
        n = plan.model.nv
        q, qd = np.zeros(n), np.zeros(n)
        q_ns, qd_ns = np.full(n, NEVER, dtype=np.int64), np.full(n, NEVER, dtype=np.int64)
        if old is not None:
            for name, i in plan.index.items():
                j = old.index.get(name)
                if j is not None:
                    q[i], qd[i], q_ns[i], qd_ns[i] = self._q[j], self._qd[j], self._q_ns[j], self._qd_ns[j]
        self._q, self._qd, self._q_ns, self._qd_ns = q, qd, q_ns, qd_ns

    # --- problems: throttled log + diagnostics ---------------------------------------------------
    def _problem(self, kind: str, text: str, now_ns: int, level=DiagnosticStatus.ERROR) -> None:
        entry = self._problems.get(kind)
        if entry is None:
            self._problems[kind] = [level, text, now_ns]
        else:
            entry[0], entry[1], entry[2] = level, text, now_ns
        # throttle per kind and reason (the text up to its first number, name list or value)
        key = (kind, _REASON.split(text, 1)[0])
        last = self._last_log.get(key, NEVER)
        if now_ns - last >= LOG_THROTTLE * 1e9:
            self._last_log[key] = now_ns
            log_problem(self.get_logger(), level, text)

    def _reject(self, topic: str, text: str, now_ns: int) -> None:
        self._problem(topic, f"{topic} message rejected: {text}", now_ns)
        self._n_rejected += 1

    # --- inputs -----------------------------------------------------------------------------------
    def _on_joint_states(self, msg: JointState) -> None:
        now = time.monotonic_ns()
        self._n_in += 1
        plan = self._plan
        if plan is None:
            return
        names = msg.name
        key = tuple(names)
        mm = self._maps.get(key)
        if mm is None:
            try:
                mm = _map_message(key, plan)
            except ValueError as exc:
                self._reject("joint_states", str(exc), now)
                return
            if len(self._maps) > MAX_CACHED_NAME_LISTS:
                self._maps.clear()
            self._maps[key] = mm
        n = len(key)
        pos, vel = msg.position, msg.velocity
        if len(pos) not in (0, n) or len(vel) not in (0, n) or len(msg.effort) not in (0, n):
            self._reject(
                "joint_states",
                f"{n} names but {len(pos)} positions, {len(vel)} velocities and {len(msg.effort)} efforts "
                f"(each must be {n} or empty)",
                now,
            )
            return
        p = v = None
        if len(pos):
            pos = np.frombuffer(pos) if isinstance(pos, array.array) else np.asarray(pos, dtype=float)
            p = pos[mm.src]
            if not np.isfinite(p).all():
                self._reject("joint_states", f"non-finite position of {self._bad_names(p, mm)}", now)
                return
        if len(vel):
            vel = np.frombuffer(vel) if isinstance(vel, array.array) else np.asarray(vel, dtype=float)
            v = vel[mm.src]
            if not np.isfinite(v).all():
                self._reject("joint_states", f"non-finite velocity of {self._bad_names(v, mm)}", now)
                return
        if p is not None:
            self._q[mm.dst] = p
            self._q_ns[mm.dst] = now
            if len(mm.mimic_src):
                self._check_mimic(pos, mm, plan, now)
        if v is not None:
            self._qd[mm.dst] = v
            self._qd_ns[mm.dst] = now
        if p is None and v is None or not len(mm.src):
            return  # nothing of this robot in the message (e.g. another robot's joints): no output
        try:
            self._compute_and_publish(plan, msg.header.stamp, now)
        except Exception as exc:  # noqa: BLE001 - inputs are validated; whatever else happens, stay up
            self._problem("output", f"not publishing: the computation failed: {exc!r}", now)

    @staticmethod
    def _bad_names(values, mm: _MsgMap):
        return [mm.known_names[i] for i in np.flatnonzero(~np.isfinite(values))]

    def _check_mimic(self, pos, mm: _MsgMap, plan: Plan, now: int) -> None:
        masters_fresh = now - self._q_ns[mm.mimic_master] <= plan.state_timeout_ns
        expected = mm.mimic_mult * self._q[mm.mimic_master] + mm.mimic_offset
        reported = pos[mm.mimic_src]
        bad = masters_fresh & ~(np.abs(reported - expected) <= MIMIC_TOLERANCE)  # NaN counts as bad
        if bad.any():
            detail = ", ".join(
                f"{mm.mimic_names[i]}={reported[i]:.4g} (expected {expected[i]:.4g})" for i in np.flatnonzero(bad)
            )
            self._problem("mimic", f"mimic joints disagree with their masters (ignored): {detail}", now,
                          DiagnosticStatus.WARN)

    def _on_desired_accelerations(self, msg: Float64MultiArray) -> None:
        now = time.monotonic_ns()
        plan = self._plan
        if plan is None:
            return
        data = np.array(msg.data, dtype=float)
        if data.shape != (len(plan.names),):
            self._reject(
                "desired_accelerations",
                f"{data.size} values, expected {len(plan.names)} (one per output joint {plan.names})",
                now,
            )
            return
        if not np.isfinite(data).all():
            bad = [plan.names[i] for i in np.flatnonzero(~np.isfinite(data))]
            self._reject("desired_accelerations", f"non-finite acceleration of {bad}", now)
            return
        self._desired = _Desired(data, None, None, now, "desired_accelerations")

    def _on_desired_state(self, msg: JointTrajectory) -> None:
        now = time.monotonic_ns()
        plan = self._plan
        if plan is None:
            return
        topic = "desired_state"
        key = tuple(msg.joint_names)
        idx = self._traj_maps.get(key)
        if idx is None:
            if len(set(key)) != len(key):
                self._reject(topic, f"duplicate joint names {duplicates(key)}", now)
                return
            where = {n: i for i, n in enumerate(key)}
            missing = [n for n in plan.names if n not in where]
            if missing:
                self._reject(topic, f"joints {missing} missing (it must name every output joint)", now)
                return
            idx = np.array([where[n] for n in plan.names], dtype=np.intp)
            if len(self._traj_maps) > MAX_CACHED_NAME_LISTS:
                self._traj_maps.clear()
            self._traj_maps[key] = idx
        if len(msg.points) != 1:
            self._reject(topic, f"{len(msg.points)} points, expected exactly one", now)
            return
        point = msg.points[0]
        n = len(key)
        values = {}
        for field in ("positions", "velocities", "accelerations"):
            raw = getattr(point, field)
            if len(raw) == 0:
                values[field] = None
                continue
            if len(raw) != n:
                self._reject(topic, f"{len(raw)} {field} for {n} joint names", now)
                return
            arr = np.asarray(raw, dtype=float)[idx]
            if not np.isfinite(arr).all():
                bad = [plan.names[i] for i in np.flatnonzero(~np.isfinite(arr))]
                self._reject(topic, f"non-finite {field} of {bad}", now)
                return
            values[field] = arr
        if all(v is None for v in values.values()):
            self._reject(topic, "the point has no positions, velocities or accelerations", now)
            return
        qdd = values["accelerations"] if values["accelerations"] is not None else np.zeros(len(plan.names))
        self._desired = _Desired(qdd, values["velocities"], values["positions"], now, topic)

    # --- the hot path -------------------------------------------------------------------------------
    def _compute_and_publish(self, plan: Plan, stamp, now: int) -> None:
        t0 = time.perf_counter_ns()
        limit = now - plan.state_timeout_ns
        if self._q_ns.min() < limit:
            self._problem("state", "not publishing: " + self._missing_text(self._q_ns, now, plan, "position"), now)
            return
        s = plan.settings
        model, out = plan.model, plan.out
        q, qd = self._q, self._qd
        vel_ok = self._qd_ns.min() >= limit
        desired = self._desired
        want_computed = desired is not None
        if want_computed and now - desired.received_ns > plan.desired_timeout_ns:
            want_computed = False
            if s.command_source == "computed":
                age = (now - desired.received_ns) * 1e-9
                self._problem("desired", f"{desired.topic} is stale ({age:.3f} s > desired_timeout "
                              f"{s.desired_timeout:g} s): no computed torques", now, DiagnosticStatus.WARN)
        if (want_computed or s.publish_bias_torques) and not vel_ok:
            self._problem("velocity", "no computed or bias torques: "
                          + self._missing_text(self._qd_ns, now, plan, "velocity"), now,
                          DiagnosticStatus.ERROR if want_computed else DiagnosticStatus.WARN)
            want_computed = False
        want_bias = vel_ok and (s.publish_bias_torques or want_computed)
        want_mass = s.publish_mass_matrix or want_computed

        h = rd.bias_forces(model, q, qd) if want_bias else None
        M = rd.mass_matrix(model, q) if want_mass else None
        msgs = self._msgs
        command = s.command_source
        # the control output first (it is what a 1 kHz loop waits for), then the rest;
        # nothing non-finite leaves the node, and the message objects are reused (publish copies)
        if want_computed:
            acc_out = desired.qdd.copy()
            if desired.q is not None:
                err = desired.q - q[out]
                if plan.any_continuous:
                    err[plan.continuous] = np.remainder(err[plan.continuous] + np.pi, 2 * np.pi) - np.pi
                acc_out += plan.kp * err
            if desired.qd is not None:
                acc_out += plan.kd * (desired.qd - qd[out])
            elif desired.q is not None:
                acc_out -= plan.kd * qd[out]
            if plan.full:
                acc = acc_out
            else:
                acc = np.zeros(model.nv)
                acc[out] = acc_out
            tau = M @ acc + h
            if s.compensate_friction:
                tau = tau + model.damping * qd + model.friction * np.tanh(qd / s.friction_smoothing)
            if not math.isfinite(tau.sum()):  # NaN/inf anywhere makes the sum non-finite
                self._problem("output", "not publishing: non-finite computed torques", now)
                return
            msg = msgs.computed
            msg.header.stamp = stamp
            msg.effort = as_float_array(tau if plan.full else tau[out])
            self._pub_computed.publish(msg)
            self._n_computed += 1
            if command == "computed":
                msgs.command.data = msg.effort
                self._pub_command.publish(msgs.command)

        g = rd.gravity_torques(model, q)
        total = g.sum()
        if h is not None:
            total += h.sum()
        if M is not None:
            total += M.sum()
        if not math.isfinite(total):  # (a sum of huge finite values overflowing is refused too)
            self._problem("output", "not publishing: non-finite gravity, bias or mass matrix", now)
            return
        msg = msgs.gravity
        msg.header.stamp = stamp
        msg.effort = as_float_array(g if plan.full else g[out])
        self._pub_gravity.publish(msg)
        if command == "gravity":
            msgs.command.data = msg.effort
            self._pub_command.publish(msgs.command)
        if h is not None and s.publish_bias_torques:
            msg = msgs.bias
            msg.header.stamp = stamp
            msg.effort = as_float_array(h if plan.full else h[out])
            self._pub_bias.publish(msg)
        if M is not None and s.publish_mass_matrix:
            msgs.mass.data = as_float_array(M if plan.full else M[np.ix_(out, out)])
            self._pub_mass.publish(msgs.mass)
        self._n_out += 1
        dt = time.perf_counter_ns() - t0
        self._compute_ns_sum += dt
        if dt > self._compute_ns_max:
            self._compute_ns_max = dt

    def _missing_text(self, stamps_ns, now, plan: Plan, what: str) -> str:
        limit = now - plan.state_timeout_ns
        names = plan.model.joint_names
        never = [names[i] for i in np.flatnonzero(stamps_ns <= NEVER)]
        stale = [f"{names[i]} ({(now - stamps_ns[i]) * 1e-9:.3f} s)"
                 for i in np.flatnonzero((stamps_ns < limit) & (stamps_ns > NEVER))]
        parts = []
        if never:
            parts.append(f"{what} never received for {never}")
        if stale:
            parts.append(f"{what} older than state_timeout {plan.settings.state_timeout:g} s for {stale}")
        return "; ".join(parts)

    # --- diagnostics --------------------------------------------------------------------------------
    def _stats_reset(self, now):
        self._stats_ns = now
        self._n_in = self._n_out = self._n_computed = self._n_rejected = 0
        self._compute_ns_sum = self._compute_ns_max = 0

    def _on_diagnostics_timer(self) -> None:
        now = time.monotonic_ns()
        self._n_diag += 1
        if self._plan is None and self._n_diag % int(WAITING_LOG_PERIOD / DIAGNOSTICS_PERIOD) == 1:
            if self._pending_base is None:
                self.get_logger().info(self._description.waiting_for())
            else:
                self.get_logger().warn(self._model_status[1])
        self._pub_diag.publish(self.diagnostics(now))

    def diagnostics(self, now: int) -> DiagnosticArray:
        """The DiagnosticArray of the last period (and reset the period's counters)."""
        plan = self._plan
        period = max((now - self._stats_ns) * 1e-9, 1e-9)
        recent = {k: v for k, v in self._problems.items() if now - v[2] <= 2 * DIAGNOSTICS_PERIOD * 1e9}

        # model
        level, text = self._model_status
        if plan is None and self._pending_base is None and level == DiagnosticStatus.ERROR and "failed" not in text:
            text = "no robot model: " + self._description.waiting_for()
        model_values = [("source", self._model_source or "none")]
        if plan is not None:
            model_values += [
                ("robot", plan.base.name), ("joints", " ".join(plan.names)),
                ("gravity", " ".join(f"{x:g}" for x in plan.settings.gravity)),
                ("payload", f"{plan.settings.payload_mass:g} kg on {plan.settings.payload_link}"
                 if plan.settings.payload_link else "none"),
            ]
        statuses = [("model", level, text, model_values)]

        # inputs: joint states and desired inputs
        in_values = [("joint_states rate (Hz)", f"{self._n_in / period:.1f}"),
                     ("rejected messages", self._n_rejected)]
        in_level, in_text = DiagnosticStatus.OK, "joint states complete and fresh"
        if plan is not None:
            missing = self._missing_text(self._q_ns, now, plan, "position")
            if missing:
                in_level, in_text = DiagnosticStatus.ERROR, missing
            desired = self._desired
            if desired is None:
                in_values.append(("desired input", "none"))
            else:
                age = (now - desired.received_ns) * 1e-9
                in_values.append(("desired input", f"{desired.topic}, {age:.3f} s old"))
                if age > plan.settings.desired_timeout and plan.settings.command_source == "computed":
                    in_level = max(in_level, DiagnosticStatus.WARN)
                    in_text += f"; {desired.topic} stale ({age:.3f} s)"
        else:
            in_level, in_text = DiagnosticStatus.STALE, "no model"
        for kind in ("joint_states", "desired_accelerations", "desired_state", "mimic", "velocity", "desired"):
            if kind in recent:
                lvl, txt, _ = recent[kind]
                in_level = max(in_level, lvl)
                in_text += "; " + txt
                in_values.append((kind, txt))
        statuses.append(("inputs", in_level, in_text, in_values))

        # outputs
        n_out = self._n_out
        out_values = [
            ("output rate (Hz)", f"{n_out / period:.1f}"),
            ("computed_torques rate (Hz)", f"{self._n_computed / period:.1f}"),
            ("compute time mean (us)", f"{self._compute_ns_sum / n_out / 1e3:.1f}" if n_out else "-"),
            ("compute time max (us)", f"{self._compute_ns_max / 1e3:.1f}" if n_out else "-"),
            ("command_source", self._settings.command_source),
        ]
        out_level, out_text = DiagnosticStatus.OK, f"publishing at {n_out / period:.1f} Hz"
        for kind in ("state", "output"):
            if kind in recent:
                lvl, txt, _ = recent[kind]
                out_level, out_text = max(out_level, lvl), txt
        if plan is None:
            out_level, out_text = DiagnosticStatus.STALE, "no model: publishing nothing"
        elif n_out == 0 and out_level == DiagnosticStatus.OK:
            out_level, out_text = DiagnosticStatus.WARN, "no joint states: publishing nothing"
        statuses.append(("outputs", out_level, out_text, out_values))

        self._stats_reset(now)
        return diagnostic_array(self, plan.base.name if plan is not None else "", statuses)


def main(args=None):
    """Entry point of the ``dynamics_node`` executable."""
    return run_node(DynamicsNode, args=args)


if __name__ == "__main__":
    raise SystemExit(main())
