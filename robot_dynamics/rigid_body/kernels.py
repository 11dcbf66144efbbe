"""The compiled layer that dynamics, kinematics, the regressor and the simulator build on.

Each kernel walks the model's flat ``topology``/``bodies`` arrays (``model.py``) body by body,
parents before children, on one state ``k`` of a ``(count, n)`` batch; the batch loops live in
the modules above.  This module imports only ``model.py`` (column names), ``spatial.py`` and
``cholesky.py``; the external wrenches' kernels are in ``wrenches.py``, the batch shapes in ``batches.py``.

Coordinates and joints: a body's joint value is ``q_joint = sum_m factor_m q[master_m] + offset``,
one row of ``q_joints = E q + o``; its rate is ``E qd`` and a joint force ``tau_joint`` reaches the
coordinates as ``E^T tau_joint`` (:func:`add_joint_force`).  Hence ``M = E^T M_joints E``.

Scratch arrays are passed in (allocated once per batch), so a kernel allocates nothing per state.
Per-coordinate terms (a diagonal ``a``, as in ``M += diag(a)``, ``tau += a qdd``) enter where the
kernels reach coordinate space: after :func:`to_coordinates` in :func:`newton_euler` and at the end
of :func:`composite_rigid_body`.
"""

import numpy as np

from ..jit import inline, njit, uncached
from .model import (
    FIRST_FACTOR, FIRST_MASTER, FIRST_MOMENT, INERTIA, KIND, MASS, MASTERS, OFFSET, ORIGIN_P,
    ORIGIN_R, PARENT, REVOLUTE, SCREW,
)
from .cholesky import cholesky_solve
from ..spatial import (
    add, axis_angle, body_force, compose, cross, dot, force_to_parent, inertia_times, inertia_to_parent,
    motion_to_child, rotate, scale, sub,
)


ZERO3 = (0.0, 0.0, 0.0)
POSE_COLUMNS = 12  # a pose row: rotation (row-major), then origin
_R, _P, _W, _U = ORIGIN_R.start, ORIGIN_P.start, SCREW.start, SCREW.start + 3
assert FIRST_MOMENT.start == MASS + 1 and INERTIA.start == MASS + 4  # the ten parameters are contiguous


# ----------------------------------------------------------------------------- reading rows

@uncached
def vec(rows, i, start):
    return (rows[i, start], rows[i, start + 1], rows[i, start + 2])


@uncached
def store(rows, i, start, v):
    rows[i, start] = v[0]
    rows[i, start + 1] = v[1]
    rows[i, start + 2] = v[2]


@uncached
def rotation(rows, i, start):
    r = rows[i]
    return (r[start], r[start + 1], r[start + 2], r[start + 3], r[start + 4], r[start + 5],
            r[start + 6], r[start + 7], r[start + 8])


@njit
def pose(poses, i):
    """``(R, p)`` of pose row ``i``."""
    return rotation(poses, i, 0), vec(poses, i, 9)


@njit
def store_pose(poses, i, R, p):
    for c in range(9):
        poses[i, c] = R[c]
    store(poses, i, 9, p)


@njit
def screw(bodies, i):
    """Body ``i``'s joint screw ``A_i = (w, u)`` in its own frame."""
    return vec(bodies, i, _W), vec(bodies, i, _U)


@uncached
def inertia(rows, i, start):
    """``(m, mc, Ibar)`` (``spatial.py``'s convention) from the ten inertial parameters of row ``i``
    that begin at column ``start`` (``MASS`` in ``bodies``)."""
    r = rows[i]
    return (r[start], (r[start + 1], r[start + 2], r[start + 3]),
            (r[start + 4], r[start + 5], r[start + 6], r[start + 7], r[start + 8], r[start + 9]))


@inline
def finite(x, k):
    """Whether state ``k`` of ``x`` is all finite (an absent ``x`` is).

    ``sum(x * 0) == 0`` unless a NaN or inf makes it NaN: one pass without a branch per value,
    measured faster than ``math.isfinite`` on each (0.02-0.03 us per state for q, qd, qdd).
    Callers raise with a literal message: a message built at run time would cost an unpickling
    on every call, not only on failure.
    """
    if x.shape[0] == 0:
        return True
    zero = 0.0
    for value in x[k]:
        zero += value * 0.0
    return zero == 0.0


NO_STATE = np.empty((0, 0))
"""An absent ``q``, ``qd`` or ``qdd`` (0 states): what :func:`check_motion` skips and a kernel passes for
"no velocity" or "no acceleration"."""


