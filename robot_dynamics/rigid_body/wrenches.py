"""External wrenches on the links, mapped to the coordinates: ``tau = sum_l J_l(q)^T F_l``; and the
one conversion between the library's wrench convention and ROS's.

The compiled :func:`add_wrench_torques` is what the simulator adds to its forces; the batched
:func:`wrench_joint_torques` is what ``inverse_dynamics(..., external_wrenches=...)`` subtracts.

The library's wrench on a link is ``[moment; force]`` in world-aligned (root) axes, the moment about
the link's origin.  A ``geometry_msgs/WrenchStamped`` is in its ``header.frame_id``'s own axes, the
moment about that frame's origin (REP 103; tf2's ``doTransform``).  :func:`transform_wrench` is that
``doTransform``; :func:`wrench_in_frame` and :func:`wrench_in_world` are the two directions of the
message boundary, used by the nodes and nowhere else.
"""

import numpy as np

from ..jit import njit
from .kernels import (
    NO_STATE, POSE_COLUMNS, add_joint_force, check_motion, jacobian_column, joint_poses, point_in_world, vec,
    world_poses
)
from .kernels import pose as pose_row
from .model import PARENT
from ..spatial import add, compose, dot, force_to_parent, rotate, rotate_back, sub


@njit
def add_wrench_torques(topology, bodies, world, wrench_bodies, wrench_points, wrench_values, tau):
    """``tau += sum_l J_l(q)^T F_l`` (the ``J^T F`` of Lynch & Park eq. 9.81) for the wrenches
    ``F_l = [moment; force]`` in world-aligned axes, applied at ``wrench_points[l]`` of body
    ``wrench_bodies[l]`` (-1: the fixed base, no effect); ``world`` holds the bodies' world poses."""
    for l in range(wrench_bodies.shape[0]):
        body = wrench_bodies[l]
        if body < 0:
            continue
        origin = point_in_world(world, body, vec(wrench_points, l, 0))
        moment, force = vec(wrench_values, l, 0), vec(wrench_values, l, 3)
        j = body
        while j >= 0:
            angular, linear = jacobian_column(bodies, world, j, origin)
            add_joint_force(topology, bodies, j, dot(angular, moment) + dot(linear, force), tau)
            j = topology[j, PARENT]


@njit
def wrench_torques(topology, bodies, q, wrench_bodies, wrench_points, wrench_values):
    """:func:`add_wrench_torques` for every state ``k`` of ``q``, wrenches ``wrench_values[k]``."""
    count, n = q.shape
    nb = topology.shape[0]
    poses, world = np.empty((nb, POSE_COLUMNS)), np.empty((nb, POSE_COLUMNS))
    tau = np.zeros((count, n))
    for k in range(count):
        check_motion(q, NO_STATE, NO_STATE, k)
        joint_poses(topology, bodies, q, k, poses)
        world_poses(topology, poses, world)
        add_wrench_torques(topology, bodies, world, wrench_bodies, wrench_points, wrench_values[k], tau[k])
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


def wrench_joint_torques(model, q, external_wrenches):
    """``sum_l J_l(q)^T F_l`` for every state of the ``(count, n)`` batch ``q`` (world-aligned axes, link origin)."""
    arrays = wrench_arrays(model, external_wrenches, q.shape[0])
    return wrench_torques(*model._kernel_arrays[:2], q, *arrays)


@njit
def _pose_tuples(pose):
    """``(R, p)`` of a 4x4 pose: a row-major 9-tuple and a 3-tuple (the kernels' registers)."""
    return ((pose[0, 0], pose[0, 1], pose[0, 2], pose[1, 0], pose[1, 1], pose[1, 2], pose[2, 0], pose[2, 1], pose[2, 2]),
            (pose[0, 3], pose[1, 3], pose[2, 3]))


@njit
def _store(out, n, f):
    for c in range(3):
        out[c], out[3 + c] = n[c], f[c]


