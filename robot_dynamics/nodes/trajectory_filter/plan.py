"""The trajectory filter's settings, plan and filtering (no rclpy).

:data:`PARAMETERS` are the node's parameters, :class:`Settings` their values, :func:`coerce_setting`
converts and checks one value (``gravity`` and ``payload.*`` by the dynamics node's rules, the same
names); :func:`make_plan` applies gravity and the payload to a parsed model; :func:`filter_trajectory`
does what ``mode`` says to a received trajectory
(:func:`~robot_dynamics.nodes.common.joint_trajectory.read_joint_trajectory`):

- ``check``: :func:`robot_dynamics.trajectories.check.check_trajectory` at ``rate`` Hz (JTC's
  sampling); forwarded unchanged when no joint's torque exceeds ``effort_margin`` times its effort
  limit and no velocity its velocity limit (nor any ``effort`` the points carry), refused otherwise
  (the first violation named);
- ``feedforward``: the same times, ``effort`` filled with the inverse-dynamics torque
  (:func:`robot_dynamics.trajectories.retime.feedforward`), refused as in ``check`` if beyond a limit;
- ``retime``: the shortest timing of the waypoints' path within the velocity, ``acceleration_limit``
  and ``effort_margin`` times the effort limits, written every ``1 / rate`` s with ``effort``
  (:func:`robot_dynamics.trajectories.retime.retime`); a path no timing makes feasible is refused
  with the joint, time and torque.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...rigid_body.model import RobotModel
from ...trajectories.check import Trajectory, TrajectoryError, check_trajectory
from ..common.parameters import LOCK, Parameter, Rejected, bounded_float, float_list, one_of
from ..common.safety import Plausibility, check_outputs_finite, check_outputs_plausible, check_payload, cut
from ..dynamics import plan as dynamics_plan

__all__ = ["MODES", "PARAMETERS", "TOPICS", "Filtered", "Plan", "Settings", "coerce_setting", "filter_trajectory",
           "make_plan", "warm_up"]

MODES = ("check", "feedforward", "retime")
#: most samples the filter takes and points it writes, at ``rate`` Hz (100 s at 1 kHz)
MAX_OUTPUT_POINTS = 100_000
FINER_GRID = 4  # times the retiming's default grid points, for a path its default grid is too coarse for


@dataclass(frozen=True)
class Settings:
    """The node's parameter values (besides robot_description / robot_description_node)."""

    lock_torque_parameters: bool = False
    gravity: tuple = (0.0, 0.0, -9.81)
    payload_link: str = ""
    payload_mass: float = 0.0
    payload_com: tuple = (0.0, 0.0, 0.0)
    payload_inertia: tuple = (0.0,) * 6
    mode: str = "retime"
    effort_margin: float = 1.0
    acceleration_limit: tuple = ()
    friction: bool = False
    rate: float = 1000.0


_D = Settings()
_SHARED = ("gravity", "payload.link", "payload.mass", "payload.com", "payload.inertia")
#: The node's parameters, in declaration order (LOCK first; every other one is read-only with it).
PARAMETERS = (LOCK, *(p for p in dynamics_plan.PARAMETERS if p.name in _SHARED), *(
    Parameter("mode", _D.mode, "check: forward a feasible trajectory unchanged | feedforward: fill effort with "
              "the inverse-dynamics torque, times unchanged | retime: the shortest timing of the path within the "
              "limits, effort filled. An infeasible or malformed trajectory is never forwarded.", "string",
              shapes_torque=True),
    Parameter("effort_margin", _D.effort_margin, "Fraction of each joint's URDF effort limit a trajectory may use.",
              "double", low=1e-3, high=1.0, shapes_torque=True),
    Parameter("acceleration_limit", [], "Joint acceleration limit, rad/s^2 or m/s^2: one number, or one per joint "
              "of the model in model order; empty = none (the URDF gives none).", shapes_torque=True),
    Parameter("friction", _D.friction, "Include the URDF friction (damping qd + friction tanh(qd/0.01)) and the "
              "rotors' damping in the torques.", "bool", shapes_torque=True),
    Parameter("rate", _D.rate, "Hz: the check samples the trajectory at this rate, as the controller will; retime "
              "writes a point every 1/rate s (dense enough for JTC's spline to stay on the path).", "double",
              low=1.0, high=10_000.0, shapes_torque=True),
))

