"""Linearity in the inertial parameters: ``tau = Y(q, qd, qdd) theta`` (Spong eq. 6.122).

``theta`` stacks, body by body (``model.body_joints`` order, fixed children merged), the ten
inertial parameters about the body frame origin in body axes: ``m, m c_x, m c_y, m c_z,
Ixx, Ixy, Ixz, Iyy, Iyz, Izz`` (the rotational inertia about the origin, not the CoM), then the
rotor inertia (``model.armature``) of every coordinate, whose column of ``Y`` is ``qdd``.
"""

import numpy as np

from .batches import as_states, matching, unbatch
from ..jit import njit
from .kernels import add_joint_force, check_motion, newton_euler, pose, screw, vec, workspace
from .model import INERTIAL_PARAMETERS, PARENT
from ..spatial import body_force, dot, force_to_parent

PARAMETERS_PER_BODY = 10


@njit
def _unit_parameters(index):
    """The inertial parameters with a single 1 at ``index``: body_force is linear in them."""
    e = np.zeros(PARAMETERS_PER_BODY)
    e[index] = 1.0
    return e[0], (e[1], e[2], e[3]), (e[4], e[5], e[6], e[7], e[8], e[9])


@njit
def _regressor(topology, bodies, gravity, q, qd, qdd):
    """Column ``10 i + p`` of ``Y``: the joint forces that body ``i`` alone, with parameter ``p`` = 1 and the
    rest 0, needs for the motion (Newton-Euler's backward pass for one body, Lynch & Park eqs. 9.56-9.57)."""
    count, n = q.shape
    nb = topology.shape[0]
    scratch = workspace(nb)
    tau = np.empty(n)
    Y = np.zeros((count, n, PARAMETERS_PER_BODY * nb + n))
    for k in range(count):
        check_motion(q, qd, qdd, k)
        # its forward loop leaves T_{parent,i}, V_i and Vdot_i (the torques it computes are unused)
        newton_euler(topology, bodies, gravity, q, qd, qdd, k, scratch, tau)
        poses, twists, accelerations = scratch[0], scratch[1], scratch[2]
        for c in range(n):  # the rotors: armature_c qdd_c (Spong Ex. 6.1)
            Y[k, c, PARAMETERS_PER_BODY * nb + c] = qdd[k, c]
        for i in range(nb):
            for parameter in range(PARAMETERS_PER_BODY):
                mass, mc, Ibar = _unit_parameters(parameter)
                n_, f = body_force(mass, mc, Ibar, vec(twists, i, 0), vec(twists, i, 3),
                                   vec(accelerations, i, 0), vec(accelerations, i, 3))
                column = Y[k, :, PARAMETERS_PER_BODY * i + parameter]
                j = i
                while True:
                    w, u = screw(bodies, j)
                    add_joint_force(topology, bodies, j, dot(w, n_) + dot(u, f), column)
                    if topology[j, PARENT] < 0:
                        break
                    R, p = pose(poses, j)
                    n_, f = force_to_parent(R, p, n_, f)
                    j = topology[j, PARENT]
    return Y


def inertial_parameters(model):
    """``theta``: the ten inertial parameters of every body, stacked, then the armature of every
    coordinate (see the module docstring).

    >>> import robot_dynamics as rd
    >>> rd.inertial_parameters(rd.load_urdf(rd.examples.PENDULUM_URDF))  # 1 kg point at z = -1, no rotor
    array([ 1.,  0.,  0., -1.,  1.,  0.,  0.,  1.,  0.,  0.,  0.])
    """
    return np.concatenate([np.ravel(model.bodies[:, INERTIAL_PARAMETERS]), model.armature])


def regressor(model, q, qd, qdd):
    """``Y(q, qd, qdd)`` with ``inverse_dynamics(model, q, qd, qdd) == Y @ inertial_parameters(model)`` (Spong eq. 6.122).

    >>> import numpy as np, robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> Y = rd.regressor(arm, [0.1, 0.2], [0.3, 0.4], [0.5, 0.6])
    >>> Y.shape, np.allclose(Y @ rd.inertial_parameters(arm), rd.inverse_dynamics(arm, [0.1, 0.2], [0.3, 0.4], [0.5, 0.6]))
    ((2, 22), True)
    """
    q, batch = as_states(model, q, "q")
    Y = _regressor(*model._kernel_arrays, q, matching(model, qd, "qd", batch), matching(model, qdd, "qdd", batch))
    return unbatch(Y, batch)
