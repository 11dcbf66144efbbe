"""Joint friction: ``tau_f = B qd + F_c tanh(qd / eps)``, the one law of the package.

Viscous damping ``B`` (URDF ``<dynamics damping>``, plus the rotors' viscous damping of
``<transmission>``) and Coulomb friction ``F_c`` (URDF ``<dynamics friction>``), the sign function
smoothed over the velocity scale ``eps`` (``friction_velocity``). It opposes the motion: the simulator
subtracts it from the actuator torque, a controller adds it to compensate, the observer and a
trajectory check count it. Compiled with numba: compiled code calls :func:`friction_torque` per joint,
Python code :func:`friction_torques`.
"""

import math

import numpy as np

from ..jit import njit

__all__ = ["DEFAULT_FRICTION_VELOCITY", "friction_torque", "friction_torques"]

DEFAULT_FRICTION_VELOCITY = 0.01
"""``eps`` of ``tanh(qd / eps)``, rad/s or m/s: the default of the simulator, the nodes, the observer,
the trajectory check and identification."""


@njit
def friction_torque(damping, coulomb, friction_velocity, qd):
    """One joint's friction ``B qd + F_c tanh(qd / eps)`` (it opposes the motion: subtract it from
    the actuator torque to simulate, add it to a command to compensate).

    ``damping`` is ``B`` (URDF ``<dynamics damping>``, N m s/rad or N s/m), ``coulomb`` is ``F_c``
    (URDF ``<dynamics friction>``, N m or N), ``friction_velocity`` is ``eps > 0``, rad/s or m/s:
    ``tanh`` replaces ``sign(qd)`` (reaching 76 % of ``F_c`` at ``qd = eps``) so that the law is
    smooth and the integrators stay stable at rest.
    """
    return damping * qd + coulomb * math.tanh(qd / friction_velocity)


@njit
def friction_torques(damping, coulomb, friction_velocity, qd):
    """:func:`friction_torque` of every joint: ``B qd + F_c tanh(qd / eps)`` for (n,) arrays
    ``damping``, ``coulomb`` and ``qd`` (e.g. ``model.damping``, ``model.friction``).

    >>> friction_torques(np.array([0.5]), np.array([2.0]), 0.01, np.array([1.0]))
    array([2.5])
    """
    out = np.empty(qd.shape[0])
    for i in range(qd.shape[0]):
        out[i] = friction_torque(damping[i], coulomb[i], friction_velocity, qd[i])
    return out