@inline
def check_motion(q, qd, qdd, k):
    """ValueError naming the first of ``q``, ``qd``, ``qdd`` whose state ``k`` is not finite (:func:`finite`)."""
    if not finite(q, k):
        raise ValueError("q contains NaN or inf")
    if not finite(qd, k):
        raise ValueError("qd contains NaN or inf")
    if not finite(qdd, k):
        raise ValueError("qdd contains NaN or inf")


# ----------------------------------------------------------------------------- coordinates -> joints

# The hot loops call these for every body or pair of bodies.  Inlined, and with a branch for
# models whose joints all follow one coordinate (topology one master wide), they cost what a
# plain ``q[coordinate]`` did; a call, or the general loop alone, made CRBA twice as slow
# (measured).  Newton-Euler keeps them out of its body loops altogether: it expands the state to
# the joints once (:func:`joint_motion`) and maps the joint forces back once (:func:`to_coordinates`).
@inline
def joint_value(topology, bodies, q, k, i):
    """Row ``i`` of ``q_joints = E q + o`` for state ``k``."""
    if topology.shape[1] == FIRST_MASTER + 1:
        return bodies[i, FIRST_FACTOR] * q[k, topology[i, FIRST_MASTER]] + bodies[i, OFFSET]
    value = bodies[i, OFFSET]
    for m in range(topology[i, MASTERS]):
        value += bodies[i, FIRST_FACTOR + m] * q[k, topology[i, FIRST_MASTER + m]]
    return value


@inline
def joint_rate(topology, bodies, x, k, i):
    """Row ``i`` of ``E x`` (a rate or an acceleration) for state ``k``; 0 if ``x`` is absent."""
    if x.shape[0] == 0:
        return 0.0
    if topology.shape[1] == FIRST_MASTER + 1:
        return bodies[i, FIRST_FACTOR] * x[k, topology[i, FIRST_MASTER]]
    value = 0.0
    for m in range(topology[i, MASTERS]):
        value += bodies[i, FIRST_FACTOR + m] * x[k, topology[i, FIRST_MASTER + m]]
    return value


@inline
def add_joint_force(topology, bodies, i, value, tau):
    """``tau += E^T e_i value``: joint ``i``'s generalised force shared among its master coordinates."""
    if topology.shape[1] == FIRST_MASTER + 1:
        tau[topology[i, FIRST_MASTER]] += bodies[i, FIRST_FACTOR] * value
        return
    for m in range(topology[i, MASTERS]):
        tau[topology[i, FIRST_MASTER + m]] += bodies[i, FIRST_FACTOR + m] * value


@inline
def joint_motion(topology, bodies, q, qd, qdd, k, joints):
    """``joints[i] = (q_i, qd_i, qdd_i)``: rows of ``E q + o``, ``E qd``, ``E qdd`` for state ``k``
    (0 where ``qd``/``qdd`` are absent)."""
    if topology.shape[1] == FIRST_MASTER + 1:  # one master each, tested once, not per joint (measured)
        for i in range(topology.shape[0]):
            master, factor = topology[i, FIRST_MASTER], bodies[i, FIRST_FACTOR]
            joints[i, 0] = factor * q[k, master] + bodies[i, OFFSET]
            joints[i, 1] = factor * qd[k, master] if qd.shape[0] > 0 else 0.0
            joints[i, 2] = factor * qdd[k, master] if qdd.shape[0] > 0 else 0.0
        return
    for i in range(topology.shape[0]):
        joints[i, 0] = joint_value(topology, bodies, q, k, i)
        joints[i, 1] = joint_rate(topology, bodies, qd, k, i)
        joints[i, 2] = joint_rate(topology, bodies, qdd, k, i)


@njit
def to_coordinates(topology, bodies, joint_forces, tau):
    """``tau = E^T tau_joints``."""
    tau[:] = 0.0
    for i in range(topology.shape[0]):
        add_joint_force(topology, bodies, i, joint_forces[i], tau)


