"""A wrist force/torque sensor: the wrench a fixed joint transmits, as the sensor there reads it.

A sensor sits at a link attached by a fixed joint (the sensor *frame*); it carries everything on the
tool side: that link and every link beyond it (URDF links, a payload there), including moving
bodies hanging from them (a gripper's fingers). The model folds fixed links into their moving
parent, so the tool side is no body of its own: :class:`ForceTorqueSensor` keeps, once per model,
the tool side's share of the carrying body's inertia and the moving bodies hanging from it.

Newton-Euler for the tool side (Lynch & Park eqs. 9.42, 9.56; gravity as the base's fictitious
acceleration ``(0, -g)``, as the recursions take it) gives the wrench the sensor exerts on the tool:
``W = I Vdot - ad_V^T I V + sum_children Ad^T F_child`` (``I Vdot`` with gravity is ``I a - f_gravity``).
A sensor reads the wrench the tool exerts on it, ``-W``, plus the external wrenches acting on the
tool side (the environment's push passes through the sensor): a 1 kg mass hanging below the sensor
reads 9.81 N along gravity. Readings are ``[moment; force]`` in the sensor frame's axes, the moment
about its origin (ROS's rule for a WrenchStamped in that frame).

>>> import numpy as np, robot_dynamics as rd
>>> from robot_dynamics.description.robots import bundled_urdf
>>> from robot_dynamics.rigid_body.sensor import ForceTorqueSensor
>>> arm = rd.load_urdf(bundled_urdf("arm7_gripper"))
>>> sensor = ForceTorqueSensor(arm, "arm7_hand")  # the hand (0.7 kg) and its fingers (0.05 kg each)
>>> reading = sensor.reading(np.zeros(8), np.zeros(8), np.zeros(8))  # still: their weight only
>>> round(float(np.linalg.norm(reading[3:]) / 9.81), 6)  # kg
0.8
"""

from __future__ import annotations

import numpy as np

from ..jit import inline, njit
from ..spatial import add, body_force, force_to_parent, rotate_back, scale
from .kernels import check_motion, newton_euler, pose, vec, workspace
from .model import inertial_parameters_about_origin, move_inertial_parameters
from .wrenches import wrench_in_frame

__all__ = ["BAD_READING", "COMPENSATED", "IMPLAUSIBLE", "NO_STATE", "STALE_STATE", "ForceTorqueSensor", "record_state",
           "sensor_problem", "tool_links"]


def tool_links(model, frame: str) -> tuple:
    """The links on the tool side of the sensor at ``frame``: that link and every link beyond it."""
    beyond, changed = {frame}, True
    frames = model.frames
    while changed:  # (links are listed parents first: one pass suffices; the loop is for safety)
        changed = False
        for link in model.link_names:
            if link not in beyond and frames[link].parent in beyond:
                beyond.add(link)
                changed = True
    return tuple(link for link in model.link_names if link in beyond)


def sensor_problem(model, frame: str) -> str:
    """Why ``frame`` cannot carry a force/torque sensor ('' when it can): it must be a link attached to
    its parent by a fixed joint (the joint whose wrench the sensor measures)."""
    if frame not in model.frames:
        return f"{frame!r} is not a link of robot {model.name!r}"
    link = model.frames[frame]
    if not link.parent:
        return f"{frame!r} is the root link: no joint attaches it"
    if not link.fixed:
        return (f"{frame!r} is attached by a moving joint: a force/torque sensor is a link attached by a fixed joint "
                f"(e.g. the sensor link between the flange and the tool)")
    return ""


