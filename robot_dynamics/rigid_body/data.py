"""A workspace per model (Pinocchio's Model/Data split) and one pass that fills it for one state.

The model is immutable; a :class:`Data` holds every array a pass writes, allocated once when it is
made, so a pass allocates nothing.  :func:`compute_terms` computes the joint poses of ``q`` once
and, from them, the quantities asked for by ``outputs``:

=============  =====================================================================================
flag           what the pass leaves in the Data
=============  =====================================================================================
``GRAVITY``    ``g = ID(q, 0, 0)`` (Lynch & Park eq. 8.1): Newton-Euler without motion
``BIAS``       ``c = C(q, qd) qd = ID(q, qd, 0)`` without gravity, and ``h = c + g`` (eq. 8.2's ``h``);
               also ``twists`` ``V_i`` and ``accelerations`` ``Vdot_i`` (qdd = 0, no gravity: the
               velocity-product accelerations ``Jdot_i qd`` of every body, in its own frame)
``MASS``       ``M(q)`` by composite rigid bodies (eq. 9.82), rotors' ``diag(armature)`` included
``WORLD``      ``world``: every body frame's pose in the root frame ``T_{0,i}``
``MOMENTUM``   ``p = M(q) qd`` and ``beta = C(q, qd)^T qd - g(q)`` (with ``GRAVITY | BIAS``, which it
               implies): the momentum observer's terms (De Luca & Mattone 2003), from the bias pass's
               twists in one backward sweep: ``p_j = S_j^T h_j`` and ``(C^T qd)_j = (V_j x S_j)^T h_j``,
               ``h_j`` the momentum of the subtree at ``j`` (``Mdot = C + C^T``, Spong eq. 6.63)
=============  =====================================================================================

``poses`` (every ``T_{parent,i}``, eq. 9.53) is always left.  Rows are pose rows of
``kernels.POSE_COLUMNS`` values (rotation row-major, then origin) and spatial vectors
``[angular; linear]``.  The public batched functions (:func:`robot_dynamics.gravity_torques` etc.)
run the same kernels; this pass is what the dynamics node calls for each joint_states message.

>>> import numpy as np, robot_dynamics as rd
>>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
>>> data = rd.Data(arm)
>>> rd.compute_terms(data, np.array([0.0, 0.5]), np.array([1.0, 0.0]), rd.GRAVITY | rd.BIAS | rd.MASS)
>>> bool(np.allclose(data.h, rd.bias_forces(arm, [0.0, 0.5], [1.0, 0.0])))
True
>>> bool(np.allclose(data.M, rd.mass_matrix(arm, [0.0, 0.5])))
True
"""

import numpy as np

from ..jit import njit
from .kernels import (
    NO_STATE, POSE_COLUMNS, add_frame_jacobian, add_to_parent, check_motion, composite_rigid_body, inertia,
    joint_motion, newton_euler_recursions, point_in_world, poses_of_joints, screw, store, to_coordinates, vec,
    world_poses,
)
from .model import MASS as MASS_COLUMN
from ..spatial import dot, inertia_times, motion_cross


GRAVITY, BIAS, MASS, WORLD, MOMENTUM = 1, 2, 4, 8, 16
"""The outputs of :func:`compute_terms`, combined with ``|`` (see the module docstring)."""



class Data:
    """Every array one pass of :func:`compute_terms` writes for ``model`` (``nb`` moving bodies,
    ``n = model.nv`` coordinates); reused by every pass, never reallocated.

    Results: ``g``, ``c``, ``h``, ``p``, ``beta`` (n,), ``M`` (n, n); per body: ``poses`` and ``world``
    (nb, 12), ``twists``, ``accelerations`` and ``momenta`` (nb, 6), see the module docstring for which
    output fills which.
    Read them after the pass; the next pass overwrites them.
    """

    def __init__(self, model):
        topology, bodies, gravity = model._kernel_arrays
        nb, n = topology.shape[0], model.nv
        self.model = model
        # Stacked so that a pass takes few arguments (numba checks each one on every call); the
        # leading index keeps each part a C-contiguous array.
        frames = np.zeros((2, nb, POSE_COLUMNS))
        motion = np.zeros((7, nb, 6))  # the velocity pass's V, Vdot, F; the gravity pass's (V = 0); momenta
        vectors = np.zeros((5, n))
        self.poses, self.world = frames
        self.twists, self.accelerations, self.momenta = motion[0], motion[1], motion[6]
        self.g, self.c, self.h, self.p, self.beta = vectors
        self.M = np.zeros((n, n))
        self._zero_velocity = np.zeros(n)
        gravities = np.array([gravity, np.zeros(3)])  # the velocity pass's without
        joints = np.zeros((3, nb, 4))  # (q, qd, 0, tau), the gravity pass's (., 0, 0, tau), (p, C^T qd) per joint
        self._arguments = (topology, bodies, gravities, model._kernel_armature), (
            frames, joints, motion, np.zeros((nb, 10)), vectors, self.M)


