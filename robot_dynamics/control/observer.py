"""The generalized-momentum observer: external joint torques and the wrench at a frame from sampled data.

De Luca & Mattone (2003); Haddadin, De Luca & Albu-Schäffer, "Robot collisions: a survey on
detection, isolation, and identification", IEEE T-RO 2017, §IV.  With the generalized momentum
``p = M(q) qd`` the equations of motion (Spong eq. 6.64, ``M qdd + C qd + g = tau_m + tau_ext - tau_f``)
read, because ``Mdot = C + C^T`` (Spong §6.6.1, ``Mdot - 2C`` skew)::

    pdot = tau_m + C(q, qd)^T qd - g(q) - tau_f(qd) + tau_ext

and the residual ``r = K_O [p - p(0) - int_0^t (tau_m + C^T qd - g - tau_f + r) ds]`` obeys
``rdot = K_O (tau_ext - r)``: a first-order filter of the external torque, time constant ``1/K_O``,
that needs neither ``qdd`` nor ``M^-1``.  ``tau_m`` is the measured motor torque, ``tau_f`` the URDF
friction (:func:`robot_dynamics.rigid_body.friction.friction_torques`, optional), rotors (armature) and
couplings enter through ``M``, ``C`` and ``g`` of the model.

``C^T qd`` without ``C``.  It is the same for every ``C`` with ``Mdot = C + C^T`` (``C qd`` is the
unique ``h - g``), and with the Christoffel ``C`` (Spong eq. 6.63) the first and third symbols
cancel: ``(C^T qd)_j = 1/2 qd^T (dM/dq_j) qd = dT/dq_j``, the kinetic energy's gradient.  In world
coordinates, moving joint ``j`` by ``dq`` turns the subtree of ``j`` about the world screw ``S_j``:
its twists change by ``[ad_{S_j}] (V_i - V_j) dq`` and its inertias by ``-(ad^T I + I ad) dq``, so
``dT/dq_j = (V_j x S_j)^T sum_{i in subtree(j)} I_i V_i = Sdot_j^T h_j``, with ``h_j`` the subtree's
spatial momentum.  The same sums give ``p_j = S_j^T h_j``: one backward sweep over the bodies after the
bias pass of :func:`robot_dynamics.compute_terms` (its ``MOMENTUM`` output, the same pass that gives
``g``, ``h``, ``M`` and the frame's Jacobian to the node), no matrix, and on the coordinates ``E^T`` of
the joints' (``q_joints = E q + o``) plus the rotors' ``armature qd`` in ``p``.

Discrete time, at an irregular rate.  Write ``w(t) = p - int (tau_m + beta) ds`` with
``beta = C^T qd - g - tau_f``, so that ``rdot = K_O (wdot - r)``.  Over a sample interval
``[t_k, t_k+1]`` of length ``dt``, with ``wdot`` held at its mean ``(w_k+1 - w_k) / dt`` (exact when
``tau_ext`` is constant over the interval), the exact solution is::

    r_k+1 = e^(-K_O dt) r_k + (1 - e^(-K_O dt)) [p_k+1 - p_k - dt (tau_m,k+1 + (beta_k + beta_k+1) / 2)] / dt

``beta`` depends on the state and is integrated by the trapezoidal rule (error ``dt^3 beta''/12``
per interval, so ``r`` is off by about ``dt^2 beta''/12``: 1e-5 N m for a Panda swinging freely at
1 kHz); the motor torque is held over the interval at the value that arrives with its end (the
effort a sampled drive, or the simulator, reports with a state is the one it applied since the
previous one; a torque sensor's sample taken at the end of the interval errs by ``dt tau_m'/2``).
Unlike the forward-Euler form ``r += K_O dt (...)``, which diverges when ``K_O dt > 2``, this form is
stable for any gain and any gap, and it does not drift: errors are filtered, never integrated.

The wrench at a frame: ``r = J^T F`` with ``J`` the world-aligned Jacobian of the frame's origin
(the library's wrench convention: ``[moment; force]`` applied by the environment to the robot, moment
about the frame origin, world-aligned axes), solved by a damped pseudo-inverse
``F = (J J^T + lambda^2 I)^-1 J r``: the least-squares wrench, bounded near singularities.
:meth:`MomentumObserver.wrench_in` gives it as a ``WrenchStamped`` reads (the frame's own axes, or
another frame's, moment about that frame's origin).  The frame must be moved by some joint: on a link
fixed to the base, ``J = 0`` and no external force there reaches a joint (:func:`check_wrench_frame`).

>>> import numpy as np, robot_dynamics as rd
>>> pendulum = rd.load_urdf(rd.examples.PENDULUM_URDF)
>>> observer = MomentumObserver(pendulum, gain=50.0)
>>> for k in range(1000):  # held still at 0.5 rad, pushed with 1 N m more than the holding torque
...     r = observer.update(k * 1e-3, [0.5], [0.0], rd.gravity_torques(pendulum, [0.5]) - 1.0)
>>> r.round(6)  # the environment pushes back with 1 N m
array([1.])
"""

