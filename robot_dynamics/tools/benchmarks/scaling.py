"""Cost per call against the number of joints n: the core and the cross-check formulations.

    robot-dynamics bench scaling      (or: python -m robot_dynamics.tools.benchmarks.scaling)

Random chains and random trees of n revolute joints (n = 2 ... 120 by default).  For each function
the median time of one call on one state, then the exponent p of ``time ~ n^p`` fitted by least
squares on log-log over the upper part of the range (n >= 30), printed beside Milićević et al.'s
Table 3: its leading term, and the slope of its whole operation count (multiplications plus
additions) over the same sizes, since lower-order terms still weigh at these n.

A call has a fixed cost (Python, numpy and numba dispatch: ~8 us for the core, ~0.5 ms for the
cross-checks) and the cross-checks spend O(n) Python work per body; both dominate at small n and
flatten the curves, so only the upper part of the range says anything about the order.  The
core's single-state exponents say little for that reason; its rows "per state in a batch of 100"
divide one batched call by its 100 states and show the compiled loops' own order.  A quantity
stops growing n once a call takes over ``--cap`` seconds (such a call is timed once).  The cross-checks run numpy matrix
products: for exponents comparable to an operation count run with ``OPENBLAS_NUM_THREADS=1``, as
the core is single-threaded.  A log-log plot is written as a PNG (matplotlib, the ``demo`` extra).
"""

import argparse
import functools
import math
import statistics
import sys
import timeit
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

import robot_dynamics as rd

SIZES = (2, 4, 8, 15, 30, 60, 120)
STRUCTURES = ("chain", "tree")
BATCH = 100


def random_robot_urdf(n, tree, seed=0):
    """``n`` revolute joints with random axes, offsets and inertias; link ``i`` hangs from link ``i - 1``
    (a chain) or from a random earlier link (a tree)."""
    rng = np.random.default_rng(seed)

    def triple(low, high):
        return " ".join(f"{value:.6f}" for value in rng.uniform(low, high, 3))

    parts = ['<link name="l0"/>']
    for i in range(1, n + 1):
        parent = int(rng.integers(0, i)) if tree else i - 1
        a, b, c = rng.uniform(0.01, 0.05, 3)  # principal moments b + c, a + c, a + b: a valid inertia
        mass = rng.uniform(0.5, 3.0)
        parts.append(
            f'<link name="l{i}"><inertial><origin xyz="{triple(-0.1, 0.1)}"/><mass value="{mass:.6f}"/>'
            f'<inertia ixx="{b + c:.6f}" ixy="0" ixz="0" iyy="{a + c:.6f}" iyz="0" izz="{a + b:.6f}"/>'
            '</inertial></link>'
            f'<joint name="j{i}" type="revolute"><parent link="l{parent}"/><child link="l{i}"/>'
            f'<origin xyz="{triple(-0.3, 0.3)}" rpy="{triple(-math.pi, math.pi)}"/><axis xyz="{triple(-1, 1)}"/>'
            '<limit lower="-3" upper="3" effort="100" velocity="5"/></joint>'
        )
    kind = "tree" if tree else "chain"
    return f'<robot name="random_{kind}_{n}">{"".join(parts)}</robot>'


@dataclass(frozen=True)
class Quantity:
    label: str
    call: Callable            # call(model, q, qd)
    expected: str             # the order of this implementation
    table_3: str = "-"        # leading term of Milićević et al.'s Table 3
    operations: Callable = None  # Table 3's multiplications + additions at n
    structures: tuple = STRUCTURES
    batch: int = 0            # states per call (0: one state, q of shape (n,)); times are per state


def _inverse_dynamics(model, q, qd):
    return rd.inverse_dynamics(model, q, qd, qd)  # qdd = qd: the values do not change the cost


def _mass_matrix(model, q, qd):
    return rd.mass_matrix(model, q)


def _forward_dynamics(model, q, qd):
    return rd.forward_dynamics(model, q, qd, qd)


_FROM_TABLE_3 = {
    "N-E": lambda n: 132 * n + (111 * n - 4),
    "L-E": lambda n: ((128 / 3 + 98 / 3) * n**4 + (512 / 3 + 781 / 6) * n**3 + (739 / 3 + 559 / 3) * n**2
                      + (160 / 3 + 245 / 6) * n),
    "D'Alembert": lambda n: (13 / 6 + 4 / 3) * n**3 + (105 / 2 + 44) * n**2 + (268 / 3 + 146 / 3) * n + 69 + 45,
}

QUANTITIES = (
    Quantity("inverse dynamics (N-E, core)", _inverse_dynamics, "n", "n (132n mult.)", _FROM_TABLE_3["N-E"]),
    Quantity(f"inverse dynamics, per state in a batch of {BATCH}", _inverse_dynamics, "n", batch=BATCH),
    Quantity("mass matrix (CRBA, core)", _mass_matrix, "n^2 chain, n x depth tree"),
    Quantity(f"mass matrix, per state in a batch of {BATCH}", _mass_matrix, "n^2 chain, n x depth tree", batch=BATCH),
    Quantity("forward dynamics (CRBA + Cholesky, core)", _forward_dynamics, "n^2, + n^3/6 (Cholesky)"),
    Quantity(f"forward dynamics, per state in a batch of {BATCH}", _forward_dynamics, "n^2, + n^3/6 (Cholesky)",
             batch=BATCH),
    Quantity("Lagrange-Euler, 4x4 (D, h, c)", rd.lagrange_euler_terms, "n^4", "n^4 (128/3 n^4 mult.)",
             _FROM_TABLE_3["L-E"]),
    Quantity("generalized D'Alembert (D, h, c)", rd.dalembert_terms, "n^3", "n^3 (13/6 n^3 mult.)",
             _FROM_TABLE_3["D'Alembert"], structures=("chain",)),
    Quantity("closed form, L&P 9.4 (M, c, g)", rd.closed_form_terms, "n^3 (the sum of eq. 9.82)"),
    Quantity("Christoffel C (complex step)", rd.christoffel_coriolis_matrix, "n^4 (n closed-form M)"),
)


