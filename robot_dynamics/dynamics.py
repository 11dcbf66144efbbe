"""Inverse and forward dynamics, gravity, bias forces, mass and Coriolis matrices.

The equations of motion of Lynch & Park eq. 8.1 / 9.1 and Spong eq. 6.64::

    tau = M(q) qdd + C(q, qd) qd + g(q)

``g(q)`` is the torque that holds the arm still against gravity (holding torque is +g).
Every public function takes arrays of shape ``(..., n)`` in ``model.joint_names`` order; the
compiled kernels below loop over the flattened batch, so one state and a trajectory of 10 000
states run the same code.

The kernels work in body frames (a body's frame is the URDF frame of its joint's child link)
on the model's flat ``topology``/``bodies`` arrays (see ``model.py``).  Mimic joints are
expanded on the fly: a body's joint value is ``multiplier * q[coordinate] + offset`` and its
generalised force is folded back onto the coordinate times the multiplier (the projection
``G^T tau`` with ``qd_joints = G qd``), so ``M = G^T M_bodies G`` and ``C = G^T C_bodies G``.
"""

import math

import numba
import numpy as np

from .model import COORDINATE, KIND, MASS, MULTIPLIER, OFFSET, PARENT, REVOLUTE
from .spatial import (
    add, axis_angle, body_force, compose, cross, dot, force_to_parent, inertia_times,
    inertia_to_parent, rotate, rotate_back, scale,
)

njit = numba.njit(cache=True)

_FLOAT64 = np.dtype(np.float64)
_ZERO = np.empty((0, 0))  # passed for qd or qdd: "this input is zero" (gravity: rnea(q, 0, 0))


# ----------------------------------------------------------------------------- kernel pieces

@njit
def _origin(bodies, i):
    b = bodies[i]
    return (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8]), (b[9], b[10], b[11])


@njit
def _axis(bodies, i):
    return (bodies[i, 12], bodies[i, 13], bodies[i, 14])


@njit
def _inertia(rows, i, start):
    """(m, h, Ibar) of row ``i``, whose ten inertial parameters begin at column ``start``."""
    p = rows[i]
    return p[start], (p[start + 1], p[start + 2], p[start + 3]), (p[start + 4], p[start + 5], p[start + 6], p[start + 7], p[start + 8], p[start + 9])


@njit
def _vec(rows, i, start):
    return (rows[i, start], rows[i, start + 1], rows[i, start + 2])


@njit
def _store(rows, i, start, v):
    rows[i, start] = v[0]
    rows[i, start + 1] = v[1]
    rows[i, start + 2] = v[2]


@njit
def _rotation(rows, i):
    r = rows[i]
    return (r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8])


@njit
def _joint_rate(topology, bodies, x, k, i):
    """The joint's rate (or acceleration) from the coordinates: ``multiplier * x[coordinate]``; 0 if ``x`` is absent."""
    if x.shape[0] == 0:
        return 0.0
    return bodies[i, MULTIPLIER] * x[k, topology[i, COORDINATE]]


@njit
def _finite(x, k):
    """Whether state ``k`` of ``x`` is all finite (an absent ``x`` is).

    Callers raise with a literal message: a message built at run time would cost an unpickling
    on every call, not only on failure.
    """
    if x.shape[0] > 0:
        for value in x[k]:
            if not math.isfinite(value):
                return False
    return True


@njit
def _joint_poses(topology, bodies, q, k, poses):
    """Each body frame's pose in its parent's frame, ``T_{parent,i} = M_i e^{[A_i] q_i}`` (Lynch & Park eq. 9.53).

    ``poses[i]`` holds the rotation (row-major) and the origin of body ``i`` in its parent frame.
    """
    for i in range(topology.shape[0]):
        R0, p0 = _origin(bodies, i)
        axis = _axis(bodies, i)
        value = bodies[i, MULTIPLIER] * q[k, topology[i, COORDINATE]] + bodies[i, OFFSET]
        if topology[i, KIND] == REVOLUTE:
            R, p = compose(R0, axis_angle(axis, value)), p0
        else:
            R, p = R0, add(p0, scale(rotate(R0, axis), value))
        for c in range(9):
            poses[i, c] = R[c]
        _store(poses, i, 9, p)


