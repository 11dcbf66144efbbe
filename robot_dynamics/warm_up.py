"""Compile the kernels before a control loop starts, not inside its first cycles.

numba compiles a kernel on its first call: all of them take ~20 s on the first run after
installing, and ~1 s when loaded from numba's on-disk cache after that. A node that left this to
its first messages would miss its first control cycles (and a Ctrl-C arriving meanwhile would
wait for the compiler), so the nodes call :func:`warm_up` once at start-up.
"""

import numpy as np

from . import examples
from .control import friction_torques
from .dynamics import bias_forces, coriolis_matrix, forward_dynamics, gravity_torques, inverse_dynamics, mass_matrix
from .kinematics import frame_pose, jacobian, kinetic_energy, potential_energy
from .simulation import INTEGRATORS, Simulator
from .urdf import load_urdf


def warm_up():
    """Call every kernel the nodes use once, on the two-link example arm.

    The kernels take the same argument types for every robot, so what is compiled here serves any
    model. Returns nothing; raises only if the library itself is broken.

    >>> warm_up()
    """
    arm = load_urdf(examples.TWO_LINK_URDF)
    q, qd = np.array([0.3, -0.2]), np.array([0.1, 0.2])
    wrench = {"tip": np.ones(6)}
    inverse_dynamics(arm, q, qd, qd, external_wrenches=wrench)
    gravity_torques(arm, q)
    bias_forces(arm, q, qd)
    mass_matrix(arm, q)
    coriolis_matrix(arm, q, qd)
    forward_dynamics(arm, q, qd, qd, external_wrenches=wrench)
    frame_pose(arm, q, "tip")
    for reference in ("world", "local"):
        jacobian(arm, q, "tip", reference)
    kinetic_energy(arm, q, qd)
    potential_energy(arm, q)
    friction_torques(arm.damping, arm.friction, 0.01, qd)  # the dynamics node's compensate_friction
    for integrator in INTEGRATORS:
        # the shoulder starts beyond its limit (3.14 rad), so the limit response is compiled too
        sim = Simulator(arm, [3.2, 0.0], qd, integrator=integrator, apply_damping=True, apply_friction=True)
        sim.step(np.zeros(arm.nv), 1e-3, external_wrenches=wrench)
        sim.energy()
