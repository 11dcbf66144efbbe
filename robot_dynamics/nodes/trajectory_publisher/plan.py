"""The trajectory publisher's settings and trajectory (no rclpy).

:data:`PARAMETERS` are the node's parameters, :class:`Settings` their values, :func:`coerce_setting`
converts and checks one value; :func:`make_trajectory` fits the settings to a parsed model and
gives the :class:`Trajectory`, whose :meth:`Trajectory.at` the node samples. Joint ``k`` follows

    q_k(t) = home_k + A_k s(t) sin(2 pi f_k t + phi_k),      t = time since start (or ~/restart)

with the quintic smooth start ``s(u) = 10 u^3 - 15 u^4 + 6 u^5``, ``u = t / T`` for
``t < T = ramp_time`` and ``s = 1`` after: the motion starts at the home pose at rest, and
``s, s', s''`` are continuous where the ramp ends (no jump in the desired acceleration).
Velocities and accelerations are the exact derivatives. An amplitude that would leave a joint's
position limits (5 % margin) is reduced, with a note the node logs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...identification.excitation import SampledTrajectory, read_trajectory_csv
from ...rigid_body.model import RobotModel
from .cartesian import (
    CARTESIAN_PARAMETERS, CARTESIAN_TOPICS, CartesianFields, CartesianTrajectory, coerce_cartesian_setting, make_cartesian,
)
from ..common.parameters import Parameter, bounded_float, float_list, name_list, require_joints

__all__ = ["PARAMETERS", "SERVICES", "TOPICS", "Settings", "Trajectory", "coerce_setting", "make_trajectory"]

LIMIT_MARGIN = 0.05  # fraction of the distance from home to the nearest limit kept free


@dataclass(frozen=True)
class Settings(CartesianFields):
    """The node's parameter values (besides robot_description / robot_description_node); the
    ``cartesian_*`` fields are the Cartesian mode's (:mod:`~robot_dynamics.nodes.trajectory_publisher.cartesian`)."""

    joints: tuple = ()
    rate: float = 500.0
    home_joint_names: tuple = ()
    home_positions: tuple = ()
    amplitude: tuple = (0.2,)
    frequency: tuple = (0.25,)
    phase: tuple = (0.0,)
    ramp_time: float = 1.0
    excitation_file: str = ""
    autostart: bool = True


_D = Settings()
#: The node's parameters, in declaration order (numbers and lists dynamically typed).
PARAMETERS = (
    Parameter("joints", [], "Joints in the message (string list); empty = every joint of the model, model order."),
    Parameter("rate", _D.rate, "Messages per second of the node's clock, Hz."),
    Parameter("home_joint_names", [], "Names for home_positions; empty = home_positions follows `joints`."),
    Parameter("home_positions", [], "Centre of the motion, rad or m; empty = 0 (clipped into the limits)."),
    Parameter("amplitude", list(_D.amplitude), "Amplitude, rad or m: one number or one per joint."),
    Parameter("frequency", list(_D.frequency), "Frequency, Hz: one number or one per joint."),
    Parameter("phase", list(_D.phase), "Phase, rad: one number or one per joint."),
    Parameter("ramp_time", _D.ramp_time, "Duration of the smooth start from rest at home, s (0: none)."),
    Parameter("excitation_file", _D.excitation_file, "CSV written by `robot-dynamics excite` to play instead of "
              "the sinusoids (from its start pose, held at its end); empty = the sinusoids. Set at start only (a "
              "params file or -p): a path any process on the ROS domain could change would make the node open "
              "whatever it names. A regular file of at most 64 MiB, at least two samples, times increasing.",
              "string", read_only=True),
    Parameter("autostart", _D.autostart, "true: the motion starts at the node's first tick with a model; false: the "
              "node publishes nothing until ~/restart (or a joint_trajectory) starts it (robot-dynamics sim starts it "
              "once the dynamics node answers). Set at start only.", "bool", read_only=True),
    *CARTESIAN_PARAMETERS,
)

