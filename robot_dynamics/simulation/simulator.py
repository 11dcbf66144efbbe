"""Time integration of the forward dynamics: the physics behind ``simulator_node``.

The state ``x = (q, qd)`` obeys the equations of motion written as a first-order system
(Lynch & Park §9.5, eq. 9.89)::

    dq/dt  = qd
    dqd/dt = a(t, q, qd) = M(q)^-1 (tau_joint - h(q, qd) + sum_links J_link(q)^T F_link)

where ``a`` is the core's forward dynamics (Newton-Euler for ``h``, CRBA for ``M``, a Cholesky
solve: :func:`robot_dynamics.forward_dynamics`, the same compiled kernel) and the generalized
force on the joints is::

    tau_joint = sat(tau_cmd(t))                 actuator torque, clipped to +-effort_limits
              - B qd                            viscous damping, B = URDF <dynamics damping>
              - F_c tanh(qd / eps)              smoothed Coulomb friction, F_c = URDF <dynamics friction>
              + tau_limit(q, qd)                stiff damped one-sided limit beyond a position limit

The damping and friction terms are :func:`robot_dynamics.rigid_body.friction.friction_torque`, the law the
dynamics node compensates.  Damping, friction and the limits are each switched on or off (``apply_damping``,
``apply_friction``, ``enforce_position_limits``, ``enforce_effort_limits``).  The *applied
effort* reported by :attr:`Simulator.applied_effort` (and by the node in ``joint_states``) is
``sat(tau_cmd)``: what the actuators deliver; damping, friction and limit torques are the
environment's.  A command is a ``(nv,)`` array held constant over a step (zero-order hold, like a
digital controller) or a callable ``tau(t)`` evaluated at the instants the integrator's stages
need (``t``; rk4 also ``t + dt/2`` and ``t + dt``).  An effort limit of 0 in the URDF is read as
"not given" (:func:`robot_dynamics.rigid_body.model.given_limits`), not as a locked joint.

Integrators (one implementation each, ``INTEGRATORS``), step ``dt``.  The three fixed-step ones
are compiled whole (numba): a step is one call, stages, forces and checks included, so an rk4
step costs little more than its four evaluations of the forward dynamics.

``euler``
    the seed's explicit Euler (Lynch & Park §9.5, "Euler integration algorithm for forward
    dynamics"): ``q+ = q + dt qd``, ``qd+ = qd + dt a(t, q, qd)``.  First order (global error
    O(dt)); it adds energy to every undamped oscillation (amplification sqrt(1 + (w dt)^2) per
    step for a mode of frequency w), so it drifts visibly.
``semi_implicit_euler``
    semi-implicit (symplectic) Euler: ``qd+ = qd + dt a(t, q, qd)``, ``q+ = q + dt qd+``.  First
    order.  It is symplectic, with bounded energy error, only when the mass matrix is constant
    (a pendulum, a Cartesian gantry); for an arm, whose ``M(q)`` varies, it has no such
    guarantee (free-falling Panda, 10 s at 1 kHz: an energy error larger than explicit Euler's).
    Its advantage is stability: it keeps stiff contacts (the position limits) better damped.
``rk4``
    the classical fourth-order Runge-Kutta method (global error O(dt^4), four evaluations of the
    forward dynamics per step).  The default.
``adaptive``
    :func:`scipy.integrate.solve_ivp` with the Dormand-Prince 8(5,3) method (``DOP853``) over each
    step, error-controlled to ``rtol``/``atol`` (defaults 1e-8, 1e-10).  Accurate but slow (a
    Python-level solver call per step); for reference runs, not for real time.

Position limits.  A joint beyond a limit is held by a one-sided, critically damped spring-damper
tied to the step (``w dt = LIMIT_OMEGA_STEP``): see :mod:`robot_dynamics.simulation.equations_of_motion`.

Elastic joints (``joint_stiffness=K``; Spong Ex. 6.2 for every joint, :mod:`robot_dynamics.rigid_body.elastic`).
The state grows by the motor angles ``theta`` reflected to the link side and their rates; the
links obey the equation above with ``tau_joint`` = the spring torque ``K (theta - q)`` (minus the
links' damping and friction, plus the limits) and the rigid-body terms of the links alone (no
rotor inertia), and the motors ``J theta_dd = sat(tau_cmd) - B_m theta_d - K (theta - q)`` with
``J = model.armature`` (positive on every joint) and ``B_m = model.motor_damping`` (with
``apply_damping``).  The command is the motor torque.  With rigid joints the motor damping
adds to the joints' (``B = B_l + r^2 B_m``, Spong Ex. 6.1).  Every integrator integrates both.

Viscous damping and the friction's smoothing are explicit too: the linearized friction has a
damping ``F_c / eps``; where ``dt F_c / (eps m) > 2`` (``m`` the joint's apparent inertia) the
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

import numpy as np

from ..rigid_body import kinematics as _kinematics
from .contact import ContactModel, contact_wrenches_at
from ..rigid_body.elastic import elastic_energy, stiffness_vector
from ..rigid_body.friction import DEFAULT_FRICTION_VELOCITY
from .equations_of_motion import LIMIT_OMEGA_STEP, Physics
from .integrators import BAD_COMMAND, DERIVATIVE, EULER, NON_FINITE, RK4, SEMI_IMPLICIT_EULER, step as compiled_step
from ..rigid_body.model import given_limits
from ..rigid_body.wrenches import wrench_arrays

ADAPTIVE_EVALUATIONS = 20_000
"""Most right-hand-side evaluations the adaptive integrator may spend on one step (a regular 1 ms
step of Panda-7 takes 12-40): beyond, an absurd state (joint speeds of 1e200) would keep
``solve_ivp`` shrinking its step for minutes, freezing the node."""

#: integrator name -> (code of the compiled step, the instants of the step, as fractions of ``dt``,
#: at which its stages evaluate the command); the adaptive integrator runs in scipy instead.
_COMPILED = {
    "euler": (EULER, (0.0,)),
    "semi_implicit_euler": (SEMI_IMPLICIT_EULER, (0.0,)),
    "rk4": (RK4, (0.0, 0.5, 1.0)),
}
INTEGRATORS = (*_COMPILED, "adaptive")
"""The integrator names, see the module docstring."""


class SimulationError(RuntimeError):
    """The state became non-finite (or the adaptive integrator failed); the last finite state is kept."""


class _CommandError(ValueError):
    """A callable command returned a bad value inside the adaptive integrator (re-raised as ValueError)."""


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
                 friction_velocity=DEFAULT_FRICTION_VELOCITY, rtol=1e-8, atol=1e-10, t=0.0, joint_stiffness=None,
                 contact=None):
        self._stiffness = None if joint_stiffness is None else stiffness_vector(model, joint_stiffness)
        self.model = model
        self.contact = contact
        self.integrator = integrator
        self.apply_damping = bool(apply_damping)
        self.apply_friction = bool(apply_friction)
        self.enforce_effort_limits = bool(enforce_effort_limits)
        self.enforce_position_limits = bool(enforce_position_limits)
        self.friction_velocity = friction_velocity
        self.rtol, self.atol = float(rtol), float(atol)
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
        if self._stiffness is not None:
            stiffness_vector(model, self._stiffness)  # a new model must keep its rotors
        self._model = model
        self._effort_limit = given_limits(model.effort_limits)
        if getattr(self, "_contact", None) is not None:
            self._contact_array = self._contact.array(model)
        self._physics_cache = self._wrench_cache = (None, None)

    @property
    def contact(self):
        """The :class:`robot_dynamics.simulation.contact.ContactModel` the links touch (an empty one: no contact)."""
        return self._contact

    @contact.setter
    def contact(self, contact):
        contact = ContactModel() if contact is None else contact
        self._contact_array = contact.array(self._model)  # checks the links
        self._contact = contact
        self._physics_cache = self._wrench_cache = (None, None)

    def contact_wrenches(self):
        """``{link: [moment; force]}``: the true contact wrench on each touching link at the current state,
        in the ``external_wrenches`` convention (world-aligned axes, moment about the link origin)."""
        if not self._contact.enabled:
            return {}
        topology, kernel_bodies, _ = self._model._kernel_arrays
        nb = topology.shape[0]
        n = self._model.nv
        wrenches, _ = contact_wrenches_at(topology, kernel_bodies, self._q.reshape(1, n), self._qd.reshape(1, n),
                                          self._contact_array, np.empty((nb, 12)), np.empty((nb, 12)))
        out = {}
        for (link, _, _), wrench in zip(self._contact.spheres, wrenches):
            if wrench.any():
                out[link] = out[link] + wrench if link in out else wrench
        return out

    @property
    def joint_stiffness(self):
        """``K`` of the elastic joints, N m/rad or N/m (a copy), or None: rigid joints."""
        return None if self._stiffness is None else self._stiffness.copy()

    @property
    def friction_velocity(self):
        """``eps`` of the smoothed Coulomb friction ``F_c tanh(qd / eps)``, positive."""
        return self._friction_velocity

    @friction_velocity.setter
    def friction_velocity(self, eps):
        if not (isinstance(eps, (int, float, np.floating)) and math.isfinite(eps) and eps > 0):
            raise ValueError(f"friction_velocity must be a positive number, got {eps!r}")
        self._friction_velocity = float(eps)

    @property
    def integrator(self):
        """Name of the integrator, one of ``INTEGRATORS``."""
        return self._integrator_name

    @integrator.setter
    def integrator(self, name):
        if name not in INTEGRATORS:
            raise ValueError(f"unknown integrator {name!r}; choose one of {', '.join(INTEGRATORS)}")
        self._integrator_name = name

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
    def motor_q(self):
        """Motor positions reflected to the link side, ``theta`` (a copy); the joints' own with rigid joints."""
        return (self._q if self._stiffness is None else self._motor_q).copy()

    @property
    def motor_qd(self):
        """Motor velocities reflected to the link side (a copy); the joints' own with rigid joints."""
        return (self._qd if self._stiffness is None else self._motor_qd).copy()

    @property
    def t(self):
        """Simulated time, s."""
        return self._t

    def reset(self, q=None, qd=None, t=None, motor_q=None, motor_qd=None):
        """Set the state (zeros where ``None``); the time is kept unless ``t`` is given.

        Elastic joints: the motors default to the links (``motor_q = q``, ``motor_qd = qd``: the
        springs relaxed); with rigid joints ``motor_q``/``motor_qd`` must be None.
        """
        n = self._model.nv
        q = self._vector(np.zeros(n) if q is None else q, "q")
        qd = self._vector(np.zeros(n) if qd is None else qd, "qd")
        if self._stiffness is None and (motor_q is not None or motor_qd is not None):
            raise ValueError("motor_q/motor_qd need elastic joints (joint_stiffness)")
        motor_q = self._vector(q if motor_q is None else motor_q, "motor_q")
        motor_qd = self._vector(qd if motor_qd is None else motor_qd, "motor_qd")
        if t is not None:
            if not math.isfinite(t):
                raise ValueError(f"t must be finite, got {t}")
            self._t = float(t)
        self._q, self._qd = q.copy(), qd.copy()
        self._motor_q, self._motor_qd = motor_q.copy(), motor_qd.copy()
        self.applied_effort = np.zeros(n)

    def energy(self):
        """Total mechanical energy of the current state, J (conserved without torques and losses): the links'
        ``T + V``, and with elastic joints the motors' ``1/2 theta_d^T J theta_d`` and the springs'
        ``1/2 (theta - q)^T K (theta - q)`` (:func:`robot_dynamics.elastic_energy`)."""
        if self._stiffness is not None:
            return float(elastic_energy(self._model, self._q, self._qd, self._motor_q, self._motor_qd, self._stiffness))
        return float(_kinematics.kinetic_energy(self._model, self._q, self._qd)
                     + _kinematics.potential_energy(self._model, self._q))

    def _state(self):
        """``(x, xd)`` integrated: ``(q, qd)``, or ``((q, theta), (qd, theta_d))`` with elastic joints."""
        if self._stiffness is None:
            return self._q, self._qd
        return np.concatenate((self._q, self._motor_q)), np.concatenate((self._qd, self._motor_qd))

    # -- dynamics --------------------------------------------------------------------------------

    def acceleration(self, q, qd, tau, external_wrenches=None, dt=1e-3, motor_q=None, motor_qd=None):
        """``a(q, qd)``: joint accelerations under the command ``tau`` (saturated here), all forces included.

        ``dt`` is the step that sets the position limits' stiffness.  With elastic joints the motors
        are at ``motor_q``/``motor_qd`` (default: at the links) and the result is ``(qdd, motor_qdd)``.
        """
        physics, effort_limit = self._physics(external_wrenches, dt)
        x, xd = self._vector(q, "q"), self._vector(qd, "qd")
        if self._stiffness is not None:
            x = np.concatenate((x, self._vector(x if motor_q is None else motor_q, "motor_q")))
            xd = np.concatenate((xd, self._vector(xd if motor_qd is None else motor_qd, "motor_qd")))
        rates, status = self._derivative(physics, effort_limit, x, xd, self._vector(tau, "tau"))
        acceleration = rates[x.shape[0]:]
        if status == NON_FINITE:
            raise ValueError(f"{self._model.name}: the acceleration is not finite at this state")
        if status >= 0:
            raise ValueError(self._singular(status))
        if self._stiffness is not None:
            return acceleration[:self._model.nv], acceleration[self._model.nv:]
        return acceleration

    def _physics(self, wrenches, dt):
        """``(physics, effort_limit)`` of a step of ``dt`` s under ``wrenches``: the kernels' :class:`Physics`
        (a plain tuple) and the saturation (+inf where none).

        Cached per setting, and per wrenches' contents: the node passes the same wrenches step
        after step, and building their arrays costs more than the step itself.
        """
        key = (self.enforce_effort_limits, self.apply_damping, self.apply_friction, self.enforce_position_limits,
               self.friction_velocity, dt)
        if self._physics_cache[0] != key:
            model, n, elastic = self._model, self._model.nv, self._stiffness is not None
            everywhere = np.full(n, np.inf)
            lower, upper = np.asarray(model.position_limits, dtype=float).T
            # Rigid joints: a motor turns with its joint, its damping adds to the joint's (Spong Ex. 6.1).
            damping = model.damping if elastic else model.viscous_damping
            physics = Physics(
                *model._kernel_arrays,
                armature=np.zeros(n) if elastic else np.array(model.armature),  # elastic: the rotors are the motors
                damping=np.array(damping, dtype=float) if self.apply_damping else np.zeros(n),
                friction=np.array(model.friction, dtype=float) if self.apply_friction else np.zeros(n),
                friction_velocity=self.friction_velocity,
                limits=np.array([lower, upper]) if self.enforce_position_limits else np.array([-everywhere, everywhere]),
                omega=LIMIT_OMEGA_STEP / dt,
                wrench_bodies=np.zeros(0, dtype=np.int64), wrench_points=np.zeros((0, 3)),
                wrench_values=np.zeros((1, 0, 6)),
                motors=np.array([self._stiffness, model.armature, model.motor_damping if self.apply_damping else np.zeros(n)])
                if elastic else np.zeros((3, 0)),
                contact=self._contact_array,
            )
            effort_limit = self._effort_limit.copy() if self.enforce_effort_limits else everywhere
            self._physics_cache = (key, (tuple(physics), effort_limit))
            self._wrench_cache = (None, None)
        physics, effort_limit = self._physics_cache[1]
        if not wrenches:
            return physics, effort_limit
        contents = tuple((link, np.asarray(wrench, dtype=float).tobytes()) for link, wrench in wrenches.items())
        if self._wrench_cache[0] != contents:
            bodies, points, values = wrench_arrays(self._model, wrenches, 1)  # checks them
            with_wrenches = Physics(*physics)._replace(wrench_bodies=bodies, wrench_points=points, wrench_values=values)
            self._wrench_cache = (contents, tuple(with_wrenches))
        return self._wrench_cache[1], effort_limit

    def _derivative(self, physics, effort_limit, x, xd, command):
        """``(rates, status)``: ``rates = (xd, a)``, the derivative of the state ``(x, xd)`` under ``command``
        (saturated here), a new array, by the compiled step's ``DERIVATIVE``; its status is ``OK``,
        ``NON_FINITE`` or the singular joint."""
        out = np.empty((3, x.shape[0]))
        status = compiled_step(DERIVATIVE, physics, effort_limit, command.reshape(1, -1), x, xd, 0.0, out)
        return out[:2].reshape(-1), status  # out[0] = xd and out[1] = a, contiguous

    def _singular(self, joint):
        return (f"the mass matrix is singular at joint {self._model.joint_names[joint]!r}: it moves no mass or "
                "inertia (add an <inertial> to the links it moves)")

    # -- stepping --------------------------------------------------------------------------------

    def step(self, tau, dt, external_wrenches=None):
        """Advance the state by ``dt`` s under the command ``tau`` ((nv,) array or callable ``tau(t)``).

        A callable is evaluated at the instants the integrator's stages need (rk4: ``t``,
        ``t + dt/2``, ``t + dt``); an array is held over the step.  The command is saturated at the
        effort limits (if enabled) and the result kept in :attr:`applied_effort`.
        ``external_wrenches``: ``{link: [moment; force]}`` applied by the environment to the robot,
        world-aligned axes at the link origin, held over the step.
        """
        if not (isinstance(dt, (int, float, np.floating)) and math.isfinite(dt) and dt > 0):
            raise ValueError(f"dt must be a positive finite number, got {dt!r}")
        model, t, dt = self._model, self._t, float(dt)
        physics, effort_limit = self._physics(external_wrenches, dt)
        if self._integrator_name == "adaptive":
            q, qd, applied = self._adaptive(physics, effort_limit, tau, t, dt)
        else:
            q, qd, applied = self._compiled(physics, effort_limit, tau, t, dt)
        if self._stiffness is not None:
            n = model.nv
            q, qd, self._motor_q, self._motor_qd = q[:n], qd[:n], q[n:], qd[n:]
        self._q, self._qd, self.applied_effort, self._t = q, qd, applied, t + dt

    def _compiled(self, physics, effort_limit, tau, t, dt):
        """``(q+, qd+, applied command)`` by the compiled step of the integrator."""
        model = self._model
        method, instants = _COMPILED[self._integrator_name]
        if callable(tau):
            commands = np.array([self._vector(tau(t + fraction * dt), "tau(t)") for fraction in instants])
        else:  # checked for finiteness in the compiled step, which costs nothing there
            commands = self._vector(tau, "tau", finite=False).reshape(1, model.nv)
        x, xd = (self._q, self._qd) if self._stiffness is None else self._state()
        out = np.empty((3, x.shape[0]))
        status = compiled_step(method, physics, effort_limit, commands, x, xd, dt, out)
        if status == BAD_COMMAND:
            self._vector(commands[0], "tau")  # raises, naming the joints
            raise ValueError("tau is not finite")
        if status == NON_FINITE:
            raise SimulationError(f"{model.name}: the state became non-finite at t = {t + dt:.6f} s; "
                                  "the last finite state is kept")
        if status >= 0:
            raise SimulationError(f"{model.name}: {self._singular(status)} at t = {t:.6f} s; "
                                  "the last finite state is kept")
        return out[0], out[1], out[2] if self._stiffness is None else out[2, :model.nv]

    def _adaptive(self, physics, effort_limit, tau, t, dt):
        """``(q+, qd+, applied command)`` by the error-controlled Dormand-Prince 8(5,3) method
        (``scipy.integrate.solve_ivp``, ``DOP853``) over the step."""
        from scipy.integrate import solve_ivp  # here: 0.4-0.6 s of import that the dynamics node's start needs not pay

        name = self._model.name
        x0, xd0 = self._state()
        n = x0.shape[0]
        evaluations = 0

        def command(time):
            return self._vector(tau(time), "tau(t)") if callable(tau) else held

        def unresolved(state):
            return SimulationError(f"{name}: the adaptive integrator could not resolve the step at t = {t:.6f} s "
                                   f"({evaluations} evaluations, {state}); the last finite state is kept")

        def f(time, x):
            nonlocal evaluations
            evaluations += 1
            finite = np.isfinite(x).all()
            if evaluations > ADAPTIVE_EVALUATIONS or not finite:
                raise unresolved(f"state {'finite' if finite else 'non-finite'}")
            try:
                value = command(time)
            except ValueError as error:
                raise _CommandError(str(error)) from None
            rates, status = self._derivative(physics, effort_limit, x[:n], x[n:], value)
            if status == NON_FINITE:
                raise unresolved("acceleration non-finite")
            if status >= 0:
                raise SimulationError(f"{name}: {self._singular(status)} at t = {time:.6f} s; "
                                      "the last finite state is kept")
            return rates

        held = None if callable(tau) else self._vector(tau, "tau")
        applied = np.clip(command(t), -effort_limit, effort_limit)
        try:
            with np.errstate(all="ignore"):
                solution = solve_ivp(f, (t, t + dt), np.concatenate((x0, xd0)), method="DOP853",
                                     rtol=self.rtol, atol=self.atol)
        except _CommandError as error:
            raise ValueError(str(error)) from None
        x = solution.y[:, -1]
        if not solution.success or not np.isfinite(x).all():
            raise SimulationError(f"{name}: adaptive integrator failed at t = {t:.6f} s ({solution.message}); "
                                  "the state became non-finite or the step could not be resolved; "
                                  "the last finite state is kept")
        return x[:n].copy(), x[n:].copy(), applied

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

    def _vector(self, values, what, finite=True):
        """``values`` as a C-contiguous float64 ``(nv,)`` array (no copy if it is one already);
        ValueError on a wrong length and, if ``finite``, on a non-finite value, naming the joints."""
        n = self._model.nv
        if type(values) is np.ndarray and values.dtype == np.float64 and values.shape == (n,) and values.flags.c_contiguous:
            vector = values  # the common case, without a copy (the step keeps no reference to it)
        else:
            try:
                vector = np.array(values, dtype=float).reshape(-1) if np.ndim(values) <= 1 else None
            except (TypeError, ValueError):
                vector = None
            if vector is None or vector.shape != (n,):
                raise ValueError(f"{what} must have {n} values ({', '.join(self._model.joint_names)}), "
                                 f"got shape {np.shape(values)}")
        if finite and not np.isfinite(vector).all():
            bad = [self._model.joint_names[i] for i in np.flatnonzero(~np.isfinite(vector))]
            raise ValueError(f"{what} is not finite for joints {', '.join(bad)}")
        return vector
