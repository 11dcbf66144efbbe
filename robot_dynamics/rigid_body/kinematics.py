"""Frame poses, Jacobians, energies and the task-space inertia.

Frames are URDF link names (links on fixed joints included).  Poses are in the root link's
frame.  Jacobian rows are ``[angular; linear]``: with ``reference="world"`` the twist of the
frame in world-aligned axes at the frame origin, with ``reference="local"`` in the frame's own
axes (Lynch & Park's body Jacobian, §5.1.2).
"""

import numpy as np

from .dynamics import mass_matrix
from .batches import as_states, unbatch
from ..jit import njit
from .kernels import (
    NO_STATE, POSE_COLUMNS, add_frame_jacobian, check_motion, inertia, joint_poses, newton_euler, point_in_world,
    vec, workspace, world_poses
)
from .model import FIRST_MOMENT, MASS
from ..spatial import dot, inertia_times

REFERENCES = ("world", "local")


@njit
def _body_poses(topology, bodies, q):
    """Every body's pose in the root frame, ``(count, bodies, 12)``: rotation row-major, then origin."""
    nb = topology.shape[0]
    poses = np.empty((nb, POSE_COLUMNS))
    world = np.empty((q.shape[0], nb, POSE_COLUMNS))
    for k in range(q.shape[0]):
        check_motion(q, NO_STATE, NO_STATE, k)
        joint_poses(topology, bodies, q, k, poses)
        world_poses(topology, poses, world[k])
    return world


@njit
def _world_jacobian(topology, bodies, q, body, point):
    """The world-aligned Jacobian of the frame at ``point`` of ``body``: joint ``j``'s column
    (:func:`kernels.jacobian_column`) for every joint between the root and ``body``, on the
    coordinates (``J E``); zeros elsewhere."""
    count, n = q.shape
    nb = topology.shape[0]
    poses, world = np.empty((nb, POSE_COLUMNS)), np.empty((nb, POSE_COLUMNS))
    J = np.zeros((count, 6, n))
    for k in range(count):
        check_motion(q, NO_STATE, NO_STATE, k)
        if body < 0:
            continue
        joint_poses(topology, bodies, q, k, poses)
        world_poses(topology, poses, world)
        add_frame_jacobian(topology, bodies, world, body, point_in_world(world, body, point), J[k])
    return J


@njit
def _kinetic(topology, bodies, armature, q, qd):
    """``K = 1/2 sum_i V_i^T G_i V_i`` over the bodies' twists (Lynch & Park eq. 8.43, 9.12), plus the
    rotors' ``1/2 sum_c armature_c qd_c^2`` (Spong Ex. 6.1)."""
    count, n = q.shape
    nb = topology.shape[0]
    scratch = workspace(nb)
    bias, no_gravity = np.empty(n), np.zeros(3)
    energy = np.zeros(count)
    for k in range(count):
        check_motion(q, qd, NO_STATE, k)
        # its forward loop leaves the body twists V_i (the bias it computes is unused)
        newton_euler(topology, bodies, no_gravity, q, qd, qd[:0], k, scratch, bias)
        twists = scratch[1]
        for i in range(nb):
            omega, v = vec(twists, i, 0), vec(twists, i, 3)
            mass, mc, Ibar = inertia(bodies, i, MASS)
            angular, linear = inertia_times(mass, mc, Ibar, omega, v)
            energy[k] += 0.5 * (dot(omega, angular) + dot(v, linear))
        for c in range(n):
            energy[k] += 0.5 * armature[c] * qd[k, c] * qd[k, c]
    return energy


def _frame(model, frame):
    try:
        return model.frames[frame]
    except KeyError:
        raise ValueError(f"unknown frame {frame!r}: frames are the URDF's link names") from None


def _homogeneous(rows):
    """(..., 12) rotation+origin rows -> (..., 4, 4) transforms."""
    T = np.zeros(rows.shape[:-1] + (4, 4))
    T[..., :3, :3] = rows[..., :9].reshape(rows.shape[:-1] + (3, 3))
    T[..., :3, 3] = rows[..., 9:]
    T[..., 3, 3] = 1.0
    return T


def frame_pose(model, q, frame):
    """The 4x4 pose ``T_0f(q)`` of link ``frame`` in the root frame (product of exponentials, Lynch & Park eq. 4.14).

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> rd.frame_pose(arm, [0.5, 0.0], "tip")[:3, 3].round(4)  # 2 m along (cos 0.5, 0, sin 0.5)
    array([1.7552, 0.    , 0.9589])
    """
    q, batch = as_states(model, q, "q")
    target = _frame(model, frame)
    if target.body < 0:
        return np.broadcast_to(target.pose, batch + (4, 4)).copy()
    body = _homogeneous(_body_poses(*model._kernel_arrays[:2], q)[:, target.body])
    return unbatch(body @ target.pose, batch)