import math

import numpy as np

from ..rigid_body.batches import FLOAT64, as_states, matching, unbatch
from ..rigid_body.cholesky import cholesky_solve
from ..rigid_body.friction import DEFAULT_FRICTION_VELOCITY, friction_torque
from ..jit import njit
from ..rigid_body.data import BIAS, GRAVITY, MOMENTUM, WORLD, Data, compute_terms, frame_jacobian
from ..rigid_body.kernels import ZERO3, finite
from ..rigid_body.kinematics import jacobian
from ..rigid_body.model import PARENT
from ..rigid_body.wrenches import frame_in_world, wrench_seen_in

__all__ = ["MomentumObserver", "check_wrench_frame", "force_from_torques", "momentum_terms", "tip_frame",
           "wrench_from_torques"]


OBSERVER_TERMS = GRAVITY | BIAS | MOMENTUM | WORLD
"""The outputs of :func:`robot_dynamics.compute_terms` a sample needs: ``p``, ``C^T qd - g`` and the world
poses (for the frame's Jacobian and :meth:`MomentumObserver.wrench_in`)."""
DEFAULT_GAIN = 10.0
"""``K_O``, 1/s: real encoders' velocity noise sets the residual at 50 (docs/contact.md)."""
LEAST_SQUARES_DAMPING = 1e-3
"""``lambda`` of the damped pseudo-inverse (m, or dimensionless on the angular rows): far below a
non-singular arm's smallest singular value (0.1-1), so the wrench is the least-squares one there."""


# ----------------------------------------------------------------------------- the terms

def momentum_terms(model, q, qd):
    """``(p, C^T qd - g)``: the generalized momentum ``M(q) qd`` and the state's part of ``pdot`` without
    friction (module docstring), by the ``MOMENTUM`` pass of :func:`robot_dynamics.compute_terms` per state;
    arrays of shape ``(..., n)``.

    >>> import numpy as np, robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> q, qd = np.array([0.3, 0.5]), np.array([1.0, -2.0])
    >>> p, beta = momentum_terms(arm, q, qd)
    >>> C = rd.coriolis_matrix(arm, q, qd)
    >>> np.allclose(p, rd.mass_matrix(arm, q) @ qd), np.allclose(beta, C.T @ qd - rd.gravity_torques(arm, q))
    (True, True)
    """
    q, batch = as_states(model, q, "q")
    qd = matching(model, qd, "qd", batch)
    data = Data(model)
    p, beta = np.empty(q.shape), np.empty(q.shape)
    for k in range(q.shape[0]):  # (a convenience for checks and plots: the observer itself runs one state)
        compute_terms(data, q[k], qd[k], MOMENTUM)
        p[k], beta[k] = data.p, data.beta
    return unbatch(p, batch), unbatch(beta, batch)


# ----------------------------------------------------------------------------- one sample

