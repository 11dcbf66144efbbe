"""A frame's motion and the dynamics in task space (Lynch & Park §9.6, eqs. 9.91-9.99).

- :func:`frame_velocity`: the frame's twist ``V = J(q) qd`` (eq. 9.91).
- :func:`frame_acceleration`: its acceleration ``Vdot = J qdd + Jdot qd`` (eq. 9.92), *spatial*
  (the derivative of the body twist, Featherstone's) or *classical* (``omega_dot`` and the second
  derivative of the frame origin); with ``qdd = 0`` it is the bias ``Jdot qd``.
- :func:`jacobian_derivative_times_rate`: ``Jdot qd``, the bias that belongs to
  :func:`robot_dynamics.jacobian` with the same ``reference`` (``d/dt (J qd)`` at ``qdd = 0``).
- :func:`task_space_bias`: ``eta = Jbar^T h - Lambda Jdot qd`` (eq. 9.99, written for any ``J`` of
  full row rank: ``Jbar^T = Lambda J M^-1`` is ``J^-T`` when ``J`` is square).
- :func:`damped_task_inertia`: ``Lambda = (J M^-1 J^T)^-1`` inverted with damping near a singularity.
- :func:`pose_error`: position and orientation error (the rotation's logarithm), world-aligned.

All motion vectors are ``[angular; linear]``. ``reference="world"``: world-aligned axes at the
frame origin; ``"local"``: the frame's own axes (as :func:`robot_dynamics.jacobian`). Every
quantity comes from one Newton-Euler forward pass without gravity (eqs. 9.54-9.55, the body twists
``V_i`` and accelerations ``Vdot_i`` it leaves behind), never from numeric differentiation.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .dynamics import bias_forces, mass_matrix
from ..jit import njit
from .batches import as_states, matching, unbatch
from .data import frame_jacobian
from .kernels import POSE_COLUMNS, check_motion, newton_euler, pose, store, vec, workspace, world_poses
from .kinematics import REFERENCES, _frame, frame_pose, jacobian
from ..spatial import compose, motion_to_child

__all__ = [
    "frame_velocity", "frame_acceleration", "jacobian_derivative_times_rate", "task_space_bias",
    "damped_task_inertia", "TaskInertia", "pose_error", "rotation_log",
]

KINDS = ("classical", "spatial")
_MOTION_COLUMNS = 21  # the frame's world rotation (9, row-major), its local twist (6), local acceleration (6)


@njit
def _frame_motion(topology, bodies, q, qd, qdd, body, rotation, point):
    """Per state: the frame's world rotation ``R_0f``, its local twist ``V_f = Ad_{T_fb} V_b`` and
    local spatial acceleration ``Vdot_f = Ad_{T_fb} Vdot_b`` (``T_bf = (rotation, point)`` is fixed,
    so the adjoint carries the derivative too), ``V_b``, ``Vdot_b`` from Newton-Euler's forward
    loop (eqs. 9.54-9.55) without gravity; ``qdd`` absent (no rows) is zero."""
    count, n = q.shape
    nb = topology.shape[0]
    scratch = workspace(nb)
    world = np.empty((nb, POSE_COLUMNS))
    tau, no_gravity = np.empty(n), np.zeros(3)
    out = np.zeros((count, _MOTION_COLUMNS))
    for k in range(count):
        check_motion(q, qd, qdd, k)
        newton_euler(topology, bodies, no_gravity, q, qd, qdd, k, scratch, tau)
        world_poses(topology, scratch[0], world)
        R_body, _ = pose(world, body)
        R = compose(R_body, rotation)
        for c in range(9):
            out[k, c] = R[c]
        twists, accelerations = scratch[1], scratch[2]
        omega, v = motion_to_child(rotation, point, vec(twists, body, 0), vec(twists, body, 3))
        alpha, a = motion_to_child(rotation, point, vec(accelerations, body, 0), vec(accelerations, body, 3))
        store(out, k, 9, omega)
        store(out, k, 12, v)
        store(out, k, 15, alpha)
        store(out, k, 18, a)
    return out


def _motion(model, q, qd, frame, qdd=None):
    """``(R_0f, V_f, Vdot_f)`` (local twist and spatial acceleration) for every state, and the batch shape."""
    states, batch = as_states(model, q, "q")
    rates = matching(model, qd, "qd", batch)
    accelerations = rates[:0] if qdd is None else matching(model, qdd, "qdd", batch)
    target = _frame(model, frame)
    if target.body < 0:  # a frame on the fixed base: it never moves
        if not np.all(np.isfinite(states)):
            raise ValueError("q contains NaN or inf")
        count = states.shape[0]
        return np.broadcast_to(target.pose[:3, :3], (count, 3, 3)), np.zeros((count, 6)), np.zeros((count, 6)), batch
    out = _frame_motion(*model._kernel_arrays[:2], states, rates, accelerations, target.body,
                        tuple(target.pose[:3, :3].ravel()), tuple(target.pose[:3, 3]))
    return out[:, :9].reshape(-1, 3, 3), out[:, 9:15], out[:, 15:21], batch


def _check(reference, kind=KINDS[0]):
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {REFERENCES}, got {reference!r}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def _rotated(R, motion):
    """``[R a; R b]`` of ``[a; b]`` rows."""
    return np.concatenate([np.einsum("kij,kj->ki", R, motion[:, :3]), np.einsum("kij,kj->ki", R, motion[:, 3:])], axis=1)


def _classical(twist, acceleration):
    """``(omega_dot, v_dot + omega x v)``: the origin's acceleration from the spatial one (same axes)."""
    classical = acceleration.copy()
    classical[:, 3:] += np.cross(twist[:, :3], twist[:, 3:])
    return classical