@njit
def _world_poses(topology, poses, world):
    """Each body frame's pose in the root frame: ``T_{0,i} = T_{0,parent} T_{parent,i}``."""
    for i in range(topology.shape[0]):
        R, p = _rotation(poses, i), _vec(poses, i, 9)
        parent = topology[i, PARENT]
        if parent >= 0:
            Rp = _rotation(world, parent)
            R, p = compose(Rp, R), add(rotate(Rp, p), _vec(world, parent, 9))
        for c in range(9):
            world[i, c] = R[c]
        _store(world, i, 9, p)


@njit
def _motion(topology, bodies, gravity, qd, qdd, k, poses, twists, accelerations):
    """Forward recursion of the Newton-Euler algorithm (Lynch & Park eqs. 9.54-9.55).

    ``V_i = Ad_{T_{i,parent}} V_parent + A_i qd_i`` and
    ``Vdot_i = Ad_{T_{i,parent}} Vdot_parent + ad_{V_i} A_i qd_i + A_i qdd_i``, in body frames,
    starting from ``Vdot_0 = (0, -g)``: gravity enters once, as a fictitious base acceleration.
    """
    for i in range(topology.shape[0]):
        R, p = _rotation(poses, i), _vec(poses, i, 9)
        parent = topology[i, PARENT]
        if parent < 0:
            omega_p = v_p = alpha_p = (0.0, 0.0, 0.0)
            a_p = scale((gravity[0], gravity[1], gravity[2]), -1.0)
        else:
            omega_p, v_p = _vec(twists, parent, 0), _vec(twists, parent, 3)
            alpha_p, a_p = _vec(accelerations, parent, 0), _vec(accelerations, parent, 3)
        omega = rotate_back(R, omega_p)
        v = rotate_back(R, add(v_p, cross(omega_p, p)))
        alpha = rotate_back(R, alpha_p)
        a = rotate_back(R, add(a_p, cross(alpha_p, p)))
        axis = _axis(bodies, i)
        joint_velocity = scale(axis, _joint_rate(topology, bodies, qd, k, i))
        joint_acceleration = scale(axis, _joint_rate(topology, bodies, qdd, k, i))
        if topology[i, KIND] == REVOLUTE:
            omega = add(omega, joint_velocity)
            alpha = add(alpha, add(joint_acceleration, cross(omega, joint_velocity)))
            a = add(a, cross(v, joint_velocity))
        else:
            v = add(v, joint_velocity)
            a = add(a, add(joint_acceleration, cross(omega, joint_velocity)))
        _store(twists, i, 0, omega)
        _store(twists, i, 3, v)
        _store(accelerations, i, 0, alpha)
        _store(accelerations, i, 3, a)


@njit
def _joint_force(topology, bodies, i, n, f):
    """The generalised force of body ``i``'s joint, ``tau_i = A_i^T F_i`` (Lynch & Park eq. 9.57)."""
    if topology[i, KIND] == REVOLUTE:
        return dot(_axis(bodies, i), n)
    return dot(_axis(bodies, i), f)


@njit
def _rnea_state(topology, bodies, gravity, q, qd, qdd, k, poses, twists, accelerations, wrenches, tau):
    """Recursive Newton-Euler inverse dynamics for state ``k`` (Lynch & Park §9.3, eqs. 9.53-9.57).

    Backward recursion: ``F_i = G_i Vdot_i - ad_{V_i}^T G_i V_i + Ad_{T_{child,i}}^T F_child``.
    """
    _joint_poses(topology, bodies, q, k, poses)
    _motion(topology, bodies, gravity, qd, qdd, k, poses, twists, accelerations)
    for i in range(topology.shape[0]):
        mass, h, Ibar = _inertia(bodies, i, MASS)
        n, f = body_force(mass, h, Ibar, _vec(twists, i, 0), _vec(twists, i, 3),
                          _vec(accelerations, i, 0), _vec(accelerations, i, 3))
        _store(wrenches, i, 0, n)
        _store(wrenches, i, 3, f)
    tau[:] = 0.0
    for i in range(topology.shape[0] - 1, -1, -1):
        n, f = _vec(wrenches, i, 0), _vec(wrenches, i, 3)
        tau[topology[i, COORDINATE]] += bodies[i, MULTIPLIER] * _joint_force(topology, bodies, i, n, f)
        parent = topology[i, PARENT]
        if parent >= 0:
            n, f = force_to_parent(_rotation(poses, i), _vec(poses, i, 9), n, f)
            for c in range(3):
                wrenches[parent, c] += n[c]
                wrenches[parent, 3 + c] += f[c]


