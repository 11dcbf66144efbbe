"""The simulator node's settings and plan (no rclpy).

:data:`PARAMETERS` are the node's parameters, :class:`Settings` their values, :func:`coerce_setting`
converts and checks one value; :func:`make_plan` checks the settings against a parsed model and
derives the orders of the command and state messages and the initial state (:class:`Plan`);
:func:`configure` sets a :class:`~robot_dynamics.simulation.simulator.Simulator`'s switches from the settings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...rigid_body.elastic import links_only, stiffness_vector
from ...rigid_body.model import RobotModel
from ...rigid_body.friction import DEFAULT_FRICTION_VELOCITY
from ...simulation.drives import DRIVE_BANDWIDTH, ON_COMMAND_TIMEOUT, Drives
from ...simulation.simulator import INTEGRATORS, Simulator
from ..common.parameters import (
    MOTOR_PARAMETERS, Parameter, bounded_float, float_list, motor_values, name_list, one_of, require_joints,
    with_armature,
)
from ..common.safety import Plausibility, check_gravity, check_outputs_finite, check_outputs_plausible, reference_state
from .contact import CONTACT_PARAMETERS, CONTACT_TOPICS, coerce_contact, contact_model
from .ft_sensor import FT_PARAMETERS, FT_TOPICS, FtSensorFields, coerce_ft, simulated_sensor

__all__ = ["PARAMETERS", "SERVICES", "STEP_ANGLE", "TOPICS", "Plan", "Settings",
           "coerce_setting", "configure", "fastest_rate", "make_plan"]


#: largest ``rate * dt`` of the fastest dynamics a physics step is trusted with (:func:`fastest_rate`):
#: rk4 stays stable on an oscillation up to 2.8, the drives' loops (their torque held over a step) up to 2
STEP_ANGLE = 1.0
#: largest physics_rate, Hz
MAX_PHYSICS_RATE = 100_000.0


@dataclass(frozen=True)
class Settings(FtSensorFields):
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
    friction_velocity: float = DEFAULT_FRICTION_VELOCITY
    enforce_effort_limits: bool = True
    enforce_position_limits: bool = True
    command_timeout: float = 0.1
    on_command_timeout: str = "zero_torque"
    enforce_velocity_limits: bool = False
    motor_joint_names: tuple = ()
    armature: tuple = ()
    joint_stiffness: tuple = ()
    contact_planes: tuple = ()
    contact_links: tuple = ()
    contact_spheres: tuple = ()
    contact_stiffness: float = CONTACT_PARAMETERS[3].default
    contact_damping: float = CONTACT_PARAMETERS[4].default
    contact_friction: float = 0.0
    contact_wrench_frame: str = ""


_D = Settings()
#: The node's parameters, in declaration order (numbers and lists dynamically typed: 1000 or 1000.0).
PARAMETERS = (
    Parameter("gravity", list(_D.gravity), "Gravitational acceleration (x, y, z) in the root link frame, "
              "m/s^2: the physical acceleration, (0, 0, -9.81) for an upright mounting."),
    Parameter("joints", [], "Order of effort_command's data (string list); empty = the model order. "
              "joint_states lists these joints first, then the other coordinates, then the mimic and coupled joints."),
    Parameter("physics_rate", _D.physics_rate, "Integration steps per second of simulated time, Hz."),
    Parameter("publish_rate", _D.publish_rate, "joint_states (and /clock) messages per second of simulated "
              "time, Hz."),
    Parameter("integrator", _D.integrator, "euler (the textbook explicit Euler) | semi_implicit_euler | rk4 "
              "| adaptive (scipy solve_ivp DOP853, error-controlled).", "string"),
    Parameter("real_time_factor", _D.real_time_factor, "Simulated seconds per wall-clock second: 1 = real "
              "time, 0 = as fast as possible."),
    Parameter("publish_clock", _D.publish_clock, "Publish /clock (simulated time from 0) and stamp everything "
              "with it, for nodes running with use_sim_time (read-only: the time base cannot change while "
              "running).", "bool", read_only=True),
    Parameter("initial_joint_names", [], "Names for initial_positions / initial_velocities; empty = those "
              "lists are in model order."),
    Parameter("initial_positions", [], "Initial (and ~/reset) positions, rad or m; empty = 0 (clipped into "
              "the limits)."),
    Parameter("initial_velocities", [], "Initial (and ~/reset) velocities; empty = at rest."),
    Parameter("apply_damping", _D.apply_damping, "Apply URDF <dynamics damping> (viscous, -damping * qd).",
              "bool"),
    Parameter("apply_friction", _D.apply_friction, "Apply URDF <dynamics friction> (Coulomb, smoothed: "
              "-friction * tanh(qd / friction_velocity)).", "bool"),
    Parameter("friction_velocity", _D.friction_velocity, "Velocity scale eps of the smoothed Coulomb "
              "friction tanh(qd/eps), rad/s or m/s."),
    Parameter("enforce_effort_limits", _D.enforce_effort_limits, "Saturate commands at the URDF effort "
              "limits (joint_states.effort shows the applied value).", "bool"),
    Parameter("enforce_position_limits", _D.enforce_position_limits, "Stiff, critically damped, one-sided "
              "limits at the URDF position limits.", "bool"),
    Parameter("command_timeout", _D.command_timeout, "A joint's command older than this (simulated s) "
              "becomes stale (warned once); 0 = never."),
    Parameter("on_command_timeout", _D.on_command_timeout, "What a joint's drive does once its command is "
              "stale: zero_torque | brake (stop, then hold still) | hold_position (back to where it was).",
              "string"),
    Parameter("enforce_velocity_limits", _D.enforce_velocity_limits, "Drives brake a joint that is faster "
              "than its URDF velocity limit.", "bool"),
    *MOTOR_PARAMETERS,
    Parameter("joint_stiffness", [], "Elastic joints (Spong Ex. 6.2): the gears' stiffness per motor_joint_names "
              "entry, N m/rad (N/m), > 0 for every joint, each with a positive armature; empty = rigid joints. "
              "The effort command is then the motor torque, and motor_states carries the motors."),
    *CONTACT_PARAMETERS, *FT_PARAMETERS,
)

#: (topic, type, direction, what) for --help
TOPICS = (
    ("effort_command", "std_msgs/Float64MultiArray", "in", "actuator torques in the `joints` order"),
    ("effort_command_named", "sensor_msgs/JointState", "in", "actuator torques by name (any subset)"),
    ("external_wrench", "geometry_msgs/WrenchStamped", "in", "on link header.frame_id, in its axes, moment "
     "about its origin (held until the next message on that link)"),
    ("robot_description", "std_msgs/String", "in", "latched URDF (when the parameter is empty)"),
    ("joint_states", "sensor_msgs/JointState", "out", "position, velocity, applied effort at publish_rate; mimic and coupled joints from "
     "q_joint = E q + o, qd_joint = E qd, effort 0"),
    ("motor_states", "sensor_msgs/JointState", "out", "with joint_stiffness: motor position and velocity "
     "(link side), applied motor torque, of the coordinates, stamped as joint_states"),
    *CONTACT_TOPICS, *FT_TOPICS,
    ("/clock", "rosgraph_msgs/Clock", "out", "simulated time, with publish_clock"),
    ("/diagnostics", "diagnostic_msgs/DiagnosticArray", "out", "model and simulation, once a second"),
)
SERVICES = (
    ("~/reset", "std_srvs/Trigger", "back to the initial state"),
    ("~/pause", "std_srvs/SetBool", "pause (true) or resume (false) the integration"),
)


def coerce_setting(name: str, value):
    """Parameter value -> Settings field value; ValueError (the reason) when invalid."""
    if name.startswith(("contact_", "ft_sensor_")):
        return (coerce_contact if name.startswith("contact_") else coerce_ft)(name, value)
    if name == "gravity":
        gravity = float_list(name, value, 3, strict=False)
        check_gravity(gravity)
        return gravity
    if name in ("joints", "initial_joint_names", "motor_joint_names"):
        return name_list(name, value)
    if name in ("initial_positions", "initial_velocities", "armature", "joint_stiffness"):
        return float_list(name, value, strict=False)
    if name == "physics_rate":
        return bounded_float(name, value, 1.0, MAX_PHYSICS_RATE)
    if name == "publish_rate":
        return bounded_float(name, value, 0.0, 100_000.0, low_open=True)
    if name == "real_time_factor":
        return bounded_float(name, value, 0.0, 1000.0)
    if name == "friction_velocity":
        return bounded_float(name, value, 1e-6, 10.0)
    if name == "command_timeout":
        return bounded_float(name, value, 0.0, 3600.0)
    if name == "on_command_timeout":
        return one_of(name, value, ON_COMMAND_TIMEOUT)
    if name == "integrator":
        return one_of(name, value, INTEGRATORS)
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


@dataclass(frozen=True, eq=False)
class Plan:
    """The parameters applied to one parsed model: everything the node's hot path needs."""

    base: RobotModel           # as parsed
    model: RobotModel          # with the gravity and armature settings
    settings: Settings
    command_index: np.ndarray  # model index of each entry of effort_command (the `joints` order)
    command_names: tuple
    state_index: np.ndarray    # model index of each coordinate's joint_states entry
    state_names: list          # joint_states names, the coordinates' then the coupled joints' (one list, reused)
    coupled_map: tuple         # (E rows, o) of the coupled joints in state_names: q_joint = E q + o
    index: dict                # joint name -> model index
    q0: np.ndarray             # the initial (and reset) state, model order
    qd0: np.ndarray
    stiffness: tuple           # K of the elastic joints (model order); (): rigid joints
    contact: object            # robot_dynamics.simulation.contact.ContactModel (empty: nothing touches)
    plausibility: Plausibility  # what a published state must pass (the dynamics node's rule for its inputs)
    notes: tuple               # warnings worth logging once (e.g. an initial position beyond a limit)
    drives: Drives             # what the drives read besides the state (robot_dynamics.simulation.drives.drive_torques)
    ft_sensor: object = None   # ft_sensor.SimulatedSensor (None: no sensor)

    def joint_state(self, q, qd, effort):
        """``(position, velocity, effort)`` in :attr:`state_names` order: the coordinates', then each
        coupled joint's ``E q + o`` and ``E qd``, with effort 0 (no actuator drives a coupled joint)."""
        rows, offset = self.coupled_map
        order = self.state_index
        return (np.concatenate((q[order], rows @ q + offset)), np.concatenate((qd[order], rows @ qd)),
                np.concatenate((effort[order], np.zeros(len(offset)))))


