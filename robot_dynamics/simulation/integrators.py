"""The fixed-step integrators of :mod:`robot_dynamics.simulation.simulator`, compiled whole: one call per step,
stages, forces and checks included (``euler``, ``semi_implicit_euler``, ``rk4``; the module
docstring of ``simulation`` says what each does).
"""

import math

import numpy as np

from .equations_of_motion import acceleration, new_workspace
from ..jit import inline, njit


EULER, SEMI_IMPLICIT_EULER, RK4 = 0, 1, 2
DERIVATIVE = 3  # not a step: the right-hand side dx/dt = (qd, a) alone, which the adaptive integrator integrates
OK, BAD_COMMAND, NON_FINITE = -1, -2, -3  # what a compiled step returns besides a singular joint's index

# Classical Runge-Kutta 4 on x = (q, qd), dx/dt = (qd, a(t, q, qd)), as its Butcher tableau: stage i
# evaluates k_i = f(t + c_i dt, x + c_i dt k_{i-1}) and x+ = x + dt sum_i w_i k_i.  Euler is its first
# stage alone (c = 0, w = 1).  The stages share one call of acceleration: its code is compiled once.
RK4_NODES = (0.0, 0.5, 0.5, 1.0)
RK4_WEIGHTS = (1.0 / 6.0, 2.0 / 6.0, 2.0 / 6.0, 1.0 / 6.0)
RK4_COMMAND_ROWS = (0, 1, 1, 2)  # the stage's instant among the command rows t, t + dt/2, t + dt


@inline  # inlined into step: one optimisation level less to compile
def integrate(method, physics, commands, q, qd, dt, workspace):
    """``(q+, qd+, -1 or the singular joint)`` after one step of ``method``:

    - ``EULER`` (Lynch & Park §9.5): ``q+ = q + dt qd``, ``qd+ = qd + dt a(t, q, qd)``;
    - ``SEMI_IMPLICIT_EULER`` (symplectic): ``qd+ = qd + dt a(t, q, qd)``, ``q+ = q + dt qd+``;
    - ``RK4``: with ``k_i = (v_i, a_i)``: ``v1 = qd``, ``v2 = qd + dt/2 a1``, ``v3 = qd + dt/2 a2``,
      ``v4 = qd + dt a3``, ``a_i = a(t + c_i dt, q + c_i dt v_(i-1), v_i)``, ``x+ = x + dt/6 (k1 + 2 k2 + 2 k3 + k4)``;
    - ``DERIVATIVE``: no step, ``(qd, a(t, q, qd), -1 or the singular joint)``: Euler's single stage,
      ``k_1``, for the adaptive integrator (one compiled graph serves all four: half the compile time of two).

    ``commands`` holds the command at ``t``, ``t + dt/2`` and ``t + dt`` (or one row, held).
    """
    last = commands.shape[0] - 1
    stages = 4 if method == RK4 else 1
    q_rate, qd_rate = np.zeros_like(q), np.zeros_like(qd)  # sum_i w_i k_i
    v, a = qd, np.zeros_like(qd)
    for i in range(stages):
        c = RK4_NODES[i]
        q_stage, v = plus_scaled(q, c * dt, v), plus_scaled(qd, c * dt, a)
        a, singular = acceleration(physics, q_stage, v, commands[min(RK4_COMMAND_ROWS[i], last)], workspace)
        if singular >= 0:  # the stages after it would start from a meaningless acceleration
            return q, qd, singular
        weight = RK4_WEIGHTS[i] if method == RK4 else 1.0
        q_rate, qd_rate = plus_scaled(q_rate, weight, v), plus_scaled(qd_rate, weight, a)
    if method == DERIVATIVE:
        return q_rate, qd_rate, -1
    if method == SEMI_IMPLICIT_EULER:
        qd_next = plus_scaled(qd, dt, a)
        return plus_scaled(q, dt, qd_next), qd_next, -1
    return plus_scaled(q, dt, q_rate), plus_scaled(qd, dt, qd_rate), -1


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
def step(method, physics, effort_limit, commands, q, qd, dt, out):
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
    q_next, qd_next, singular = integrate(method, physics, applied, q, qd, dt, workspace)
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
