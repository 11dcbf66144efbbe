#!/usr/bin/env python3
"""The cost of the simulator's contact spheres and planes: what bounds their count (docs/contact.md).

``robot_dynamics.simulation.simulator.Simulator`` in process (no ROS), the bundled arm7_gripper held at a pose
by its gravity torque, rk4 steps of 1 ms (the simulator node's default): the median microseconds of a
step with ``S`` spheres (spread over the arm's links) and ``P`` planes, against the same step without
contact measured in the same run (the anchor).  Two cases: every sphere inside every half-space (the
worst: each pair computes its contact point's velocity and pushes; a soft contact, so the arm barely
moves) and every plane far away (each pair costs one distance).  ``real time`` is the factor a
1 kHz step allows (1000 us / step).  The simulator node adds its own work per step and per message:
docs/contact.md gives the real-time factors it reached with these contacts.

    robot-dynamics bench contact_count [--quick]   (or: python -m robot_dynamics.tools.benchmarks.contact_count)

Don't run it on a busy machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import robot_dynamics as rd
from robot_dynamics.simulation.contact import ContactModel
from robot_dynamics.description.robots import urdf_file
from robot_dynamics.simulation.simulator import Simulator

DT = 1e-3
Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02])
CASES = ((1, 1), (16, 1), (64, 1), (16, 4), (64, 4), (128, 4), (32, 8), (64, 8), (256, 8), (1024, 8))


def _contact(model, spheres, planes, touching):
    links = [link for link in model.link_names if model.frames[link].body >= 0]
    height = 10.0 if touching else -10.0  # the boundary plane above every sphere (inside) or far below
    return ContactModel(planes=tuple(((0.0, 0.0, height + 0.01 * k), (0.0, 0.0, 1.0)) for k in range(planes)),
                        spheres=tuple((links[k % len(links)], (0.0, 0.0, 0.0), 0.01) for k in range(spheres)),
                        stiffness=1e-6, damping=0.0)  # (a force too small to move the arm)


def step_us(model, contact, steps):
    """Median microseconds of one rk4 step (the arm held by g(q0), reset every 100 steps)."""
    sim = Simulator(model, Q0, contact=contact)
    hold = rd.gravity_torques(model, Q0)
    for _ in range(20):  # compiled and warm
        sim.step(hold, DT)
    times = []
    for start in range(0, steps, 100):
        sim.reset(Q0)
        begin = time.perf_counter()
        for _ in range(min(100, steps - start)):
            sim.step(hold, DT)
        times.append((time.perf_counter() - begin) / min(100, steps - start) * 1e6)
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and cases (a smoke run)")
    args = parser.parse_args(argv)
    model = rd.load_urdf(urdf_file("arm7_gripper").read_text())
    steps = 300 if args.quick else 2000
    cases = CASES[:3] if args.quick else CASES
    anchor = step_us(model, None, steps)
    print(f"arm7_gripper, rk4 at 1 kHz, in process: a step without contact {anchor:.1f} us (the anchor)\n")
    print("| spheres | planes | case | us per step | x anchor | real time allowed |")
    print("|---|---|---|---|---|---|")
    for spheres, planes in cases:
        for touching in (True, False):
            us = step_us(model, _contact(model, spheres, planes, touching), max(steps // max(spheres * planes // 64, 1), 200))
            print(f"| {spheres} | {planes} | {'all touching' if touching else 'apart'} | {us:.1f} | {us / anchor:.2f} "
                  f"| {1000.0 / us:.1f}x |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
