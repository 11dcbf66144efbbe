"""From a recording to identified inertial parameters, friction and payload.

The dynamics are linear in the inertial parameters and the friction coefficients (Spong
eq. 6.122, friction as in the simulator and the dynamics node)::

    tau = Y(q, qd, qdd) theta + diag(qd) d + diag(tanh(qd / eps)) f

with ``d`` the viscous damping (the joint's and its motor's, ``r^2 B_m``) and ``f`` the Coulomb
friction per joint; ``theta`` ends with the armature ``r^2 J_m`` of every coordinate (column
``qdd``, Spong Ex. 6.1), estimated where the URDF gives one (or everywhere).  The steps:

1. :func:`resample` — each joint's series onto one uniform time grid (messages may carry only
   some joints), NaN samples dropped with a warning;
2. :func:`filtered` — a zero-phase Butterworth low-pass (``scipy.signal.sosfiltfilt``) on q and
   tau alike (the same filter on both sides of the equation), qd and qdd by central differences
   of the filtered signals, the filter's edges trimmed, then decimation to about 4x the cut-off;
3. the base parameters (:mod:`.parameters`) of the weighted least-squares problem, each joint's
   rows divided by that joint's residual standard deviation (Gautier's weighting), with their
   relative standard deviations ``100 sigma_i / |theta_i|`` and the condition number;
4. the physically consistent estimate: the same weighted least squares in the log-Cholesky
   coordinates of every body (``scipy.optimize.least_squares``, armature and friction bounded
   at 0), plus a faint pull towards the URDF's values that only decides what the data cannot
   see (the combinations outside the base parameters).

Steps 3 and 4 never touch the N n rows of the stacked regressor but their triangular factors:
one QR decomposition of each joint's rows ``[A_j z_j] = Q_j R_j`` (p + 1 rows each, p the
unknowns), weighted per joint, then one QR of the weighted ``R_j`` stacked.  Least squares sees
rows only through ``R^T R``, so every fit has the same minimiser and residual norm as on the
whole recording, and each iteration of step 4 costs a product with a (p, p) triangular matrix,
whatever the recording's length.

We chose the log-Cholesky parameterisation over an LMI/SDP formulation because it needs no
SDP solver (scipy only) and keeps every iterate physically consistent; the QR reduction makes
it cheap.
"""

import warnings
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

import robot_dynamics as rd

from .excitation import estimated_armature, identified_columns, random_states
from .parameters import (
    PARAMETER_NAMES, PARAMETERS_PER_BODY, base_columns, base_parameter_names, condition_number, log_cholesky_jacobian, log_cholesky_of_parameters,
    parameters_of_log_cholesky,
)
from .recording import RecordingError

DEFAULT_CUTOFF = 10.0          # Hz, the low-pass on q and tau
DEFAULT_FRICTION_VELOCITY = 0.01  # eps of tanh(qd / eps): the simulator's and the node's default
DEFAULT_HOLDOUT = 0.25         # fraction of the recording kept for validation without --validate
MAX_CONDITION = 1e4            # of the weighted base regressor, unit-free: above it the estimate is noise-driven
MIN_SAMPLES_PER_PARAMETER = 10
FILTER_ORDER = 4
MAX_EVALUATIONS = 200          # of the consistent least squares' residual
TOLERANCE = 1e-10              # relative, of the consistent least squares (ftol, xtol, gtol)
PRIOR_WEIGHT = 1e-3            # the URDF prior's weight relative to the smallest singular value


class IdentificationError(ValueError):
    """Data that cannot give a trustworthy model; the message says what to do."""


