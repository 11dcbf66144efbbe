"""Compiling the kernels ahead, by part: what ``robot-dynamics compile [PART ...]`` runs.

numba compiles a kernel at its first call and keeps it in its on-disk cache (:mod:`robot_dynamics.jit`);
later processes load it from there in a fraction of a second. A node that left the compile to its
first messages would miss its first control cycles, so ``./dev``, the demo and the launch files run
``robot-dynamics compile`` before they start nodes, and a node started without it compiles its part
at start-up, saying so (``robot_dynamics_executables``).

:func:`compile_parts` shares a cold compile among one process per core (a compile uses one core).
:data:`COLD_SECONDS` is the one statement of how long that takes; the messages and the docs quote it.
"""

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

PARTS = {
    "dynamics_node": "what the dynamics node calls: its pass per message (gravity, bias forces, mass matrix), "
                     "friction; and the gravity torques and mass matrix of the CLI's info, gravity and mass-matrix",
    "simulator": "a Simulator step (every integrator, limits, damping, friction, wrenches) and the gravity "
                 "torques with which the simulator node checks a model",
    "estimators": "the momentum observer (the dynamics node's external_torque.*, external-torques, identify's "
                  "collision thresholds) and the F/T sensor (its compensation and the simulator's reading): a node "
                  "compiles them when a setting switches them on, so that a first loop never waits for them",
    "library": "the rest of the public functions: inverse and forward dynamics with wrenches, bias forces, retime's kernel, "
               "Coriolis matrix, poses, Jacobians, energies, regressor",
}
ALL = "all"

#: seconds each part takes to compile from an empty cache, and all of them: the wall time of
#: ``NUMBA_CACHE_DIR=$(mktemp -d) robot-dynamics compile PART`` on a free two-core machine, its work shared
#: by two processes (measured 2026-11-27, docs/benchmarks.md "First start"; in one process up to 1.4 times
#: that); up to twice that on a busy machine. Loading them all from the cache takes about 1 s.
COLD_SECONDS = {"dynamics_node": 12, "simulator": 19, "estimators": 14, "library": 20, ALL: 28}


def parts_of(names):
    """The parts ``names`` mean (``all`` or none: every part), in :data:`PARTS` order; ValueError naming an unknown one."""
    unknown = [name for name in names if name not in PARTS and name != ALL]
    if unknown:
        raise ValueError(f"unknown part {unknown[0]!r} (choose from {', '.join(PARTS)}, {ALL})")
    if not names or ALL in names:
        return tuple(PARTS)
    return tuple(part for part in PARTS if part in names)


def cold_time(names):
    """How long compiling ``names`` from an empty cache takes, as words (:data:`COLD_SECONDS`)."""
    parts = parts_of(names)
    largest = COLD_SECONDS[ALL] if parts == tuple(PARTS) else max(COLD_SECONDS[part] for part in parts)
    at_most = min(COLD_SECONDS[ALL], sum(COLD_SECONDS[part] for part in parts))
    seconds = f"{largest}" if at_most == largest else f"{largest}-{at_most}"  # (parts share kernels)
    return f"about {seconds} s on a free two-core machine, up to twice that on a busy one"


#: the most worker processes a compile starts: the longest call (the simulator's step, 10-16 s) bounds
#: its time from about two on, and each worker holds numba and LLVM in memory (about 300 MB)
MAX_WORKERS = 4


#: the environment variable that sets how many worker processes a compile may start (1: none)
WORKERS_VARIABLE = "ROBOT_DYNAMICS_COMPILE_WORKERS"


def default_workers():
    """How many worker processes a compile starts: :data:`WORKERS_VARIABLE` if set (a whole number >= 1;
    another value is warned about and ignored), else one per core this process may use, at most
    :data:`MAX_WORKERS`."""
    given = os.environ.get(WORKERS_VARIABLE, "").strip()
    if given:
        if given.isdigit() and int(given) >= 1:
            return int(given)
        import warnings

        warnings.warn(f"{WORKERS_VARIABLE}={given!r} ignored: give a whole number of processes, at least 1", stacklevel=3)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(cores, MAX_WORKERS)


def compile_parts(names=(), on_compiling=None, workers=None):
    """Call the kernels of the parts ``names`` (:func:`parts_of`) once on the two-link example arm,
    which compiles those not in numba's cache yet (the kernels take the same argument types for every
    robot: what compiles here serves any model). ``on_compiling()`` is called once, as soon as a kernel
    turns out not to be in the cache. Returns how many kernel signatures were compiled (0: all loaded).

    From the first call that compiles on, the calls left are shared among ``workers`` processes (default:
    :func:`default_workers`; 1: none), each taking the next,
    longest first, when it is done: a compile uses one core. Two workers may compile and save the same
    kernel: the same version, since a cached kernel has one (:func:`robot_dynamics.jit.uncached`). This
    process then makes every call once more, which loads them from the cache (and compiles the calls of
    a worker that failed).

    >>> compile_parts(["dynamics_node"])
    0
    """
    from . import jit

    parts = parts_of(names)
    jobs = _jobs(parts)
    before = jit.compiled_count()
    for done, job in enumerate(jobs, start=1):
        job()
        if jit.compiled_count() > before:
            break
    else:
        return 0
    if on_compiling is not None:
        on_compiling()
    if workers is None:
        workers = default_workers()
    in_workers = 0
    if jit.cache_directory() is not None:  # (without a cache, what a worker compiles is lost with it)
        in_workers = _compile_in_workers(parts, list(range(done, len(jobs))), workers)
    for job in jobs[done:]:
        job()
    return jit.compiled_count() - before + in_workers


