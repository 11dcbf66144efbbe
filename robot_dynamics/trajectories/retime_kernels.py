"""The compiled kernels of :func:`robot_dynamics.trajectories.retime.retime` (which explains them): the path's
cubic spline with its two derivatives in one pass, the timing averaged over a period, and TOPP-RA's
reachability analysis on a grid (Pham & Pham, "A new approach to time-optimal path parameterization
based on reachability analysis", IEEE T-RO 2018).

With ``u = sdd`` and ``x = sd^2`` every limit at a stage is a row ``A u + B x <= H``; with
``x_{i+1} = x_i + 2 delta_i u_i`` the sets of ``x`` from which the end is still reachable at rest are
intervals, found backwards (each a linear programme in two variables, solved by eliminating ``u``);
then, forwards from rest, the largest ``u`` that stays in them.
"""

import numpy as np

from ..jit import njit

__all__ = ["cubic_values", "averaged", "reachability"]


@njit
def cubic_values(breaks, coefficients, s):
    """``(q, q', q'')`` (len(s), m) of a piecewise cubic at ``s``: ``coefficients`` (4, pieces, m) highest power
    first in ``s - breaks[piece]`` (scipy's PPoly layout), the end pieces extended beyond the breaks."""
    shape = (s.size, coefficients.shape[2])
    q, dq, ddq = np.empty(shape), np.empty(shape), np.empty(shape)
    pieces = np.minimum(np.maximum(np.searchsorted(breaks, s, side="right") - 1, 0), breaks.size - 2)
    for k in range(s.size):
        piece, d = pieces[k], s[k] - breaks[pieces[k]]
        for j in range(q.shape[1]):
            c0, c1, c2, c3 = (coefficients[0, piece, j], coefficients[1, piece, j], coefficients[2, piece, j],
                              coefficients[3, piece, j])
            q[k, j] = ((c0 * d + c1) * d + c2) * d + c3
            dq[k, j] = (3.0 * c0 * d + 2.0 * c1) * d + c2
            ddq[k, j] = 6.0 * c0 * d + 2.0 * c1
    return q, dq, ddq


@njit
def _timing_at(times, s, sd, u, integrals, t):
    """``(integral of s from times[0], s, sd)`` at the time ``t`` of the grid's timing: within segment ``i``
    ``sdd = u_i``, so ``s`` is a parabola in ``t``; at rest at ``s_0`` before ``times[0]`` and at ``s_N`` after
    the last; ``integrals``: of ``s`` up to each grid time."""
    inside = min(max(t, times[0]), times[-1])
    i = min(max(np.searchsorted(times, inside, side="right") - 1, 0), s.size - 2)
    dt = inside - times[i]
    integral = (integrals[i] + s[i] * dt + sd[i] * dt**2 / 2 + u[i] * dt**3 / 6
                + s[0] * min(t - times[0], 0.0) + s[-1] * max(t - times[-1], 0.0))
    return integral, s[i] + sd[i] * dt + u[i] * dt**2 / 2, max(sd[i] + u[i] * dt, 0.0)


@njit
def averaged(times, s, sd, u, integrals, t, h):
    """``(s, sd, sdd)`` at the times ``t`` of the grid's timing (:func:`_timing_at`) averaged over the period
    ``h`` before each: ``(S(t) - S(t - h)) / h`` with ``S`` the integral of ``s``, and so on for ``sd``, ``sdd``."""
    along, speed, acceleration = np.empty(t.size), np.empty(t.size), np.empty(t.size)
    for k in range(t.size):
        integral, position, velocity = _timing_at(times, s, sd, u, integrals, t[k])
        integral_before, position_before, velocity_before = _timing_at(times, s, sd, u, integrals, t[k] - h)
        along[k] = min(max((integral - integral_before) / h, s[0]), s[-1])
        speed[k] = max((position - position_before) / h, 0.0)
        acceleration[k] = (velocity - velocity_before) / h
    return along, speed, acceleration


