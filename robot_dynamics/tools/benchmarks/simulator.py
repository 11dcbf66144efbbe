#!/usr/bin/env python3
"""Simulator speed: real-time factor at 1 kHz physics, and the cost of a step vs the forward dynamics.

Two tables, for Panda-7 (example-robot-data's Panda, finger joints fixed) and talos_reduced
(32 joints):

1. In process (``robot_dynamics.simulation.simulator.Simulator``, no ROS): median microseconds of one
   ``rd.forward_dynamics`` call and of one step of each integrator (the arm holds its pose with
   the holding torque ``g(q0)``, no limit contact; reset every 1000 steps), the step's cost in
   forward-dynamics calls, and the real-time factor that cost allows at 1 kHz (1 ms / step).
2. The ``simulator_node`` process with ``real_time_factor: 0`` (as fast as possible), rk4 at
   1 kHz, ``publish_rate`` 500 Hz of simulated time, for ``--duration`` s: the real-time factor it
   reports on ``/diagnostics`` (simulated seconds per wall second, averaged after the first
   report) and its CPU use.  Gravity is set to zero so the arm floats at its initial pose instead
   of falling into its limits (a resting limit contact adds a mass matrix per evaluation, about
   +50 %); the cost of the dynamics does not depend on the motion otherwise.

Target (issue 4): >= 20x real time for Panda-7 in the node.

    robot-dynamics bench simulator [--duration 10] [--quick] [--no-node] [--domain-id N | --isolated]
    python -m robot_dynamics.tools.benchmarks.simulator

The node runs on your ROS_DOMAIN_ID, as every command's nodes do (``--domain-id N``, or a private one
with ``--isolated``); the benchmark prints which. Needs example-robot-data; the node part needs
rclpy.  Don't run it on a busy machine.
"""

import argparse
import os
import statistics
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np

import robot_dynamics as rd
from robot_dynamics.tools.benchmarks.robots import example_robot_path, panda7_urdf
from robot_dynamics.simulation.simulator import Simulator
from robot_dynamics.tools import processes

DT = 1e-3
INTEGRATORS = ("euler", "semi_implicit_euler", "rk4")


def robots():
    """name -> (URDF text, a pose away from the limits in model order)."""
    panda = panda7_urdf()
    talos = example_robot_path("talos_reduced").read_text()
    talos_model = rd.load_urdf(talos)
    limits = talos_model.position_limits
    talos_pose = np.where(np.isfinite(limits).all(axis=1), limits.mean(axis=1), 0.0)
    return {
        "Panda-7": (panda, np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])),
        "talos_reduced": (talos, talos_pose),
    }


def _median_us(call, number, repeat):
    return statistics.median(timeit.repeat(call, number=number, repeat=repeat)) / number * 1e6


def library_table(quick):
    number, repeat = (200, 3) if quick else (1000, 7)
    rows = []
    for name, (urdf, pose) in robots().items():
        model = rd.load_urdf(urdf)
        hold = rd.gravity_torques(model, pose)
        zero = np.zeros(model.nv)
        fd = _median_us(lambda: rd.forward_dynamics(model, pose, zero, hold), number, repeat)
        row = {"robot": name, "nv": model.nv, "fd": fd}
        for integrator in INTEGRATORS:
            sim = Simulator(model, pose, integrator=integrator)
            sim.step(hold, DT)  # compile / warm up

            def steps(sim=sim):
                sim.reset(pose)
                for _ in range(number):
                    sim.step(hold, DT)

            row[integrator] = _median_us(steps, 1, repeat) / number
        for case, contact in contact_cases(model, pose).items():
            sim = Simulator(model, pose, contact=contact)
            sim.step(hold, DT)

            def steps(sim=sim):
                sim.reset(pose)
                for _ in range(number):
                    sim.step(hold, DT)

            row[case] = _median_us(steps, 1, repeat) / number
        rows.append(row)
    return rows


def contact_cases(model, pose):
    """The rk4 step with contact on (robot_dynamics.simulation.contact): two spheres on the last link and a floor
    far below them ("contact, apart"), and with one sphere pressed 1 mm into a wall ("contact, touching")."""
    from robot_dynamics.simulation.contact import ContactModel
    from robot_dynamics.control.observer import tip_frame

    link = tip_frame(model)
    centre = rd.frame_pose(model, pose, link)[:3, 3]
    spheres = [(link, (0.0, 0.0, 0.0), 0.02), (link, (0.0, 0.0, -0.05), 0.02)]
    return {
        "rk4 contact apart": ContactModel(planes=[((0.0, 0.0, -10.0), (0.0, 0.0, 1.0))], spheres=spheres),
        "rk4 contact touching": ContactModel(planes=[(centre + (0.019, 0.0, 0.0), (-1.0, 0.0, 0.0))],
                                             spheres=spheres[:1]),
    }


