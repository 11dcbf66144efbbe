"""The Cholesky factorisation and solve of a symmetric positive definite matrix, in place, compiled.

What forward dynamics solves ``M qdd = tau - h`` with (never forming ``M^-1``), and the simulator's
position limits their small contact system.
"""

import math

from ..jit import njit


@njit
def cholesky_factor(M):
    """``M = L L^T`` in place (``L`` in the lower triangle; the upper one is left alone).

    Returns -1, or the first index whose pivot is not positive (``M`` singular there).
    """
    n = M.shape[0]
    largest = 0.0
    for j in range(n):
        largest = max(largest, M[j, j])
    for j in range(n):
        pivot = M[j, j]
        for c in range(j):
            pivot -= M[j, c] * M[j, c]
        if pivot <= 1e-12 * largest or pivot <= 0.0:
            return j
        M[j, j] = math.sqrt(pivot)
        for r in range(j + 1, n):
            value = M[r, j]
            for c in range(j):
                value -= M[r, c] * M[j, c]
            M[r, j] = value / M[j, j]
    return -1


@njit
def cholesky_substitute(L, b):
    """Solve ``L L^T x = b`` in place, ``L`` from :func:`cholesky_factor`."""
    n = L.shape[0]
    for r in range(n):  # L y = b
        value = b[r]
        for c in range(r):
            value -= L[r, c] * b[c]
        b[r] = value / L[r, r]
    for r in range(n - 1, -1, -1):  # L^T x = y
        value = b[r]
        for c in range(r + 1, n):
            value -= L[c, r] * b[c]
        b[r] = value / L[r, r]


@njit
def cholesky_solve(M, b):
    """Solve ``M x = b`` in place by Cholesky ``M = L L^T`` (never forming ``M^-1``); ``M`` is overwritten.

    Returns -1, or the first index whose pivot is not positive (``M`` singular there).
    """
    singular = cholesky_factor(M)
    if singular < 0:
        cholesky_substitute(M, b)
    return singular
