"""Time integration of the forward dynamics: the physics behind ``simulator_node``.

The state ``x = (q, qd)`` obeys the equations of motion written as a first-order system
(Lynch & Park §9.5, eq. 9.89)::

    dq/dt  = qd
    dqd/dt = a(t, q, qd) = M(q)^-1 (tau_joint - h(q, qd) + sum_links J_link(q)^T F_link)

where :func:`robot_dynamics.forward_dynamics` evaluates ``a`` and the generalized force on the
joints is::

    tau_joint = sat(tau_cmd(t))                 actuator torque, clipped to +-effort_limits
              - B qd                            viscous damping, B = URDF <dynamics damping>
              - F_c tanh(qd / eps)              smoothed Coulomb friction, F_c = URDF <dynamics friction>
              + tau_limit(q, qd)                stiff damped one-sided limit beyond a position limit

Damping, friction and the limits are each switched on or off (``apply_damping``,
``apply_friction``, ``enforce_position_limits``, ``enforce_effort_limits``).  The *applied
effort* reported by :attr:`Simulator.applied_effort` (and by the node in ``joint_states``) is
``sat(tau_cmd)``: what the actuators deliver; damping, friction and limit torques are the
environment's.  A command is a ``(nv,)`` array held constant over a step (zero-order hold, like a
digital controller) or a callable ``tau(t)`` evaluated at every integrator stage.  An effort
limit of 0 in the URDF (a common xacro default) is read as "not given", not as a locked joint.

Integrators (one implementation each, ``INTEGRATORS``), step ``h``:

``euler``
    the seed's explicit Euler (Lynch & Park §9.5, "Euler integration algorithm for forward
    dynamics"): ``q+ = q + h qd``, ``qd+ = qd + h a(t, q, qd)``.  First order (global error
    O(h)); it adds energy to every undamped oscillation (amplification sqrt(1 + (w h)^2) per
    step for a mode of frequency w), so it drifts visibly.
``semi_implicit_euler``
    semi-implicit (symplectic) Euler: ``qd+ = qd + h a(t, q, qd)``, ``q+ = q + h qd+``.  First
    order.  It is symplectic, with bounded energy error, only when the mass matrix is constant
    (a pendulum, a Cartesian gantry); for an arm, whose ``M(q)`` varies, it has no such
    guarantee (free-falling Panda, 10 s at 1 kHz: an energy error larger than explicit Euler's).
    Its advantage is stability: it keeps stiff contacts (the position limits) better damped.
``rk4``
    the classical fourth-order Runge-Kutta method (global error O(h^4), four evaluations of the
    forward dynamics per step).  The default.
``adaptive``
    :func:`scipy.integrate.solve_ivp` with the Dormand-Prince 8(5,3) method (``DOP853``) over each
    step, error-controlled to ``rtol``/``atol`` (defaults 1e-8, 1e-10).  Accurate but slow (a
    Python-level solver call per step); for reference runs, not for real time.

Position limits.  A joint beyond a limit (penetration ``p > 0``, inward direction ``s = +-1``)
is held by a one-sided, critically damped spring-damper written in acceleration space (a
Baumgarte-stabilized unilateral constraint): the limit torques ``tau_A`` on the set ``A`` of
joints beyond a limit are solved from ``(M^-1)_AA tau_A = s (w^2 p + 2 w dp/dt) - a_free,A``
so that every such joint obeys exactly ``d2p/dt2 = -w^2 p - 2 w dp/dt``, whatever the robot's
inertia, configuration or the other contacts; a joint whose torque would pull is released
(the wall only pushes) and the rest solved again.  The natural frequency is tied to the step:
``w h = LIMIT_OMEGA_STEP = 0.5`` (``w`` = 500 rad/s at 1 kHz).  The contact dynamics then have
the double root ``-w``, inside the stability region of every integrator here (explicit Euler
``|1 - w h| = 0.5``; semi-implicit Euler eigenvalues 0.75 and 0; RK4 ``R(-0.5) = 0.61``), so it
never explodes, and the restoring acceleration grows without bound with ``p``, so a joint never
passes through (no tunnelling).  Measured at 1 kHz: a joint arriving at ``v`` overshoots by
about ``v / (e w)`` (7.4 mrad at 10 rad/s; explicit Euler about twice that), leaves the wall at
about ``e^-2 v`` (restitution 0.14), and rests on the limit (``p -> 0``: no static
penetration).  Explicit Euler alone keeps a joint that is pushed hard into a wall chattering
within a few mrad of it (its position update lags one step); the other integrators come to
rest.  Costs a mass matrix and a small solve per evaluation, only while a joint is beyond a
limit.

Viscous damping and the friction's smoothing are explicit too: the linearized friction has a
damping ``F_c / eps``; where ``h F_c / (eps m) > 2`` (``m`` the joint's apparent inertia) the
velocity chatters inside the ``+-eps`` band instead of settling, but the friction is bounded by
``F_c`` so it cannot blow up.  Raise ``friction_velocity`` (``eps``) if that matters.

>>> import numpy as np, robot_dynamics as rd
>>> pendulum = rd.load_urdf(rd.examples.PENDULUM_URDF)
>>> sim = Simulator(pendulum, q=[0.1])
>>> for _ in range(1000):
...     sim.step(np.zeros(1), 1e-3)
>>> round(sim.t, 6), bool(abs(sim.q[0]) <= 0.1)
(1.0, True)
"""