@njit
def _x_interval(A, B, H, x_max, delta, next_low, next_high, lows, highs):
    """The ``x`` with some ``u`` such that ``A u + B x <= H`` and ``next_low <= x + 2 delta u <= next_high``,
    ``0 <= x <= x_max``: ``u`` eliminated (Fourier-Motzkin) from each pair of a lower and an upper bound
    on it. Returns ``(low, high)``; ``low > high`` when there is none. ``lows``/``highs``: scratch."""
    x_low, x_high = 0.0, x_max
    n_low, n_high = 0, 0
    for r in range(A.shape[0]):  # a u <= h - b x:  u <= or >= p x + q
        a, b, h = A[r], B[r], H[r]
        if abs(a) <= 1e-12 * (abs(b) + 1.0):
            if b > 0.0:
                x_high = min(x_high, h / b)
            elif b < 0.0:
                x_low = max(x_low, h / b)
            elif h < 0.0:
                return 1.0, 0.0
        elif a > 0.0:
            highs[n_high, 0], highs[n_high, 1] = -b / a, h / a
            n_high += 1
        else:
            lows[n_low, 0], lows[n_low, 1] = -b / a, h / a
            n_low += 1
    step = 2.0 * delta
    lows[n_low, 0], lows[n_low, 1] = -1.0 / step, next_low / step
    highs[n_high, 0], highs[n_high, 1] = -1.0 / step, next_high / step
    n_low += 1
    n_high += 1
    for i in range(n_low):
        for j in range(n_high):
            slope, room = lows[i, 0] - highs[j, 0], highs[j, 1] - lows[i, 1]  # slope x <= room
            if slope > 0.0:
                x_high = min(x_high, room / slope)
            elif slope < 0.0:
                x_low = max(x_low, room / slope)
            elif room < -1e-9 * (abs(highs[j, 1]) + abs(lows[i, 1]) + 1.0):
                return 1.0, 0.0
    return x_low, x_high


@njit
def _largest_u(A, B, H, x, delta, next_low, next_high):
    """The largest ``u`` with ``A u + B x <= H`` and ``next_low <= x + 2 delta u <= next_high`` at this ``x``
    (the least violating one, the middle of the bounds, if rounding left none)."""
    u_low, u_high = (next_low - x) / (2.0 * delta), (next_high - x) / (2.0 * delta)
    for r in range(A.shape[0]):
        a, room = A[r], H[r] - B[r] * x
        if a > 1e-12:
            u_high = min(u_high, room / a)
        elif a < -1e-12:
            u_low = max(u_low, room / a)
    return u_high if u_high >= u_low else 0.5 * (u_low + u_high)


@njit
def reachability(A, B, H, x_max, delta):
    """TOPP-RA on a grid (module docstring): rows ``A[i] u + B[i] x <= H[i]`` of stage ``i`` (its own grid
    point's and the next one's limits), ``x <= x_max[i]``, ``delta[i] = s_{i+1} - s_i``; at rest at both
    ends. Returns ``(x, u, failed)``: ``x`` (N,) at the grid points, ``u`` (N-1,), and the first stage
    whose set is empty (-1 if none)."""
    N, R = x_max.shape[0], A.shape[1]
    low, high = np.zeros(N), np.zeros(N)  # the controllable sets; the last is {0}
    lows, highs = np.empty((R + 1, 2)), np.empty((R + 1, 2))
    x, u = np.zeros(N), np.zeros(N - 1)
    for i in range(N - 2, -1, -1):
        low[i], high[i] = _x_interval(A[i], B[i], H[i], x_max[i], delta[i], low[i + 1], high[i + 1], lows, highs)
        if low[i] > high[i] * (1.0 + 1e-9) + 1e-12:
            return x, u, i
        high[i] = max(high[i], low[i])
    if low[0] > 1e-12:  # (at rest at the start)
        return x, u, 0
    for i in range(N - 1):
        u[i] = _largest_u(A[i], B[i], H[i], x[i], delta[i], low[i + 1], high[i + 1])
        x[i + 1] = min(max(x[i] + 2.0 * delta[i] * u[i], low[i + 1]), high[i + 1])
        u[i] = (x[i + 1] - x[i]) / (2.0 * delta[i])
    return x, u, -1