@inline
def add_joint_pair(topology, bodies, i, j, value, M):
    """``M += E^T (e_i e_j^T value) E``: the joint-space entry ``(i, j)`` of a matrix, on the coordinates."""
    if topology.shape[1] == FIRST_MASTER + 1:
        M[topology[i, FIRST_MASTER], topology[j, FIRST_MASTER]] += bodies[i, FIRST_FACTOR] * value * bodies[j, FIRST_FACTOR]
        return
    for a in range(topology[i, MASTERS]):
        scaled = bodies[i, FIRST_FACTOR + a] * value
        row = topology[i, FIRST_MASTER + a]
        for b in range(topology[j, MASTERS]):
            M[row, topology[j, FIRST_MASTER + b]] += scaled * bodies[j, FIRST_FACTOR + b]


# ----------------------------------------------------------------------------- poses

@inline
def joint_pose(topology, bodies, i, value):
    """``T_{parent,i} = M_i e^{[A_i] q_i}`` (Lynch & Park eq. 9.53): rotation about or translation
    along the joint axis, after the fixed origin ``M_i``."""
    R0, p0 = rotation(bodies, i, _R), vec(bodies, i, _P)
    w, u = screw(bodies, i)
    if topology[i, KIND] == REVOLUTE:
        return compose(R0, axis_angle(w, value)), p0
    return R0, add(p0, scale(rotate(R0, u), value))


@njit
def joint_poses(topology, bodies, q, k, poses):
    """Every body's ``T_{parent,i}`` (:func:`joint_pose`) for state ``k``, into ``poses``."""
    for i in range(topology.shape[0]):
        R, p = joint_pose(topology, bodies, i, joint_value(topology, bodies, q, k, i))
        store_pose(poses, i, R, p)


@njit
def world_poses(topology, poses, world):
    """Each body frame's pose in the root frame: ``T_{0,i} = T_{0,parent} T_{parent,i}``."""
    for i in range(topology.shape[0]):
        R, p = pose(poses, i)
        parent = topology[i, PARENT]
        if parent >= 0:
            R_parent, p_parent = pose(world, parent)
            R, p = compose(R_parent, R), add(rotate(R_parent, p), p_parent)
        store_pose(world, i, R, p)


# ----------------------------------------------------------------------------- Newton-Euler

@njit
def workspace(nb):
    """Scratch of :func:`newton_euler` for ``nb`` bodies: poses, twists, accelerations, wrenches and
    the joints' ``(q, qd, qdd, tau)``."""
    return np.empty((nb, POSE_COLUMNS)), np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 4))


@njit
def newton_euler(topology, bodies, gravity, q, qd, qdd, k, scratch, tau):
    """Recursive Newton-Euler inverse dynamics of state ``k`` (Lynch & Park §9.3, eqs. 9.53-9.57):
    the joints' ``q_i, qd_i, qdd_i`` (``E q + o``, ``E qd``, ``E qdd``), their poses (9.53), then
    :func:`newton_euler_recursions`, and ``tau = E^T tau_joints``.  ``qd``/``qdd`` may have no rows:
    zero (``x[:0]``, a view of the same type, shares one compiled version; gravity passes a constant
    instead, see ``dynamics.py``).  ``scratch`` is a :func:`workspace`; ``T_{parent,i}``, ``V_i`` and
    ``Vdot_i`` are left in it.
    """
    poses, twists, accelerations, wrenches, joints = scratch
    joint_motion(topology, bodies, q, qd, qdd, k, joints)
    poses_of_joints(topology, bodies, joints, poses)
    newton_euler_recursions(topology, bodies, gravity, poses, joints, twists, accelerations, wrenches)
    to_coordinates(topology, bodies, joints[:, 3], tau)


@inline
def poses_of_joints(topology, bodies, joints, poses):
    """Every body's ``T_{parent,i} = M_i e^{[A_i] q_i}`` (eq. 9.53) from the joint values ``joints[:, 0]``."""
    for i in range(topology.shape[0]):
        R, p = joint_pose(topology, bodies, i, joints[i, 0])
        store_pose(poses, i, R, p)


