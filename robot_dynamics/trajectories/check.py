"""Will a planned joint trajectory exceed the effort or velocity limits?

:func:`read_trajectory` (:mod:`.reading`) reads the waypoints (a CSV file, a ``JointTrajectory`` as
``ros2 topic echo`` prints it, or a rosbag2 topic), :func:`sample` interpolates between them as ROS 2's
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

from dataclasses import dataclass

import numpy as np

from ..rigid_body.dynamics import inverse_dynamics
from ..rigid_body.friction import DEFAULT_FRICTION_VELOCITY, friction_torques
from .reading import read_trajectory
from .trajectory import MAX_DURATION, MAX_WAYPOINTS, Trajectory, TrajectoryError, _names  # noqa: F401 (re-exported)

__all__ = ["Trajectory", "TrajectoryError", "Violation", "TrajectoryCheck", "read_trajectory", "sample", "sample_times",
           "interpolate", "check_trajectory"]

DEFAULT_RATE = 1000.0  # Hz: joint_trajectory_controller's usual update rate
MAX_SAMPLES = 4_000_000  # an hour at the controller's 1 kHz; a few seconds of inverse dynamics each million
CHUNK = 65_536  # samples interpolated and computed at once (memory: a few kB per sample)


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


def _placed(model, placement, values, positions=False):
    """Joint values (len, m) in the model's coordinates (len, nv) (:func:`_placement`): the joints the
    trajectory does not name at rest (``positions``) or 0."""
    rest, columns, indices = placement
    out = np.tile(rest, (len(values), 1)) if positions else np.zeros((len(values), model.nv))
    out[:, indices] = values[:, columns]
    return out


def _model_states(model, placement, q, qd, qdd):
    """The sampled joints' ``(q, qd, qdd)`` placed in model order (:func:`_placed`)."""
    return _placed(model, placement, q, True), _placed(model, placement, qd), _placed(model, placement, qdd)


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
