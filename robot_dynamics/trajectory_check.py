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
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .control import friction_torques
from .dynamics import inverse_dynamics

__all__ = [
    "Trajectory", "TrajectoryError", "Violation", "TrajectoryCheck", "read_trajectory", "sample", "check_trajectory",
]

JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
DEFAULT_RATE = 1000.0  # Hz: joint_trajectory_controller's usual update rate
DEFAULT_FRICTION_VELOCITY = 0.01  # eps of tanh(qd / eps), the simulator's and the node's default


class TrajectoryError(ValueError):
    """A trajectory that cannot be read or checked (bad input)."""


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
            raise TrajectoryError(f"{where}joint names must be distinct and not empty, got {list(self.joint_names)}")
        if self.t.ndim != 1 or self.t.size < 2:
            raise TrajectoryError(f"{where}a trajectory needs at least two waypoints, got {self.t.size}")
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
        if self.qdd is not None and self.qd is None:
            raise TrajectoryError(f"{where}accelerations without velocities: give both or neither")

    @property
    def interpolation(self):
        return "quintic" if self.qdd is not None else "cubic" if self.qd is not None else "linear"


# ----------------------------------------------------------------------------- reading

def _read_csv(path):
    with open(path, newline="") as stream:
        rows = [row for row in csv.reader(stream) if row]
    if not rows or rows[0][:1] != ["t"]:
        raise TrajectoryError(f"{path}: a trajectory CSV starts with a header row 't, q_<joint>, ...'")
    header = [cell.strip() for cell in rows[0]]
    try:
        data = np.array([[float(cell) for cell in row] for row in rows[1:]], dtype=float)
    except ValueError as error:
        raise TrajectoryError(f"{path}: not a table of numbers ({error})") from None
    if any(len(row) != len(header) for row in rows[1:]):
        raise TrajectoryError(f"{path}: every row needs {len(header)} cells, like the header")
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
                                  f"{', '.join(j for j in joints if j not in present)})")
        parts[quantity] = data[:, [columns[quantity, j] for j in joints]] if present else None
    return Trajectory(joints, data[:, 0], parts["q"], parts["qd"], parts["qdd"], source=str(path))


def _duration(value):
    return float(value.get("sec", 0)) + 1e-9 * float(value.get("nanosec", 0))


def _from_message(joint_names, points, source):
    """A :class:`Trajectory` from ``JointTrajectory`` fields (points as dicts or message objects)."""
    get = (lambda p, key: p.get(key)) if points and isinstance(points[0], dict) else getattr
    t, parts = [], {"positions": [], "velocities": [], "accelerations": []}
    for point in points:
        stamp = get(point, "time_from_start")
        t.append(_duration(stamp) if isinstance(stamp, dict) else stamp.sec + 1e-9 * stamp.nanosec)
        for key in parts:
            parts[key].append(list(get(point, key) if get(point, key) is not None else []))
    arrays = {}
    for key, rows in parts.items():
        sizes = {len(row) for row in rows}
        if sizes == {0}:
            arrays[key] = None
        elif sizes == {len(joint_names)}:
            arrays[key] = np.array(rows, dtype=float)
        else:
            raise TrajectoryError(f"{source}: {key} must be empty or have {len(joint_names)} values in every point")
    if arrays["positions"] is None:
        raise TrajectoryError(f"{source}: the points have no positions")
    return Trajectory(joint_names, t, arrays["positions"], arrays["velocities"], arrays["accelerations"], source=source)


def _read_yaml(path):
    import yaml

    try:
        documents = [d for d in yaml.safe_load_all(Path(path).read_text()) if d is not None]
    except yaml.YAMLError as error:
        raise TrajectoryError(f"{path}: not YAML ({str(error).splitlines()[0]})") from None
    if not documents or not isinstance(documents[0], dict) or "points" not in documents[0]:
        raise TrajectoryError(f"{path}: not a JointTrajectory (no 'joint_names' and 'points')")
    message = documents[0]
    trajectory = _from_message(message.get("joint_names") or [], message.get("points") or [], str(path))
    if len(documents) > 1:
        trajectory.notes.append(f"{path} holds {len(documents)} messages: the first is checked")
    return trajectory