import math

import numba
import numpy as np
from scipy.integrate import solve_ivp

from . import dynamics as _dynamics
from . import kinematics as _kinematics

LIMIT_OMEGA_STEP = 0.5
"""Natural frequency of the position-limit contact times the integration step (``w h``)."""

DEFAULT_FRICTION_VELOCITY = 0.01
"""``eps`` of the smoothed Coulomb friction ``F_c tanh(qd / eps)``, rad/s or m/s."""


@numba.njit(cache=True)
def _prepare(torque, q, qd, damping, friction, eps, passive, lower, upper, limited):
    """Subtract the passive torques from ``torque`` in place (if ``passive``); whether a joint is
    beyond a position limit (if ``limited``).  One compiled pass instead of several numpy calls."""
    beyond = False
    for i in range(q.shape[0]):
        if passive:
            torque[i] -= damping[i] * qd[i] + friction[i] * math.tanh(qd[i] / eps)
        if limited and (q[i] < lower[i] or q[i] > upper[i]):
            beyond = True
    return beyond


@numba.njit(cache=True)
def _limit_correction(M, q, qd, free, lower, upper, omega):
    """``M^-1[:, A] tau_A`` of :meth:`Simulator.limit_acceleration`, compiled (a few microseconds)."""
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
    units = np.zeros((n, count))
    for k in range(count):
        units[joints[k], k] = 1.0
    columns = np.linalg.solve(M, units)  # columns A of M^-1, by a solve (never an inverse)
    active = np.ones(count, dtype=np.bool_)
    for _ in range(count):
        rows = np.flatnonzero(active)
        m = rows.shape[0]
        W = np.empty((m, m))
        rhs = np.empty(m)
        for a in range(m):
            rhs[a] = target[rows[a]] - free[joints[rows[a]]]
            for b in range(m):
                W[a, b] = columns[joints[rows[a]], rows[b]]
        tau = np.linalg.solve(W, rhs)  # (M^-1)_AA is symmetric positive definite
        worst, worst_push = -1, 0.0
        for a in range(m):
            push = inward[rows[a]] * tau[a]
            if push < worst_push:
                worst, worst_push = a, push
        if worst < 0:
            for a in range(m):
                for r in range(n):
                    out[r] += columns[r, rows[a]] * tau[a]
            return out
        active[rows[worst]] = False  # a wall pushes, never pulls: release the worst puller
        if m == 1:
            break
    return out


class SimulationError(RuntimeError):
    """The state became non-finite (or the adaptive integrator failed); the last finite state is kept."""