@dataclass(frozen=True)
class Samples:
    """States and torques on a uniform grid, (N,) and (N, n) in model order; ``coulomb`` is
    ``tanh(qd / eps)`` through the same low-pass as the torques (it changes sign faster than the
    cut-off, so filtering it, not the velocity alone, keeps both sides of the equation alike)."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    coulomb: np.ndarray

    def part(self, rows):
        return Samples(self.t[rows], self.q[rows], self.qd[rows], self.qdd[rows], self.tau[rows], self.coulomb[rows])


# ---------------------------------------------------------------------------------------- data

def _clean(t, values, joint, quantity, source):
    """The samples of one series without NaNs (warned about) and with strictly increasing times."""
    bad = ~np.isfinite(values) | ~np.isfinite(t)
    if bad.any():
        warnings.warn(f"{source}: {int(bad.sum())} of {len(t)} {quantity} samples of joint {joint!r} are NaN or "
                      "infinite and were dropped (check the driver that publishes them)", stacklevel=3)
        if bad.mean() > 0.5:
            raise IdentificationError(f"{source}: most {quantity} samples of joint {joint!r} are not finite")
    t, values = t[~bad], values[~bad]
    keep = np.concatenate([[True], np.diff(t) > 0])
    return t[keep], values[keep]


def resample(recording, model):
    """(t, q, qd or None, tau) of the model's joints on one uniform grid over the common time span."""
    source, names = recording.source, model.joint_names
    missing = [name for name in names if name not in recording.series["q"]]
    if missing:
        raise RecordingError(
            f"{source}: no positions for joint(s) {', '.join(missing)} of {model.name!r} (the recording has "
            f"{', '.join(recording.joint_names) or 'no joints'}): record every joint, or pass the URDF of the robot recorded")
    no_effort = [name for name in names if name not in recording.series["tau"]]
    if no_effort:
        raise RecordingError(
            f"{source}: no efforts for joint(s) {', '.join(no_effort)}: identification needs the measured joint "
            "torques; record joint_states from a driver that fills 'effort' (e.g. ros2_control's joint_state_broadcaster)")
    with_velocity = all(name in recording.series["qd"] for name in names)
    quantities = ("q", "qd", "tau") if with_velocity else ("q", "tau")
    series = {(quantity, name): _clean(*recording.series[quantity][name], name, quantity, source)
              for quantity in quantities for name in names}
    start = max(t[0] for t, _ in series.values() if len(t))
    end = min(t[-1] for t, _ in series.values() if len(t))
    steps = np.concatenate([np.diff(t) for t, _ in series.values() if len(t) > 1] or [np.array([np.inf])])
    dt = float(np.median(steps))
    if not end > start or not np.isfinite(dt):
        raise IdentificationError(f"{source}: the joints' samples do not overlap in time")
    t = np.arange(start, end + 1e-9 * dt, dt)
    grid = {key: np.interp(t, *values) for key, values in series.items()}
    stack = lambda quantity: np.column_stack([grid[quantity, name] for name in names])  # noqa: E731
    return t, stack("q"), stack("qd") if with_velocity else None, stack("tau")


def filtered(t, q, qd, tau, cutoff=DEFAULT_CUTOFF, friction_velocity=DEFAULT_FRICTION_VELOCITY):
    """Zero-phase low-passed q, qd, qdd and tau (module docstring, step 2), edges trimmed, decimated."""
    import scipy.signal  # (here: see design_excitation)

    dt = float(t[1] - t[0]) if len(t) > 1 else np.inf
    rate = 1 / dt
    if cutoff >= rate / 2:
        raise IdentificationError(f"the cut-off {cutoff:g} Hz must be below half the sampling rate ({rate:.4g} Hz)")
    trim = int(np.ceil(2 / cutoff * rate))  # the filter's response settles within ~2 periods of the cut-off
    if len(t) < 2 * trim + 3 * FILTER_ORDER * 3:
        raise IdentificationError(f"the recording is too short ({len(t)} samples over {t[-1] - t[0]:.3g} s): "
                                  "record at least a whole excitation period (robot-dynamics excite)")
    sos = scipy.signal.butter(FILTER_ORDER, cutoff, fs=rate, output="sos")
    low = lambda x: scipy.signal.sosfiltfilt(sos, x, axis=0)  # noqa: E731
    q = low(q)
    qd = np.gradient(q, dt, axis=0) if qd is None else low(qd)
    qdd = np.gradient(qd, dt, axis=0)
    tau = low(tau)
    coulomb = low(np.tanh(qd / friction_velocity))
    step = max(1, int(rate / (4 * cutoff)))
    rows = slice(trim, len(t) - trim, step)
    return Samples(t[rows], q[rows], qd[rows], qdd[rows], tau[rows], coulomb[rows])


