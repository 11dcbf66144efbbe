"""Will a planned joint trajectory exceed the effort or velocity limits?

:func:`read_trajectory` reads the waypoints (a CSV file, a ``JointTrajectory`` as ``ros2 topic
echo`` prints it, or a rosbag2 topic), :func:`sample` interpolates between them as ROS 2's
joint_trajectory_controller does, and :func:`check_trajectory` runs the inverse dynamics of every
sample (one batched call, rotor inertia included) against the model's limits.

Interpolation per segment ``[t_k, t_k+1]`` (each joint on its own):

- positions, velocities and accelerations at both ends: the quintic polynomial through them;
- positions and velocities: the cubic (Hermite) polynomial;
- positions alone: linear (constant velocity, zero acceleration inside a segment; the jumps of
  velocity at the waypoints are impulses no motor delivers, which the check cannot see: said).

Bounds on what is read and computed, so that no input takes unbounded memory or time: files are
read by :mod:`robot_dynamics.input_files` (regular files of at most ``MAX_TRAJECTORY_BYTES``, YAML
without aliases), at most :data:`MAX_WAYPOINTS` waypoints over at most :data:`MAX_DURATION` s,
sampled at most :data:`MAX_SAMPLES` times, and computed :data:`CHUNK` samples at a time.
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..rigid_body.dynamics import inverse_dynamics
from ..rigid_body.friction import DEFAULT_FRICTION_VELOCITY, friction_torques
from ..input_files import MAX_TRAJECTORY_BYTES, bag_typestore, check_bag, read_text_file, read_yaml_file, reading_bag

__all__ = ["Trajectory", "TrajectoryError", "Violation", "TrajectoryCheck", "read_trajectory", "sample", "sample_times",
           "interpolate", "check_trajectory"]

JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
DEFAULT_RATE = 1000.0  # Hz: joint_trajectory_controller's usual update rate
MAX_WAYPOINTS = 100_000  # a MoveIt plan has tens to hundreds
MAX_DURATION = 86_400.0  # s: one day
MAX_SAMPLES = 4_000_000  # an hour at the controller's 1 kHz; a few seconds of inverse dynamics each million
CHUNK = 65_536  # samples interpolated and computed at once (memory: a few kB per sample)


class TrajectoryError(ValueError):
    """A trajectory that cannot be read or checked (bad input)."""


def _names(names, shown=8):
    """At most ``shown`` of ``names`` for a one-line message, and how many there are beyond them."""
    names = [str(name)[:60] for name in names]
    return ", ".join(names[:shown]) + (f", ... ({len(names)} in all)" if len(names) > shown else "")


@dataclass
class Trajectory:
    """Waypoints: times ``t`` (N,) strictly increasing, positions ``q`` (N, m) of ``joint_names``;
    ``qd``/``qdd`` (N, m) or None."""

    joint_names: tuple
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray = None
    qdd: np.ndarray = None
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
        for name in ("q", "qd", "qdd"):
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


# ----------------------------------------------------------------------------- reading

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
        if quantity not in ("q", "qd", "qdd") or not joint:
            raise TrajectoryError(f"{path}: column {name!r} is not t, q_<joint>, qd_<joint> or qdd_<joint>")
        columns[quantity, joint] = index
    joints = [joint for quantity, joint in columns if quantity == "q"]
    if not joints:
        raise TrajectoryError(f"{path}: no q_<joint> columns")
    for quantity, joint in columns:
        if joint not in joints:
            raise TrajectoryError(f"{path}: {quantity}_{joint} without q_{joint}")
    parts = {}
    for quantity in ("q", "qd", "qdd"):
        present = [joint for joint in joints if (quantity, joint) in columns]
        if present and len(present) != len(joints):
            raise TrajectoryError(f"{path}: {quantity}_ columns for some joints only (missing "
                                  f"{_names([j for j in joints if j not in present])})")
        parts[quantity] = data[:, [columns[quantity, j] for j in joints]] if present else None
    return Trajectory(joints, data[:, 0], parts["q"], parts["qd"], parts["qdd"], source=str(path))


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
    """A point's ``positions``/``velocities``/``accelerations`` read from YAML: a list of numbers."""
    values = point.get(key)
    if values is None:
        return []
    if not isinstance(values, list):
        raise TrajectoryError(f"{what}.{key} must be a list of numbers, got {str(values)[:40]!r}")
    return [_number(v, f"{what}.{key}") for v in values]