def compute_terms(data, q, qd=None, outputs=GRAVITY | BIAS | MASS):
    """One pass over the joint poses of ``q`` that fills ``data`` with ``outputs`` (a ``|`` of
    ``GRAVITY``, ``BIAS``, ``MASS``, ``WORLD``, ``MOMENTUM``); ``qd`` is needed for ``BIAS`` and ``MOMENTUM``
    only (zero if None).

    ``q``, ``qd``: ``(n,)`` in ``model.joint_names`` order; ValueError on a wrong length or a
    non-finite value.  Allocates nothing when they are C-contiguous float64 arrays.
    """
    q = _state(data, q, "q")
    qd = data._zero_velocity if qd is None else _state(data, qd, "qd")
    model_arrays, arrays = data._arguments
    if outputs & MOMENTUM:
        outputs |= GRAVITY | BIAS
    _terms(*model_arrays, q, qd, outputs, *arrays)


def _state(data, value, name):
    """``value`` as a C-contiguous float64 ``(n,)`` array, without a copy if it is one."""
    n = data.model.nv
    if type(value) is np.ndarray and value.dtype == np.float64 and value.shape == (n,) and value.flags.c_contiguous:
        return value
    array = np.ascontiguousarray(value, dtype=np.float64)
    if array.shape != (n,):
        raise ValueError(f"{name} must have {n} values (model.joint_names order), got shape {array.shape}")
    return array


@njit
def _terms(topology, bodies, gravities, armature, q, qd, outputs, frames, joints, motion, composite, vectors, M):
    """The pass of :func:`compute_terms`: the joint map and poses once, then each asked-for output
    from them (Newton-Euler's recursions for ``g`` and ``c``, CRBA for ``M``)."""
    n = q.shape[0]
    check_motion(q.reshape(1, n), qd.reshape(1, n), NO_STATE, 0)
    poses, moving, still = frames[0], joints[0], joints[1]
    g, c, h = vectors[0], vectors[1], vectors[2]
    joint_motion(topology, bodies, q.reshape(1, n), qd.reshape(1, n), NO_STATE, 0, moving)
    poses_of_joints(topology, bodies, moving, poses)
    if outputs & (GRAVITY | BIAS):
        newton_euler_recursions(topology, bodies, gravities[0], poses, still, motion[3], motion[4], motion[5])
        to_coordinates(topology, bodies, still[:, 3], g)
    if outputs & BIAS:
        newton_euler_recursions(topology, bodies, gravities[1], poses, moving, motion[0], motion[1], motion[2])
        to_coordinates(topology, bodies, moving[:, 3], c)
        for i in range(n):
            h[i] = c[i] + g[i]
    if outputs & MASS:
        composite_rigid_body(topology, bodies, armature, poses, composite, M)
    if outputs & WORLD:
        world_poses(topology, poses, frames[1])
    if outputs & MOMENTUM:
        momentum_sweep(topology, bodies, poses, motion[0], motion[6], joints[2])
        to_coordinates(topology, bodies, joints[2][:, 0], vectors[3])
        to_coordinates(topology, bodies, joints[2][:, 1], vectors[4])
        for i in range(n):
            vectors[3][i] += armature[i] * qd[i]  # the rotors' momentum (their inertia is on the diagonal of M)
            vectors[4][i] -= g[i]


@njit
def momentum_sweep(topology, bodies, poses, twists, momenta, joint_terms):
    """From the leaves, each subtree's momentum ``h_i = I_i V_i + sum_children Ad^T h_child`` (in body
    ``i``'s frame, like Newton-Euler's backward wrenches, eq. 9.56) and per joint ``S_i^T h_i`` and
    ``(V_i x S_i)^T h_i`` into ``joint_terms[:, 0:2]`` (the pairing of a motion and a force is the same in
    any frame, so the world-frame ``Sdot_i = V_i x S_i`` of the observer's ``C^T qd`` reads in body frames)."""
    nb = topology.shape[0]
    for i in range(nb):
        mass, mc, Ibar = inertia(bodies, i, MASS_COLUMN)
        angular, linear = inertia_times(mass, mc, Ibar, vec(twists, i, 0), vec(twists, i, 3))
        store(momenta, i, 0, angular)
        store(momenta, i, 3, linear)
    for i in range(nb - 1, -1, -1):
        n, f = vec(momenta, i, 0), vec(momenta, i, 3)
        w, u = screw(bodies, i)
        rate_w, rate_u = motion_cross(vec(twists, i, 0), vec(twists, i, 3), w, u)
        joint_terms[i, 0] = dot(w, n) + dot(u, f)
        joint_terms[i, 1] = dot(rate_w, n) + dot(rate_u, f)
        add_to_parent(topology, poses, momenta, i, n, f)


@njit
def frame_jacobian(topology, bodies, world, body, point, J):
    """The world-aligned Jacobian of ``point`` (body coordinates) on ``body`` into ``J`` (6, n), from the
    world poses a ``WORLD`` pass left (:func:`kernels.add_frame_jacobian`); zeros for the base."""
    J[:] = 0.0
    if body >= 0:
        add_frame_jacobian(topology, bodies, world, body, point_in_world(world, body, point), J)
