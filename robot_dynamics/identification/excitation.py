"""Excitation trajectories: a finite Fourier series per joint (Swevers, Ganseman, Bilgin, De Schutter, Van Brussel).

Joint ``j`` follows, with the fundamental ``w = 2 pi / T`` and ``L`` harmonics::

    q_j(t)   = q0_j + sum_l  a_jl / (w l) sin(w l t) - b_jl / (w l) cos(w l t)
    qd_j(t)  =        sum_l  a_jl cos(w l t) + b_jl sin(w l t)
    qdd_j(t) =        sum_l  w l (b_jl cos(w l t) - a_jl sin(w l t))

periodic in ``T``, so a recording of whole periods can be averaged and filtered without
end effects.  It starts and ends at rest: ``qd(0) = sum_l a_jl = 0`` and ``qdd(0) = w sum_l l
b_jl = 0``, imposed by solving for ``a_j1`` and ``b_j1``.  The free coefficients are chosen to
minimise the condition number of the stacked base regressor (see :mod:`.parameters`) over one
period (L-BFGS-B on its logarithm, the gradient by the chain rule through the SVD: see
:func:`_design_problem`); each joint's amplitude is scaled to the largest that keeps it inside
its position, velocity and acceleration limits (times ``margin``), with ``q0`` centring its range.

A joint whose range binds first (a gripper finger: centimetres, at a speed limit that crosses
them in a fraction of a second) would use a small part of its speed: its velocity would stay
within a few ``eps`` of the smoothed Coulomb friction ``f tanh(qd / eps)``, where the friction
is steepest and the velocity sensor's noise passes into the friction's regressor column.  Such a
joint plays its series ``k`` times faster (harmonics ``k l``, an integer ``k`` so that the whole
stays periodic in ``T``): the same positions, ``k`` times the velocity and ``k^2`` the
acceleration, with ``k`` the largest the limits allow, its fastest harmonic at most
``FASTEST_HARMONIC``.
"""

import csv
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

import robot_dynamics as rd

from ..input_files import MAX_EXCITATION_BYTES, read_text_file
from .parameters import PARAMETERS_PER_BODY, base_columns, condition_number

DEFAULT_HARMONICS = 5
DEFAULT_PERIOD = 10.0            # s: the fundamental 0.1 Hz, harmonics up to 0.5 Hz
DEFAULT_MARGIN = 0.9             # fraction of each limit the trajectory may use
DEFAULT_VELOCITY_LIMIT = 1.0     # rad/s or m/s where the URDF gives none
DEFAULT_ACCELERATION_LIMIT = 3.0  # rad/s^2 or m/s^2 (a URDF has no acceleration limits)
UNLIMITED_HALF_RANGE = np.pi     # rad: the range of a continuous joint (m for an unlimited prismatic one)
SAMPLES_PER_PERIOD = 60          # states at which the condition number is evaluated
RANDOM_STARTS = 8                # the best of these starts the optimisation
LIMIT_SAMPLES = 4000             # states per period at which the limits are checked
DESIGN_ITERATIONS = 10
STEP = 1e-6                      # forward differences of the regressor in a state and of the states in a coefficient
FASTEST_HARMONIC = 1.0           # Hz: a range-bound joint's speed-up stops there (docs/identification.md:
                                 # faster, a light joint's loop tracks worse and its friction holds it longer)


class ExcitationError(ValueError):
    """Limits or options that admit no excitation trajectory."""


@dataclass(frozen=True)
class FourierExcitation:
    """``q(t)`` of the module docstring: ``a``, ``b`` of shape (n, L), ``q0`` (n,), ``period`` s."""

    joint_names: tuple
    period: float
    q0: np.ndarray
    a: np.ndarray
    b: np.ndarray

    def __call__(self, t):
        """(q, qd, qdd), each of shape ``t.shape + (n,)``."""
        wl = 2 * np.pi / self.period * np.arange(1, self.a.shape[1] + 1)
        phase = np.asarray(t, dtype=float)[..., None] * wl
        s, c = np.sin(phase), np.cos(phase)  # t.shape + (L,): the harmonics, shared by the joints
        q = self.q0 + s @ (self.a / wl).T - c @ (self.b / wl).T
        qd = c @ self.a.T + s @ self.b.T
        qdd = c @ (wl * self.b).T - s @ (wl * self.a).T
        return q, qd, qdd


