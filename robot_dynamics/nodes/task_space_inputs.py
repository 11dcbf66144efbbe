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

from ..kinematics import frame_pose
from ..task_control import MODES, TaskSpaceSettings, TaskTarget, default_axes
from ..task_space import AXES
from .parameters import Parameter, Rejected, float_list, one_of

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
    Parameter("task_space.frame", _D.task_frame, "The controlled link or frame (a URDF link name); required "
              "with command_source task_space.", "string", field="task_frame"),
    Parameter("task_space.directions", [], "Controlled directions among x y z rx ry rz (string list); empty = all "
              "six for arms with six joints or more, x y z for fewer; at most one per joint.", field="task_directions"),
    Parameter("task_space.kp", _D.task_kp[0], "computed_torque position gains, 1/s^2: one number or six "
              "(x y z, then rotation).", field="task_kp"),
    Parameter("task_space.kd", _D.task_kd[0], "computed_torque velocity gains, 1/s: one number or six "
              "(x y z, then rotation).", field="task_kd"),
    Parameter("task_space.stiffness", list(_D.task_stiffness), "impedance stiffness K: six numbers, N/m x3 then "
              "N m/rad x3.", "double_array", field="task_stiffness"),
    Parameter("task_space.damping", [], "impedance damping D: six numbers, N s/m x3 then N m s/rad x3; empty = "
              "critical (2 sqrt(K Lambda_ii) per direction).", field="task_damping"),
    Parameter("task_space.posture", [], "Rest pose of the null-space posture PD, one position per model joint "
              "(model order); empty = the middle of each joint's limits (0 where it has none).",
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
    if posture:
        if len(posture) != model.nv:
            raise ValueError(f"task_space.posture has {len(posture)} values; give one per model joint ({model.nv}: "
                             f"{list(model.joint_names)}) or none")
        return np.array(posture)
    lower, upper = model.position_limits[:, 0], model.position_limits[:, 1]
    limited, rest = np.isfinite(lower) & np.isfinite(upper), np.zeros(model.nv)
    rest[limited] = 0.5 * (lower[limited] + upper[limited])
    return rest


def compile_task(model, s) -> TaskSpaceSettings | None:
    """The law's settings for ``command_source: task_space`` (None for the other sources); ValueError
    naming the parameter otherwise."""
    if s.command_source != "task_space":
        return None
    if not s.task_frame:
        raise ValueError("command_source task_space needs task_space.frame (the controlled link)")
    if s.task_frame not in model.frames:
        raise ValueError(f"task_space.frame {s.task_frame!r} is not a link of robot {model.name!r}")
    axes = s.task_directions or default_axes(model.nv)
    if len(axes) > model.nv:
        raise ValueError(f"task_space.directions: {len(axes)} directions ({' '.join(axes)}) for {model.nv} joints; "
                         "choose at most as many directions as joints")
    return TaskSpaceSettings(
        s.task_frame, s.task_mode, axes, kp=s.task_kp, kd=s.task_kd, stiffness=s.task_stiffness,
        damping=s.task_damping or None, rest=_rest_pose(model, s.task_posture),
        posture_kp=s.task_posture_kp, posture_kd=s.task_posture_kd)


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
