"""From a recording to identified inertial parameters, friction and payload.

The dynamics are linear in the inertial parameters and the friction coefficients (Spong
eq. 6.122, friction as in the simulator and the dynamics node)::

    tau = Y(q, qd, qdd) theta + diag(qd) d + diag(tanh(qd / eps)) f

with ``d`` the viscous damping (the joint's and its motor's, ``r^2 B_m``) and ``f`` the Coulomb
friction per joint; ``theta`` ends with the armature ``r^2 J_m`` of every coordinate (column
``qdd``, Spong Ex. 6.1), estimated where the URDF gives one (or everywhere).  The steps:

1. :func:`.samples.resample` — each joint's series onto one uniform time grid (messages may carry only
   some joints), NaN samples dropped with a warning;
2. :func:`.samples.filtered` — a zero-phase Butterworth low-pass (``scipy.signal.sosfiltfilt``) on q and
   tau alike (the same filter on both sides of the equation), qd and qdd by central differences
   of the filtered signals, the filter's edges trimmed, then decimation to about 4x the cut-off;
3. the base parameters (:mod:`.parameters`) of the weighted least-squares problem, each joint's
   rows divided by that joint's residual standard deviation (Gautier's weighting), with their
   standard deviations from the residuals' autocorrelation (:mod:`.uncertainty`) and the
   condition number;
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

from dataclasses import dataclass

import numpy as np

import robot_dynamics as rd

from .excitation import estimated_armature, identified_columns, random_states
from .parameters import (
    PARAMETER_NAMES, PARAMETERS_PER_BODY, base_columns, base_parameter_names, condition_number, log_cholesky_jacobian, log_cholesky_of_parameters,
    parameters_of_log_cholesky,
)
from .samples import DEFAULT_FRICTION_VELOCITY, IdentificationError, Samples
from .uncertainty import newey_west_covariance

MAX_CONDITION = 1e4            # of the weighted base regressor, unit-free: above it the estimate is noise-driven
MIN_SAMPLES_PER_PARAMETER = 10
MAX_EVALUATIONS = 200          # of the consistent least squares' residual
TOLERANCE = 1e-10              # relative, of the consistent least squares (ftol, xtol, gtol)
PRIOR_WEIGHT = 1e-3            # the URDF prior's weight relative to the smallest singular value


# ---------------------------------------------------------------------------------- the problem

@dataclass(frozen=True)
class Problem:
    """What is estimated: ``blocks`` bodies of ten inertial parameters (each physically consistent),
    the armature of some coordinates (each >= 0), then, with friction, 2n friction coefficients
    (``d`` then ``f``, each >= 0), then with ``offsets`` R a constant torque offset per joint of
    each of R recordings (any sign), all at the columns of ``matrix(samples)``; ``prior`` their
    a-priori values; ``names`` one per unknown."""

    model: rd.RobotModel
    blocks: int
    friction: bool
    transform: np.ndarray     # (10 nb + n, 10 blocks + rotors): the regressor's parameters per unknown inertial parameter
    known: np.ndarray         # (10 nb + n,): parameters not estimated (other armatures; payload mode: the robot)
    prior: np.ndarray
    names: tuple
    friction_velocity: float
    offsets: int = 0

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
        for recording in range(self.offsets):
            columns.append(_diagonal_columns(np.repeat((samples.source == recording)[:, None], n, axis=1).astype(float)))
        return np.hstack(columns), known

    @property
    def lower_bounds(self):
        """Of the unknowns after the bodies' log-Cholesky ones: armature and friction >= 0, offsets free."""
        n = self.model.nv
        return np.concatenate([np.zeros(self.transform.shape[1] - PARAMETERS_PER_BODY * self.blocks
                                        + (2 * n if self.friction else 0)), np.full(n * self.offsets, -np.inf)])

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


def _with_offsets(problem, recordings):
    """``problem`` with a torque offset per joint of each of ``recordings`` recordings (prior 0)."""
    if not recordings:
        return problem
    names = tuple(f"torque offset {joint} (recording {r + 1})" for r in range(recordings) for joint in problem.model.joint_names)
    return Problem(problem.model, problem.blocks, problem.friction, problem.transform, problem.known,
                   np.concatenate([problem.prior, np.zeros(len(names))]), problem.names + names,
                   problem.friction_velocity, recordings)


def full_problem(model, friction, armature=False, friction_velocity=DEFAULT_FRICTION_VELOCITY, offsets=0):
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
    return _with_offsets(Problem(model, nb, friction, np.eye(len(theta))[:, columns], known, prior,
                                 names + (_friction_names(model) if friction else ()), friction_velocity), offsets)


