"""Core speed against Pinocchio, in one process: median microseconds per call and the ratio.

    robot-dynamics bench core            (or: python -m robot_dynamics.tools.benchmarks.core)

Ratios are the figure to quote: both libraries run in the same process on the same machine,
so load from other processes affects both.  Pinocchio (``pin``) is a test extra.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import timeit

import numpy as np

import robot_dynamics as rd
from robot_dynamics.tools.benchmarks.robots import example_robot_path, panda7_urdf
from robot_dynamics.child_processes import die_with_parent

BATCH = 10_000


def _median_us(call, number, repeat=15):
    """Median over ``repeat`` runs of ``number`` calls, in microseconds per call."""
    return statistics.median(timeit.repeat(call, number=number, repeat=repeat)) / number * 1e6


def _paired_median_us(ours, theirs, number, repeat=15):
    """Medians of interleaved runs of both calls, so a burst of load elsewhere hits both sides."""
    runs = [(timeit.timeit(ours, number=number), timeit.timeit(theirs, number=number)) for _ in range(repeat)]
    return tuple(statistics.median(side) / number * 1e6 for side in zip(*runs))


def _robots():
    return {
        "Panda-7": panda7_urdf(),
        "UR5": example_robot_path("ur5").read_text(),
        "talos_reduced": example_robot_path("talos_reduced").read_text(),
    }


QUANTITIES = ("inverse dynamics", "gravity", "mass matrix", "forward dynamics", "Coriolis matrix",
              "g, h and M of one state (one pass; Pinocchio: three calls)")


def _our_calls(model, q, qd, qdd):
    data = rd.Data(model)
    return [
        lambda: rd.inverse_dynamics(model, q, qd, qdd),
        lambda: rd.gravity_torques(model, q),
        lambda: rd.mass_matrix(model, q),
        lambda: rd.forward_dynamics(model, q, qd, qdd),
        lambda: rd.coriolis_matrix(model, q, qd),
        lambda: rd.compute_terms(data, q, qd, rd.GRAVITY | rd.BIAS | rd.MASS),
    ]


def _pinocchio_calls(pin, model, data, q, qd, qdd):
    return [
        lambda: pin.rnea(model, data, q, qd, qdd),
        lambda: pin.computeGeneralizedGravity(model, data, q),
        lambda: pin.crba(model, data, q),
        lambda: pin.aba(model, data, q, qd, qdd),
        lambda: pin.computeCoriolisMatrix(model, data, q, qd),
        lambda: (pin.computeGeneralizedGravity(model, data, q), pin.nonLinearEffects(model, data, q, qd),
                 pin.crba(model, data, q)),
    ]


def single_state_table(number):
    import pinocchio as pin

    rows = []
    rng = np.random.default_rng(1)
    for robot, xml in _robots().items():
        model = rd.load_urdf(xml)
        pin_model = pin.buildModelFromXML(xml)
        pin_data = pin_model.createData()
        # Pinocchio orders joints its own way: map ours onto its velocity indices by name
        # (these robots have no continuous joints, so q maps the same way).
        order = [pin_model.joints[pin_model.getJointId(name)].idx_v for name in model.joint_names]
        ours_states = [rng.uniform(-1, 1, (BATCH, model.nv)) for _ in range(3)]
        pin_states = [np.zeros_like(x) for x in ours_states]
        for ours, theirs in zip(ours_states, pin_states):
            theirs[:, order] = ours
        single_ours = [x[0].copy() for x in ours_states]
        single_pin = [x[0].copy() for x in pin_states]
        pairs = zip(QUANTITIES, _our_calls(model, *single_ours), _pinocchio_calls(pin, pin_model, pin_data, *single_pin))
        for name, ours, theirs in pairs:
            ours(), theirs()  # compile / warm caches
            rows.append((robot, model.nv, name, *_paired_median_us(ours, theirs, number)))
        # Batched inverse dynamics: one call over N states vs a Python loop over Pinocchio.
        start = time.perf_counter()
        rd.inverse_dynamics(model, *ours_states)
        ours_us = (time.perf_counter() - start) / BATCH * 1e6
        PQ, PQD, PQDD = pin_states
        start = time.perf_counter()
        for k in range(BATCH):
            pin.rnea(pin_model, pin_data, PQ[k], PQD[k], PQDD[k])
        theirs_us = (time.perf_counter() - start) / BATCH * 1e6
        rows.append((robot, model.nv, f"batched ID, N={BATCH} (per state)", ours_us, theirs_us))
    return rows


def start_up_costs():
    """Load time of talos_full_v2, and the JIT's first-call (empty cache) and cached start-up costs."""
    path = example_robot_path("talos_full_v2")
    rd.load_urdf(path)
    load_ms = _median_us(lambda: rd.load_urdf(path), number=3, repeat=5) / 1000
    script = (
        "import time; t = time.perf_counter(); import numpy as np, robot_dynamics as rd; "
        "m = rd.load_urdf(rd.examples.TWO_LINK_URDF); q = np.zeros(2); "
        "[f(m, q, q, q) for f in (rd.inverse_dynamics, rd.forward_dynamics)]; rd.mass_matrix(m, q); "
        "rd.gravity_torques(m, q); rd.bias_forces(m, q, q); rd.coriolis_matrix(m, q, q); "
        "rd.jacobian(m, q, 'tip'); rd.kinetic_energy(m, q, q); rd.potential_energy(m, q); "
        "print(time.perf_counter() - t)"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        first, cached = (float(subprocess.check_output([sys.executable, "-c", script], env=env, preexec_fn=die_with_parent()))
                         for _ in range(2))
    return load_ms, first, cached


def import_ms(repeat=5):
    """Median milliseconds Python reports (``-X importtime``, cumulative) for ``import robot_dynamics``
    in a fresh interpreter, its modules warm in the OS cache."""
    times = []
    for _ in range(repeat):
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import robot_dynamics"],
                              capture_output=True, text=True, check=True)
        last = [line for line in done.stderr.splitlines() if line.rstrip().endswith("| robot_dynamics")][-1]
        times.append(int(last.split("|")[1]) / 1e3)
    return statistics.median(times)