@njit
def _in_frame(R, o, point, n, f):
    """``(R^T (n + (point - o) x f), R^T f)``: a world-aligned wrench about the world ``point`` in the axes of
    the frame ``(R, o)``, about its origin: ``doTransform`` with ``T = (R^T, R^T (point - o))``."""
    transposed = (R[0], R[3], R[6], R[1], R[4], R[7], R[2], R[5], R[8])
    return force_to_parent(transposed, rotate_back(R, sub(point, o)), n, f)


@njit
def frame_in_world(world, body, pose):
    """``(R, o)`` of the frame at the fixed ``pose`` (4x4) on ``body`` (-1: the root), from the bodies' world poses."""
    R_fixed, p_fixed = _pose_tuples(pose)
    if body < 0:
        return R_fixed, p_fixed
    R, p = pose_row(world, body)
    return compose(R, R_fixed), add(rotate(R, p_fixed), p)


@njit
def wrench_seen_in(world, wrench, body, pose, frame_body, frame_pose, out):
    """The library's ``wrench`` about the origin of the frame ``(body, pose)`` as a WrenchStamped of the frame
    ``(frame_body, frame_pose)`` reads it (:func:`wrench_in_frame`), into ``out``; poses from ``world``."""
    _, point = frame_in_world(world, body, pose)
    R, o = frame_in_world(world, frame_body, frame_pose)
    n, f = _in_frame(R, o, point, (wrench[0], wrench[1], wrench[2]), (wrench[3], wrench[4], wrench[5]))
    _store(out, n, f)


@njit
def _transform(pose, wrench, out):
    R, p = _pose_tuples(pose)
    n, f = force_to_parent(R, p, (wrench[0], wrench[1], wrench[2]), (wrench[3], wrench[4], wrench[5]))
    _store(out, n, f)


@njit
def _to_frame(frame_pose, point, wrench, out):
    R, o = _pose_tuples(frame_pose)
    n, f = _in_frame(R, o, (point[0], point[1], point[2]), (wrench[0], wrench[1], wrench[2]),
                     (wrench[3], wrench[4], wrench[5]))
    _store(out, n, f)


def _floats(values, size):
    array = np.ascontiguousarray(values, dtype=float)
    if array.size != size:
        raise ValueError(f"expected {size} numbers, got {array.size}")
    return array.reshape(-1) if size != 16 else array.reshape(4, 4)


def transform_wrench(T, wrench):
    """tf2's ``doTransform`` of a wrench ``[moment; force]`` given in frame A into frame B, ``T = T_BA``
    (A's pose in B, 4x4): ``[R n + p x R f; R f]`` (Lynch & Park eq. 8.50, ``F_B = Ad_T^T F_A``, as
    :func:`robot_dynamics.spatial.force_to_parent`; ros2/geometry2 #538)."""
    out = np.empty(6)
    _transform(_floats(T, 16), _floats(wrench, 6), out)
    return out


def wrench_in_frame(wrench, point, frame_pose):
    """The library's wrench ``[moment; force]`` (world-aligned axes, moment about the root-frame ``point``)
    as a WrenchStamped in the frame of pose ``frame_pose`` (4x4, root frame) reads it: components in that
    frame's axes, moment about its origin: ``[R^T (n + (point - o) x f); R^T f]``."""
    out = np.empty(6)
    _to_frame(_floats(frame_pose, 16), _floats(point, 3), _floats(wrench, 6), out)
    return out


def wrench_in_world(wrench, frame_pose):
    """A WrenchStamped's ``[moment; force]`` (the axes of the frame of pose ``frame_pose``, moment about its
    origin) in the library's convention: world-aligned axes, moment about the same origin: ``[R n; R f]``."""
    rotation = np.eye(4)
    rotation[:3, :3] = _floats(frame_pose, 16)[:3, :3]
    return transform_wrench(rotation, wrench)
