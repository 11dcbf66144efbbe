"""Compile the kernels before a control loop starts, not inside its first cycles.

numba compiles a kernel on its first call and keeps it in its on-disk cache: the first start after
installing compiles (wall time on 2 free cores: all parts about 13 s, the simulator's part about 9 s,
the dynamics node's about 6 s; up to twice that on a busy machine; ``robot-dynamics bench core`` measures
them), later starts load the cache in about 1 s.  A node that left this to its first messages would miss its first
control cycles (and a Ctrl-C arriving meanwhile would wait for the compiler), so the nodes call
:func:`warm_up` once at start-up, for the parts they use.

On a cold cache two processes compile at once, each different kernels: this one and a second one it
starts (:func:`_aside`), which writes its kernels to the cache for this one to load, namely the
simulator step's forward dynamics (``kernels.forward_state``, its largest callee) or else the mass
matrix, then the gravity torques (a Newton-Euler of their own, compiled knowing that ``qd`` and
``qdd`` are zero), then the library's Coriolis matrix and regressor.  This one meanwhile compiles
what does not call them, then the rest.  On 2 cores
that takes a quarter to a third less time than one process.  Should the second process fail, this one
compiles its kernels itself.  Processes that start on a cold cache together (two nodes started by hand)
take turns (:func:`~robot_dynamics.jit_cache.compiling_alone`): the next loads what the first compiled
and compiles only the rest, instead of all of them compiling the same kernels on the same cores.
"""

import os
import select
import subprocess
import sys
import threading
import time
from contextlib import nullcontext

import numpy as np
from robot_dynamics_executables import exit_quietly_on_ctrl_c

from . import examples
from .control import friction_torques
from .dynamics import bias_forces, coriolis_matrix, forward_dynamics, gravity_torques, inverse_dynamics, mass_matrix
from .integrators import compile_forward_state, compile_step_callees
from .jit_cache import cache_directory, compiling_alone, has_compiled_stamp, write_compiled_stamp
from .kinematics import frame_pose, jacobian, kinetic_energy, potential_energy
from .regressor import regressor
from .observer import MomentumObserver
from .simulation import Simulator
from .urdf import _model

PARTS = ("dynamics_node", "library", "simulator")
"""What :func:`warm_up` can compile: ``dynamics_node`` (gravity, bias forces, mass matrix: what the
dynamics node calls), ``library`` (the rest of the public functions: inverse and forward dynamics with
wrenches, Coriolis matrix, poses, Jacobians, energies, regressor), ``simulator`` (a :class:`Simulator`
step, whose kernel serves every integrator, and the gravity torques with which it checks a new model:
what the simulator node calls; :meth:`Simulator.energy` is in ``library``)."""


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
    aside = _aside(set(parts))
    cold = not compiled(*parts) and cache_directory() is not None  # (with no cache, nothing to share)
    with compiling_alone() if cold else nullcontext():  # one cold warm-up at a time, each on both cores
        cold = cold and not compiled(*parts)  # (another process may have compiled them while this one waited)
        helper = _Helper(aside if cold else [])
        try:
            arm = _model(examples.TWO_LINK_URDF)  # load_urdf's model; its mass-matrix check is the mass_matrix job
            q, qd = np.array([0.3, -0.2]), np.array([0.1, 0.2])
            wrench = {"tip": np.ones(6)}
            if "mass_matrix" not in aside:
                _JOBS["mass_matrix"](arm)
            # first what calls none of the second process's kernels (forward_state's Newton-Euler among them)
            if "dynamics_node" in parts:
                friction_torques(arm.viscous_damping, arm.friction, 0.01, qd)  # the dynamics node's compensate_friction
                observer = MomentumObserver(arm, 50.0, frame="tip", friction=True)  # its external_torque.enabled
                for t in (0.0, 1e-3):
                    observer.update(t, q, qd, qd)
            if "library" in parts:
                frame_pose(arm, q, "tip")
                for reference in ("world", "local"):
                    jacobian(arm, q, "tip", reference)
                potential_energy(arm, q)
            if "simulator" in parts:
                compile_step_callees(arm)
            # then, as the second process's kernels reach the cache, what calls them (compiled here if it failed)
            helper.wait_for("forward_state")
            if "dynamics_node" in parts:
                bias_forces(arm, q, qd)
            if "library" in parts:
                inverse_dynamics(arm, q, qd, qd, external_wrenches=wrench)
                forward_dynamics(arm, q, qd, qd, external_wrenches=wrench)
                kinetic_energy(arm, q, qd)  # also Simulator.energy's
            if "simulator" in parts:
                # One step compiles every integrator: the step kernel takes the method as an argument, and the
                # adaptive integrator evaluates its right-hand side with it (scipy, 0.3-0.6 s to import, is left
                # to its first step).  The shoulder starts beyond its limit (3.14 rad): the limit response too.
                sim = Simulator(arm, [3.2, 0.0], qd, apply_damping=True, apply_friction=True)
                sim.step(np.zeros(arm.nv), 1e-3, external_wrenches=wrench)
            for job in aside:  # (loaded from the cache, or compiled here if the second process failed)
                helper.wait_for(job)
                _JOBS[job](arm)
        finally:
            helper.stop()
        for part in parts:  # (under the lock: a process waiting for it then finds them compiled)
            write_compiled_stamp(part)