class ForceTorqueSensor:
    """The sensor at link ``frame`` of ``model``; ``payload`` ``(link, mass, com, inertia)`` as
    :meth:`~robot_dynamics.rigid_body.model.RobotModel.with_payload` takes it, counted when its link is on
    the tool side. Give the model *with* that payload applied (its moving bodies carry it) or a payload
    on a folded link only: the folded share is taken from the URDF links, so a payload there must be named.
    ValueError names the problem."""

    def __init__(self, model, frame: str, payload=None):
        problem = sensor_problem(model, frame)
        if problem:
            raise ValueError(problem)
        self.model, self.frame = model, frame
        links = tool_links(model, frame)
        self.links = links
        sensor = model.frames[frame]
        self.body = sensor.body  # the moving body carrying the sensor (-1: the fixed base)
        self.pose = np.array(sensor.pose)  # the sensor frame in that body's frame
        parameters = np.zeros(10)
        for link in links:  # the tool side's share of the carrying body, about that body's origin
            f = model.frames[link]
            if f.body == self.body:
                parameters += move_inertial_parameters(f.inertial, f.pose[:3, :3], f.pose[:3, 3])
        if payload is not None and payload[0] in links and model.frames[payload[0]].body == self.body:
            link, mass, com, inertia = payload
            inertia = np.asarray(inertia, dtype=float)
            if inertia.shape == (6,):
                xx, xy, xz, yy, yz, zz = inertia
                inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
            f = model.frames[link]
            parameters += move_inertial_parameters(inertial_parameters_about_origin(mass, com, inertia),
                                                   f.pose[:3, :3], f.pose[:3, 3])
        self.parameters = parameters
        # the moving bodies hanging from the tool side's folded links (their subtrees' wrenches add up in them)
        self.children = np.array(sorted(model.frames[link].body for link in links
                                        if not model.frames[link].fixed and model.frames[link].parent in links
                                        and model.frames[model.frames[link].parent].body == self.body), dtype=np.int64)
        self._arguments = (*model._kernel_arrays, self.body, self.parameters, self.children,
                           tuple(self.pose[:3, :3].ravel()), tuple(self.pose[:3, 3]))
        self._sensor = np.concatenate((self.parameters, self.pose[:3, :3].ravel(), self.pose[:3, 3]))

    def reading(self, q, qd, qdd, out=None):
        """The reading ``[moment; force]`` (sensor axes, moment about its origin) of the tool side's weight
        and inertia at the state ``(q, qd, qdd)``: ``-W`` (module docstring), no external wrenches.
        One state, ``(n,)`` each; ``out`` (6,) is filled and returned when given. ValueError on a non-finite state."""
        out = np.empty(6) if out is None else out
        topology, bodies, gravity, body, parameters, children, rotation, point = self._arguments
        _reading(topology, bodies, gravity, np.asarray(q, dtype=float).reshape(1, -1),
                 np.asarray(qd, dtype=float).reshape(1, -1), np.asarray(qdd, dtype=float).reshape(1, -1),
                 body, parameters, children, rotation, point, out)
        return out

    def compensate(self, raw, checks, wrenches, residuals, k, history, stamps, t, q_received, qd_received, limit):
        """The hot path of a node compensating readings, one compiled call: ``(status, gap, max |qd|)``.

        ``raw`` (6 floats ``[moment; force]``) must lie within ``checks`` (8: a bound per component, then
        the force's and the moment's norm), else ``BAD_READING``; every receive time of the state's positions
        and velocities (``q_received``, ``qd_received``, int64) at least ``limit``, else ``STALE_STATE``. Of the states recorded by
        :func:`record_state` (``stamps`` rows ``(t, ready)``), the one with an acceleration stamped nearest
        ``t`` (none: ``NO_STATE``), ``gap`` = its stamp - ``t``: ``residuals[k] = raw - reading(q, qd, qdd)``
        at that state carried to ``t`` (``q + qd dt + qdd dt^2 / 2``, ``qd + qdd dt``, ``dt = -gap``),
        ``wrenches[1] = residuals[k] - wrenches[0]`` (the bias) and ``wrenches[2]`` the same in a
        Wrench message's order ``[force; moment]``; ``IMPLAUSIBLE`` when it is beyond the norms of ``checks``."""
        topology, bodies, gravity, body, parameters, children, rotation, point = self._arguments
        return _compensate(topology, bodies, gravity, body, self._sensor, children, raw, checks, wrenches, residuals,
                           k, history, stamps, t, q_received, qd_received, limit)

    def external_reading(self, sensor_pose, external_wrenches, link_origins):
        """The reading of the external wrenches ``{link: [moment; force]}`` (world-aligned axes, moment about
        the link's origin ``link_origins[link]``) acting on the tool side; ``sensor_pose`` the sensor frame's
        world pose (4x4). Wrenches on links before the sensor do not pass through it."""
        total = np.zeros(6)
        for link, wrench in external_wrenches.items():
            if link in self.links:
                total += wrench_in_frame(wrench, link_origins[link], sensor_pose)
        return total