# ---------------------------------------------------------------------------------- the problem

@dataclass(frozen=True)
class Problem:
    """What is estimated: ``blocks`` bodies of ten inertial parameters (each physically consistent),
    the armature of some coordinates (each >= 0), then, with friction, 2n friction coefficients
    (``d`` then ``f``, each >= 0), all at the columns of ``matrix(samples)``; ``prior`` their a-priori
    values; ``names`` one per unknown."""

    model: rd.RobotModel
    blocks: int
    friction: bool
    transform: np.ndarray     # (10 nb + n, 10 blocks + rotors): the regressor's parameters per unknown inertial parameter
    known: np.ndarray         # (10 nb + n,): parameters not estimated (other armatures; payload mode: the robot)
    prior: np.ndarray
    names: tuple
    friction_velocity: float

    def matrix(self, samples):
        """(A, known): rows (sample, joint), ``tau - known = A @ x`` with ``known`` the torques of what is
        not estimated (payload mode: the robot; without friction identification: the URDF's friction)."""
        N, n = samples.q.shape
        Y = rd.regressor(self.model, samples.q, samples.qd, samples.qdd).reshape(N * n, -1)
        columns = [Y @ self.transform]
        known = (Y @ self.known).reshape(N, n)
        if self.friction:
            columns.append(_diagonal_columns(samples.qd))
            columns.append(_diagonal_columns(samples.coulomb))
        else:
            known = known + self.model.viscous_damping * samples.qd + self.model.friction * samples.coulomb
        return np.hstack(columns), known

    @property
    def inertial_unknowns(self):
        """How many of the unknowns are inertial (bodies and armature): the friction coefficients follow."""
        return self.transform.shape[1]

    @property
    def armature_estimated(self):
        """(n,) whether each coordinate's armature is an unknown."""
        return self.transform[PARAMETERS_PER_BODY * len(self.model.body_joints):].any(axis=1)

    def inertial(self, x):
        """The regressor's parameters (10 nb + n,) for the unknowns ``x``."""
        return self.known + self.transform @ x[: self.inertial_unknowns]


def _diagonal_columns(values):
    """(N n, n) rows (sample k, joint j) holding ``values[k, j]`` in column j: a per-joint coefficient."""
    N, n = values.shape
    out = np.zeros((N, n, n))
    out[:, np.arange(n), np.arange(n)] = values
    return out.reshape(N * n, n)


def _friction_names(model):
    return tuple(f"{kind} {joint}" for kind in ("damping", "friction") for joint in model.joint_names)


def full_problem(model, friction, armature=False, friction_velocity=DEFAULT_FRICTION_VELOCITY):
    """Every body's inertial parameters, the armature of :func:`.excitation.estimated_armature`
    (``armature``: of every coordinate) and, with ``friction``, the friction unknown; the URDF's
    values are the prior."""
    nb = len(model.body_joints)
    theta = rd.inertial_parameters(model)
    rotors = estimated_armature(model, armature)
    columns = identified_columns(model, rotors)
    names = tuple(f"{p} {model.body_joints[i]}" for i in range(nb) for p in PARAMETER_NAMES)
    names += tuple(f"armature {model.joint_names[c]}" for c in rotors)
    prior = np.concatenate([theta[columns], model.viscous_damping, model.friction]) if friction else theta[columns]
    known = theta.copy()
    known[columns] = 0.0
    return Problem(model, nb, friction, np.eye(len(theta))[:, columns], known, prior,
                   names + (_friction_names(model) if friction else ()), friction_velocity)