def frame_velocity(model, q, qd, frame, reference="world"):
    """The twist ``V = J(q) qd`` of link or frame ``frame`` (Lynch & Park eq. 9.91), ``[omega; v]``.

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> rd.frame_velocity(arm, [0.0, 0.0], [1.0, 0.0], "tip")[[1, 5]]  # about -y; the 2 m tip rises at 2 m/s
    array([-1.,  2.])
    """
    _check(reference)
    R, twist, _, batch = _motion(model, q, qd, frame)
    return unbatch(twist if reference == "local" else _rotated(R, twist), batch)


def frame_acceleration(model, q, qd, frame, reference="world", qdd=None, kind="classical"):
    """The acceleration ``J qdd + Jdot qd`` of link or frame ``frame`` (Lynch & Park eq. 9.92); ``qdd=None``: zero.

    ``kind="spatial"``: ``d/dt`` of the local twist ``V_f = (omega, v)`` (``Vdot_f``), rotated to
    world-aligned axes with ``reference="world"``.  ``kind="classical"``: the angular acceleration
    and the second derivative of the frame origin, ``(omega_dot, v_dot + omega x v)`` in local axes,
    rotated with ``reference="world"``.

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> rd.frame_acceleration(arm, [0.0, 0.0], [1.0, 0.0], "tip")[3:]  # centripetal: 2 m * 1 (rad/s)^2 towards the base
    array([-2.,  0.,  0.])
    """
    _check(reference, kind)
    R, twist, acceleration, batch = _motion(model, q, qd, frame, qdd)
    if kind == "classical":
        acceleration = _classical(twist, acceleration)
    return unbatch(acceleration if reference == "local" else _rotated(R, acceleration), batch)


def jacobian_derivative_times_rate(model, q, qd, frame, reference="world"):
    """``Jdot qd`` for :func:`robot_dynamics.jacobian`'s ``J`` with the same ``reference``: the
    frame's acceleration at ``qdd = 0`` (Lynch & Park eq. 9.92).

    ``d/dt (J_world qd) = (omega_dot, p_ddot)`` is the classical acceleration in world axes;
    ``d/dt (J_local qd) = Vdot_f`` the spatial one in local axes.
    """
    kind = "classical" if reference == "world" else "spatial"
    return frame_acceleration(model, q, qd, frame, reference, kind=kind)


# ----------------------------------------------------------------------------- task-space dynamics

class TaskInertia(NamedTuple):
    """``Lambda`` (damped where ``J`` is near singular), ``M^-1 J^T``, and the conditioning."""

    inertia: np.ndarray           # (m, m) Lambda
    inverse_mass_jt: np.ndarray   # (n, m) M^-1 J^T (a solve, not an inverse)
    conditioning: float           # smallest / largest eigenvalue of J M^-1 J^T
    damped: bool                  # whether the smallest eigenvalue fell below the threshold


