"""The trajectory filter: a planned JointTrajectory in, one the controller can follow out.

Executable ``trajectory_filter`` (default node name ``trajectory_filter``; ``trajectory_filter --help``
lists its parameters and topics). It finds the robot model as the other nodes do
(``robot_description`` parameter, latched topic, or another node's parameter), applies ``gravity``
and ``payload.*`` (live parameters, the dynamics node's names and checks), and for every
trajectory_msgs/JointTrajectory on ``trajectory_in`` publishes on ``trajectory_out`` what ``mode``
makes of it (:mod:`~robot_dynamics.nodes.trajectory_filter.plan`): ``check`` forwards it unchanged if
it stays within the limits, ``feedforward`` fills ``effort`` with the inverse-dynamics torque,
``retime`` (default) gives it the shortest timing within the velocity, acceleration and effort
limits, ``effort`` filled. The header (stamp: when to start; frame) and the joint names are the
input's. A malformed trajectory, one for an unknown joint, or one beyond the limits is never
forwarded: the reason is logged and on ``/diagnostics``. Remap ``trajectory_out`` to a
joint_trajectory_controller's ``~/joint_trajectory``.
"""

from __future__ import annotations

import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from trajectory_msgs.msg import JointTrajectory

import robot_dynamics as rd

from ..common.base import RobotNode
from ..common.joint_trajectory import read_joint_trajectory
from ..common.parameters import Rejected
from ..common.safety import cut
from ..common.trajectory_cdr import joint_trajectory_bytes
from .plan import PARAMETERS, Plan, Settings, coerce_setting, filter_trajectory, make_plan, warm_up

__all__ = ["TrajectoryFilter"]


class TrajectoryFilter(RobotNode):
    """See the module docstring."""

    def __init__(self, node_name: str = "trajectory_filter", **kwargs):
        super().__init__(node_name, PARAMETERS, Settings, coerce_setting, **kwargs)
        self._pub = self.publisher(JointTrajectory, "trajectory_out")
        self.subscription(JointTrajectory, "trajectory_in", self._on_trajectory, 10)
        self._n_in = self._n_out = 0
        self._last = "no trajectory yet"
        self._last_ms = None
        self.start_description()

    def make_plan(self, base: rd.RobotModel, settings: Settings) -> Plan:
        return make_plan(base, settings)

    def install(self, plan: Plan, source: str, old: Settings) -> None:
        s = plan.settings
        payload = f", payload {s.payload_mass:g} kg on {s.payload_link}" if s.payload_link else ""
        text = (f"robot {plan.base.name!r} from {source}: {plan.model.nv} joints, mode {s.mode}, effort_margin "
                f"{s.effort_margin:g}{payload}")
        if self._plan is None or text != self._model_status[1]:
            self.get_logger().info(cut(text))
        if self._plan is None:
            started = time.monotonic()
            try:
                warm_up(plan)
            except Exception as exc:  # noqa: BLE001 - a warm-up that fails only leaves the first trajectory slower
                self.get_logger().warn(cut(f"warming up the filter failed: {exc!r}"))
            self.get_logger().info(f"filter warmed up in {time.monotonic() - started:.2f} s")
        self._model_status = (DiagnosticStatus.OK, cut(text))

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        now = time.monotonic_ns()
        self._n_in += 1
        plan = self._plan
        try:
            if plan is None:
                raise Rejected("no robot model yet: not forwarded")
            trajectory, effort = read_joint_trajectory(plan.model, msg.joint_names, msg.points)
            filtered = filter_trajectory(plan, trajectory, effort)
            out, count = msg, len(msg.points)
            if filtered.trajectory is not None:  # (serialized at once: 2 000 point objects would take 70 ms)
                result = filtered.trajectory
                out = joint_trajectory_bytes(msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id,
                                             msg.joint_names, result.t,
                                             (result.q, result.qd, result.qdd, filtered.effort))
                count = result.t.size
        except Rejected as exc:
            self.reject("trajectory_in", f"{exc} (not forwarded)", now)
            self._last = f"refused: {exc}"
            return
        except Exception as exc:  # noqa: BLE001 - whatever else happens, nothing is forwarded and the node stays up
            self.reject("trajectory_in", f"the filter failed: {exc!r} (not forwarded)", now)
            self._last = f"failed: {exc!r}"
            return
        self._pub.publish(out)
        self._n_out += 1
        self._last_ms = (time.monotonic_ns() - now) * 1e-6
        self._last = f"{len(msg.points)} points in, {count} out: {filtered.summary}"
        self.get_logger().info(cut(f"trajectory_out: {self._last} ({self._last_ms:.1f} ms)"))

    def diagnostics(self, now_ns: int) -> DiagnosticArray:
        """The model's status and the trajectories': forwarded, refused (the last reason)."""
        level, text = DiagnosticStatus.OK, self._last
        refused = self.recent_problems(now_ns).get("trajectory_in")
        if refused is not None:
            level, text = refused[0], refused[1]
        values = [("mode", self._settings.mode), ("trajectories in", self._n_in),
                  ("trajectories forwarded", self._n_out), ("trajectories refused", self._n_rejected),
                  ("last filter time (ms)", f"{self._last_ms:.2f}" if self._last_ms is not None else "-")]
        return self.diagnostic_array([self.model_status(), ("trajectories", level, text, values)])