def compile_costs():
    """``(part, wall s, CPU s from an empty numba cache, wall s from the filled one)`` of
    ``robot-dynamics compile PART`` (``python -m robot_dynamics_executables compile PART``) for each
    part and all; the empty cache's wall time on a free machine is the figure ``compiling.COLD_SECONDS``
    states (the CPU time, user + system, includes the compile's workers)."""
    from robot_dynamics.compiling import ALL, PARTS

    rows = []
    for part in (*PARTS, ALL):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            seconds = []
            for _ in range(2):
                start, cpu = time.perf_counter(), _children_cpu()
                subprocess.run([sys.executable, "-m", "robot_dynamics_executables", "compile", part], env=env,
                               check=True, stdout=subprocess.DEVNULL, preexec_fn=die_with_parent())
                seconds.append((time.perf_counter() - start, _children_cpu() - cpu))
        rows.append((part, seconds[0][0], seconds[0][1], seconds[1][0]))
    return rows


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=2000, help="calls per timing run (default 2000)")
    args = parser.parse_args(argv)
    print("robot_dynamics vs Pinocchio, same process; median us per call (lower is better)\n")
    print("| robot | n | quantity | ours (us) | Pinocchio (us) | ratio |")
    print("|---|---|---|---|---|---|")
    for robot, n, name, ours, theirs in single_state_table(args.number):
        print(f"| {robot} | {n} | {name} | {ours:.2f} | {theirs:.2f} | {ours / theirs:.2f} |")
    load_ms, first, cached = start_up_costs()
    print(f"\nimport robot_dynamics: {import_ms():.1f} ms (python -X importtime, median of 5)")
    print(f"\nload_urdf(talos_full_v2): {load_ms:.1f} ms")
    print(f"start-up (import + first call of every function): {first:.1f} s with an empty JIT cache, "
          f"{cached:.2f} s cached")
    print("\n| robot-dynamics compile PART | empty cache, wall (s) | empty cache, CPU (s) | cached, wall (s) |\n"
          "|---|---|---|---|")
    for part, wall, cpu, cached in compile_costs():
        print(f"| {part} | {wall:.1f} | {cpu:.1f} | {cached:.1f} |")


if __name__ == "__main__":
    main()
