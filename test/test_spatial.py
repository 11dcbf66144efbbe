"""robot_dynamics.spatial, the kernels' 3-D and spatial algebra, against independent oracles: numpy's
matrix products, scipy's rotation vector (Rodrigues), Lynch & Park's 6x6 adjoint matrices (eqs. 3.83,
8.38, 8.50) and a rigid body made of point masses (its momentum, its inertia about another frame)."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from robot_dynamics import spatial

RNG = np.random.default_rng(32)


def vec(x):
    return tuple(float(v) for v in x)


def rot(R):
    return tuple(float(v) for v in np.asarray(R).reshape(9))


def hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def adjoint(R, p):
    """Ad_T of T = (R, p), 6x6 on [angular; linear] (Lynch & Park eq. 3.83)."""
    return np.block([[R, np.zeros((3, 3))], [hat(p) @ R, R]])


def ad(omega, v):
    """[ad_V] (Lynch & Park eq. 8.38)."""
    return np.block([[hat(omega), np.zeros((3, 3))], [hat(v), hat(omega)]])


def random_rotation():
    return Rotation.random(random_state=RNG.integers(1 << 30)).as_matrix()


def point_body(count=5):
    """Point masses and positions in the body frame, and the ten parameters about its origin from them."""
    masses, points = RNG.uniform(0.1, 2.0, count), RNG.normal(size=(count, 3))
    mass = masses.sum()
    mc = (masses[:, None] * points).sum(axis=0)
    I = sum(m * (r @ r * np.eye(3) - np.outer(r, r)) for m, r in zip(masses, points))
    return masses, points, (mass, mc, I)


def six(I):
    return (I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2])


def test_vector_helpers_are_numpys():
    for _ in range(20):
        a, b, s = RNG.normal(size=3), RNG.normal(size=3), RNG.normal()
        np.testing.assert_allclose(spatial.add(vec(a), vec(b)), a + b, rtol=1e-15)
        np.testing.assert_allclose(spatial.sub(vec(a), vec(b)), a - b, rtol=1e-15)
        np.testing.assert_allclose(spatial.scale(vec(a), s), a * s, rtol=1e-15)
        assert spatial.dot(vec(a), vec(b)) == pytest.approx(a @ b, rel=1e-14, abs=1e-15)
        np.testing.assert_allclose(spatial.cross(vec(a), vec(b)), np.cross(a, b), rtol=1e-14, atol=1e-15)


def test_rotations_are_numpys_matrix_products():
    for _ in range(20):
        A, B, v = random_rotation(), random_rotation(), RNG.normal(size=3)
        np.testing.assert_allclose(spatial.rotate(rot(A), vec(v)), A @ v, atol=1e-14)
        np.testing.assert_allclose(spatial.rotate_back(rot(A), vec(v)), A.T @ v, atol=1e-14)
        np.testing.assert_allclose(np.reshape(spatial.compose(rot(A), rot(B)), (3, 3)), A @ B, atol=1e-14)


def test_axis_angle_is_rodrigues_as_scipys_rotation_vector():
    for angle in (0.0, 1e-9, 0.7, -2.5, np.pi, 4.0):
        axis = RNG.normal(size=3)
        axis /= np.linalg.norm(axis)
        got = np.reshape(spatial.axis_angle(vec(axis), angle), (3, 3))
        np.testing.assert_allclose(got, Rotation.from_rotvec(angle * axis).as_matrix(), atol=1e-14)


def test_motion_to_child_is_the_adjoint_of_the_inverse_transform():
    for _ in range(20):
        R, p, omega, v = random_rotation(), RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3)
        want = adjoint(R.T, -R.T @ p) @ np.concatenate([omega, v])
        got = np.concatenate(spatial.motion_to_child(rot(R), vec(p), vec(omega), vec(v)))
        np.testing.assert_allclose(got, want, atol=1e-13)


def test_force_to_parent_is_the_transposed_adjoint_and_moves_a_point_force():
    for _ in range(20):
        R, p, n, f = random_rotation(), RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3)
        # F_parent = Ad_{T_child,parent}^T F_child (eq. 8.50), with T_child,parent = T^-1
        want = adjoint(R.T, -R.T @ p).T @ np.concatenate([n, f])
        got = np.concatenate(spatial.force_to_parent(rot(R), vec(p), vec(n), vec(f)))
        np.testing.assert_allclose(got, want, atol=1e-13)
    # a pure force f at the child's point r: in the parent the same force at R r + p
    R, p, r, f = random_rotation(), RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3)
    n_parent, f_parent = spatial.force_to_parent(rot(R), vec(p), vec(np.cross(r, f)), vec(f))
    np.testing.assert_allclose(f_parent, R @ f, atol=1e-14)
    np.testing.assert_allclose(n_parent, np.cross(R @ r + p, R @ f), atol=1e-13)


def test_motion_cross_is_ad_v():
    for _ in range(20):
        omega, v, w, u = (RNG.normal(size=3) for _ in range(4))
        got = np.concatenate(spatial.motion_cross(vec(omega), vec(v), vec(w), vec(u)))
        np.testing.assert_allclose(got, ad(omega, v) @ np.concatenate([w, u]), atol=1e-13)


def test_spatial_inertia_and_momentum_of_a_body_of_point_masses():
    """I V = sum_i m_i (r_i x v_i, v_i) with v_i = v + omega x r_i: the momentum about the origin."""
    for _ in range(10):
        masses, points, (mass, mc, I) = point_body()
        omega, v = RNG.normal(size=3), RNG.normal(size=3)
        velocities = v + np.cross(omega, points)
        want = np.concatenate([(masses[:, None] * np.cross(points, velocities)).sum(axis=0),
                               (masses[:, None] * velocities).sum(axis=0)])
        got = np.concatenate(spatial.inertia_times(mass, vec(mc), six(I), vec(omega), vec(v)))
        np.testing.assert_allclose(got, want, atol=1e-12)
        matrix = spatial.spatial_inertia_matrix(mass, vec(mc), six(I))
        np.testing.assert_allclose(matrix @ np.concatenate([omega, v]), want, atol=1e-12)
        np.testing.assert_array_equal(matrix, matrix.T)
        assert np.linalg.eigvalsh(matrix).min() > 0


def test_body_force_is_newton_euler_with_the_6x6_matrices():
    """F = I Vdot - ad_V^T (I V) (Lynch & Park eq. 8.42)."""
    for _ in range(10):
        _, _, (mass, mc, I) = point_body()
        V, Vdot = RNG.normal(size=6), RNG.normal(size=6)
        G = spatial.spatial_inertia_matrix(mass, vec(mc), six(I))
        want = G @ Vdot - ad(V[:3], V[3:]).T @ G @ V
        got = np.concatenate(spatial.body_force(mass, vec(mc), six(I), vec(V[:3]), vec(V[3:]), vec(Vdot[:3]),
                                                vec(Vdot[3:])))
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_inertia_to_parent_is_the_same_point_masses_seen_from_the_parent():
    """Steiner's theorem: the parameters of the points r' = R r + p, summed afresh, and Ad^T G Ad."""
    for _ in range(10):
        masses, points, (mass, mc, I) = point_body()
        R, p = random_rotation(), RNG.normal(size=3)
        moved = points @ R.T + p
        want_mc = (masses[:, None] * moved).sum(axis=0)
        want_I = sum(m * (r @ r * np.eye(3) - np.outer(r, r)) for m, r in zip(masses, moved))
        got_mc, got_I = spatial.inertia_to_parent(mass, vec(mc), six(I), rot(R), vec(p))
        np.testing.assert_allclose(got_mc, want_mc, atol=1e-12)
        np.testing.assert_allclose(got_I, six(want_I), atol=1e-12)
        # the same as the congruence G_parent = Ad_{T^-1}^T G Ad_{T^-1} (eq. 8.42)
        X = adjoint(R.T, -R.T @ p)
        G_parent = X.T @ spatial.spatial_inertia_matrix(mass, vec(mc), six(I)) @ X
        np.testing.assert_allclose(spatial.spatial_inertia_matrix(mass, got_mc, got_I), G_parent, atol=1e-11)