def payload_transform(model, link):
    """(10 nb, 10): body parameters added by a payload's ten parameters given in ``link``'s frame (linear)."""
    if link not in model.frames:
        raise IdentificationError(f"unknown payload link {link!r}; links of {model.name!r}: {', '.join(model.link_names)}")
    frame = model.frames[link]
    if frame.body < 0:
        raise IdentificationError(f"payload link {link!r} is fixed to the base: a payload there moves nothing "
                                  "and cannot be identified; name a link the arm moves")
    # move_inertial_parameters is linear in the parameters: its columns are the images of unit vectors
    from ..model import move_inertial_parameters

    T = np.zeros((len(rd.inertial_parameters(model)), PARAMETERS_PER_BODY))
    rows = slice(PARAMETERS_PER_BODY * frame.body, PARAMETERS_PER_BODY * (frame.body + 1))
    for k in range(PARAMETERS_PER_BODY):
        T[rows, k] = move_inertial_parameters(np.eye(PARAMETERS_PER_BODY)[k], frame.pose[:3, :3], frame.pose[:3, 3])
    return T


def payload_problem(model, link, friction, friction_velocity=DEFAULT_FRICTION_VELOCITY):
    """Only the payload on ``link`` (and friction) unknown; the robot's URDF is trusted."""
    T = payload_transform(model, link)
    prior = np.concatenate([np.zeros(10), model.viscous_damping, model.friction]) if friction else np.zeros(10)
    names = tuple(f"{p} payload" for p in PARAMETER_NAMES)
    return Problem(model, 1, friction, T, rd.inertial_parameters(model), prior,
                   names + (_friction_names(model) if friction else ()), friction_velocity)


def structural_base(problem, seed=0):
    """(independent, dependent, K) of the problem's columns over random states (the base parameters)."""
    q, qd, qdd = random_states(problem.model, 30 * (problem.blocks + 2), seed)
    coulomb = np.tanh(qd / problem.friction_velocity)
    return base_columns(problem.matrix(Samples(np.zeros(len(q)), q, qd, qdd, np.zeros_like(q), coulomb))[0])


# ---------------------------------------------------------------------------------- the estimate

@dataclass(frozen=True)
class Estimate:
    """The result: ``x`` the consistent unknowns; the base parameters with their statistics."""

    problem: Problem
    x: np.ndarray
    base_names: tuple
    base_ols: np.ndarray          # ordinary (weighted) least squares, base parameters
    base_std: np.ndarray
    base_consistent: np.ndarray   # the consistent estimate's base parameters
    condition: float
    joint_sigma: np.ndarray       # residual standard deviation per joint, N m or N
    samples: int

    @property
    def relative_std(self):
        """``100 sigma_i / |theta_i|`` in percent."""
        return 100 * self.base_std / np.maximum(np.abs(self.base_ols), 1e-300)

    def predict(self, samples):
        """Torques (N, n) predicted for ``samples``."""
        A, known = self.problem.matrix(samples)
        return known + (A @ self.x).reshape(known.shape)

    def body_parameters(self):
        """The model's ten parameters per body (nb, 10), identified."""
        bodies = PARAMETERS_PER_BODY * len(self.problem.model.body_joints)
        return self.problem.inertial(self.x)[:bodies].reshape(-1, PARAMETERS_PER_BODY)

    def armature(self):
        """(n,) the armature per coordinate: identified where :attr:`Problem.armature_estimated`, else the URDF's."""
        return self.problem.inertial(self.x)[PARAMETERS_PER_BODY * len(self.problem.model.body_joints):]

    def friction(self):
        """(viscous damping, Coulomb friction) per joint; the URDF's without friction identification."""
        model = self.problem.model
        if not self.problem.friction:
            return model.viscous_damping, np.array(model.friction)
        tail = self.x[self.problem.inertial_unknowns:]
        return tail[: model.nv], tail[model.nv:]


def _joint_triangles(A, z, n):
    """(n, p + 1, p + 1): the triangular factor of each joint's rows of ``[A z]`` (rows (sample,
    joint)), ``[A_j z_j] = Q_j R_j``: it stands for joint j's N rows in any least squares."""
    rows = np.column_stack([A, z]).reshape(-1, n, A.shape[1] + 1).transpose(1, 0, 2)
    R = np.linalg.qr(rows, mode="r")
    return np.pad(R, ((0, 0), (0, rows.shape[2] - R.shape[1]), (0, 0)))  # fewer samples than columns


