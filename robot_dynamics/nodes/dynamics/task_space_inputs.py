"""The dynamics node's task-space command (``command_source: task_space``), without rclpy.

Parameters ``task_space.*`` (:data:`TASK_PARAMETERS`, their values the ``task_*`` fields of
:class:`TaskSpaceFields`, which the node's ``Settings`` inherit), their checks
(:func:`coerce_task_setting`), the law's settings for a plan (:func:`compile_task`), and the checks
of the desired pose, twist and acceleration messages (:class:`TaskSpaceInputs`), whose freshness
rules are those of ``desired_state``: older than ``desired_timeout`` is stale.

A goal is read in its ``header.frame_id`` (ROS's rule): any link of the model, placed at the state
measured when the goal arrives, and held in the root frame from then on (a goal given in the
controlled link's own frame is a step from where it is, not a target that moves with it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...control.laws import cartesian_impedance_torque, operational_space_torque
from ...rigid_body.data import BIAS, GRAVITY, MASS, WORLD, Data, compute_terms
from ...rigid_body.kinematics import frame_pose
from ...control.task_controller import MODES, TaskSpaceSettings, TaskTarget, default_axes, task_space_torque
from ...rigid_body.task_space import AXES, frame_state_from_data
from ..common.parameters import Parameter, Rejected, float_list, one_of
from ..common.safety import UNLIMITED_POSITION, Plausibility, cut

__all__ = ["TASK_PARAMETERS", "TaskSpaceFields", "TaskSpaceInputs", "coerce_task_setting", "compile_task"]


@dataclass(frozen=True)
class TaskSpaceFields:
    """The ``task_space.*`` parameter values (the dynamics node's Settings inherit them)."""

    task_mode: str = "computed_torque"
    task_frame: str = ""
    task_directions: tuple = ()
    task_kp: tuple = (100.0,)
    task_kd: tuple = (20.0,)
    task_stiffness: tuple = (500.0, 500.0, 500.0, 50.0, 50.0, 50.0)
    task_damping: tuple = ()
    task_posture: tuple = ()
    task_posture_kp: float = 10.0
    task_posture_kd: float = 2.0


_D = TaskSpaceFields()
TASK_PARAMETERS = (
    Parameter("task_space.mode", _D.task_mode, "Task-space law of command_source task_space: computed_torque "
              "(tau = J^T [Lambda (xdd_d + kd e' + kp e) + eta] + N tau_0) | impedance "
              "(tau = J^T [K e + D e'] + C qd + g + N tau_0).", "string", field="task_mode"),
    Parameter("task_space.frame", _D.task_frame, "The controlled link or frame (a URDF link name, not the root "
              "link: no joint moves it); required with command_source task_space.", "string", field="task_frame"),
    Parameter("task_space.directions", [], "Controlled directions among x y z rx ry rz (string list); empty = all "
              "six for arms with six joints or more, x y z for fewer; at most one per joint.", field="task_directions"),
    Parameter("task_space.kp", _D.task_kp[0], "computed_torque position gains, 1/s^2: one number or six "
              "(x y z, then rotation); a unit error and velocity error along a direction must ask for torques "
              "within 1000 times the torque scale (docs/task_space.md).", field="task_kp"),
    Parameter("task_space.kd", _D.task_kd[0], "computed_torque velocity gains, 1/s: one number or six "
              "(x y z, then rotation).", field="task_kd"),
    Parameter("task_space.stiffness", list(_D.task_stiffness), "impedance stiffness K: six numbers, N/m x3 then "
              "N m/rad x3; bounded like task_space.kp.", "double_array", field="task_stiffness"),
    Parameter("task_space.damping", [], "impedance damping D: six numbers, N s/m x3 then N m s/rad x3; empty = "
              "critical (2 sqrt(K Lambda_ii) per direction).", field="task_damping"),
    Parameter("task_space.posture", [], "Rest pose of the null-space posture PD, one position per model joint "
              "(model order), within the joint limits; empty = the middle of each joint's limits (0 where it has none).",
              field="task_posture"),
    Parameter("task_space.posture_kp", _D.task_posture_kp, "Posture stiffness, N m/rad (N/m).", "double",
              low=0.0, high=1.0e6, field="task_posture_kp"),
    Parameter("task_space.posture_kd", _D.task_posture_kd, "Posture damping, N m s/rad (N s/m).", "double",
              low=0.0, high=1.0e6, field="task_posture_kd"),
)

#: (topic, type, direction, what) for --help
TASK_TOPICS = (
    ("desired_pose", "geometry_msgs/PoseStamped", "in", "task_space: the frame's desired pose in header.frame_id "
     "(any link, placed at the state when it arrives)"),
    ("desired_twist", "geometry_msgs/TwistStamped", "in", "task_space: its desired twist at its origin (optional), "
     "in header.frame_id's axes"),
    ("desired_accel", "geometry_msgs/AccelStamped", "in", "task_space: its desired acceleration (optional), in "
     "header.frame_id's axes"),
)


def coerce_task_setting(field: str, value):
    """A ``task_*`` parameter value -> its field value; ValueError (the reason) when invalid."""
    param = next(p.name for p in TASK_PARAMETERS if p.field == field)
    if field in ("task_mode", "task_frame"):
        value = str(value)
        return one_of(param, value, MODES) if field == "task_mode" else value
    if field == "task_directions":
        names = () if value is None else value
        if not isinstance(names, (list, tuple)) or not all(isinstance(a, str) for a in names):
            raise ValueError(f"{param} must be a list of names among {' '.join(AXES)}, got {value!r}")
        if any(a not in AXES for a in names) or len(set(names)) != len(names):
            raise ValueError(f"{param} must be distinct names among {' '.join(AXES)}, got {list(names)}")
        return tuple(names)
    if field in ("task_kp", "task_kd", "task_stiffness", "task_damping", "task_posture"):
        values = float_list(param, value, scalar=field in ("task_kp", "task_kd"), strict=False)
        if field in ("task_kp", "task_kd") and len(values) not in (1, 6):
            raise ValueError(f"{param} must be one number or six (x y z, then rotation), got {list(values)}")
        if field in ("task_stiffness", "task_damping") and len(values) not in ((6,) if field == "task_stiffness" else (0, 6)):
            raise ValueError(f"{param} must be six numbers (x y z, then rotation){', or empty' * (field == 'task_damping')}"
                             f", got {list(values)}")
        if field != "task_posture" and any(v < 0 for v in values):
            raise ValueError(f"{param} must be >= 0, got {list(values)}")
        return values
    v = float(value)
    if not (math.isfinite(v) and v >= 0):
        raise ValueError(f"{param} must be a finite number >= 0, got {value!r}")
    return v


def _rest_pose(model, posture):
    """The posture PD's rest pose: ``task_space.posture`` within the joint limits (within
    ``UNLIMITED_POSITION`` on a joint without), or the middle of each joint's limits (0 without)."""
    lower, upper = model.position_limits[:, 0], model.position_limits[:, 1]
    limited = np.isfinite(lower) & np.isfinite(upper) & (lower < upper)  # (a URDF <limit> of 0, 0: none)
    if posture:
        if len(posture) != model.nv:
            raise ValueError(f"task_space.posture has {len(posture)} values; give one per model joint ({model.nv}: "
                             f"{list(model.joint_names)}) or none")
        rest = np.array(posture)
        low, high = np.where(limited, lower, -UNLIMITED_POSITION), np.where(limited, upper, UNLIMITED_POSITION)
        outside = np.flatnonzero(~((rest >= low) & (rest <= high)))
        if len(outside):
            raise ValueError(cut("task_space.posture must lie within the joint limits (a rest pose beyond a limit "
                                 "presses the joint into its stop): " + ", ".join(
                                     f"{model.joint_names[i]}={rest[i]:.4g} outside [{low[i]:.4g}, {high[i]:.4g}]"
                                     for i in outside), 600))
        return rest
    rest = np.zeros(model.nv)
    rest[limited] = 0.5 * (lower[limited] + upper[limited])
    return rest


def _unit_demands(model, task, data):
    """Per law and controlled direction, the torque it asks at the rest pose (at rest) for a unit error
    (1 m or 1 rad) and a unit velocity error (1 m/s or 1 rad/s) along that direction alone, gravity and
    posture left out: ``J^T Lambda (kp + kd) e_i`` (computed_torque), ``J^T (K + D) e_i`` (impedance).
    Both laws: the gains of the law not in use are checked when set, not when the mode switches."""
    frame = frame_state_from_data(data, task.rest, task.frame)
    J, M, zero, none = frame.jacobian[task.rows], data.M, np.zeros(len(task.rows)), np.zeros(model.nv)
    for i, axis in enumerate(task.axes):
        unit = np.eye(len(task.rows))[i]
        torque, _ = operational_space_torque(J, M, none, zero, zero, unit, unit, task.kp, task.kd, none,
                                             task.threshold)
        yield "task_space.kp and task_space.kd", axis, torque
        torque, _ = cartesian_impedance_torque(J, M, none, unit, unit, task.stiffness, task.damping, none,
                                               task.threshold)
        yield "task_space.stiffness and task_space.damping", axis, torque


def _check_law(model, task, plausibility) -> None:
    """``ValueError`` unless the law is computable and believed at its rest pose: each direction's unit
    demand (:func:`_unit_demands`) and the posture PD's ``(posture_kp + posture_kd)`` within the torque
    bound of ``plausibility`` (the rule :func:`~robot_dynamics.nodes.common.safety.check_gains` applies to the
    joint-space gains), and the torque towards the rest pose's own frame pose finite."""
    every, rest, rates = np.arange(model.nv), np.asarray(task.rest, dtype=float), np.zeros(model.nv)
    try:
        with np.errstate(all="ignore"):
            data = Data(model)
            compute_terms(data, rest, rates, GRAVITY | BIAS | MASS | WORLD)
            for gains, axis, torque in _unit_demands(model, task, data):
                problem = plausibility.torque_problem(every, torque)
                if problem:
                    raise ValueError(f"{gains} too large: a unit error and unit velocity error along {axis} at the "
                                     f"rest pose would ask for {problem}")
            posture = np.full(model.nv, task.posture_kp + task.posture_kd)
            problem = plausibility.torque_problem(every, posture)
            if problem:
                raise ValueError("task_space.posture_kp and task_space.posture_kd too large: a 1 rad error and "
                                 f"1 rad/s velocity error would ask for {problem}")
            held = task_space_torque(model, task, rest, rates, TaskTarget(frame_pose(model, rest, task.frame)), data)
    except Exception as exc:  # noqa: BLE001 - whatever fails here would fail in the control loop
        if type(exc) is ValueError:  # (a reason given above)
            raise
        raise ValueError(f"the task-space law fails at the rest pose ({type(exc).__name__}: {exc})") from None
    if not np.isfinite(held.torque).all():
        raise ValueError("the task-space law gives non-finite torques at the rest pose")


def compile_task(model, s, plausibility=None) -> TaskSpaceSettings | None:
    """The law's settings for ``command_source: task_space`` (None for the other sources), checked
    against the model (``plausibility``: its rule, by default the model's own); ValueError naming the
    parameter otherwise. Under another source a posture of the model's size is checked all the same
    (it is refused when set, not when the source switches)."""
    if s.command_source != "task_space":
        if len(s.task_posture) == model.nv:
            _rest_pose(model, s.task_posture)
        return None
    if not s.task_frame:
        raise ValueError("command_source task_space needs task_space.frame (the controlled link)")
    if s.task_frame not in model.frames:
        raise ValueError(f"task_space.frame {s.task_frame!r} is not a link of robot {model.name!r}")
    if model.frames[s.task_frame].body < 0:
        raise ValueError(f"task_space.frame {s.task_frame!r} is the root link or fixed to it: no joint moves it")
    axes = s.task_directions or default_axes(model.nv)
    if len(axes) > model.nv:
        raise ValueError(f"task_space.directions: {len(axes)} directions ({' '.join(axes)}) for {model.nv} joints; "
                         "choose at most as many directions as joints")
    task = TaskSpaceSettings(
        s.task_frame, s.task_mode, axes, kp=s.task_kp, kd=s.task_kd, stiffness=s.task_stiffness,
        damping=s.task_damping or None, rest=_rest_pose(model, s.task_posture),
        posture_kp=s.task_posture_kp, posture_kd=s.task_posture_kd)
    _check_law(model, task, plausibility or Plausibility(model))
    return task


#: the largest magnitude believed in a desired pose's position (m), twist or acceleration (SI): beyond
#: it a value is a unit slip or garbage, not a target for an arm
PLAUSIBLE = 1.0e3


def _vector(name, values):
    array = np.array(values, dtype=float)
    if not np.all(np.isfinite(array)):
        raise Rejected(f"{name} is not finite: {array.tolist()}")
    if np.abs(array).max() > PLAUSIBLE:
        raise Rejected(f"{name} {array.tolist()} is beyond {PLAUSIBLE:g} (m, m/s, m/s^2, rad/s, rad/s^2): not believed")
    return array


class TaskSpaceInputs:
    """The last valid desired pose, twist and acceleration (receive times in ns), in the root link's frame
    (module docstring); :attr:`positions` is the measured state that places a goal given in a moving link."""

    def __init__(self, model):
        self.model, self.root = model, model.link_names[0]
        self.positions = None  # the latest measured q (model order; None: none yet)
        self.pose = self.twist = self.acceleration = None  # (value, received_ns)

    def _frame(self, topic, frame_id):
        """``T_0F``, the pose of the link ``frame_id`` at :attr:`positions`; Rejected when it cannot be placed."""
        frame = self.model.frames.get(frame_id)
        if frame is None:
            raise Rejected(f"header.frame_id {frame_id!r} is not a link of robot {self.model.name!r}: {topic} is "
                           f"read in that link's frame (the root link is {self.root!r})")
        if frame.body < 0:
            return frame.pose  # fixed to the root: no state needed
        if self.positions is None:
            raise Rejected(f"header.frame_id {frame_id!r} moves with the joints, and no joint state has arrived "
                           f"to place it: {topic} not taken")
        return frame_pose(self.model, self.positions, frame_id)

    def read_pose(self, frame_id, position, orientation, now):
        """``position`` (x, y, z) and ``orientation`` (x, y, z, w), a unit quaternion within 1e-3, of the
        pose in the frame ``frame_id``: ``T_0d = T_0F T_Fd``."""
        frame = self._frame("desired_pose", frame_id)
        p = _vector("position", position)
        x, y, z, w = _vector("orientation", orientation)
        norm = math.sqrt(x * x + y * y + z * z + w * w)
        if abs(norm - 1.0) > 1e-3:
            raise Rejected(f"orientation is not a unit quaternion (norm {norm:.6g})")
        x, y, z, w = x / norm, y / norm, z / norm, w / norm
        T = np.eye(4)
        T[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
        T[:3, 3] = p
        T = frame @ T
        if np.abs(T[:3, 3]).max() > PLAUSIBLE:
            raise Rejected(f"position {T[:3, 3].tolist()} in the root frame is beyond {PLAUSIBLE:g} m: not believed")
        self.pose = (T, now)

    def read_twist(self, topic, frame_id, linear, angular, now):
        """A twist or acceleration ``[angular; linear]`` of the controlled frame (at its origin) in ``frame_id``'s
        axes, turned into the root link's axes: ``[R_0F w; R_0F v]``."""
        R = self._frame(topic, frame_id)[:3, :3]
        value = np.concatenate([R @ _vector("angular", angular), R @ _vector("linear", linear)])
        if topic == "desired_twist":
            self.twist = (value, now)
        else:
            self.acceleration = (value, now)

    def target(self, now, timeout_ns):
        """``(TaskTarget or None, [what is stale or missing])``: no target without a fresh pose; a stale
        twist or acceleration is left out (zero)."""
        if self.pose is None:
            return None, ["no desired_pose yet"]
        if now - self.pose[1] > timeout_ns:
            return None, [f"desired_pose is stale ({(now - self.pose[1]) * 1e-9:.3f} s old)"]
        parts, notes = {}, []
        for name, entry in (("desired_twist", self.twist), ("desired_accel", self.acceleration)):
            if entry is not None and now - entry[1] <= timeout_ns:
                parts[name] = entry[0]
            elif entry is not None:
                notes.append(f"{name} is stale ({(now - entry[1]) * 1e-9:.3f} s old): left out")
        return TaskTarget(self.pose[0], parts.get("desired_twist", np.zeros(6)),
                          parts.get("desired_accel", np.zeros(6))), notes
