"""The fixed-step integrators of :mod:`robot_dynamics.simulation`, compiled whole: one call per step,
stages, forces and checks included (``euler``, ``semi_implicit_euler``, ``rk4``; the module
docstring of ``simulation`` says what each does).
"""

import math

import numba
import numpy as np

from .control import friction_torque
from .equations_of_motion import DEFAULT_FRICTION_VELOCITY, acceleration, limit_correction, new_workspace
from .kernels import forward_state, world_poses
from .wrenches import add_wrench_torques

njit = numba.njit(cache=True)

EULER, SEMI_IMPLICIT_EULER, RK4 = 0, 1, 2
DERIVATIVE = 3  # not a step: the right-hand side dx/dt = (qd, a) alone, which the adaptive integrator integrates
OK, BAD_COMMAND, NON_FINITE = -1, -2, -3  # what a compiled step returns besides a singular joint's index

# Classical Runge-Kutta 4 on x = (q, qd), dx/dt = (qd, a(t, q, qd)), as its Butcher tableau: stage i
# evaluates k_i = f(t + c_i h, x + c_i h k_{i-1}) and x+ = x + h sum_i w_i k_i.  Euler is its first
# stage alone (c = 0, w = 1).  The stages share one call of acceleration: its code is compiled once.
RK4_NODES = (0.0, 0.5, 0.5, 1.0)
RK4_WEIGHTS = (1.0 / 6.0, 2.0 / 6.0, 2.0 / 6.0, 1.0 / 6.0)
RK4_COMMAND_ROWS = (0, 1, 1, 2)  # the stage's instant among the command rows t, t + h/2, t + h


@numba.njit(cache=True, inline="always")  # inlined into step: one optimisation level less to compile
def integrate(method, physics, commands, q, qd, h, workspace):
    """``(q+, qd+, -1 or the singular joint)`` after one step of ``method``:

    - ``EULER`` (Lynch & Park §9.5): ``q+ = q + h qd``, ``qd+ = qd + h a(t, q, qd)``;
    - ``SEMI_IMPLICIT_EULER`` (symplectic): ``qd+ = qd + h a(t, q, qd)``, ``q+ = q + h qd+``;
    - ``RK4``: with ``k_i = (v_i, a_i)``: ``v1 = qd``, ``v2 = qd + h/2 a1``, ``v3 = qd + h/2 a2``,
      ``v4 = qd + h a3``, ``a_i = a(t + c_i h, q + c_i h v_(i-1), v_i)``, ``x+ = x + h/6 (k1 + 2 k2 + 2 k3 + k4)``;
    - ``DERIVATIVE``: no step, ``(qd, a(t, q, qd), -1 or the singular joint)``: Euler's single stage,
      ``k_1``, for the adaptive integrator (one compiled graph serves all four: half the compile time of two).

    ``commands`` holds the command at ``t``, ``t + h/2`` and ``t + h`` (or one row, held).
    """
    last = commands.shape[0] - 1
    stages = 4 if method == RK4 else 1
    q_rate, qd_rate = np.zeros_like(q), np.zeros_like(qd)  # sum_i w_i k_i
    v, a = qd, np.zeros_like(qd)
    for i in range(stages):
        c = RK4_NODES[i]
        q_stage, v = plus_scaled(q, c * h, v), plus_scaled(qd, c * h, a)
        a, singular = acceleration(physics, q_stage, v, commands[min(RK4_COMMAND_ROWS[i], last)], workspace)
        if singular >= 0:  # the stages after it would start from a meaningless acceleration
            return q, qd, singular
        weight = RK4_WEIGHTS[i] if method == RK4 else 1.0
        q_rate, qd_rate = plus_scaled(q_rate, weight, v), plus_scaled(qd_rate, weight, a)
    if method == DERIVATIVE:
        return q_rate, qd_rate, -1
    if method == SEMI_IMPLICIT_EULER:
        qd_next = plus_scaled(qd, h, a)
        return plus_scaled(q, h, qd_next), qd_next, -1
    return plus_scaled(q, h, q_rate), plus_scaled(qd, h, qd_rate), -1