class _CommandError(ValueError):
    """A callable command returned a bad value (re-raised as ValueError, not as SimulationError)."""


def euler(accel, t, q, qd, h):
    """Explicit Euler (Lynch & Park §9.5): ``q+ = q + h qd``, ``qd+ = qd + h a(t, q, qd)``."""
    return q + h * qd, qd + h * accel(t, q, qd)


def semi_implicit_euler(accel, t, q, qd, h):
    """Semi-implicit (symplectic) Euler: ``qd+ = qd + h a(t, q, qd)``, ``q+ = q + h qd+``."""
    qd_next = qd + h * accel(t, q, qd)
    return q + h * qd_next, qd_next


def rk4(accel, t, q, qd, h):
    """Classical Runge-Kutta 4 on ``x = (q, qd)``, ``dx/dt = (qd, a(t, q, qd))``.

    ``k1 = f(t, x)``, ``k2 = f(t + h/2, x + h/2 k1)``, ``k3 = f(t + h/2, x + h/2 k2)``,
    ``k4 = f(t + h, x + h k3)``, ``x+ = x + h/6 (k1 + 2 k2 + 2 k3 + k4)``; with
    ``k_i = (v_i, a_i)``: ``v1 = qd``, ``v2 = qd + h/2 a1``, ``v3 = qd + h/2 a2``, ``v4 = qd + h a3``.
    """
    half = 0.5 * h
    a1 = accel(t, q, qd)
    q2, v2 = _advance(q, qd, qd, a1, half)      # x + h/2 k1
    a2 = accel(t + half, q2, v2)
    q3, v3 = _advance(q, qd, v2, a2, half)      # x + h/2 k2
    a3 = accel(t + half, q3, v3)
    q4, v4 = _advance(q, qd, v3, a3, h)         # x + h k3
    a4 = accel(t + h, q4, v4)
    return _rk4_sum(q, qd, h, v2, v3, v4, a1, a2, a3, a4)


@numba.njit(cache=True)
def _advance(q, qd, v, a, c):
    """``(q + c v, qd + c a)``: the state moved along ``k = (v, a)`` by ``c`` (one compiled pass)."""
    return q + c * v, qd + c * a


@numba.njit(cache=True)
def _rk4_sum(q, qd, h, v2, v3, v4, a1, a2, a3, a4):
    """``x + h/6 (k1 + 2 k2 + 2 k3 + k4)`` with ``k_i = (v_i, a_i)``, ``v1 = qd``."""
    sixth = h / 6.0
    return (q + sixth * (qd + 2.0 * (v2 + v3) + v4),
            qd + sixth * (a1 + 2.0 * (a2 + a3) + a4))


def adaptive(accel, t, q, qd, h, rtol=1e-8, atol=1e-10):
    """Error-controlled Dormand-Prince 8(5,3) (``scipy.integrate.solve_ivp``, ``DOP853``) over one step."""
    n = q.shape[0]

    def f(time, x):
        return np.concatenate((x[n:], accel(time, x[:n], x[n:])))

    solution = solve_ivp(f, (t, t + h), np.concatenate((q, qd)), method="DOP853", rtol=rtol, atol=atol)
    if not solution.success:
        raise SimulationError(f"adaptive integrator failed at t = {t:.6f} s: {solution.message}")
    x = solution.y[:, -1]
    return x[:n].copy(), x[n:].copy()


INTEGRATORS = {
    "euler": euler,
    "semi_implicit_euler": semi_implicit_euler,
    "rk4": rk4,
    "adaptive": adaptive,
}