def _from_message(joint_names, points, source, stamps, rows):
    """A :class:`Trajectory` from ``JointTrajectory`` fields: ``stamps(point, index)`` seconds and
    ``rows(point, key, index)`` the values of ``positions``/``velocities``/``accelerations``."""
    if len(points) > MAX_WAYPOINTS:
        raise TrajectoryError(f"{source}: {len(points)} points, more than the {MAX_WAYPOINTS} allowed")
    t, parts = [], {"positions": [], "velocities": [], "accelerations": []}
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
    return Trajectory(joint_names, t, arrays["positions"], arrays["velocities"], arrays["accelerations"], source=source)


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
    """Waypoints from a ``.csv`` file (``t, q_<joint>...`` with optional ``qd_``, ``qdd_`` columns), a
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


# ----------------------------------------------------------------------------- interpolation

def _coefficients(trajectory):
    """Per segment and joint, the polynomial's coefficients in ``s = t - t_k`` (lowest first), (N-1, m, 6)."""
    T = np.diff(trajectory.t)[:, None]
    p0, p1 = trajectory.q[:-1], trajectory.q[1:]
    c = np.zeros(p0.shape + (6,))
    c[..., 0] = p0
    if trajectory.qd is None:
        c[..., 1] = (p1 - p0) / T
        return c
    v0, v1 = trajectory.qd[:-1], trajectory.qd[1:]
    c[..., 1] = v0
    if trajectory.qdd is None:  # cubic Hermite
        c[..., 2] = (3 * (p1 - p0) - (2 * v0 + v1) * T) / T**2
        c[..., 3] = (2 * (p0 - p1) + (v0 + v1) * T) / T**3
        return c
    a0, a1 = trajectory.qdd[:-1], trajectory.qdd[1:]
    c[..., 2] = a0 / 2
    c[..., 3] = (20 * (p1 - p0) - (8 * v1 + 12 * v0) * T - (3 * a0 - a1) * T**2) / (2 * T**3)
    c[..., 4] = (30 * (p0 - p1) + (14 * v1 + 16 * v0) * T + (3 * a0 - 2 * a1) * T**2) / (2 * T**4)
    c[..., 5] = (12 * (p1 - p0) - (6 * v1 + 6 * v0) * T - (a0 - a1) * T**2) / (2 * T**5)
    return c


def sample_times(trajectory, rate=DEFAULT_RATE):
    """Every ``1 / rate`` s from the first waypoint to the last, and every waypoint; at most
    :data:`MAX_SAMPLES` grid times (TrajectoryError before anything is allocated otherwise)."""
    if not (np.isfinite(rate) and rate > 0):
        raise TrajectoryError(f"the sampling rate must be a positive number of Hz, got {rate}")
    start, end = trajectory.t[0], trajectory.t[-1]
    count = np.floor((end - start) * rate) + 1
    if not count <= MAX_SAMPLES:
        raise TrajectoryError(f"{trajectory.source or 'the trajectory'}: {end - start:.6g} s at {rate:g} Hz is "
                              f"{count:.4g} samples, more than the {MAX_SAMPLES} allowed: lower --rate")
    grid = start + np.arange(int(count)) / rate
    return np.union1d(grid[grid <= end], trajectory.t)


def interpolate(trajectory, t, coefficients=None):
    """``(q, qd, qdd)`` at the times ``t`` (within the waypoints), as joint_trajectory_controller
    interpolates (module docstring); ``coefficients``: ``_coefficients(trajectory)`` if computed already."""
    segment = np.clip(np.searchsorted(trajectory.t, t, side="right") - 1, 0, trajectory.t.size - 2)
    s = (t - trajectory.t[segment])[:, None]
    c = (_coefficients(trajectory) if coefficients is None else coefficients)[segment]  # (samples, m, 6)
    degree = {"linear": 1, "cubic": 3, "quintic": 5}[trajectory.interpolation]
    q, qd, qdd = c[..., degree].copy(), degree * c[..., degree], degree * (degree - 1) * c[..., degree]
    for k in range(degree - 1, -1, -1):  # Horner, for the polynomial and its two derivatives
        q *= s
        q += c[..., k]
        if k >= 1:
            qd *= s
            qd += k * c[..., k]
        if k >= 2:
            qdd *= s
            qdd += k * (k - 1) * c[..., k]
    return q, qd, qdd  # (linear: qdd = 0 c_1 = 0)


