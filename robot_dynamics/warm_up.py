"""Compile the kernels before a control loop starts, not inside its first cycles.

numba compiles a kernel on its first call and keeps it in its on-disk cache: the first start after
installing compiles (one core: all parts about 19 s, the simulator's part about 14 s, the dynamics node's about
9 s, measured as the compiling process's CPU time), later starts load the cache in about 1 s.  A node that left this to its first messages
would miss its first control cycles (and a Ctrl-C arriving meanwhile would wait for the compiler),
so the nodes call :func:`warm_up` once at start-up, for the parts they use.
"""

import numpy as np

from . import examples
from .control import friction_torques
from .dynamics import bias_forces, coriolis_matrix, forward_dynamics, gravity_torques, inverse_dynamics, mass_matrix
from .kinematics import frame_pose, jacobian, kinetic_energy, potential_energy
from .simulation import INTEGRATORS, Simulator
from .urdf import load_urdf

PARTS = ("dynamics_node", "library", "simulator")
"""What :func:`warm_up` can compile: ``dynamics_node`` (gravity, bias forces, mass matrix: what the
dynamics node calls), ``library`` (the rest of the public functions: inverse and forward dynamics with
wrenches, Coriolis matrix, poses, Jacobians, energies), ``simulator`` (:class:`Simulator` steps with
every integrator, and the gravity torques with which it checks a new model: what the simulator node
calls; :meth:`Simulator.energy` is in ``library``)."""


def warm_up(*parts):
    """Call the kernels of ``parts`` (default: all of :data:`PARTS`) once, on the two-link example arm.

    The kernels take the same argument types for every robot, so what is compiled here serves any
    model. Returns nothing; raises ValueError for an unknown part, and otherwise only if the
    library itself is broken.

    >>> warm_up("dynamics_node")
    """
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"unknown warm-up parts {sorted(unknown)}; choose from {', '.join(PARTS)}")
    parts = parts or PARTS
    arm = load_urdf(examples.TWO_LINK_URDF)  # compiles the mass matrix (load_urdf checks its diagonal)
    q, qd = np.array([0.3, -0.2]), np.array([0.1, 0.2])
    wrench = {"tip": np.ones(6)}
    if "dynamics_node" in parts:
        gravity_torques(arm, q)
        bias_forces(arm, q, qd)
        mass_matrix(arm, q)
        friction_torques(arm.damping, arm.friction, 0.01, qd)  # the dynamics node's compensate_friction
    if "library" in parts:
        inverse_dynamics(arm, q, qd, qd, external_wrenches=wrench)
        coriolis_matrix(arm, q, qd)
        forward_dynamics(arm, q, qd, qd, external_wrenches=wrench)
        frame_pose(arm, q, "tip")
        for reference in ("world", "local"):
            jacobian(arm, q, "tip", reference)
        kinetic_energy(arm, q, qd)  # also Simulator.energy's
        potential_energy(arm, q)
    if "simulator" in parts:
        gravity_torques(arm, q)  # the node's check of a model (nodes.safety.check_outputs_finite)
        for integrator in INTEGRATORS:
            # the shoulder starts beyond its limit (3.14 rad), so the limit response is compiled too
            sim = Simulator(arm, [3.2, 0.0], qd, integrator=integrator, apply_damping=True, apply_friction=True)
            sim.step(np.zeros(arm.nv), 1e-3, external_wrenches=wrench)
