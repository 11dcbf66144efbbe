"""A JointTrajectory received on ``joint_trajectory``, played as ``desired_state`` (no rclpy).

Sampled as ros2_controllers' joint_trajectory_controller (JTC) samples its trajectory: between two
points the polynomial their fields make (quintic with accelerations, cubic with velocities, linear
with positions alone: :func:`robot_dynamics.trajectories.check.interpolate`, the check's own
sampling). As JTC does, a first point with ``time_from_start > 0`` is reached from where the
reference is when the trajectory arrives (the publisher's current desired state, a point at
``t = 0``), and after the last point its positions are held at rest. The publisher's joints that the
trajectory does not name are held where they were when it arrived.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...trajectories.check import Trajectory, interpolate
from ..common.joint_trajectory import read_joint_trajectory
from ..common.parameters import Rejected

__all__ = ["Playback", "make_playback"]


@dataclass(frozen=True, eq=False)
class Playback:
    """A received trajectory over the publisher's joints ``names``; :meth:`at` as the motions of
    :mod:`~robot_dynamics.nodes.trajectory_publisher.plan` (``t`` s after it starts)."""

    names: list
    trajectory: Trajectory
    columns: np.ndarray       # index in ``names`` of each trajectory joint
    held: np.ndarray          # positions of ``names`` when it arrived
    notes: tuple = ()

    @property
    def duration(self) -> float:
        return float(self.trajectory.t[-1])

    def at(self, t: float):
        """``(q, qd, qdd)`` of ``names`` at ``t`` s after the start (the end held at rest after it)."""
        q, qd, qdd = self.held.copy(), np.zeros(len(self.names)), np.zeros(len(self.names))
        trajectory = self.trajectory
        t = min(max(float(t), float(trajectory.t[0])), self.duration)
        if t >= self.duration:
            q[self.columns] = trajectory.q[-1]
            return q, qd, qdd
        k = min(int(np.searchsorted(trajectory.t, t, side="right")) - 1, trajectory.t.size - 2)
        segment = Trajectory(trajectory.joint_names, trajectory.t[k:k + 2], trajectory.q[k:k + 2],
                             *(None if v is None else v[k:k + 2] for v in (trajectory.qd, trajectory.qdd)))
        sample = interpolate(segment, np.array([t]))  # (one segment's polynomial: the same for any length)
        q[self.columns], qd[self.columns], qdd[self.columns] = (value[0] for value in sample)
        return q, qd, qdd


def make_playback(model, names, joint_names, points, current) -> Playback:
    """The :class:`Playback` of a received trajectory's fields over the publisher's joints ``names``,
    ``current = (q, qd, qdd)`` of ``names`` now; Rejected (the reason) for a trajectory the publisher
    does not play (:func:`~robot_dynamics.nodes.common.joint_trajectory.read_joint_trajectory`'s checks,
    joints the publisher does not publish)."""
    trajectory, _ = read_joint_trajectory(model, joint_names, points)
    others = [name for name in trajectory.joint_names if name not in names]
    if others:
        raise Rejected(f"joints {others} are not among the joints this publisher publishes ({list(names)}): "
                       "set its `joints` parameter")
    columns = np.array([names.index(name) for name in trajectory.joint_names], dtype=np.intp)
    q_now, qd_now, qdd_now = (np.asarray(value, dtype=float)[columns] for value in current)
    if trajectory.t[0] > 0:  # from the current reference to the first point, as JTC
        fields = [(trajectory.q, q_now), (trajectory.qd, qd_now), (trajectory.qdd, qdd_now)]
        q, qd, qdd = (None if values is None else np.vstack([start, values]) for values, start in fields)
        trajectory = Trajectory(trajectory.joint_names, np.concatenate([[0.0], trajectory.t]), q, qd, qdd,
                                source=trajectory.source)
    middles = (trajectory.t[:-1] + trajectory.t[1:]) / 2
    with np.errstate(all="ignore"):
        if not all(np.isfinite(v).all() for v in interpolate(trajectory, middles)):
            raise Rejected("its interpolation is not finite (points too close in time for their values)")
    return Playback(list(names), trajectory, columns, np.asarray(current[0], dtype=float).copy())