def print_library_table(rows):
    print("\nIn process: microseconds per call (median), 1 kHz physics, holding torque, no limit contact")
    print("| robot | nv | forward dynamics | euler step | semi-implicit step | rk4 step | rk4 step / FD "
          "| rk4 real-time factor |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['robot']} | {r['nv']} | {r['fd']:.1f} | {r['euler']:.1f} | {r['semi_implicit_euler']:.1f} | "
              f"{r['rk4']:.1f} | {r['rk4'] / r['fd']:.1f} | {1e3 * DT * 1e3 / r['rk4']:.1f}x |")
    print("\nIn process: the rk4 step with contact on (two spheres on the tip link), microseconds (median)")
    print("| robot | rk4 step | contact, apart | ratio | contact, touching | ratio |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        apart, touching = r["rk4 contact apart"], r["rk4 contact touching"]
        print(f"| {r['robot']} | {r['rk4']:.1f} | {apart:.1f} | {apart / r['rk4']:.2f} | {touching:.1f} | "
              f"{touching / r['rk4']:.2f} |")


def _cpu_seconds(pid):
    """User + system CPU seconds of a process (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def node_run(name, urdf, pose, duration, workdir, env):
    """Start simulator_node at real_time_factor 0 in the environment ``env`` (its domain; this process's
    own is the same, :func:`processes.graph_environment`); (mean real-time factor, CPU %) from its
    diagnostics."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray

    description = processes.params_file({"robot_description": urdf}, workdir / f"{name}_description.yaml")
    params = processes.params_file({
        "real_time_factor": 0.0, "integrator": "rk4", "physics_rate": 1000.0, "publish_rate": 500.0,
        "gravity": [0.0, 0.0, 0.0], "initial_positions": [float(x) for x in pose], "command_timeout": 0.0,
    }, workdir / f"{name}_simulator.yaml")
    argv = processes.executable("simulator_node") + processes.ros_args([description, params])
    process = processes.NodeProcess("simulator_node", argv, env, workdir / f"{name}_simulator.log")
    reports = []
    context = rclpy.Context()
    try:
        rclpy.init(context=context)
        node = rclpy.create_node("bench_simulator", context=context)
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(node)

        def on_diagnostics(msg):
            for status in msg.status:
                if status.name.endswith(": simulation"):
                    values = {kv.key: kv.value for kv in status.values}
                    if "real-time factor" in values:
                        reports.append((time.monotonic(), float(values["real-time factor"].split()[0]),
                                        float(values["simulated time (s)"])))

        node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
        deadline = time.monotonic() + 60.0
        while not reports and time.monotonic() < deadline:  # start-up + discovery
            executor.spin_once(timeout_sec=0.1)
            if not process.running():
                raise RuntimeError(f"simulator_node exited:\n{process.log_tail()}")
        if not reports:
            raise RuntimeError(f"no diagnostics from simulator_node:\n{process.log_tail()}")
        start, cpu0 = len(reports), _cpu_seconds(process.pid)
        wall0 = time.monotonic()
        while time.monotonic() - wall0 < duration:
            executor.spin_once(timeout_sec=0.1)
        cpu = (_cpu_seconds(process.pid) - cpu0) / (time.monotonic() - wall0)
        window = reports[start:]
        if len(window) >= 2:  # simulated time over wall time between the first and last report
            factor = (window[-1][2] - window[0][2]) / (window[-1][0] - window[0][0])
        else:
            factor = float("nan")
        node.destroy_node()
        return factor, 100.0 * cpu
    finally:
        context.try_shutdown()
        process.stop()


def node_table(duration, env):
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_simulator_") as workdir:
        for name, (urdf, pose) in robots().items():
            factor, cpu = node_run(name, urdf, pose, duration, Path(workdir), env)
            rows.append((name, factor, cpu))
    print(f"\nsimulator_node, real_time_factor 0, rk4 at 1 kHz, joint_states at 500 Hz simulated ({duration:g} s each)")
    print("| robot | real-time factor | node CPU |")
    print("|---|---|---|")
    for name, factor, cpu in rows:
        print(f"| {name} | {factor:.1f}x | {cpu:.0f} % |")
    return rows


def main(argv=None):
    """``robot-dynamics bench simulator`` / ``python -m robot_dynamics.tools.benchmarks.simulator``."""
    parser = argparse.ArgumentParser(prog="bench_simulator", description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per node run (default 10)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    parser.add_argument("--no-node", action="store_true", help="skip the simulator_node runs (no ROS needed)")
    processes.add_domain_arguments(parser)
    args = parser.parse_args(argv)
    try:
        processes.choose_domain(args.domain_id, args.isolated)
    except ValueError as error:
        parser.error(str(error))
    print_library_table(library_table(args.quick))
    if not args.no_node:
        try:
            import rclpy  # noqa: F401
        except ImportError:
            print("\n(rclpy not installed: simulator_node runs skipped)")
            return 0
        env, domain = processes.graph_environment(args, lambda text: print(f"warning: {text}", flush=True))
        print(f"\nsimulator_node on {domain}")
        node_table(args.duration, env)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
