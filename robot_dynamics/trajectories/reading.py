"""Reading a planned joint trajectory: a CSV file, a ``JointTrajectory`` as ``ros2 topic echo``
prints it, or a rosbag2 topic (:func:`read_trajectory`).

Files are read by :mod:`robot_dynamics.input_files` (regular files of at most
``MAX_TRAJECTORY_BYTES``, YAML without aliases), at most :data:`MAX_WAYPOINTS` waypoints over at
most :data:`MAX_DURATION` s.
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import math
from pathlib import Path

import numpy as np

from ..input_files import MAX_TRAJECTORY_BYTES, bag_typestore, check_bag, read_text_file, read_yaml_file, reading_bag
from .trajectory import MAX_WAYPOINTS, Trajectory, TrajectoryError, _names

__all__ = ["read_trajectory", "JOINT_TRAJECTORY"]

JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
#: a trajectory CSV's column prefixes: positions, velocities, accelerations, efforts (feed-forward)
QUANTITIES = ("q", "qd", "qdd", "tau")


def _read_csv(path):
    with _refused():
        text = read_text_file(path, MAX_TRAJECTORY_BYTES, "trajectory")
    rows = list(itertools.islice((row for row in csv.reader(text.splitlines()) if row), MAX_WAYPOINTS + 2))
    if len(rows) > MAX_WAYPOINTS + 1:
        raise TrajectoryError(f"{path}: more than {MAX_WAYPOINTS} waypoints")
    if not rows or rows[0][:1] != ["t"]:
        raise TrajectoryError(f"{path}: a trajectory CSV starts with a header row 't, q_<joint>, ...'")
    header = [cell.strip() for cell in rows[0]]
    if any(len(row) != len(header) for row in rows[1:]):
        raise TrajectoryError(f"{path}: every row needs {len(header)} cells, like the header")
    try:  # (numpy converts the text: no Python float per cell)
        data = np.array(rows[1:], dtype=float).reshape(-1, len(header))
    except ValueError as error:
        raise TrajectoryError(f"{path}: not a table of numbers ({error})") from None
    columns = {}
    for index, name in enumerate(header[1:], start=1):
        quantity, _, joint = name.partition("_")
        if quantity not in QUANTITIES or not joint:
            raise TrajectoryError(f"{path}: column {name!r} is not t, q_<joint>, qd_<joint>, qdd_<joint> or tau_<joint>")
        columns[quantity, joint] = index
    joints = [joint for quantity, joint in columns if quantity == "q"]
    if not joints:
        raise TrajectoryError(f"{path}: no q_<joint> columns")
    for quantity, joint in columns:
        if joint not in joints:
            raise TrajectoryError(f"{path}: {quantity}_{joint} without q_{joint}")
    parts = {}
    for quantity in QUANTITIES:
        present = [joint for joint in joints if (quantity, joint) in columns]
        if present and len(present) != len(joints):
            raise TrajectoryError(f"{path}: {quantity}_ columns for some joints only (missing "
                                  f"{_names([j for j in joints if j not in present])})")
        parts[quantity] = data[:, [columns[quantity, j] for j in joints]] if present else None
    return Trajectory(joints, data[:, 0], parts["q"], parts["qd"], parts["qdd"], parts["tau"], source=str(path))


@contextlib.contextmanager
def _refused():
    """A ValueError of :mod:`robot_dynamics.input_files` (its message names the file) as a TrajectoryError."""
    try:
        yield
    except TrajectoryError:
        raise
    except ValueError as error:
        raise TrajectoryError(str(error)) from None


def _number(value, what):
    """``value`` as a finite float if it is a number (not a bool), else TrajectoryError naming ``what``."""
    try:
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    except OverflowError:  # (an integer of 400 digits)
        number = math.nan
    if not math.isfinite(number):
        raise TrajectoryError(f"{what} must be a finite number, got {str(value)[:40]!r}")
    return number


def _duration(value, what):
    """Seconds of a ``builtin_interfaces/Duration`` read from YAML (``{sec: S, nanosec: N}``)."""
    if not isinstance(value, dict) or not set(value) <= {"sec", "nanosec"} or not value:
        raise TrajectoryError(f"{what} must be {{sec: S, nanosec: N}} (as 'ros2 topic echo' prints it), "
                              f"got {str(value)[:40]!r}")
    return _number(value.get("sec", 0), f"{what}.sec") + 1e-9 * _number(value.get("nanosec", 0), f"{what}.nanosec")


def _values(point, key, what):
    """A point's ``positions``/``velocities``/``accelerations``/``effort`` read from YAML: a list of numbers."""
    values = point.get(key)
    if values is None:
        return []
    if not isinstance(values, list):
        raise TrajectoryError(f"{what}.{key} must be a list of numbers, got {str(values)[:40]!r}")
    return [_number(v, f"{what}.{key}") for v in values]


