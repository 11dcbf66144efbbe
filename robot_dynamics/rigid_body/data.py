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
    NO_STATE, POSE_COLUMNS, check_motion, composite_rigid_body, joint_motion, newton_euler_recursions, poses_of_joints,
    to_coordinates, world_poses,
)


GRAVITY, BIAS, MASS, WORLD = 1, 2, 4, 8
"""The outputs of :func:`compute_terms`, combined with ``|`` (see the module docstring)."""

# No joint accelerations in any output: a global empty array is a compile-time constant to numba,
# so the pass's joint map drops the qdd terms.
_NO_ACCELERATION = np.empty((0, 0))


class Data:
    """Every array one pass of :func:`compute_terms` writes for ``model`` (``nb`` moving bodies,
    ``n = model.nv`` coordinates); reused by every pass, never reallocated.

    Results: ``g``, ``c``, ``h`` (n,), ``M`` (n, n); per body: ``poses`` and ``world`` (nb, 12),
    ``twists`` and ``accelerations`` (nb, 6), see the module docstring for which output fills which.
    Read them after the pass; the next pass overwrites them.
    """

    def __init__(self, model):
        topology, bodies, gravity = model._kernel_arrays
        nb, n = topology.shape[0], model.nv
        self.model = model
        # Stacked so that a pass takes few arguments (numba checks each one on every call); the
        # leading index keeps each part a C-contiguous array.
        frames = np.zeros((2, nb, POSE_COLUMNS))
        motion = np.zeros((6, nb, 6))  # the velocity pass's V, Vdot, F; the gravity pass's (V = 0)
        vectors = np.zeros((3, n))
        self.poses, self.world = frames
        self.twists, self.accelerations = motion[0], motion[1]
        self.g, self.c, self.h = vectors
        self.M = np.zeros((n, n))
        self._zero_velocity = np.zeros(n)
        gravities = np.array([gravity, np.zeros(3)])  # the velocity pass's without
        joints = np.zeros((2, nb, 4))  # (q, qd, 0, tau) and the gravity pass's (., 0, 0, tau)
        self._arguments = (topology, bodies, gravities, model._kernel_armature), (
            frames, joints, motion, np.zeros((nb, 10)), vectors, self.M)


def compute_terms(data, q, qd=None, outputs=GRAVITY | BIAS | MASS):
    """One pass over the joint poses of ``q`` that fills ``data`` with ``outputs`` (a ``|`` of
    ``GRAVITY``, ``BIAS``, ``MASS``, ``WORLD``); ``qd`` is needed for ``BIAS`` only (zero if None).

    ``q``, ``qd``: ``(n,)`` in ``model.joint_names`` order; ValueError on a wrong length or a
    non-finite value.  Allocates nothing when they are C-contiguous float64 arrays.
    """
    q = _state(data, q, "q")
    qd = data._zero_velocity if qd is None else _state(data, qd, "qd")
    model_arrays, arrays = data._arguments
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
    joint_motion(topology, bodies, q.reshape(1, n), qd.reshape(1, n), _NO_ACCELERATION, 0, moving)
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
