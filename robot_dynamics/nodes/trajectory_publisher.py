"""A small trajectory publisher: smooth multi-joint sinusoids around a home pose, as ``desired_state``.

Executable ``trajectory_publisher`` (default node name ``trajectory_publisher``).  It needs the
robot model (joint names, limits) and finds it like the other nodes (``robot_description``
parameter, latched topic, or another node's parameter).  At ``rate`` Hz of its clock (simulated
time under ``use_sim_time``) it publishes on ``desired_state`` a trajectory_msgs/JointTrajectory
with one point: ``positions``, ``velocities`` and ``accelerations`` of every joint of ``joints``
(default: all joints of the model, model order), ``header.stamp`` = the time the point is for,
``time_from_start`` = 0.  Joint ``k`` follows

    q_k(t) = home_k + A_k s(t) sin(2 pi f_k t + phi_k),      t = time since start (or ~/restart)

with the smooth start ``s(t) = (1 - cos(pi t / T)) / 2`` for ``t < T = ramp_time`` and 1 after,
so the motion starts at the home pose at rest; velocities and accelerations are the exact
derivatives.  An amplitude that would leave a joint's position limits (5 % margin) is reduced,
with a warning.  Service ``~/restart`` (std_srvs/Trigger) starts again from ``t = 0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from builtin_interfaces.msg import Duration
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import robot_dynamics as rd

from .common import (
    DescriptionSource, as_float_array, bounded_float, declare_settings, descriptor,
    float_list, name_list, parameter_fields, require_joints, run_node, watch_settings,
)

OUTPUT_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
LIMIT_MARGIN = 0.05  # fraction of the distance from home to the nearest limit kept free


@dataclass(frozen=True)
class Settings:
    joints: tuple = ()
    rate: float = 500.0
    home_joint_names: tuple = ()
    home_positions: tuple = ()
    amplitude: tuple = (0.2,)
    frequency: tuple = (0.25,)
    phase: tuple = (0.0,)
    ramp_time: float = 1.0


#: ROS parameter name -> Settings field (the same names)
PARAMETER_FIELDS = parameter_fields(Settings)


def coerce_setting(name: str, value):
    """Parameter value -> Settings field value; ValueError (the reason) when invalid."""
    if name in ("joints", "home_joint_names"):
        return name_list(name, value)
    if name == "home_positions":
        return float_list(name, value, strict=False)
    if name in ("amplitude", "frequency", "phase"):
        numbers = float_list(name, value, scalar=True, strict=False)
        if not numbers:
            raise ValueError(f"{name} must be one number or one per joint, got []")
        if name != "phase" and min(numbers) < 0:
            raise ValueError(f"{name} must be >= 0, got {list(numbers)}")
        return numbers
    if name == "rate":
        return bounded_float(name, value, 0.0, 10_000.0, low_open=True)
    if name == "ramp_time":
        return bounded_float(name, value, 0.0, 3600.0)
    raise ValueError(f"unknown parameter {name}")


@dataclass(frozen=True, eq=False)
class Trajectory:
    """The sinusoids of :func:`compile_trajectory`, evaluated by :meth:`at`."""

    names: list
    home: np.ndarray
    amplitude: np.ndarray
    omega: np.ndarray      # 2 pi f
    phase: np.ndarray
    ramp_time: float
    notes: tuple           # warnings to log once

    def at(self, t: float):
        """``(q, qd, qdd)`` at ``t`` s after the start: ``home + A s(t) sin(w t + phi)`` and its derivatives."""
        t = max(float(t), 0.0)
        if self.ramp_time > 0 and t < self.ramp_time:
            # quintic smoothstep: s, s' and s'' are 0 at the start and 1, 0, 0 at the end, so the
            # desired acceleration (and the computed torque) has no jump where the ramp ends
            T, u = self.ramp_time, t / self.ramp_time
            s = u**3 * (10 - 15 * u + 6 * u * u)
            ds = 30 * u * u * (1 - u) ** 2 / T
            dds = 60 * u * (1 - u) * (1 - 2 * u) / (T * T)
        else:
            s, ds, dds = 1.0, 0.0, 0.0
        angle = self.omega * t + self.phase
        sin, cos = np.sin(angle), np.cos(angle)
        a, w = self.amplitude, self.omega
        q = self.home + a * s * sin
        qd = a * (ds * sin + s * w * cos)
        qdd = a * (dds * sin + 2 * ds * w * cos - s * w * w * sin)
        return q, qd, qdd


def _per_joint(name, values, n):
    if len(values) == 1:
        return np.full(n, values[0])
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} values; give one, or one per joint ({n})")
    return np.array(values)


def compile_trajectory(model: rd.RobotModel, s: Settings) -> Trajectory:
    """The trajectory for ``model``; ``ValueError`` naming the problem otherwise."""
    names = list(s.joints or model.joint_names)
    require_joints(model, names, "joints")
    index = [model.joint_names.index(n) for n in names]
    lower, upper = model.position_limits[index, 0], model.position_limits[index, 1]
    home = np.clip(np.zeros(len(names)), lower, upper)
    if s.home_joint_names:
        missing = [n for n in s.home_joint_names if n not in names]
        if missing:
            raise ValueError(f"home_joint_names {missing} are not in the trajectory's joints {names}")
        if len(s.home_positions) != len(s.home_joint_names):
            raise ValueError(f"home_positions has {len(s.home_positions)} values for "
                             f"{len(s.home_joint_names)} home_joint_names")
        home[[names.index(n) for n in s.home_joint_names]] = s.home_positions
    elif s.home_positions:
        if len(s.home_positions) != len(names):
            raise ValueError(f"home_positions has {len(s.home_positions)} values; expected one per joint "
                             f"({len(names)}: {names}) or home_joint_names")
        home[:] = s.home_positions
    n = len(names)
    amplitude = _per_joint("amplitude", s.amplitude, n)
    frequency = _per_joint("frequency", s.frequency, n)
    phase = _per_joint("phase", s.phase, n)
    room = (1 - LIMIT_MARGIN) * np.minimum(home - lower, upper - home)
    notes = []
    for k in np.flatnonzero(amplitude > np.maximum(room, 0.0)):
        reduced = max(room[k], 0.0)
        notes.append(f"amplitude of {names[k]} reduced from {amplitude[k]:g} to {reduced:g} to stay inside its "
                     f"limits [{lower[k]:g}, {upper[k]:g}] around home {home[k]:g}")
        amplitude[k] = reduced
    return Trajectory(names=names, home=home, amplitude=amplitude, omega=2 * math.pi * frequency, phase=phase,
                      ramp_time=s.ramp_time, notes=tuple(notes))


class TrajectoryPublisher(Node):
    """See the module docstring."""

    def __init__(self, node_name: str = "trajectory_publisher", **kwargs):
        super().__init__(node_name, **kwargs)
        self._settings = self._declare_parameters()
        self._model = None
        self._trajectory = None
        self._start_ns = None  # clock time of t = 0 (set at the first tick with a model)
        self._pub = self.create_publisher(JointTrajectory, "desired_state", OUTPUT_QOS)
        self.create_service(Trigger, "~/restart", self._on_restart)
        watch_settings(self, lambda: self._settings, coerce_setting, PARAMETER_FIELDS,
                       self._check_settings, self._apply_settings)
        self._timer = self.create_timer(1.0 / self._settings.rate, self._on_tick)
        self._description = DescriptionSource(self, self._on_urdf)

    def _declare_parameters(self) -> Settings:
        d = Settings()
        specs = {
            "joints": ([], descriptor(
                "Joints in the message (string list); empty = every joint of the model, model order.")),
            "rate": (d.rate, descriptor("Messages per second of the node's clock, Hz.")),
            "home_joint_names": ([], descriptor(
                "Names for home_positions; empty = home_positions follows `joints`.")),
            "home_positions": ([], descriptor(
                "Centre of the motion, rad or m; empty = 0 (clipped into the limits).")),
            "amplitude": (list(d.amplitude), descriptor("Amplitude, rad or m: one number or one per joint.")),
            "frequency": (list(d.frequency), descriptor("Frequency, Hz: one number or one per joint.")),
            "phase": (list(d.phase), descriptor("Phase, rad: one number or one per joint.")),
            "ramp_time": (d.ramp_time, descriptor("Duration of the smooth start from rest at home, s (0: none).")),
        }
        return declare_settings(self, Settings, specs, coerce_setting, PARAMETER_FIELDS)

    def _check_settings(self, candidate: Settings) -> None:
        if self._model is not None:
            compile_trajectory(self._model, candidate)

    def _apply_settings(self, candidate: Settings) -> None:
        old, self._settings = self._settings, candidate
        if candidate.rate != old.rate:
            self.destroy_timer(self._timer)
            self._timer = self.create_timer(1.0 / candidate.rate, self._on_tick)
        if self._model is not None:
            self._use(compile_trajectory(self._model, candidate))

    def _on_urdf(self, xml: str, source: str) -> None:
        try:
            model = rd.load_urdf(xml)
            trajectory = compile_trajectory(model, self._settings)
        except Exception as exc:  # noqa: BLE001 - the node stays up and keeps what it had
            self.get_logger().error(f"robot_description from {source} not usable: {exc}")
            return
        self._model = model
        self.get_logger().info(f"robot {model.name!r} from {source}: trajectory for {trajectory.names}")
        self._use(trajectory)

    def _use(self, trajectory: Trajectory) -> None:
        for note in trajectory.notes:
            self.get_logger().warn(note)
        self._trajectory = trajectory

    def _on_restart(self, request, response):
        self._start_ns = None
        response.success = True
        response.message = "the trajectory starts again from the home pose"
        return response

    def _on_tick(self) -> None:
        trajectory = self._trajectory
        if trajectory is None:
            return
        now = self.get_clock().now()
        if now.nanoseconds == 0:
            return  # use_sim_time and no /clock yet
        if self._start_ns is None:
            self._start_ns = now.nanoseconds
        q, qd, qdd = trajectory.at((now.nanoseconds - self._start_ns) * 1e-9)
        msg = JointTrajectory()
        msg.header.stamp = now.to_msg()
        msg.joint_names = trajectory.names
        msg.points = [JointTrajectoryPoint(positions=as_float_array(q), velocities=as_float_array(qd),
                                           accelerations=as_float_array(qdd), time_from_start=Duration())]
        self._pub.publish(msg)


def main(args=None):
    """Entry point of the ``trajectory_publisher`` executable."""
    return run_node(TrajectoryPublisher, args=args)


if __name__ == "__main__":
    raise SystemExit(main())
