"""The trajectory publisher's Cartesian mode (no rclpy): a frame's pose, twist and acceleration along a
line or a circle through its start pose, for the dynamics node's ``command_source: task_space``.

The start pose is the frame's pose at the home configuration (``home_positions``).  With the
quintic smooth start ``s(t)`` of the joint sinusoids (:mod:`~robot_dynamics.nodes.trajectory_publisher.plan`)
and ``w = 2 pi f``:

- ``line``: ``p(t) = p0 + a s(t) sin(w t) d``, back and forth along the unit vector ``d`` (``axis``),
  amplitude ``a`` (``size``);
- ``circle``: ``p(t) = c + r (cos th u + sin th v)`` in the plane normal to ``axis`` through the start
  (``c = p0 - r u``: the circle passes through the start pose), radius ``r`` (``size``), angle
  ``th(t) = w S(t)`` with ``S`` the integral of ``s`` (so ``th' = w s``: it starts at rest).

The orientation stays the start's; the twist is ``[0; p']`` and the acceleration ``[0; p'']`` (world
axes, the origin's classical acceleration), the exact derivatives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...rigid_body.kinematics import frame_pose
from ..common.parameters import Parameter, bounded_float, float_list

__all__ = ["CARTESIAN_PARAMETERS", "SHAPES", "CartesianFields", "CartesianTrajectory", "coerce_cartesian_setting",
           "make_cartesian"]

SHAPES = ("", "line", "circle")


@dataclass(frozen=True)
class CartesianFields:
    """The ``cartesian.*`` parameter values (the trajectory publisher's Settings inherit them)."""

    cartesian_shape: str = ""
    cartesian_frame: str = ""
    cartesian_size: float = 0.05
    cartesian_frequency: float = 0.25
    cartesian_axis: tuple = (0.0, 0.0, 1.0)


_D = CartesianFields()
CARTESIAN_PARAMETERS = (
    Parameter("cartesian.shape", _D.cartesian_shape, "Cartesian mode: line | circle, published on desired_pose, "
              "desired_twist and desired_accel instead of desired_state; empty = the joint sinusoids.", "string",
              field="cartesian_shape"),
    Parameter("cartesian.frame", _D.cartesian_frame, "The frame (link) that moves; required in Cartesian mode.",
              "string", field="cartesian_frame"),
    Parameter("cartesian.size", _D.cartesian_size, "Circle radius, or the line's amplitude, m.", "double",
              low=0.0, high=10.0, field="cartesian_size"),
    Parameter("cartesian.frequency", _D.cartesian_frequency, "Turns (circle) or periods (line) per second, Hz.",
              "double", low=0.0, high=100.0, field="cartesian_frequency"),
    Parameter("cartesian.axis", list(_D.cartesian_axis), "Line direction, or the circle plane's normal, in the "
              "root frame (normalized).", "double_array", field="cartesian_axis"),
)
CARTESIAN_TOPICS = (
    ("desired_pose", "geometry_msgs/PoseStamped", "out", "Cartesian mode: the frame's pose, frame_id = root link"),
    ("desired_twist", "geometry_msgs/TwistStamped", "out", "Cartesian mode: its twist, root axes"),
    ("desired_accel", "geometry_msgs/AccelStamped", "out", "Cartesian mode: its acceleration, root axes"),
)


def coerce_cartesian_setting(field: str, value):
    """A ``cartesian_*`` parameter value -> its field value; ValueError (the reason) when invalid."""
    param = field.replace("cartesian_", "cartesian.")
    if field == "cartesian_shape":
        if value not in SHAPES:
            raise ValueError(f"{param} must be line, circle or empty, got {value!r}")
        return value
    if field == "cartesian_frame":
        return str(value)
    if field == "cartesian_axis":
        axis = float_list(param, value, 3)
        if math.hypot(*axis) < 1e-9:
            raise ValueError(f"{param} must not be zero, got {list(axis)}")
        return axis
    return bounded_float(param, value, 0.0, 100.0 if field == "cartesian_frequency" else 10.0)


def _smooth_start(t, T):
    """``(S, s, s', s'')``: the quintic smoothstep ``s`` over ``T`` s, its integral and two derivatives
    (``s = 1`` after ``T``)."""
    if T <= 0 or t >= T:
        return (t - T / 2 if T > 0 else t), 1.0, 0.0, 0.0
    u = t / T
    return (T * u**4 * (2.5 - 3 * u + u * u), u**3 * (10 - 15 * u + 6 * u * u), 30 * u * u * (1 - u) ** 2 / T,
            60 * u * (1 - u) * (1 - 2 * u) / (T * T))


@dataclass(frozen=True, eq=False)
class CartesianTrajectory:
    """The frame's motion, evaluated by :meth:`at`."""

    root: str
    frame: str
    shape: str
    start: np.ndarray   # 4x4 start pose
    size: float
    omega: float
    axis: np.ndarray    # unit
    ramp_time: float
    notes: tuple

    @property
    def names(self):
        return [self.frame]

    def at(self, t: float):
        """``(pose 4x4, twist [0; p'], acceleration [0; p''])`` at ``t`` s after the start."""
        t = max(float(t), 0.0)
        S, s, ds, dds = _smooth_start(t, self.ramp_time)
        p0, w, a = self.start[:3, 3], self.omega, self.size
        if self.shape == "line":
            sin, cos = math.sin(w * t), math.cos(w * t)
            p = p0 + a * s * sin * self.axis
            v = a * (ds * sin + s * w * cos) * self.axis
            acc = a * (dds * sin + 2 * ds * w * cos - s * w * w * sin) * self.axis
        else:
            u, v_ = _plane(self.axis)
            theta, rate, accel = w * S, w * s, w * ds
            radial, tangent = math.cos(theta) * u + math.sin(theta) * v_, -math.sin(theta) * u + math.cos(theta) * v_
            p = p0 - a * u + a * radial
            v = a * rate * tangent
            acc = a * accel * tangent - a * rate * rate * radial
        pose = self.start.copy()
        pose[:3, 3] = p
        return pose, np.concatenate([np.zeros(3), v]), np.concatenate([np.zeros(3), acc])


def _plane(normal):
    """Two unit vectors ``u, v`` with ``u x v = normal``; ``u`` along the root's x (or y) projected in the plane."""
    seed = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = seed - normal * (seed @ normal)
    u /= np.linalg.norm(u)
    return u, np.cross(normal, u)


def make_cartesian(model, s, home: np.ndarray) -> CartesianTrajectory:
    """The Cartesian motion of ``s.cartesian_frame`` from its pose at ``home`` (every model joint)."""
    if not s.cartesian_frame:
        raise ValueError("cartesian.shape needs cartesian.frame (the link that moves)")
    if s.cartesian_frame not in model.frames:
        raise ValueError(f"cartesian.frame {s.cartesian_frame!r} is not a link of robot {model.name!r}")
    axis = np.array(s.cartesian_axis) / np.linalg.norm(s.cartesian_axis)
    start = frame_pose(model, home, s.cartesian_frame)
    note = (f"Cartesian {s.cartesian_shape} of {s.cartesian_frame}, size {s.cartesian_size:g} m at "
            f"{s.cartesian_frequency:g} Hz, from its pose at home {np.round(start[:3, 3], 4).tolist()} m: "
            "the robot must start there",)
    return CartesianTrajectory(model.link_names[0], s.cartesian_frame, s.cartesian_shape, start, s.cartesian_size,
                               2 * math.pi * s.cartesian_frequency, axis, s.ramp_time, note)