@inline
def newton_euler_recursions(topology, bodies, gravity, poses, joints, twists, accelerations, wrenches):
    """The two recursions of Newton-Euler on given poses ``T_{parent,i}`` and joint rates
    ``joints[:, 1]``, accelerations ``joints[:, 2]``; the joint forces go to ``joints[:, 3]``.

    Forward, from the root: ``V_i = Ad_{T_{i,parent}} V_parent + A_i qd_i`` (9.54) and
    ``Vdot_i = Ad_{T_{i,parent}} Vdot_parent + [ad_{V_i}] A_i qd_i + A_i qdd_i`` (9.55), from
    ``V_0 = 0, Vdot_0 = (0, -g)``: gravity enters once, as a fictitious base acceleration.
    Backward, from the leaves: ``F_i = G_i Vdot_i - ad_{V_i}^T G_i V_i + sum_children Ad^T F_child``
    (9.56) and ``tau_i = A_i^T F_i`` (9.57).  Inlined: one compiled loop per caller, as fast as one function.
    """
    nb = topology.shape[0]
    # One loop per equation: measured faster than a single fused forward loop.
    for i in range(nb):
        R, p = pose(poses, i)
        parent = topology[i, PARENT]
        if parent < 0:
            omega, v, alpha, a = ZERO3, ZERO3, ZERO3, scale((gravity[0], gravity[1], gravity[2]), -1.0)
        else:
            omega, v = vec(twists, parent, 0), vec(twists, parent, 3)
            alpha, a = vec(accelerations, parent, 0), vec(accelerations, parent, 3)
        omega, v = motion_to_child(R, p, omega, v)
        alpha, a = motion_to_child(R, p, alpha, a)
        w, u = screw(bodies, i)
        rate, acceleration = joints[i, 1], joints[i, 2]
        # [ad_V] A = (omega x w, omega x u + v x w) with the zero half of A left out (measured faster)
        if topology[i, KIND] == REVOLUTE:  # A = (w, 0)
            omega = add(omega, scale(w, rate))
            alpha = add(alpha, add(scale(cross(omega, w), rate), scale(w, acceleration)))
            a = add(a, scale(cross(v, w), rate))
        else:  # A = (0, u)
            v = add(v, scale(u, rate))
            a = add(a, add(scale(cross(omega, u), rate), scale(u, acceleration)))
        store(twists, i, 0, omega)
        store(twists, i, 3, v)
        store(accelerations, i, 0, alpha)
        store(accelerations, i, 3, a)
    for i in range(nb):
        mass, mc, Ibar = inertia(bodies, i, MASS)
        n, f = body_force(mass, mc, Ibar, vec(twists, i, 0), vec(twists, i, 3),
                          vec(accelerations, i, 0), vec(accelerations, i, 3))
        store(wrenches, i, 0, n)
        store(wrenches, i, 3, f)
    for i in range(nb - 1, -1, -1):
        n, f = vec(wrenches, i, 0), vec(wrenches, i, 3)
        w, u = screw(bodies, i)
        joints[i, 3] = dot(w, n) + dot(u, f)  # A_i^T F_i, both halves: an overflowed force gives NaN, never 0
        add_to_parent(topology, poses, wrenches, i, n, f)


@inline
def add_to_parent(topology, poses, rows, i, n, f):
    """``rows[parent] += Ad_T^T (n, f)`` (eq. 9.56's sum over the children): body ``i``'s wrench, or
    momentum, added to its parent's in the parent's frame; nothing for a root body."""
    parent = topology[i, PARENT]
    if parent >= 0:
        R, p = pose(poses, i)
        n, f = force_to_parent(R, p, n, f)
        for c in range(3):
            rows[parent, c] += n[c]
            rows[parent, 3 + c] += f[c]


# ----------------------------------------------------------------------------- mass matrix

@njit
def composite_rigid_body(topology, bodies, armature, poses, composite, M):
    """The mass matrix by the composite-rigid-body algorithm: ``M_ij = A_i^T I^C_i (X A_j)`` for ``j``
    an ancestor of ``i`` (or ``i`` itself), on the coordinates ``E^T M_joints E``, plus the rotors'
    ``diag(armature)`` (Spong Ex. 6.1: ``I = r^2 J_m + J_l``).

    ``I^C_i`` is the inertia of the subtree rooted at body ``i`` (Featherstone's CRBA; the matrix
    it fills is Lynch & Park's ``M = A^T L^T G L A`` of eq. 9.82, read column by column).
    ``poses`` holds every ``T_{parent,i}``; ``composite`` is ``(nb, 10)`` scratch.
    """
    nb = topology.shape[0]
    for i in range(nb):  # element by element: a slice copy would compile numba's shape-mismatch message (~2 s)
        for c in range(10):
            composite[i, c] = bodies[i, MASS + c]
    for i in range(nb - 1, -1, -1):
        parent = topology[i, PARENT]
        if parent >= 0:
            mass, mc, Ibar = inertia(composite, i, 0)
            R, p = pose(poses, i)
            mc, Ibar = inertia_to_parent(mass, mc, Ibar, R, p)
            composite[parent, 0] += mass
            for c in range(3):
                composite[parent, 1 + c] += mc[c]
            for c in range(6):
                composite[parent, 4 + c] += Ibar[c]
    M[:, :] = 0.0
    for i in range(nb):
        mass, mc, Ibar = inertia(composite, i, 0)
        w, u = screw(bodies, i)
        n, f = inertia_times(mass, mc, Ibar, w, u)  # F = I^C_i A_i, carried down to the root
        add_joint_pair(topology, bodies, i, i, dot(w, n) + dot(u, f), M)
        j = i
        while topology[j, PARENT] >= 0:
            R, p = pose(poses, j)
            n, f = force_to_parent(R, p, n, f)
            j = topology[j, PARENT]
            w, u = screw(bodies, j)
            value = dot(w, n) + dot(u, f)
            add_joint_pair(topology, bodies, i, j, value, M)
            add_joint_pair(topology, bodies, j, i, value, M)
    for c in range(armature.shape[0]):
        M[c, c] += armature[c]


