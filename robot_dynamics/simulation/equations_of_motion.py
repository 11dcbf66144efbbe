"""The simulator's right-hand side ``a(q, qd, tau_cmd)``, compiled: every force of
:mod:`robot_dynamics.simulation.simulator`'s equation of motion, then the forward dynamics.

Position limits.  A joint beyond a limit (penetration ``p > 0``, inward direction ``s = +-1``)
is held by a one-sided, critically damped spring-damper written in acceleration space (a
Baumgarte-stabilized unilateral constraint): the limit torques ``tau_A`` on the set ``A`` of
joints beyond a limit are solved from ``(M^-1)_AA tau_A = s (w^2 p + 2 w dp/dt) - a_free,A``
so that every such joint obeys exactly ``d2p/dt2 = -w^2 p - 2 w dp/dt``, whatever the robot's
inertia, configuration or the other contacts; a joint whose torque would pull is released
(the wall only pushes) and the rest solved again.  The natural frequency is tied to the step:
``w dt = LIMIT_OMEGA_STEP = 0.5`` (``w`` = 500 rad/s at 1 kHz).  The contact dynamics then have
the double root ``-w``, inside the stability region of every integrator here (explicit Euler
``|1 - w dt| = 0.5``; semi-implicit Euler eigenvalues 0.75 and 0; RK4 ``R(-0.5) = 0.61``), so it
never explodes, and the restoring acceleration grows without bound with ``p``, so a joint never
passes through (no tunnelling).  Measured at 1 kHz: a joint arriving at ``v`` overshoots by
about ``v / (e w)`` (7.4 mrad at 10 rad/s; explicit Euler about twice that), leaves the wall at
about ``e^-2 v`` (restitution 0.14), and rests on the limit (``p -> 0``: no static
penetration).  Explicit Euler alone keeps a joint that is pushed hard into a wall chattering
within a few mrad of it (its position update lags one step); the other integrators come to
rest.  Costs a mass matrix and a small solve per evaluation, only while a joint is beyond a
limit.
"""

from collections import namedtuple

import numpy as np

from ..rigid_body.cholesky import cholesky_solve, cholesky_substitute
from .contact import add_contact_torques
from ..rigid_body.friction import friction_torque
from ..jit import inline, njit
from ..rigid_body.kernels import forward_state, joint_poses, workspace, world_poses
from ..rigid_body.wrenches import add_wrench_torques


LIMIT_OMEGA_STEP = 0.5
"""Natural frequency of the position-limit contact times the integration step (``w dt``)."""

Physics = namedtuple("Physics", [
    "topology", "bodies", "gravity",                   # the model's kernel arrays
    "armature",                                        # the rotors' reflected inertia (zeros when elastic: the motors')
    "damping", "friction", "friction_velocity",        # B, F_c (zeros where switched off), eps
    "limits", "omega",                                 # position limits, rows lower, upper (+-inf: none or off), w
    "wrench_bodies", "wrench_points", "wrench_values",  # external wrenches (wrenches.wrench_arrays)
    "motors",                                          # elastic joints: rows K, J, B_m; (3, 0) for rigid joints
    "contact",                                         # contact.ContactModel.array: (1, 8) of zeros when none
])
Physics.__doc__ = """Everything the compiled right-hand side ``a(q, qd, tau_cmd)`` reads besides the state, for one step.

The kernels receive it as a plain tuple (numba unboxes a named tuple 1.5 us slower, on every
step) and unpack it in this order."""


@njit
def limit_correction(L, q, qd, free, lower, upper, omega):
    """``M^-1[:, A] tau_A``: the acceleration the position limits add (module docstring, "Position limits").

    ``L`` holds the Cholesky factor of ``M`` (``M = L L^T``) that the forward solve left.

    For the joints ``A`` beyond a limit (penetration ``p``, inward direction ``s``) the limit
    torques make ``qdd_A = s (w^2 p + 2 w dp/dt)``: ``(M^-1)_AA tau_A = s (w^2 p + 2 w dp/dt) - free_A``,
    where ``free`` is the acceleration without them; a joint whose torque would pull is released
    and the rest solved again.
    """
    n = q.shape[0]
    joints = np.empty(n, dtype=np.int64)
    inward = np.empty(n)
    target = np.empty(n)
    count = 0
    for i in range(n):
        if q[i] < lower[i]:
            depth, rate, side = lower[i] - q[i], -qd[i], 1.0
        elif q[i] > upper[i]:
            depth, rate, side = q[i] - upper[i], qd[i], -1.0
        else:
            continue
        joints[count], inward[count] = i, side
        target[count] = side * (omega * omega * depth + 2.0 * omega * rate)
        count += 1
    out = np.zeros(n)
    if count == 0:
        return out
    columns = np.zeros((count, n))  # columns A of M^-1 (one per row here), by substitution (never an inverse)
    for k in range(count):
        columns[k, joints[k]] = 1.0
        cholesky_substitute(L, columns[k])
    rows = np.empty(count, dtype=np.int64)  # the contacts still held, ascending: the first m of them
    for a in range(count):
        rows[a] = a
    for m in range(count, 0, -1):
        W = np.empty((m, m))
        rhs = np.empty(m)
        for a in range(m):
            rhs[a] = target[rows[a]] - free[joints[rows[a]]]
            for b in range(m):
                W[a, b] = columns[rows[b], joints[rows[a]]]
        if cholesky_solve(W, rhs) >= 0:  # (M^-1)_AA is positive definite: only a non-finite state gets here
            return out
        tau = rhs
        worst, worst_push = -1, 0.0
        for a in range(m):
            push = inward[rows[a]] * tau[a]
            if push < worst_push:
                worst, worst_push = a, push
        if worst < 0:
            for a in range(m):
                for r in range(n):
                    out[r] += columns[rows[a], r] * tau[a]
            return out
        for a in range(worst, m - 1):  # a wall pushes, never pulls: release the worst puller
            rows[a] = rows[a + 1]
    return out