def damped_task_inertia(J, M, threshold=1e-6):
    """``Lambda = (J M^-1 J^T)^-1`` (Lynch & Park eq. 9.98, for any ``J`` with ``m <= n`` rows),
    inverted eigenvalue by eigenvalue: ``1 / s`` where ``s >= eps``, ``s / eps^2`` below, with
    ``eps = threshold * s_max``.

    Continuous at ``s = eps`` and bounded by ``1 / eps``: near a singularity the task inertia along
    the lost direction goes to 0 instead of infinity (damped least squares, never a torque
    blow-up); away from it ``Lambda`` is exact.

    >>> t = damped_task_inertia(np.array([[1.0, 0.0], [0.0, 1e-4]]), np.eye(2))
    >>> t.damped, float(t.inertia[1, 1])  # s = 1e-8 < eps = 1e-6: s / eps^2, not 1 / s = 1e8
    (True, 10000.0)
    >>> float(damped_task_inertia(np.array([[1.0, 0.0], [0.0, 0.0]]), np.eye(2)).inertia[1, 1])  # lost: none
    0.0
    """
    inverse_mass_jt = np.linalg.solve(M, J.T)
    inverse = J @ inverse_mass_jt
    values, vectors = np.linalg.eigh(0.5 * (inverse + inverse.T))
    largest = max(values[-1], 0.0)
    eps = threshold * largest if largest > 0.0 else 1.0
    clipped = np.maximum(values, 0.0)
    inverted = clipped / np.maximum(clipped, eps) ** 2
    inertia = (vectors * inverted) @ vectors.T
    conditioning = float(clipped[0] / largest) if largest > 0.0 else 0.0
    return TaskInertia(inertia, inverse_mass_jt, conditioning, bool(clipped[0] < eps))


def task_space_bias(model, q, qd, frame, reference="world"):
    """``eta = Jbar^T h(q, qd) - Lambda Jdot qd`` with ``Jbar^T = Lambda J M^-1`` (Lynch & Park
    eq. 9.99; ``Jbar^T = J^-T`` for a square ``J``): ``F = Lambda Vdot + eta`` (eq. 9.97).

    One state; raises ValueError where ``J`` has rank < 6 (``Lambda`` undefined), as
    :func:`robot_dynamics.operational_space_inertia`.
    """
    J = jacobian(model, q, frame, reference)
    if np.ndim(J) != 2:
        raise ValueError("task_space_bias takes one state")
    if np.linalg.matrix_rank(J) < 6:
        raise ValueError(f"the Jacobian of frame {frame!r} has rank < 6 here: eta is undefined")
    task = damped_task_inertia(J, mass_matrix(model, q), threshold=0.0)
    jbar_t = task.inertia @ task.inverse_mass_jt.T
    return jbar_t @ bias_forces(model, q, qd) - task.inertia @ jacobian_derivative_times_rate(model, q, qd, frame, reference)


# ----------------------------------------------------------------------------- pose error

def rotation_log(R):
    """``omega theta`` with ``exp([omega] theta) = R``, ``theta`` in ``[0, pi]`` (Lynch & Park
    eq. 3.58-3.61, the matrix logarithm of a rotation).

    >>> rotation_log(np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])).round(6)  # 90 deg about z
    array([0.      , 0.      , 1.570796])
    """
    R = np.asarray(R, dtype=float)
    cosine = min(1.0, max(-1.0, 0.5 * (np.trace(R) - 1.0)))
    theta = math.acos(cosine)
    skew = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if theta < 1e-6:  # sin(theta)/theta -> 1: 0.5 * skew is exact to O(theta^3)
        return 0.5 * skew * (1.0 + theta * theta / 6.0)
    if theta < math.pi - 1e-3:
        return theta / (2.0 * math.sin(theta)) * skew
    # near pi: R + I = 2 omega omega^T (+ O(pi - theta)); the largest column gives omega, skew its sign
    column = int(np.argmax(np.diag(R)))
    omega = (R[:, column] + np.eye(3)[column]) / math.sqrt(max(2.0 * (1.0 + R[column, column]), 1e-300))
    omega /= np.linalg.norm(omega)
    if omega @ skew < 0.0:
        omega = -omega
    return theta * omega


