"""The shortest timing of a joint path within the velocity, acceleration and effort limits, and the
feed-forward efforts of a trajectory.

:func:`retime` keeps the waypoints' positions as the geometric path ``q(s)`` (a cubic spline through
them, ``s`` the given waypoint times, so the path between waypoints is close to the planner's) and
finds the fastest ``s(t)`` from rest to rest by TOPP-RA's reachability analysis (:mod:`.retime_kernels`;
Pham & Pham, IEEE T-RO 2018):

- along the path ``qd = q' sd`` and ``qdd = q' sdd + q'' sd^2``, so with ``u = sdd`` and ``x = sd^2``
  every limit is linear in ``(u, x)``: the torque ``tau = a u + b x + c`` with ``a = M q'``,
  ``b = M q'' + C(q, q') q'`` and ``c = g(q)`` (three batched inverse-dynamics calls for the whole
  grid: rotor inertia, couplings and payload are the model's); ``|q'| sqrt(x) <= qd_max``;
  ``|q' u + q'' x| <= qdd_max``;
- on a grid ``s_0 .. s_N`` with ``x_{i+1} = x_i + 2 (s_{i+1} - s_i) u_i``; each stage also holds the next
  grid point's limits with the same ``u`` (TOPP-RA's "interpolation" discretization), so both one-sided
  accelerations at every grid point are limited. ``x`` is linear in ``s`` on a stage and ``|q'|`` is not,
  so the largest ``x`` at each grid point is lowered where the chord to the next would pass a velocity
  limit inside their stage (:func:`_speed_limits`).

The timing is then written every ``1 / rate`` s (joint_trajectory_controller's samples) with the
inverse-dynamics torque of every point as ``effort``. The optimum is bang-bang in ``sdd``: a
controller's quintic through points on both sides of a jump of the acceleration overshoots it by up
to 8 % of the jump (16 % of a full reversal) whatever the spacing of the points, so the timing is
averaged over one period first (each jump becomes a ramp over one period; the motion lasts one
period longer), which leaves about 2 %. Every result is checked at its points and on the quintic
inside the intervals of those ramps; where a limit is passed (there, or between grid points), that
joint's limit is tightened by the excess and the timing found again; the points before the first grid
point whose timing changed are kept, with their efforts and checks. So a result never exceeds
``effort_margin`` times the effort limits, nor the velocity and acceleration limits, as a controller
at ``rate`` samples it, whatever its phase (``between_points=False``: at the points only).

Friction (``friction=True``): the Coulomb term ``F tanh(qd / eps)`` lies between 0 and ``F sign(q')``
for a path run forwards, and both ends of that interval are kept within the limits; the viscous term
``B q' sqrt(x)`` (URDF damping and the motors') is bounded above by its tangent at the largest ``x``
the velocity limits allow and below by its chord from 0 there: linear in ``x`` and never
optimistic (a joint without a velocity limit makes that bound loose).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..rigid_body.dynamics import inverse_dynamics
from .retime_kernels import averaged, cubic_values, reachability
from .check import (DEFAULT_FRICTION_VELOCITY, DEFAULT_RATE, MAX_SAMPLES, _model_states, _placed, _placement, _torques,
                    interpolate)
from .trajectory import MAX_DURATION, Trajectory, TrajectoryError

__all__ = ["retime", "feedforward", "RetimeResult", "InfeasiblePath", "DEFAULT_GRIDPOINTS"]

DEFAULT_GRIDPOINTS = 400  # grid points along the path: the bang-bang switches within 0.25 % of it
MAX_GRIDPOINTS = 100_000
MAX_PATH_SPEED_SQUARED = 1e10  # x = sd^2 cap where nothing limits the speed (a stretch the path stands still)
TIGHTENING_ROUNDS = 10  # re-solves with limits tightened where a limit was passed (_tightening)
TIGHTENING_SLACK = 1e-3  # tighten by this much more than the excess found
END_GAP = 1e-6  # s: the shortest interval between points written
SWITCH_JUMP = 0.01  # a jump of the path acceleration this part of its first range is a switch (_switches)
BETWEEN = 7  # points checked inside each interval of the written points that holds a switch
AT_LIMIT = 0.01  # a value this part of its limit below it is at the limit (_binding)
PROBES = 4  # points inside each stage where the velocity limits are kept (_speed_limits)


class InfeasiblePath(TrajectoryError):
    """No timing keeps the path within the limits: ``joint`` needs ``torque`` at ``time`` (s of the
    given trajectory) where its limit (times the margin) is ``limit``, whatever the speed."""

    def __init__(self, message, joint, time, torque, limit):
        super().__init__(message)
        self.joint, self.time, self.torque, self.limit = joint, time, torque, limit


@dataclass
class RetimeResult:
    """The retimed :class:`Trajectory` (``t, q, qd, qdd, effort``, a point every ``1 / rate`` s and
    the end), the durations before and after (s), and per waypoint segment ``(index, joint, limit)``:
    the joint and the limit (``"effort"``, ``"velocity"`` or ``"acceleration"``) that sets its pace."""

    trajectory: Trajectory
    duration_before: float
    duration_after: float
    binding: list
    gridpoints: int
    effort_margin: float  # the smallest margin finally used (below the one asked where tightened)


# ----------------------------------------------------------------------------- the path and its limits

def _acceleration_limits(model, acceleration_limits):
    """(nv,) rad/s^2 (m/s^2), inf where none: from None, a number, or one per model joint."""
    if acceleration_limits is None:
        return np.full(model.nv, np.inf)
    limits = np.broadcast_to(np.asarray(acceleration_limits, dtype=float), (model.nv,)).copy() \
        if np.ndim(acceleration_limits) == 0 or np.shape(acceleration_limits) == (model.nv,) else None
    if limits is None:
        raise TrajectoryError(f"acceleration limits: give one number or {model.nv} (one per joint: "
                              f"{', '.join(model.joint_names)}), got {np.shape(acceleration_limits)}")
    if np.any(np.isnan(limits)) or np.any(limits <= 0):
        raise TrajectoryError(f"acceleration limits must be positive, got {limits.tolist()}")
    return limits


def _limit(values):
    """A URDF limit of 0 or absent as no limit (inf), as check_trajectory reads them."""
    return np.where((values > 0) & np.isfinite(values), values, np.inf)


class _Path:
    """The geometric path of ``trajectory`` in model coordinates: ``q(s)`` a cubic spline (not-a-knot)
    through the waypoints at their times, the joints the trajectory does not name held still."""

    def __init__(self, model, trajectory, notes):
        from scipy.interpolate import CubicSpline

        self.model, self.trajectory = model, trajectory
        self.placement = _placement(model, trajectory, notes)
        self.in_model_order = len(trajectory.joint_names) == model.nv and all(
            np.array_equal(part, np.arange(model.nv)) for part in self.placement[1:])
        spline = CubicSpline(trajectory.t, trajectory.q, axis=0)
        self.breaks, self.coefficients = np.ascontiguousarray(spline.x), np.ascontiguousarray(spline.c)
        self.start, self.end = float(trajectory.t[0]), float(trajectory.t[-1])

    def joint_values(self, s):
        """The trajectory's joints' ``(q, q', q'')`` at ``s`` (len(s), m) each."""
        return cubic_values(self.breaks, self.coefficients, np.ascontiguousarray(s, dtype=float))

    def placed(self, values, positions=False):
        """Joint values (len, m) in the model's coordinates (len, nv): the others at rest (``positions``) or 0 (the
        values themselves when the trajectory names every joint in the model's order)."""
        return values if self.in_model_order else _placed(self.model, self.placement, values, positions)

    def model_values(self, s):
        """The model's coordinates' ``(q, q', q'')`` at ``s`` (len(s), nv) each."""
        q, dq, ddq = self.joint_values(s)
        return self.placed(q, True), self.placed(dq), self.placed(ddq)

    def probes(self, s):
        """Points ``sigma``: :data:`PROBES` inside each stage of the grid ``s``, the breaks and where a ``q'``
        (quadratic on each piece) peaks (``q'' = 0``); as ``(stage, (sigma - s_stage) / delta_stage, each stage's
        first, |q'(sigma)|)`` (the model's): where the velocity limits are kept between the grid points
        (:func:`_speed_limits`)."""
        c0, c1, length = self.coefficients[0], self.coefficients[1], np.diff(self.breaks)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            vertex = -c1 / (3.0 * c0)  # (pieces, m): q'' = 6 c0 d + 2 c1 = 0
        inside = np.linspace(0.0, 1.0, PROBES + 2)[1:-1]
        sigma = np.unique(np.concatenate([(s[:-1, None] + np.diff(s)[:, None] * inside).ravel(), self.breaks,
                                          (self.breaks[:-1, None] + vertex)[(vertex > 0) & (vertex < length)]]))
        sigma = sigma[(sigma > s[0]) & (sigma < s[-1])]
        stage = np.clip(np.searchsorted(s, sigma, side="right") - 1, 0, s.size - 2)
        return (stage, (sigma - s[stage]) / (s[stage + 1] - s[stage]), np.searchsorted(stage, np.arange(s.size - 1)),
                np.abs(self.placed(self.joint_values(sigma)[1])))


def _path_dynamics(path, s):
    """``(q, q', q'', a, b, c, probes)`` at the grid ``s``: ``tau = a sdd + b sd^2 + c`` (module docstring), from
    one batched inverse-dynamics call over the three sets of states, and :meth:`_Path.probes`."""
    q, dq, ddq = path.model_values(s)
    zero = np.zeros_like(q)
    tau = inverse_dynamics(path.model, np.concatenate([q, q, q]), np.concatenate([zero, zero, dq]),
                           np.concatenate([zero, dq, ddq]))
    c, Mq, Mqq = np.split(tau, 3)
    return q, dq, ddq, Mq - c, Mqq - c, c, path.probes(s)


def _friction_bounds(model, dq, x_bound):
    """Per grid point and joint, the friction torque's bounds for a forward run with ``x <= x_bound``:
    ``(upper slope, upper offset, lower slope, lower offset)`` in ``x`` (module docstring)."""
    coulomb = model.friction * np.sign(dq)
    viscous = model.viscous_damping * dq  # beta: the torque beta sqrt(x)
    root = np.sqrt(x_bound)[:, None]
    upper_slope = np.where(viscous > 0, viscous / (2 * root), viscous / root)
    upper_offset = np.where(viscous > 0, viscous * root / 2, 0.0) + np.maximum(coulomb, 0.0)
    lower_slope = np.where(viscous > 0, viscous / root, viscous / (2 * root))
    lower_offset = np.where(viscous > 0, 0.0, viscous * root / 2) + np.minimum(coulomb, 0.0)
    return upper_slope, upper_offset, lower_slope, lower_offset


def _rows(terms, effort, acceleration):
    """Every stage's rows ``A u + B x <= H``: its grid point's limits and the next one's at the same ``u``
    with ``x + 2 delta u`` (module docstring). ``terms``: :func:`_path_dynamics` and friction bounds; the
    limits (N, nv), one row per grid point."""
    dq, ddq, a, b, c, friction, delta = terms
    up_slope, up_offset, low_slope, low_offset = friction
    finite_effort, finite_acceleration = np.isfinite(effort).all(axis=0), np.isfinite(acceleration).all(axis=0)
    A = [a[:, finite_effort], -a[:, finite_effort]]
    B = [(b + up_slope)[:, finite_effort], -(b + low_slope)[:, finite_effort]]
    H = [(effort - c - up_offset)[:, finite_effort], (effort + c + low_offset)[:, finite_effort]]
    A += [dq[:, finite_acceleration], -dq[:, finite_acceleration]]
    B += [ddq[:, finite_acceleration], -ddq[:, finite_acceleration]]
    H += [acceleration[:, finite_acceleration]] * 2
    A, B, H = (np.concatenate(part, axis=1) for part in (A, B, H))
    step = 2 * delta[:, None]
    return (np.ascontiguousarray(np.concatenate([A[:-1], A[1:] + step * B[1:]], axis=1)),
            np.ascontiguousarray(np.concatenate([B[:-1], B[1:]], axis=1)),
            np.ascontiguousarray(np.concatenate([H[:-1], H[1:]], axis=1)))


def _speed_limits(dq, probes, s, velocity):
    """(N,) the largest ``x`` at each grid point within the velocity limits ``velocity`` (N, nv) there, lowered
    where the chord between two grid points' would pass a limit inside their stage (``x`` is linear in ``s`` on
    a stage, ``|q'|`` is not; at :meth:`_Path.probes`, under the lower of the stage's ends' limits): then both
    ends by the same factor (less :data:`TIGHTENING_SLACK`), so every ``x`` within them stays within the limits
    at the probes."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x_max = np.minimum(np.min(np.where(dq != 0, (velocity / np.abs(dq)) ** 2, np.inf), axis=1),
                           MAX_PATH_SPEED_SQUARED)
        stage, weight, firsts, slopes = probes
        inside = 1.0 / np.max(slopes / np.minimum(velocity[stage], velocity[stage + 1]), axis=1) ** 2
        chord = x_max[stage] + (x_max[stage + 1] - x_max[stage]) * weight
        factors = np.minimum.reduceat(np.where(chord > inside, inside / (chord * (1 + TIGHTENING_SLACK)), 1.0), firsts)
    return x_max * np.minimum(np.append(factors, 1.0), np.insert(factors, 0, 1.0))


def _refuse(model, path, s, c, effort, why):
    """InfeasiblePath naming the joint whose holding torque ``c`` is the largest part of its limit near ``s``."""
    fraction = np.abs(c) / effort  # (the rows of both near s)
    k, joint = np.unravel_index(np.argmax(np.where(np.isfinite(fraction), fraction, -1.0)), fraction.shape)
    name = model.joint_names[joint]
    unit = "N" if model.joint_types[joint] == "prismatic" else "N m"
    raise InfeasiblePath(f"{path.trajectory.source or 'the path'}: no timing keeps it within the limits {why}: at "
                         f"t = {s[k]:.4g} s of the given trajectory {name} needs {c[k, joint]:.6g} {unit} to hold "
                         f"still, beyond its limit (times the margin) of {effort[k, joint]:.6g} {unit}", name,
                         float(s[k]), float(c[k, joint]), float(effort[k, joint]))


def _parametrize(model, path, s, dynamics, effort, velocity, acceleration, friction):
    """``(x, u)`` on the grid ``s``: the fastest rest-to-rest timing (:func:`.retime_kernels.reachability`) within
    the limits ``effort``, ``velocity``, ``acceleration`` (N, nv): each grid point's."""
    _, dq, ddq, a, b, c, probes = dynamics
    x_max = _speed_limits(dq, probes, s, velocity)
    zero = np.zeros_like(dq)
    bounds = _friction_bounds(model, dq, x_max) if friction else (zero, zero, zero, zero)
    if np.any(np.abs(c[[0, -1]]) > effort[[0, -1]]):  # (held at rest before and after: no acceleration helps)
        _refuse(model, path, s[[0, -1]], c[[0, -1]], effort[[0, -1]], "at rest at its ends")
    delta = np.diff(s)
    x, u, failed = reachability(*_rows((dq, ddq, a, b, c, bounds, delta), effort, acceleration), x_max, delta)
    if failed >= 0:
        _refuse(model, path, s[failed:failed + 2], c[failed:failed + 2], effort[failed:failed + 2], "at any speed")
    stuck = np.flatnonzero((x[:-1] <= 0) & (x[1:] <= 0))  # (a stretch passed at no speed: in no time)
    if stuck.size:
        _refuse(model, path, s[stuck[0]:stuck[0] + 2], c[stuck[0]:stuck[0] + 2], effort[stuck[0]:stuck[0] + 2],
                "except at standstill")
    return x, u


# ----------------------------------------------------------------------------- the timing written out

def _grid_times(path, s, x):
    """The time of each grid point: ``t_{i+1} = t_i + 2 delta_i / (sd_i + sd_{i+1})``."""
    speed = np.sqrt(x)
    steps = 2 * np.diff(s) / (speed[:-1] + speed[1:])  # (never 0 / 0: _parametrize refuses a standstill)
    times = path.start + np.concatenate([[0.0], np.cumsum(steps)])
    if times[-1] - times[0] > MAX_DURATION:
        raise TrajectoryError(f"{path.trajectory.source or 'the path'}: the limits allow it only in "
                              f"{times[-1] - times[0]:.6g} s, more than the {MAX_DURATION:g} s allowed")
    return times


def _dense_times(start, end, rate):
    """``start + k / rate`` up to ``end`` (the times check_trajectory and a controller at ``rate`` sample; one
    within :data:`END_GAP` of ``end`` dropped), and ``end``."""
    count = np.floor((end - start) * rate) + 1
    if not count <= MAX_SAMPLES:
        raise TrajectoryError(f"the retimed trajectory lasts {end - start:.6g} s: at {rate:g} Hz more than the "
                              f"{MAX_SAMPLES} points allowed")
    times = start + np.arange(int(count)) / rate
    return np.append(times[times < end - END_GAP], end)


def _switches(grid_times, u, threshold):
    """The grid times where ``u`` jumps by more than ``threshold`` (bang-bang switches), from rest and to rest."""
    return np.concatenate([grid_times[[0, -1]], grid_times[1:-1][np.abs(np.diff(u)) > threshold]])


def _between_switches(t, jumps, ramp, Q, QD, QDD, first):
    """``(times, (q, qd, qdd))`` of a controller's quintic between the written points, inside every interval from
    the ``first`` on that holds a jump of the path acceleration (:func:`_switches`) or its ramp's end, at
    :data:`BETWEEN` points each: there the quintic through both sides' accelerations overshoots them."""
    ramps = np.concatenate([jumps - ramp / 2, jumps + ramp / 2])  # (the written ramp of each jump: both ends)
    intervals = np.unique(np.clip(np.searchsorted(t, ramps) - 1, 0, t.size - 2))
    intervals = intervals[intervals >= first]
    if intervals.size == 0:
        return np.empty(0), (np.empty((0, Q.shape[1])),) * 3
    ends = np.union1d(intervals, intervals + 1)
    pieces = Trajectory(tuple(range(Q.shape[1])), t[ends], Q[ends], QD[ends], QDD[ends])
    inside = np.linspace(0.0, 1.0, BETWEEN + 2)[1:-1]
    starts, steps = t[intervals], t[intervals + 1] - t[intervals]
    times = (starts[:, None] + steps[:, None] * inside).ravel()
    return times, interpolate(pieces, times)  # (the pieces' own segments between their pairs are never sampled)


def _timing(s, x, u, grid_times):
    """The grid's timing as :func:`.retime_kernels.averaged` reads it: ``(times, s, sd, u, integrals)``."""
    sd, steps = np.sqrt(x), np.diff(grid_times)
    integrals = np.concatenate([[0.0], np.cumsum(s[:-1] * steps + sd[:-1] * steps**2 / 2 + u * steps**3 / 6)])
    return grid_times, s, sd, u, integrals


def _tightening(ratio, times, grid_times, period):
    """(N, nv) factors for the grid points' limits: where ``ratio`` (value / limit at ``times``) exceeds 1,
    that joint's limit at the grid points within 1.5 periods (the average over one period mixes them) and
    a grid point more on each side, times 1 / ratio (less :data:`TIGHTENING_SLACK`): each excess at its
    grid point, then the smallest factor within the widest such reach (a running minimum)."""
    from scipy.ndimage import minimum_filter1d

    factors = np.ones((grid_times.size, ratio.shape[1]))
    points, joints = np.nonzero(ratio > 1.0)
    if points.size == 0:
        return factors
    at = times[points]
    centre = np.minimum(np.searchsorted(grid_times, at), grid_times.size - 1)
    reach = max(int((centre - np.searchsorted(grid_times, at - 1.5 * period)).max()),
                int((np.searchsorted(grid_times, at + 1.5 * period) - centre).max())) + 2
    np.minimum.at(factors, (centre, joints), 1.0 / (ratio[points, joints] * (1 + TIGHTENING_SLACK)))
    return minimum_filter1d(factors, size=2 * reach + 1, axis=0, mode="nearest")


def _write_out(path, timing, rate, limits, torques, previous, kept):
    """The points written every ``h = 1 / rate`` (:func:`_dense_times`): a dict of their times ``t``, path points
    ``along``, the trajectory's joints' ``q, qd, qdd``, the model's states ``Q, QD, QDD`` and torques ``tau``, and
    per limit (``limits``' keys) the ratios of the values to it. The timing (:func:`_timing`) is the grid's averaged
    over the period before each point (:func:`.retime_kernels.averaged`: ``s(t)`` convolved with a box of width
    ``h``): each jump of ``sdd`` becomes a ramp over one period, which a controller's quintic between the points
    follows without overshooting the jump (module docstring); the motion lasts ``h`` longer. The first ``kept``
    points are ``previous``'s (the timing unchanged there)."""
    h = 1.0 / rate
    t = _dense_times(timing[0][0], timing[0][-1] + h, rate)[kept:]
    along, sd, sdd = averaged(*timing, t, h)
    q, dq, ddq = path.joint_values(along)  # qd = q' sd, qdd = q' sdd + q'' sd^2
    out = {"t": t, "along": along, "q": q, "qd": dq * sd[:, None], "qdd": ddq * (sd**2)[:, None] + dq * sdd[:, None]}
    out.update(Q=path.placed(out["q"], True), QD=path.placed(out["qd"]), QDD=path.placed(out["qdd"]))
    out["tau"] = torques(out["Q"], out["QD"], out["QDD"])
    out.update((kind, np.abs(value) / limits[kind]) for kind, value in zip(limits, (out["tau"], out["QD"], out["QDD"])))
    return {key: np.concatenate([previous[key][:kept], value]) for key, value in out.items()} if kept else out


def _unchanged(t, x_before, x, grid_times):
    """How many of the written points ``t`` a new timing ``x`` leaves as they were: those before the grid time
    of the last grid point before the first whose ``x`` changed (a point averages the period before it)."""
    first = np.argmax(x != x_before) if np.any(x != x_before) else x.size - 1
    return int(np.searchsorted(t, grid_times[first - 1])) if first >= 1 else 0


def _check_between(written, previous, kept, jumps, rate, limits, torques):
    """The ratios to the limits (a dict as :func:`_write_out`'s) of a controller's quintic between the written
    points where it overshoots (:func:`_between_switches`): ``previous``'s in the first ``kept`` points'
    intervals, the rest computed."""
    first = max(kept - 1, 0)
    times, states = _between_switches(written["t"], jumps, 1.0 / rate, written["Q"], written["QD"], written["QDD"],
                                      first)
    out = {"t": times}
    out.update((kind, np.abs(value) / limits[kind]) for kind, value in zip(limits, (torques(*states), *states[1:])))
    if not kept:
        return out
    old = previous["t"] < written["t"][first]
    return {key: np.concatenate([previous[key][old], value]) for key, value in out.items()}


def _binding(model, path, along, ratios):
    """Per waypoint segment ``(index, joint, limit)`` whose value is at its limit (within :data:`AT_LIMIT`) at the
    most points there, else with the largest ratio of a value to its limit (a segment shorter than a period: at
    the point just after its start); so a tie to rounding goes to the limit held longest."""
    kinds = list(ratios)
    flat = np.concatenate([ratios[kind] for kind in kinds], axis=1)  # (points, kind * nv)
    starts = np.minimum(np.searchsorted(along, path.trajectory.t[:-1]), along.size - 1)  # (along is increasing)
    peaks = np.maximum.reduceat(flat, starts, axis=0)
    reaching = np.flatnonzero((peaks >= 1.0 - AT_LIMIT).any(axis=0))  # (only these can be held)
    held = np.add.reduceat((flat[:, reaching] >= 1.0 - AT_LIMIT).astype(np.int64), starts, axis=0)
    worst = np.where(held.max(axis=1, initial=0) > 0, reaching[np.argmax(held, axis=1)] if reaching.size else 0,
                     np.argmax(peaks, axis=1))
    return [(k, model.joint_names[w % model.nv], kinds[w // model.nv]) for k, w in enumerate(worst.tolist())]


def retime(model, trajectory, effort_margin=1.0, acceleration_limits=None, friction=False, rate=DEFAULT_RATE,
           gridpoints=DEFAULT_GRIDPOINTS, between_points=True, friction_velocity=DEFAULT_FRICTION_VELOCITY):
    """:class:`RetimeResult`: ``trajectory``'s waypoint positions, as a path, run from rest to rest in the
    shortest time within the URDF velocity limits, ``acceleration_limits`` (None, a number, or one per
    model joint) and ``effort_margin`` (0 < m <= 1) times the URDF effort limits (module docstring).

    ``model`` carries the payload (``model.with_payload``); ``friction`` adds the URDF's and the motors'
    friction to the torques. ``between_points``: the limits also hold on a controller's quintic between the
    written points (a switch of the acceleration makes it overshoot: module docstring); False: at the
    points only. Raises :class:`InfeasiblePath` when no timing can keep the limits,
    :class:`TrajectoryError` on bad input."""
    if not 0 < effort_margin <= 1:
        raise TrajectoryError(f"the effort margin must be in (0, 1], got {effort_margin}")
    if not (np.isfinite(rate) and rate > 0):
        raise TrajectoryError(f"the rate must be a positive number of Hz, got {rate}")
    if not 2 <= int(gridpoints) <= MAX_GRIDPOINTS:
        raise TrajectoryError(f"gridpoints must be from 2 to {MAX_GRIDPOINTS}, got {gridpoints}")
    notes = list(trajectory.notes)
    path = _Path(model, trajectory, notes)
    s = np.linspace(path.start, path.end, int(gridpoints))
    dynamics = _path_dynamics(path, s)
    if not all(np.isfinite(part).all() for part in dynamics[:6]):
        raise TrajectoryError(f"{trajectory.source or 'the path'}: its torques are not finite (waypoints beyond "
                              "what can be computed)")
    if not np.any(dynamics[1]):
        raise TrajectoryError(f"{trajectory.source or 'the path'}: the waypoints do not move: nothing to retime")
    limits = {"effort": effort_margin * _limit(model.effort_limits), "velocity": _limit(model.velocity_limits),
              "acceleration": _acceleration_limits(model, acceleration_limits)}
    scale = {kind: np.ones((s.size, model.nv)) for kind in limits}  # each grid point's limits as tightened
    torques = lambda Q, QD, QDD: _torques(model, Q, QD, QDD, friction, friction_velocity)  # noqa: E731
    written = between = x_before = threshold = None
    for _ in range(TIGHTENING_ROUNDS):
        x, u = _parametrize(model, path, s, dynamics, *(scale[kind] * limits[kind] for kind in limits), friction)
        grid_times = _grid_times(path, s, x)
        threshold = SWITCH_JUMP * max(np.ptp(u), 1e-300) if threshold is None else threshold  # (the first solve's)
        kept = 0 if written is None else _unchanged(written["t"], x_before, x, grid_times)  # (only those recomputed)
        written = _write_out(path, _timing(s, x, u, grid_times), rate, limits, torques, written, kept)
        samples = [written]
        if between_points:  # (the written ramp of a switch at a grid time starts there: centred half a period on)
            between = _check_between(written, between, kept, _switches(grid_times, u, threshold) + 0.5 / rate,
                                     rate, limits, torques)
            samples.append(between)
        peaks = [{kind: sample[kind].max(initial=0.0) for kind in limits} for sample in samples]
        worst = {kind: max(peak[kind] for peak in peaks) for kind in limits}
        if max(worst.values()) <= 1.0:
            break
        for sample, peak in zip(samples, peaks):
            for kind in limits:
                if peak[kind] > 1.0:
                    scale[kind] *= _tightening(sample[kind], sample["t"], grid_times + 0.5 / rate, 1.0 / rate)
        x_before = x
    else:
        excess = max(worst.values()) - 1
        raise TrajectoryError(f"{trajectory.source or 'the path'}: after {TIGHTENING_ROUNDS} tightenings the timing "
                              f"still exceeds a limit between grid points (by {100 * excess:.3g} %): give more grid points")
    _, columns, indices = path.placement  # (mimic joints named: their own path column)
    t, along, q, qd, qdd = (written[key] for key in ("t", "along", "q", "qd", "qdd"))
    effort = np.zeros_like(q)
    effort[:, columns] = written["tau"][:, indices]
    if columns.size < q.shape[1]:
        notes.append("mimic joints named in the trajectory: their efforts are left 0 (their masters carry them)")
    retimed = Trajectory(trajectory.joint_names, t, q, qd, qdd, effort, source=f"{trajectory.source} (retimed)".strip(),
                         notes=notes)
    return RetimeResult(retimed, float(trajectory.t[-1] - trajectory.t[0]), float(t[-1] - t[0]),
                        _binding(model, path, along, {kind: written[kind] for kind in limits}), int(gridpoints),
                        float(effort_margin * scale["effort"].min()))


def feedforward(model, trajectory, friction=False, friction_velocity=DEFAULT_FRICTION_VELOCITY):
    """``trajectory`` with ``effort`` filled: the inverse-dynamics torque at each waypoint, in the state
    joint_trajectory_controller has there (the given velocities and accelerations, else those of its
    interpolation), with friction if asked; the same times, nothing retimed. One batched call."""
    notes = list(trajectory.notes)
    placement = _placement(model, trajectory, notes)
    _, columns, indices = placement
    with np.errstate(all="ignore"):
        q, qd, qdd = interpolate(trajectory, trajectory.t)
    tau = _torques(model, *_model_states(model, placement, q, qd, qdd), friction, friction_velocity)
    if not np.isfinite(tau).all():
        raise TrajectoryError(f"{trajectory.source or 'the trajectory'}: its torques are not finite (waypoints beyond "
                              "what can be computed)")
    effort = np.zeros_like(trajectory.q)
    effort[:, columns] = tau[:, indices]
    return dataclasses.replace(trajectory, effort=effort, notes=notes)