def _read_bag(path, topic):
    from rosbags.highlevel import AnyReader
    from rosbags.rosbag2 import ReaderError

    from .identification.recording import _typestore

    bag = path.parent if path.is_file() else path
    try:
        with AnyReader([bag], default_typestore=_typestore()) as reader:
            candidates = [c for c in reader.connections if c.msgtype == JOINT_TRAJECTORY]
            if topic is not None:
                wanted = "/" + topic.lstrip("/")
                chosen = [c for c in reader.connections if c.topic == wanted]
                if not chosen:
                    raise TrajectoryError(f"{bag}: no topic {wanted!r}; JointTrajectory topics in the bag: "
                                          f"{', '.join(sorted({c.topic for c in candidates})) or 'none'}")
                if chosen[0].msgtype != JOINT_TRAJECTORY:
                    raise TrajectoryError(f"{bag}: {wanted} carries {chosen[0].msgtype}, not {JOINT_TRAJECTORY}")
            else:
                if len({c.topic for c in candidates}) != 1:
                    raise TrajectoryError(f"{bag}: {len({c.topic for c in candidates})} JointTrajectory topics "
                                          f"({', '.join(sorted({c.topic for c in candidates})) or 'none'}): choose one with --topic")
                chosen = candidates
            messages = [reader.deserialize(raw, c.msgtype) for c, _, raw in reader.messages(connections=chosen)]
    except ReaderError as error:
        raise TrajectoryError(f"{bag}: not a readable rosbag2 bag ({error})") from None
    if not messages:
        raise TrajectoryError(f"{bag}: no message on {chosen[0].topic}")
    first = messages[0]
    trajectory = _from_message(list(first.joint_names), list(first.points), f"{bag} {chosen[0].topic}")
    if len(messages) > 1:
        trajectory.notes.append(f"{chosen[0].topic} holds {len(messages)} messages: the first is checked")
    return trajectory


def read_trajectory(path, topic=None):
    """Waypoints from a ``.csv`` file (``t, q_<joint>...`` with optional ``qd_``, ``qdd_`` columns), a
    ``.yaml``/``.yml`` JointTrajectory (``ros2 topic echo`` output; the first message), or a rosbag2
    directory or ``.db3``/``.mcap`` file (the first JointTrajectory on ``topic``, or on the bag's only
    such topic)."""
    path = Path(path)
    if not path.exists():
        raise TrajectoryError(f"no such trajectory: {path}")
    suffix = path.suffix.lower()
    if path.is_file() and suffix == ".csv":
        return _read_csv(path)
    if path.is_file() and suffix in (".yaml", ".yml"):
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


def sample(trajectory, rate=DEFAULT_RATE):
    """``(t, q, qd, qdd)`` every ``1 / rate`` s from the first waypoint to the last, and at every
    waypoint, interpolated as joint_trajectory_controller does (module docstring)."""
    if not (np.isfinite(rate) and rate > 0):
        raise TrajectoryError(f"the sampling rate must be a positive number of Hz, got {rate}")
    start, end = trajectory.t[0], trajectory.t[-1]
    grid = start + np.arange(int(np.floor((end - start) * rate)) + 1) / rate
    t = np.union1d(grid[grid <= end], trajectory.t)
    segment = np.clip(np.searchsorted(trajectory.t, t, side="right") - 1, 0, trajectory.t.size - 2)
    s = (t - trajectory.t[segment])[:, None]
    c = _coefficients(trajectory)[segment]  # (samples, m, 6)
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
    return t, q, qd, qdd  # (linear: qdd = 0 c_1 = 0)


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