@njit
def _residual_step(gain, dt, r, p, p_last, tau_m, beta, beta_last):
    """``r <- e^(-K_O dt) r + (1 - e^(-K_O dt)) [p - p_last - dt (tau_m + (beta + beta_last)/2)] / dt`` (module docstring)."""
    decay = math.exp(-gain * dt)
    for c in range(r.shape[0]):
        mean = (p[c] - p_last[c]) / dt - tau_m[c] - 0.5 * (beta[c] + beta_last[c])
        r[c] = decay * r[c] + (1.0 - decay) * mean


@njit
def _wrench(J, r, least_squares_damping, wrench):
    """``F = (J J^T + lambda^2 I)^-1 J r`` into ``wrench`` (6,): the damped least-squares solution of ``J^T F = r``,
    by a Cholesky solve (``J J^T + lambda^2 I`` is positive definite)."""
    A = np.empty((6, 6))
    for a in range(6):
        wrench[a] = np.dot(J[a], r)
        for b in range(a + 1):
            A[a, b] = A[b, a] = np.dot(J[a], J[b])
        A[a, a] += least_squares_damping * least_squares_damping
    cholesky_solve(A, wrench)


@njit
def _observe(topology, bodies, friction, eps, gain, least_squares_damping, body, point, qd, tau_m, dt, p, beta_state,
             world, memory, J, wrench):
    """One sample from the terms of the new state (``p``, ``beta_state = C^T qd - g`` and the ``world``
    poses of its pass): friction, the residual step (``dt > 0``; ``dt < 0`` starts over) and the wrench.
    ``memory`` rows: ``r``, ``p``, ``beta`` of the last sample (``beta`` with friction).  Returns False,
    changing nothing, if ``tau_m`` is not finite, and False after the step if ``r`` or the wrench is not
    (an overflow: the caller starts over)."""
    n = qd.shape[0]
    state = n - n  # the only state, 0, as a variable: a literal 0 would compile second copies of the kernels
    if not finite(tau_m.reshape(1, n), state):
        return False
    r, p_last, beta_last, beta = memory[0], memory[1], memory[2], memory[3]
    for c in range(n):
        beta[c] = beta_state[c] - friction_torque(friction[0, c], friction[1, c], eps, qd[c])
    if dt > 0.0:
        _residual_step(gain, dt, r, p, p_last, tau_m, beta, beta_last)
    else:
        r[:] = 0.0
    for c in range(n):  # element by element: a slice copy would compile numba's shape-mismatch message
        p_last[c], beta_last[c] = p[c], beta[c]
    if body >= 0:
        frame_jacobian(topology, bodies, world, body, point, J)
        _wrench(J, r, least_squares_damping, wrench)
    return finite(memory, state) and (body < 0 or finite(wrench.reshape(1, 6), state))


def tip_frame(model):
    """The default frame of the wrench, the tip of the chain: the last body of the unbranched chain from
    the root (a gripper's fingers branch off after it), and on it the link named like a tool centre
    point (``tcp``, ``tool``) if there is one, else the last of its links in URDF order (the furthest out)."""
    parents = model.topology[:, PARENT]
    body = -1
    while True:
        children = np.flatnonzero(parents == body)
        if len(children) != 1:
            break
        body = int(children[0])
    links = [name for name, frame in model.frames.items() if frame.body == body]
    tools = [name for name in links if "tcp" in name.lower() or "tool" in name.lower()]
    return (tools or links)[-1]


def check_wrench_frame(model, frame, what="frame"):
    """ValueError (naming ``what``) unless ``frame`` is a link some joint moves: the wrench is estimated from
    ``r = J^T F``, and on the base (or a link fixed to it) ``J = 0``: no force there reaches a joint."""
    found = model.frames.get(frame)
    if found is None:
        raise ValueError(f"{what} {frame!r} is not a link of robot {model.name!r}")
    if found.body < 0:
        raise ValueError(f"{what} {frame!r} is fixed to the base (no joint moves it): a wrench there reaches no "
                         f"joint and cannot be estimated; choose a link the joints move, e.g. {tip_frame(model)!r}")