def _triangle(blocks):
    """``R`` of ``blocks`` (rows stacked): ``[A z]`` reduced to p + 1 rows (:func:`_joint_triangles`)."""
    R = np.linalg.qr(np.concatenate(blocks), mode="r")
    return np.pad(R, ((0, R.shape[1] - R.shape[0]), (0, 0)))


def _joint_sigma(R_joints, columns, N):
    """Each joint's residual standard deviation when ``columns`` of ``A`` fit ``z`` by least squares
    (unweighted): ``||A_j x - z_j||^2 = ||R_j [x; -1]||^2``."""
    stacked = np.concatenate(R_joints)
    x = np.linalg.lstsq(stacked[:, columns], stacked[:, -1], rcond=None)[0]
    residual = np.einsum("jrc,c->jr", R_joints[:, :, columns], x) - R_joints[:, :, -1]
    sigma = np.sqrt(np.sum(residual**2, axis=1) / N)
    return np.maximum(sigma, 1e-9 * max(sigma.max(), 1e-300))


def estimate(problem, samples):
    """The weighted base-parameter and the physically consistent estimates (module docstring),
    every fit on triangular factors of p + 1 rows, not on the N n rows of the regressor."""
    N, n = samples.q.shape
    independent, dependent, K = structural_base(problem)
    if N * n < MIN_SAMPLES_PER_PARAMETER * len(independent):
        raise IdentificationError(f"too few samples ({N} states for {len(independent)} base parameters): "
                                  "record a longer excitation (robot-dynamics excite --duration)")
    A, known = problem.matrix(samples)
    R_joints = _joint_triangles(A, (samples.tau - known).ravel(), n)
    sigma = _joint_sigma(R_joints, independent, N)  # Gautier's weights: 1 / sigma_j on joint j's rows
    R_w = _triangle(R_joints / sigma[:, None, None])
    base, z_w = R_w[:, independent], R_w[:, -1]
    condition = condition_number(base)  # column norms and singular values of R_w are those of the weighted rows
    if not condition <= MAX_CONDITION:
        raise IdentificationError(
            f"the recording does not excite the dynamics enough: the base regressor's condition number is "
            f"{condition:.3g} (> {MAX_CONDITION:g}), so some parameters would be fitted to noise; record an "
            "excitation trajectory (robot-dynamics excite) over its full duration, moving every joint")
    base_ols = np.linalg.lstsq(base, z_w, rcond=None)[0]
    dof = max(N * n - len(independent), 1)
    variance = float(np.sum((z_w - base @ base_ols) ** 2)) / dof  # ~1 after the weighting
    covariance = variance * np.linalg.inv(base.T @ base)
    base_std = np.sqrt(np.diag(covariance))

    x = _consistent(problem, R_w, prior_weight=PRIOR_WEIGHT * np.linalg.svd(base, compute_uv=False)[-1])
    base_consistent = x[independent] + K @ x[dependent]
    return Estimate(problem, x, tuple(base_parameter_names(problem.names, independent, dependent, K)),
                    base_ols, base_std, base_consistent, float(condition), sigma, N)