#: what the second process compiles, by name (:func:`_aside`): a call on the example arm.  The mass
#: matrix is what ``load_urdf``'s check calls (every node loads a model) and the dynamics node's; the
#: Coriolis matrix and the regressor are the library's largest kernels that nothing else calls.
_JOBS = {
    "mass_matrix": lambda arm: mass_matrix(arm, np.zeros(arm.nv)),
    "forward_state": compile_forward_state,
    "gravity_torques": lambda arm: gravity_torques(arm, np.zeros(arm.nv)),
    "coriolis_matrix": lambda arm: coriolis_matrix(arm, np.zeros(arm.nv), np.zeros(arm.nv)),
    "regressor": lambda arm: regressor(arm, np.zeros(arm.nv), np.zeros(arm.nv), np.zeros(arm.nv)),
}


def _aside(parts):
    """What the second process compiles for ``parts``, in this order: the step's forward dynamics
    (``library``, ``simulator``: the largest single kernel), or else the mass matrix; then the gravity
    torques (``dynamics_node``, ``simulator``); then the Coriolis matrix and the regressor (``library``)."""
    jobs = ["forward_state" if {"library", "simulator"} & parts else "mass_matrix"]
    if {"dynamics_node", "simulator"} & parts:
        jobs.append("gravity_torques")
    if "library" in parts:
        jobs += ["coriolis_matrix", "regressor"]
    return jobs


def compile_first(parts, typical, stream=None):
    """:func:`warm_up` for a command about to call the kernels of ``parts`` (all: ``()``), if numba's
    cache lacks them (the first use after installing), saying so first on ``stream`` (stderr) and then
    how long it took: the command's first calls would otherwise compile them, silent for seconds.
    ``typical``: how long that takes on two free cores, as measured (docs/benchmarks.md)."""
    if compiled(*parts) or cache_directory() is None:  # (with no cache, the command compiles what it calls)
        return
    stream = stream or sys.stderr
    print(f"compiling the dynamics kernels (first use after installing only: {typical} on two free cores, "
          "up to twice that on a busy machine; later runs load them in about 1 s) ...", file=stream, flush=True)
    started = time.monotonic()
    warm_up(*parts)
    print(f"dynamics kernels ready in {time.monotonic() - started:.1f} s", file=stream, flush=True)


def compiled(*parts):
    """Whether numba's cache already holds the kernels of ``parts`` (default: all of :data:`PARTS`),
    compiled from these sources by :func:`warm_up`; looks at one file per part, compiles nothing.

    >>> warm_up("dynamics_node"); compiled("dynamics_node")
    True
    """
    return all(has_compiled_stamp(part) for part in parts or PARTS)


HELPER_TIMEOUT = 120.0
"""Seconds :func:`warm_up` waits for the second process to compile a kernel before compiling it itself."""


class _Helper:
    """The second compiling process: ``python -m robot_dynamics.warm_up --aside JOB ...`` (:func:`_aside`).

    It prints each job's name once that job's kernels are in the cache; with no jobs, none starts.
    It inherits the environment (``NUMBA_CACHE_DIR`` included) and the process group, so a Ctrl-C
    ends it too, and it ends with this process (when its standard input closes); a failure there
    (its output is discarded) only means this process compiles those kernels itself.
    """

    def __init__(self, jobs):
        self.jobs = jobs
        self.done = set()
        self.process = None
        if not jobs:
            return
        try:
            # unbuffered: a line read leaves none behind where select cannot see it
            self.process = subprocess.Popen([sys.executable, "-m", "robot_dynamics.warm_up", "--aside", *jobs], bufsize=0,
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError:
            self.process = None

    def wait_for(self, job):
        """Return once ``job``'s kernels are in the cache, or the process has ended or run out of time;
        at once if ``job`` is not one of its jobs."""
        deadline = time.monotonic() + HELPER_TIMEOUT
        while self.process is not None and job in self.jobs and job not in self.done:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.process.stdout], [], [], remaining)[0]:
                self.stop()
                return
            line = self.process.stdout.readline()
            if not line:  # it ended
                self.stop()
                return
            self.done.add(line.decode().strip())

    def stop(self):
        """End the process if it still runs (this one was interrupted, or it took too long)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.process.stdin.close()
        self.process.stdout.close()
        self.process = None


def _compile_aside(jobs):
    """The second process: compile the kernels of ``jobs`` (:func:`_aside`, in this order), saying each done.

    Its model skips ``load_urdf``'s check, which would compile the mass matrix whether a job or not."""
    done, sys.stdout = sys.stdout, sys.stderr  # stdout says what is done; numba's debug output is discarded
    threading.Thread(target=_exit_with_the_first, daemon=True).start()
    arm = _model(examples.TWO_LINK_URDF)
    for job in jobs:
        _JOBS[job](arm)
        print(job, file=done, flush=True)


def _exit_with_the_first():
    """End this process once the first has ended, which closes our standard input (a node killed
    in its warm-up exits without stopping us).

    It reads the file descriptor itself: blocked in ``sys.stdin.buffer.read()``, this thread would
    hold the reader's lock while the process exits after its jobs, and Python aborts on that."""
    while os.read(sys.stdin.fileno(), 4096):
        pass
    os._exit(1)


if __name__ == "__main__":  # python -m robot_dynamics.warm_up [PART ...] (the launch runs robot_dynamics_executables)
    exit_quietly_on_ctrl_c()  # (from here on, after the imports)
    if sys.argv[1:2] == ["--aside"]:
        _compile_aside(sys.argv[2:])
    else:
        warm_up(*sys.argv[1:])
