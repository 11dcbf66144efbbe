"""The control laws of the nodes, the simulator and the demo, one implementation each.

All act on joint-space arrays in model order (or any common order), SI units, as in
``M(q) qdd + b(q, qd) = tau`` (L&P eq. 9.1, ``b = h`` here: Coriolis, centrifugal and gravity
torques; :func:`robot_dynamics.bias_forces`).

- :func:`joint_pd`: ``Kp (q_d - q) + Kd (qd_d - qd)``, the PD law (a torque with gains in N m/rad,
  or an acceleration with gains in 1/s^2 and 1/s inside :func:`computed_torque`).
- :func:`position_error`: ``q_d - q``, wrapped to ``[-pi, pi)`` on continuous joints (the short way
  round).
- :func:`computed_torque`: ``tau = M(q) (qdd_d + Kd (qd_d - qd) + Kp (q_d - q)) + h(q, qd)``: the
  inverse dynamics (9.1) of the commanded acceleration; with an exact model every joint's error
  obeys ``e'' + Kd e' + Kp e = 0``.
- :func:`friction_torque` / :func:`friction_torques`: ``B qd + F_c tanh(qd / eps)``, viscous
  damping ``B`` plus Coulomb friction ``F_c`` smoothed over the velocity scale ``eps``
  (``friction_velocity``). Compiled with numba: the simulator's compiled step calls
  :func:`friction_torque` per joint, Python code calls :func:`friction_torques`.
"""

from __future__ import annotations

import math

import numpy as np

from .jit import njit

__all__ = ["computed_torque", "friction_torque", "friction_torques", "joint_pd", "position_error"]


def joint_pd(kp, kd, position_error, velocity_error):
    """``Kp e + Kd e'`` with ``e = q_d - q`` and ``e' = qd_d - qd`` (diagonal gains: scalars or
    per-joint arrays).

    >>> joint_pd(100.0, 20.0, np.array([0.01, 0.0]), np.array([0.0, -0.5]))
    array([  1., -10.])
    """
    return kp * position_error + kd * velocity_error


def position_error(q_desired, q, continuous=None):
    """``q_d - q``; where ``continuous`` (a boolean mask) is true, wrapped to ``[-pi, pi)``: a
    continuous joint turns the short way to its target.

    >>> position_error(np.array([3.0, 3.0]), np.array([-3.0, -3.0]), np.array([True, False]))
    array([-0.28318531,  6.        ])
    """
    error = q_desired - q
    if continuous is not None and continuous.any():  # (the last axis: one state, or a series of them)
        error[..., continuous] = np.remainder(error[..., continuous] + math.pi, 2 * math.pi) - math.pi
    return error


def computed_torque(mass_matrix, bias, qdd_desired, position_error, velocity_error, kp, kd):
    """``tau = M(q) (qdd_d + Kd (qd_d - qd) + Kp (q_d - q)) + h(q, qd)``.

    The inverse dynamics (L&P eq. 9.1) of the commanded acceleration ``v = qdd_d + Kp e + Kd e'``:
    with ``M`` and ``h`` of the robot, the closed loop is ``e'' + Kd e' + Kp e = 0`` per joint
    (``kd = 2 sqrt(kp)``: critically damped). ``mass_matrix`` is ``M(q)`` (n, n), ``bias`` is
    ``h(q, qd)`` (n,); errors, gains and ``qdd_desired`` are (n,) or broadcast to it.

    >>> M, h = np.diag([2.0, 1.0]), np.array([0.5, -0.5])
    >>> computed_torque(M, h, np.zeros(2), np.array([0.1, 0.0]), np.zeros(2), 100.0, 20.0)
    array([20.5, -0.5])
    """
    return mass_matrix @ (qdd_desired + joint_pd(kp, kd, position_error, velocity_error)) + bias


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
