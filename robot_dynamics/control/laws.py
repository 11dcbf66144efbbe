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
- :func:`operational_space_torque`: ``tau = J^T [Lambda (xdd_d + Kd (xd_d - xd) + Kp e) + eta] + N tau_0``,
  the task-space dynamics (L&P eqs. 9.97-9.99) of the commanded frame acceleration: with an exact
  model every task direction obeys ``e'' + Kd e' + Kp e = 0``.
- :func:`cartesian_impedance_torque`: ``tau = J^T [K e + D (xd_d - xd)] + C(q, qd) qd + g(q) + N tau_0``,
  a spring-damper at the frame, the robot's own dynamics compensated except its inertia.
- :func:`null_space_torque`: ``N tau_0`` with ``N = I - J^T Jbar^T``, ``Jbar = M^-1 J^T Lambda``,
  the torques that leave the frame's acceleration alone (dynamically consistent).

  In both task-space laws ``J`` is the world-aligned Jacobian's rows of the controlled directions
  (:func:`robot_dynamics.rigid_body.task_space.task_rows`), ``e`` the pose error of those rows
  (:func:`robot_dynamics.rigid_body.task_space.pose_error`), ``Lambda`` the damped task inertia
  (:func:`robot_dynamics.rigid_body.task_space.damped_task_inertia`: bounded near a singularity, exact away
  from one); they return the torque and that :class:`~robot_dynamics.rigid_body.task_space.TaskInertia`, whose
  ``damped`` flag is the singularity diagnostic.

The joint friction law these laws may add (``compensate_friction``) is the model's own,
:mod:`robot_dynamics.rigid_body.friction`.
"""

from __future__ import annotations

import math

import numpy as np

from ..rigid_body.task_space import damped_task_inertia

__all__ = [
    "computed_torque", "joint_pd", "position_error",
    "operational_space_torque", "cartesian_impedance_torque", "null_space_torque", "critical_damping",
]


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


def null_space_torque(J, task, torque):
    """``N tau_0 = tau_0 - J^T Jbar^T tau_0`` with ``Jbar^T = Lambda J M^-1`` (Khatib's dynamically
    consistent projector): ``J M^-1 N = 0``, so it adds no acceleration to the frame.  ``task`` is
    :func:`~robot_dynamics.rigid_body.task_space.damped_task_inertia` of ``J`` and ``M``.

    >>> from robot_dynamics.rigid_body.task_space import damped_task_inertia
    >>> J, M = np.array([[1.0, 1.0]]), np.diag([1.0, 3.0])
    >>> task = damped_task_inertia(J, M)
    >>> tau = null_space_torque(J, task, np.array([1.0, 0.0]))
    >>> bool(abs(J @ np.linalg.solve(M, tau))[0] < 1e-15)  # no frame acceleration
    True
    """
    return torque - J.T @ (task.inertia @ (task.inverse_mass_jt.T @ torque))


def operational_space_torque(J, mass_matrix, bias, bias_acceleration, acceleration_desired, error, velocity_error,
                             kp, kd, posture_torque, threshold=1e-6):
    """``tau = J^T F + N tau_0`` with ``F = Lambda (xdd_d + Kd (xd_d - xd) + Kp e) + eta`` (Lynch & Park
    eq. 9.97 solved for the commanded acceleration) and ``eta = Lambda J M^-1 h - Lambda Jdot qd``
    (eq. 9.99 with ``Jbar^T = Lambda J M^-1``, ``J^-T`` when ``J`` is square).

    ``J`` (m, n) and the (m,) task vectors share their rows; ``bias_acceleration`` is ``Jdot qd``;
    ``mass_matrix``/``bias`` are ``M(q)``/``h(q, qd)``; gains in 1/s^2 and 1/s (scalars or (m,)).
    With an exact model, ``J qdd + Jdot qd`` equals the commanded acceleration (``Lambda`` exact:
    away from a singularity).  Returns ``(tau, task)``.

    >>> J, M, h = np.eye(2), np.diag([2.0, 1.0]), np.array([0.5, -0.5])
    >>> tau, _ = operational_space_torque(J, M, h, np.zeros(2), np.zeros(2), np.array([0.1, 0.0]), np.zeros(2),
    ...                                   100.0, 20.0, np.zeros(2))
    >>> tau  # J = I: the joint-space computed torque
    array([20.5, -0.5])
    """
    task = damped_task_inertia(J, mass_matrix, threshold)
    commanded = acceleration_desired + kd * velocity_error + kp * error - bias_acceleration
    force = task.inertia @ (commanded + task.inverse_mass_jt.T @ bias)
    return J.T @ force + null_space_torque(J, task, posture_torque), task


def critical_damping(stiffness, task_inertia):
    """``D = 2 sqrt(K_i Lambda_ii)`` per direction: critical damping of each direction's spring
    with the frame's apparent inertia there (``Lambda``'s diagonal, task rows)."""
    return 2.0 * np.sqrt(np.asarray(stiffness) * np.maximum(np.diag(task_inertia), 0.0))


def cartesian_impedance_torque(J, mass_matrix, bias, error, velocity_error, stiffness, damping, posture_torque,
                               threshold=1e-6):
    """``tau = J^T [K e + D (xd_d - xd)] + C(q, qd) qd + g(q) + N tau_0`` (``C qd + g = h = bias``).

    ``K`` (N/m, N m/rad) and ``D`` (N s/m, N m s/rad) are diagonal, (m,) in ``J``'s rows, or scalars;
    ``damping=None``: :func:`critical_damping`.  At rest under an external wrench ``F`` at the frame,
    ``K e + F = 0``: the frame yields by ``K^-1 F``.  Returns ``(tau, task)``.
    """
    task = damped_task_inertia(J, mass_matrix, threshold)
    if damping is None:
        damping = critical_damping(stiffness, task.inertia)
    force = stiffness * error + damping * velocity_error
    return J.T @ force + bias + null_space_torque(J, task, posture_torque), task