def _compile_in_workers(parts, calls, workers):
    """Make the calls ``calls`` (indices into :func:`_jobs`) in ``workers`` processes of :func:`worker` (none
    for fewer than two calls or workers), the next call to the first free one; returns how many signatures
    they compiled. A worker that fails (its traceback on stderr) leaves its calls to this process."""
    import selectors
    import subprocess

    from .child_processes import die_with_parent

    workers = min(workers, len(calls))
    if workers < 2:
        return 0
    pending, compiled = list(calls), 0
    package_parent = str(Path(__file__).resolve().parents[1])  # (this package, not one in the current directory)
    command = [sys.executable, "-c", f"import sys; sys.path[0] = {package_parent!r}; "
               "from robot_dynamics.compiling import worker; worker()", *parts]
    started = []
    try:
        with selectors.DefaultSelector() as selector:
            for _ in range(workers):
                process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                           preexec_fn=_ignoring_interrupts(die_with_parent()))
                started.append(process)
                _send(process, pending.pop(0))
                selector.register(process.stdout, selectors.EVENT_READ, process)
            while selector.get_map():
                for key, _ in selector.select():
                    reply = key.fileobj.readline()
                    if reply.strip().isdigit():
                        compiled += int(reply)
                        if pending:
                            _send(key.data, pending.pop(0))
                            continue
                    selector.unregister(key.fileobj)  # done, or ended
    except BaseException:
        for process in started:
            process.kill()
        raise
    finally:
        for process in started:
            with contextlib.suppress(BrokenPipeError):  # (a worker that ended, or was killed above)
                process.stdin.close()  # (a worker ends at the end of its input)
            process.wait()
            process.stdout.close()
    return compiled


def _send(process, call):
    """Ask the worker ``process`` to make call ``call`` (an index into :func:`_jobs`)."""
    process.stdin.write(f"{call}\n")
    process.stdin.flush()


def _ignoring_interrupts(preexec):
    """``preexec`` (or nothing), then SIGINT ignored, which stays so in the new program: a terminal's Ctrl-C
    reaches the whole process group, and only the parent answers it (it ends its workers)."""
    def in_child():
        if preexec is not None:
            preexec()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return in_child


def worker():
    """A compile worker (:func:`compile_parts`), its parts on its command line: makes the call of each index
    read from stdin and answers with how many signatures it compiled, until its input ends."""
    from . import jit

    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # (anything else printed goes to stderr)
    jobs = _jobs(parts_of(sys.argv[1:]))
    jobs[0]()  # the example arm (its kernels are in the cache: the parent compiled them)
    for line in sys.stdin:
        before = jit.compiled_count()
        jobs[int(line)]()
        print(jit.compiled_count() - before, file=answers, flush=True)