def make_plan(base: RobotModel, s: Settings) -> Plan:
    """``base`` + settings -> :class:`Plan`; ``ValueError`` naming the problem otherwise.

    Initial state: ``initial_positions`` / ``initial_velocities`` are parallel to
    ``initial_joint_names`` or, when that is empty, in model order (all joints); empty lists mean
    zeros.  A joint not named starts at rest at 0, or at the nearest position limit when 0 is
    outside its range.
    """
    model = with_armature(base.with_gravity(s.gravity), s.motor_joint_names, s.armature)
    stiffness = ()
    if s.joint_stiffness:
        given = motor_values(model, s.motor_joint_names, s.joint_stiffness, "joint_stiffness")
        missing = [n for i, n in enumerate(model.joint_names) if i not in given]
        if missing:
            raise ValueError(f"joint_stiffness: elastic joints need a stiffness for every joint; none for {missing}")
        stiffness = tuple(stiffness_vector(model, [given[i] for i in range(model.nv)]).tolist())
    index = {n: i for i, n in enumerate(model.joint_names)}
    command_names = s.joints or model.joint_names
    require_joints(model, command_names, "joints")
    command_index = np.array([index[n] for n in command_names], dtype=np.intp)
    rest = [i for i in range(model.nv) if i not in set(command_index.tolist())]
    state_index = np.concatenate((command_index, np.array(rest, dtype=np.intp)))
    E, o = model.joint_map()
    coupled = [i for i, name in enumerate(model.body_joints) if name in model.couplings]
    coupled_map = (E[coupled], o[coupled])
    state_names = [model.joint_names[i] for i in state_index] + [model.body_joints[i] for i in coupled]

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
    plausibility = Plausibility(base)
    implausible = plausibility.state_problem(q0, qd0)
    if implausible:
        raise ValueError(f"initial state not plausible: {implausible}")
    what = f"gravity {list(s.gravity)}{f', armature {list(s.armature)}' if s.armature else ''}"
    check_outputs_finite(model, what)
    check_outputs_plausible(model, plausibility, what)
    rate, fastest = fastest_rate(model, stiffness)
    if stiffness and s.integrator == "euler":
        raise ValueError("integrator euler cannot integrate elastic joints: explicit Euler adds energy to every "
                         "oscillation at any step (by (1 + (w dt)^2)^(1/2) per step), and the springs' modes grow "
                         "without bound; use semi_implicit_euler, rk4 or adaptive")
    if not rate <= STEP_ANGLE * MAX_PHYSICS_RATE:  # (inf, NaN: never)
        raise ValueError(f"{fastest} ({rate:.4g} 1/s) is too fast to integrate at any physics_rate (at most "
                         f"{MAX_PHYSICS_RATE:g} Hz, a step spanning at most {STEP_ANGLE:g}/rate)")
    if not rate <= STEP_ANGLE * s.physics_rate:
        raise ValueError(f"physics_rate {s.physics_rate:g} Hz is too slow for {fastest} ({rate:.4g} 1/s): a step may "
                         f"span at most {STEP_ANGLE:g}/rate, so physics_rate must be at least {rate / STEP_ANGLE:.4g} Hz")
    contact, notes = contact_model(model, s, s.friction_velocity)
    check_initial_contact(model, contact, q0, qd0, plausibility)
    notes += tuple(
        f"initial position of {model.joint_names[i]} ({q0[i]:g}) is outside its limits "
        f"[{lower[i]:g}, {upper[i]:g}]: the limit will push it back"
        for i in np.flatnonzero((q0 < lower) | (q0 > upper))
    )
    return Plan(base=base, model=model, settings=s, command_index=command_index, command_names=tuple(command_names),
                state_index=state_index, state_names=state_names, coupled_map=coupled_map, index=index, q0=q0, qd0=qd0, stiffness=stiffness,
                plausibility=plausibility, notes=notes, drives=Drives(model), contact=contact, ft_sensor=simulated_sensor(model, s))


