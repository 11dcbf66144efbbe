"""The dynamics node's task-space command, the rclpy side: the ``desired_pose``, ``desired_twist`` and
``desired_accel`` subscriptions (while ``command_source`` is ``task_space``), the torque of
:func:`robot_dynamics.control.task_controller.task_space_torque` for a measured state, and its ``/diagnostics``
status (the task-space error).  The checks are :mod:`~robot_dynamics.nodes.dynamics.task_space_inputs`."""

from __future__ import annotations

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import AccelStamped, PoseStamped, TwistStamped

from ...control.task_controller import task_space_torque
from ..common.parameters import Rejected
from .task_space_inputs import TaskSpaceInputs


def _xyz(v):
    return (v.x, v.y, v.z)


class TaskSpaceCommand:
    """Owned by the dynamics node (``node``: its ``problem``/``reject``); inactive unless the plan has a task."""

    def __init__(self, node, qos):
        self._node = node
        self._qos = qos
        self._subscriptions = ()
        self.inputs: TaskSpaceInputs | None = None
        self.last = None  # the last TaskResult
        self.refusal = ""  # why the last torque() had no target ('' when it had one)

    def install(self, plan) -> None:
        root = plan.model.link_names[0]
        if plan.task is None:
            self.inputs = None
        elif self.inputs is None or self.inputs.root != root:
            self.inputs = TaskSpaceInputs(plan.model)
        else:  # the goals held stay (they are in the root frame); the state that places new ones comes again
            self.inputs.model, self.inputs.positions = plan.model, None
        # (the law was computed at its rest pose when the plan was made: compiled then, not in the first cycle)
        self._subscribe(plan.task is not None)
        self.last = None

    def _subscribe(self, wanted: bool) -> None:
        """The three desired inputs subscribed only while a task is set: the executor walks every
        subscription at each wait, a cost paid per joint_states message (docs/benchmarks.md)."""
        if wanted == bool(self._subscriptions):
            return
        if wanted:
            subscription = self._node.subscription
            self._subscriptions = (subscription(PoseStamped, "desired_pose", self._on_pose, self._qos),
                                   subscription(TwistStamped, "desired_twist", self._on_twist, self._qos),
                                   subscription(AccelStamped, "desired_accel", self._on_accel, self._qos))
        else:
            for subscription in self._subscriptions:
                self._node.destroy_subscription(subscription)
            self._subscriptions = ()

    def _read(self, topic, read, *args) -> None:
        now = time.monotonic_ns()
        if self.inputs is None:
            return  # command_source is not task_space: nothing reads these topics
        try:
            read(*args, now)
        except Rejected as exc:
            self._node.reject(topic, str(exc), now)

    def _on_pose(self, msg: PoseStamped) -> None:
        o = msg.pose.orientation
        self._read("desired_pose", self.inputs and self.inputs.read_pose, msg.header.frame_id,
                   _xyz(msg.pose.position), (o.x, o.y, o.z, o.w))

    def _on_twist(self, msg: TwistStamped) -> None:
        self._read("desired_twist", self.inputs and self.inputs.read_twist, "desired_twist", msg.header.frame_id,
                   _xyz(msg.twist.linear), _xyz(msg.twist.angular))

    def _on_accel(self, msg: AccelStamped) -> None:
        self._read("desired_accel", self.inputs and self.inputs.read_twist, "desired_accel", msg.header.frame_id,
                   _xyz(msg.accel.linear), _xyz(msg.accel.angular))

    def torque(self, plan, data, q, qd, velocities_fresh: bool, now: int):
        """The task-space torque (model order) from ``data``, the plan's workspace filled for ``(q, qd)``
        with ``BIAS | MASS | WORLD``, or None: hold gravity (the reason is recorded)."""
        node = self._node
        self.inputs.positions = q  # places the goals given in a moving link's frame
        target, notes = self.inputs.target(now, plan.desired_timeout_ns)
        for note in notes[target is None:]:
            node.problem("desired", note, now, DiagnosticStatus.WARN)
        # (the input's state is said here; what effort_command does then, once, by the command path)
        self.refusal = notes[0] if target is None else ""
        if target is None:
            node.problem("desired", notes[0], now, DiagnosticStatus.WARN)
        if target is None or not velocities_fresh:
            return None
        with np.errstate(all="ignore"):  # (a non-finite result is refused by the caller)
            result = task_space_torque(plan.model, plan.task, q, qd, target, data)
        self.last = result
        if result.damped:
            node.problem("singular", f"{plan.task.frame} near a singularity (conditioning {result.conditioning:.3g}): "
                         "task inertia damped, tracking degraded", now, DiagnosticStatus.WARN)
        return result.torque

    def status(self, plan, recent: dict):
        """The ``("task space", level, text, values)`` diagnostics status."""
        task, last = plan.task, self.last
        values = [("mode", task.mode), ("frame", task.frame), ("directions", " ".join(task.axes))]
        level, text = DiagnosticStatus.OK, f"{task.mode} of {task.frame}"
        if last is not None:
            values += [("position error (m)", f"{np.linalg.norm(last.error[3:]):.6f}"),
                       ("rotation error (rad)", f"{np.linalg.norm(last.error[:3]):.6f}"),
                       ("error x y z rx ry rz", " ".join(f"{v:.6f}" for v in np.r_[last.error[3:], last.error[:3]])),
                       ("conditioning", f"{last.conditioning:.3g}")]
        else:
            text += ": no task-space torque yet"
        for kind in ("desired_pose", "desired_twist", "desired_accel", "desired", "singular"):
            if kind in recent:
                kind_level, kind_text, _ = recent[kind]
                level, text = max(level, kind_level), f"{text}; {kind_text}"
                values.append((kind, kind_text))
        return ("task space", level, text, values)
