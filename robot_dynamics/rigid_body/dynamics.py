"""Inverse and forward dynamics, gravity, bias forces, mass and Coriolis matrices.

The equations of motion of Lynch & Park eq. 8.1 / 9.1 and Spong eq. 6.64::

    tau = M(q) qdd + C(q, qd) qd + g(q)

``g(q)`` is the torque that holds the arm still against gravity (holding torque is +g).
Every public function takes arrays of shape ``(..., n)`` in ``model.joint_names`` order; the
compiled batch loops below run the kernels of ``kernels.py`` on every state, so one state and
a trajectory of 10 000 states run the same code.  Mimic joints follow their coordinates through
``q_joints = E q + o`` (:meth:`RobotModel.joint_map`), so ``M = E^T M_joints E`` and
``C = E^T C_joints E``.  A geared joint's rotor adds its reflected inertia ``model.armature`` to
``M``'s diagonal and ``armature qdd`` to ``tau`` (Spong Ex. 6.1); ``C`` and ``g`` are unchanged.
"""

import numpy as np

from .batches import as_states, matching, unbatch
from ..jit import inline, njit
from .kernels import (
    NO_STATE, POSE_COLUMNS, add_joint_pair, check_motion, composite_rigid_body, finite, forward_state, inertia,
    joint_poses, newton_euler, pose, store, vec, workspace, world_poses, world_twist
)
from .model import MASS, PARENT
from ..spatial import add, cross, inertia_times, inertia_to_parent, motion_cross
from .wrenches import wrench_joint_torques

# An absent qd/qdd for gravity: a global array is a compile-time constant to numba, so gravity's
# compiled Newton-Euler knows they are empty and drops their terms (measured faster than q[:0]).


# ----------------------------------------------------------------------------- batch loops

@njit
def _inverse(topology, bodies, gravity, armature, q, qd, qdd):
    """Newton-Euler (:func:`kernels.newton_euler`) on every state, plus the rotors' ``armature qdd``
    (Spong Ex. 6.1); ``qd``/``qdd`` without rows are zero."""
    count, n = q.shape
    scratch = workspace(topology.shape[0])
    tau = np.empty((count, n))
    for k in range(count):
        check_motion(q, qd, qdd, k)
        newton_euler(topology, bodies, gravity, q, qd, qdd, k, scratch, tau[k])
        if qdd.shape[0] > 0:
            for c in range(n):
                tau[k, c] += armature[c] * qdd[k, c]
    return tau


@njit
def _gravity(topology, bodies, gravity, q):
    """``g(q) = ID(q, 0, 0)``: :func:`kernels.newton_euler` on every state, without motion.  Its own
    loop (not :func:`_inverse`'s) and its own entry point: the 1 kHz call is ~0.1 us faster for each."""
    count, n = q.shape
    scratch = workspace(topology.shape[0])
    tau = np.empty((count, n))
    still = np.empty((0, 0))  # (not the constant NO_STATE, which numba freezes read-only: the writable type
    #                            compiles the one newton_euler that inverse dynamics and the F/T sensor use)
    for k in range(count):
        check_motion(q, still, still, k)
        newton_euler(topology, bodies, gravity, q, still, still, k, scratch, tau[k])
    return tau


@njit
def _bias(topology, bodies, gravity, q, qd):
    """``h(q, qd) = ID(q, qd, 0)``, its own entry point for the same reason."""
    return _inverse(topology, bodies, gravity, gravity[:0], q, qd, q[:0])


@njit
def _mass(topology, bodies, armature, q):
    """The composite-rigid-body algorithm (:func:`kernels.composite_rigid_body`) on every state."""
    count, n = q.shape
    nb = topology.shape[0]
    poses, composite = np.empty((nb, POSE_COLUMNS)), np.empty((nb, 10))
    M = np.empty((count, n, n))
    for k in range(count):
        check_motion(q, NO_STATE, NO_STATE, k)
        joint_poses(topology, bodies, q, k, poses)
        composite_rigid_body(topology, bodies, armature, poses, composite, M[k])
    return M


@njit
def _forward(topology, bodies, gravity, armature, q, qd, tau):
    """Forward dynamics (:func:`kernels.forward_state`) of every state; ``(qdd, -1 or the singular coordinate)``."""
    count, n = q.shape
    scratch = workspace(topology.shape[0])
    composite = np.empty((topology.shape[0], 10))
    M = np.empty((n, n))
    qdd = np.empty((count, n))
    for k in range(count):
        check_motion(q, qd, NO_STATE, k)
        if not finite(tau, k):
            raise ValueError("tau contains NaN or inf")
        singular = forward_state(topology, bodies, gravity, armature, q, qd, k, tau[k], scratch, composite, M, qdd[k])
        if singular >= 0:
            return qdd, singular
    return qdd, -1