def sample(trajectory, rate=DEFAULT_RATE):
    """``(t, q, qd, qdd)``: the :func:`sample_times` and the :func:`interpolate` values there."""
    return (t := sample_times(trajectory, rate)), *interpolate(trajectory, t)


# ----------------------------------------------------------------------------- the check

@dataclass
class Violation:
    """The first sample at which a joint exceeds a limit."""

    joint: str
    quantity: str  # "effort" or "velocity"
    time: float
    value: float
    limit: float


@dataclass
class TrajectoryCheck:
    """The verdict: first violations (in time order), each joint's peak |value| / limit (None where no
    limit is given), the samples' times, and notes on what was assumed."""

    joint_names: tuple
    violations: list
    peak_effort_fraction: dict
    peak_velocity_fraction: dict
    peak_effort: dict
    peak_velocity: dict
    interpolation: str
    samples: int
    duration: float
    notes: list

    @property
    def ok(self):
        return not self.violations

    def as_dict(self):
        return {
            "ok": self.ok, "interpolation": self.interpolation, "samples": self.samples, "duration": self.duration,
            "violations": [vars(v) for v in self.violations],
            "joints": {name: {"peak_effort": self.peak_effort[name], "peak_velocity": self.peak_velocity[name],
                              "peak_effort_fraction": self.peak_effort_fraction[name],
                              "peak_velocity_fraction": self.peak_velocity_fraction[name]}
                       for name in self.joint_names},
            "notes": list(self.notes),
        }


def _placement(model, trajectory, notes):
    """``(rest, columns)``: the configuration of the model joints the trajectory does not name (held
    still at 0 clipped to their limits, said) and ``(trajectory column, model index)`` of those it
    does; names that are mimic joints are dropped (said)."""
    index = {name: k for k, name in enumerate(model.joint_names)}
    followers = set(model.couplings)
    unknown = [n for n in trajectory.joint_names if n not in index and n not in followers]
    if unknown:
        raise TrajectoryError(f"{trajectory.source}: joints not in the model: {_names(unknown)} "
                              f"(the model's: {', '.join(model.joint_names)})")
    dropped = [n for n in trajectory.joint_names if n in followers]
    if dropped:
        notes.append(f"mimic joints follow their masters and are not checked from the trajectory: {', '.join(dropped)}")
    rest = np.clip(0.0, model.position_limits[:, 0], model.position_limits[:, 1])
    held = [n for n in model.joint_names if n not in trajectory.joint_names]
    if held:
        notes.append("held still at 0 (or their nearest limit), not in the trajectory: " + ", ".join(
            f"{n} = {rest[index[n]]:g}" for n in held))
    columns = [(column, index[name]) for column, name in enumerate(trajectory.joint_names) if name in index]
    return rest, np.array([c for c, _ in columns], dtype=int), np.array([k for _, k in columns], dtype=int)


def _model_states(model, placement, q, qd, qdd):
    """The sampled joints placed in model order (:func:`_placement`)."""
    rest, columns, indices = placement
    Q, QD, QDD = np.tile(rest, (q.shape[0], 1)), np.zeros((q.shape[0], model.nv)), np.zeros((q.shape[0], model.nv))
    Q[:, indices], QD[:, indices], QDD[:, indices] = q[:, columns], qd[:, columns], qdd[:, columns]
    return Q, QD, QDD


def _torques(model, Q, QD, QDD, friction, friction_velocity):
    """Inverse dynamics of a block of samples, with friction if asked (:func:`check_trajectory`)."""
    tau = inverse_dynamics(model, Q, QD, QDD)
    if friction:
        rows = QD.shape[0]
        tau += friction_torques(np.tile(model.damping, rows), np.tile(model.friction, rows), friction_velocity,
                                QD.ravel()).reshape(QD.shape)
        tau += model.motor_damping * QD
    return tau