def check_initial_contact(model, contact, q0, qd0, plausibility) -> None:
    """``ValueError`` unless the contact wrenches at the initial (and ~/reset) state are believed
    (:meth:`~robot_dynamics.nodes.common.safety.Plausibility.wrench_problem`): a plane the robot starts deep
    inside would stop the integration at once, and again after every ~/reset."""
    if not contact.enabled:
        return
    with np.errstate(all="ignore"):
        wrenches = Simulator(model, q0, qd0, contact=contact).contact_wrenches()
    for link, wrench in wrenches.items():
        problem = plausibility.wrench_problem(wrench, f"contact wrench on {link}")
        if problem:
            raise ValueError(f"contact.planes and contact.spheres: at the initial state, {problem}")


def fastest_rate(model, stiffness: tuple) -> tuple[float, str]:
    """``(rate, what)``: the fastest dynamics a physics step must resolve, 1/s, at the reference state:
    the drives' brake loop ``2 w`` (:data:`DRIVE_BANDWIDTH`; on an
    elastic joint's motor ``2 w (M_ii + J_i) / J_i``) and the elastic modes, the square roots of the
    generalized eigenvalues of the springs' stiffness ``[[K, -K], [-K, K]]`` over the inertia
    ``diag(M_links(q), J)`` (Spong Ex. 6.2 linearized, gravity left out)."""
    rate, what = 2 * DRIVE_BANDWIDTH, "the drives' brake loop"
    if not stiffness:
        return rate, what
    import robot_dynamics as rd

    q = reference_state(model)
    K, J = np.asarray(stiffness), np.asarray(model.armature)
    with np.errstate(all="ignore"):
        m = np.diag(rd.mass_matrix(model, q))
        motor_loop = float((2 * DRIVE_BANDWIDTH * m / J).max())
        if motor_loop > rate:
            rate, what = motor_loop, "the drives' brake loop on the motors"
        n = model.nv
        inertia = np.zeros((2 * n, 2 * n))
        inertia[:n, :n] = rd.mass_matrix(links_only(model), q)
        inertia[n:, n:] = np.diag(J)
        springs = np.block([[np.diag(K), -np.diag(K)], [-np.diag(K), np.diag(K)]])
        try:
            L = np.linalg.cholesky(inertia)
            scaled = np.linalg.solve(L, np.linalg.solve(L, springs).T)
            mode = float(np.sqrt(max(np.linalg.eigvalsh(scaled).max(), 0.0)))
        except np.linalg.LinAlgError:  # a link without inertia: no finite mode to resolve
            mode = math.inf
    if not mode <= rate:
        rate, what = mode, f"the elastic joints' fastest mode (joint_stiffness up to {K.max():.4g})"
    return rate, what


def configure(simulator, s: Settings, contact=None) -> None:
    """Set ``simulator``'s integrator, friction and limit switches (and ``contact``, when given) from the settings."""
    simulator.integrator = s.integrator
    simulator.apply_damping = s.apply_damping
    simulator.apply_friction = s.apply_friction
    simulator.friction_velocity = s.friction_velocity
    simulator.enforce_effort_limits = s.enforce_effort_limits
    simulator.enforce_position_limits = s.enforce_position_limits
    if contact is not None:
        simulator.contact = contact