def _at_rest(free_a, free_b):
    """Full (n, L) coefficients from the free ones (n, L-1): ``sum_l a_l = 0``, ``sum_l l b_l = 0``."""
    harmonics = np.arange(2, free_a.shape[1] + 2)
    a = np.column_stack([-free_a.sum(axis=1), free_a])
    b = np.column_stack([-(free_b * harmonics).sum(axis=1), free_b])
    return a, b


def joint_limits(model, velocity=None, acceleration=None):
    """(lower, upper, velocity, acceleration) limits per coordinate; ``velocity``/``acceleration``
    (``{joint: value}``) override the URDF's and the defaults."""
    lower, upper = np.array(model.position_limits, dtype=float).T
    unlimited = ~(np.isfinite(lower) & np.isfinite(upper))
    lower[unlimited], upper[unlimited] = -UNLIMITED_HALF_RANGE, UNLIMITED_HALF_RANGE
    speed = np.where(np.isfinite(model.velocity_limits), model.velocity_limits, DEFAULT_VELOCITY_LIMIT)
    accel = np.full(model.nv, DEFAULT_ACCELERATION_LIMIT)
    for values, target in ((velocity or {}, speed), (acceleration or {}, accel)):
        for name, value in values.items():
            if name not in model.joint_names:
                raise ExcitationError(f"unknown joint {name!r} (joints: {', '.join(model.joint_names)})")
            target[model.joint_names.index(name)] = value
    if np.any(upper - lower <= 0) or np.any(speed <= 0) or np.any(accel <= 0) or not np.all(np.isfinite(speed * accel)):
        raise ExcitationError("every joint needs a range and positive, finite velocity and acceleration limits")
    return lower, upper, speed, accel


def _within_limits(shape, period, limits, margin):
    """The excitation of unit-amplitude coefficients ``shape`` = (a, b), scaled per joint into the
    limits, each range-bound joint sped up (module docstring)."""
    a, b = shape
    lower, upper, speed, accel = limits
    unit = FourierExcitation((), period, np.zeros(len(lower)), a, b)
    q, qd, qdd = unit(np.linspace(0, period, LIMIT_SAMPLES, endpoint=False))
    span = q.max(axis=0) - q.min(axis=0)
    peak_speed, peak_accel = np.maximum(np.abs(qd).max(axis=0), 1e-12), np.maximum(np.abs(qdd).max(axis=0), 1e-12)
    scale = margin * np.min([(upper - lower) / np.maximum(span, 1e-12), speed / peak_speed, accel / peak_accel], axis=0)
    q0 = (lower + upper) / 2 - scale * (q.max(axis=0) + q.min(axis=0)) / 2
    # k times faster: k times the velocity and k^2 times the acceleration of the scaled series
    harmonics = a.shape[1]
    room = np.minimum(margin * speed / (scale * peak_speed), np.sqrt(margin * accel / (scale * peak_accel)))
    speedup = np.clip(np.floor(room * (1 + 1e-9)), 1, max(1, int(FASTEST_HARMONIC * period / harmonics))).astype(int)
    # harmonic l of joint j becomes harmonic k_j l, its coefficient k_j times larger: the same q
    fast_a, fast_b = np.zeros((len(speedup), speedup.max() * harmonics)), np.zeros((len(speedup), speedup.max() * harmonics))
    for j, k in enumerate(speedup):
        fast_a[j, k - 1:k * harmonics:k] = k * scale[j] * a[j]
        fast_b[j, k - 1:k * harmonics:k] = k * scale[j] * b[j]
    return q0, fast_a, fast_b


def estimated_armature(model, every_joint=False):
    """The coordinates whose armature (rotor inertia) identification estimates: those the model
    gives one (a URDF ``<transmission>``), or every coordinate with ``every_joint``."""
    return np.arange(model.nv) if every_joint else np.flatnonzero(model.armature > 0)


def identified_columns(model, rotors=()):
    """The regressor's columns that identification estimates: the bodies' ten parameters each, then
    the armature (column ``qdd``) of the coordinates ``rotors`` (:func:`estimated_armature`)."""
    bodies = PARAMETERS_PER_BODY * len(model.body_joints)
    return np.concatenate([np.arange(bodies), bodies + np.asarray(rotors, dtype=int)])