def _jobs(parts):
    """The calls that compile ``parts``, each once: the example arm's load first (every other call needs
    it), then the longest first, as they took from an empty cache (10, 7, 3-4 s ...), so that workers
    sharing them end together."""
    from .description import examples
    from .rigid_body.friction import DEFAULT_FRICTION_VELOCITY, friction_torques
    from .rigid_body.data import Data, compute_terms
    from .rigid_body.dynamics import bias_forces, coriolis_matrix, forward_dynamics, gravity_torques, inverse_dynamics, mass_matrix
    from .rigid_body.kinematics import frame_pose, jacobian, kinetic_energy, potential_energy
    from .control.observer import MomentumObserver
    from .rigid_body.regression import regressor
    from .simulation.simulator import Simulator
    from .rigid_body.task_space import frame_acceleration
    from .description.urdf import load_urdf
    from .rigid_body.sensor import ForceTorqueSensor, record_state
    from .rigid_body.wrenches import wrench_in_frame, wrench_in_world

    arm = []  # the example arm, once loaded (load_urdf's check calls the mass matrix)
    q, qd, wrench = np.array([0.3, -0.2]), np.array([0.1, 0.2]), {"tip": np.ones(6)}

    def load():
        arm.append(load_urdf(examples.TWO_LINK_URDF))

    def step():
        # One step compiles every integrator: the step kernel takes the method as an argument (the adaptive
        # integrator's right-hand side is the same kernel; scipy, 0.3-0.6 s to import, is left to its first
        # step). The shoulder starts beyond its limit (3.14 rad): the limit response too.
        simulator = Simulator(arm[0], [3.2, 0.0], qd, apply_damping=True, apply_friction=True)
        simulator.step(np.zeros(2), 1e-3, external_wrenches=wrench)

    def observe():
        observer = MomentumObserver(arm[0], 50.0, frame="tip", friction=True)
        for t in (0.0, 1e-3):
            observer.update(t, q, qd, qd)
        observer.wrench_in(arm[0].link_names[0])  # external_wrench_estimate's message (wrenches.wrench_seen_in)

    def wrench_messages():  # the simulator's external_wrench and contact_wrenches (robot_dynamics.rigid_body.wrenches)
        wrench_in_frame(wrench_in_world(np.ones(6), np.eye(4)), np.zeros(3), np.eye(4))

    def ft_sensor():  # the F/T sensor's compensation (dynamics node) and truth (simulator): rigid_body.sensor
        sensor = ForceTorqueSensor(arm[0], "tip")
        history, stamps, received = np.zeros((2, 3, 2)), np.zeros((2, 2)), np.zeros(2, dtype=np.int64)
        last = record_state(history, stamps, -1, q, qd, 0.0, 0.0, 0.1)
        record_state(history, stamps, last, q, qd, 1e-3, 0.0, 0.1)
        sensor.compensate((0.0,) * 6, np.ones(8), np.zeros((3, 6)), np.zeros((2, 6)), 0, history, stamps, 1e-3,
                          received, received, 0)
        sensor.reading(q, qd, qd)

    def reachability():  # retime's kernels (robot_dynamics.trajectories.retime), on a two-stage grid
        from .trajectories.retime_kernels import averaged, cubic_values, reachability

        reachability(np.ones((1, 2)), np.zeros((1, 2)), np.ones((1, 2)), np.ones(2), np.ones(1))
        cubic_values(np.arange(2.0), np.ones((4, 1, 1)), np.ones(1))
        averaged(np.arange(2.0), np.arange(2.0), np.ones(2), np.zeros(1), np.arange(2.0), np.ones(1), 1e-3)

    loop = {"dynamics_node", "simulator"}  # the dynamics node's pass per message also drives the simulator's joints
    longest_first = [  # (the parts that call it, the call)
        ({"simulator"}, step),
        (loop, lambda: compute_terms(Data(arm[0]), q, qd)),
        ({"library"}, lambda: coriolis_matrix(arm[0], q, qd)),
        ({"library"}, reachability),
        ({"estimators"}, ft_sensor),
        (loop, lambda: gravity_torques(arm[0], q)),  # (the CLI's gravity and info; the simulator's model check)
        ({"library"}, lambda: kinetic_energy(arm[0], q, qd)),
        ({"library"}, lambda: forward_dynamics(arm[0], q, qd, qd, external_wrenches=wrench)),
        ({"estimators"}, observe),
        ({"library"}, lambda: inverse_dynamics(arm[0], q, qd, qd, external_wrenches=wrench)),
        ({"library"}, lambda: regressor(arm[0], q, qd, qd)),
        ({"library"}, lambda: frame_acceleration(arm[0], q, qd, "tip")),
        *(({"library"}, lambda reference=reference: jacobian(arm[0], q, "tip", reference))
          for reference in ("world", "local")),
        ({"simulator"}, wrench_messages),
        ({"library"}, lambda: bias_forces(arm[0], q, qd)),
        ({"library"}, lambda: frame_pose(arm[0], q, "tip")),
        ({"dynamics_node"}, lambda: friction_torques(arm[0].viscous_damping, arm[0].friction,
                                                    DEFAULT_FRICTION_VELOCITY, qd)),
        ({"library"}, lambda: potential_energy(arm[0], q)),
        ({"library"}, lambda: mass_matrix(arm[0], q)),
    ]
    return [load] + [call for callers, call in longest_first if callers & set(parts)]


def compile_and_report(names, name, say):
    """:func:`compile_parts` for a program about to use the kernels of ``names``; ``say(line)`` is told
    when they compile (with how long that usually takes), and then how long it took. ``name`` is what
    the program calls them. Returns the seconds it took."""
    started = time.monotonic()
    compiled = compile_parts(names, on_compiling=lambda: say(
        f"compiling {name} (not in numba's cache yet: {cold_time(names)}; later starts load them in about 1 s) ..."))
    took = time.monotonic() - started
    if compiled:
        say(f"{name} ready in {took:.1f} s ({compiled} compiled)")
    return took


def remove_stale_directories():
    """Remove the kernel directories of other sources than these (:mod:`robot_dynamics.jit`); returns them."""
    import shutil

    from . import jit

    current = jit.cache_directory()
    if current is None:
        return []
    stale = [path for path in current.parent.glob(f"{jit.PREFIX}*") if path != current and path.is_dir()]
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
    return stale