def _model_states(model, trajectory, q, qd, qdd, notes):
    """The sampled joints placed in model order; model joints the trajectory does not name are held
    still at 0 clipped to their limits (said); names that are mimic joints are dropped (said)."""
    index = {name: k for k, name in enumerate(model.joint_names)}
    followers = set(model.couplings)
    unknown = [n for n in trajectory.joint_names if n not in index and n not in followers]
    if unknown:
        raise TrajectoryError(f"{trajectory.source}: joints not in the model: {', '.join(unknown)} "
                              f"(the model's: {', '.join(model.joint_names)})")
    dropped = [n for n in trajectory.joint_names if n in followers]
    if dropped:
        notes.append(f"mimic joints follow their masters and are not checked from the trajectory: {', '.join(dropped)}")
    count = q.shape[0]
    rest = np.clip(0.0, model.position_limits[:, 0], model.position_limits[:, 1])
    Q, QD, QDD = np.tile(rest, (count, 1)), np.zeros((count, model.nv)), np.zeros((count, model.nv))
    held = [n for n in model.joint_names if n not in trajectory.joint_names]
    if held:
        notes.append("held still at 0 (or their nearest limit), not in the trajectory: " + ", ".join(
            f"{n} = {rest[index[n]]:g}" for n in held))
    for column, name in enumerate(trajectory.joint_names):
        if name in index:
            Q[:, index[name]], QD[:, index[name]], QDD[:, index[name]] = q[:, column], qd[:, column], qdd[:, column]
    return Q, QD, QDD


def _first_violations(model, t, values, limits, quantity):
    violations = []
    over = np.abs(values) > limits
    for c in np.flatnonzero(over.any(axis=0)):
        k = int(np.argmax(over[:, c]))
        violations.append(Violation(model.joint_names[c], quantity, float(t[k]), float(values[k, c]), float(limits[c])))
    return violations


def check_trajectory(model, trajectory, rate=DEFAULT_RATE, friction=False,
                     friction_velocity=DEFAULT_FRICTION_VELOCITY):
    """:class:`TrajectoryCheck` of ``trajectory`` on ``model`` (its payload and rotor inertia included).

    ``tau = M(q) qdd + C(q, qd) qd + g(q) + armature qdd`` (Lynch & Park §9.3; Spong Ex. 6.1) at every
    sample of :func:`sample`, plus with ``friction`` the URDF's ``B qd + F_c tanh(qd / eps)`` and the
    rotors' ``r^2 B_m qd``; compared with each joint's effort and velocity limits (a limit of 0 or
    absent is not given).  The first violation of each joint and limit is reported.
    """
    notes = list(trajectory.notes)
    if trajectory.interpolation == "linear":
        notes.append("positions only: linear interpolation (as joint_trajectory_controller); the velocity jumps "
                     "at the waypoints need unbounded torque, which this check cannot see")
    t, q, qd, qdd = sample(trajectory, rate)
    Q, QD, QDD = _model_states(model, trajectory, q, qd, qdd, notes)
    tau = inverse_dynamics(model, Q, QD, QDD)
    if friction:
        tau = tau + np.array([friction_torques(model.damping, model.friction, friction_velocity, rates) for rates in QD])
        tau = tau + model.motor_damping * QD
    given = lambda limits: np.where((limits > 0) & np.isfinite(limits), limits, np.inf)  # noqa: E731
    effort_limits, velocity_limits = given(model.effort_limits), given(model.velocity_limits)
    violations = _first_violations(model, t, tau, effort_limits, "effort") + \
        _first_violations(model, t, QD, velocity_limits, "velocity")
    violations.sort(key=lambda v: (v.time, v.joint, v.quantity))
    peak_tau, peak_qd = np.abs(tau).max(axis=0), np.abs(QD).max(axis=0)
    fraction = lambda peak, limits: [float(p / l) if np.isfinite(l) else None for p, l in zip(peak, limits)]  # noqa: E731
    names = model.joint_names
    return TrajectoryCheck(
        names, violations,
        dict(zip(names, fraction(peak_tau, effort_limits))), dict(zip(names, fraction(peak_qd, velocity_limits))),
        dict(zip(names, peak_tau.tolist())), dict(zip(names, peak_qd.tolist())),
        trajectory.interpolation, int(t.size), float(t[-1] - t[0]), notes)
