"""Small 3-D and spatial-algebra helpers used inside the compiled kernels.

Conventions (Lynch & Park ch. 8-9; Featherstone):

- 3-vectors are tuples ``(x, y, z)`` and rotation matrices are row-major 9-tuples, so the
  kernels keep them in registers instead of allocating small arrays.
- A spatial motion vector (twist) is ``[angular; linear]`` = ``(omega, v)``, where ``v`` is the
  velocity of the body-fixed point at the frame origin.  A spatial force (wrench) is
  ``[moment; force]`` = ``(n, f)`` with the moment taken about the frame origin.
- A rigid body's inertia is stored as its ten inertial parameters about the frame origin:
  mass ``m``, first moment ``mc = m c`` (``c`` the centre of mass) and the rotational inertia
  ``Ibar = Ic - m [c]^2`` about the origin (parallel-axis theorem, Lynch & Park eq. 8.26 /
  Spong eq. 6.55).  Its six independent entries are ordered ``xx, xy, xz, yy, yz, zz``.
"""

import math

import numpy as np

from .jit import njit


@njit
def add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit
def sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit
def scale(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


@njit
def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit
def cross(a, b):
    """``a x b``, the matrix ``[a]`` of Lynch & Park eq. 3.30 applied to ``b``."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit
def rotate(R, v):
    """``R v`` for a row-major 9-tuple ``R``."""
    return (
        R[0] * v[0] + R[1] * v[1] + R[2] * v[2],
        R[3] * v[0] + R[4] * v[1] + R[5] * v[2],
        R[6] * v[0] + R[7] * v[1] + R[8] * v[2],
    )


@njit
def rotate_back(R, v):
    """``R^T v``: a vector given in the parent frame, expressed in the child frame."""
    return (
        R[0] * v[0] + R[3] * v[1] + R[6] * v[2],
        R[1] * v[0] + R[4] * v[1] + R[7] * v[2],
        R[2] * v[0] + R[5] * v[1] + R[8] * v[2],
    )


@njit
def compose(A, B):
    """The rotation product ``A B``."""
    return (
        A[0] * B[0] + A[1] * B[3] + A[2] * B[6],
        A[0] * B[1] + A[1] * B[4] + A[2] * B[7],
        A[0] * B[2] + A[1] * B[5] + A[2] * B[8],
        A[3] * B[0] + A[4] * B[3] + A[5] * B[6],
        A[3] * B[1] + A[4] * B[4] + A[5] * B[7],
        A[3] * B[2] + A[4] * B[5] + A[5] * B[8],
        A[6] * B[0] + A[7] * B[3] + A[8] * B[6],
        A[6] * B[1] + A[7] * B[4] + A[8] * B[7],
        A[6] * B[2] + A[7] * B[5] + A[8] * B[8],
    )


@njit
def axis_angle(axis, angle):
    """Rodrigues' formula ``Rot(w, th) = I + sin th [w] + (1 - cos th) [w]^2`` (Lynch & Park eq. 3.51)."""
    x, y, z = axis
    s = math.sin(angle)
    c = 1.0 - math.cos(angle)
    return (
        1.0 - c * (y * y + z * z), -s * z + c * x * y, s * y + c * x * z,
        s * z + c * x * y, 1.0 - c * (x * x + z * z), -s * x + c * y * z,
        -s * y + c * x * z, s * x + c * y * z, 1.0 - c * (x * x + y * y),
    )


@njit
def motion_to_child(R, p, omega, v):
    """A motion vector (twist or acceleration) of the parent frame, in the child frame: ``Ad_{T_{child,parent}} V``.

    ``(R, p)`` is the child frame's orientation and origin in the parent frame (Lynch & Park eq. 3.83
    with ``T_{child,parent} = T^-1``): ``(R^T w, R^T (v + w x p))``.
    """
    return rotate_back(R, omega), rotate_back(R, add(v, cross(omega, p)))


@njit
def motion_cross(omega, v, w, u):
    """``[ad_V] A = (omega x w, omega x u + v x w)``: the Lie bracket of the twist ``V = (omega, v)``
    with the motion ``A = (w, u)`` (Lynch & Park eq. 8.38)."""
    return cross(omega, w), add(cross(omega, u), cross(v, w))


@njit
def inertia_times(mass, mc, Ibar, omega, v):
    """The spatial momentum ``I V = (Ibar w + mc x v, m v - mc x w)`` of a body moving with twist ``(w, v)``.

    This is the 6x6 spatial inertia of Lynch & Park eq. 8.32, written out for inertia taken
    about the frame origin rather than the centre of mass; it is linear in ``(m, mc, Ibar)``.
    """
    xx, xy, xz, yy, yz, zz = Ibar
    angular = (
        xx * omega[0] + xy * omega[1] + xz * omega[2],
        xy * omega[0] + yy * omega[1] + yz * omega[2],
        xz * omega[0] + yz * omega[1] + zz * omega[2],
    )
    return add(angular, cross(mc, v)), sub(scale(v, mass), cross(mc, omega))


@njit
def body_force(mass, mc, Ibar, omega, v, alpha, a):
    """Newton-Euler for one body: ``F = I Vdot - ad_V^T (I V)`` (Lynch & Park eqs. 9.42, 9.56).

    ``(alpha, a)`` is the spatial acceleration and ``(omega, v)`` the twist, both in the body
    frame; ``-ad_V^T`` is the force cross product ``V x* (n, f) = (w x n + v x f, w x f)``.
    """
    momentum_n, momentum_f = inertia_times(mass, mc, Ibar, omega, v)
    inertial_n, inertial_f = inertia_times(mass, mc, Ibar, alpha, a)
    n = add(inertial_n, add(cross(omega, momentum_n), cross(v, momentum_f)))
    f = add(inertial_f, cross(omega, momentum_f))
    return n, f


@njit
def force_to_parent(R, p, n, f):
    """Express a wrench given in a child frame in its parent frame: ``F_p = Ad_T^T F`` (eq. 8.50).

    ``(R, p)`` is the child frame's orientation and origin in the parent frame.
    """
    f_parent = rotate(R, f)
    return add(rotate(R, n), cross(p, f_parent)), f_parent


@njit
def inertia_to_parent(mass, mc, Ibar, R, p):
    """The ten inertial parameters of a body, re-expressed about a parent frame's origin.

    With ``mc' = R mc + m p``: ``Ibar' = R Ibar R^T + 2 (Rmc . p) I - Rmc p^T - p Rmc^T + m (|p|^2 I - p p^T)``,
    i.e. Steiner's theorem ``-sum m [r'][r']`` for ``r' = R r + p`` (Lynch & Park eq. 8.26, 8.42).
    """
    xx, xy, xz, yy, yz, zz = Ibar
    # R Ibar R^T, row by row: (R Ibar) then times R^T.
    a0 = R[0] * xx + R[1] * xy + R[2] * xz
    a1 = R[0] * xy + R[1] * yy + R[2] * yz
    a2 = R[0] * xz + R[1] * yz + R[2] * zz
    b0 = R[3] * xx + R[4] * xy + R[5] * xz
    b1 = R[3] * xy + R[4] * yy + R[5] * yz
    b2 = R[3] * xz + R[4] * yz + R[5] * zz
    c0 = R[6] * xx + R[7] * xy + R[8] * xz
    c1 = R[6] * xy + R[7] * yy + R[8] * yz
    c2 = R[6] * xz + R[7] * yz + R[8] * zz
    rotated = (
        a0 * R[0] + a1 * R[1] + a2 * R[2],
        a0 * R[3] + a1 * R[4] + a2 * R[5],
        a0 * R[6] + a1 * R[7] + a2 * R[8],
        b0 * R[3] + b1 * R[4] + b2 * R[5],
        b0 * R[6] + b1 * R[7] + b2 * R[8],
        c0 * R[6] + c1 * R[7] + c2 * R[8],
    )
    Rmc = rotate(R, mc)
    mcp = 2.0 * dot(Rmc, p)
    pp = mass * dot(p, p)
    shifted = (
        rotated[0] + mcp - 2.0 * Rmc[0] * p[0] + pp - mass * p[0] * p[0],
        rotated[1] - Rmc[0] * p[1] - p[0] * Rmc[1] - mass * p[0] * p[1],
        rotated[2] - Rmc[0] * p[2] - p[0] * Rmc[2] - mass * p[0] * p[2],
        rotated[3] + mcp - 2.0 * Rmc[1] * p[1] + pp - mass * p[1] * p[1],
        rotated[4] - Rmc[1] * p[2] - p[1] * Rmc[2] - mass * p[1] * p[2],
        rotated[5] + mcp - 2.0 * Rmc[2] * p[2] + pp - mass * p[2] * p[2],
    )
    return add(Rmc, scale(p, mass)), shifted


@njit
def spatial_inertia_matrix(mass, mc, Ibar):
    """The 6x6 spatial inertia ``[[Ibar, [mc]], [[mc]^T, m 1]]`` about the frame origin (Lynch & Park eq. 8.32)."""
    I = np.zeros((6, 6))
    I[0, 0], I[0, 1], I[0, 2] = Ibar[0], Ibar[1], Ibar[2]
    I[1, 0], I[1, 1], I[1, 2] = Ibar[1], Ibar[3], Ibar[4]
    I[2, 0], I[2, 1], I[2, 2] = Ibar[2], Ibar[4], Ibar[5]
    skew = ((0.0, -mc[2], mc[1]), (mc[2], 0.0, -mc[0]), (-mc[1], mc[0], 0.0))
    for r in range(3):
        I[3 + r, 3 + r] = mass
        for c in range(3):
            I[r, 3 + c] = skew[r][c]
            I[3 + c, r] = skew[r][c]
    return I