@njit
def _reading(topology, bodies, gravity, q, qd, qdd, body, parameters, children, rotation, point, out):
    """``-W`` in the sensor frame into ``out`` (:func:`_prediction`)."""
    moment, force = _prediction(topology, bodies, gravity, q, qd, qdd, body, parameters, children, rotation, point)
    for c in range(3):
        out[c] = moment[c]
        out[3 + c] = force[c]


@njit
def record_state(history, stamps, last, q, qd, t, tau, timeout):
    """Row of ``(q, qd, qdd)`` for the state of stamp ``t`` in the ring ``history`` (rows, 3, n) after row
    ``last`` (-1: none yet); returns the row written; ``stamps[row] = (t, 1 if it has an acceleration)``.
    ``qdd`` is the difference of the velocities over the stamps, low-passed with time constant ``tau``
    (weight ``dt / (tau + dt)``); a gap longer than ``timeout`` or a stamp going back restarts it (no
    acceleration in that row); a repeated stamp is the same state: nothing is written."""
    if last >= 0 and t == stamps[last, 0]:
        return last
    k = 0 if last < 0 else (last + 1) % stamps.shape[0]
    dt = t - stamps[last, 0] if last >= 0 else -1.0
    fresh = last >= 0 and 0.0 < dt <= timeout
    weight = dt / (tau + dt) if fresh else 0.0
    filtered = fresh and stamps[last, 1] > 0.0
    for i in range(q.shape[0]):
        history[k, 0, i] = q[i]
        history[k, 1, i] = qd[i]
        if fresh:
            raw = (qd[i] - history[last, 1, i]) / dt
            history[k, 2, i] = history[last, 2, i] + weight * (raw - history[last, 2, i]) if filtered else raw
        else:
            history[k, 2, i] = 0.0
    stamps[k, 0] = t
    stamps[k, 1] = 1.0 if fresh else 0.0
    return k


#: what :meth:`ForceTorqueSensor.compensate` returns first
COMPENSATED, BAD_READING, STALE_STATE, NO_STATE, IMPLAUSIBLE = 0, 1, 2, 3, 4


