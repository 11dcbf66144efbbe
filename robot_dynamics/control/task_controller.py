"""Task-space control of one frame from a robot state: the settings, the target, one torque.

The node, the demo and the tests call :func:`task_space_torque`, which evaluates the frame's
state (:func:`robot_dynamics.rigid_body.task_space.frame_state`), ``M`` and ``h`` and applies one of the two
laws of :mod:`robot_dynamics.control.laws` (:func:`~robot_dynamics.control.laws.operational_space_torque`,
:func:`~robot_dynamics.control.laws.cartesian_impedance_torque`), with the posture PD
``tau_0 = Kp_posture (q_rest - q) - Kd_posture qd`` in the null space.

Conventions: the target pose is in the root link's frame; twists and accelerations are
``[angular; linear]`` in world-aligned (root) axes at the frame origin, the angular acceleration and
the origin's second derivative (classical); the error is :func:`~robot_dynamics.rigid_body.task_space.pose_error`
(``[log(R_d R^T); p_d - p]``).  Gains are per controlled direction, in the order of
:data:`~robot_dynamics.rigid_body.task_space.AXES` (``x y z rx ry rz``) restricted to ``axes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .laws import cartesian_impedance_torque, joint_pd, operational_space_torque, position_error
from ..rigid_body.dynamics import bias_forces, mass_matrix
from ..rigid_body.task_space import AXES, frame_state, frame_state_from_data, pose_error, task_rows

__all__ = ["MODES", "TaskSpaceSettings", "TaskTarget", "TaskResult", "task_space_torque", "default_axes"]

MODES = ("computed_torque", "impedance")


def default_axes(nv):
    """All six directions for arms with six joints or more, the position alone for fewer."""
    return AXES if nv >= 6 else AXES[:3]


def _per_axis(values, axes, name):
    """One value for every direction, one per direction of ``axes``, or six (``x y z rx ry rz``, of
    which those of ``axes`` are taken); finite and >= 0."""
    array = np.asarray(values, dtype=float).ravel()
    count = len(axes)
    if array.size == 1:
        array = np.full(count, array[0])
    elif array.size == len(AXES) and count < len(AXES):
        array = array[[AXES.index(a) for a in axes]]
    if array.size != count or not np.all(np.isfinite(array)) or np.any(array < 0):
        raise ValueError(f"{name} must be one value, {count} (one per direction {' '.join(axes)}) or six, "
                         f"finite and >= 0, got {array.tolist()}")
    return array


@dataclass(frozen=True)
class TaskSpaceSettings:
    """What :func:`task_space_torque` controls and how.

    ``kp``/``kd``: the computed-torque gains (1/s^2, 1/s); ``stiffness``/``damping``: the impedance
    (N/m then N m/rad; N s/m then N m s/rad; ``damping=None`` critical).  Each is one value or one per
    direction of ``axes``.  ``rest``: the posture (``None``: no posture torque), with joint gains
    ``posture_kp`` (N m/rad) and ``posture_kd`` (N m s/rad).  ``threshold``: the eigenvalue of
    ``J M^-1 J^T`` (SI units), relative to its largest, below which ``Lambda`` is damped.
    """

    frame: str
    mode: str = "computed_torque"
    axes: tuple = AXES
    kp: object = 100.0
    kd: object = 20.0
    stiffness: object = (500.0, 500.0, 500.0, 50.0, 50.0, 50.0)
    damping: object = None
    rest: object = None
    posture_kp: object = 10.0
    posture_kd: object = 2.0
    threshold: float = 1e-6

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"task-space mode must be one of {MODES}, got {self.mode!r}")
        axes = tuple(self.axes)
        rows = task_rows(axes)
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen dataclass)
        set_("axes", axes)
        set_("rows", rows)
        for name in ("kp", "kd", "stiffness"):
            set_(name, _per_axis(getattr(self, name), axes, name))
        if self.damping is not None and np.size(self.damping) > 0:
            set_("damping", _per_axis(self.damping, axes, "damping"))
        else:
            set_("damping", None)


class TaskTarget(NamedTuple):
    """The desired pose (4x4, root frame), twist and acceleration (6, ``[angular; linear]``, world axes)."""

    pose: np.ndarray
    twist: np.ndarray = np.zeros(6)
    acceleration: np.ndarray = np.zeros(6)


class TaskResult(NamedTuple):
    """The torque, the full 6-row pose error and velocity error, and the singularity diagnostic."""

    torque: np.ndarray
    error: np.ndarray
    velocity_error: np.ndarray
    conditioning: float
    damped: bool


def _posture_torque(model, settings, q, qd):
    if settings.rest is None:
        return np.zeros(model.nv)
    return joint_pd(settings.posture_kp, settings.posture_kd,
                    position_error(np.asarray(settings.rest, dtype=float), q, model.continuous), -qd)


def task_space_torque(model, settings, q, qd, target, data=None):
    """The torque of ``settings.mode``'s law at state ``(q, qd)`` towards ``target`` (one state).

    ``data``: a :class:`robot_dynamics.Data` of ``model`` that :func:`robot_dynamics.compute_terms`
    filled for ``(q, qd)`` with ``BIAS | MASS | WORLD`` (the dynamics node's one pass): ``M``, ``h``,
    the frame's pose, twist and ``Jdot qd`` are read from it instead of computed again."""
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    if data is None:
        frame, M, h = frame_state(model, q, qd, settings.frame), mass_matrix(model, q), bias_forces(model, q, qd)
    else:
        frame, M, h = frame_state_from_data(data, q, settings.frame), data.M, data.h
    error = pose_error(target.pose, frame.pose)
    velocity_error = np.asarray(target.twist, dtype=float) - frame.velocity
    rows = settings.rows
    J = frame.jacobian[rows]
    posture = _posture_torque(model, settings, q, qd)
    if settings.mode == "computed_torque":
        torque, task = operational_space_torque(
            J, M, h, frame.bias_acceleration[rows], np.asarray(target.acceleration, dtype=float)[rows], error[rows],
            velocity_error[rows], settings.kp, settings.kd, posture, settings.threshold)
    else:
        torque, task = cartesian_impedance_torque(
            J, M, h, error[rows], velocity_error[rows], settings.stiffness, settings.damping, posture,
            settings.threshold)
    return TaskResult(torque, error, velocity_error, task.conditioning, task.damped)
