"""A received trajectory_msgs/JointTrajectory, checked and read into a
:class:`robot_dynamics.trajectories.check.Trajectory` (no rclpy): what ``trajectory_publisher`` plays
and ``trajectory_filter`` filters.

:func:`read_joint_trajectory` takes the message's fields (``joint_names``, ``points``); every problem
raises :class:`~robot_dynamics.nodes.common.parameters.Rejected` naming it, before anything is used:
no joint names, duplicate or unknown names (mimic joints included: they follow their masters), more
than :data:`MAX_POINTS` points, a point whose ``positions`` (or ``velocities``, ``accelerations``,
``effort`` when any point has them) do not have one value per joint, a value that is not finite,
``time_from_start`` not strictly increasing or negative, a span beyond :data:`MAX_DURATION`, and
positions outside the joints' URDF limits (by more than :data:`POSITION_TOLERANCE`).

:func:`point_fields` is the way back: the per-point arrays of a Trajectory, for a message.
"""

from __future__ import annotations

import array

import numpy as np

from ...trajectories.check import Trajectory, TrajectoryError
from .parameters import Rejected, duplicates
from .safety import cut

__all__ = ["MAX_DURATION", "MAX_POINTS", "POSITION_TOLERANCE", "read_joint_trajectory", "seconds"]

#: most points a received trajectory may have (a MoveIt plan has tens to hundreds; one densely
#: written at 1 kHz for 10 s has 10 000)
MAX_POINTS = 10_000
#: s, the longest span of a received trajectory
MAX_DURATION = 3600.0
#: rad or m a position may be beyond its URDF limit (rounding of a planner sitting on the limit)
POSITION_TOLERANCE = 1e-6
FIELDS = ("positions", "velocities", "accelerations", "effort")


def seconds(duration) -> float:
    """A builtin_interfaces Duration (``sec``, ``nanosec``) in seconds."""
    return duration.sec + 1e-9 * duration.nanosec


def _floats(values) -> np.ndarray:
    return np.frombuffer(values) if isinstance(values, array.array) else np.asarray(values, dtype=float)


def _field(points, key: str, names: tuple) -> np.ndarray | None:
    """The ``key`` values of every point, (N, n); None when no point has any; Rejected when some do not fit."""
    n = len(names)
    rows = [_floats(getattr(point, key)) for point in points]
    sizes = {row.size for row in rows}
    if sizes == {0}:
        return None
    if sizes != {n}:
        bad = next(k for k, row in enumerate(rows) if row.size != n)
        raise Rejected(f"point {bad} has {rows[bad].size} {key} for {n} joints ({key} must be empty in every "
                       f"point or have one value per joint in every point)")
    values = np.array(rows)
    if not np.isfinite(values).all():
        k, j = np.argwhere(~np.isfinite(values))[0]
        raise Rejected(cut(f"point {k} has a non-finite {key} value ({values[k, j]}) for {names[j]}"))
    return values


def read_joint_trajectory(model, joint_names, points, *,
                          max_points: int = MAX_POINTS) -> tuple[Trajectory, np.ndarray | None]:
    """``(trajectory, effort or None)`` of a JointTrajectory's fields on ``model``: times are the points'
    ``time_from_start`` (not shifted), the interpolation is the one their fields make (quintic with
    accelerations, cubic with velocities, linear with positions alone, as joint_trajectory_controller);
    Rejected naming the problem (module docstring)."""
    names = tuple(joint_names)
    if not names:
        raise Rejected("no joint_names")
    if not all(isinstance(name, str) and name for name in names):
        raise Rejected("joint_names must be non-empty strings")
    dup = duplicates(names)
    if dup:
        raise Rejected(cut(f"duplicate joint names {dup}"))
    unknown = [name for name in names if name not in model.joint_names]
    if unknown:
        mimic = [name for name in unknown if name in model.couplings]
        hint = f" ({', '.join(mimic)} mimic another joint: give its master)" if mimic else ""
        raise Rejected(cut(f"joints {unknown} are not joints of robot {model.name!r}{hint}; its joints: "
                           f"{list(model.joint_names)}"))
    if len(points) > max_points:
        raise Rejected(f"{len(points)} points, more than the {max_points} allowed")
    if len(points) < 2:
        raise Rejected(f"{len(points)} point(s): at least two are needed (the path's start and end)")
    fields = {key: _field(points, key, names) for key in FIELDS}
    if fields["positions"] is None:
        raise Rejected("the points have no positions")
    t = np.array([seconds(point.time_from_start) for point in points])
    if t[0] < 0 or np.any(np.diff(t) <= 0):
        raise Rejected("time_from_start must be >= 0 and strictly increasing from point to point")
    if t[-1] - t[0] > MAX_DURATION:
        raise Rejected(f"the points span {t[-1] - t[0]:.6g} s, more than the {MAX_DURATION:g} s allowed")
    if fields["accelerations"] is not None and fields["velocities"] is None:
        raise Rejected("accelerations without velocities: give both or neither")
    index = [model.joint_names.index(name) for name in names]
    low, high = model.position_limits[index, 0], model.position_limits[index, 1]
    limited = (low < high) & np.isfinite(low) & np.isfinite(high)
    q = fields["positions"]
    outside = limited & ((q < low - POSITION_TOLERANCE) | (q > high + POSITION_TOLERANCE)).any(axis=0)
    if outside.any():
        j = int(np.flatnonzero(outside)[0])
        k = int(np.flatnonzero((q[:, j] < low[j] - POSITION_TOLERANCE) | (q[:, j] > high[j] + POSITION_TOLERANCE))[0])
        raise Rejected(cut(f"point {k} puts {names[j]} at {q[k, j]:.6g}, outside its limits [{low[j]:g}, {high[j]:g}]"))
    try:
        trajectory = Trajectory(names, t, q, fields["velocities"], fields["accelerations"], source="the trajectory")
    except TrajectoryError as error:  # (checked above; whatever it still finds is refused, by its words)
        raise Rejected(str(error)) from None
    return trajectory, fields["effort"]