@njit
def _crba_state(topology, bodies, poses, composite, M):
    """Composite-rigid-body algorithm: ``M_ij = A_i^T I^C_i (X A_j)`` for ``j`` an ancestor of ``i``.

    ``I^C_i`` is the inertia of the subtree rooted at body ``i`` (Featherstone's CRBA; the
    matrix it fills is Lynch & Park's ``M = A^T L^T G L A`` of eq. 9.82, read column by column).
    """
    nb = topology.shape[0]
    composite[:, :] = bodies[:, MASS:MASS + 10]
    for i in range(nb - 1, -1, -1):
        parent = topology[i, PARENT]
        if parent >= 0:
            mass, h, Ibar = _inertia(composite, i, 0)
            h, Ibar = inertia_to_parent(mass, h, Ibar, _rotation(poses, i), _vec(poses, i, 9))
            composite[parent, 0] += mass
            for c in range(3):
                composite[parent, 1 + c] += h[c]
            for c in range(6):
                composite[parent, 4 + c] += Ibar[c]
    M[:, :] = 0.0
    for i in range(nb):
        mass, h, Ibar = _inertia(composite, i, 0)
        axis = _axis(bodies, i)
        if topology[i, KIND] == REVOLUTE:
            n, f = inertia_times(mass, h, Ibar, axis, (0.0, 0.0, 0.0))
        else:
            n, f = inertia_times(mass, h, Ibar, (0.0, 0.0, 0.0), axis)
        ci, mi = topology[i, COORDINATE], bodies[i, MULTIPLIER]
        M[ci, ci] += mi * mi * _joint_force(topology, bodies, i, n, f)
        j = i
        while topology[j, PARENT] >= 0:
            n, f = force_to_parent(_rotation(poses, j), _vec(poses, j, 9), n, f)
            j = topology[j, PARENT]
            value = mi * bodies[j, MULTIPLIER] * _joint_force(topology, bodies, j, n, f)
            cj = topology[j, COORDINATE]
            M[ci, cj] += value
            M[cj, ci] += value