# ----------------------------------------------------------------------------- public API

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
    tau = _inverse(*model._kernel_arrays, model._kernel_armature, q, matching(model, qd, "qd", batch),
                   matching(model, qdd, "qdd", batch))
    if external_wrenches:
        tau -= wrench_joint_torques(model, q, external_wrenches)
    return unbatch(tau, batch)


def gravity_torques(model, q):
    """The gravity term ``g(q) = ID(q, 0, 0)``: the torque that holds the arm still (Lynch & Park eq. 8.1).

    >>> import robot_dynamics as rd
    >>> pendulum = rd.load_urdf(rd.examples.PENDULUM_URDF)  # 1 kg at 1 m
    >>> rd.gravity_torques(pendulum, [0.5]).round(4)  # m g l sin q
    array([4.7032])
    """
    q, batch = as_states(model, q, "q")
    return unbatch(_gravity(*model._kernel_arrays, q), batch)


def bias_forces(model, q, qd):
    """``h(q, qd) = C(q, qd) qd + g(q) = ID(q, qd, 0)`` (Lynch & Park eq. 8.2's ``h``).

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF).with_gravity([0, 0, 0])
    >>> rd.bias_forces(arm, [0.0, 0.5], [1.0, 0.0]).round(4)  # (0, m2 L1 L2 sin q2 qd1^2)
    array([0.    , 0.4794])
    """
    q, batch = as_states(model, q, "q")
    return unbatch(_bias(*model._kernel_arrays, q, matching(model, qd, "qd", batch)), batch)


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
    return unbatch(_mass(*model._kernel_arrays[:2], model._kernel_armature, q), batch)


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
    tau = matching(model, tau, "tau", batch)
    if external_wrenches:
        tau = tau + wrench_joint_torques(model, q, external_wrenches)
    qdd, singular = _forward(*model._kernel_arrays, model._kernel_armature, q, matching(model, qd, "qd", batch), tau)
    if singular >= 0:
        raise ValueError(
            f"the mass matrix is singular at joint {model.joint_names[singular]!r}: it moves no mass or "
            "inertia (add an <inertial> to the links it moves)"
        )
    return unbatch(qdd, batch)


@njit
def _coriolis(topology, bodies, q, qd):
    """``C = sum_i J_i^T (I_i Jdot_i + (V_i x*) I_i J_i)`` in world coordinates.

    With world-frame inertias ``Idot_i = V_i x* I_i - I_i V_i x``, this choice gives
    ``C qd = h - g`` and ``Mdot = C + C^T``, i.e. ``Mdot - 2C`` skew-symmetric (Spong §6.6.1,
    Lynch & Park eq. 8.1's ``C``).  Grouped by subtrees (``I^C_i``, ``B^C_i``) it reads
    ``C_ji = S_j^T (I^C_i Sdot_i + B^C_i S_i)`` and ``C_ij = S_i^T (I^C_i Sdot_j + B^C_i S_j)`` for
    ``j`` an ancestor of ``i``, where ``S_j`` is joint ``j``'s world screw and ``Sdot_j = V_j x S_j``.
    The world twists need no Newton-Euler sweep: ``V_i = V_parent + S_i qd_i`` (``V_i = J_i qd``,
    Lynch & Park eq. 5.11).  Recursive, one sweep out and one back (Featherstone's composite bodies):
    ``I^C_i`` is kept as its ten parameters about the world origin, ``B^C_i = sum (V_k x*) I_k`` over
    the subtree as a 6x6 array; nothing is allocated per state.  The pairs are computed on the joints
    and reach the coordinates once, ``C = E^T C_joints E``.
    """
    count, n = q.shape
    nb = topology.shape[0]
    poses, world, twists = np.empty((nb, POSE_COLUMNS)), np.empty((nb, POSE_COLUMNS)), np.empty((nb, 6))
    screws, screw_rates = np.empty((nb, 6)), np.empty((nb, 6))
    composite, composite_b = np.empty((nb, 10)), np.empty((nb, 6, 6))
    C_joints = np.empty((nb, nb))
    C = np.zeros((count, n, n))
    for k in range(count):
        check_motion(q, qd, NO_STATE, k)
        joint_poses(topology, bodies, q, k, poses)
        world_poses(topology, poses, world)
        for i in range(nb):
            R, p = pose(world, i)
            (w, u), (omega, v) = world_twist(topology, bodies, world, qd, k, i, twists)  # S_i, V_i
            store(screws, i, 0, w)
            store(screws, i, 3, u)
            rate_w, rate_u = motion_cross(omega, v, w, u)  # Sdot_i = V_i x S_i
            store(screw_rates, i, 0, rate_w)
            store(screw_rates, i, 3, rate_u)
            mass, mc, Ibar = inertia(bodies, i, MASS)
            mc, Ibar = inertia_to_parent(mass, mc, Ibar, R, p)  # about the world origin
            composite[i, 0] = mass
            store(composite, i, 1, mc)
            for c in range(6):
                composite[i, 4 + c] = Ibar[c]
            _store_force_cross_inertia(omega, v, mass, mc, Ibar, composite_b[i])
        for i in range(nb - 1, -1, -1):
            parent = topology[i, PARENT]
            if parent >= 0:
                for c in range(10):
                    composite[parent, c] += composite[i, c]
                for r in range(6):
                    for c in range(6):
                        composite_b[parent, r, c] += composite_b[i, r, c]
        for i in range(nb):
            mass, mc, Ibar = inertia(composite, i, 0)
            B = composite_b[i]
            column_i = _inertia_rate_term(mass, mc, Ibar, B, screws, screw_rates, i)
            C_joints[i, i] = _dot6(screws, i, column_i)
            j = topology[i, PARENT]
            while j >= 0:
                C_joints[j, i] = _dot6(screws, j, column_i)
                C_joints[i, j] = _dot6(screws, i, _inertia_rate_term(mass, mc, Ibar, B, screws, screw_rates, j))
                j = topology[j, PARENT]
        _pairs_to_coordinates(topology, bodies, C_joints, C[k])
    return C


