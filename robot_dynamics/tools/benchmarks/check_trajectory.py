"""Speed of check_trajectory: a 1000-waypoint trajectory of the 7-joint Panda, median milliseconds.

    python -m robot_dynamics.tools.benchmarks.check_trajectory [--waypoints 1000] [--duration 10]

The aim is 50 ms per check after compiling.  The anchor measured in the same run is the batched
inverse dynamics of the same samples alone, so the ratio says what reading, interpolation and
the limit comparisons add to it, whatever the machine's load.
"""

import argparse
import statistics
import timeit

import numpy as np

import robot_dynamics as rd
from robot_dynamics.tools.benchmarks.robots import panda7_urdf
from robot_dynamics.trajectories.check import Trajectory, check_trajectory, sample

AIM_MS = 50.0


def _trajectory(model, waypoints, duration, kind):
    t = np.linspace(0.0, duration, waypoints)
    phase = 2 * np.pi * t[:, None] / duration * np.arange(1, model.nv + 1) * 0.3
    q = 0.3 * np.sin(phase) - 0.5 * (np.asarray(model.joint_names) == "panda_joint4")
    qd = 0.3 * np.cos(phase) * (2 * np.pi / duration * np.arange(1, model.nv + 1) * 0.3)
    qdd = -0.3 * np.sin(phase) * (2 * np.pi / duration * np.arange(1, model.nv + 1) * 0.3) ** 2
    return Trajectory(model.joint_names, t, q, qd if kind != "linear" else None, qdd if kind == "quintic" else None)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waypoints", type=int, default=1000)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds from the first waypoint to the last")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    model = rd.load_urdf(panda7_urdf())
    print(f"check_trajectory, Panda {model.nv} joints, {args.waypoints} waypoints over {args.duration:g} s, "
          f"sampled at 1 kHz; median of {args.repeat} runs")
    print(f"{'interpolation':<14} {'samples':>8} {'check ms':>9} {'ID alone ms':>12} {'ratio':>6} {'aim ms':>7}")
    for kind in ("linear", "cubic", "quintic"):
        trajectory = _trajectory(model, args.waypoints, args.duration, kind)
        check_trajectory(model, trajectory)  # compile and warm
        t, q, qd, qdd = sample(trajectory)
        runs = [(timeit.timeit(lambda: check_trajectory(model, trajectory), number=1),
                 timeit.timeit(lambda: rd.inverse_dynamics(model, q, qd, qdd), number=1)) for _ in range(args.repeat)]
        check_ms, anchor_ms = (statistics.median(side) * 1e3 for side in zip(*runs))
        print(f"{kind:<14} {t.size:>8} {check_ms:>9.2f} {anchor_ms:>12.2f} {check_ms / anchor_ms:>6.1f} {AIM_MS:>7.0f}")


if __name__ == "__main__":
    main()