def wrench_from_torques(model, q, frame, torques, least_squares_damping=LEAST_SQUARES_DAMPING):
    """The wrench ``[moment; force]`` at ``frame``'s origin, world-aligned axes, whose ``J^T F`` is closest
    to ``torques`` (damped least squares, module docstring)."""
    J = np.asarray(jacobian(model, q, frame), dtype=float)
    wrench = np.empty(6)
    _wrench(np.ascontiguousarray(J), np.asarray(torques, dtype=float), float(least_squares_damping), wrench)
    return wrench


def force_from_torques(J, torques, least_squares_damping=LEAST_SQUARES_DAMPING):
    """The force ``f`` at the origin of the frame of the world-aligned Jacobian ``J`` (6, n), no moment,
    whose ``J_v^T f`` is closest to ``torques``: ``f = (J_v J_v^T + lambda^2 I)^-1 J_v r`` with ``J_v`` the
    linear rows.  A point contact: 3 unknowns, meaningful with 3 joints or more, where the full wrench's
    6 unknowns are not determined by fewer than 6."""
    linear = np.asarray(J, dtype=float)[3:]
    damped = linear @ linear.T + least_squares_damping**2 * np.eye(3)
    return np.linalg.solve(damped, linear @ np.asarray(torques, dtype=float))