def payload_transform(model, link):
    """(10 nb, 10): body parameters added by a payload's ten parameters given in ``link``'s frame (linear)."""
    if link not in model.frames:
        raise IdentificationError(f"unknown payload link {link!r}; links of {model.name!r}: {', '.join(model.link_names)}")
    frame = model.frames[link]
    if frame.body < 0:
        raise IdentificationError(f"payload link {link!r} is fixed to the base: a payload there moves nothing "
                                  "and cannot be identified; name a link the arm moves")
    # move_inertial_parameters is linear in the parameters: its columns are the images of unit vectors
    from ..rigid_body.model import move_inertial_parameters

    T = np.zeros((len(rd.inertial_parameters(model)), PARAMETERS_PER_BODY))
    rows = slice(PARAMETERS_PER_BODY * frame.body, PARAMETERS_PER_BODY * (frame.body + 1))
    for k in range(PARAMETERS_PER_BODY):
        T[rows, k] = move_inertial_parameters(np.eye(PARAMETERS_PER_BODY)[k], frame.pose[:3, :3], frame.pose[:3, 3])
    return T


def payload_problem(model, link, friction, friction_velocity=DEFAULT_FRICTION_VELOCITY, offsets=0):
    """Only the payload on ``link`` (and friction) unknown; the robot's URDF is trusted."""
    T = payload_transform(model, link)
    prior = np.concatenate([np.zeros(10), model.viscous_damping, model.friction]) if friction else np.zeros(10)
    names = tuple(f"{p} payload" for p in PARAMETER_NAMES)
    return _with_offsets(Problem(model, 1, friction, T, rd.inertial_parameters(model), prior,
                                 names + (_friction_names(model) if friction else ()), friction_velocity), offsets)


def structural_base(problem, seed=0):
    """(independent, dependent, K) of the problem's columns over random states (the base parameters)."""
    q, qd, qdd = random_states(problem.model, 30 * (problem.blocks + 2), seed)
    coulomb = np.tanh(qd / problem.friction_velocity)
    source = np.arange(len(q)) % max(problem.offsets, 1)
    return base_columns(problem.matrix(Samples(np.zeros(len(q)), q, qd, qdd, np.zeros_like(q), coulomb, source))[0])


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
    correlation_time: float = 0.0  # s: the residuals' correlation window of the standard deviations

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
        return tail[: model.nv], tail[model.nv: 2 * model.nv]

    def offsets(self):
        """(recordings, n) the identified torque offsets (none without ``offsets``)."""
        n = self.problem.model.nv
        return self.x[len(self.x) - n * self.problem.offsets:].reshape(self.problem.offsets, n)


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
    rows = A[:, independent].reshape(N, n, -1) / sigma[None, :, None]
    residuals = ((samples.tau - known) - (A[:, independent] @ base_ols).reshape(N, n)) / sigma
    covariance, lag = newey_west_covariance(rows, residuals)  # correlated residuals: see .uncertainty
    base_std = np.sqrt(np.maximum(np.diag(covariance), 0))

    x = _consistent(problem, R_w, prior_weight=PRIOR_WEIGHT * np.linalg.svd(base, compute_uv=False)[-1])
    base_consistent = x[independent] + K @ x[dependent]
    return Estimate(problem, x, tuple(base_parameter_names(problem.names, independent, dependent, K)),
                    base_ols, base_std, base_consistent, float(condition), sigma, N, lag * _sample_step(samples))


def _sample_step(samples):
    steps = np.diff(samples.t)
    return float(np.median(steps[steps > 0])) if np.any(steps > 0) else 0.0


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
                           + [np.maximum(nearest[10 * b:], problem.lower_bounds)])
    lower = np.concatenate([np.full(10 * b, -np.inf), problem.lower_bounds])
    # a dense trust-region step: the problem is small; lsmr steps scaled by the Jacobian stalled at
    # MAX_EVALUATIONS along the directions only the weak prior fixes, far from the optimum
    solution = scipy.optimize.least_squares(residual, start, jac=jacobian, bounds=(lower, np.inf), method="trf", tr_solver="exact",
                                            xtol=TOLERANCE, ftol=TOLERANCE, gtol=TOLERANCE, max_nfev=MAX_EVALUATIONS)
    return unknowns(solution.x)


def rms(values):
    return np.sqrt(np.mean(np.asarray(values) ** 2, axis=0))

