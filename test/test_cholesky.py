"""robot_dynamics.rigid_body.cholesky against numpy: the factor, the solve, and the first index whose
pivot is not positive of a singular matrix."""

import numpy as np
import pytest

from robot_dynamics.rigid_body.cholesky import cholesky_factor, cholesky_solve, cholesky_substitute

RNG = np.random.default_rng(32)


def spd(n):
    A = RNG.normal(size=(n, n))
    return A @ A.T + 0.1 * np.eye(n)


@pytest.mark.parametrize("n", [1, 2, 7, 12])
def test_factor_is_numpys_lower_triangle_and_leaves_the_upper_one_alone(n):
    M = spd(n)
    work = M.copy()
    assert cholesky_factor(work) == -1
    L = np.tril(work)
    np.testing.assert_allclose(L, np.linalg.cholesky(M), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(np.triu(work, 1), np.triu(M, 1))
    np.testing.assert_allclose(L @ L.T, M, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1, 3, 7, 12])
def test_solve_is_numpys_solve(n):
    M, b = spd(n), RNG.normal(size=n)
    work, x = M.copy(), b.copy()
    assert cholesky_solve(work, x) == -1
    np.testing.assert_allclose(x, np.linalg.solve(M, b), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(M @ x, b, rtol=1e-10, atol=1e-12)
    # substitute reuses the factor for another right-hand side
    c = RNG.normal(size=n)
    y = c.copy()
    cholesky_substitute(work, y)
    np.testing.assert_allclose(y, np.linalg.solve(M, c), rtol=1e-9, atol=1e-12)


def test_a_singular_matrix_gives_the_first_index_without_a_positive_pivot_and_leaves_b_alone():
    # coordinate 3 equals coordinate 1 (a joint that moves nothing of its own): pivot 3 is zero
    A = RNG.normal(size=(5, 5))
    A[3] = A[1]
    M = A @ A.T
    b = RNG.normal(size=5)
    x = b.copy()
    assert cholesky_solve(M.copy(), x) == 3
    np.testing.assert_array_equal(x, b)
    # and a negative diagonal entry at 0
    assert cholesky_factor(-np.eye(3)) == 0
    assert cholesky_factor(np.diag([1.0, 2.0, 0.0])) == 2