def _consistent(problem, R_w, prior_weight):
    """argmin ||A_w x(phi) - z_w||^2 + prior_weight^2 ||x(phi) - prior||^2 over log-Cholesky ``phi``,
    with ``R_w`` the triangular factor of ``[A_w z_w]``: ``||A_w x - z_w|| = ||R_x x - r_z||`` + a constant."""
    import scipy.linalg  # (here: see design_excitation)
    import scipy.optimize

    p = R_w.shape[1] - 1
    R_x, r_z = R_w[:p, :p], R_w[:p, p]
    b = problem.blocks

    def unknowns(y):
        bodies = [parameters_of_log_cholesky(y[10 * i: 10 * i + 10]) for i in range(b)]
        return np.concatenate(bodies + [y[10 * b:]])

    def residual(y):
        x = unknowns(y)
        return np.concatenate([R_x @ x - r_z, prior_weight * (x - problem.prior)])

    def jacobian(y):
        dx = scipy.linalg.block_diag(*[log_cholesky_jacobian(y[10 * i: 10 * i + 10]) for i in range(b)],
                                     np.eye(len(y) - 10 * b))
        return np.vstack([R_x @ dx, prior_weight * dx])

    # start from the least-squares fit nearest the prior, each body lifted to the nearest consistent one
    nearest = problem.prior + np.linalg.lstsq(R_x, r_z - R_x @ problem.prior, rcond=None)[0]
    start = np.concatenate([log_cholesky_of_parameters(nearest[10 * i: 10 * i + 10]) for i in range(b)]
                           + [np.maximum(nearest[10 * b:], 0)])
    lower = np.concatenate([np.full(10 * b, -np.inf), np.zeros(len(start) - 10 * b)])
    # a dense trust-region step: the problem is small; lsmr steps scaled by the Jacobian stalled at
    # MAX_EVALUATIONS along the directions only the weak prior fixes, far from the optimum
    solution = scipy.optimize.least_squares(residual, start, jac=jacobian, bounds=(lower, np.inf), method="trf", tr_solver="exact",
                                            xtol=TOLERANCE, ftol=TOLERANCE, gtol=TOLERANCE, max_nfev=MAX_EVALUATIONS)
    return unknowns(solution.x)


def rms(values):
    return np.sqrt(np.mean(np.asarray(values) ** 2, axis=0))


# ---------------------------------------------------------------------------------- the pipeline

@dataclass(frozen=True)
class Validation:
    """Measured and predicted torques (N, n) on data not used for the fit, and their RMS per joint."""

    label: str
    samples: Samples
    identified: np.ndarray
    input: np.ndarray          # predicted by the input URDF (its friction included)

    @property
    def rms_torque(self):
        return rms(self.samples.tau)

    @property
    def rms_identified(self):
        return rms(self.samples.tau - self.identified)

    @property
    def rms_input(self):
        return rms(self.samples.tau - self.input)


def validate(estimate, samples, label):
    """The identified model's and the input URDF's torque predictions against ``samples``."""
    problem = estimate.problem
    model, qd = problem.model, samples.qd
    nominal = (rd.inverse_dynamics(model, samples.q, qd, samples.qdd) + model.viscous_damping * qd
               + model.friction * samples.coulomb)
    return Validation(label, samples, estimate.predict(samples), nominal)


# BLAS on one thread: its matrices here (at most (p + 1) columns) gain little from a second
# thread on an idle machine and lose up to 10x on a busy one, where threads wait for each other
@threadpool_limits.wrap(limits=1, user_api="blas")
def identify(recording, model, friction=False, payload=None, validation=None, cutoff=DEFAULT_CUTOFF,
             holdout=DEFAULT_HOLDOUT, armature=False):
    """(:class:`Estimate`, :class:`Validation`) from a :class:`~.recording.Recording`.

    The armature is estimated on the coordinates whose URDF gives one, or on every coordinate with
    ``armature`` (not with ``payload``: the robot is trusted).  Without a ``validation`` recording
    the last ``holdout`` of the recording is kept out of the fit and used for validation.
    """
    if payload is not None and armature:
        raise IdentificationError("the armature is the robot's: identify the robot (with --armature) first, "
                                  "then the payload alone (--payload trusts the robot's URDF)")
    problem = (payload_problem(model, payload, friction) if payload is not None
               else full_problem(model, friction, armature))
    samples = filtered(*resample(recording, model), cutoff)
    if validation is None:
        if not 0 < holdout < 1:
            raise IdentificationError(f"holdout must be in (0, 1), got {holdout}")
        split = int(round(len(samples.t) * (1 - holdout)))
        fit, held = samples.part(slice(0, split)), samples.part(slice(split, None))
        label = f"the last {100 * holdout:.0f} % of {recording.source} (held out)"
    else:
        fit, held = samples, filtered(*resample(validation, model), cutoff)
        label = validation.source
    result = estimate(problem, fit)
    return result, validate(result, held, label)
