"""The dynamics node's settings and plan (no rclpy).

:data:`PARAMETERS` are the node's parameters, :class:`Settings` their values, :func:`coerce_setting`
converts and checks one value; :func:`make_plan` applies the settings to a parsed model and
derives everything the hot path needs (:class:`Plan`); :func:`servo_terms` turns a desired input and the
measured state into the computed-torque law's terms (:func:`robot_dynamics.control.laws.computed_torque`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...control import laws as control
from ...rigid_body.data import Data
from ...rigid_body.model import RobotModel, given_limits
from ..common.parameters import (
    LOCK, MOTOR_PARAMETERS, Parameter, duplicates, float_list, name_list, one_of, require_joints, with_armature,
)
from .external_torque_plan import EXTERNAL_TORQUE_PARAMETERS, EXTERNAL_TORQUE_TOPICS, coerce_external_torque, compile_external_torque
from .payload import PAYLOAD_ESTIMATION_PARAMETERS, PAYLOAD_ESTIMATION_TOPICS, coerce_payload_estimation, compile_payload_estimation
from .ft_sensor_plan import FT_FIELDS, FT_PARAMETERS, FT_TOPICS, coerce_ft, compile_ft
from ..common.safety import Plausibility, check_gains, check_gravity, check_payload, check_outputs_finite, check_outputs_plausible
from .task_space_inputs import TASK_PARAMETERS, TASK_TOPICS, TaskSpaceFields, coerce_task_setting, compile_task

__all__ = ["COMMAND_SOURCES", "PARAMETERS", "TOPICS", "Desired", "Plan", "Settings", "coerce_setting",
           "make_plan", "servo_terms"]

COMMAND_SOURCES = ("none", "gravity", "computed", "task_space")


@dataclass(frozen=True)
class Settings(TaskSpaceFields):
    """The node's parameter values (besides robot_description / robot_description_node); the
    ``task_*`` fields are :class:`~robot_dynamics.nodes.dynamics.task_space_inputs.TaskSpaceFields`'."""

    lock_torque_parameters: bool = False
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
    friction_velocity: float = 0.01
    state_timeout: float = 0.1
    desired_timeout: float = 0.1
    publish_mass_matrix: bool = True
    publish_bias_torques: bool = True
    max_position_error: float = 0.0
    motor_joint_names: tuple = ()
    armature: tuple = ()
    external_torque_enabled: bool = False  # external_torque_plan.EXTERNAL_TORQUE_PARAMETERS, from here on
    external_torque_gain: float = EXTERNAL_TORQUE_PARAMETERS[1].default
    external_torque_frame: str = ""
    external_torque_friction: bool = False
    external_torque_effort_sign: tuple = (1.0,)
    collision_thresholds: tuple = ()
    collision_release: float = EXTERNAL_TORQUE_PARAMETERS[6].default
    collision_min_duration: float = EXTERNAL_TORQUE_PARAMETERS[7].default
    collision_reaction: str = "none"
    external_torque_wrench_frame: str = ""
    external_torque_wrench: str = "full"
    external_torque_passive: tuple = ()
    payload_estimation_enabled: bool = False  # payload.PAYLOAD_ESTIMATION_PARAMETERS, from here on
    payload_estimation_window: float = PAYLOAD_ESTIMATION_PARAMETERS[1].default
    payload_estimation_apply: bool = False
    ft_sensor_frame: str = FT_FIELDS["ft_sensor_frame"]  # ft_sensor_plan.FT_PARAMETERS, from here on
    ft_sensor_range: tuple = FT_FIELDS["ft_sensor_range"]
    ft_sensor_acceleration_filter: float = FT_FIELDS["ft_sensor_acceleration_filter"]


