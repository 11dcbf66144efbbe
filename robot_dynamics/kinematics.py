"""Frame poses, Jacobians, energies and the task-space inertia.

Frames are URDF link names (links on fixed joints included).  Poses are in the root link's
frame.  Jacobian rows are ``[angular; linear]``: with ``reference="world"`` the twist of the
frame in world-aligned axes at the frame origin, with ``reference="local"`` in the frame's own
axes (Lynch & Park's body Jacobian, §5.1.2).
"""

import numba
import numpy as np

from .dynamics import (
    _ZERO, _axis, _joint_poses, _motion, _finite, _rotation, _unbatch, _vec, _world_poses, as_states, mass_matrix,
)
from .model import COORDINATE, KIND, MULTIPLIER, PARENT, REVOLUTE
from .spatial import add, cross, dot, inertia_times, rotate, sub

njit = numba.njit(cache=True)
REFERENCES = ("world", "local")


@njit
def _body_poses(topology, bodies, q):
    """Every body's pose in the root frame, ``(count, bodies, 12)``: rotation row-major, then origin."""
    nb = topology.shape[0]
    poses = np.empty((nb, 12))
    world = np.empty((q.shape[0], nb, 12))
    for k in range(q.shape[0]):
        if not _finite(q, k):
            raise ValueError("q contains NaN or inf")
        _joint_poses(topology, bodies, q, k, poses)
        _world_poses(topology, poses, world[k])
    return world


@njit
def _frame_origin(world, body, point):
    """World coordinates of ``point``, given in the frame of ``body``."""
    return add(rotate(_rotation(world, body), point), _vec(world, body, 9))


@njit
def _jacobian_column(topology, bodies, world, j, origin):
    """Joint ``j``'s column ``(w_j, w_j x (o - p_j))`` (revolute) or ``(0, w_j)`` (prismatic) at the world
    point ``o``: the space-Jacobian column of Lynch & Park eq. 5.11, taken about ``o``."""
    w = rotate(_rotation(world, j), _axis(bodies, j))
    if topology[j, KIND] == REVOLUTE:
        return w, cross(w, sub(origin, _vec(world, j, 9)))
    return (0.0, 0.0, 0.0), w


@njit
def _world_jacobian(topology, bodies, q, body, point):
    """The world-aligned Jacobian of the frame at ``point`` of ``body``: a column per joint between
    the root and ``body`` (:func:`_jacobian_column`), zeros elsewhere."""
    count, n = q.shape
    nb = topology.shape[0]
    poses = np.empty((nb, 12))
    world = np.empty((nb, 12))
    J = np.zeros((count, 6, n))
    for k in range(count):
        if not _finite(q, k):
            raise ValueError("q contains NaN or inf")
        if body < 0:
            continue
        _joint_poses(topology, bodies, q, k, poses)
        _world_poses(topology, poses, world)
        origin = _frame_origin(world, body, point)
        j = body
        while j >= 0:
            angular, linear = _jacobian_column(topology, bodies, world, j, origin)
            c, m = topology[j, COORDINATE], bodies[j, MULTIPLIER]
            for r in range(3):
                J[k, r, c] += m * angular[r]
                J[k, 3 + r, c] += m * linear[r]
            j = topology[j, PARENT]
    return J


@njit
def _add_wrench_torques(topology, bodies, world, wrench_bodies, wrench_points, wrench_values, tau):
    """``tau += sum_l J_l(q)^T F_l`` (the ``J^T F`` of Lynch & Park eq. 9.81) for the wrenches
    ``F_l = [moment; force]`` in world-aligned axes, applied at ``wrench_points[l]`` of body
    ``wrench_bodies[l]`` (-1: the fixed base, no effect); ``world`` holds the bodies' world poses."""
    for w in range(wrench_bodies.shape[0]):
        body = wrench_bodies[w]
        if body < 0:
            continue
        origin = _frame_origin(world, body, _vec(wrench_points, w, 0))
        moment, force = _vec(wrench_values, w, 0), _vec(wrench_values, w, 3)
        j = body
        while j >= 0:
            angular, linear = _jacobian_column(topology, bodies, world, j, origin)
            tau[topology[j, COORDINATE]] += bodies[j, MULTIPLIER] * (dot(angular, moment) + dot(linear, force))
            j = topology[j, PARENT]