def _from_message(joint_names, points, source, stamps, rows):
    """A :class:`Trajectory` from ``JointTrajectory`` fields: ``stamps(point, index)`` seconds and
    ``rows(point, key, index)`` the values of ``positions``/``velocities``/``accelerations``/``effort``."""
    if len(points) > MAX_WAYPOINTS:
        raise TrajectoryError(f"{source}: {len(points)} points, more than the {MAX_WAYPOINTS} allowed")
    t, parts = [], {"positions": [], "velocities": [], "accelerations": [], "effort": []}
    for index, point in enumerate(points):
        t.append(stamps(point, index))
        for key in parts:
            parts[key].append(rows(point, key, index))
    arrays = {}
    for key, values in parts.items():
        sizes = {len(row) for row in values}
        if sizes == {0}:
            arrays[key] = None
        elif sizes == {len(joint_names)}:
            arrays[key] = np.array(values, dtype=float)
        else:
            raise TrajectoryError(f"{source}: {key} must be empty or have {len(joint_names)} values in every point")
    if arrays["positions"] is None:
        raise TrajectoryError(f"{source}: the points have no positions")
    return Trajectory(joint_names, t, arrays["positions"], arrays["velocities"], arrays["accelerations"],
                      arrays["effort"], source=source)


def _read_yaml(path):
    with _refused():
        documents = read_yaml_file(path, MAX_TRAJECTORY_BYTES, "trajectory")
    if not documents or not isinstance(documents[0], dict) or "points" not in documents[0]:
        raise TrajectoryError(f"{path}: not a JointTrajectory (no 'joint_names' and 'points')")
    message = documents[0]
    names, points = message.get("joint_names") or [], message.get("points") or []
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise TrajectoryError(f"{path}: joint_names must be a list of names, got {str(names)[:60]!r}")
    if not isinstance(points, list) or not all(isinstance(point, dict) for point in points):
        raise TrajectoryError(f"{path}: points must be a list of JointTrajectoryPoint maps, got {str(points)[:60]!r}")

    def stamp(point, index):
        if "time_from_start" not in point:
            raise TrajectoryError(f"{path}: point {index} has no time_from_start")
        return _duration(point["time_from_start"], f"{path}: point {index} time_from_start")

    trajectory = _from_message(names, points, str(path), stamp,
                               lambda point, key, index: _values(point, key, f"{path}: point {index}"))
    if len(documents) > 1:
        trajectory.notes.append(f"{path} holds {len(documents)} messages: the first is checked")
    return trajectory


def _read_bag(path, topic):
    bag = path.parent if path.is_file() else path
    with _refused():
        check_bag(bag)
    with reading_bag(bag, TrajectoryError):
        message, topic, count = _first_bag_message(bag, topic)
    trajectory = _from_message(list(message.joint_names), list(message.points), f"{bag} {topic}",
                               lambda point, index: point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec,
                               lambda point, key, index: list(getattr(point, key)))
    if count > 1:
        trajectory.notes.append(f"{topic} holds {count} messages: the first is checked")
    return trajectory


def _first_bag_message(bag, topic):
    """(the first JointTrajectory on ``topic`` or the bag's only such topic, the topic, its message count)."""
    from rosbags.highlevel import AnyReader


    with AnyReader([bag], default_typestore=bag_typestore()) as reader:
        topics = sorted({c.topic for c in reader.connections if c.msgtype == JOINT_TRAJECTORY})
        wanted = "/" + topic.lstrip("/") if topic is not None else topics[0] if len(topics) == 1 else None
        if wanted is None:
            raise TrajectoryError(f"{bag}: {len(topics)} JointTrajectory topics ({_names(topics) or 'none'}): "
                                  "choose one with --topic")
        chosen = [c for c in reader.connections if c.topic == wanted]
        if not chosen:
            raise TrajectoryError(f"{bag}: no topic {wanted!r}; JointTrajectory topics in the bag: {_names(topics) or 'none'}")
        if chosen[0].msgtype != JOINT_TRAJECTORY:
            raise TrajectoryError(f"{bag}: {wanted} carries {chosen[0].msgtype}, not {JOINT_TRAJECTORY}")
        for connection, _, raw in reader.messages(connections=chosen):
            if len(raw) > MAX_TRAJECTORY_BYTES:
                raise TrajectoryError(f"{bag}: the first message on {connection.topic} has {len(raw)} bytes, more "
                                      f"than the {MAX_TRAJECTORY_BYTES} allowed")
            count = sum(c.msgcount for c in chosen)
            return reader.deserialize(raw, connection.msgtype), connection.topic, count
    raise TrajectoryError(f"{bag}: no message on {chosen[0].topic}")


def read_trajectory(path, topic=None):
    """Waypoints from a ``.csv`` file (``t, q_<joint>...`` with optional ``qd_``, ``qdd_``, ``tau_`` columns), a
    ``.yaml``/``.yml`` JointTrajectory (``ros2 topic echo`` output; the first message), or a rosbag2
    directory or ``.db3``/``.mcap`` file (the first JointTrajectory on ``topic``, or on the bag's only
    such topic)."""
    path = Path(path)
    if not path.exists():
        raise TrajectoryError(f"no such trajectory: {path}")
    suffix = path.suffix.lower()
    if suffix == ".csv":  # (anything but a regular file is refused by name when read)
        return _read_csv(path)
    if suffix in (".yaml", ".yml"):
        return _read_yaml(path)
    if path.is_dir() or suffix in (".db3", ".mcap"):
        return _read_bag(path, topic)
    raise TrajectoryError(f"{path}: give a .csv or .yaml file, or a rosbag2 directory (.db3/.mcap)")