def identified_regressor(model, q, qd, qdd, rotors=()):
    """The regressor's :func:`identified_columns` at ``N`` states, stacked to ``(N n, columns)``.  The
    other rotors' columns are left out: their armature is known (zero), and a column excited for
    nothing would steer the design."""
    Y = rd.regressor(model, q, qd, qdd)[..., identified_columns(model, rotors)]
    return Y.reshape(-1, Y.shape[-1])


def regressor_condition(model, excitation, independent, samples=SAMPLES_PER_PERIOD, rotors=()):
    """Condition number (:func:`.parameters.condition_number`) of the base regressor stacked over
    ``samples`` states of one period."""
    q, qd, qdd = excitation(np.linspace(0, excitation.period, samples, endpoint=False))
    return condition_number(identified_regressor(model, q, qd, qdd, rotors)[:, independent])


def random_states(model, count, seed=0):
    """``count`` states spread over the joint limits, for the structural analysis of the regressor."""
    lower, upper, speed, accel = joint_limits(model)
    rng = np.random.default_rng(seed)
    uniform = lambda bound_low, bound_high: rng.uniform(bound_low, bound_high, (count, model.nv))  # noqa: E731
    return uniform(lower, upper), uniform(-speed, speed), uniform(-accel, accel)


def _log_condition_and_gradient(A):
    """``log cond(A)`` (:func:`.parameters.condition_number`, columns scaled to unit length) and
    its derivative with respect to ``A``: with ``B = A / |A_c|`` per column ``c`` and ``B = U S V^T``,
    ``d log(s_1 / s_k) = u_1^T dB v_1 / s_1 - u_k^T dB v_k / s_k`` and ``dB_c = (I - B_c B_c^T) dA_c / |A_c|``."""
    norms = np.linalg.norm(A, axis=0)
    B = A / norms
    U, singular, Vt = np.linalg.svd(B, full_matrices=False)
    G = np.outer(U[:, 0], Vt[0]) / singular[0] - np.outer(U[:, -1], Vt[-1]) / singular[-1]
    return np.log(singular[0] / singular[-1]), (G - B * np.sum(B * G, axis=0)) / norms


def _design_problem(model, period, limits, margin, independent, rotors):
    """(excitation, cost, cost_and_gradient) of the free coefficients ``x`` (:func:`design_excitation`).

    The gradient by the chain rule, in place of finite differences of the cost in each of the
    2 n (L - 1) coefficients: the SVD's derivative (:func:`_log_condition_and_gradient`), the
    regressor's derivative with respect to each joint's position, velocity and acceleration (one
    regressor per joint and quantity: a sample's rows depend on its own state alone), and the
    states' derivative with respect to the coefficients (2 (L - 1) evaluations: a joint's states
    depend on its own coefficients alone, so one coefficient of every joint moves at once)."""
    n = model.nv
    grid = np.linspace(0, period, SAMPLES_PER_PERIOD, endpoint=False)

    def excitation(x):
        half = len(x) // 2
        a, b = _at_rest(x[:half].reshape(n, -1), x[half:].reshape(n, -1))
        q0, a, b = _within_limits((a, b), period, limits, margin)
        return FourierExcitation(tuple(model.joint_names), float(period), q0, a, b)

    def base(states):
        return identified_regressor(model, *states, rotors)[:, independent]

    def cost(x):
        return np.log(regressor_condition(model, excitation(x), independent, rotors=rotors))

    def cost_and_gradient(x):
        states = np.array(excitation(x)(grid))  # (3, samples, n): q, qd, qdd
        A = base(states)
        value, dA = _log_condition_and_gradient(A)
        d_states = np.empty_like(states)
        for quantity in range(3):
            for j in range(n):
                moved = states.copy()
                moved[quantity, :, j] += STEP
                d_states[quantity, :, j] = np.sum((dA * (base(moved) - A)).reshape(len(grid), -1), axis=1) / STEP
        gradient = np.empty_like(x)
        per_joint = len(x) // (2 * n)
        for first in range(0, len(x), per_joint * n):
            for k in range(per_joint):
                moved = first + np.arange(n) * per_joint + k  # coefficient k of every joint
                shifted = x.copy()
                shifted[moved] += STEP
                gradient[moved] = np.sum((np.array(excitation(shifted)(grid)) - states) / STEP * d_states, axis=(0, 1))
        return value, gradient

    return excitation, cost, cost_and_gradient