#: (topic, type, direction, what) for --help
TOPICS = (
    ("trajectory_in", "trajectory_msgs/JointTrajectory", "in", "the planned trajectory"),
    ("trajectory_out", "trajectory_msgs/JointTrajectory", "out", "the filtered one (remap to a "
     "joint_trajectory_controller's ~/joint_trajectory)"),
    ("robot_description", "std_msgs/String", "in", "latched URDF (when the parameter is empty)"),
    ("/diagnostics", "diagnostic_msgs/DiagnosticArray", "out", "model, trajectories forwarded and refused, once a second"),
)


def coerce_setting(field: str, value):
    """Parameter value -> Settings field value; ValueError (the reason) when invalid."""
    if field in ("gravity", "payload_link", "payload_mass", "payload_com", "payload_inertia"):
        return dynamics_plan.coerce_setting(field, value)
    if field == "mode":
        return one_of(field, value, MODES)
    if field == "effort_margin":
        return bounded_float(field, value, 0.0, 1.0, low_open=True)
    if field == "acceleration_limit":
        limits = float_list(field, value, scalar=True, strict=False)
        if any(a <= 0 for a in limits):
            raise ValueError(f"acceleration_limit must be > 0, got {list(limits)}")
        return limits
    if field == "rate":
        return bounded_float(field, value, 1.0, 10_000.0)
    if field in ("friction", "lock_torque_parameters"):
        if not isinstance(value, bool):
            raise ValueError(f"{field} must be true or false, got {value!r}")
        return value
    raise ValueError(f"unknown parameter {field}")


@dataclass(frozen=True, eq=False)
class Plan:
    """A parsed model with the settings applied."""

    base: RobotModel
    model: RobotModel  # gravity and payload applied
    settings: Settings
    acceleration_limits: np.ndarray | None  # per model joint


def make_plan(base: RobotModel, s: Settings) -> Plan:
    """``base`` + settings -> :class:`Plan`; ``ValueError`` naming the problem otherwise (the dynamics
    node's checks of gravity and payload)."""
    model = base.with_gravity(s.gravity)
    plausibility = Plausibility(base)
    if s.payload_link:
        if s.payload_link not in model.link_names:
            raise ValueError(f"payload.link {s.payload_link!r} is not a link of robot {base.name!r}")
        check_payload(plausibility, s.payload_mass, s.payload_com)
        with np.errstate(over="ignore", invalid="ignore"):  # (an absurd payload is refused just below)
            model = model.with_payload(s.payload_link, s.payload_mass, s.payload_com, s.payload_inertia)
    what = f"gravity {list(s.gravity)}" + (f", payload {s.payload_mass:g} kg" if s.payload_link else "")
    check_outputs_finite(model, what)
    check_outputs_plausible(model, plausibility, what)
    limits = None
    if s.acceleration_limit:
        if len(s.acceleration_limit) not in (1, model.nv):
            raise ValueError(f"acceleration_limit has {len(s.acceleration_limit)} values; give one, or one per joint "
                             f"of robot {base.name!r} ({model.nv}: {list(model.joint_names)})")
        limits = np.broadcast_to(np.array(s.acceleration_limit), (model.nv,)).copy()
    return Plan(base, model, s, limits)


@dataclass(frozen=True, eq=False)
class Filtered:
    """What the filter forwards: ``trajectory`` None means the input unchanged; otherwise its points
    with ``effort`` (N, m); ``summary`` for the log."""

    trajectory: object
    effort: np.ndarray | None
    summary: str


def _verdict(plan: Plan, trajectory) -> str:
    """'' when ``trajectory`` sampled at the plan's rate stays within the limits (effort times the
    margin), else the reason naming the first joint, time and value beyond."""
    s = plan.settings
    try:
        verdict = check_trajectory(plan.model, trajectory, rate=s.rate, friction=s.friction)
    except TrajectoryError as error:
        raise Rejected(str(error)) from None
    over = [(name, fraction) for name, fraction in verdict.peak_effort_fraction.items()
            if fraction is not None and fraction > s.effort_margin]
    velocity = [v for v in verdict.violations if v.quantity == "velocity"]
    if velocity:
        v = velocity[0]
        return f"{v.joint} at t = {v.time:.4g} s: velocity {v.value:.4g} beyond its limit {v.limit:.4g}"
    if over:
        name, fraction = max(over, key=lambda item: item[1])
        first = next((v for v in verdict.violations if v.joint == name and v.quantity == "effort"), None)
        when = f" (first beyond the limit at t = {first.time:.4g} s)" if first else ""
        return (f"{name}: torque up to {fraction:.3g} times its effort limit, beyond effort_margin "
                f"{s.effort_margin:g}{when}")
    return ""


