"""Elastic joints: a spring between each motor and its link (Spong Ex. 6.2, for every joint).

State ``(q, qd, theta, theta_d)``: link coordinates ``q`` and motor angles ``theta`` reflected to
the link side (``theta = motor angle / r``), so the spring is relaxed at ``theta == q``.  With
``M``, ``h`` the links' mass matrix and bias forces (no rotor inertia), ``J = model.armature``
(``r^2 J_m``), ``B_m = model.motor_damping`` (``r^2 B_m``), ``K`` the joint stiffness and ``u``
the motor torque reflected to the link side (``r tau_m``)::

    M(q) qdd + h(q, qd) = K (theta - q)                    (the links, driven by the springs)
    J theta_dd + B_m theta_d + K (theta - q) = u           (the motors)

Spong's single link (Ex. 6.2) is the case ``n = 1``, ``M = J_l``, ``h = m g l sin q``.

Inverse dynamics (the motor trajectory that makes the links follow ``q(t)`` exactly): the link
equation gives ``theta = q + K^-1 tau_l`` with ``tau_l(t) = M qdd + h = ID(q(t), qd(t), qdd(t))``,
so ``theta_d = qd + K^-1 dtau_l/dt``, ``theta_dd = qdd + K^-1 d2tau_l/dt2`` and
``u = J theta_dd + B_m theta_d + tau_l``.  ``dtau_l/dt`` and ``d2tau_l/dt2`` need ``q`` up to its
fourth derivative; they are computed exactly (to rounding) by running the Newton-Euler
recursion on truncated Taylor series in ``t`` (:func:`inverse_dynamics_rates`), not by finite
differences.
"""

import numpy as np

from .dynamics import forward_dynamics
from .batches import as_states, matching as _matching, unbatch as _unbatch
from .model import INERTIAL_PARAMETERS, KIND, ORIGIN_P, ORIGIN_R, PARENT, REVOLUTE, SCREW

ORDER = 3
"""Taylor coefficients kept: ``x(t0 + s) = x0 + x1 s + x2 s^2``, enough for the second derivative."""


# ----------------------------------------------------------------------------- truncated Taylor series
# A series is an array whose first axis holds the coefficients of s^0, s^1, s^2.

def _times(a, b, product=np.multiply):
    """The Cauchy product ``(a b)_k = sum_{i+j=k} a_i b_j`` of two series under ``product``."""
    return np.stack([product(a[0], b[0]),
                     product(a[0], b[1]) + product(a[1], b[0]),
                     product(a[0], b[2]) + product(a[1], b[1]) + product(a[2], b[0])])


def _cross_product(a, b):
    """``a x b`` over the last axis (``np.cross`` costs ten times more on small arrays)."""
    return np.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                     a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)


def _cross(a, b):
    return _times(a, b, _cross_product)


def _rotate(R, v):
    return _times(R, v, lambda A, x: (A @ x[..., None])[..., 0])


def _rotate_back(R, v):
    return _times(R, v, lambda A, x: (np.swapaxes(A, -1, -2) @ x[..., None])[..., 0])


def _constant(x, count):
    """The series of a constant ``x`` for ``count`` states."""
    series = np.zeros((ORDER, count) + np.shape(x))
    series[0] = x
    return series


def _sin_cos(x):
    """Series of ``sin x`` and ``cos x`` from the series ``x = x0 + x1 s + x2 s^2``."""
    s, c = np.sin(x[0]), np.cos(x[0])
    return (np.stack([s, c * x[1], c * x[2] - s * x[1] ** 2 / 2]),
            np.stack([c, -s * x[1], -s * x[2] - c * x[1] ** 2 / 2]))