class Simulator:
    """The state ``(q, qd, t)`` of one robot and the integrator that advances it.

    ``q``/``qd`` default to zeros (in ``model.joint_names`` order).  ``step(tau, dt)`` advances
    by ``dt`` seconds; see the module docstring for the equations and the options.  A bad input
    (wrong shape, non-finite command or wrench, unknown link) raises ``ValueError``; a state that
    would become non-finite raises :class:`SimulationError`; in both cases the state is left
    unchanged.

    >>> import numpy as np, robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> sim = Simulator(arm, integrator="semi_implicit_euler")
    >>> sim.step(rd.gravity_torques(arm, sim.q), 1e-3)   # holding torque: nothing moves
    >>> bool(np.allclose(sim.qd, 0, atol=1e-12)), sim.t
    (True, 0.001)
    """

    def __init__(self, model, q=None, qd=None, *, integrator="rk4", apply_damping=False, apply_friction=False,
                 enforce_effort_limits=True, enforce_position_limits=True,
                 friction_velocity=DEFAULT_FRICTION_VELOCITY, rtol=1e-8, atol=1e-10, t=0.0):
        self.model = model
        self.integrator = integrator
        self.apply_damping = bool(apply_damping)
        self.apply_friction = bool(apply_friction)
        self.enforce_effort_limits = bool(enforce_effort_limits)
        self.enforce_position_limits = bool(enforce_position_limits)
        if not (math.isfinite(friction_velocity) and friction_velocity > 0):
            raise ValueError(f"friction_velocity must be positive, got {friction_velocity}")
        self.friction_velocity = float(friction_velocity)
        self.rtol, self.atol = float(rtol), float(atol)
        self._q = self._qd = None
        self.applied_effort = np.zeros(model.nv)
        self.reset(q, qd, t)

    # -- configuration -------------------------------------------------------------------------

    @property
    def model(self):
        """The :class:`robot_dynamics.RobotModel` integrated; assignable (same joints) e.g. to change gravity."""
        return self._model

    @model.setter
    def model(self, model):
        if getattr(self, "_model", None) is not None and tuple(model.joint_names) != tuple(self._model.joint_names):
            raise ValueError("a new model must have the same joints; build a new Simulator instead")
        self._model = model
        effort = np.asarray(model.effort_limits, dtype=float)
        # A URDF effort of 0 (a common xacro default) means "not given", not "cannot move".
        self._effort_limit = np.where(effort > 0, effort, np.inf)
        self._saturates = bool(np.isfinite(self._effort_limit).any())
        limits = np.asarray(model.position_limits, dtype=float)
        self._lower_joints = np.flatnonzero(np.isfinite(limits[:, 0]))
        self._upper_joints = np.flatnonzero(np.isfinite(limits[:, 1]))
        self._lower = limits[self._lower_joints, 0]
        self._lower_all, self._upper_all = limits[:, 0].copy(), limits[:, 1].copy()
        self._limited = bool(self._lower_joints.size or self._upper_joints.size)
        self._upper = limits[self._upper_joints, 1]
        self._damping = np.asarray(model.damping, dtype=float)
        self._friction = np.asarray(model.friction, dtype=float)
        self._passive_cache = (None, None)

    @property
    def integrator(self):
        """Name of the integrator, one of ``INTEGRATORS``."""
        return self._integrator_name

    @integrator.setter
    def integrator(self, name):
        if name not in INTEGRATORS:
            raise ValueError(f"unknown integrator {name!r}; choose one of {', '.join(INTEGRATORS)}")
        self._integrator_name = name
        self._integrator = INTEGRATORS[name]

    # -- state -----------------------------------------------------------------------------------

    @property
    def q(self):
        """Joint positions (a copy), ``model.joint_names`` order."""
        return self._q.copy()

    @property
    def qd(self):
        """Joint velocities (a copy)."""
        return self._qd.copy()

    @property
    def t(self):
        """Simulated time, s."""
        return self._t

    def reset(self, q=None, qd=None, t=None):
        """Set the state (zeros where ``None``); the time is kept unless ``t`` is given."""
        n = self._model.nv
        q = self._vector(np.zeros(n) if q is None else q, "q")
        qd = self._vector(np.zeros(n) if qd is None else qd, "qd")
        if t is not None:
            if not math.isfinite(t):
                raise ValueError(f"t must be finite, got {t}")
            self._t = float(t)
        self._q, self._qd = q.copy(), qd.copy()
        self.applied_effort = np.zeros(n)

    def energy(self):
        """Total mechanical energy ``T + V`` of the current state, J (conserved without torques and losses)."""
        return float(_kinematics.kinetic_energy(self._model, self._q, self._qd)
                     + _kinematics.potential_energy(self._model, self._q))

    # -- dynamics --------------------------------------------------------------------------------

    def saturate(self, tau):
        """The actuator torque actually applied: ``clip(tau, -effort_limits, effort_limits)`` if enabled."""
        if self.enforce_effort_limits and self._saturates:
            return np.clip(tau, -self._effort_limit, self._effort_limit)
        return tau

    def passive_torque(self, qd):
        """Damping and friction torques on the joints: ``-B qd - F_c tanh(qd / eps)`` (those enabled)."""
        damping, friction, _ = self._passive_coefficients()
        torque = np.zeros_like(qd)
        _prepare(torque, qd, qd, damping, friction, self.friction_velocity, True, qd, qd, False)
        return torque

    def _passive_coefficients(self):
        """``(B, F_c, any nonzero)`` with zeros for what is switched off (cached per switch setting)."""
        key = (self.apply_damping, self.apply_friction)
        if self._passive_cache[0] != key:
            zeros = np.zeros(self._model.nv)
            damping = self._damping if self.apply_damping else zeros
            friction = self._friction if self.apply_friction else zeros
            self._passive_cache = (key, (damping, friction, bool(damping.any() or friction.any())))
        return self._passive_cache[1]

    def limit_acceleration(self, q, qd, free, h):
        """Extra joint acceleration from the position limits (zeros when no joint is beyond one).

        ``free`` is the acceleration without limit torques.  For the joints ``A`` beyond a limit
        (penetration ``p``, inward direction ``s``) the limit torques ``tau_A`` make
        ``qdd_A = s (w^2 p + 2 w dp/dt)`` with ``w = LIMIT_OMEGA_STEP / h``:
        ``(M^-1)_AA tau_A = s (w^2 p + 2 w dp/dt) - free_A``; a joint whose torque would pull is
        released and the rest solved again.  Returns ``M^-1[:, A] tau_A``.
        """
        M = _dynamics.mass_matrix(self._model, q)
        return _limit_correction(M, q, qd, free, self._lower_all, self._upper_all, LIMIT_OMEGA_STEP / h)

    def acceleration(self, t, q, qd, tau, external_wrenches=None, h=1e-3):
        """``a(t, q, qd)``: joint accelerations under command ``tau`` (array or callable of t), all forces included.

        ``h`` is the step that sets the position limits' stiffness.
        """
        tau = tau if callable(tau) else self.saturate(self._vector(tau, "tau"))
        return self._rhs(tau, self._wrenches(external_wrenches), h)(t, self._vector(q, "q"), self._vector(qd, "qd"))

    def _rhs(self, tau, wrenches, h):
        """The right-hand side ``a(t, q, qd)`` for one step, with the per-step work hoisted out.

        ``tau``: the saturated command (an array) or a callable ``tau(t)`` (saturated here).
        """
        model = self._model
        saturate, limit_acceleration = self.saturate, self.limit_acceleration
        constant = None if callable(tau) else tau
        damping, friction, passive = self._passive_coefficients()
        eps = self.friction_velocity
        limited = self.enforce_position_limits and self._limited
        lower, upper = self._lower_all, self._upper_all

        def accel(time, q, qd):
            if constant is None:
                try:
                    torque = saturate(self._vector(tau(time), "tau(t)"))
                except ValueError as error:
                    raise _CommandError(str(error)) from None
            else:
                torque = constant
            beyond = False
            if passive or limited:  # one compiled pass: passive torques and the limit check
                torque = torque.copy()
                beyond = _prepare(torque, q, qd, damping, friction, eps, passive, lower, upper, limited)
            qdd = _dynamics.forward_dynamics(model, q, qd, torque, external_wrenches=wrenches)
            if beyond:
                qdd = qdd + limit_acceleration(q, qd, qdd, h)
            return qdd

        return accel

    # -- stepping --------------------------------------------------------------------------------

    def step(self, tau, dt, external_wrenches=None):
        """Advance the state by ``dt`` s under the command ``tau`` ((nv,) array or callable ``tau(t)``).

        ``external_wrenches``: ``{link: [moment; force]}`` applied by the environment to the
        robot, world-aligned axes at the link origin, held over the step.
        """
        if not (isinstance(dt, (int, float, np.floating)) and math.isfinite(dt) and dt > 0):
            raise ValueError(f"dt must be a positive finite number, got {dt!r}")
        model = self._model
        t = self._t
        if callable(tau):
            applied = self.saturate(self._vector(tau(t), "tau(t)"))
        else:
            tau = applied = self.saturate(self._vector(tau, "tau"))
        accel = self._rhs(tau, self._wrenches(external_wrenches), float(dt))
        try:
            if self._integrator is adaptive:
                q, qd = adaptive(accel, t, self._q, self._qd, dt, self.rtol, self.atol)
            else:
                q, qd = self._integrator(accel, t, self._q, self._qd, dt)
        except _CommandError as error:
            raise ValueError(str(error)) from None
        except (ValueError, np.linalg.LinAlgError, FloatingPointError, ZeroDivisionError) as error:
            raise SimulationError(f"{model.name}: the state became non-finite during the step at t = {t:.6f} s "
                                  f"({error}); the last finite state is kept") from error
        if not math.isfinite(q.sum() + qd.sum()):  # NaN and inf propagate through the sum
            bad = [model.joint_names[i] for i in np.flatnonzero(~(np.isfinite(q) & np.isfinite(qd)))]
            raise SimulationError(f"{model.name}: the state became non-finite at t = {t + dt:.6f} s "
                                  f"(joints {', '.join(bad)}); the last finite state is kept")
        self._q, self._qd, self._t = q, qd, t + dt
        self.applied_effort = applied if applied is not tau else applied.copy()

    def run(self, tau, dt, steps, external_wrenches=None):
        """``steps`` steps of ``dt``; returns the times, positions and velocities including the start.

        Shapes ``(steps + 1,)``, ``(steps + 1, nv)``, ``(steps + 1, nv)``.
        """
        times = np.empty(steps + 1)
        positions = np.empty((steps + 1, self._model.nv))
        velocities = np.empty_like(positions)
        times[0], positions[0], velocities[0] = self._t, self._q, self._qd
        for k in range(1, steps + 1):
            self.step(tau, dt, external_wrenches)
            times[k], positions[k], velocities[k] = self._t, self._q, self._qd
        return times, positions, velocities

    # -- validation ------------------------------------------------------------------------------

    def _vector(self, values, what):
        n = self._model.nv
        if type(values) is np.ndarray and values.dtype == np.float64 and values.shape == (n,):
            vector = values  # the common case, without a copy (the step keeps no reference to it)
        else:
            try:
                vector = np.array(values, dtype=float).reshape(-1) if np.ndim(values) <= 1 else None
            except (TypeError, ValueError):
                vector = None
            if vector is None or vector.shape != (n,):
                raise ValueError(f"{what} must have {n} values ({', '.join(self._model.joint_names)}), "
                                 f"got shape {np.shape(values)}")
        if not np.isfinite(vector).all():
            bad = [self._model.joint_names[i] for i in np.flatnonzero(~np.isfinite(vector))]
            raise ValueError(f"{what} is not finite for joints {', '.join(bad)}")
        return vector

    def _wrenches(self, wrenches):
        if not wrenches:
            return None
        checked = {}
        for link, wrench in wrenches.items():
            if link not in self._model.link_names:
                raise ValueError(f"external wrench on unknown link {link!r}")
            wrench = np.asarray(wrench, dtype=float)
            if wrench.shape != (6,) or not np.all(np.isfinite(wrench)):
                raise ValueError(f"external wrench on {link!r} must be 6 finite numbers [moment; force], "
                                 f"got {wrench!r}")
            checked[link] = wrench
        return checked