def pose_error(desired, actual):
    """``e = [log(R_d R^T); p_d - p]`` between two 4x4 poses in the root frame: the rotation, in
    world-aligned axes, that takes the actual orientation to the desired one (rad), then the
    position error (m).  ``e_dot = V_d - V`` to first order for world-aligned twists.

    >>> pose_error(np.eye(4), np.diag([1.0, -1.0, -1.0, 1.0])).round(6)  # half a turn about x
    array([3.141593, 0.      , 0.      , 0.      , 0.      , 0.      ])
    """
    desired, actual = np.asarray(desired, dtype=float), np.asarray(actual, dtype=float)
    return np.concatenate([rotation_log(desired[:3, :3] @ actual[:3, :3].T), desired[:3, 3] - actual[:3, 3]])


# ----------------------------------------------------------------------------- directions and the frame's state

#: The task directions by name, in the order gains are given (position first, then rotation); our
#: motion vectors are ``[angular; linear]``, so ``x y z`` are rows 3-5 and ``rx ry rz`` rows 0-2.
AXES = ("x", "y", "z", "rx", "ry", "rz")
_ROWS = {"x": 3, "y": 4, "z": 5, "rx": 0, "ry": 1, "rz": 2}


def task_rows(axes):
    """The rows of ``[angular; linear]`` motion vectors that ``axes`` (names of :data:`AXES`) select,
    in :data:`AXES` order.

    >>> task_rows(["x", "y", "z"]), task_rows(AXES)
    (array([3, 4, 5]), array([3, 4, 5, 0, 1, 2]))
    """
    unknown = [a for a in axes if a not in _ROWS]
    if unknown or len(set(axes)) != len(axes) or not axes:
        raise ValueError(f"task directions must be distinct names among {' '.join(AXES)}, got {list(axes)}")
    return np.array([_ROWS[a] for a in AXES if a in axes])


class FrameState(NamedTuple):
    """A frame's pose ``T_0f``, world-aligned Jacobian, twist ``J qd`` and bias ``Jdot qd`` (classical)."""

    pose: np.ndarray
    jacobian: np.ndarray
    velocity: np.ndarray
    bias_acceleration: np.ndarray


def frame_state(model, q, qd, frame):
    """:class:`FrameState` of one state, world-aligned axes at the frame origin (eqs. 9.91-9.92)."""
    R, twist, acceleration, _ = _motion(model, q, qd, frame)
    R, (wx, wy, wz, vx, vy, vz), spatial = R[0], twist[0], acceleration[0]
    # one state: plain 3x3 products (numpy's cross and einsum cost more than the whole Newton-Euler pass here)
    classical = spatial[3:] + (wy * vz - wz * vy, wz * vx - wx * vz, wx * vy - wy * vx)
    velocity = np.concatenate([R @ twist[0, :3], R @ twist[0, 3:]])
    bias = np.concatenate([R @ spatial[:3], R @ classical])
    return FrameState(frame_pose(model, q, frame), jacobian(model, q, frame), velocity, bias)


def frame_state_from_data(data, q, frame):
    """:class:`FrameState` from a :class:`robot_dynamics.Data` that :func:`robot_dynamics.compute_terms`
    filled for ``q`` with ``BIAS | WORLD``: the Jacobian from the pass's world poses, the body's world
    pose, twist ``V_b`` and ``Jdot_b qd`` (the pass's accelerations at ``qdd = 0`` without gravity) moved
    to the frame, as :func:`frame_state` but without a pass of its own (eqs. 9.91-9.92)."""
    model = data.model
    target = _frame(model, frame)
    J = np.zeros((6, model.nv))
    frame_jacobian(*model._kernel_arrays[:2], data.world, target.body, tuple(target.pose[:3, 3]), J)
    if target.body < 0:
        return FrameState(target.pose.copy(), J, np.zeros(6), np.zeros(6))
    row = data.world[target.body]
    R_body, p_body = row[:9].reshape(3, 3), row[9:]
    offset = target.pose[:3, 3]
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = R_body @ target.pose[:3, :3], R_body @ offset + p_body
    omega, v = data.twists[target.body, :3], data.twists[target.body, 3:]
    alpha, a = data.accelerations[target.body, :3], data.accelerations[target.body, 3:]
    # at the frame origin (the adjoint by the fixed offset), then in world axes; classical: + omega x v
    omega_w, v_w = R_body @ omega, R_body @ (v + np.cross(omega, offset))
    classical = R_body @ (a + np.cross(alpha, offset)) + np.cross(omega_w, v_w)
    return FrameState(pose, J, np.concatenate([omega_w, v_w]), np.concatenate([R_body @ alpha, classical]))