@inline  # inlined: one optimisation level less to compile
def acceleration(physics, x, xd, command, workspace):
    """The state's acceleration under the saturated actuator torque ``command``; ``(acceleration, -1 or the
    singular joint)``.  Rigid joints: ``x = q``, :func:`link_acceleration`.  Elastic joints (module
    docstring, "Elastic joints"): ``x = (q, theta)``, the links driven by the springs ``K (theta - q)``
    and the motors by ``command``: ``theta_dd = J^-1 (command - B_m theta_d - K (theta - q))``."""
    motors = physics[12]
    elastic = motors.shape[1] > 0
    n = motors.shape[1] if elastic else x.shape[0]
    drive = motors[0] * (x[n:] - x[:n]) if elastic else command  # what drives the links: the springs, or the motors
    # one call site: the link dynamics are inlined here, and a second copy would double their compile time
    qdd, singular = link_acceleration(physics, x[:n], xd[:n], drive, workspace)
    if not elastic:
        return qdd, singular
    acceleration = np.empty(2 * n)
    for i in range(n):  # element by element: a slice copy would compile numba's shape-mismatch message
        acceleration[i] = qdd[i]
        # J theta_dd = u - B_m theta_d - K (theta - q)
        acceleration[n + i] = (command[i] - motors[2, i] * xd[n + i] - drive[i]) / motors[1, i]
    return acceleration, singular


@inline  # inlined into acceleration: the rigid path pays no extra call
def link_acceleration(physics, q, qd, command, workspace):
    """``a(q, qd) = M^-1 (tau_joint - h + sum_l J_l^T F_l)`` (eq. 9.89 with the forces of the module
    docstring) for the joint torque ``command``; ``(qdd, -1 or the singular joint)``."""
    (topology, bodies, gravity, armature, damping, friction, friction_velocity, limits, omega,
     wrench_bodies, wrench_points, wrench_values) = physics[:12]
    scratch, composite, world, M = workspace
    poses = scratch[0]
    lower, upper = limits[0], limits[1]  # one array in the tuple, not two: each costs the step's call an unboxing
    n = q.shape[0]
    tau = np.empty(n)
    beyond = False
    for i in range(n):
        tau[i] = command[i] - friction_torque(damping[i], friction[i], friction_velocity, qd[i])
        beyond = beyond or q[i] < lower[i] or q[i] > upper[i]
    q_row, qd_row = q.reshape(1, n), qd.reshape(1, n)
    state = n - n  # the only state, 0, as a variable: a literal 0 would compile a second copy of the kernels
    if wrench_bodies.shape[0] > 0:
        joint_poses(topology, bodies, q_row, state, poses)
        world_poses(topology, poses, world)
        add_wrench_torques(topology, bodies, world, wrench_bodies, wrench_points, wrench_values[0], tau)
    contact = physics[13]
    if contact.shape[0] > 1:  # contact.py: the spheres' penalty forces on the half-spaces
        joint_poses(topology, bodies, q_row, state, poses)
        world_poses(topology, poses, world)
        add_contact_torques(topology, bodies, world, qd_row, contact, tau, np.empty((int(contact[0, 5]), 6)))
    qdd = np.empty(n)
    singular = forward_state(topology, bodies, gravity, armature, q_row, qd_row, state, tau,
                             scratch, composite, M, qdd)
    if beyond and singular < 0:
        qdd += limit_correction(M, q, qd, qdd, lower, upper, omega)  # the solve left M's Cholesky factor in M
    return qdd, singular


@njit
def new_workspace(topology, n):
    """The scratch arrays of :func:`acceleration` for ``n`` coordinates, allocated once per step."""
    nb = topology.shape[0]
    return workspace(nb), np.empty((nb, 10)), np.empty((nb, 12)), np.empty((n, n))
