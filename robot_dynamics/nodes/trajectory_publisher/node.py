"""A small trajectory publisher: smooth multi-joint sinusoids around a home pose, as ``desired_state``.

Executable ``trajectory_publisher`` (default node name ``trajectory_publisher``;
``trajectory_publisher --help`` lists its parameters).  It needs the robot model (joint names,
limits) and finds it like the other nodes (``robot_description`` parameter, latched topic, or
another node's parameter).  At ``rate`` Hz of its clock (simulated time under ``use_sim_time``:
it publishes from the first ``/clock`` message on) it publishes on ``desired_state`` a
trajectory_msgs/JointTrajectory with one point: ``positions``, ``velocities`` and
``accelerations`` of every joint of ``joints`` (default: all joints of the model, model order),
``header.stamp`` = the time the point is for, ``time_from_start`` = 0.  The motion and its
quintic smooth start are :mod:`~robot_dynamics.nodes.trajectory_publisher.plan`'s.  Service ``~/restart``
(std_srvs/Trigger) starts again from ``t = 0``.  In Cartesian mode (``cartesian.shape`` line or
circle, :mod:`~robot_dynamics.nodes.trajectory_publisher.cartesian`) it publishes a frame's ``desired_pose``,
``desired_twist`` and ``desired_accel`` instead, for the dynamics node's ``command_source: task_space``.
"""

from __future__ import annotations

from builtin_interfaces.msg import Duration
from geometry_msgs.msg import AccelStamped, PoseStamped, TwistStamped
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import robot_dynamics as rd

from ..common.base import RobotNode
from .cartesian import CartesianTrajectory
from ..common.converters import as_float_array
from .plan import PARAMETERS, Settings, Trajectory, coerce_setting, make_trajectory



class TrajectoryPublisher(RobotNode):
    """See the module docstring."""

    SIM_TIME = "waiting for /clock: publishing starts with its first message (the robot model is loaded now)"

    def __init__(self, node_name: str = "trajectory_publisher", **kwargs):
        super().__init__(node_name, PARAMETERS, Settings, coerce_setting, diagnostics=False, **kwargs)
        self._start_ns = None  # clock time of t = 0 (set at the first tick with a model)
        self._pub = self.publisher(JointTrajectory, "desired_state")
        self._pub_pose = self.publisher(PoseStamped, "desired_pose")
        self._pub_twist = self.publisher(TwistStamped, "desired_twist")
        self._pub_accel = self.publisher(AccelStamped, "desired_accel")
        self.create_service(Trigger, "~/restart", self._on_restart)
        self._timer = self.create_timer(1.0 / self._settings.rate, self._on_tick)
        self.start_description()

    def make_plan(self, base: rd.RobotModel, settings: Settings) -> Trajectory:
        return make_trajectory(base, settings)

    def install(self, trajectory: Trajectory, source: str, old: Settings) -> None:
        if self._plan is None or trajectory.names != self._plan.names:
            self.get_logger().info(f"robot {self._base.name!r} from {source}: trajectory for {trajectory.names}")
        for note in trajectory.notes:
            self.get_logger().warn(note)

    def _apply_settings(self, candidate: Settings) -> None:
        rate = self._settings.rate
        super()._apply_settings(candidate)
        if candidate.rate != rate:
            self.destroy_timer(self._timer)
            self._timer = self.create_timer(1.0 / candidate.rate, self._on_tick)

    def _on_restart(self, request, response):
        self._start_ns = None
        response.success = True
        response.message = "the trajectory starts again from the home pose"
        return response

    def _on_tick(self) -> None:
        trajectory = self._plan
        if trajectory is None:
            return
        now = self.get_clock().now()
        if now.nanoseconds == 0:
            return  # use_sim_time and no /clock yet
        if self._start_ns is None:
            self._start_ns = now.nanoseconds
        if isinstance(trajectory, CartesianTrajectory):
            self._publish_cartesian(trajectory, now)
            return
        q, qd, qdd = trajectory.at((now.nanoseconds - self._start_ns) * 1e-9)
        msg = JointTrajectory()
        msg.header.stamp = now.to_msg()
        msg.joint_names = trajectory.names
        msg.points = [JointTrajectoryPoint(positions=as_float_array(q), velocities=as_float_array(qd),
                                           accelerations=as_float_array(qdd), time_from_start=Duration())]
        self._pub.publish(msg)

    def _publish_cartesian(self, trajectory: CartesianTrajectory, now) -> None:
        """The frame's pose, twist and acceleration at one instant, stamped alike, in the root link's frame."""
        pose, twist, accel = trajectory.at((now.nanoseconds - self._start_ns) * 1e-9)
        stamp = now.to_msg()
        msgs = PoseStamped(), TwistStamped(), AccelStamped()
        for msg in msgs:
            msg.header.stamp, msg.header.frame_id = stamp, trajectory.root
        p, (x, y, z, w) = msgs[0].pose.position, _quaternion(pose[:3, :3])
        p.x, p.y, p.z = (float(v) for v in pose[:3, 3])
        o = msgs[0].pose.orientation
        o.x, o.y, o.z, o.w = x, y, z, w
        for body, value in ((msgs[1].twist, twist), (msgs[2].accel, accel)):
            body.angular.x, body.angular.y, body.angular.z = (float(v) for v in value[:3])
            body.linear.x, body.linear.y, body.linear.z = (float(v) for v in value[3:])
        self._pub_twist.publish(msgs[1])
        self._pub_accel.publish(msgs[2])
        self._pub_pose.publish(msgs[0])


def _quaternion(R):
    """``(x, y, z, w)`` of a rotation matrix (Shepperd's method: the largest of the four squares first)."""
    trace = R[0, 0] + R[1, 1] + R[2, 2]
    squares = [trace, R[0, 0], R[1, 1], R[2, 2]]
    k = max(range(4), key=lambda i: squares[i])
    if k == 0:
        w = 0.5 * (1.0 + trace) ** 0.5
        return (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w), w
    i, j, m = k - 1, k % 3, (k + 1) % 3
    v = [0.0, 0.0, 0.0]
    v[i] = 0.5 * (1.0 + R[i, i] - R[j, j] - R[m, m]) ** 0.5
    v[j] = (R[j, i] + R[i, j]) / (4 * v[i])
    v[m] = (R[m, i] + R[i, m]) / (4 * v[i])
    w = (R[m, j] - R[j, m]) / (4 * v[i])
    return v[0], v[1], v[2], w
