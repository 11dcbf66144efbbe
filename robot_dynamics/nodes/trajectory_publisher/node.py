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
(std_srvs/Trigger) starts again from ``t = 0``; with ``autostart: false`` nothing is published until it
(or a ``joint_trajectory``) starts the motion.  In Cartesian mode (``cartesian.shape`` line or
circle, :mod:`~robot_dynamics.nodes.trajectory_publisher.cartesian`) it publishes a frame's ``desired_pose``,
``desired_twist`` and ``desired_accel`` instead, for the dynamics node's ``command_source: task_space``.

A trajectory_msgs/JointTrajectory received on ``joint_trajectory`` (a planner's, or
``trajectory_filter``'s ``trajectory_out``) is played instead, sampled as joint_trajectory_controller
samples it (:mod:`~robot_dynamics.nodes.trajectory_publisher.playback`), from its ``header.stamp`` (0:
at once); its end is held until the next one or ``~/restart``. One that is malformed or does not fit
the robot is refused: the reason in the log and on ``/diagnostics``, and the motion goes on.
"""

from __future__ import annotations

import time

from builtin_interfaces.msg import Duration
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import AccelStamped, PoseStamped, TwistStamped
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import robot_dynamics as rd

from ..common.base import RobotNode
from ..common.converters import as_float_array
from ..common.parameters import Rejected
from .cartesian import CartesianTrajectory
from .plan import PARAMETERS, Settings, Trajectory, coerce_setting, make_trajectory
from .playback import Playback, make_playback



class TrajectoryPublisher(RobotNode):
    """See the module docstring."""

    SIM_TIME = "waiting for /clock: publishing starts with its first message (the robot model is loaded now)"

    def __init__(self, node_name: str = "trajectory_publisher", **kwargs):
        super().__init__(node_name, PARAMETERS, Settings, coerce_setting, **kwargs)
        self._start_ns = None  # clock time of t = 0 (set at the first tick with a model)
        self._awaiting_restart = not self._settings.autostart  # for ~/restart (or a joint_trajectory): publishing nothing
        self._playback: Playback | None = None  # a received joint_trajectory, played from self._start_ns
        self._n_played = 0
        self._pub = self.publisher(JointTrajectory, "desired_state")
        self._pub_pose = self.publisher(PoseStamped, "desired_pose")
        self._pub_twist = self.publisher(TwistStamped, "desired_twist")
        self._pub_accel = self.publisher(AccelStamped, "desired_accel")
        self.create_service(Trigger, "~/restart", self._on_restart)
        self.subscription(JointTrajectory, "joint_trajectory", self._on_joint_trajectory, 10)
        self._timer = self.create_timer(1.0 / self._settings.rate, self._on_tick)
        self.start_description()

    def make_plan(self, base: rd.RobotModel, settings: Settings) -> Trajectory:
        return make_trajectory(base, settings)

    def install(self, trajectory: Trajectory, source: str, old: Settings) -> None:
        if self._plan is None or trajectory.names != self._plan.names:
            self.get_logger().info(f"robot {self._base.name!r} from {source}: trajectory for {trajectory.names}")
        for note in trajectory.notes:
            self.get_logger().warn(note)
        self._model_status = (DiagnosticStatus.OK, f"robot {self._base.name!r} from {source}")
        if self._playback is not None and (self._playback.names != getattr(trajectory, "names", None)
                                           or isinstance(trajectory, CartesianTrajectory)):
            self._playback = None
            self.get_logger().warn("the joints changed: the joint_trajectory played is dropped")

    def _apply_settings(self, candidate: Settings) -> None:
        rate = self._settings.rate
        super()._apply_settings(candidate)
        if candidate.rate != rate:
            self.destroy_timer(self._timer)
            self._timer = self.create_timer(1.0 / candidate.rate, self._on_tick)

    def _on_restart(self, request, response):
        response.message = ("the trajectory starts from the home pose" if self._awaiting_restart
                            else "the trajectory starts again from the home pose")
        self._start_ns = None
        self._playback = None
        self._awaiting_restart = False
        response.success = True
        return response

    def _on_tick(self) -> None:
        trajectory = self._plan
        if trajectory is None or self._awaiting_restart:
            return
        now = self.get_clock().now()
        if now.nanoseconds == 0:
            return  # use_sim_time and no /clock yet
        if self._start_ns is None:
            self._start_ns = now.nanoseconds
        if isinstance(trajectory, CartesianTrajectory):
            self._publish_cartesian(trajectory, now)
            return
        motion = self._playback or trajectory
        q, qd, qdd = motion.at((now.nanoseconds - self._start_ns) * 1e-9)
        msg = JointTrajectory()
        msg.header.stamp = now.to_msg()
        msg.joint_names = motion.names
        msg.points = [JointTrajectoryPoint(positions=as_float_array(q), velocities=as_float_array(qd),
                                           accelerations=as_float_array(qdd), time_from_start=Duration())]
        self._pub.publish(msg)

    def _on_joint_trajectory(self, msg: JointTrajectory) -> None:
        """Play ``msg`` from its stamp (0: now), or refuse it (the reason in the log and /diagnostics)."""
        now_ns = time.monotonic_ns()
        plan = self._plan
        try:
            if plan is None:
                raise Rejected("no robot model yet")
            if isinstance(plan, CartesianTrajectory):
                raise Rejected("the publisher is in Cartesian mode (cartesian.shape): it plays no joint trajectory")
            clock_ns = self.get_clock().now().nanoseconds
            if clock_ns == 0:
                raise Rejected("no clock yet (use_sim_time and no /clock)")
            current = (self._playback or plan).at((clock_ns - (self._start_ns or clock_ns)) * 1e-9)
            playback = make_playback(self._base, list(plan.names), msg.joint_names, msg.points, current)
            stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec  # (ints: a float is 0.2 us off)
            if stamp_ns and stamp_ns + int(playback.duration * 1e9) < clock_ns:  # (as JTC: not a jump to its end)
                raise Rejected(f"it starts at {stamp_ns * 1e-9:.9g} s and ends {playback.duration:.6g} s later, in the "
                               f"past (now {clock_ns * 1e-9:.9g} s)")
        except Rejected as exc:
            self.reject("joint_trajectory", str(exc), now_ns)
            return
        self._playback, self._start_ns, self._awaiting_restart = playback, stamp_ns or clock_ns, False
        self._n_played += 1
        self.get_logger().info(f"playing a joint_trajectory of {len(msg.points)} points over "
                               f"{playback.duration:.3f} s for {list(playback.trajectory.joint_names)}")

    def diagnostics(self, now_ns: int) -> DiagnosticArray:
        """The model's status and the joint_trajectory input's (playing, holding its end, refused)."""
        playback = self._playback
        level, text = DiagnosticStatus.OK, ("autostart false: publishing nothing until ~/restart or a joint_trajectory"
                                            if self._awaiting_restart
                                            else "no joint_trajectory received: publishing the configured motion")
        if playback is not None:
            clock_ns = self.get_clock().now().nanoseconds
            t = (clock_ns - self._start_ns) * 1e-9 if self._start_ns is not None else 0.0
            text = (f"playing a joint_trajectory, {t:.3f} of {playback.duration:.3f} s" if t < playback.duration
                    else "holding the end of the joint_trajectory played")
        refused = self.recent_problems(now_ns).get("joint_trajectory")
        if refused is not None:
            level, text = refused[0], f"{refused[1]}; {text}"
        values = [("trajectories played", self._n_played), ("trajectories refused", self._n_rejected)]
        return self.diagnostic_array([self.model_status(), ("joint_trajectory", level, text, values)])

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
