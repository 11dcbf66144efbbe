"""Compile the kernels before a control loop starts, not inside its first cycles.

numba compiles a kernel on its first call and keeps it in its on-disk cache: the first start after
installing compiles (on 2 cores, wall time: all parts 20-30 s, the simulator's part 12-25 s, the dynamics
node's 10-15 s, depending on the CPU), later starts load the cache in about 1 s.  A node that left this to its first messages
would miss its first control cycles (and a Ctrl-C arriving meanwhile would wait for the compiler),
so the nodes call :func:`warm_up` once at start-up, for the parts they use.

On a cold cache the gravity torques (a Newton-Euler of their own, compiled knowing that ``qd`` and
``qdd`` are zero) compile in a second process while this one compiles the rest: on 2 cores the
warm-up takes about 2 s less.  The two write different kernels to the cache; this process waits for
the other, then loads them (or compiles them itself, should the other have failed).
"""

import subprocess
import sys

import numpy as np

from . import examples
from .jit_cache import has_compiled_stamp, write_compiled_stamp
from .control import friction_torques
from .dynamics import (
    _mass, bias_forces, coriolis_matrix, forward_dynamics, gravity_torques, inverse_dynamics, mass_matrix,
)
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
    model. Each part done is stamped in numba's cache for :func:`compiled`. Returns nothing; raises
    ValueError for an unknown part, and otherwise only if the library itself is broken.

    >>> warm_up("dynamics_node")
    """
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"unknown warm-up parts {sorted(unknown)}; choose from {', '.join(PARTS)}")
    parts = parts or PARTS
    misses = sum(_mass.stats.cache_misses.values())
    arm = load_urdf(examples.TWO_LINK_URDF)  # compiles the mass matrix (load_urdf checks its diagonal)
    cold = sum(_mass.stats.cache_misses.values()) > misses  # it was not in numba's cache
    q, qd = np.array([0.3, -0.2]), np.array([0.1, 0.2])
    wrench = {"tip": np.ones(6)}
    gravity = {"dynamics_node", "simulator"} & set(parts)  # the simulator node checks a new model with it
    helper = _compile_gravity_aside() if gravity and cold else None
    try:
        if "dynamics_node" in parts:
            bias_forces(arm, q, qd)
            mass_matrix(arm, q)
            friction_torques(arm.viscous_damping, arm.friction, 0.01, qd)  # the dynamics node's compensate_friction
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
            for integrator in INTEGRATORS:
                # the shoulder starts beyond its limit (3.14 rad), so the limit response is compiled too
                sim = Simulator(arm, [3.2, 0.0], qd, integrator=integrator, apply_damping=True, apply_friction=True)
                sim.step(np.zeros(arm.nv), 1e-3, external_wrenches=wrench)
        if gravity:
            if helper is not None:
                try:
                    helper.wait(timeout=HELPER_TIMEOUT)
                except subprocess.TimeoutExpired:
                    helper.kill()  # (and compile them here)
                    helper.wait()
            gravity_torques(arm, q)  # from the cache the helper filled (or compiled here if it failed)
    finally:
        if helper is not None and helper.poll() is None:  # this process was interrupted: so is the helper
            helper.kill()
            helper.wait()
    for part in parts:
        write_compiled_stamp(part)


def compiled(*parts):
    """Whether numba's cache already holds the kernels of ``parts`` (default: all of :data:`PARTS`),
    compiled from these sources by :func:`warm_up`; looks at one file per part, compiles nothing.

    >>> warm_up("dynamics_node"); compiled("dynamics_node")
    True
    """
    return all(has_compiled_stamp(part) for part in parts or PARTS)


HELPER_TIMEOUT = 120.0
"""Seconds :func:`warm_up` waits for the process compiling the gravity torques before compiling them itself."""

_GRAVITY = ("import numpy as np, robot_dynamics as rd; "
            "rd.gravity_torques(rd.load_urdf(rd.examples.TWO_LINK_URDF), np.zeros(2))")


def _compile_gravity_aside():
    """Start a process that compiles the gravity torques into numba's cache, or None if it cannot start.

    It inherits the environment (``NUMBA_CACHE_DIR`` included) and the process group, so a Ctrl-C
    ends it too; its output is discarded (a failure there only means this process compiles them).
    """
    try:
        return subprocess.Popen([sys.executable, "-c", _GRAVITY], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None


if __name__ == "__main__":  # python -m robot_dynamics.warm_up [PART ...]: what simulation.launch.py runs
    warm_up(*sys.argv[1:])