def seconds_per_call(call, min_time, repeat, cap):
    """Median over ``repeat`` runs of the time of one call; each run loops for at least ``min_time``.

    A call slower than ``cap`` seconds is timed once (after a warm-up call).
    """
    start = timeit.default_timer()
    call()  # warm up (and the JIT's first call), and a first estimate
    first = timeit.default_timer() - start
    if first > cap:
        return timeit.timeit(call, number=1)
    number = max(1, math.ceil(min_time / max(first, 1e-9)))
    return statistics.median(timeit.repeat(call, number=number, repeat=repeat)) / number


def measure(sizes, min_time, repeat, cap):
    """``{(quantity, structure): {n: seconds per state}}``; n stops growing once a call takes over ``cap`` s."""
    models = functools.lru_cache(maxsize=None)(lambda n, tree: rd.load_urdf(random_robot_urdf(n, tree, seed=n)))
    times = {}
    for quantity in QUANTITIES:
        for structure in quantity.structures:
            row = times.setdefault((quantity, structure), {})
            for n in sizes:
                model = models(n, structure == "tree")
                states = np.random.default_rng(n).uniform(-1, 1, (2, quantity.batch or 1, model.nv))
                q, qd = states if quantity.batch else states[:, 0]
                seconds = seconds_per_call(lambda: quantity.call(model, q, qd), min_time, repeat, cap)
                row[n] = seconds / max(quantity.batch, 1)
                if seconds > cap:
                    break
    return times


def fitted_exponent(row, fit_from):
    """Least-squares slope of log(time) against log(n) over the sizes ``>= fit_from`` (None if fewer than 2)."""
    points = [(n, t) for n, t in row.items() if n >= fit_from]
    if len(points) < 2:
        return None
    n, t = np.log(np.array(points)).T
    return float(np.polyfit(n, t, 1)[0])


def print_tables(times, sizes, fit_from, cap):
    print(f"median time per call (us), one state (batch rows: per state); '-' = not measured (a call took over "
          f"{cap:g} s at a smaller n, or not applicable)\n")
    print("| quantity | structure | " + " | ".join(f"n = {n}" for n in sizes) + " |")
    print("|---|---|" + "---|" * len(sizes))
    for (quantity, structure), row in times.items():
        cells = [f"{row[n] * 1e6:.4g}" if n in row else "-" for n in sizes]
        print(f"| {quantity.label} | {structure} | " + " | ".join(cells) + " |")
    fitted = [n for n in sizes if n >= fit_from]
    print(f"\nfitted exponent p of time ~ n^p (least squares on log-log over n = {', '.join(map(str, fitted))}), "
          "beside Milicevic et al.'s Table 3 (its leading term; the slope of its full count over the same n)\n")
    print("| quantity | Table 3, leading term | Table 3 count, slope | expected here | p, chains | p, trees |")
    print("|---|---|---|---|---|---|")
    for quantity in QUANTITIES:
        exponents = []
        for structure in STRUCTURES:
            p = fitted_exponent(times.get((quantity, structure), {}), fit_from)
            exponents.append("-" if p is None else f"{p:.2f}")
        count = fitted_exponent({n: quantity.operations(n) for n in fitted}, fit_from) if quantity.operations else None
        count = "-" if count is None else f"{count:.2f}"
        print(f"| {quantity.label} | {quantity.table_3} | {count} | {quantity.expected} | "
              f"{exponents[0]} | {exponents[1]} |")


def write_plot(times, path):
    """A log-log plot of time per call (per state for the batch rows) against n; chains solid, trees dashed."""
    try:
        import matplotlib
    except ModuleNotFoundError:
        sys.stderr.write("no plot: matplotlib is not installed (pip install .[demo])\n")
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(9, 6))
    for (quantity, structure), row in times.items():
        sizes = sorted(row)
        axes.loglog(sizes, [row[n] * 1e6 for n in sizes], "o-" if structure == "chain" else "s--",
                    color=f"C{QUANTITIES.index(quantity)}", label=f"{quantity.label}, {structure}")
    axes.set_xlabel("number of joints n")
    axes.set_ylabel("time per call (us); per state for the batches")
    axes.set_title("Cost against n: the core (Newton-Euler, CRBA) and the cross-check formulations")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), metavar="N",
                        help=f"numbers of joints (default {' '.join(map(str, SIZES))})")
    parser.add_argument("--fit-from", type=int, default=30, metavar="N",
                        help="fit the exponents over the sizes >= N (default 30)")
    parser.add_argument("--min-time", type=float, default=0.02, metavar="S",
                        help="each timing run loops for at least S seconds (default 0.02)")
    parser.add_argument("--repeat", type=int, default=5, help="timing runs per point; the median is kept (default 5)")
    parser.add_argument("--cap", type=float, default=2.0, metavar="S",
                        help="stop growing n for a quantity once one call takes over S seconds (default 2)")
    parser.add_argument("--plot", type=Path, default=Path("out") / "scaling.png", metavar="PNG",
                        help="where to write the log-log plot (default out/scaling.png)")
    args = parser.parse_args(argv)
    sizes = sorted(set(args.sizes))
    if sizes[0] < 1 or args.repeat < 1:
        parser.error("sizes and --repeat must be positive")
    times = measure(sizes, args.min_time, args.repeat, args.cap)
    print_tables(times, sizes, args.fit_from, args.cap)
    if not write_plot(times, args.plot):
        return 1
    print(f"\nplot: {args.plot.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
