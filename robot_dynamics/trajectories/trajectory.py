"""A joint trajectory as a planner or a controller sees it: waypoints, their times and, optionally,
velocities, accelerations and feed-forward efforts (:class:`Trajectory`), and the bounds every
trajectory read or made here obeys."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Trajectory", "TrajectoryError", "MAX_WAYPOINTS", "MAX_DURATION"]

MAX_WAYPOINTS = 100_000  # a MoveIt plan has tens to hundreds
MAX_DURATION = 86_400.0  # s: one day


class TrajectoryError(ValueError):
    """A trajectory that cannot be read or checked (bad input)."""


def _names(names, shown=8):
    """At most ``shown`` of ``names`` for a one-line message, and how many there are beyond them."""
    names = [str(name)[:60] for name in names]
    return ", ".join(names[:shown]) + (f", ... ({len(names)} in all)" if len(names) > shown else "")


@dataclass
class Trajectory:
    """Waypoints: times ``t`` (N,) strictly increasing, positions ``q`` (N, m) of ``joint_names``;
    ``qd``/``qdd`` (N, m) or None; ``effort`` (N, m) or None: the feed-forward torque of each point
    (``JointTrajectoryPoint.effort``, N m or N), carried along and never used to interpolate."""

    joint_names: tuple
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray = None
    qdd: np.ndarray = None
    effort: np.ndarray = None
    source: str = ""
    notes: list = field(default_factory=list)

    def __post_init__(self):
        self.joint_names = tuple(self.joint_names)
        self.t, self.q = np.asarray(self.t, dtype=float), np.asarray(self.q, dtype=float)
        where = f"{self.source}: " if self.source else ""
        n = len(self.joint_names)
        if len(set(self.joint_names)) != n or n == 0:
            raise TrajectoryError(f"{where}joint names must be distinct and not empty, got {_names(self.joint_names)}")
        if self.t.ndim != 1 or self.t.size < 2:
            raise TrajectoryError(f"{where}a trajectory needs at least two waypoints, got {self.t.size}")
        if self.t.size > MAX_WAYPOINTS:
            raise TrajectoryError(f"{where}{self.t.size} waypoints, more than the {MAX_WAYPOINTS} allowed")
        for name in ("q", "qd", "qdd", "effort"):
            value = getattr(self, name)
            if value is None:
                continue
            value = np.asarray(value, dtype=float)
            if value.shape != (self.t.size, n):
                raise TrajectoryError(f"{where}{name} must have one row of {n} values per waypoint, got {value.shape}")
            if not np.all(np.isfinite(value)):
                raise TrajectoryError(f"{where}{name} has a missing or non-finite value")
            setattr(self, name, value)
        if not np.all(np.isfinite(self.t)) or np.any(np.diff(self.t) <= 0):
            raise TrajectoryError(f"{where}waypoint times must be finite and strictly increasing")
        if self.t[-1] - self.t[0] > MAX_DURATION:
            raise TrajectoryError(f"{where}the waypoints span {self.t[-1] - self.t[0]:.6g} s, more than the "
                                  f"{MAX_DURATION:g} s allowed")
        if self.qdd is not None and self.qd is None:
            raise TrajectoryError(f"{where}accelerations without velocities: give both or neither")

    @property
    def interpolation(self):
        return "quintic" if self.qdd is not None else "cubic" if self.qd is not None else "linear"