def _skew(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _inertia_times(mass, h, Ibar, omega, v):
    """Spatial momentum ``(Ibar w + h x v, m v - h x w)`` (``spatial.inertia_times``) of series ``(w, v)``."""
    return omega @ Ibar + _cross_product(h, v), mass * v - _cross_product(h, omega)  # Ibar symmetric


def inverse_dynamics_rates(model, q, qd, qdd, q3, q4):
    """``(tau, dtau/dt, d2tau/dt2)`` of ``tau(t) = ID(q(t), qd(t), qdd(t))`` given ``q`` and its first four
    time derivatives (shapes ``(..., n)``): the rotor inertia is not included.

    Newton-Euler (Lynch & Park eqs. 9.53-9.57, as ``kernels.newton_euler``) evaluated on
    series truncated after ``s^2``, with ``q(t0 + s) = q + qd s + qdd s^2/2`` and likewise for
    ``qd`` and ``qdd``: the coefficients of the torque's series are ``tau``, ``dtau/dt`` and
    ``1/2 d2tau/dt2``, exact up to rounding (the recursion is a composition of products, sums,
    sines and cosines, whose series are exact).

    >>> import robot_dynamics as rd
    >>> pendulum = rd.load_urdf(rd.examples.PENDULUM_URDF)  # tau = qdd + g sin q
    >>> [float(x[0].round(6)) for x in inverse_dynamics_rates(pendulum, [0.5], [1.0], [0.0], [0.0], [0.0])]
    [4.703165, 8.609085, -4.703165]
    """
    q, batch = as_states(model, q, "q")
    qd, qdd, q3, q4 = (_matching(model, x, name, batch) for x, name in ((qd, "qd"), (qdd, "qdd"), (q3, "q3"), (q4, "q4")))
    series = np.stack([np.stack([q, qd, qdd / 2]), np.stack([qd, qdd, q3 / 2]), np.stack([qdd, q3, q4 / 2])])
    if not np.all(np.isfinite(series)):
        raise ValueError("q, qd, qdd, q3 and q4 must be finite")
    tau = _rnea_series(model, *series)
    return tuple(_unbatch(coefficient * factor, batch) for coefficient, factor in zip(tau, (1.0, 1.0, 2.0)))


def _rnea_series(model, q, qd, qdd):
    """The series of the joint torques of Newton-Euler along the series ``q, qd, qdd`` (each ``(ORDER, count, n)``)."""
    topology, bodies = model.topology, model.bodies
    count, nb = q.shape[1], topology.shape[0]
    E, offset = model.joint_map()  # q_joints = E q + o
    rotations, origins, twists, accelerations = [], [], [], []
    for i in range(nb):  # forward: poses, twists and accelerations (eqs. 9.53-9.55)
        b = bodies[i]
        screw = b[SCREW]
        axis, R0, p0 = screw[:3] if topology[i, KIND] == REVOLUTE else screw[3:], b[ORIGIN_R].reshape(3, 3), b[ORIGIN_P]
        value, rate, acceleration = q @ E[i], qd @ E[i], qdd @ E[i]
        value[0] += offset[i]
        if topology[i, KIND] == REVOLUTE:  # R = R0 Rot(axis, value), Rodrigues (Lynch & Park eq. 3.51)
            sin, cos = _sin_cos(value)
            K = _skew(axis)
            rotation = np.einsum("k...,ij->k...ij", sin, R0 @ K) - np.einsum("k...,ij->k...ij", cos, R0 @ K @ K)
            rotation[0] += R0 + R0 @ K @ K
            origin = _constant(p0, count)
        else:
            rotation = _constant(R0, count)
            origin = _constant(p0, count) + np.einsum("k...,i->k...i", value, R0 @ axis)
        parent = topology[i, PARENT]
        if parent < 0:
            omega_p = v_p = alpha_p = _constant(np.zeros(3), count)
            a_p = _constant(-np.asarray(model.gravity), count)
        else:
            (omega_p, v_p), (alpha_p, a_p) = twists[parent], accelerations[parent]
        omega = _rotate_back(rotation, omega_p)
        v = _rotate_back(rotation, v_p + _cross(omega_p, origin))
        alpha = _rotate_back(rotation, alpha_p)
        a = _rotate_back(rotation, a_p + _cross(alpha_p, origin))
        joint_velocity = np.einsum("k...,i->k...i", rate, axis)
        joint_acceleration = np.einsum("k...,i->k...i", acceleration, axis)
        if topology[i, KIND] == REVOLUTE:
            omega = omega + joint_velocity
            alpha = alpha + joint_acceleration + _cross(omega, joint_velocity)
            a = a + _cross(v, joint_velocity)
        else:
            v = v + joint_velocity
            a = a + joint_acceleration + _cross(omega, joint_velocity)
        rotations.append(rotation)
        origins.append(origin)
        twists.append((omega, v))
        accelerations.append((alpha, a))
    tau = np.zeros(q.shape)
    wrenches = [None] * nb
    for i in range(nb):  # each body's own force F = I A - ad_V^T (I V) (eq. 9.56, spatial.body_force)
        parameters = bodies[i, INERTIAL_PARAMETERS]
        mass, h = parameters[0], parameters[1:4]
        xx, xy, xz, yy, yz, zz = parameters[4:10]
        Ibar = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        (omega, v), (alpha, a) = twists[i], accelerations[i]
        momentum_n, momentum_f = _inertia_times(mass, h, Ibar, omega, v)
        inertial_n, inertial_f = _inertia_times(mass, h, Ibar, alpha, a)
        wrenches[i] = [inertial_n + _cross(omega, momentum_n) + _cross(v, momentum_f),
                       inertial_f + _cross(omega, momentum_f)]
    for i in range(nb - 1, -1, -1):  # backward: tau_i = A_i^T F_i, F_parent += Ad^T F_i (eq. 9.57)
        n, f = wrenches[i]
        w, u = bodies[i, SCREW][:3], bodies[i, SCREW][3:]
        tau += np.multiply.outer(n @ w + f @ u, E[i])  # tau = E^T tau_joints
        parent = topology[i, PARENT]
        if parent >= 0:
            f_parent = _rotate(rotations[i], f)
            wrenches[parent][0] = wrenches[parent][0] + _rotate(rotations[i], n) + _cross(origins[i], f_parent)
            wrenches[parent][1] = wrenches[parent][1] + f_parent
    return tau


# ----------------------------------------------------------------------------- the elastic model

def stiffness_vector(model, stiffness):
    """``stiffness`` as a checked ``(nv,)`` array: positive and finite, with a positive rotor inertia
    (``model.armature``) on every joint (the motor equation divides by it)."""
    K = np.asarray(stiffness, dtype=float)
    if K.shape != (model.nv,):
        raise ValueError(f"stiffness must have {model.nv} values ({', '.join(model.joint_names)}), got shape {K.shape}")
    if not np.all(np.isfinite(K) & (K > 0)):
        raise ValueError(f"stiffness must be positive and finite on every joint, got {K.tolist()}")
    missing = [name for name, J in zip(model.joint_names, model.armature) if not J > 0]
    if missing:
        raise ValueError(f"an elastic joint needs a positive rotor inertia (model.armature); joints {', '.join(missing)} "
                         "have none (model.with_armature or a URDF <transmission>)")
    return K


def elastic_forward_dynamics(model, q, qd, theta, theta_d, u, stiffness):
    """``(qdd, theta_dd)`` of the elastic-joint model (module docstring; Spong Ex. 6.2):
    ``qdd = M^-1 (K (theta - q) - h)``, ``theta_dd = J^-1 (u - B_m theta_d - K (theta - q))``.

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.PENDULUM_URDF).with_armature([0.5])
    >>> [x.round(4) for x in elastic_forward_dynamics(arm, [0.0], [0.0], [0.1], [0.0], [0.0], [100.0])]
    [array([10.]), array([-20.])]
    """
    K = stiffness_vector(model, stiffness)
    theta, batch = as_states(model, theta, "theta")
    spring = K * (theta - _matching(model, q, "q", batch))
    motor = (_matching(model, u, "u", batch) - model.motor_damping * _matching(model, theta_d, "theta_d", batch)
             - spring) / model.armature
    qdd = forward_dynamics(links_only(model), _matching(model, q, "q", batch), _matching(model, qd, "qd", batch), spring)
    return _unbatch(qdd.reshape(spring.shape), batch), _unbatch(motor, batch)


def elastic_inverse_dynamics(model, stiffness, q, qd, qdd, q3, q4):
    """``(theta, theta_d, u)``: the motor trajectory and torque that make the links follow ``q(t)`` exactly.

    ``theta = q + K^-1 tau_l``, ``theta_d = qd + K^-1 dtau_l/dt``,
    ``u = J (qdd + K^-1 d2tau_l/dt2) + B_m theta_d + tau_l`` with ``tau_l = M qdd + h`` and its
    derivatives from :func:`inverse_dynamics_rates` (module docstring).  ``q3``, ``q4``: the
    third and fourth time derivatives of ``q``.

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.PENDULUM_URDF).with_armature([0.5])
    >>> # held still at 0.5 rad: the spring carries g sin 0.5 = 4.7032 N m, stretched by 4.7032 / 100
    >>> [x.round(4) for x in elastic_inverse_dynamics(arm, [100.0], [0.5], [0.0], [0.0], [0.0], [0.0])]
    [array([0.547]), array([0.]), array([4.7032])]
    """
    K = stiffness_vector(model, stiffness)
    tau, tau_d, tau_dd = inverse_dynamics_rates(model, q, qd, qdd, q3, q4)
    theta = np.asarray(q, dtype=float) + tau / K
    theta_d = np.asarray(qd, dtype=float) + tau_d / K
    theta_dd = np.asarray(qdd, dtype=float) + tau_dd / K
    return theta, theta_d, model.armature * theta_dd + model.motor_damping * theta_d + tau


def elastic_energy(model, q, qd, theta, theta_d, stiffness):
    """Total energy: links ``1/2 qd^T M qd + P(q)``, motors ``1/2 theta_d^T J theta_d``, springs
    ``1/2 (theta - q)^T K (theta - q)`` (Spong Ex. 6.2's kinetic and potential energies), J."""
    from .kinematics import kinetic_energy, potential_energy

    K = stiffness_vector(model, stiffness)
    links = links_only(model)
    stretch = np.asarray(theta, dtype=float) - np.asarray(q, dtype=float)
    return (kinetic_energy(links, q, qd) + potential_energy(links, q)
            + 0.5 * (np.asarray(theta_d, dtype=float) ** 2 * model.armature).sum(axis=-1)
            + 0.5 * (stretch ** 2 * K).sum(axis=-1))


def links_only(model):
    """The model of the links alone: the rotors are the motor equation's."""
    return model.with_armature(np.zeros(model.nv)) if model.armature.any() else model