@njit
def _cholesky_solve(M, b):
    """Solve ``M x = b`` in place by Cholesky ``M = L L^T`` (never forming ``M^-1``).

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
    for r in range(n):  # L y = b
        value = b[r]
        for c in range(r):
            value -= M[r, c] * b[c]
        b[r] = value / M[r, r]
    for r in range(n - 1, -1, -1):  # L^T x = y
        value = b[r]
        for c in range(r + 1, n):
            value -= M[c, r] * b[c]
        b[r] = value / M[r, r]
    return -1


# ----------------------------------------------------------------------------- batch kernels

@njit
def _workspace(topology):
    nb = topology.shape[0]
    return np.empty((nb, 12)), np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6))


@njit
def _gravity(topology, bodies, gravity, q):
    """``g(q) = ID(q, 0, 0)``; its own entry point because each argument costs ~0.1 us at the 1 kHz call."""
    return _rnea(topology, bodies, gravity, q, _ZERO, _ZERO)


@njit
def _bias(topology, bodies, gravity, q, qd):
    """``h(q, qd) = ID(q, qd, 0)``."""
    return _rnea(topology, bodies, gravity, q, qd, _ZERO)


@njit
def _rnea(topology, bodies, gravity, q, qd, qdd):
    count, n = q.shape
    poses, twists, accelerations, wrenches = _workspace(topology)
    tau = np.empty((count, n))
    for k in range(count):
        if not _finite(q, k):
            raise ValueError("q contains NaN or inf")
        if not _finite(qd, k):
            raise ValueError("qd contains NaN or inf")
        if not _finite(qdd, k):
            raise ValueError("qdd contains NaN or inf")
        _rnea_state(topology, bodies, gravity, q, qd, qdd, k, poses, twists, accelerations, wrenches, tau[k])
    return tau


@njit
def _crba(topology, bodies, q):
    count, n = q.shape
    poses, _, _, _ = _workspace(topology)
    composite = np.empty((topology.shape[0], 10))
    M = np.empty((count, n, n))
    for k in range(count):
        if not _finite(q, k):
            raise ValueError("q contains NaN or inf")
        _joint_poses(topology, bodies, q, k, poses)
        _crba_state(topology, bodies, poses, composite, M[k])
    return M


@njit
def _forward_state(topology, bodies, gravity, q, qd, k, tau, poses, twists, accelerations, wrenches, composite, M, qdd):
    """``qdd = M^-1 (tau - h)`` for state ``k`` into ``qdd``: Newton-Euler for ``h``, CRBA for ``M``, a
    Cholesky solve (Lynch & Park §9.5, eq. 9.89; Featherstone's method of HandC).

    Returns -1, or the first joint at which ``M`` is singular.  Leaves ``poses`` of state ``k``.
    """
    _rnea_state(topology, bodies, gravity, q, qd, _ZERO, k, poses, twists, accelerations, wrenches, qdd)
    for c in range(qdd.shape[0]):
        qdd[c] = tau[c] - qdd[c]
    _crba_state(topology, bodies, poses, composite, M)
    return _cholesky_solve(M, qdd)


@njit
def _forward(topology, bodies, gravity, q, qd, tau):
    """Forward dynamics of every state (:func:`_forward_state`); ``(qdd, -1 or the singular joint)``."""
    count, n = q.shape
    poses, twists, accelerations, wrenches = _workspace(topology)
    composite = np.empty((topology.shape[0], 10))
    M = np.empty((n, n))
    qdd = np.empty((count, n))
    for k in range(count):
        if not _finite(q, k):
            raise ValueError("q contains NaN or inf")
        if not _finite(qd, k):
            raise ValueError("qd contains NaN or inf")
        if not _finite(tau, k):
            raise ValueError("tau contains NaN or inf")
        singular = _forward_state(topology, bodies, gravity, q, qd, k, tau[k],
                                  poses, twists, accelerations, wrenches, composite, M, qdd[k])
        if singular >= 0:
            return qdd, singular
    return qdd, -1


# ----------------------------------------------------------------------------- public API

def as_states(model, value, name):
    """``value`` as a C-contiguous float array of shape ``(count, n)`` and its batch shape.

    Raises ValueError on a wrong length.  A single state already in the kernels' layout (the
    1 kHz case) takes the short path: no conversion, no copy.
    """
    if type(value) is np.ndarray and value.dtype == _FLOAT64 and value.shape == (model.nv,) and value.flags.c_contiguous:
        return value[None], ()
    array = np.asarray(value, dtype=np.float64)
    shape = array.shape
    if not shape or shape[-1] != model.nv:
        raise ValueError(f"{name} must have {model.nv} values per state (model.joint_names order), got shape {shape}")
    return np.ascontiguousarray(array.reshape(math.prod(shape[:-1]), model.nv)), shape[:-1]


def _unbatch(result, batch):
    """Give a kernel's ``(count, ...)`` result the caller's batch shape."""
    return result[0] if batch == () else result.reshape(batch + result.shape[1:])


def _matching(model, value, name, batch):
    array, shape = as_states(model, value, name)
    if shape != batch:
        raise ValueError(f"{name} has batch shape {shape} but q has {batch}")
    return array


def inverse_dynamics(model, q, qd, qdd, external_wrenches=None):
    """Joint forces ``tau = M(q) qdd + C(q, qd) qd + g(q) - sum_l J_l^T F_l`` by recursive Newton-Euler.

    Lynch & Park §9.3 (eqs. 9.53-9.57).  ``external_wrenches`` maps a link name to the wrench
    ``[moment; force]`` the environment applies to the robot, in world-aligned axes at the
    link's origin.

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> rd.inverse_dynamics(arm, [0.0, 0.0], [0.0, 0.0], [1.0, 0.0]).round(6)  # M[:, 0] + g(0)
    array([34.43, 11.81])
    """
    q, batch = as_states(model, q, "q")
    tau = _rnea(*model.kernel_arrays, q,
                _matching(model, qd, "qd", batch), _matching(model, qdd, "qdd", batch))
    if external_wrenches:
        tau -= _wrench_torques(model, q, external_wrenches)
    return _unbatch(tau, batch)


def gravity_torques(model, q):
    """The gravity term ``g(q) = ID(q, 0, 0)``: the torque that holds the arm still (Lynch & Park eq. 8.1).

    >>> import robot_dynamics as rd
    >>> pendulum = rd.load_urdf(rd.examples.PENDULUM_URDF)  # 1 kg at 1 m
    >>> rd.gravity_torques(pendulum, [0.5]).round(4)  # m g l sin q
    array([4.7032])
    """
    q, batch = as_states(model, q, "q")
    return _unbatch(_gravity(*model.kernel_arrays, q), batch)


def bias_forces(model, q, qd):
    """``h(q, qd) = C(q, qd) qd + g(q) = ID(q, qd, 0)`` (Lynch & Park eq. 8.2's ``h``).

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF).with_gravity([0, 0, 0])
    >>> rd.bias_forces(arm, [0.0, 0.5], [1.0, 0.0]).round(4)  # (0, m2 L1 L2 sin q2 qd1^2)
    array([0.    , 0.4794])
    """
    q, batch = as_states(model, q, "q")
    qd = _matching(model, qd, "qd", batch)
    return _unbatch(_bias(*model.kernel_arrays, q, qd), batch)


def mass_matrix(model, q):
    """The symmetric positive-definite mass matrix ``M(q)`` by the composite-rigid-body algorithm.

    Lynch & Park eq. 9.82 (``M = A^T L^T G L A``), computed column by column over subtrees.

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)  # m1 = m2 = 1, L1 = L2 = 1 (Lynch & Park §9.1)
    >>> rd.mass_matrix(arm, [0.0, 0.0])
    array([[5., 2.],
           [2., 1.]])
    """
    q, batch = as_states(model, q, "q")
    return _unbatch(_crba(*model.kernel_arrays[:2], q), batch)


def forward_dynamics(model, q, qd, tau, external_wrenches=None):
    """Joint accelerations ``qdd = M(q)^-1 (tau - h(q, qd) + sum_l J_l^T F_l)`` (Lynch & Park §9.5, eq. 9.89).

    ``h`` by Newton-Euler, ``M`` by CRBA, then a Cholesky solve: never an explicit inverse.
    Raises ValueError naming the joint if ``M`` is singular (a joint that moves no mass).

    >>> import robot_dynamics as rd
    >>> pendulum = rd.load_urdf(rd.examples.PENDULUM_URDF)
    >>> rd.forward_dynamics(pendulum, [0.5], [0.0], [0.0]).round(4)  # -g/l sin q
    array([-4.7032])
    """
    q, batch = as_states(model, q, "q")
    tau = _matching(model, tau, "tau", batch)
    if external_wrenches:
        tau = tau + _wrench_torques(model, q, external_wrenches)
    qdd, singular = _forward(*model.kernel_arrays, q, _matching(model, qd, "qd", batch), tau)
    if singular >= 0:
        raise ValueError(
            f"the mass matrix is singular at joint {model.joint_names[singular]!r}: it moves no mass or "
            "inertia (add an <inertial> to the links it moves)"
        )
    return _unbatch(qdd, batch)


def _wrench_torques(model, q, external_wrenches):
    """``sum_l J_l(q)^T F_l``: generalised forces of wrenches applied at links (world-aligned axes, link origin)."""
    from . import kinematics  # kinematics builds on this module's kernels

    arrays = kinematics.wrench_arrays(model, external_wrenches, q.shape[0])
    return kinematics._wrench_torques(*model.kernel_arrays[:2], q, *arrays)


@njit
def _spatial_inertia(mass, h, Ibar):
    """The 6x6 spatial inertia ``[[Ibar, [h]], [[h]^T, m 1]]`` about the frame origin (Lynch & Park eq. 8.32)."""
    I = np.zeros((6, 6))
    I[0, 0], I[0, 1], I[0, 2] = Ibar[0], Ibar[1], Ibar[2]
    I[1, 0], I[1, 1], I[1, 2] = Ibar[1], Ibar[3], Ibar[4]
    I[2, 0], I[2, 1], I[2, 2] = Ibar[2], Ibar[4], Ibar[5]
    skew = ((0.0, -h[2], h[1]), (h[2], 0.0, -h[0]), (-h[1], h[0], 0.0))
    for r in range(3):
        I[3 + r, 3 + r] = mass
        for c in range(3):
            I[r, 3 + c] = skew[r][c]
            I[3 + c, r] = skew[r][c]
    return I


@njit
def _force_cross(omega, v):
    """The matrix of ``V x*`` (``-ad_V^T``, Lynch & Park eq. 8.42): ``[[w], [v]], [0, [w]]]``."""
    X = np.zeros((6, 6))
    for block, u in ((0, omega), (3, v)):
        skew = ((0.0, -u[2], u[1]), (u[2], 0.0, -u[0]), (-u[1], u[0], 0.0))
        for r in range(3):
            for c in range(3):
                if block == 0:
                    X[r, c] = skew[r][c]
                    X[3 + r, 3 + c] = skew[r][c]
                else:
                    X[r, 3 + c] = skew[r][c]
    return X


@njit
def _coriolis(topology, bodies, q, qd):
    """``C = sum_i J_i^T (I_i Jdot_i + (V_i x*) I_i J_i)`` in world coordinates.

    With world-frame inertias ``Idot_i = V_i x* I_i - I_i V_i x``, this choice gives
    ``C qd = h - g`` and ``Mdot = C + C^T``, i.e. ``Mdot - 2C`` skew-symmetric (Spong §6.6.1,
    Lynch & Park eq. 8.1's ``C``).  Grouped by subtrees (``I^C_i``, ``B^C_i``) it reads
    ``C_ji = S_j^T (I^C_i Sdot_i + B^C_i S_i)`` and ``C_ij = S_i^T (I^C_i Sdot_j + B^C_i S_j)`` for
    ``j`` an ancestor of ``i``, where ``S_j`` is joint ``j``'s world screw and ``Sdot_j = V_j x S_j``.
    """
    count, n = q.shape
    nb = topology.shape[0]
    poses, world, twists, accelerations = np.empty((nb, 12)), np.empty((nb, 12)), np.empty((nb, 6)), np.empty((nb, 6))
    screws, screw_rates = np.empty((nb, 6)), np.empty((nb, 6))
    composite, composite_b = np.empty((nb, 6, 6)), np.empty((nb, 6, 6))
    C = np.zeros((count, n, n))
    for k in range(count):
        if not _finite(q, k):
            raise ValueError("q contains NaN or inf")
        if not _finite(qd, k):
            raise ValueError("qd contains NaN or inf")
        _joint_poses(topology, bodies, q, k, poses)
        _world_poses(topology, poses, world)
        _motion(topology, bodies, np.zeros(3), qd, _ZERO, k, poses, twists, accelerations)
        for i in range(nb):
            R, p = _rotation(world, i), _vec(world, i, 9)
            axis = rotate(R, _axis(bodies, i))
            if topology[i, KIND] == REVOLUTE:
                screw = (axis, cross(p, axis))
            else:
                screw = ((0.0, 0.0, 0.0), axis)
            omega = rotate(R, _vec(twists, i, 0))
            v = add(rotate(R, _vec(twists, i, 3)), cross(p, omega))
            rate = (cross(omega, screw[0]), add(cross(omega, screw[1]), cross(v, screw[0])))
            for c in range(3):
                screws[i, c], screws[i, 3 + c] = screw[0][c], screw[1][c]
                screw_rates[i, c], screw_rates[i, 3 + c] = rate[0][c], rate[1][c]
            mass, h, Ibar = _inertia(bodies, i, MASS)
            h, Ibar = inertia_to_parent(mass, h, Ibar, R, p)
            composite[i] = _spatial_inertia(mass, h, Ibar)
            composite_b[i] = _force_cross(omega, v) @ composite[i]
        for i in range(nb - 1, -1, -1):
            parent = topology[i, PARENT]
            if parent >= 0:
                composite[parent] += composite[i]
                composite_b[parent] += composite_b[i]
        for i in range(nb):
            column_i = composite[i] @ screw_rates[i] + composite_b[i] @ screws[i]
            ci, mi = topology[i, COORDINATE], bodies[i, MULTIPLIER]
            j = i
            while j >= 0:
                cj, mj = topology[j, COORDINATE], bodies[j, MULTIPLIER]
                C[k, cj, ci] += mj * mi * np.dot(screws[j], column_i)
                if j != i:
                    row_i = composite[i] @ screw_rates[j] + composite_b[i] @ screws[j]
                    C[k, ci, cj] += mi * mj * np.dot(screws[i], row_i)
                j = topology[j, PARENT]
    return C


def coriolis_matrix(model, q, qd):
    """A Coriolis matrix ``C(q, qd)`` with ``C qd = h - g`` and ``Mdot - 2C`` skew-symmetric (Spong §6.6.1).

    >>> import numpy as np, robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> q, qd = [0.3, 0.5], [1.0, -2.0]
    >>> C = rd.coriolis_matrix(arm, q, qd)
    >>> np.allclose(C @ qd, rd.bias_forces(arm, q, qd) - rd.gravity_torques(arm, q))
    True
    """
    q, batch = as_states(model, q, "q")
    C = _coriolis(*model.kernel_arrays[:2], q, _matching(model, qd, "qd", batch))
    return _unbatch(C, batch)
