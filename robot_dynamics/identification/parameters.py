"""The identifiable combinations of the inertial parameters, and physically consistent ones.

Base parameters (Gautier & Khalil).  Some columns of the stacked regressor ``Y`` are zero or
linear combinations of others for every motion (a body's mass never shows in the torques of a
joint whose axis passes through its centre of mass, ...).  A QR decomposition with column
pivoting of ``Y`` sampled at random states, ``Y P = Q [R1 R2]``, orders the columns so that the
first ``b`` are independent; the rest obey ``Y2 = Y1 K`` with ``K = R1^-1 R2``, hence::

    tau = Y theta = Y1 (theta1 + K theta2) = Y1 theta_base

Physical consistency (Wensing, Kim & Slotine).  A body's ten inertial parameters are those of a
real mass distribution iff its pseudo-inertia::

    J = [[Sigma, h], [h^T, m]],   Sigma = tr(Ibar)/2 I - Ibar   (the second moment of mass)

is positive semi-definite: that holds mass >= 0, a positive semi-definite rotational inertia
and its triangle inequality in one condition.  The log-Cholesky parameterisation (Rucker &
Wensing) writes ``J = U U^T`` with ``U`` upper triangular and an exponential on its diagonal,
so every real vector ``phi`` of ten numbers is a consistent body and every positive definite
``J`` has exactly one ``phi``: an unconstrained least-squares problem in ``phi``.
"""

import numpy as np

PARAMETERS_PER_BODY = 10
PARAMETER_NAMES = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")
LOG_RANGE = 60.0  # |log U_ii| beyond this is no physical body (e^60 ~ 1e26)
_UPPER = np.triu_indices(4)  # the ten entries of U, row by row


def base_columns(Y, tolerance=1e-8):
    """(independent columns, dependent columns, K) of ``Y`` (rows = samples) by pivoted QR.

    ``theta_base = theta[independent] + K @ theta[dependent]``.  A column is dependent when its
    pivot ``|R_kk|`` is below ``tolerance`` times the largest.
    """
    import scipy.linalg  # (here: see excitation.design_excitation)

    _, R, pivots = scipy.linalg.qr(Y, mode="economic", pivoting=True)
    diagonal = np.abs(np.diag(R))
    rank = int(np.sum(diagonal > tolerance * diagonal[0])) if diagonal.size and diagonal[0] > 0 else 0
    K = scipy.linalg.solve_triangular(R[:rank, :rank], R[:rank, rank:])
    K[np.abs(K) < tolerance] = 0.0
    return pivots[:rank], pivots[rank:], K


def condition_number(A):
    """``sigma_max / sigma_min`` of ``A`` with its columns scaled to unit length: independent of the
    parameters' units (kg, kg m, kg m^2), unlike the condition number of ``A`` itself."""
    norms = np.linalg.norm(A, axis=0)
    if np.any(norms == 0):
        return np.inf
    singular = np.linalg.svd(A / norms, compute_uv=False)
    return singular[0] / singular[-1] if singular[-1] > 0 else np.inf


def base_parameter_names(names, independent, dependent, K):
    """Each base parameter as the sum it stands for, e.g. ``'Izz link2 + 0.09 m link3'``."""
    expressions = []
    for row, column in enumerate(independent):
        terms = [names[column]]
        for weight, other in zip(K[row], dependent):
            if weight:
                terms.append(f"{'-' if weight < 0 else '+'} {abs(weight):.4g} {names[other]}")
        expressions.append(" ".join(terms))
    return expressions


def pseudo_inertia(theta):
    """``J = [[tr(Ibar)/2 I - Ibar, h], [h^T, m]]`` of one body's ``(m, h, Ibar)`` (ten values)."""
    m, hx, hy, hz, xx, xy, xz, yy, yz, zz = theta
    Ibar = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    J = np.empty((4, 4))
    J[:3, :3] = np.trace(Ibar) / 2 * np.eye(3) - Ibar
    J[:3, 3] = J[3, :3] = (hx, hy, hz)
    J[3, 3] = m
    return J


def parameters_of_pseudo_inertia(J):
    """The inverse of :func:`pseudo_inertia`: ``Ibar = tr(Sigma) I - Sigma``."""
    Sigma = J[:3, :3]
    Ibar = np.trace(Sigma) * np.eye(3) - Sigma
    return np.array([J[3, 3], *J[:3, 3], Ibar[0, 0], Ibar[0, 1], Ibar[0, 2], Ibar[1, 1], Ibar[1, 2], Ibar[2, 2]])


def _factor(phi):
    U = np.zeros((4, 4))
    U[_UPPER] = phi
    U[np.diag_indices(4)] = np.exp(np.clip(np.diag(U), -LOG_RANGE, LOG_RANGE))  # finite for any trial step
    return U


def parameters_of_log_cholesky(phi):
    """One body's ten inertial parameters from its log-Cholesky vector: ``J = U U^T``, ``U_ii = exp(phi_ii)``."""
    U = _factor(phi)
    return parameters_of_pseudo_inertia(U @ U.T)


def log_cholesky_jacobian(phi):
    """(10, 10) derivative of :func:`parameters_of_log_cholesky`: ``dJ = dU U^T + U dU^T``, and the
    parameters are linear in ``J``."""
    U = _factor(phi)
    columns = []
    for k, (row, column) in enumerate(zip(*_UPPER)):
        dU = np.zeros((4, 4))
        dU[row, column] = U[row, column] if row == column else 1.0  # d exp(phi) = exp(phi) dphi
        dJ = dU @ U.T
        columns.append(parameters_of_pseudo_inertia(dJ + dJ.T))
    return np.column_stack(columns)


def log_cholesky_of_parameters(theta, floor=1e-6):
    """The log-Cholesky vector of one body, its pseudo-inertia first lifted to eigenvalues >=
    ``floor`` times the largest (the nearest consistent body, if it was not one).

    ``J = U U^T`` with ``U`` upper triangular is the Cholesky factorisation of ``J`` with rows
    and columns reversed.
    """
    values, vectors = np.linalg.eigh(pseudo_inertia(theta))
    J = (vectors * np.maximum(values, floor * max(values.max(), 1e-12))) @ vectors.T
    flip = np.arange(3, -1, -1)
    U = np.linalg.cholesky(J[np.ix_(flip, flip)])[np.ix_(flip, flip)]
    U[np.diag_indices(4)] = np.log(np.diag(U))
    return U[_UPPER]


def is_physically_consistent(theta, tolerance=1e-9):
    """Whether one body's ten parameters have a positive semi-definite pseudo-inertia."""
    J = pseudo_inertia(theta)
    return bool(np.linalg.eigvalsh(J).min() >= -tolerance * max(1.0, np.abs(J).max()))


def mass_com_inertia(theta):
    """(mass, centre of mass, 3x3 inertia about the centre of mass) of ten parameters about an origin.

    Steiner's theorem backwards: ``Ic = Ibar - m (c^T c I - c c^T)``; a massless body has its
    centre of mass at the origin.
    """
    m, h = theta[0], np.asarray(theta[1:4])
    xx, xy, xz, yy, yz, zz = theta[4:10]
    Ibar = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    com = h / m if m > 0 else np.zeros(3)
    return m, com, Ibar - m * (com @ com * np.eye(3) - np.outer(com, com))