def _retime(plan: Plan, trajectory):
    """``retime`` on the default grid; should the grid be too coarse for the limits to hold between its
    points (the library says so), once more on one :data:`FINER_GRID` times finer."""
    from ...trajectories.retime import DEFAULT_GRIDPOINTS, InfeasiblePath, retime

    s = plan.settings
    options = dict(effort_margin=s.effort_margin, acceleration_limits=plan.acceleration_limits, friction=s.friction,
                   rate=s.rate)
    try:
        return retime(plan.model, trajectory, **options)
    except InfeasiblePath:
        raise
    except TrajectoryError:  # (bad input fails again at once; a coarse grid does not)
        return retime(plan.model, trajectory, gridpoints=FINER_GRID * DEFAULT_GRIDPOINTS, **options)


def _effort_problem(plan: Plan, names, effort) -> str:
    """'' when the given ``effort`` (N, m) keeps within ``effort_margin`` times the effort limits, else the
    first point and joint beyond: a feed-forward forwarded unchanged is held to the limits it would break."""
    limits = plan.settings.effort_margin * np.array([plan.model.effort_limits[plan.model.joint_names.index(n)]
                                                     for n in names])
    limits = np.where((limits > 0) & np.isfinite(limits), limits, np.inf)
    beyond = np.abs(effort) > limits
    if not beyond.any():
        return ""
    k, j = np.argwhere(beyond)[0]
    return (f"point {k} gives {names[j]} an effort of {effort[k, j]:.4g}, beyond effort_margin "
            f"{plan.settings.effort_margin:g} times its limit {limits[j] / plan.settings.effort_margin:g}")


def filter_trajectory(plan: Plan, trajectory, effort=None) -> Filtered:
    """What ``mode`` makes of ``trajectory`` (module docstring) whose points carry ``effort`` (N, m) or None
    (``check`` forwards it, held to the limits; the other modes write their own); Rejected (the reason)
    when it is not forwarded."""
    s = plan.settings
    duration = float(trajectory.t[-1] - trajectory.t[0])
    if duration * s.rate > MAX_OUTPUT_POINTS:  # (the work of every mode grows with the samples)
        raise Rejected(f"{duration:.6g} s at rate {s.rate:g} Hz is more than the {MAX_OUTPUT_POINTS} samples the "
                       f"filter takes")
    if s.mode == "check":
        reason = _verdict(plan, trajectory) or (_effort_problem(plan, trajectory.joint_names, effort)
                                                if effort is not None else "")
        if reason:
            raise Rejected(cut(f"beyond the limits: {reason}"))
        return Filtered(None, None, "within the limits: forwarded unchanged")
    from ...trajectories.retime import InfeasiblePath, feedforward

    try:
        if s.mode == "feedforward":
            reason = _verdict(plan, trajectory)
            if reason:
                raise Rejected(cut(f"beyond the limits: {reason}"))
            out = feedforward(plan.model, trajectory, friction=s.friction)
            summary = "effort filled"
        else:
            result = _retime(plan, trajectory)
            out = result.trajectory
            summary = f"retimed from {result.duration_before:.4g} s to {result.duration_after:.4g} s"
    except InfeasiblePath as error:
        raise Rejected(cut(f"infeasible: {error}")) from None
    except TrajectoryError as error:
        raise Rejected(cut(str(error))) from None
    effort = getattr(out, "effort", None)
    if out.t.size > MAX_OUTPUT_POINTS:
        raise Rejected(f"the result has {out.t.size} points, more than the {MAX_OUTPUT_POINTS} written: lower rate")
    values = [out.t, out.q] + [v for v in (out.qd, out.qdd, effort) if v is not None]
    if not all(np.isfinite(v).all() for v in values) or effort is None:
        raise Rejected("the result is not finite (or has no effort): not forwarded")
    return Filtered(out, effort, summary)


def warm_up(plan: Plan) -> None:
    """Filter a short move of every joint once in each mode: the kernels of the check and of the retiming
    load from numba's cache (or compile) now, not when the first trajectory waits for them (0.4-1 s)."""
    model = plan.model
    low, high = model.position_limits[:, 0], model.position_limits[:, 1]
    start = np.clip(0.0, low, high)
    end = np.clip(start + 0.01, low, high)
    move = Trajectory(model.joint_names, [0.0, 1.0], np.array([start, end]), source="warm-up")
    for mode in MODES:
        try:
            filter_trajectory(replace(plan, settings=replace(plan.settings, mode=mode)), move)
        except Rejected:  # (a robot this move does not suit: the kernels ran all the same)
            pass