class MomentumObserver:
    """The residual ``r`` (external joint torques, model order) and the wrench at ``frame``, sample by sample.

    ``gain`` is ``K_O`` (1/s, > 0); ``frame`` a link for :attr:`wrench` (None: no wrench);
    ``friction`` subtracts the URDF friction ``B qd + F_c tanh(qd / eps)`` (``B`` the joints' and
    rotors' viscous damping, as the simulator applies it); ``least_squares_damping`` is the pseudo-inverse's
    ``lambda``;
    ``wrench`` is ``"full"`` (``[moment; force]``) or ``"force"`` (a point force at the frame's origin,
    :func:`force_from_torques`, the moment 0).
    Call :meth:`update` with each state, in time order; the first sample (and the first after
    :meth:`reset`, or one older than the last) starts the observer at ``r = 0``; a repeated time is skipped.
    """

    def __init__(self, model, gain, frame=None, friction=False, friction_velocity=DEFAULT_FRICTION_VELOCITY,
                 least_squares_damping=LEAST_SQUARES_DAMPING, wrench="full"):
        if wrench not in ("full", "force"):
            raise ValueError(f"wrench must be 'full' or 'force', got {wrench!r}")
        self.point_force = wrench == "force"
        if not (math.isfinite(gain) and gain > 0):
            raise ValueError(f"the observer gain K_O must be a positive finite number (1/s), got {gain!r}")
        if not (math.isfinite(friction_velocity) and friction_velocity > 0):
            raise ValueError(f"friction_velocity must be positive, got {friction_velocity!r}")
        if frame is not None:
            check_wrench_frame(model, frame)
        self.model, self.gain, self.frame = model, float(gain), frame
        self.least_squares_damping = float(least_squares_damping)
        n = model.nv
        self._friction = (np.array([model.viscous_damping, model.friction], dtype=float) if friction
                          else np.zeros((2, n)))
        self._eps = float(friction_velocity)
        if frame is None:
            self._body, self._point, self._pose = -1, ZERO3, np.eye(4)
        else:
            found = model.frames[frame]
            self._body, self._point = int(found.body), tuple(float(x) for x in found.pose[:3, 3])
            self._pose = np.array(found.pose)
        self._frames = {}  # link -> (body, pose) for wrench_in
        self._data = Data(model)  # its own pass when the caller has none for the state
        self._world = self._data.world  # the world poses of the last sample's pass
        self._memory = np.zeros((4, n))
        self._J, self._wrench = np.zeros((6, n)), np.full(6, np.nan)
        self._time = None
        self._shape = (n,)

    def reset(self):
        """Start over at the next sample (``r = 0``, ``p(0)`` taken then)."""
        self._time = None
        self._memory[0] = 0.0
        self._wrench[:] = np.nan

    @property
    def last_time(self):
        """The time of the last sample taken (s), None before one or after :meth:`reset`."""
        return self._time

    @property
    def residual(self):
        """The last ``r``, N m or N per coordinate (a copy)."""
        return self._memory[0].copy()

    @property
    def wrench(self):
        """The last wrench estimate ``[moment; force]`` at :attr:`frame` (NaN before a sample or without a frame;
        the observer's own array, overwritten by the next sample)."""
        return self._wrench

    def frame_pose(self, link):
        """The 4x4 pose of ``link`` in the root frame at the last sample (from that sample's pass)."""
        found = self.model.frames[link]
        R, o = frame_in_world(self._world, found.body, np.array(found.pose))
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = np.reshape(R, (3, 3)), o
        return T

    def wrench_in(self, frame=None):
        """The last wrench estimate as a ``WrenchStamped`` with ``header.frame_id = frame`` reads it: components
        in ``frame``'s axes, moment about its origin (:func:`robot_dynamics.rigid_body.wrenches.wrench_in_frame`);
        ``frame`` any link, default :attr:`frame` (an F/T sensor's convention).  A new array."""
        target = self._frames.get(frame or self.frame)
        if target is None:
            found = self.model.frames.get(frame or self.frame)
            if found is None:
                raise ValueError(f"unknown frame {frame!r}: the frames are the URDF's link names")
            # (a writable copy: the kernels take one array type, and the model's poses are read-only)
            target = self._frames[frame or self.frame] = (found.body, np.array(found.pose))
        out = np.empty(6)
        wrench_seen_in(self._world, self._wrench, self._body, self._pose, target[0], target[1], out)
        return out

    @property
    def jacobian(self):
        """The world-aligned Jacobian of :attr:`frame` at the last sample (a copy)."""
        return self._J.copy()

    def update(self, t, q, qd, tau_m, data=None):
        """Take the state at time ``t`` (s) with the motor torques ``tau_m`` applied since the last sample;
        returns ``r`` (a copy).  ValueError on non-finite or mis-sized input (the observer is unchanged).

        ``data``: a :class:`robot_dynamics.Data` of this observer's model that
        :func:`robot_dynamics.compute_terms` just filled for ``(q, qd)`` with :data:`OBSERVER_TERMS` (the
        dynamics node's one pass per message); None: the observer makes that pass itself."""
        q, qd, tau_m = self._vector(q, "q"), self._vector(qd, "qd"), self._vector(tau_m, "tau_m")
        if not math.isfinite(t):
            raise ValueError(f"t must be finite, got {t!r}")
        dt = -1.0 if self._time is None else t - self._time
        if dt == 0.0:  # the same state again: nothing new to integrate
            return self._memory[0].copy()
        if data is None or data.model is not self.model:
            data = self._data
            compute_terms(data, q, qd, OBSERVER_TERMS)  # (ValueError naming q or qd if one is not finite)
        model = self.model
        if not _observe(*model._kernel_arrays[:2], self._friction, self._eps, self.gain, self.least_squares_damping,
                        self._body, self._point, qd, tau_m, dt, data.p, data.beta, data.world, self._memory,
                        self._J, self._wrench):
            if not np.isfinite(tau_m).all():
                raise ValueError("tau_m not finite")
            self.reset()
            raise ValueError("the residual not finite")
        self._world = data.world
        self._time = t
        if self.point_force and self._body >= 0:
            self._wrench[:3] = 0.0
            self._wrench[3:] = force_from_torques(self._J, self._memory[0], self.least_squares_damping)
        return self._memory[0].copy()

    def _vector(self, values, what):
        """``values`` as a C-contiguous float64 ``(nv,)`` array, without a copy when it is one already."""
        if (type(values) is np.ndarray and values.dtype is FLOAT64 and values.shape == self._shape
                and values.flags.c_contiguous):
            return values
        vector = np.ascontiguousarray(values, dtype=float).reshape(-1)
        if vector.shape != self._shape:
            raise ValueError(f"{what} must have {self.model.nv} values, got {vector.shape[0]}")
        return vector