# BLAS on one thread (as identify): its small SVDs and products lose up to 10x to a second thread on a busy machine
@threadpool_limits.wrap(limits=1, user_api="blas")
def design_excitation(model, period=DEFAULT_PERIOD, harmonics=DEFAULT_HARMONICS, margin=DEFAULT_MARGIN,
                      velocity_limits=None, acceleration_limits=None, seed=0, iterations=DESIGN_ITERATIONS,
                      armature=False):
    """The Fourier excitation with the best-conditioned base regressor found (module docstring), for
    the armature of :func:`estimated_armature` (``armature``: of every joint)."""
    import scipy.optimize  # (here: scipy takes up to a second to import, which the nodes and --help need not pay)

    if harmonics < 2:
        raise ExcitationError("an excitation at rest at both ends needs at least 2 harmonics")
    if not 0 < margin <= 1:
        raise ExcitationError(f"margin must be in (0, 1], got {margin}")
    limits = joint_limits(model, velocity_limits, acceleration_limits)
    n, free = model.nv, harmonics - 1
    rotors = estimated_armature(model, armature)
    independent, _, _ = base_columns(identified_regressor(model, *random_states(model, 20 * len(model.body_joints), seed),
                                                          rotors))
    excitation, cost, cost_and_gradient = _design_problem(model, period, limits, margin, independent, rotors)
    rng = np.random.default_rng(seed)
    starts = [rng.normal(size=2 * n * free) for _ in range(RANDOM_STARTS)]
    best = min(starts, key=cost)
    result = scipy.optimize.minimize(cost_and_gradient, best, jac=True, method="L-BFGS-B", options={"maxiter": iterations})
    return excitation(result.x)


MAX_ROWS = 2_000_000      # rows of a trajectory file (66 min at 500 Hz): excitations last minutes
CHUNK = 10_000           # rows sampled and written at a time: the memory does not grow with the duration


def write_trajectory_csv(path, excitation, duration, rate):
    """Sample ``excitation`` over ``[0, duration]`` at ``rate`` Hz into a CSV: t, q_*, qd_*, qdd_*
    (written whole or not at all, :func:`.output.write_file`)."""
    from .output import write_file

    rows = duration * rate + 1
    if not rows <= MAX_ROWS:  # NaN fails too
        raise ExcitationError(f"--duration {duration:g} s at --rate {rate:g} Hz is {rows:.3g} rows, over the "
                              f"{MAX_ROWS} a trajectory file may hold: shorten it or lower the rate")
    count = int(round(duration * rate)) + 1
    names = excitation.joint_names

    def write(stream):
        writer = csv.writer(stream)
        writer.writerow(["t", *(f"q_{n}" for n in names), *(f"qd_{n}" for n in names), *(f"qdd_{n}" for n in names)])
        for first in range(0, count, CHUNK):
            t = np.arange(first, min(first + CHUNK, count)) / rate
            for row in np.column_stack([t, *excitation(t)]):
                writer.writerow([f"{value:.9g}" for value in row])

    write_file(path, write)


@dataclass(frozen=True)
class SampledTrajectory:
    """A trajectory read back from a CSV (t, q_*, qd_*, qdd_*), interpolated linearly between samples."""

    joint_names: tuple
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray

    @property
    def duration(self):
        return float(self.t[-1] - self.t[0])

    def __call__(self, t):
        """(q, qd, qdd) at time(s) ``t`` (held at the ends): a binary search, not a pass over the samples."""
        t = np.clip(np.asarray(t, dtype=float), self.t[0], self.t[-1])
        k = np.clip(np.searchsorted(self.t, t, side="right") - 1, 0, len(self.t) - 2)
        w = ((t - self.t[k]) / (self.t[k + 1] - self.t[k]))[..., None]
        return tuple(values[k] * (1 - w) + values[k + 1] * w for values in (self.q, self.qd, self.qdd))