# ----------------------------------------------------------------------------- world frames, Jacobian columns

@njit
def point_in_world(world, body, point):
    """World coordinates of ``point``, given in the frame of ``body``."""
    R, p = pose(world, body)
    return add(rotate(R, point), p)


@njit
def jacobian_column(bodies, world, j, origin):
    """Joint ``j``'s world screw taken about the world point ``o``: ``(R w, R u + R w x (o - p_j))``,
    the space-Jacobian column of Lynch & Park eq. 5.11 moved to ``o``."""
    R, p = pose(world, j)
    w, u = screw(bodies, j)
    w, u = rotate(R, w), rotate(R, u)
    return w, add(u, cross(w, sub(origin, p)))


@inline
def add_frame_jacobian(topology, bodies, world, body, origin, J):
    """``J += J_o``, the world-aligned Jacobian ``(6, n)`` (angular rows first) of the world point
    ``origin`` carried by ``body``: the :func:`jacobian_column` of ``body`` and of each ancestor, on the
    coordinates through the coupling map (``J = J_joints E``, Lynch & Park eq. 5.11)."""
    j = body
    while j >= 0:
        angular, linear = jacobian_column(bodies, world, j, origin)
        for m in range(topology[j, MASTERS]):
            c, factor = topology[j, FIRST_MASTER + m], bodies[j, FIRST_FACTOR + m]
            for r in range(3):
                J[r, c] += factor * angular[r]
                J[3 + r, c] += factor * linear[r]
        j = topology[j, PARENT]


@inline
def world_twist(topology, bodies, world, qd, k, i, twists):
    """Body ``i``'s twist about the world origin, ``V_i = V_parent + S_i qd_i`` (``S_i``: its
    :func:`jacobian_column` at the origin; Lynch & Park eq. 5.11), stored in ``twists[i]`` (the
    parent's already there).  Returns ``S_i`` and ``V_i`` as ``(w, u), (omega, v)``."""
    w, u = jacobian_column(bodies, world, i, ZERO3)
    rate = joint_rate(topology, bodies, qd, k, i)
    omega, v = scale(w, rate), scale(u, rate)
    parent = topology[i, PARENT]
    if parent >= 0:
        omega, v = add(vec(twists, parent, 0), omega), add(vec(twists, parent, 3), v)
    store(twists, i, 0, omega)
    store(twists, i, 3, v)
    return (w, u), (omega, v)


# ----------------------------------------------------------------------------- forward dynamics

@njit
def forward_state(topology, bodies, gravity, armature, q, qd, k, tau, scratch, composite, M, qdd):
    """``qdd = M^-1 (tau - h)`` for state ``k`` into ``qdd``: Newton-Euler for the bias ``h = ID(q, qd, 0)``,
    CRBA for ``M`` (rotors included), a Cholesky solve (Lynch & Park §9.5, eq. 9.89; Featherstone's method of HandC).

    ``scratch`` is a :func:`workspace`.  Returns -1, or the first coordinate at which ``M`` is
    singular.  Leaves the poses of state ``k`` in ``scratch[0]``.
    """
    newton_euler(topology, bodies, gravity, q, qd, qd[:0], k, scratch, qdd)
    for c in range(qdd.shape[0]):
        qdd[c] = tau[c] - qdd[c]
    composite_rigid_body(topology, bodies, armature, scratch[0], composite, M)
    return cholesky_solve(M, qdd)