_D = Settings()
#: what lock_torque_parameters leaves writable: whether two outputs are published, not what they carry
NOT_TORQUE_SHAPING = ("publish_mass_matrix", "publish_bias_torques")
#: The node's parameters, in declaration order (LOCK first); rclpy enforces the types and ranges given here.
PARAMETERS = (LOCK,) + tuple(p if p.name in NOT_TORQUE_SHAPING else replace(p, shapes_torque=True) for p in (
    Parameter("gravity", list(_D.gravity), "Gravitational acceleration (x, y, z) in the root link frame, "
              "m/s^2; the physical acceleration, (0, 0, -9.81) for an upright mounting.", "double_array"),
    Parameter("joints", [], "Output joint order (string list); empty = the model's order. Every listed name "
              "must be a moving, non-mimic joint of the model."),
    Parameter("payload.link", _D.payload_link, "Link carrying the payload; empty = no payload.", "string",
              field="payload_link"),
    Parameter("payload.mass", _D.payload_mass, "Payload mass, kg.", "double", low=0.0, high=1.0e4,
              field="payload_mass"),
    Parameter("payload.com", list(_D.payload_com), "Payload centre of mass in the payload link's frame, m.",
              "double_array", field="payload_com"),
    Parameter("payload.inertia", list(_D.payload_inertia), "Payload inertia about its centre of mass in the "
              "link's axes, kg m^2, URDF order ixx ixy ixz iyy iyz izz; positive semi-definite.", "double_array",
              field="payload_inertia"),
    Parameter("kp", _D.kp[0], "Position gain(s) of the computed-torque law, 1/s^2: one number or one per "
              "output joint."),
    Parameter("kd", _D.kd[0], "Velocity gain(s) of the computed-torque law, 1/s: one number or one per "
              "output joint."),
    Parameter("command_source", _D.command_source, "What effort_command carries: none | gravity | computed | task_space.",
              "string"),
    Parameter("compensate_friction", _D.compensate_friction, "Add the URDF friction damping*qd + "
              "friction*tanh(qd/friction_velocity) to the computed torques (damping: the joint's and its "
              "motor's r^2 B_m).", "bool"),
    Parameter("friction_velocity", _D.friction_velocity, "Velocity scale eps of the smoothed Coulomb friction "
              "tanh(qd/eps), rad/s or m/s.", "double", low=1e-6, high=10.0),
    Parameter("state_timeout", _D.state_timeout, "Maximum age of every joint's position (and velocity, "
              "where needed), s.", "double", low=1e-3, high=60.0),
    Parameter("desired_timeout", _D.desired_timeout, "Maximum age of a desired input for computed torques, s.",
              "double", low=1e-3, high=60.0),
    Parameter("publish_mass_matrix", _D.publish_mass_matrix, "Publish mass_matrix.", "bool"),
    Parameter("publish_bias_torques", _D.publish_bias_torques, "Publish bias_torques.", "bool"),
    Parameter("max_position_error", _D.max_position_error, "Largest position error of a desired_state the "
              "computed command follows, rad or m; beyond it effort_command holds gravity instead. 0 = no "
              "limit.", "double", low=0.0, high=1.0e3),
    *MOTOR_PARAMETERS,
    *TASK_PARAMETERS,
    *EXTERNAL_TORQUE_PARAMETERS,
    *PAYLOAD_ESTIMATION_PARAMETERS,
    *FT_PARAMETERS,
))

#: (topic, type, direction, what) for --help
TOPICS = (
    ("joint_states", "sensor_msgs/JointState", "in", "measured positions and velocities, merged by name"),
    ("desired_accelerations", "std_msgs/Float64MultiArray", "in", "qdd_d in output order"),
    ("desired_state", "trajectory_msgs/JointTrajectory", "in", "one point: q_d, qd_d, qdd_d by name"),
    ("robot_description", "std_msgs/String", "in", "latched URDF (when the parameter is empty)"),
    ("gravity_torques", "sensor_msgs/JointState", "out", "effort = g(q)"),
    ("bias_torques", "sensor_msgs/JointState", "out", "effort = h(q, qd) = C(q, qd) qd + g(q)"),
    ("computed_torques", "sensor_msgs/JointState", "out", "effort = M(q) (qdd_d + kd e' + kp e) + h(q, qd)"),
    ("mass_matrix", "std_msgs/Float64MultiArray", "out", "M(q), row-major, dims rows/cols"),
    ("effort_command", "std_msgs/Float64MultiArray", "out", "the command_source torques, or the gravity hold "
     "g(q) while anything on their way is refused"),
    *TASK_TOPICS,
    *EXTERNAL_TORQUE_TOPICS,
    *PAYLOAD_ESTIMATION_TOPICS,
    *FT_TOPICS,
    ("/diagnostics", "diagnostic_msgs/DiagnosticArray", "out", "model, inputs, outputs, once a second"),
)


def coerce_setting(field: str, value):
    """Parameter value -> Settings field value; ValueError (the reason) when invalid."""
    if field.startswith("task_"):
        return coerce_task_setting(field, value)
    if field.startswith(("external_torque_", "collision_")):
        return coerce_external_torque(field, value)
    if field.startswith("payload_estimation_"):
        return coerce_payload_estimation(field, value)
    if field.startswith("ft_sensor_"):
        return coerce_ft(field, value)
    param = field.replace("payload_", "payload.")
    if field == "gravity":
        gravity = float_list(param, value, 3)
        check_gravity(gravity)
        return gravity
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
    if field == "motor_joint_names":
        return name_list(field, value)
    if field == "armature":
        return float_list(field, value, strict=False)
    if field == "command_source":
        return one_of(param, value, COMMAND_SOURCES)
    if field == "payload_link":
        return str(value)
    if field in ("payload_mass", "friction_velocity", "state_timeout", "desired_timeout", "max_position_error"):
        v = float(value)
        low = 0.0 if field in ("payload_mass", "max_position_error") else 1e-9
        if not (np.isfinite(v) and v >= low):
            raise ValueError(f"{param} must be a finite number >= {low:g}, got {value!r}")
        return v
    return bool(value)