def read_trajectory_csv(path):
    """The :class:`SampledTrajectory` of a CSV written by :func:`write_trajectory_csv`; ``ExcitationError``
    naming the problem for any other file: one :func:`~robot_dynamics.input_files.read_text_file` refuses
    (not a regular file, over :data:`~robot_dynamics.input_files.MAX_EXCITATION_BYTES`), other columns,
    fewer than two samples (nothing to interpolate between), a value that is not a finite number, times
    that do not increase."""
    try:
        lines = read_text_file(path, MAX_EXCITATION_BYTES, "excitation file").splitlines()
    except ValueError as error:
        raise ExcitationError(str(error)) from None
    header = next(csv.reader(lines[:1]), [])
    names = tuple(column[2:] for column in header if column.startswith("q_"))
    n = len(names)
    columns = f"{path}: expected the columns t, q_*, qd_*, qdd_* (as written by robot-dynamics excite)"
    if header[:1] != ["t"] or len(header) != 1 + 3 * n:
        raise ExcitationError(columns)
    rows = [line for line in lines[1:] if line.strip()]
    if len(rows) < 2:
        raise ExcitationError(f"{path}: {len(rows)} sample(s); a trajectory needs at least two")
    try:
        data = np.loadtxt(rows, delimiter=",", ndmin=2)
    except ValueError as error:
        raise ExcitationError(f"{path}: {error}") from None
    if data.shape[1] != len(header):
        raise ExcitationError(columns)
    bad = np.flatnonzero(~np.all(np.isfinite(data), axis=1))
    if len(bad):
        raise ExcitationError(f"{path}: sample {bad[0] + 1} has a value that is not a finite number")
    back = np.flatnonzero(np.diff(data[:, 0]) <= 0)
    if len(back):
        k = back[0] + 1
        raise ExcitationError(f"{path}: the times must increase, but sample {k + 1} has t = {data[k, 0]:g} "
                              f"after t = {data[k - 1, 0]:g}")
    return SampledTrajectory(names, data[:, 0], data[:, 1:1 + n], data[:, 1 + n:1 + 2 * n], data[:, 1 + 2 * n:])


def check_scaling(scale, max_amplitude=None):
    """ExcitationError unless ``scale`` is a fraction in (0, 1] and ``max_amplitude`` (rad or m) None or positive."""
    if not 0 < scale <= 1:
        raise ExcitationError(f"--scale {scale:g}: give a fraction in (0, 1]")
    if max_amplitude is not None and not max_amplitude > 0:
        raise ExcitationError(f"--max-amplitude {max_amplitude:g}: give a positive number (rad or m)")


def scaled(excitation, scale=1.0, max_amplitude=None):
    """``excitation`` with each joint's motion about its centre ``q0`` multiplied by ``scale``, and
    further by what keeps its amplitude ``max |q_j - q0_j|`` within ``max_amplitude`` (rad or m):
    every term of the series scales alike, so the result still starts and ends at rest and, being a
    smaller motion, stays within the limits the design kept (velocities and accelerations scale too)."""
    check_scaling(scale, max_amplitude)
    q, _, _ = excitation(np.linspace(0.0, excitation.period, LIMIT_SAMPLES))
    amplitude = scale * np.abs(q - excitation.q0).max(axis=0)
    factor = np.full(len(amplitude), float(scale))
    if max_amplitude is not None:
        factor *= np.minimum(1.0, max_amplitude / np.maximum(amplitude, 1e-300))
    return FourierExcitation(excitation.joint_names, excitation.period, excitation.q0,
                             excitation.a * factor[:, None], excitation.b * factor[:, None])


def swept_box(model, excitation, frame=None, samples=500):
    """``(frame, lower, upper)``: the axis-aligned box (root frame, m) the origin of ``frame`` sweeps
    over one period; ``frame`` None: the link that sweeps the largest box (the tool, on an arm)."""
    q, _, _ = excitation(np.linspace(0.0, excitation.period, samples))
    frames = [frame] if frame else list(model.link_names)
    boxes = {}
    for name in frames:
        points = rd.frame_pose(model, q, name)[..., :3, 3]
        boxes[name] = (points.min(axis=0), points.max(axis=0))
    name = max(boxes, key=lambda f: np.linalg.norm(boxes[f][1] - boxes[f][0]))
    return (name, *boxes[name])