@njit
def _store_force_cross_inertia(omega, v, mass, mc, Ibar, B):
    """``B = (V x*) I``, column by column: ``V x* (I e_c)`` (Lynch & Park eq. 8.42's ``-ad_V^T``)."""
    for c in range(6):
        e_w = (1.0 if c == 0 else 0.0, 1.0 if c == 1 else 0.0, 1.0 if c == 2 else 0.0)
        e_u = (1.0 if c == 3 else 0.0, 1.0 if c == 4 else 0.0, 1.0 if c == 5 else 0.0)
        n, f = inertia_times(mass, mc, Ibar, e_w, e_u)
        n, f = add(cross(omega, n), cross(v, f)), cross(omega, f)
        for r in range(3):
            B[r, c] = n[r]
            B[3 + r, c] = f[r]


@inline
def _inertia_rate_term(mass, mc, Ibar, B, screws, screw_rates, j):
    """``I^C Sdot_j + B^C S_j`` as one 6-tuple (angular, then linear)."""
    n, f = inertia_times(mass, mc, Ibar, vec(screw_rates, j, 0), vec(screw_rates, j, 3))
    return (
        n[0] + _row_times(B, 0, screws, j), n[1] + _row_times(B, 1, screws, j), n[2] + _row_times(B, 2, screws, j),
        f[0] + _row_times(B, 3, screws, j), f[1] + _row_times(B, 4, screws, j), f[2] + _row_times(B, 5, screws, j),
    )


@inline
def _row_times(B, r, rows, j):
    """Row ``r`` of ``B`` times row ``j`` of ``rows`` (a 6-vector)."""
    value = 0.0
    for c in range(6):
        value += B[r, c] * rows[j, c]
    return value


@inline
def _dot6(rows, j, x):
    """Row ``j`` of ``rows`` (a 6-vector) dotted with the 6-tuple ``x``."""
    return (rows[j, 0] * x[0] + rows[j, 1] * x[1] + rows[j, 2] * x[2]
            + rows[j, 3] * x[3] + rows[j, 4] * x[4] + rows[j, 5] * x[5])


@njit
def _pairs_to_coordinates(topology, bodies, C_joints, C):
    """``C += E^T C_joints E`` over the pairs of a body and its ancestors (the only ones set in ``C_joints``).

    Kept out of the loop that computes the pairs: with the coupling map inlined there, that
    loop ran 10 % slower (measured).
    """
    for i in range(topology.shape[0]):
        j = i
        while j >= 0:
            add_joint_pair(topology, bodies, j, i, C_joints[j, i], C)
            if j != i:
                add_joint_pair(topology, bodies, i, j, C_joints[i, j], C)
            j = topology[j, PARENT]


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
    return unbatch(_coriolis(*model._kernel_arrays[:2], q, matching(model, qd, "qd", batch)), batch)