def _first_violations(model, t, values, limits, quantity):
    violations = []
    over = np.abs(values) > limits
    for c in np.flatnonzero(over.any(axis=0)):
        k = int(np.argmax(over[:, c]))
        violations.append(Violation(model.joint_names[c], quantity, float(t[k]), float(values[k, c]), float(limits[c])))
    return violations


def _refuse_non_finite(model, trajectory, t, **values):
    """TrajectoryError at the first sample whose value (``torque=...``, ``position=...``) is not finite:
    no verdict is given on it."""
    for quantity, array in values.items():
        if not np.isfinite(array).all():
            k, c = np.argwhere(~np.isfinite(array))[0]
            raise TrajectoryError(f"{trajectory.source or 'the trajectory'}: the {quantity} of {model.joint_names[c]} at "
                                  f"t = {t[k]:.6g} s is {array[k, c]} (the waypoints there are beyond what can be "
                                  "computed): no verdict")


def check_trajectory(model, trajectory, rate=DEFAULT_RATE, friction=False,
                     friction_velocity=DEFAULT_FRICTION_VELOCITY):
    """:class:`TrajectoryCheck` of ``trajectory`` on ``model`` (its payload and rotor inertia included).

    ``tau = M(q) qdd + C(q, qd) qd + g(q) + armature qdd`` (Lynch & Park §9.3; Spong Ex. 6.1) at every
    sample of :func:`sample`, plus with ``friction`` the URDF's ``B qd + F_c tanh(qd / eps)`` and the
    rotors' ``r^2 B_m qd``; compared with each joint's effort and velocity limits (a limit of 0 or
    absent is not given).  The first violation of each joint and limit is reported; a torque that is
    not finite is a TrajectoryError (never a verdict).  Computed :data:`CHUNK` samples at a time.
    """
    notes = list(trajectory.notes)
    if trajectory.interpolation == "linear":
        notes.append("positions only: linear interpolation (as joint_trajectory_controller); the velocity jumps "
                     "at the waypoints need unbounded torque, which this check cannot see")
    t = sample_times(trajectory, rate)
    placement = _placement(model, trajectory, notes)
    with np.errstate(all="ignore"):
        coefficients = _coefficients(trajectory)
    given = lambda limits: np.where((limits > 0) & np.isfinite(limits), limits, np.inf)  # noqa: E731
    effort_limits, velocity_limits = given(model.effort_limits), given(model.velocity_limits)
    first, peak_tau, peak_qd = {}, np.zeros(model.nv), np.zeros(model.nv)
    for begin in range(0, t.size, CHUNK):
        times = t[begin:begin + CHUNK]
        with np.errstate(all="ignore"):  # (overflow is refused below, by name)
            Q, QD, QDD = _model_states(model, placement, *interpolate(trajectory, times, coefficients))
            _refuse_non_finite(model, trajectory, times, position=Q, velocity=QD, acceleration=QDD)
            tau = _torques(model, Q, QD, QDD, friction, friction_velocity)
        _refuse_non_finite(model, trajectory, times, torque=tau)
        for violation in (_first_violations(model, times, tau, effort_limits, "effort")
                          + _first_violations(model, times, QD, velocity_limits, "velocity")):
            first.setdefault((violation.joint, violation.quantity), violation)
        peak_tau, peak_qd = np.maximum(peak_tau, np.abs(tau).max(axis=0)), np.maximum(peak_qd, np.abs(QD).max(axis=0))
    violations = sorted(first.values(), key=lambda v: (v.time, v.joint, v.quantity))
    fraction = lambda peak, limits: [float(p / l) if np.isfinite(l) else None for p, l in zip(peak, limits)]  # noqa: E731
    names = model.joint_names
    return TrajectoryCheck(
        names, violations,
        dict(zip(names, fraction(peak_tau, effort_limits))), dict(zip(names, fraction(peak_qd, velocity_limits))),
        dict(zip(names, peak_tau.tolist())), dict(zip(names, peak_qd.tolist())),
        trajectory.interpolation, int(t.size), float(t[-1] - t[0]), notes)