@dataclass(frozen=True, eq=False)
class Plan:
    """Everything the hot path needs, derived once from a parsed model and the settings."""

    base: RobotModel  # as parsed from the URDF
    model: RobotModel  # with the gravity, armature and payload settings applied
    settings: Settings
    names: list  # output joint names (one list object, reused in every message)
    out: np.ndarray  # model index of each output joint
    full: bool  # output order == model order
    index: dict  # model joint name -> model index
    kp: np.ndarray  # per model joint (0 for a joint that is not an output)
    kd: np.ndarray
    continuous: np.ndarray  # bool per output joint: wrap position errors to [-pi, pi)
    mimic: dict  # coupled (mimic) joint name -> (((master model index, factor), ...), offset)
    state_timeout_ns: int
    desired_timeout_ns: int
    plausibility: Plausibility  # the joint states believed
    effort_limit: np.ndarray  # per output joint, inf where the URDF gives none: effort_command's bounds
    data: Data  # the workspace of the model's one pass per message (robot_dynamics.rigid_body.data)
    task: object = None  # task_control.TaskSpaceSettings with command_source task_space
    external_torque: object = None  # external_torque_plan.ExternalTorquePlan: external torques and collisions (None: off)
    payload_estimation: object = None  # payload.PayloadEstimationPlan (None: off)
    ft_sensor: object = None  # ft_sensor_plan.FtSensorPlan: the F/T sensor's compensation (None: off)


def make_plan(base: RobotModel, s: Settings) -> Plan:
    """``base`` + settings -> :class:`Plan`; ``ValueError`` naming the problem otherwise."""
    model = with_armature(base.with_gravity(s.gravity), s.motor_joint_names, s.armature)
    plausibility = Plausibility(base)
    unloaded = model  # (what payload estimation subtracts: its estimate is the whole payload)
    if s.payload_link:
        if s.payload_link not in model.link_names:
            raise ValueError(f"payload.link {s.payload_link!r} is not a link of robot {base.name!r}")
        check_payload(plausibility, s.payload_mass, s.payload_com)
        with np.errstate(over="ignore", invalid="ignore"):  # (an absurd payload is refused just below)
            model = model.with_payload(s.payload_link, s.payload_mass, s.payload_com, s.payload_inertia)
    payload = f", payload {s.payload_mass:g} kg at {list(s.payload_com)} m" if s.payload_link else ""
    what = f"gravity {list(s.gravity)}{payload}{f', armature {list(s.armature)}' if s.armature else ''}"
    check_outputs_finite(model, what)
    check_outputs_plausible(model, plausibility, what)
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
        gains[key] = np.zeros(model.nv)
        gains[key][out] = g
    check_gains(model, plausibility, out, gains["kp"][out], gains["kd"][out])
    continuous = model.continuous[out]
    mimic = {m: (tuple((index[master], float(factor)) for master, factor in terms), float(off))
             for m, (terms, off) in model.couplings.items() if all(master in index for master, _ in terms)}
    return Plan(
        base=base, model=model, settings=s, names=list(names), out=out,
        full=bool(n_out == model.nv and np.array_equal(out, np.arange(model.nv))), index=index,
        kp=gains["kp"], kd=gains["kd"], continuous=continuous, mimic=mimic,
        state_timeout_ns=int(s.state_timeout * 1e9), desired_timeout_ns=int(s.desired_timeout * 1e9),
        plausibility=plausibility, effort_limit=given_limits(model.effort_limits)[out], data=Data(model),
        task=compile_task(model, s, plausibility),
        external_torque=compile_external_torque(model, out, s), ft_sensor=compile_ft(model, s),
        payload_estimation=compile_payload_estimation(unloaded, out, s),
    )


@dataclass(frozen=True, eq=False)
class Desired:
    """A valid desired input, in the output order of the plan it was received under (it is dropped
    when the output joints change); ``q``, ``qd`` are ``None`` when not given."""

    qdd: np.ndarray
    qd: np.ndarray | None
    q: np.ndarray | None
    received_ns: int
    topic: str


def servo_terms(plan: Plan, desired: Desired, q: np.ndarray, qd: np.ndarray):
    """``(qdd_d, e, e')`` in model order for :func:`robot_dynamics.control.laws.computed_torque`:
    ``e = q_d - q`` (wrapped on continuous joints) where ``q_d`` is given, ``e' = qd_d - qd`` where
    ``qd_d`` is given (``-qd``, i.e. ``qd_d = 0``, where only ``q_d`` is); zero elsewhere and off
    the output joints."""
    out, n = plan.out, plan.model.nv
    qdd_d, e, ed = np.zeros(n), np.zeros(n), np.zeros(n)
    qdd_d[out] = desired.qdd
    if desired.q is not None:
        e[out] = control.position_error(desired.q, q[out], plan.continuous)
    if desired.qd is not None:
        ed[out] = desired.qd - qd[out]
    elif desired.q is not None:
        ed[out] = -qd[out]
    return qdd_d, e, ed