@njit
def plus_scaled(x, s, y):
    """``x + s y`` for vectors: one compiled loop for all the integrators' updates (numba compiles each
    array expression such as ``x + s * y`` as a function of its own: the eight here cost the step's first
    compile about 1 s more)."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] + s * y[i]
    return out


@njit
def step(method, physics, effort_limit, commands, q, qd, h, out):
    """One step of integrator ``method`` (``EULER``, ``SEMI_IMPLICIT_EULER``, ``RK4``), all compiled,
    or the state's derivative (``DERIVATIVE``, see :func:`integrate`).

    ``commands``: the actuator command at the instants the stages need (``_COMPILED``), or one
    row held over the step, saturated at ``+-effort_limit``.  Writes ``out[0] = q+``,
    ``out[1] = qd+`` (``DERIVATIVE``: ``qd`` and ``a``), ``out[2]`` = the applied (saturated)
    command at ``t``, and returns ``OK``, ``BAD_COMMAND`` (a command is not finite), ``NON_FINITE``
    (the result is not) or the joint at which the mass matrix is singular.  ``out`` is left alone
    unless ``OK``.
    """
    for value in commands.ravel():
        if not math.isfinite(value):
            return BAD_COMMAND
    applied = np.empty_like(commands)  # sat(command), by loops for the reason of plus_scaled
    for row in range(commands.shape[0]):
        for i in range(commands.shape[1]):
            applied[row, i] = min(max(commands[row, i], -effort_limit[i]), effort_limit[i])
    workspace = new_workspace(physics[0], physics[4].shape[0])  # topology, damping: one per coordinate
    q_next, qd_next, singular = integrate(method, physics, applied, q, qd, h, workspace)
    if singular >= 0:
        return singular
    for i in range(q.shape[0]):
        if not (math.isfinite(q_next[i]) and math.isfinite(qd_next[i])):
            return NON_FINITE
    for i in range(q.shape[0]):  # element by element: a row copy would compile numba's shape-mismatch message
        out[0, i], out[1, i] = q_next[i], qd_next[i]
    for i in range(applied.shape[1]):  # the command has nv values; an elastic state 2 nv
        out[2, i] = applied[0, i]
    return OK


def compile_forward_state(model):
    """Compile :func:`kernels.forward_state`, the largest kernel :func:`step` calls, for the argument
    types ``step`` passes it, so that compiling ``step`` then loads it from the cache.

    What ``warm_up``'s second process compiles while the first compiles the rest
    (:func:`compile_step_callees`): on 2 cores the step's own compile starts about 5 s earlier.  A
    type that differs from ``step``'s would show as a second signature of the kernel.
    """
    topology, bodies, gravity = model._kernel_arrays
    n = model.nv
    scratch, composite, _, M = new_workspace(topology, n)
    zeros = np.zeros(n)
    forward_state(topology, bodies, gravity, np.array(model.armature), zeros.reshape(1, n), zeros.reshape(1, n),
                  0, zeros, scratch, composite, M, np.empty(n))


def compile_step_callees(model):
    """Compile the other kernels :func:`step` calls, for the argument types it passes them: all but
    :func:`kernels.forward_state` (:func:`compile_forward_state`) and ``kernels.joint_poses``, which
    the mass matrix of ``load_urdf``'s check compiles."""
    topology, bodies, _ = model._kernel_arrays
    n = model.nv
    (poses, *_), _, world, _ = new_workspace(topology, n)
    zeros = np.zeros(n)
    friction_torque(0.0, 0.0, DEFAULT_FRICTION_VELOCITY, 0.0)
    world_poses(topology, poses, world)
    add_wrench_torques(topology, bodies, world, np.zeros(0, dtype=np.int64), np.zeros((0, 3)), np.zeros((0, 6)), zeros)
    limit_correction(np.eye(n), zeros, zeros, zeros, zeros - 1.0, zeros + 1.0, 1.0)