#: (topic, type, direction, what) for --help
TOPICS = (
    ("robot_description", "std_msgs/String", "in", "latched URDF (when the parameter is empty)"),
    ("joint_trajectory", "trajectory_msgs/JointTrajectory", "in", "a trajectory to play instead of the "
     "configured motion, sampled as joint_trajectory_controller does, from header.stamp (0: at once)"),
    ("desired_state", "trajectory_msgs/JointTrajectory", "out", "one point: positions, velocities, "
     "accelerations; at `rate` Hz of the node's clock"),
    *CARTESIAN_TOPICS,
    ("/diagnostics", "diagnostic_msgs/DiagnosticArray", "out", "model, joint_trajectory played or refused, once a second"),
)
SERVICES = (("~/restart", "std_srvs/Trigger", "start again from t = 0 at the home pose (with autostart false: "
              "start)"),)


def coerce_setting(name: str, value):
    """Parameter value -> Settings field value; ValueError (the reason) when invalid."""
    if name.startswith("cartesian_"):
        return coerce_cartesian_setting(name, value)
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
    if name == "autostart":
        if not isinstance(value, bool):
            raise ValueError(f"autostart must be true or false, got {value!r}")
        return value
    if name == "excitation_file":
        if not isinstance(value, str):
            raise ValueError(f"excitation_file must be a string (a path), got {value!r}")
        return value
    raise ValueError(f"unknown parameter {name}")


@dataclass(frozen=True, eq=False)
class Trajectory:
    """The sinusoids of :func:`make_trajectory`, evaluated by :meth:`at`."""

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


@dataclass(frozen=True, eq=False)
class Excitation:
    """An excitation trajectory read from ``robot-dynamics excite``'s CSV, played from ``t = 0``."""

    names: list
    samples: SampledTrajectory
    notes: tuple

    def at(self, t: float):
        """``(q, qd, qdd)`` at ``t`` s after the start, interpolated; the end pose (at rest) after the end."""
        return self.samples(min(max(float(t), 0.0), self.samples.t[-1]))


def _excitation(model: RobotModel, path: str) -> Excitation:
    try:
        samples = read_trajectory_csv(path)
    except ValueError as error:  # (read_trajectory_csv's message names the file)
        raise ValueError(f"excitation_file: {error}") from None
    names = list(samples.joint_names)
    require_joints(model, names, "excitation_file")
    index = [model.joint_names.index(n) for n in names]
    lower, upper = model.position_limits[index, 0], model.position_limits[index, 1]
    outside = [n for k, n in enumerate(names) if np.any(samples.q[:, k] < lower[k]) or np.any(samples.q[:, k] > upper[k])]
    if outside:
        raise ValueError(f"excitation_file {path!r} leaves the position limits of {outside}: write it again with "
                         "robot-dynamics excite for this URDF")
    start = ", ".join(f"{n} = {q:.4g}" for n, q in zip(names, samples.q[0]))
    return Excitation(names, samples, (f"playing the excitation {path} ({samples.duration:g} s) from its start pose "
                                       f"{start}: the robot must be there, at rest",))


def _home(model: RobotModel, names: list, s: Settings) -> np.ndarray:
    """The home positions of ``names``: 0 clipped into the limits, then ``home_positions``."""
    index = [model.joint_names.index(n) for n in names]
    home = np.clip(np.zeros(len(names)), model.position_limits[index, 0], model.position_limits[index, 1])
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
    return home


def make_trajectory(model: RobotModel, s: Settings) -> Trajectory | Excitation | CartesianTrajectory:
    """The trajectory for ``model``; ``ValueError`` naming the problem otherwise."""
    if s.excitation_file:
        return _excitation(model, s.excitation_file)
    if s.cartesian_shape:  # the start pose: the frame's at home, every joint of the model
        return make_cartesian(model, s, _home(model, list(model.joint_names), s))
    names = list(s.joints or model.joint_names)
    require_joints(model, names, "joints")
    home = _home(model, names, s)
    index = [model.joint_names.index(n) for n in names]
    lower, upper = model.position_limits[index, 0], model.position_limits[index, 1]
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