@njit
def _wrench_torques(topology, bodies, q, wrench_bodies, wrench_points, wrench_values):
    """:func:`_add_wrench_torques` for every state ``k`` of ``q``, wrenches ``wrench_values[k]``."""
    count, n = q.shape
    nb = topology.shape[0]
    poses = np.empty((nb, 12))
    world = np.empty((nb, 12))
    tau = np.zeros((count, n))
    for k in range(count):
        if not _finite(q, k):
            raise ValueError("q contains NaN or inf")
        _joint_poses(topology, bodies, q, k, poses)
        _world_poses(topology, poses, world)
        _add_wrench_torques(topology, bodies, world, wrench_bodies, wrench_points, wrench_values[k], tau[k])
    return tau


def wrench_arrays(model, external_wrenches, count):
    """``{link: [moment; force]}`` -> the kernels' ``(bodies, points, values)`` for ``count`` states.

    A wrench is 6 values (the same for every state) or one row of 6 per state.  ValueError names
    an unknown link or a wrench that is not 6 finite numbers (per state).
    """
    links = list(external_wrenches)
    values = np.empty((count, len(links), 6))
    for w, link in enumerate(links):
        if link not in model.frames:
            raise ValueError(f"external wrench on unknown link {link!r}: the links are the URDF's link names")
        wrench = np.asarray(external_wrenches[link], dtype=float)
        rows = wrench.reshape(-1, 6) if wrench.shape[-1:] == (6,) else None
        if rows is None or rows.shape[0] not in (1, count) or not np.all(np.isfinite(rows)):
            raise ValueError(f"the external wrench on {link!r} must be 6 finite numbers [moment; force] "
                             f"(or one such row per state), got shape {wrench.shape}")
        values[:, w] = rows
    frames = [model.frames[link] for link in links]
    bodies = np.array([frame.body for frame in frames], dtype=np.int64)
    points = np.array([frame.pose[:3, 3] for frame in frames]).reshape(len(links), 3)
    return bodies, points, values


@njit
def _kinetic(topology, bodies, q, qd):
    """``K = 1/2 sum_i V_i^T G_i V_i`` over the bodies' twists (Lynch & Park eq. 8.43, 9.12)."""
    nb = topology.shape[0]
    poses, twists, accelerations = np.empty((nb, 12)), np.empty((nb, 6)), np.empty((nb, 6))
    energy = np.zeros(q.shape[0])
    for k in range(q.shape[0]):
        if not _finite(q, k):
            raise ValueError("q contains NaN or inf")
        if not _finite(qd, k):
            raise ValueError("qd contains NaN or inf")
        _joint_poses(topology, bodies, q, k, poses)
        _motion(topology, bodies, np.zeros(3), qd, _ZERO, k, poses, twists, accelerations)
        for i in range(nb):
            omega, v = _vec(twists, i, 0), _vec(twists, i, 3)
            b = bodies[i]
            L, P = inertia_times(b[17], (b[18], b[19], b[20]), (b[21], b[22], b[23], b[24], b[25], b[26]), omega, v)
            energy[k] += 0.5 * (omega[0] * L[0] + omega[1] * L[1] + omega[2] * L[2] + v[0] * P[0] + v[1] * P[1] + v[2] * P[2])
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
    body = _homogeneous(_body_poses(*model.kernel_arrays[:2], q)[:, target.body])
    return _unbatch(body @ target.pose, batch)


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
    J = _world_jacobian(*model.kernel_arrays[:2], states, target.body, tuple(target.pose[:3, 3]))
    if reference == "local":
        R = frame_pose(model, states, frame)[:, :3, :3]
        J = np.concatenate([np.swapaxes(R, -1, -2) @ J[:, :3], np.swapaxes(R, -1, -2) @ J[:, 3:]], axis=1)
    return _unbatch(J, batch)


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
    return _unbatch(_kinetic(*model.kernel_arrays[:2], states, qd), batch)


def potential_energy(model, q):
    """``P = -sum_i m_i g^T c_i(q)`` with the root frame origin at zero height (Lynch & Park eq. 9.12).

    Its gradient is the gravity torque: ``dP/dq = g(q)``.

    >>> import robot_dynamics as rd
    >>> pendulum = rd.load_urdf(rd.examples.PENDULUM_URDF)
    >>> float(rd.potential_energy(pendulum, [0.0]))  # 1 kg hanging 1 m below the pivot
    -9.81
    """
    states, batch = as_states(model, q, "q")
    rows = _body_poses(*model.kernel_arrays[:2], states)
    R = rows[..., :9].reshape(rows.shape[:-1] + (3, 3))
    mass, first_moment = model.bodies[:, 17], model.bodies[:, 18:21]
    height_moments = np.einsum("kbij,bj->kbi", R, first_moment) + mass[:, None] * rows[..., 9:]
    return _unbatch(-(height_moments @ model.gravity).sum(axis=-1), batch)


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
    return _unbatch(np.linalg.solve(inverse, np.broadcast_to(np.eye(6), inverse.shape)), batch)