def jacobian(model, q, frame, reference="world"):
    """The 6 x n Jacobian ``V = J(q) qd`` of link ``frame``, rows ``[angular; linear]``.

    ``reference="world"``: world-aligned axes at the frame origin; ``"local"``: the frame's own
    axes (the body Jacobian of Lynch & Park §5.1.2).

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> rd.jacobian(arm, [0.0, 0.0], "tip")[[1, 3, 5]]  # about -y; the tip moves along +z
    array([[-1., -1.],
           [ 0.,  0.],
           [ 2.,  1.]])
    """
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {REFERENCES}, got {reference!r}")
    states, batch = as_states(model, q, "q")
    target = _frame(model, frame)
    J = _world_jacobian(*model._kernel_arrays[:2], states, target.body, tuple(target.pose[:3, 3]))
    if reference == "local":
        R = frame_pose(model, states, frame)[:, :3, :3]
        J = np.concatenate([np.swapaxes(R, -1, -2) @ J[:, :3], np.swapaxes(R, -1, -2) @ J[:, 3:]], axis=1)
    return unbatch(J, batch)


def kinetic_energy(model, q, qd):
    """``K = 1/2 sum_i V_i^T G_i V_i``, which equals ``1/2 qd^T M(q) qd`` (Lynch & Park eq. 8.43, 9.12).

    >>> import robot_dynamics as rd
    >>> pendulum = rd.load_urdf(rd.examples.PENDULUM_URDF)
    >>> float(rd.kinetic_energy(pendulum, [0.3], [2.0]))  # 1/2 m l^2 qd^2
    2.0
    """
    states, batch = as_states(model, q, "q")
    qd, qd_batch = as_states(model, qd, "qd")
    if qd_batch != batch:
        raise ValueError(f"qd has batch shape {qd_batch} but q has {batch}")
    return unbatch(_kinetic(*model._kernel_arrays[:2], model._kernel_armature, states, qd), batch)


def potential_energy(model, q):
    """``P = -sum_i m_i g^T c_i(q)`` with the root frame origin at zero height (Lynch & Park eq. 9.12).

    Its gradient is the gravity torque: ``dP/dq = g(q)``.

    >>> import robot_dynamics as rd
    >>> pendulum = rd.load_urdf(rd.examples.PENDULUM_URDF)
    >>> float(rd.potential_energy(pendulum, [0.0]))  # 1 kg hanging 1 m below the pivot
    -9.81
    """
    states, batch = as_states(model, q, "q")
    rows = _body_poses(*model._kernel_arrays[:2], states)
    R = rows[..., :9].reshape(rows.shape[:-1] + (3, 3))
    mass, first_moment = model.bodies[:, MASS], model.bodies[:, FIRST_MOMENT]
    height_moments = np.einsum("kbij,bj->kbi", R, first_moment) + mass[:, None] * rows[..., 9:]
    return unbatch(-(height_moments @ model.gravity).sum(axis=-1), batch)


def operational_space_inertia(model, q, frame, reference="world"):
    """The task-space inertia ``Lambda(q) = (J M^-1 J^T)^-1`` of link ``frame`` (Lynch & Park eq. 9.98).

    For a square ``J`` this is ``J^-T M J^-1``; the form used also holds for redundant arms
    whenever ``J`` has full row rank 6.  ``M^-1 J^T`` is a linear solve, not an inverse.

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> rd.operational_space_inertia(arm, [0.0, 1.0], "tip")
    Traceback (most recent call last):
    ...
    ValueError: the Jacobian of frame 'tip' has rank 2 < 6 here: its operational-space inertia is undefined
    """
    states, batch = as_states(model, q, "q")
    J = jacobian(model, states, frame, reference)
    rank = np.linalg.matrix_rank(J).min()
    if rank < 6:
        raise ValueError(
            f"the Jacobian of frame {frame!r} has rank {rank} < 6 here: its operational-space inertia is undefined"
        )
    inverse = J @ np.linalg.solve(mass_matrix(model, states), np.swapaxes(J, -1, -2))
    return unbatch(np.linalg.solve(inverse, np.broadcast_to(np.eye(6), inverse.shape)), batch)