@njit
def _compensate(topology, bodies, gravity, body, sensor, children, raw, checks, wrenches, residuals, k, history,
                stamps, t, q_received, qd_received, limit):
    """:meth:`ForceTorqueSensor.compensate` (``sensor``: the ten inertial parameters, the rotation row-major
    and the origin of the sensor in its body)."""
    for c in range(6):  # (a NaN fails the comparison)
        if not abs(raw[c]) <= checks[c]:
            return BAD_READING, 0.0, 0.0
    if not (_norm2(raw, 0) <= checks[7] * checks[7] and _norm2(raw, 3) <= checks[6] * checks[6]):
        return BAD_READING, 0.0, 0.0
    for i in range(q_received.shape[0]):
        if q_received[i] < limit or qd_received[i] < limit:
            return STALE_STATE, 0.0, 0.0
    best, gap = -1, np.inf
    for row in range(stamps.shape[0]):
        if stamps[row, 1] > 0.0 and abs(stamps[row, 0] - t) < gap:
            best, gap = row, abs(stamps[row, 0] - t)
    if best < 0:
        return NO_STATE, np.inf, 0.0
    n = history.shape[2]
    # the state carried to the reading's stamp (its qdd held over the gap): the nearest state may be a step
    # off (a state the node missed, or a reading stamped between two)
    dt = t - stamps[best, 0]
    q, qd, qdd = np.empty((1, n)), np.empty((1, n)), np.empty((1, n))
    for i in range(n):
        a = history[best, 2, i]
        q[0, i] = history[best, 0, i] + (history[best, 1, i] + 0.5 * a * dt) * dt
        qd[0, i] = history[best, 1, i] + a * dt
        qdd[0, i] = a
    rotation = (sensor[10], sensor[11], sensor[12], sensor[13], sensor[14], sensor[15], sensor[16], sensor[17], sensor[18])
    moment, force = _prediction(topology, bodies, gravity, q, qd, qdd, body, sensor[:10], children, rotation,
                                (sensor[19], sensor[20], sensor[21]))
    residual, bias, out, message = residuals[k], wrenches[0], wrenches[1], wrenches[2]
    for c in range(3):
        residual[c] = raw[c] - moment[c]
        residual[3 + c] = raw[3 + c] - force[c]
    for c in range(6):
        out[c] = residual[c] - bias[c]
    for c in range(3):
        message[c], message[3 + c] = out[3 + c], out[c]
    fastest = 0.0
    for i in range(n):
        fastest = max(fastest, abs(qd[0, i]))
    if not (_norm2(out, 0) <= checks[7] * checks[7] and _norm2(out, 3) <= checks[6] * checks[6]):
        return IMPLAUSIBLE, stamps[best, 0] - t, fastest
    return COMPENSATED, stamps[best, 0] - t, fastest


@inline
def _norm2(w, start):
    """``|w[start:start + 3]|^2`` (inlined: a compiled function would compile once per literal ``start``)."""
    return w[start] * w[start] + w[start + 1] * w[start + 1] + w[start + 2] * w[start + 2]


@njit
def _prediction(topology, bodies, gravity, q, qd, qdd, body, parameters, children, rotation, point):
    """``-W`` in the sensor frame, ``(moment, force)``: Newton-Euler (which leaves each body's twist,
    acceleration and subtree wrench) at state 0, then the tool side's own share plus its hanging subtrees."""
    nb, n = topology.shape[0], q.shape[1]
    state = n - n  # the only state, 0, as a variable: a literal 0 would compile a second newton_euler
    check_motion(q, qd, qdd, state)
    scratch = workspace(nb)
    tau = np.empty(n)
    newton_euler(topology, bodies, gravity, q, qd, qdd, state, scratch, tau)
    poses, twists, accelerations, wrenches = scratch[0], scratch[1], scratch[2], scratch[3]
    if body >= 0:
        omega, v = vec(twists, body, 0), vec(twists, body, 3)
        alpha, a = vec(accelerations, body, 0), vec(accelerations, body, 3)
    else:  # the fixed base: still, gravity its only acceleration
        omega = v = alpha = (0.0, 0.0, 0.0)
        a = scale((gravity[0], gravity[1], gravity[2]), -1.0)
    m, mc, Ibar = parameters[0], (parameters[1], parameters[2], parameters[3]), (
        parameters[4], parameters[5], parameters[6], parameters[7], parameters[8], parameters[9])
    moment, force = body_force(m, mc, Ibar, omega, v, alpha, a)
    for c in range(children.shape[0]):
        i = children[c]
        R, p = pose(poses, i)
        n_i, f_i = force_to_parent(R, p, vec(wrenches, i, 0), vec(wrenches, i, 3))
        moment, force = add(moment, n_i), add(force, f_i)
    # in the sensor frame (R, p in the body frame): [R^T (n - p x f); R^T f], then the tool's side: -W
    f_s = rotate_back(rotation, force)
    fx, fy, fz = force
    n_p = (moment[0] - (point[1] * fz - point[2] * fy), moment[1] - (point[2] * fx - point[0] * fz),
           moment[2] - (point[0] * fy - point[1] * fx))
    n_s = rotate_back(rotation, n_p)
    return scale(n_s, -1.0), scale(f_s, -1.0)
